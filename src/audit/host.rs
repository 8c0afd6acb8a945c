//! The host snapshot: every /proc and /sys file the checks need, read once, read-only,
//! under a root (`--procfs`, `--sysfs`, `--pid`). Checks are pure functions of `Host`.
//!
//! Each field is a [`Read`]: the parsed value, or the reason it is missing (file absent,
//! unreadable, or garbage), which the check turns into `skip` with that reason.
use std::path::{Path, PathBuf};

/// A value read from the host, or why it could not be read (names the file).
pub type Read<T> = Result<T, String>;

/// Where to read from.
#[derive(Debug, Clone)]
pub struct Roots {
    pub procfs: PathBuf,
    pub sysfs: PathBuf,
    /// Audit this process instead of the auditing process itself (`self`).
    pub pid: Option<u32>,
    /// `pid` is a worker of this master/worker server.
    pub group: Option<super::process::Group>,
    /// Other processes given (`--pid` list, `--process`) that are not `pid`'s server:
    /// named in the report, not audited.
    pub others: Vec<u32>,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            procfs: PathBuf::from("/proc"),
            sysfs: PathBuf::from("/sys"),
            pid: None,
            group: None,
            others: vec![],
        }
    }
}

/// A listening socket of the audited server and its accept queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backlog {
    pub local: String,
    /// The effective backlog: min(listen()'s argument, somaxconn when it listened).
    pub backlog: u64,
    pub queued: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NofileLimit {
    /// `u64::MAX` when the file says `unlimited`.
    pub soft: u64,
    pub hard: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileNr {
    pub allocated: u64,
    pub max: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    pub low: u32,
    pub high: u32,
}

impl PortRange {
    pub fn size(&self) -> u64 {
        (self.high as u64 + 1).saturating_sub(self.low as u64)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sockstat {
    pub tcp_inuse: u64,
    pub tcp_tw: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    pub time_s: u64,
    pub intvl_s: u64,
    pub probes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemInfo {
    pub total: u64,
    pub available: u64,
}

/// A cgroup limit with the file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupMemory {
    /// None = no limit anywhere on the path.
    pub limit: Option<u64>,
    /// The file that holds the effective (lowest) limit, or the leaf file read.
    pub file: String,
    pub version: u8,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CgroupCpu {
    /// quota / period in CPUs; None = no quota.
    pub cpus: Option<f64>,
    pub file: String,
    pub version: u8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Affinity {
    pub list: String,
    pub count: u64,
}

/// nf_conntrack: None when the module is not loaded (no sysctl).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conntrack {
    pub max: u64,
    pub count: Option<u64>,
}

/// Everything the checks read. Fields are public so tests can build hosts directly.
#[derive(Debug, Clone)]
pub struct Host {
    /// "self" or the pid, as used under procfs.
    pub process: String,
    pub nofile: Read<NofileLimit>,
    /// Number of entries in <procfs>/<pid>/fd (open fds now).
    pub open_fds: Read<u64>,
    pub file_max: Read<u64>,
    pub nr_open: Read<u64>,
    pub file_nr: Read<FileNr>,
    pub port_range: Read<PortRange>,
    /// Ports of ip_local_reserved_ports that fall inside the range.
    pub reserved_in_range: Read<u64>,
    pub tcp_tw_reuse: Read<u64>,
    pub sockstat: Read<Sockstat>,
    /// min, default, max in bytes.
    pub tcp_wmem: Read<[u64; 3]>,
    /// low, pressure, high in pages.
    pub tcp_mem: Read<[u64; 3]>,
    pub page_size: u64,
    pub keepalive: Read<Keepalive>,
    pub somaxconn: Read<u64>,
    pub tcp_max_syn_backlog: Read<u64>,
    pub meminfo: Read<MemInfo>,
    pub cgroup_memory: Read<CgroupMemory>,
    pub affinity: Read<Affinity>,
    pub cgroup_cpu: Read<CgroupCpu>,
    /// Ok(None): conntrack not loaded.
    pub conntrack: Read<Option<Conntrack>>,
    /// The nf_conntrack_max file looked for (named when it is absent).
    pub conntrack_file: String,
    /// The audited process is a worker of this server (its master and workers).
    pub group: Option<super::process::Group>,
    /// The listening sockets of the audited server (its master and workers too), read
    /// live through sock_diag; Err: not read, and why.
    pub backlogs: Read<Vec<Backlog>>,
}

/// The listeners held by `pids` with their backlog: their socket inodes matched with
/// sock_diag's listeners. Live only (/proc): a mounted tree has no sockets to ask about.
fn read_backlogs(roots: &Roots) -> Read<Vec<Backlog>> {
    use rtcheck_base::os::{process, sockdiag};
    let Some(pid) = roots.pid else {
        return Err("rtcheck itself listens on nothing: --pid or --process names the server whose listen backlog to read".into());
    };
    if roots.procfs != Path::new("/proc") {
        return Err(format!(
            "listen backlogs are read live through sock_diag, not under --procfs {}",
            roots.procfs.display()
        ));
    }
    let mut pids = vec![pid];
    if let Some(g) = &roots.group {
        pids.push(g.master);
        pids.extend(&g.workers);
    }
    let mut inodes = Vec::new();
    for p in pids {
        inodes.extend(process::socket_inodes(&roots.procfs, p).ok_or_else(|| {
            format!("/proc/{p}/fd: not readable (another user's process: run as that user or root)")
        })?);
    }
    let mut v: Vec<Backlog> = sockdiag::listeners()?
        .into_iter()
        .filter(|l| inodes.contains(&l.inode))
        .map(|l| Backlog {
            local: l.local.to_string(),
            backlog: u64::from(l.backlog),
            queued: u64::from(l.queued),
        })
        .collect();
    v.sort_by(|a, b| a.local.cmp(&b.local));
    v.dedup();
    Ok(v)
}

/// Read a whole small file; errors name the path. Read-only (the audit never writes) and
/// bounded (`rtcheck_base::input`): a FIFO or a huge file in a --procfs tree is a skip, not a hang.
fn read(path: &Path) -> Read<String> {
    use rtcheck_base::input::Refused;
    let bytes = rtcheck_base::input::read_bounded(path).map_err(|e| {
        let why = match e {
            Refused::Io(e) if e.kind() == std::io::ErrorKind::NotFound => "missing".to_string(),
            Refused::Io(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                "not readable (permission denied)".into()
            }
            e => e.to_string(),
        };
        format!("{}: {why}", path.display())
    })?;
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

fn garbage(path: &Path, what: &str, text: &str) -> String {
    let shown: String = text.trim().chars().take(40).collect();
    format!(
        "{}: unexpected content `{shown}` (expected {what})",
        path.display()
    )
}

/// Whitespace-separated unsigned integers, exactly `n` of them.
fn parse_nums(path: &Path, text: &str, n: usize) -> Read<Vec<u64>> {
    let v: Result<Vec<u64>, _> = text.split_whitespace().map(str::parse::<u64>).collect();
    match v {
        Ok(v) if v.len() == n => Ok(v),
        _ => Err(garbage(
            path,
            &format!("{n} unsigned integer{}", if n == 1 { "" } else { "s" }),
            text,
        )),
    }
}

fn read_nums(path: &Path, n: usize) -> Read<Vec<u64>> {
    let t = read(path)?;
    parse_nums(path, &t, n)
}

pub(crate) fn read_u64(path: &Path) -> Read<u64> {
    Ok(read_nums(path, 1)?[0])
}

/// `Max open files  1024  4096  files` in <procfs>/<pid>/limits.
pub fn parse_limits(path: &Path, text: &str) -> Read<NofileLimit> {
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .ok_or_else(|| garbage(path, "a `Max open files` line", text))?;
    let mut it = line["Max open files".len()..].split_whitespace();
    let lim = |s: Option<&str>| -> Option<u64> {
        match s? {
            "unlimited" => Some(u64::MAX),
            n => n.parse().ok(),
        }
    };
    match (lim(it.next()), lim(it.next())) {
        (Some(soft), Some(hard)) => Ok(NofileLimit { soft, hard }),
        _ => Err(garbage(path, "`Max open files <soft> <hard> files`", line)),
    }
}

/// `TCP: inuse 5 orphan 0 tw 3 alloc 7 mem 2` in <procfs>/net/sockstat (the one parser
/// in [`rtcheck_base::os::proc`]; a skip names the file).
pub fn parse_sockstat(path: &Path, text: &str) -> Read<Sockstat> {
    match rtcheck_base::os::proc::parse_sockstat(text) {
        Ok(s) => Ok(Sockstat {
            tcp_inuse: s.inuse,
            tcp_tw: s.tw,
        }),
        Err(why) => {
            let line = text.lines().find(|l| l.starts_with("TCP:")).unwrap_or(text);
            Err(format!(
                "{}: {}",
                garbage(path, "`TCP: inuse N ... tw N`", line),
                why
            ))
        }
    }
}

/// MemTotal and MemAvailable (kB) from <procfs>/meminfo, in bytes.
pub fn parse_meminfo(path: &Path, text: &str) -> Read<MemInfo> {
    match rtcheck_base::os::proc::meminfo_fields(text) {
        Some((total, available)) => Ok(MemInfo { total, available }),
        None => Err(garbage(path, "`MemTotal:` and `MemAvailable:` in kB", text)),
    }
}

/// A CPU list such as `0-3,8,10-11`: number of CPUs.
pub fn parse_cpu_list(s: &str) -> Option<u64> {
    let mut n = 0;
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
                // A CPU number above 1M is garbage, not a machine.
                if b < a || b >= 1 << 20 {
                    return None;
                }
                n += b - a + 1;
            }
            None => {
                if part.parse::<u64>().ok()? >= 1 << 20 {
                    return None;
                }
                n += 1;
            }
        }
    }
    (n > 0).then_some(n)
}

/// Ports listed in ip_local_reserved_ports (`8080,9000-9010`) inside `range`.
pub fn parse_reserved(path: &Path, text: &str, range: PortRange) -> Read<u64> {
    let mut n = 0u64;
    for part in text.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>(), b.parse::<u32>()),
            None => (part.parse::<u32>(), part.parse::<u32>()),
        };
        let (a, b) = match (a, b) {
            (Ok(a), Ok(b)) if a <= b => (a, b),
            _ => return Err(garbage(path, "a port list like `8080,9000-9010`", text)),
        };
        let lo = a.max(range.low);
        let hi = b.min(range.high);
        if lo <= hi {
            n += (hi - lo + 1) as u64;
        }
    }
    Ok(n)
}

