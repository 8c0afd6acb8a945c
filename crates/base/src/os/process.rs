//! Another process seen from outside, read only: its figures from /proc/PID/stat and
//! /proc/PID/fd, the listening sockets of /proc/net/tcp{,6}, which processes hold a
//! socket inode, a process's children, and processes by name. Parsers are pure and
//! name what was wrong; callers add the path.
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

/// What /proc/PID/stat says about a process (the fields rtcheck uses).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stat {
    pub comm: String,
    pub state: char,
    pub ppid: u32,
    /// User + system CPU in clock ticks.
    pub cpu_ticks: u64,
    pub threads: u64,
    pub rss_pages: u64,
}

/// /proc/PID/stat: `pid (comm) state ppid ...`; comm may hold spaces and parentheses,
/// so the fields are counted after the last `)`.
pub fn parse_stat(text: &str) -> Result<Stat, String> {
    let open = text.find('(').ok_or("no `(comm)`")?;
    let close = text.rfind(')').ok_or("no `(comm)`")?;
    if close < open {
        return Err("no `(comm)`".into());
    }
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // Field n of proc(5) is f[n - 3].
    let num = |n: usize| -> Result<u64, String> {
        let v = f.get(n - 3).ok_or(format!("field {n} missing"))?;
        v.parse()
            .map_err(|_| format!("field {n} `{v}` is not a number"))
    };
    Ok(Stat {
        comm: text[open + 1..close].to_string(),
        state: f.first().and_then(|s| s.chars().next()).ok_or("no state")?,
        ppid: num(4)? as u32,
        cpu_ticks: num(14)?.saturating_add(num(15)?),
        threads: num(20)?,
        rss_pages: num(24)?,
    })
}

/// Clock ticks per second (the unit of /proc/PID/stat's CPU times).
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 on error.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 {
        v as u64
    } else {
        100
    }
}

/// One reading of a process: RSS, open fds, threads, CPU so far.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Figures {
    pub rss_bytes: u64,
    pub fds: u64,
    pub threads: u64,
    pub cpu_s: f64,
}

/// Reads `pid`'s figures under `procfs` (usually /proc). Errors name the file.
pub fn figures(procfs: &Path, pid: u32) -> Result<Figures, String> {
    let p = procfs.join(pid.to_string());
    let stat_path = p.join("stat");
    let text =
        std::fs::read_to_string(&stat_path).map_err(|e| format!("{}: {e}", stat_path.display()))?;
    let s = parse_stat(&text).map_err(|e| format!("{}: {e}", stat_path.display()))?;
    let fd_dir = p.join("fd");
    let fds = std::fs::read_dir(&fd_dir)
        .map_err(|e| format!("{}: {e}", fd_dir.display()))?
        .count() as u64;
    Ok(Figures {
        rss_bytes: s.rss_pages.saturating_mul(super::proc::page_size()),
        fds,
        threads: s.threads,
        cpu_s: s.cpu_ticks as f64 / clock_ticks() as f64,
    })
}

/// A listening TCP socket of /proc/net/tcp or tcp6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    pub local: SocketAddr,
    pub inode: u64,
    /// The accept queue's current length (the kernel prints sk_ack_backlog as rx_queue
    /// for a listener; the queue's limit is only in sock_diag).
    pub queued: u64,
}

/// An address of /proc/net/tcp (8 hex digits) or tcp6 (32): each 32-bit word is the
/// in-memory (network order) value printed as hex on a little-endian host.
fn parse_addr(s: &str) -> Option<SocketAddr> {
    let (ip, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let mut bytes = Vec::with_capacity(16);
    if !(ip.len() == 8 || ip.len() == 32) || !ip.is_ascii() {
        return None;
    }
    for i in (0..ip.len()).step_by(8) {
        let w = u32::from_str_radix(&ip[i..i + 8], 16).ok()?;
        bytes.extend(w.to_le_bytes());
    }
    let ip = match <[u8; 16]>::try_from(bytes.as_slice()) {
        Ok(b16) => IpAddr::V6(Ipv6Addr::from(b16)),
        Err(_) => IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3])),
    };
    Some(SocketAddr::new(ip, port))
}

/// The LISTEN rows of /proc/net/tcp or tcp6 text.
pub fn parse_listeners(text: &str) -> Result<Vec<Listener>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 {
            continue;
        }
        let bad = || format!("line {}: cannot parse `{}`", i + 1, line.trim());
        if f[3] != "0A" {
            continue;
        }
        let local = parse_addr(f[1]).ok_or_else(bad)?;
        let queued = f[4]
            .split_once(':')
            .and_then(|(_, rx)| u64::from_str_radix(rx, 16).ok())
            .ok_or_else(bad)?;
        let inode = f[9].parse().map_err(|_| bad())?;
        out.push(Listener {
            local,
            inode,
            queued,
        });
    }
    Ok(out)
}

