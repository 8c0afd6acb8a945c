//! /proc and /sys readings: sockstat, /proc/net/tcp, sysctls (read only, never written),
//! page size, per-process fds and RSS. Parsers are pure; errors say what was wrong so the
//! caller can name the file.
use anyhow::{anyhow, bail, Context};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

/// The kernel's page size (sockstat `mem` and tcp_mem count pages).
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 on error.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as u64
    } else {
        4096
    }
}

/// TCP line of /proc/net/sockstat (namespace-wide counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sockstat {
    pub inuse: u64,
    pub orphan: u64,
    pub tw: u64,
    pub alloc: u64,
    /// Kernel TCP memory in pages.
    pub mem_pages: u64,
}

impl Sockstat {
    pub fn mem_bytes(&self) -> u64 {
        self.mem_pages.saturating_mul(page_size())
    }
}

/// The `TCP:` line of sockstat text: `TCP: inuse 5 orphan 0 tw 3 alloc 7 mem 2`. `inuse`
/// and `tw` must be there; every value must be a number. The error names the problem,
/// not the file: callers add the path.
pub fn parse_sockstat(text: &str) -> Result<Sockstat, String> {
    let line = text
        .lines()
        .find(|l| l.starts_with("TCP:"))
        .ok_or("no `TCP:` line")?;
    let mut s = Sockstat::default();
    let (mut inuse, mut tw) = (false, false);
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    for pair in words.chunks(2) {
        let [k, v] = pair else {
            return Err(format!("TCP line: `{}` has no value", pair[0]));
        };
        let v: u64 = v
            .parse()
            .map_err(|_| format!("TCP line: `{k}` value `{v}` is not a number"))?;
        match *k {
            "inuse" => (s.inuse, inuse) = (v, true),
            "orphan" => s.orphan = v,
            "tw" => (s.tw, tw) = (v, true),
            "alloc" => s.alloc = v,
            "mem" => s.mem_pages = v,
            _ => {}
        }
    }
    if !(inuse && tw) {
        return Err("TCP line without `inuse N` and `tw N`".into());
    }
    Ok(s)
}

pub fn read_sockstat() -> anyhow::Result<Sockstat> {
    let p = "/proc/net/sockstat";
    let t = std::fs::read_to_string(p).with_context(|| p.to_string())?;
    parse_sockstat(&t).map_err(|e| anyhow!("{p}: {e}"))
}

/// TCP socket states as printed in /proc/net/tcp.
pub const ESTABLISHED: u8 = 0x01;
pub const TIME_WAIT: u8 = 0x06;
pub const CLOSE_WAIT: u8 = 0x08;
pub const LISTEN: u8 = 0x0A;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpRow {
    pub local: SocketAddrV4,
    pub remote: SocketAddrV4,
    pub state: u8,
}

fn parse_hex_addr(s: &str) -> Option<SocketAddrV4> {
    let (ip, port) = s.split_once(':')?;
    // The address is the in-memory (network order) u32 printed as hex on a little-endian
    // host: 0100007F is 127.0.0.1.
    let raw = u32::from_str_radix(ip, 16).ok()?;
    let ip = Ipv4Addr::from(raw.to_le_bytes());
    let port = u16::from_str_radix(port, 16).ok()?;
    Some(SocketAddrV4::new(ip, port))
}

/// Rows of /proc/net/tcp (IPv4 only).
pub fn parse_proc_net_tcp(text: &str) -> anyhow::Result<Vec<TcpRow>> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let bad = || anyhow!("line {}: cannot parse `{}`", i + 1, line.trim());
        let local = parse_hex_addr(f[1]).ok_or_else(bad)?;
        let remote = parse_hex_addr(f[2]).ok_or_else(bad)?;
        let state = u8::from_str_radix(f[3], 16).map_err(|_| bad())?;
        rows.push(TcpRow {
            local,
            remote,
            state,
        });
    }
    Ok(rows)
}

pub fn read_proc_net_tcp() -> anyhow::Result<Vec<TcpRow>> {
    let p = "/proc/net/tcp";
    let t = std::fs::read_to_string(p).with_context(|| p.to_string())?;
    parse_proc_net_tcp(&t).with_context(|| p.to_string())
}