/// cgroup v1 memory limits at or above 2^62 mean "no limit" (LONG_MAX rounded to a page).
const V1_UNLIMITED: u64 = 1 << 62;

impl Host {
    /// Read the snapshot. Fails only when a root itself is unusable (usage error);
    /// every missing or bad file becomes a `Read` error for its check.
    pub fn read(roots: &Roots) -> anyhow::Result<Host> {
        let process = check_roots(roots)?;
        let p = |rel: &str| roots.procfs.join(rel);
        let sys_root = roots.procfs.join("sys");
        let sys = |rel: &str| sys_root.join(rel);
        let proc_dir = roots.procfs.join(&process);

        let limits_path = proc_dir.join("limits");
        let nofile = read(&limits_path).and_then(|t| parse_limits(&limits_path, &t));
        let fd_dir = proc_dir.join("fd");
        let open_fds = std::fs::read_dir(&fd_dir)
            .map(|d| d.count() as u64)
            .map_err(|e| format!("{}: {e}", fd_dir.display()));

        let file_nr_path = sys("fs/file-nr");
        let file_nr = read_nums(&file_nr_path, 3).map(|v| FileNr {
            allocated: v[0],
            max: v[2],
        });
        let (port_range, reserved_in_range) = read_ports(&sys_root);

        let sockstat_path = p("net/sockstat");
        let sockstat = read(&sockstat_path).and_then(|t| parse_sockstat(&sockstat_path, &t));
        let arr3 = |path: PathBuf| read_nums(&path, 3).map(|v| [v[0], v[1], v[2]]);
        let meminfo_path = p("meminfo");
        let meminfo = read(&meminfo_path).and_then(|t| parse_meminfo(&meminfo_path, &t));

        let cgroups = read(&proc_dir.join("cgroup")).ok();
        let cg_root = roots.sysfs.join("fs/cgroup");
        let ct_path = sys("net/netfilter/nf_conntrack_max");
        Ok(Host {
            process,
            nofile,
            open_fds,
            file_max: read_u64(&sys("fs/file-max")),
            nr_open: read_u64(&sys("fs/nr_open")),
            file_nr,
            port_range,
            reserved_in_range,
            tcp_tw_reuse: read_u64(&sys("net/ipv4/tcp_tw_reuse")),
            sockstat,
            tcp_wmem: arr3(sys("net/ipv4/tcp_wmem")),
            tcp_mem: arr3(sys("net/ipv4/tcp_mem")),
            page_size: rtcheck_base::os::proc::page_size(),
            keepalive: read_keepalive(&sys_root),
            somaxconn: read_u64(&sys("net/core/somaxconn")),
            tcp_max_syn_backlog: read_u64(&sys("net/ipv4/tcp_max_syn_backlog")),
            meminfo,
            cgroup_memory: cgroup_memory(&cg_root, cgroups.as_deref()),
            affinity: read_affinity(&proc_dir.join("status")),
            cgroup_cpu: cgroup_cpu(&cg_root, cgroups.as_deref()),
            conntrack: read_conntrack(&sys_root),
            conntrack_file: ct_path.display().to_string(),
            group: roots.group.clone(),
            backlogs: read_backlogs(roots),
        })
    }
}