/// Every listener of this network namespace (tcp and tcp6 under `procfs`/net).
pub fn listeners(procfs: &Path) -> Result<Vec<Listener>, String> {
    let mut out = Vec::new();
    for name in ["tcp", "tcp6"] {
        let p = procfs.join("net").join(name);
        match std::fs::read_to_string(&p) {
            Ok(t) => out.extend(parse_listeners(&t).map_err(|e| format!("{}: {e}", p.display()))?),
            // A host without IPv6 has no tcp6.
            Err(_) if name == "tcp6" => {}
            Err(e) => return Err(format!("{}: {e}", p.display())),
        }
    }
    Ok(out)
}

/// `socket:[12345]` -> 12345.
pub fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The socket inodes `pid` holds open; None when its fd directory is not readable
/// (another user's process without privileges, or gone).
pub fn socket_inodes(procfs: &Path, pid: u32) -> Option<Vec<u64>> {
    let dir = std::fs::read_dir(procfs.join(pid.to_string()).join("fd")).ok()?;
    Some(
        dir.flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter_map(|l| socket_inode(&l.to_string_lossy()))
            .collect(),
    )
}

/// The numeric entries of `procfs` (every process).
pub fn all_pids(procfs: &Path) -> Vec<u32> {
    std::fs::read_dir(procfs)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Who holds these socket inodes: (the pids that do, how many fd directories could not
/// be read). Bounded by the number of processes and their fds.
pub fn holders(procfs: &Path, inodes: &[u64]) -> (Vec<u32>, usize) {
    let (mut found, mut unreadable) = (Vec::new(), 0);
    for pid in all_pids(procfs) {
        match socket_inodes(procfs, pid) {
            Some(s) if s.iter().any(|i| inodes.contains(i)) => found.push(pid),
            Some(_) => {}
            None => unreadable += 1,
        }
    }
    found.sort_unstable();
    (found, unreadable)
}

/// The stat of every process, keyed by pid (unreadable ones left out).
pub fn stats(procfs: &Path) -> Vec<(u32, Stat)> {
    let mut v: Vec<(u32, Stat)> = all_pids(procfs)
        .into_iter()
        .filter_map(|pid| {
            let t = std::fs::read_to_string(procfs.join(pid.to_string()).join("stat")).ok()?;
            Some((pid, parse_stat(&t).ok()?))
        })
        .collect();
    v.sort_by_key(|(p, _)| *p);
    v
}

/// Direct children of `pid` among `all`.
pub fn children(all: &[(u32, Stat)], pid: u32) -> Vec<u32> {
    all.iter()
        .filter(|(_, s)| s.ppid == pid)
        .map(|(p, _)| *p)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_the_last_paren() {
        let t = "4242 (my (odd) srv) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 7 0 123 456789 2048 18446744073709551615\n";
        let s = parse_stat(t).unwrap();
        assert_eq!(s.comm, "my (odd) srv");
        assert_eq!((s.state, s.ppid, s.cpu_ticks), ('S', 1, 200));
        assert_eq!((s.threads, s.rss_pages), (7, 2048));
        assert!(parse_stat("1 (x) S 1").unwrap_err().contains("missing"));
        assert!(parse_stat("no parens").is_err());
        let e = parse_stat(&t.replace(" 150 ", " x ")).unwrap_err();
        assert!(e.contains("field 14 `x`"), "{e}");
    }

    #[test]
    fn listeners_of_tcp_and_tcp6() {
        let t4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000  1000        0 55501 1 0 100 0 0 10 0\n   1: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 55502 1 0\n";
        let l = parse_listeners(t4).unwrap();
        assert_eq!(l.len(), 1, "only LISTEN rows");
        assert_eq!(l[0].local, "127.0.0.1:8080".parse().unwrap());
        assert_eq!((l[0].inode, l[0].queued), (55501, 3));
        let t6 = "header\n   0: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7001 1 0\n";
        let l = parse_listeners(t6).unwrap();
        assert_eq!(l[0].local, "[::1]:8081".parse().unwrap());
        assert!(parse_listeners("h\n 0: zz:1 00:0 0A 0:0 0 0 0 0 1\n").is_err());
        assert_eq!(socket_inode("socket:[55501]"), Some(55501));
        assert_eq!(socket_inode("pipe:[1]"), None);
    }

    #[test]
    fn this_process_seen_from_outside() {
        let f = figures(Path::new("/proc"), std::process::id()).unwrap();
        assert!(f.rss_bytes > 0 && f.fds >= 3 && f.threads >= 1, "{f:?}");
        let e = figures(Path::new("/proc"), u32::MAX - 1).unwrap_err();
        assert!(e.contains("/stat"), "{e}");
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mine = listeners(Path::new("/proc")).unwrap();
        let row = mine.iter().find(|x| x.local.port() == port).unwrap();
        let (pids, _) = holders(Path::new("/proc"), &[row.inode]);
        assert_eq!(pids, vec![std::process::id()]);
    }
}
