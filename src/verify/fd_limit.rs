//! fd-limit: a child process with its soft RLIMIT_NOFILE set to --limit opens connections
//! to a loopback listener until the first EMFILE, then tries to read its own /proc.
//!
//! The child counts its descriptors before the loop; the independent check is that
//! connections + descriptors already open = the limit exactly (the kernel hands out the
//! lowest free number, so EMFILE means every number below the limit is taken).
use super::listener::{Acceptor, OnAccept};
use super::{verification, Run};
use crate::evidence::fmt_num;
use crate::findings::Verification;
use anyhow::{anyhow, bail};
use rtcheck_base::os::{addr, child, limits, proc};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// What the child reports on stdout (one JSON object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildReport {
    pub limit: u64,
    /// Descriptors open below the limit before the first connection (stdin/stdout/stderr...).
    pub fds_before: u64,
    /// What they are ("0 /dev/null"), so an inherited descriptor is visible.
    #[serde(default)]
    pub fd_targets: Vec<String>,
    pub connections: u64,
    /// errno name of the failure that stopped the loop ("EMFILE").
    pub error: String,
    pub error_message: String,
    /// At the limit: could the process read /proc/self/status?
    pub proc_at_limit: Result<(), String>,
    /// Could it still write on a connection it already had?
    pub write_at_limit: Result<(), String>,
    /// After closing one connection: /proc readable again?
    pub proc_after_close: Result<(), String>,
    pub elapsed_ms: u64,
}

pub fn errno_name(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EMFILE) => "EMFILE".into(),
        Some(libc::ENFILE) => "ENFILE".into(),
        Some(libc::EADDRNOTAVAIL) => "EADDRNOTAVAIL".into(),
        Some(libc::ECONNREFUSED) => "ECONNREFUSED".into(),
        Some(libc::ETIMEDOUT) => "ETIMEDOUT".into(),
        Some(libc::EINTR) => "EINTR".into(),
        Some(libc::ENOBUFS) => "ENOBUFS".into(),
        Some(libc::ECONNRESET) => "ECONNRESET".into(),
        Some(n) => format!("errno {n}"),
        None if e.kind() == std::io::ErrorKind::TimedOut => "ETIMEDOUT".into(),
        None => e.kind().to_string(),
    }
}

/// The validity check, pure: the count must fill the limit exactly and lie within
/// limit - 16 ..= limit, and the loop must have stopped on EMFILE.
pub fn check(r: &ChildReport) -> Result<(), String> {
    // A limit already used up by inherited descriptors: EMFILE at once, no connection
    // measured (the 16-descriptor slack below would let that through).
    if r.connections == 0 {
        return Err(format!(
            "no connection was opened: {} descriptors were open at the limit {}",
            r.fds_before, r.limit
        ));
    }
    if r.error != "EMFILE" {
        return Err(format!(
            "the loop stopped on {} ({}), not EMFILE",
            r.error, r.error_message
        ));
    }
    if r.connections + r.fds_before != r.limit {
        return Err(format!(
            "{} connections + {} descriptors already open = {}, not the limit {}",
            r.connections,
            r.fds_before,
            r.connections + r.fds_before,
            r.limit
        ));
    }
    if r.connections + 16 < r.limit || r.connections > r.limit {
        return Err(format!(
            "{} connections is outside {}..={}",
            r.connections,
            r.limit.saturating_sub(16),
            r.limit
        ));
    }
    Ok(())
}

/// The largest limit this experiment opens connections up to (bounded in count).
pub const MAX_LIMIT: u64 = 65_536;

/// The limit to run at: `--limit`, else the current soft limit, else (when that is above
/// [`MAX_LIMIT`], as with a 1,048,576 container default) the reference's 1,024, with a
/// note saying so.
pub fn choose_limit(explicit: Option<u64>, soft: u64, hard: u64) -> (u64, Option<String>) {
    match explicit {
        Some(l) => (l, None),
        None if soft <= MAX_LIMIT => (soft, None),
        None => {
            let l = 1024.min(hard);
            (
                l,
                Some(format!(
                    "the current soft limit {} is above the {} connections this experiment opens: measured at {} instead (--limit to choose)",
                    fmt_num(soft as f64),
                    fmt_num(MAX_LIMIT as f64),
                    fmt_num(l as f64)
                )),
            )
        }
    }
}