/// The roots must be directories and `--pid` a process: usage errors, not skips. Returns
/// the process directory name under procfs (`self` or the pid).
fn check_roots(roots: &Roots) -> anyhow::Result<String> {
    if !roots.procfs.is_dir() {
        anyhow::bail!("--procfs {}: not a directory", roots.procfs.display());
    }
    if !roots.sysfs.is_dir() {
        anyhow::bail!("--sysfs {}: not a directory", roots.sysfs.display());
    }
    match roots.pid {
        Some(pid) => {
            let dir = roots.procfs.join(pid.to_string());
            if !dir.is_dir() {
                anyhow::bail!("--pid {pid}: no such process ({} missing)", dir.display());
            }
            Ok(pid.to_string())
        }
        None => Ok("self".to_string()),
    }
}

/// ip_local_port_range and the reserved ports inside it, under <procfs>/sys.
pub(crate) fn read_ports(sys: &Path) -> (Read<PortRange>, Read<u64>) {
    let range_path = sys.join("net/ipv4/ip_local_port_range");
    let port_range = read_nums(&range_path, 2).and_then(|v| {
        let ok = v[0] <= v[1] && v[1] <= 65535;
        if ok {
            Ok(PortRange {
                low: v[0] as u32,
                high: v[1] as u32,
            })
        } else {
            Err(garbage(
                &range_path,
                "`low high` with low <= high <= 65535",
                &format!("{} {}", v[0], v[1]),
            ))
        }
    });
    let reserved_path = sys.join("net/ipv4/ip_local_reserved_ports");
    let reserved_in_range = match &port_range {
        Ok(r) => read(&reserved_path).and_then(|t| parse_reserved(&reserved_path, &t, *r)),
        Err(e) => Err(e.clone()),
    };
    (port_range, reserved_in_range)
}