/// Sockets whose remote end is `dest` in `state` (client-side view of one destination).
pub fn count_to(rows: &[TcpRow], dest: SocketAddrV4, state: u8) -> usize {
    rows.iter()
        .filter(|r| r.remote == dest && r.state == state)
        .count()
}

/// All client sockets toward `dest` that hold a local port (every state but LISTEN).
pub fn count_ports_to(rows: &[TcpRow], dest: SocketAddrV4) -> usize {
    rows.iter()
        .filter(|r| r.remote == dest && r.state != LISTEN)
        .count()
}

/// `net.ipv4.ip_local_port_range` as (low, high).
pub fn parse_port_range(text: &str) -> anyhow::Result<(u16, u16)> {
    let v: Vec<&str> = text.split_whitespace().collect();
    match v.as_slice() {
        [lo, hi] => {
            let lo: u16 = lo.parse().map_err(|_| anyhow!("low port `{lo}`"))?;
            let hi: u16 = hi.parse().map_err(|_| anyhow!("high port `{hi}`"))?;
            if lo > hi {
                bail!("low port {lo} above high port {hi}");
            }
            Ok((lo, hi))
        }
        _ => bail!("expected two numbers, got `{}`", text.trim()),
    }
}

pub fn read_sysctl(path: &str) -> anyhow::Result<String> {
    let full = Path::new("/proc/sys").join(path);
    std::fs::read_to_string(&full).with_context(|| full.display().to_string())
}

pub fn read_sysctl_u64(path: &str) -> anyhow::Result<u64> {
    let t = read_sysctl(path)?;
    t.trim()
        .parse()
        .map_err(|_| anyhow!("/proc/sys/{path}: `{}` is not a number", t.trim()))
}

pub fn port_range() -> anyhow::Result<(u16, u16)> {
    let t = read_sysctl("net/ipv4/ip_local_port_range")?;
    parse_port_range(&t).context("/proc/sys/net/ipv4/ip_local_port_range")
}

/// The three numbers of tcp_wmem / tcp_rmem (min, default, max).
pub fn parse_triple(text: &str) -> anyhow::Result<[u64; 3]> {
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().map_err(|_| anyhow!("`{w}` is not a number")))
        .collect::<anyhow::Result<_>>()?;
    match v.as_slice() {
        [a, b, c] => Ok([*a, *b, *c]),
        _ => bail!("expected three numbers, got `{}`", text.trim()),
    }
}

/// Open descriptors of this process, cheaply. Linux 6.2+ reports the count as the size of
/// /proc/self/fd (a bitmap count), which stays cheap at 10,000 connections; walking the
/// directory took about 8 ms there, on a worker thread, during a measurement. Older
/// kernels report 0: then walk it (the walk's own directory fd is not counted).
pub fn self_open_fds() -> u64 {
    match std::fs::metadata("/proc/self/fd") {
        Ok(m) if m.len() > 0 => m.len(),
        _ => std::fs::read_dir("/proc/self/fd")
            .map(|d| (d.count() as u64).saturating_sub(1))
            .unwrap_or(0),
    }
}

/// Resident set size of this process in bytes (/proc/self/statm), 0 if unreadable.
pub fn self_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(|p| p * page_size())
        .unwrap_or(0)
}

/// Open descriptors of a process (entries of /proc/PID/fd).
pub fn open_fds(pid: &str) -> anyhow::Result<u64> {
    let p = format!("/proc/{pid}/fd");
    Ok(std::fs::read_dir(&p).with_context(|| p.clone())?.count() as u64)
}

/// Resident set size of another process (the server child), read from outside it with
/// sysinfo: an independent check of the RSS the server reports about itself.
pub fn rss_of(pid: u32) -> anyhow::Result<u64> {
    use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};
    let pid = Pid::from_u32(pid);
    let mut sys = System::new();
    sys.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[pid]),
        true,
        ProcessRefreshKind::nothing().with_memory(),
    );
    sys.process(pid)
        .map(|p| p.memory())
        .ok_or_else(|| anyhow!("process {pid}: gone before its RSS could be read"))
}

/// `MemTotal:` and `MemAvailable:` of /proc/meminfo in bytes (kB values, or bare
/// numbers); None when either is missing or not a number.
pub fn meminfo_fields(text: &str) -> Option<(u64, u64)> {
    let field = |name: &str| -> Option<u64> {
        let l = text.lines().find(|l| l.starts_with(name))?;
        let mut w = l[name.len()..].split_whitespace();
        let v: u64 = w.next()?.parse().ok()?;
        match w.next() {
            Some("kB") => v.checked_mul(1024),
            None => Some(v),
            _ => None,
        }
    };
    Some((field("MemTotal:")?, field("MemAvailable:")?))
}