/// Listener ports needed so that `limit` connections never run out of ephemeral ports
/// toward one destination before EMFILE (the 4-tuple must be unique per destination).
pub fn destinations(limit: u64, port_range: u64) -> u64 {
    let per = port_range.saturating_sub(1024).max(512);
    limit.div_ceil(per).max(1)
}

pub fn run(run: &Run) -> anyhow::Result<Vec<Verification>> {
    let started = Instant::now();
    let (soft, hard) = limits::nofile()?;
    let (limit, note) = choose_limit(run.opts.limit, soft, hard);
    if limit > hard {
        bail!("--limit {limit}: above the hard open-files limit {hard}");
    }
    let (lo, hi) = proc::port_range()?;
    let n_dest = destinations(limit, (hi - lo) as u64 + 1);
    // Hold the server side while this process has room, so the child's sockets are
    // established connections; beyond that the listener closes them at once (the child's
    // descriptors count either way).
    let cap = (limits::socket_room(hard, proc::open_fds("self")?) / n_dest) as usize;
    let acceptors = (0..n_dest)
        .map(|_| Acceptor::start("127.0.0.1:0".parse()?, OnAccept::Hold { cap }))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let targets = acceptors
        .iter()
        .map(|a| a.addr.to_string())
        .collect::<Vec<_>>()
        .join(",");
    run.progress
        .note(&format!("fd-limit: child at limit {limit}"));
    let rep = run_child(run, limit, &targets)?;
    // Let the listeners drain their queues so the count of held server sides is final.
    let per = (rep.connections / n_dest) as usize;
    let mut held = 0;
    for a in &acceptors {
        a.wait_accepted(per, Duration::from_secs(3));
        held += a.accepted().min(cap);
    }
    drop(acceptors);
    let mut details: Vec<String> = note.into_iter().collect();
    details.extend(details_of(&rep, &targets, held));
    Ok(vec![judge(&rep, details, started)])
}