/// The three tcp_keepalive sysctls; the first unreadable one names itself.
pub(crate) fn read_keepalive(sys: &Path) -> Read<Keepalive> {
    let ka = (
        read_u64(&sys.join("net/ipv4/tcp_keepalive_time")),
        read_u64(&sys.join("net/ipv4/tcp_keepalive_intvl")),
        read_u64(&sys.join("net/ipv4/tcp_keepalive_probes")),
    );
    match ka {
        (Ok(time_s), Ok(intvl_s), Ok(probes)) => Ok(Keepalive {
            time_s,
            intvl_s,
            probes,
        }),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Err(e),
    }
}

/// `Cpus_allowed_list:` of <procfs>/<pid>/status.
fn read_affinity(status_path: &Path) -> Read<Affinity> {
    let t = read(status_path)?;
    let l = t
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or_else(|| garbage(status_path, "a `Cpus_allowed_list:` line", &t))?;
    let list = l.trim().to_string();
    let count = parse_cpu_list(&list)
        .ok_or_else(|| garbage(status_path, "a CPU list like `0-3,8`", &list))?;
    Ok(Affinity { list, count })
}

/// nf_conntrack_max and count; None when the module is not loaded (no sysctl).
fn read_conntrack(sys: &Path) -> Read<Option<Conntrack>> {
    let ct_path = sys.join("net/netfilter/nf_conntrack_max");
    if !ct_path.exists() {
        return Ok(None);
    }
    read_u64(&ct_path).map(|max| {
        Some(Conntrack {
            max,
            count: read_u64(&sys.join("net/netfilter/nf_conntrack_count")).ok(),
        })
    })
}