/// MemAvailable now (None if /proc/meminfo cannot be read or parsed): the defaults of
/// serve's memory budgets are fractions of it.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_fields(&text).map(|(_, available)| available)
}

/// glibc keeps freed small blocks in its arenas; hand them back so RSS follows what a
/// server holds (after sessions expire, after a replay flood).
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockstat_tcp_line() {
        let t =
            "sockets: used 14\nTCP: inuse 1 orphan 0 tw 37 alloc 2 mem 206\nUDP: inuse 0 mem 0\n";
        let s = parse_sockstat(t).unwrap();
        assert_eq!((s.inuse, s.tw, s.alloc, s.mem_pages), (1, 37, 2, 206));
        assert_eq!(s.mem_bytes(), 206 * page_size());
        // Fields in another order, unknown ones ignored.
        let s = parse_sockstat("TCP: tw 3 new 9 inuse 5\n").unwrap();
        assert_eq!((s.inuse, s.tw, s.mem_pages), (5, 3, 0));
    }

    #[test]
    fn sockstat_garbage_says_what_is_wrong() {
        for (text, want) in [
            ("UDP: inuse 0\n", "no `TCP:` line"),
            ("", "no `TCP:` line"),
            ("TCP: inuse x tw 1\n", "`inuse` value `x` is not a number"),
            ("TCP: inuse 1 tw -3\n", "`tw` value `-3`"),
            ("TCP: inuse 1 tw 18446744073709551616\n", "is not a number"),
            ("TCP: inuse 1 orphan 0\n", "without `inuse N` and `tw N`"),
            ("TCP: inuse 1 tw\n", "`tw` has no value"),
        ] {
            let e = parse_sockstat(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let s = parse_sockstat("TCP: inuse 1 tw 2 mem 18446744073709551615\n").unwrap();
        assert_eq!(s.mem_bytes(), u64::MAX, "saturates, no overflow");
    }

    #[test]
    fn proc_net_tcp_rows() {
        let t = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n   1: 0100007F:9C40 0500007F:1F90 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0\n";
        let rows = parse_proc_net_tcp(t).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].local, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(rows[0].state, LISTEN);
        let dest: SocketAddrV4 = "127.0.0.5:8080".parse().unwrap();
        assert_eq!(rows[1].remote, dest);
        assert_eq!(rows[1].local.port(), 40000);
        assert_eq!(count_to(&rows, dest, TIME_WAIT), 1);
        assert_eq!(count_ports_to(&rows, dest), 1);
        assert!(parse_proc_net_tcp("h\n 0: zz:1 00:0 01\n").is_err());
    }

    #[test]
    fn sysctl_values() {
        assert_eq!(parse_port_range("32768\t60999\n").unwrap(), (32768, 60999));
        assert!(parse_port_range("61000 32768").is_err());
        assert!(parse_port_range("1").is_err());
        assert_eq!(
            parse_triple("4096\t16384\t4194304\n").unwrap(),
            [4096, 16384, 4194304]
        );
        assert!(parse_triple("1 2").is_err());
    }

    #[test]
    fn rss_of_another_process_matches_its_statm() {
        // This process stands in for the child: sysinfo's reading vs /proc/self/statm.
        let sysinfo_rss = rss_of(std::process::id()).unwrap();
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        let statm_rss = pages * 4096;
        let diff = sysinfo_rss.abs_diff(statm_rss);
        assert!(diff < 8 << 20, "sysinfo {sysinfo_rss} vs statm {statm_rss}");
        assert!(rss_of(u32::MAX - 1).is_err());
    }

    #[test]
    fn live_host_readings_are_consistent() {
        let (lo, hi) = port_range().unwrap();
        assert!(lo <= hi);
        let me = std::process::id();
        assert!(rss_of(me).unwrap() > 0);
        assert!(self_rss_bytes() > 0);
        assert!(self_open_fds() >= 3);
        assert!(open_fds("self").unwrap() >= 3);
        read_sockstat().unwrap();
        let rows = read_proc_net_tcp().unwrap();
        let _ = rows.len();
    }
}