/// Run the fd-limit child against `targets` (within 60 s of the budget) and read its report.
fn run_child(run: &Run, limit: u64, targets: &str) -> anyhow::Result<ChildReport> {
    let mut cmd = Command::new(child::exe()?);
    cmd.args([
        "verify",
        "--child",
        "fd-limit",
        "--limit",
        &limit.to_string(),
        "--target",
        targets,
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = child::ChildGuard::spawn(cmd, "the fd-limit child")?;
    let budget = run.budget.within(Duration::from_secs(60));
    let status = loop {
        if let Some(st) = child.child.try_wait()? {
            break st;
        }
        budget.check("fd-limit")?;
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut out = String::new();
    let mut err = String::new();
    use std::io::Read;
    if let Some(mut o) = child.child.stdout.take() {
        o.read_to_string(&mut out)?;
    }
    if let Some(mut e) = child.child.stderr.take() {
        e.read_to_string(&mut err)?;
    }
    if !status.success() {
        bail!(
            "the fd-limit child failed ({status}): {}",
            err.lines().last().unwrap_or("no message")
        );
    }
    serde_json::from_str(out.trim())
        .map_err(|e| anyhow!("the fd-limit child's report is not valid JSON: {e}"))
}

/// What the child saw, beside the reference's overhead.
fn details_of(rep: &ChildReport, targets: &str, held: usize) -> Vec<String> {
    let reference_limit = crate::evidence::num("ulimit-n", "limit");
    let reference = crate::evidence::num("ulimit-n", "connections_reached");
    vec![
        format!(
            "target: rtcheck's own loopback listener on {targets} (held {} of the server sides open)",
            fmt_num(held as f64)
        ),
        format!(
            "child: soft limit {}, {} descriptors open before the loop ({}), stopped on {} after {} ms",
            fmt_num(rep.limit as f64),
            rep.fds_before,
            rep.fd_targets.join(", "),
            rep.error,
            rep.elapsed_ms
        ),
        format!(
            "at the limit: read /proc/self/status: {}; write on an open connection: {}",
            describe(&rep.proc_at_limit),
            describe(&rep.write_at_limit)
        ),
        format!(
            "after closing one connection: read /proc/self/status: {}",
            describe(&rep.proc_after_close)
        ),
        format!(
            "reference overhead: {} - {} = {} descriptors besides connections; here {}",
            fmt_num(reference_limit),
            fmt_num(reference),
            fmt_num(reference_limit - reference),
            rep.fds_before
        ),
    ]
}

/// The verdict: invalid when the child's report fails its check, else what stopped it.
fn judge(rep: &ChildReport, mut details: Vec<String>, started: Instant) -> Verification {
    let name = "fd-limit";
    if let Err(why) = check(rep) {
        return verification(
            name,
            None,
            "connections",
            super::reference_for(name),
            format!("invalid: {why}"),
            details,
            false,
            started,
        );
    }
    let blind = rep.proc_at_limit.is_err();
    let verdict = format!(
        "confirms: the limit, not the server, stopped it at {} connections ({} - {}){}",
        fmt_num(rep.connections as f64),
        fmt_num(rep.limit as f64),
        rep.fds_before,
        if blind {
            "; the process could not read its own /proc at the limit"
        } else {
            "; /proc stayed readable"
        }
    );
    let reference_limit = crate::evidence::num("ulimit-n", "limit");
    if rep.limit == reference_limit as u64 {
        details.push(format!(
            "same limit as the reference: {} here vs {}",
            fmt_num(rep.connections as f64),
            fmt_num(crate::evidence::num("ulimit-n", "connections_reached"))
        ));
    }
    verification(
        name,
        Some(rep.connections as f64),
        "connections",
        super::reference_for(name),
        verdict,
        details,
        true,
        started,
    )
}

fn describe(r: &Result<(), String>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(e) => format!("failed ({e})"),
    }
}

fn try_proc() -> Result<(), String> {
    std::fs::read_to_string("/proc/self/status")
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", errno_name(&e)))
}

/// "3 socket:[123]" for each descriptor below the limit (read before the loop, when a
/// descriptor for /proc is still available).
fn describe_fds(limit: u64) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return vec![];
    };
    let mut v: Vec<(u64, String)> = dir
        .flatten()
        .filter_map(|e| {
            let n: u64 = e.file_name().to_str()?.parse().ok()?;
            let t = std::fs::read_link(e.path()).ok()?;
            Some((n, t.display().to_string()))
        })
        .filter(|(n, t)| *n < limit && !t.ends_with("/fd"))
        .collect();
    v.sort();
    v.into_iter().map(|(n, t)| format!("{n} {t}")).collect()
}

fn open_below(limit: u64) -> u64 {
    (0..limit.min(i32::MAX as u64) as i32)
        // SAFETY: F_GETFD on any number only reads the descriptor flags.
        .filter(|fd| unsafe { libc::fcntl(*fd, libc::F_GETFD) } != -1)
        .count() as u64
}