/// The cgroup path of `controller` from <procfs>/<pid>/cgroup: v1 `N:memory,...:/path`,
/// v2 `0::/path`. Returns (version, path).
fn cgroup_path(cgroups: Option<&str>, controller: &str, cg_root: &Path) -> Option<(u8, String)> {
    let text = cgroups?;
    let v1_dir = cg_root.join(controller);
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        if ctrls.split(',').any(|c| c == controller) && v1_dir.is_dir() {
            return Some((1, path.to_string()));
        }
    }
    for line in text.lines() {
        if let Some(path) = line.strip_prefix("0::") {
            return Some((2, path.to_string()));
        }
    }
    None
}

/// Directories from the process's cgroup up to the hierarchy root, that exist under
/// `base`. A container sees its own cgroup as the root, so a path that does not exist
/// is retried from the root (the mounted hierarchy is already the container's).
fn cgroup_dirs(base: &Path, path: &str) -> Vec<PathBuf> {
    let rel = path.trim_start_matches('/');
    let mut dirs = Vec::new();
    let mut cur = if rel.is_empty() {
        None
    } else {
        Some(rel.to_string())
    };
    while let Some(r) = cur {
        let d = base.join(&r);
        if d.is_dir() {
            dirs.push(d);
        }
        cur = r.rsplit_once('/').map(|(parent, _)| parent.to_string());
    }
    dirs.push(base.to_path_buf());
    dirs
}

