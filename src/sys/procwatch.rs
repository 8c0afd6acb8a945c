//! The user's own server process, watched from outside through a run: found by the
//! port it listens on (/proc/net/tcp{,6} -> the socket inode -> the /proc/*/fd that
//! hold it) or given by pid, then sampled on a thread (RSS, fds, threads, CPU; summed
//! over its processes: a master and its workers hold one listener). Used by `bench
//! fanout --server` and `verify delivery --server`; anything that runs load against a
//! server it did not start can take it. Nothing is written to the process.
use rtcheck_base::os::process;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The processes to watch and how they were found.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub pids: Vec<u32>,
    /// `--pid 4242`, or `node, the listener on 127.0.0.1:8080` (its command name).
    pub found_by: String,
}

/// Command names of tunnels and proxies that forward a port to the real server.
const FORWARDERS: &[&str] = &[
    "ssh",
    "sshd",
    "socat",
    "kubectl",
    "nginx",
    "haproxy",
    "caddy",
    "envoy",
    "traefik",
    "stunnel",
    "stunnel4",
    "docker-proxy",
    "rootlessport",
    "slirp4netns",
];

/// The processes behind `addr`, or the ones given; Err says in words why the server's
/// figures cannot be read (the caller reports it instead of them).
pub fn find(addr: SocketAddr, pids: &[u32]) -> Result<Target, String> {
    let proc = Path::new("/proc");
    if !pids.is_empty() {
        if let Some(p) = pids.iter().find(|p| !proc.join(p.to_string()).is_dir()) {
            return Err(format!("--pid {p}: no such process"));
        }
        let list: Vec<String> = pids.iter().map(u32::to_string).collect();
        return Ok(Target {
            pids: pids.to_vec(),
            found_by: format!("--pid {}", list.join(",")),
        });
    }
    let inodes = listening(proc, addr)?;
    if inodes.is_empty() {
        return Err(if addr.ip().is_loopback() {
            format!("no process listens on {addr} in this network namespace (a container's own, or another host through a tunnel?): give --pid")
        } else {
            format!("{addr} is not a listener on this host (a remote server's memory cannot be read from here): run rtcheck on its host, or give --pid")
        });
    }
    let (first, unreadable) = process::holders(proc, &inodes);
    if first.is_empty() {
        return Err(format!(
            "the listener on {addr} belongs to a process whose fds this user cannot read ({unreadable} processes unreadable: another user's): run as that user or root, or give --pid"
        ));
    }
    // A process forked a moment ago holds its parent's listener until it execs or exits
    // (a server spawning a helper, a test harness starting a command): seen once, it is
    // not the server, and its figures would vanish mid-run. Look again, the sockets read
    // again too (a server restarted between the looks has a new one).
    std::thread::sleep(Duration::from_millis(100));
    let again = listening(proc, addr).unwrap_or_default();
    let pids = held_both_times(first, &process::holders(proc, &again).0);
    if pids.is_empty() {
        return Err(format!(
            "the process listening on {addr} was gone 100 ms after it was found (restarting?): run again once it is up, or give --pid"
        ));
    }
    // Named, so a proxy found in front of the hub is seen for what it is.
    let names: Vec<String> = pids
        .iter()
        .filter_map(|p| {
            let t = std::fs::read_to_string(proc.join(p.to_string()).join("stat")).ok()?;
            process::parse_stat(&t).ok().map(|s| s.comm)
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    // A tunnel or proxy in front of the hub holds the port: its memory is not the hub's.
    if let Some(n) = names.iter().find(|n| FORWARDERS.contains(&n.as_str())) {
        return Err(format!(
            "the listener on {addr} is {n} (pid {}), a tunnel or proxy in front of the server, not the server: give the server's --pid",
            pids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        ));
    }
    Ok(Target {
        pids,
        found_by: format!("{}, the listener on {addr}", names.join(",")),
    })
}

/// The inodes of the listening sockets on `addr`'s port (its address or a wildcard).
fn listening(proc: &Path, addr: SocketAddr) -> Result<Vec<u64>, String> {
    Ok(process::listeners(proc)?
        .iter()
        .filter(|l| {
            l.local.port() == addr.port()
                && (l.local.ip() == addr.ip() || l.local.ip().is_unspecified())
        })
        .map(|l| l.inode)
        .collect())
}

/// The holders seen in both looks; the second look's when none was in both (the server
/// restarted between them).
fn held_both_times(first: Vec<u32>, second: &[u32]) -> Vec<u32> {
    let both: Vec<u32> = first.into_iter().filter(|p| second.contains(p)).collect();
    if both.is_empty() {
        second.to_vec()
    } else {
        both
    }
}

/// One reading, summed over the target's processes; `t_s` from the sampler's start.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Sample {
    pub t_s: f64,
    pub rss_bytes: u64,
    pub fds: u64,
    pub threads: u64,
    pub cpu_s: f64,
}

struct Shared {
    samples: Vec<Sample>,
    error: Option<String>,
}

/// Samples the target every `every` on its own thread until finished or dropped.
pub struct Sampler {
    target: Target,
    t0: Instant,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A run's readings at most: one an hour's run at 4 a second.
const MAX_SAMPLES: usize = 16_000;

pub fn read(pids: &[u32], t_s: f64) -> Result<Sample, String> {
    let mut s = Sample {
        t_s,
        ..Sample::default()
    };
    for &p in pids {
        let f = process::figures(Path::new("/proc"), p)
            .map_err(|e| format!("process {p} stopped answering ({e})"))?;
        s.rss_bytes += f.rss_bytes;
        s.fds += f.fds;
        s.threads += f.threads;
        s.cpu_s += f.cpu_s;
    }
    Ok(s)
}

/// Reads once and keeps it; a failed read ends the sampling but keeps what was read.
fn take(pids: &[u32], t0: Instant, shared: &Mutex<Shared>) -> Option<Sample> {
    let mut sh = shared.lock().unwrap_or_else(|e| e.into_inner());
    if sh.error.is_some() {
        return None;
    }
    if sh.samples.len() >= MAX_SAMPLES {
        // Said, not silent: the figures then cover only the start of the run.
        sh.error = Some(format!(
            "after {MAX_SAMPLES} samples: the figures cover the run's first {:.0} s",
            sh.samples.last().map_or(0.0, |l| l.t_s)
        ));
        return None;
    }
    match read(pids, t0.elapsed().as_secs_f64()) {
        Ok(s) => {
            sh.samples.push(s);
            Some(s)
        }
        Err(e) => {
            sh.error = Some(e);
            None
        }
    }
}

impl Sampler {
    pub fn start(target: Target, every: Duration) -> Sampler {
        let t0 = Instant::now();
        let shared = Arc::new(Mutex::new(Shared {
            samples: Vec::new(),
            error: None,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (sh, st, pids) = (shared.clone(), stop.clone(), target.pids.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                let _ = take(&pids, t0, &sh);
                let until = Instant::now() + every;
                while Instant::now() < until && !st.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        });
        Sampler {
            target,
            t0,
            shared,
            stop,
            thread: Some(thread),
        }
    }

    /// A reading now (a mark: the run's start of publishing, its time bound).
    pub fn now(&self) -> Option<Sample> {
        take(&self.target.pids, self.t0, &self.shared)
    }

    /// Stops sampling; the summary over `[from, to]` (seconds of the sampler's clock),
    /// RSS growth over `[from, growth_to]` (the part of the run that sent).
    pub fn finish(mut self, from: f64, to: f64, growth_to: f64) -> ServerProcess {
        self.halt();
        let sh = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let w = Window {
            from,
            to,
            growth_to,
        };
        summarize(&self.target, &sh.samples, w, sh.error.clone())
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The server's own figures through a run, as reports carry them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerProcess {
    /// `--pid N`, or `NAME, the listener on ADDR`.
    pub found_by: String,
    pub pids: Vec<u32>,
    /// Readings in the window (from the first publish to the time bound).
    pub samples: u64,
    pub window_s: f64,
    pub rss_start_mb: f64,
    pub rss_end_mb: f64,
    pub rss_peak_mb: f64,
    /// Least-squares slope of RSS while the run sent (MB/s), over this long.
    pub rss_growth_mb_per_s: f64,
    pub growth_window_s: f64,
    pub fds_start: u64,
    pub fds_end: u64,
    pub threads_peak: u64,
    pub cpu_s: f64,
    /// Why the readings stopped early (what was read before is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Least-squares slope of y over x; 0 with fewer than two distinct x.
pub fn slope(pts: &[(f64, f64)]) -> f64 {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return 0.0;
    }
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        0.0
    } else {
        sxy / sxx
    }
}

/// The part of a run to summarize (seconds of the sampler's clock).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub from: f64,
    pub to: f64,
    /// RSS growth is measured up to here (the end of sending; `to` adds the drain).
    pub growth_to: f64,
}

/// Pure: the figures of the samples within the window.
pub fn summarize(
    target: &Target,
    all: &[Sample],
    win: Window,
    error: Option<String>,
) -> ServerProcess {
    let within = |s: &&Sample, to: f64| s.t_s >= win.from - 1e-9 && s.t_s <= to + 1e-9;
    let w: Vec<&Sample> = all.iter().filter(|s| within(s, win.to)).collect();
    let mb = |b: u64| b as f64 / 1e6;
    let (first, last) = (w.first().copied(), w.last().copied());
    let grow: Vec<&&Sample> = w
        .iter()
        .filter(|s| within(s, win.growth_to.min(win.to)))
        .collect();
    let pts: Vec<(f64, f64)> = grow.iter().map(|s| (s.t_s, mb(s.rss_bytes))).collect();
    ServerProcess {
        found_by: target.found_by.clone(),
        pids: target.pids.clone(),
        samples: w.len() as u64,
        window_s: match (first, last) {
            (Some(a), Some(b)) => b.t_s - a.t_s,
            _ => 0.0,
        },
        rss_start_mb: first.map(|s| mb(s.rss_bytes)).unwrap_or(0.0),
        rss_end_mb: last.map(|s| mb(s.rss_bytes)).unwrap_or(0.0),
        rss_peak_mb: w.iter().map(|s| mb(s.rss_bytes)).fold(0.0, f64::max),
        rss_growth_mb_per_s: slope(&pts),
        growth_window_s: match (grow.first(), grow.last()) {
            (Some(a), Some(b)) => b.t_s - a.t_s,
            _ => 0.0,
        },
        fds_start: first.map(|s| s.fds).unwrap_or(0),
        fds_end: last.map(|s| s.fds).unwrap_or(0),
        threads_peak: w.iter().map(|s| s.threads).max().unwrap_or(0),
        cpu_s: match (first, last) {
            (Some(a), Some(b)) => (b.cpu_s - a.cpu_s).max(0.0),
            _ => 0.0,
        },
        error,
    }
}

impl ServerProcess {
    /// One line for a report: `server process 4242 (the listener on ...): RSS 60.7 ->
    /// 73.0 MB (+1.2 MB/s, peak 73.0) over 10 s; fds 40 -> 30; threads 11; CPU 3.2 s`.
    pub fn line(&self) -> String {
        let pids: Vec<String> = self.pids.iter().map(u32::to_string).collect();
        let mut s = format!(
            "server process {} ({}): RSS {:.1} -> {:.1} MB ({:+.2} MB/s, peak {:.1}) over {:.0} s; fds {} -> {}; threads {}; CPU {:.1} s",
            pids.join(","),
            self.found_by,
            self.rss_start_mb,
            self.rss_end_mb,
            self.rss_growth_mb_per_s,
            self.rss_peak_mb,
            self.window_s,
            self.fds_start,
            self.fds_end,
            self.threads_peak,
            self.cpu_s
        );
        if let Some(e) = &self.error {
            s.push_str(&format!(" (readings stopped: {e})"));
        }
        s
    }

    /// Enough readings to speak of the window (at least three over a second).
    pub fn measured(&self) -> bool {
        self.samples >= 3 && self.window_s >= 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_seen_once_is_not_the_server() {
        // 9 forked from 7 and exec'd between the looks (a master 7 with worker 8 stays).
        assert_eq!(held_both_times(vec![7, 8, 9], &[7, 8]), [7, 8]);
        assert_eq!(held_both_times(vec![7], &[7, 12]), [7]);
        // Restarted between the looks: the new process, not nothing.
        assert_eq!(held_both_times(vec![7], &[20]), [20]);
        assert!(held_both_times(vec![7], &[]).is_empty());
    }

    fn t() -> Target {
        Target {
            pids: vec![7],
            found_by: "--pid 7".into(),
        }
    }

    #[test]
    fn slope_and_window() {
        assert!((slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]) - 2.0).abs() < 1e-9);
        assert_eq!(slope(&[(1.0, 1.0)]), 0.0);
        let s: Vec<Sample> = (0..11)
            .map(|i| Sample {
                t_s: i as f64,
                rss_bytes: 60_000_000 + i * 1_200_000,
                fds: 40 - i,
                threads: 11,
                cpu_s: i as f64 * 0.5,
            })
            .collect();
        let win = |from, to| Window {
            from,
            to,
            growth_to: to,
        };
        let p = summarize(&t(), &s, win(2.0, 8.0), None);
        assert_eq!(p.samples, 7);
        assert!((p.window_s - 6.0).abs() < 1e-9);
        assert!((p.rss_growth_mb_per_s - 1.2).abs() < 1e-6, "{p:?}");
        assert_eq!((p.fds_start, p.fds_end), (38, 32));
        assert!((p.cpu_s - 3.0).abs() < 1e-9);
        assert!(p.measured());
        assert!(
            p.line().contains("RSS 62.4 -> 69.6 MB (+1.20 MB/s"),
            "{}",
            p.line()
        );
        assert!(!summarize(&t(), &s, win(20.0, 30.0), None).measured());
        // Growth while sending only: flat after 5 s does not dilute it.
        let mut s2 = s.clone();
        for x in s2.iter_mut().skip(6) {
            x.rss_bytes = s[5].rss_bytes;
        }
        let p = summarize(
            &t(),
            &s2,
            Window {
                from: 0.0,
                to: 10.0,
                growth_to: 5.0,
            },
            None,
        );
        assert!((p.rss_growth_mb_per_s - 1.2).abs() < 1e-6, "{p:?}");
        assert!((p.growth_window_s - 5.0).abs() < 1e-9);
    }

    #[test]
    fn this_process_is_found_by_its_port_and_sampled() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let target = find(addr, &[]).unwrap();
        assert_eq!(target.pids, vec![std::process::id()]);
        assert!(target.found_by.contains(&addr.to_string()));
        let s = Sampler::start(target, Duration::from_millis(50));
        let a = s.now().unwrap();
        assert!(a.rss_bytes > 0 && a.fds >= 3 && a.threads >= 2, "{a:?}");
        let p = s.finish(0.0, 1e9, 1e9);
        assert!(p.samples >= 1 && p.error.is_none(), "{p:?}");
        drop(l);
        let e = find(addr, &[]).unwrap_err();
        assert!(e.contains("no process listens on"), "{e}");
        let e = find("10.255.0.1:9".parse().unwrap(), &[]).unwrap_err();
        assert!(e.contains("not a listener on this host"), "{e}");
        assert!(find(addr, &[u32::MAX - 1])
            .unwrap_err()
            .contains("no such process"));
    }
}