/// The child: lower the soft limit, connect until the first error, probe, report JSON.
pub fn child(limit: u64, targets: &[SocketAddr]) -> anyhow::Result<ExitCode> {
    for t in targets {
        addr::ensure_loopback(t)?;
    }
    if targets.is_empty() {
        bail!("fd-limit child: no target");
    }
    let started = Instant::now();
    let (_, hard) = limits::nofile()?;
    if limit > hard {
        bail!("--limit {limit}: above the hard limit {hard}");
    }
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, limit, hard)
        .map_err(|e| anyhow!("setrlimit(RLIMIT_NOFILE, {limit}): {e}"))?;
    // Only numbers below the limit compete with the connections (an inherited fd 900 does
    // not); probing with fcntl needs no descriptor of its own.
    let fds_before = open_below(limit);
    let fd_targets = describe_fds(limit);
    let mut conns: Vec<TcpStream> = Vec::new();
    let deadline = started + Duration::from_secs(50);
    let failure = loop {
        if Instant::now() > deadline {
            bail!(
                "fd-limit child: no EMFILE after 50 s ({} connections)",
                conns.len()
            );
        }
        if conns.len() as u64 > limit {
            bail!("fd-limit child: more connections than the limit: the limit was not applied");
        }
        let target = &targets[conns.len() % targets.len()];
        match TcpStream::connect_timeout(target, Duration::from_secs(2)) {
            Ok(s) => conns.push(s),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => break e,
        }
    };
    let proc_at_limit = try_proc();
    let write_at_limit = match conns.first_mut() {
        Some(c) => c
            .write_all(b"x")
            .map_err(|e| format!("{}: {e}", errno_name(&e))),
        None => Err("no connection".into()),
    };
    let n = conns.len() as u64;
    conns.pop();
    let proc_after_close = try_proc();
    let rep = ChildReport {
        limit,
        fds_before,
        fd_targets,
        connections: n,
        error: errno_name(&failure),
        error_message: failure.to_string(),
        proc_at_limit,
        write_at_limit,
        proc_after_close,
        elapsed_ms: started.elapsed().as_millis() as u64,
    };
    // stdout (fd 1) is already open: printing needs no new descriptor.
    println!("{}", serde_json::to_string(&rep)?);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(limit: u64, before: u64, conns: u64, err: &str) -> ChildReport {
        ChildReport {
            limit,
            fds_before: before,
            connections: conns,
            error: err.into(),
            error_message: String::new(),
            fd_targets: vec![],
            proc_at_limit: Err("EMFILE".into()),
            write_at_limit: Ok(()),
            proc_after_close: Ok(()),
            elapsed_ms: 1,
        }
    }

    #[test]
    fn limit_choice_and_destinations() {
        assert_eq!(choose_limit(Some(256), 20_000, 20_000), (256, None));
        assert_eq!(choose_limit(None, 20_000, 20_000), (20_000, None));
        let (l, note) = choose_limit(None, 1_048_576, 1_048_576);
        assert_eq!(l, 1024);
        assert!(note.unwrap().contains("1,048,576"));
        assert_eq!(destinations(20_000, 28_232), 1);
        assert_eq!(destinations(65_536, 28_232), 3);
        assert_eq!(destinations(1024, 100), 2);
    }

    #[test]
    fn check_requires_exact_fill_and_emfile() {
        assert!(check(&rep(1024, 6, 1018, "EMFILE")).is_ok());
        assert!(check(&rep(256, 3, 253, "EMFILE")).is_ok());
        // Stopped early for another reason.
        let e = check(&rep(256, 3, 100, "ECONNREFUSED")).unwrap_err();
        assert!(e.contains("ECONNREFUSED"), "{e}");
        // Numbers that do not add up to the limit.
        assert!(check(&rep(256, 3, 250, "EMFILE")).is_err());
        // Adds up, but too many descriptors were open before: outside limit - 16.
        assert!(check(&rep(256, 40, 216, "EMFILE")).is_err());
        // EMFILE before any connection: adds up and within the slack, but measured nothing.
        let e = check(&rep(12, 12, 0, "EMFILE")).unwrap_err();
        assert!(e.contains("no connection was opened"), "{e}");
    }

    #[test]
    fn the_verdict_reads_the_report() {
        let t0 = Instant::now();
        let ok = rep(1024, 6, 1018, "EMFILE");
        let d = details_of(&ok, "127.0.0.1:9", 1018);
        assert!(
            d[0].contains("127.0.0.1:9") && d[0].contains("held 1,018"),
            "{d:?}"
        );
        assert!(
            d[2].contains("read /proc/self/status: failed (EMFILE)"),
            "{d:?}"
        );
        let v = judge(&ok, d, t0);
        assert!(v.valid && v.measured == Some(1018.0), "{v:?}");
        assert!(
            v.verdict.contains("could not read its own /proc"),
            "{}",
            v.verdict
        );
        let v = judge(&rep(256, 3, 100, "ECONNREFUSED"), vec![], t0);
        assert!(!v.valid && v.measured.is_none() && v.verdict.starts_with("invalid:"));
    }
}