/// Effective memory limit: the lowest limit on the path from the process's cgroup up.
fn cgroup_memory(cg_root: &Path, cgroups: Option<&str>) -> Read<CgroupMemory> {
    let (version, base, file, path) = match cgroup_path(cgroups, "memory", cg_root) {
        Some((1, path)) => (1, cg_root.join("memory"), "memory.limit_in_bytes", path),
        Some((_, path)) => (2, cg_root.to_path_buf(), "memory.max", path),
        None if cg_root.join("memory").is_dir() => (
            1,
            cg_root.join("memory"),
            "memory.limit_in_bytes",
            "/".into(),
        ),
        None => (2, cg_root.to_path_buf(), "memory.max", "/".into()),
    };
    let mut best: Option<(u64, PathBuf)> = None;
    let mut first_read: Option<PathBuf> = None;
    let mut last_err = None;
    for dir in cgroup_dirs(&base, &path) {
        let f = dir.join(file);
        if !f.exists() {
            continue; // the v2 root has no memory.max
        }
        let text = match read(&f) {
            Ok(t) => t,
            Err(e) => {
                last_err = Some(e);
                continue;
            }
        };
        first_read.get_or_insert_with(|| f.clone());
        let t = text.trim();
        let limit = if t == "max" {
            None
        } else {
            match t.parse::<u64>() {
                Ok(v) if version == 1 && v >= V1_UNLIMITED => None,
                Ok(v) => Some(v),
                Err(_) => return Err(garbage(&f, "bytes or `max`", t)),
            }
        };
        if let Some(v) = limit {
            if best.as_ref().is_none_or(|(b, _)| v < *b) {
                best = Some((v, f.clone()));
            }
        }
    }
    match (best, first_read) {
        (Some((v, f)), _) => Ok(CgroupMemory {
            limit: Some(v),
            file: f.display().to_string(),
            version,
        }),
        (None, Some(f)) => Ok(CgroupMemory {
            limit: None,
            file: f.display().to_string(),
            version,
        }),
        (None, None) => match last_err {
            Some(e) => Err(e),
            // No limit file at all (v2 root only, or no cgroup fs): no cgroup limit.
            None => Ok(CgroupMemory {
                limit: None,
                file: base.join(file).display().to_string(),
                version,
            }),
        },
    }
}

/// Effective CPU quota in CPUs: the lowest quota/period on the path up.
fn cgroup_cpu(cg_root: &Path, cgroups: Option<&str>) -> Read<CgroupCpu> {
    let v1 = cg_root.join("cpu").is_dir() || cg_root.join("cpu,cpuacct").is_dir();
    let (version, base, path) = match cgroup_path(cgroups, "cpu", cg_root) {
        Some((1, path)) => (1u8, cg_root.join("cpu"), path),
        Some((_, path)) => (2, cg_root.to_path_buf(), path),
        None if v1 => (1, cg_root.join("cpu"), "/".into()),
        None => (2, cg_root.to_path_buf(), "/".into()),
    };
    let mut best: Option<(f64, PathBuf)> = None;
    let mut first: Option<PathBuf> = None;
    for dir in cgroup_dirs(&base, &path) {
        let quota = if version == 1 {
            let qf = dir.join("cpu.cfs_quota_us");
            if !qf.exists() {
                continue;
            }
            let q = read(&qf)?;
            let q = q.trim();
            first.get_or_insert_with(|| qf.clone());
            if q == "-1" {
                None
            } else {
                let quota: u64 = q
                    .parse()
                    .map_err(|_| garbage(&qf, "microseconds or -1", q))?;
                let pf = dir.join("cpu.cfs_period_us");
                let period = read_u64(&pf)?;
                if period == 0 {
                    return Err(garbage(&pf, "a period above 0", "0"));
                }
                Some((quota as f64 / period as f64, qf))
            }
        } else {
            let f = dir.join("cpu.max");
            if !f.exists() {
                continue;
            }
            let t = read(&f)?;
            first.get_or_insert_with(|| f.clone());
            let mut w = t.split_whitespace();
            match (w.next(), w.next().map(str::parse::<u64>)) {
                (Some("max"), Some(Ok(_))) | (Some("max"), None) => None,
                (Some(q), Some(Ok(period))) if period > 0 => match q.parse::<u64>() {
                    Ok(q) => Some((q as f64 / period as f64, f)),
                    Err(_) => return Err(garbage(&f, "`<quota|max> <period>`", &t)),
                },
                _ => return Err(garbage(&f, "`<quota|max> <period>`", &t)),
            }
        };
        if let Some((c, f)) = quota {
            if best.as_ref().is_none_or(|(b, _)| c < *b) {
                best = Some((c, f));
            }
        }
    }
    let file_name = if version == 1 {
        "cpu.cfs_quota_us"
    } else {
        "cpu.max"
    };
    Ok(match best {
        Some((c, f)) => CgroupCpu {
            cpus: Some(c),
            file: f.display().to_string(),
            version,
        },
        None => CgroupCpu {
            cpus: None,
            file: first
                .unwrap_or_else(|| base.join(file_name))
                .display()
                .to_string(),
            version,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers_accept_real_formats_and_name_the_file_on_garbage() {
        let p = Path::new("/x/limits");
        let l = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n";
        assert_eq!(
            parse_limits(p, l).unwrap(),
            NofileLimit {
                soft: 1024,
                hard: 524288
            }
        );
        let e = parse_limits(p, "Max open files  lots  more files\n").unwrap_err();
        assert!(e.starts_with("/x/limits: unexpected content"), "{e}");
        let s = parse_sockstat(
            Path::new("s"),
            "sockets: used 14\nTCP: inuse 1 orphan 0 tw 7 alloc 1 mem 206\n",
        )
        .unwrap();
        assert_eq!((s.tcp_inuse, s.tcp_tw), (1, 7));
        let e = parse_sockstat(Path::new("/p/net/sockstat"), "TCP: inuse 1 tw x\n").unwrap_err();
        assert!(e.starts_with("/p/net/sockstat: unexpected content"), "{e}");
        assert!(e.contains("`tw` value `x` is not a number"), "{e}");
        assert_eq!(parse_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(parse_cpu_list("3-1"), None);
        let r = PortRange {
            low: 32768,
            high: 60999,
        };
        assert_eq!(r.size(), 28232);
        assert_eq!(parse_reserved(p, "8080,40000-40009\n", r).unwrap(), 10);
        assert_eq!(parse_reserved(p, "\n", r).unwrap(), 0);
        assert!(parse_reserved(p, "a-b", r).is_err());
        let m = parse_meminfo(p, "MemTotal: 100 kB\nMemFree: 1 kB\nMemAvailable: 50 kB\n").unwrap();
        assert_eq!((m.total, m.available), (102_400, 51_200));
    }

    #[test]
    fn huge_numbers_in_proc_are_garbage_not_overflow() {
        let p = Path::new("/proc/meminfo");
        let e = parse_meminfo(p, "MemTotal: 18446744073709551615 kB\nMemAvailable: 1 kB\n")
            .unwrap_err();
        assert!(e.contains("/proc/meminfo"), "{e}");
        assert_eq!(parse_cpu_list("0-18446744073709551615"), None);
        assert_eq!(parse_cpu_list("18446744073709551615"), None);
        assert_eq!(parse_cpu_list("0-1048575"), Some(1 << 20));
    }

    #[test]
    fn cgroup_limits_take_the_lowest_on_the_path_up() {
        let d = tempfile::tempdir().unwrap();
        let cg = d.path().join("fs/cgroup");
        let leaf = cg.join("system.slice/app.service");
        std::fs::create_dir_all(&leaf).unwrap();
        std::fs::write(cg.join("cgroup.controllers"), "cpu memory\n").unwrap();
        std::fs::write(cg.join("system.slice/memory.max"), "1000000\n").unwrap();
        std::fs::write(leaf.join("memory.max"), "max\n").unwrap();
        std::fs::write(cg.join("system.slice/cpu.max"), "max 100000\n").unwrap();
        std::fs::write(leaf.join("cpu.max"), "150000 100000\n").unwrap();
        let procs = Some("0::/system.slice/app.service\n");
        let m = cgroup_memory(&cg, procs).unwrap();
        assert_eq!((m.limit, m.version), (Some(1_000_000), 2));
        assert!(m.file.ends_with("system.slice/memory.max"), "{}", m.file);
        let c = cgroup_cpu(&cg, procs).unwrap();
        assert_eq!(c.cpus, Some(1.5));
        // Garbage in a limit file names it.
        std::fs::write(leaf.join("cpu.max"), "lots\n").unwrap();
        let e = cgroup_cpu(&cg, procs).unwrap_err();
        assert!(
            e.contains("app.service/cpu.max: unexpected content `lots`"),
            "{e}"
        );
    }
}
