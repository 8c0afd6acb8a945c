//! ephemeral-ports and time-wait: connect and close --closed connections to a fresh
//! 127.0.0.x address (the client closes first, so the client side sits in TIME_WAIT and
//! keeps its port), then open and hold --opened more at once toward the same destination
//! and count the connects that fail with EADDRNOTAVAIL.
//!
//! Nothing system-wide is changed: the port range and tcp_tw_reuse are read, never written.
//! The held connections live in child processes (each under its own open-files limit).
//! TIME_WAIT entries are kernel state without a descriptor; they expire after 60 s.
use super::fd_limit::errno_name;
use super::listener::{Acceptor, OnAccept};
use super::{verification, Run};
use crate::evidence::fmt_num;
use crate::findings::Verification;
use anyhow::{anyhow, bail};
use rtcheck_base::os::{addr, child, deadline, limits, proc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// The measurement of the audit check of the same id (`time-wait`).
pub const TIME_WAIT: &str = crate::audit::checks::CheckId::TimeWait.as_str();

/// What an open-hold child reports once its connections are all open (one JSON line).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HoldReport {
    pub opened: u64,
    pub failed: u64,
    /// Failures by errno name.
    pub errors: BTreeMap<String, u64>,
}

/// Failed connects predicted by port arithmetic toward one destination:
/// `low` if every TIME_WAIT port can be reused, `high` if none can.
pub fn predict_failures(free_ports: u64, time_wait: u64, opened: u64, reuse: bool) -> (u64, u64) {
    let high = (time_wait + opened).saturating_sub(free_ports);
    let low = if reuse {
        opened.saturating_sub(free_ports)
    } else {
        high
    };
    (low, high)
}

/// tcp_tw_reuse: 1 = on, 2 = loopback only (the default since Linux 4.19), 0 = off.
pub fn reuse_applies(tw_reuse: u64, loopback: bool) -> bool {
    tw_reuse == 1 || (tw_reuse == 2 && loopback)
}

/// Pick a 127.0.0.x (2..=254) that no TCP socket uses, starting from a per-process offset
/// so concurrent runs do not collide.
pub fn fresh_address(rows: &[proc::TcpRow]) -> Option<Ipv4Addr> {
    let used: HashSet<Ipv4Addr> = rows
        .iter()
        .flat_map(|r| [*r.local.ip(), *r.remote.ip()])
        .collect();
    let start = (std::process::id() % 253) as u8;
    (0..253u16)
        .map(|i| 2 + ((start as u16 + i) % 253) as u8)
        .map(|x| Ipv4Addr::new(127, 0, 0, x))
        .find(|a| !used.contains(a))
}

/// Local ports of the sockets toward `dest` in `state` (each once, even when a read of
/// /proc/net/tcp showed a row twice).
pub fn ports_in_state(rows: &[proc::TcpRow], dest: SocketAddrV4, state: u8) -> HashSet<u16> {
    rows.iter()
        .filter(|r| r.remote == dest && r.state == state)
        .map(|r| r.local.port())
        .collect()
}

/// Fewest closed connections a run scaled down by the open-files limit still shows
/// TIME_WAIT with (a smaller --closed by choice runs as asked).
const MIN_CLOSED: u64 = 100;

/// What a scaled-down run says first in its verdict, or "" when it ran as asked.
fn scaled_note(asked: u64, k: u64, hard: u64, room: u64) -> String {
    if k >= asked {
        return String::new();
    }
    format!(
        "scaled down to {} of {} closed connections (the open-files limit, hard {}, leaves {} descriptors here): ",
        fmt_num(k as f64),
        fmt_num(asked as f64),
        fmt_num(hard as f64),
        fmt_num(room as f64)
    )
}

pub fn run(run: &Run) -> anyhow::Result<Vec<Verification>> {
    let started = Instant::now();
    let m = if run.wants("ephemeral-ports") {
        run.opts.opened
    } else {
        0
    };
    let (host, acceptor) = prepare(run.opts.closed)?;
    let k = host.closed;
    let budget = run.budget.within(Duration::from_secs(120));
    let closed = close_connections(run, &host, &acceptor, k, &budget)?;
    let mut out = Vec::new();
    if run.wants(TIME_WAIT) {
        out.push(time_wait_verification(&host, &closed, k, started));
    }
    if m == 0 {
        return Ok(out);
    }
    acceptor.set_mode(OnAccept::Close);
    let held = hold_connections(run, &host, m, &budget)?;
    drop(acceptor);
    out.push(ephemeral_verification(&host, &closed, &held, m, started));
    Ok(out)
}

/// The host readings and the fresh destination both phases use.
struct PortsHost {
    hard: u64,
    lo: u16,
    hi: u16,
    /// Ports in the range, and those not taken by a listener.
    range: u64,
    free: u64,
    tw_reuse: u64,
    timestamps: u64,
    dest: SocketAddrV4,
    /// Connections phase 1 closes: --closed, or fewer under a low open-files limit.
    closed: u64,
    /// Said first in a valid verdict when `closed` is fewer than asked, else "".
    scaled: String,
}

/// Check the descriptor room, read the port range and sysctls, and start a listener on a
/// fresh 127.0.0.x that holds the server side of the K closed connections (so the clients,
/// not the server, end in TIME_WAIT).
fn prepare(asked: u64) -> anyhow::Result<(PortsHost, Acceptor)> {
    let (_, hard) = limits::nofile()?;
    let room = limits::socket_room(hard, proc::open_fds("self")?);
    // A low limit (ulimit -n 1024) scales the experiment down instead of failing it; the
    // verdict says so. Too few to show anything is still an error.
    let k = asked.min(room);
    if k < asked && k < MIN_CLOSED {
        bail!("--closed {asked}: needs {MIN_CLOSED} descriptors at least in this process, the open-files limit (hard {hard}) leaves {room}");
    }
    let (lo, hi) = proc::port_range()?;
    let range = (hi - lo) as u64 + 1;
    let tw_reuse = proc::read_sysctl_u64("net/ipv4/tcp_tw_reuse").unwrap_or(0);
    let timestamps = proc::read_sysctl_u64("net/ipv4/tcp_timestamps").unwrap_or(1);
    let rows = proc::read_proc_net_tcp()?;
    let addr = fresh_address(&rows).ok_or_else(|| anyhow!("no unused 127.0.0.x address"))?;
    let acceptor = Acceptor::start(
        SocketAddr::new(IpAddr::V4(addr), 0),
        OnAccept::Hold {
            cap: k as usize + 16,
        },
    )?;
    let dest = match acceptor.addr {
        SocketAddr::V4(v4) => v4,
        other => bail!("listener on {other}: expected IPv4"),
    };
    // Ports a connect() cannot take: listeners bound inside the range.
    let bound: HashSet<u16> = rows
        .iter()
        .filter(|r| r.state == proc::LISTEN && (lo..=hi).contains(&r.local.port()))
        .map(|r| r.local.port())
        .collect();
    let host = PortsHost {
        hard,
        lo,
        hi,
        range,
        free: range.saturating_sub(bound.len() as u64),
        tw_reuse,
        timestamps,
        dest,
        closed: k,
        scaled: scaled_note(asked, k, hard, room),
    };
    Ok((host, acceptor))
}

/// Phase 1 as measured: TIME_WAIT toward the destination and sockstat before and after.
struct Closed {
    tw: u64,
    ss0: proc::Sockstat,
    ss1: proc::Sockstat,
    closed_ms: u128,
}

/// Phase 1: K connections, each closed by the client first.
fn close_connections(
    run: &Run,
    host: &PortsHost,
    acceptor: &Acceptor,
    k: u64,
    budget: &deadline::Deadline,
) -> anyhow::Result<Closed> {
    let dest = host.dest;
    let ss0 = proc::read_sockstat()?;
    let t1 = Instant::now();
    for i in 0..k {
        if i % 256 == 0 {
            budget.check("ephemeral-ports")?;
            run.progress
                .note(&format!("time-wait: {i}/{k} closed toward {dest}"));
        }
        let s = TcpStream::connect_timeout(&SocketAddr::V4(dest), Duration::from_secs(2))
            .map_err(|e| anyhow!("connect {i} to {dest}: {} ({e})", errno_name(&e)))?;
        drop(s);
    }
    if !acceptor.wait_accepted(k as usize, Duration::from_secs(5)) {
        bail!(
            "the listener accepted {} of {k} connections",
            acceptor.accepted()
        );
    }
    // The server closes after the clients did: the clients' sockets go to TIME_WAIT.
    acceptor.release_held();
    let closed_ms = t1.elapsed().as_millis();
    // The FIN exchange finishes asynchronously: wait (bounded) until it settles. Only this
    // run's sockets count (its own fresh destination), by local port across reads: a read
    // of /proc/net/tcp is not atomic, and while other work on the host churns sockets a
    // read can skip some rows or show others twice.
    let settle = Instant::now() + Duration::from_secs(10);
    let mut seen = HashSet::new();
    let tw = loop {
        let rows = proc::read_proc_net_tcp()?;
        seen.extend(ports_in_state(&rows, dest, proc::TIME_WAIT));
        let tw = seen.len() as u64;
        if tw >= k || Instant::now() >= settle {
            break tw;
        }
        budget.check(TIME_WAIT)?;
        std::thread::sleep(Duration::from_millis(50));
    };
    let ss1 = proc::read_sockstat()?;
    Ok(Closed {
        tw,
        ss0,
        ss1,
        closed_ms,
    })
}

/// Whether `tw` TIME_WAIT sockets show `k` closes (1% or 2 missing at most, for a read
/// racing the kernel). Zero closes or zero TIME_WAIT sockets measured nothing: the
/// tolerance must not turn 0 of 1 into a pass.
fn time_wait_valid(tw: u64, k: u64) -> bool {
    let tol = (k / 100).max(2);
    k > 0 && tw > 0 && tw + tol >= k
}

fn time_wait_verification(host: &PortsHost, c: &Closed, k: u64, started: Instant) -> Verification {
    let (dest, tw) = (host.dest, c.tw);
    let valid = time_wait_valid(tw, k);
    let details = vec![
        format!("target: rtcheck's own loopback listener on {dest} (fresh address)"),
        format!(
            "{} connections opened and closed by the client in {} ms",
            fmt_num(k as f64),
            c.closed_ms
        ),
        format!(
            "sockstat tw {} -> {} (+{}, namespace-wide); TIME_WAIT toward {dest} in /proc/net/tcp: {}",
            fmt_num(c.ss0.tw as f64),
            fmt_num(c.ss1.tw as f64),
            fmt_num(c.ss1.tw.saturating_sub(c.ss0.tw) as f64),
            fmt_num(tw as f64)
        ),
        "each keeps its local port for 60 s without any descriptor; closing first puts the client (load tester, proxy) in TIME_WAIT".into(),
    ];
    let verdict = if valid {
        format!(
            "{}confirms: {} TIME_WAIT sockets on the client side after {} closes, each holding a port toward {dest}",
            host.scaled,
            fmt_num(tw as f64),
            fmt_num(k as f64)
        )
    } else {
        format!(
            "invalid: only {} of {} closed connections are in TIME_WAIT",
            fmt_num(tw as f64),
            fmt_num(k as f64)
        )
    };
    verification(
        TIME_WAIT,
        Some(tw as f64),
        "sockets",
        super::reference_for(TIME_WAIT),
        verdict,
        details,
        valid,
        started,
    )
}

/// Phase 2 as measured: what the children opened and what the kernel shows.
struct Held {
    total: HoldReport,
    open_ms: u128,
    held_now: u64,
    tw_left: u64,
}

/// Phase 2: M connections held at once, in children of at most 8,000 each; released
/// (and the children reaped) before returning.
fn hold_connections(
    run: &Run,
    host: &PortsHost,
    m: u64,
    budget: &deadline::Deadline,
) -> anyhow::Result<Held> {
    let dest = host.dest;
    let per_child = host.hard.saturating_sub(limits::FD_MARGIN).clamp(64, 8000);
    let mut children = Vec::new();
    let mut total = HoldReport::default();
    let t2 = Instant::now();
    let mut left = m;
    while left > 0 {
        budget.check("ephemeral-ports")?;
        let n = left.min(per_child);
        left -= n;
        run.progress.note(&format!(
            "ephemeral-ports: holding {} of {} toward {dest}",
            fmt_num(total.opened as f64),
            fmt_num(m as f64)
        ));
        let (g, rep) = spawn_holder(dest, n, budget)?;
        total.opened += rep.opened;
        total.failed += rep.failed;
        for (e, c) in rep.errors {
            *total.errors.entry(e).or_default() += c;
        }
        children.push(g);
    }
    let open_ms = t2.elapsed().as_millis();
    let rows2 = proc::read_proc_net_tcp()?;
    let held_now = rows2
        .iter()
        .filter(|r| r.remote == dest && matches!(r.state, proc::ESTABLISHED | proc::CLOSE_WAIT))
        .count() as u64;
    let tw_left = proc::count_to(&rows2, dest, proc::TIME_WAIT) as u64;
    // Release: closing stdin tells each child to exit; the guards reap them.
    for mut g in children {
        drop(g.child.stdin.take());
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until && matches!(g.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Ok(Held {
        total,
        open_ms,
        held_now,
        tw_left,
    })
}

/// One open-hold child for `n` connections, and its report once they are all open.
fn spawn_holder(
    dest: SocketAddrV4,
    n: u64,
    budget: &deadline::Deadline,
) -> anyhow::Result<(child::ChildGuard, HoldReport)> {
    let mut cmd = Command::new(child::exe()?);
    cmd.args([
        "verify",
        "--child",
        "open-hold",
        "--target",
        &dest.to_string(),
        "--count",
        &n.to_string(),
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let mut g = child::ChildGuard::spawn(cmd, "an ephemeral-ports child")?;
    let stdout = g
        .child
        .stdout
        .take()
        .ok_or_else(|| anyhow!("no child stdout"))?;
    let rep = read_report(stdout, budget)?;
    Ok((g, rep))
}

/// What contradicts the port arithmetic or the kernel's own count (each makes the
/// measurement invalid).
fn hold_problems(host: &PortsHost, held: &Held, m: u64, (low, high): (u64, u64)) -> Vec<String> {
    let total = &held.total;
    let tol = (m / 100).max(16);
    let eaddr = total.errors.get("EADDRNOTAVAIL").copied().unwrap_or(0);
    let other: u64 = total.failed.saturating_sub(eaddr);
    let mut problems = Vec::new();
    if other > 0 {
        problems.push(format!(
            "{other} connects failed with other errors: {:?}",
            total.errors
        ));
    }
    if total.opened + total.failed != m {
        problems.push(format!(
            "{} opened + {} failed != {} attempted",
            total.opened, total.failed, m
        ));
    }
    let held_now = held.held_now;
    if held_now + tol < total.opened || held_now > total.opened + tol {
        problems.push(format!(
            "the kernel shows {held_now} sockets toward {}, the children report {} open",
            host.dest, total.opened
        ));
    }
    if eaddr + tol < low || eaddr > high + tol {
        problems.push(format!(
            "{eaddr} failures outside the predicted {low}..={high}"
        ));
    }
    problems
}

fn ephemeral_verification(
    host: &PortsHost,
    closed: &Closed,
    held: &Held,
    m: u64,
    started: Instant,
) -> Verification {
    let reuse = reuse_applies(host.tw_reuse, true) && host.timestamps != 0;
    let (low, high) = predict_failures(host.free, closed.tw, m, reuse);
    let eaddr = held.total.errors.get("EADDRNOTAVAIL").copied().unwrap_or(0);
    let problems = hold_problems(host, held, m, (low, high));
    let details = hold_details(host, closed, held, m, (low, high));
    let (tw, free) = (closed.tw, host.free);
    let valid = problems.is_empty();
    let verdict = if !valid {
        format!("invalid: {}", problems.join("; "))
    } else if eaddr > 0 {
        format!(
            "confirms: {} of {} connects failed with EADDRNOTAVAIL once {} ports toward one destination were taken ({} free in the range, {} in TIME_WAIT at the start, {} of them left after)",
            fmt_num(eaddr as f64),
            fmt_num(m as f64),
            fmt_num(held.held_now as f64),
            fmt_num(free as f64),
            fmt_num(tw as f64),
            fmt_num(held.tw_left as f64)
        )
    } else if high == 0 {
        format!(
            "0 failed, as predicted: {} TIME_WAIT + {} new stay under the {} ports toward one destination (--full reaches the range)",
            fmt_num(tw as f64),
            fmt_num(m as f64),
            fmt_num(free as f64)
        )
    } else {
        format!(
            "differs: 0 failed because tcp_tw_reuse = {} reused TIME_WAIT ports on loopback; without reuse (between hosts) {} would fail",
            host.tw_reuse,
            fmt_num(high as f64)
        )
    };
    verification(
        "ephemeral-ports",
        Some(eaddr as f64),
        "connections",
        super::reference_for("ephemeral-ports"),
        if valid {
            format!("{}{verdict}", host.scaled)
        } else {
            verdict
        },
        details,
        valid,
        started,
    )
}

fn hold_details(
    host: &PortsHost,
    closed: &Closed,
    held: &Held,
    m: u64,
    (low, high): (u64, u64),
) -> Vec<String> {
    let total = &held.total;
    let tw_reuse = host.tw_reuse;
    vec![
        format!(
            "port range {}-{} = {} ports ({} free of listeners); tcp_tw_reuse = {tw_reuse} ({}), tcp_timestamps = {}",
            host.lo,
            host.hi,
            fmt_num(host.range as f64),
            fmt_num(host.free as f64),
            match tw_reuse {
                0 => "off",
                1 => "on",
                2 => "loopback only: applies here",
                _ => "unknown",
            },
            host.timestamps
        ),
        format!(
            "{} in TIME_WAIT, then {} opened at once in {} ms: {} held, {} failed ({})",
            fmt_num(closed.tw as f64),
            fmt_num(m as f64),
            held.open_ms,
            fmt_num(total.opened as f64),
            fmt_num(total.failed as f64),
            if total.errors.is_empty() {
                "no errors".to_string()
            } else {
                total
                    .errors
                    .iter()
                    .map(|(e, c)| format!("{e} {c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        format!(
            "predicted failures {low}..={high} (all TIME_WAIT ports reused .. none reused); {} still in TIME_WAIT after",
            fmt_num(held.tw_left as f64)
        ),
        format!(
            "kernel count of held sockets toward {}: {}",
            host.dest,
            fmt_num(held.held_now as f64)
        ),
    ]
}

/// Read one JSON line from a child's stdout within the budget.
fn read_report(
    stdout: std::process::ChildStdout,
    budget: &deadline::Deadline,
) -> anyhow::Result<HoldReport> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let r = BufReader::new(stdout).read_line(&mut line).map(|_| line);
        let _ = tx.send(r);
    });
    loop {
        budget.check("ephemeral-ports")?;
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Ok(line)) if !line.trim().is_empty() => {
                return serde_json::from_str(line.trim())
                    .map_err(|e| anyhow!("an ephemeral-ports child's report: {e}"));
            }
            Ok(Ok(_)) => bail!("an ephemeral-ports child exited without a report"),
            Ok(Err(e)) => bail!("an ephemeral-ports child's stdout: {e}"),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(_) => bail!("an ephemeral-ports child exited without a report"),
        }
    }
}

/// The child: open `count` connections toward `target` and hold them, report, then wait
/// for stdin to close (the parent's release, or its death) before exiting.
pub fn child_open_hold(target: SocketAddr, count: u64) -> anyhow::Result<ExitCode> {
    addr::ensure_loopback(&target)?;
    limits::raise_nofile_to_hard()?;
    let mut held = Vec::with_capacity(count as usize);
    let mut rep = HoldReport::default();
    let deadline = Instant::now() + Duration::from_secs(100);
    for _ in 0..count {
        if Instant::now() > deadline {
            bail!("open-hold child: 100 s exceeded");
        }
        match TcpStream::connect_timeout(&target, Duration::from_secs(2)) {
            Ok(s) => {
                held.push(s);
                rep.opened += 1;
            }
            Err(e) => {
                rep.failed += 1;
                *rep.errors.entry(errno_name(&e)).or_default() += 1;
                // Out of descriptors is this process's limit, not the port range: stop.
                if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) {
                    rep.failed += count - rep.opened - rep.failed;
                    break;
                }
            }
        }
    }
    println!("{}", serde_json::to_string(&rep)?);
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(held);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_arithmetic() {
        // Reference scale without reuse: 10,000 TIME_WAIT + 20,000 new over 28,232 ports.
        assert_eq!(predict_failures(28232, 10000, 20000, false), (1768, 1768));
        // With reuse every TIME_WAIT port can be taken again.
        assert_eq!(predict_failures(28232, 10000, 20000, true), (0, 1768));
        assert_eq!(predict_failures(28232, 2000, 2000, false), (0, 0));
        assert_eq!(predict_failures(100, 0, 150, true), (50, 50));
    }

    #[test]
    fn tw_reuse_modes() {
        assert!(reuse_applies(2, true));
        assert!(!reuse_applies(2, false));
        assert!(reuse_applies(1, false));
        assert!(!reuse_applies(0, true));
    }

    #[test]
    fn fresh_address_skips_used_ones() {
        let row = |l: &str, r: &str| proc::TcpRow {
            local: l.parse().unwrap(),
            remote: r.parse().unwrap(),
            state: proc::ESTABLISHED,
        };
        let mut rows = Vec::new();
        for x in 2..=254u8 {
            if x != 77 {
                rows.push(row(&format!("127.0.0.{x}:80"), "127.0.0.1:5000"));
            }
        }
        assert_eq!(fresh_address(&rows), Some(Ipv4Addr::new(127, 0, 0, 77)));
        rows.push(row("127.0.0.1:1", "127.0.0.77:9"));
        assert_eq!(fresh_address(&rows), None);
    }

    #[test]
    fn own_time_wait_ports_count_once_and_only_toward_the_destination() {
        let dest: SocketAddrV4 = "127.0.0.9:4000".parse().unwrap();
        let row = |l: &str, r: &str, state| proc::TcpRow {
            local: l.parse().unwrap(),
            remote: r.parse().unwrap(),
            state,
        };
        let rows = vec![
            row("127.0.0.1:50000", "127.0.0.9:4000", proc::TIME_WAIT),
            // The same row again, as a read racing other sockets can show it.
            row("127.0.0.1:50000", "127.0.0.9:4000", proc::TIME_WAIT),
            row("127.0.0.1:50001", "127.0.0.9:4000", proc::TIME_WAIT),
            row("127.0.0.1:50002", "127.0.0.9:4000", proc::ESTABLISHED),
            // Other work on the host: another destination.
            row("127.0.0.1:50003", "127.0.0.8:4000", proc::TIME_WAIT),
        ];
        let ports = ports_in_state(&rows, dest, proc::TIME_WAIT);
        assert_eq!(ports, HashSet::from([50000, 50001]));
    }

    #[test]
    fn time_wait_needs_sockets_in_time_wait() {
        assert!(time_wait_valid(100, 100) && time_wait_valid(98, 100));
        assert!(!time_wait_valid(97, 100));
        assert!(!time_wait_valid(0, 1) && !time_wait_valid(0, 2));
        assert!(!time_wait_valid(0, 0));
        assert!(time_wait_valid(1, 1));
    }

    #[test]
    fn a_scaled_down_run_says_so_and_one_run_as_asked_says_nothing() {
        assert_eq!(scaled_note(2000, 2000, 20000, 19900), "");
        let note = scaled_note(2000, 954, 1024, 954);
        assert!(
            note.starts_with("scaled down to 954 of 2,000 closed connections"),
            "{note}"
        );
        assert!(note.contains("hard 1,024"), "{note}");
    }

    #[test]
    fn the_hold_phase_is_judged_against_the_arithmetic_and_the_kernel() {
        let host = PortsHost {
            hard: 20000,
            lo: 32768,
            hi: 32867,
            range: 100,
            free: 100,
            tw_reuse: 0,
            timestamps: 1,
            dest: "127.0.0.9:5000".parse().unwrap(),
            closed: 100,
            scaled: String::new(),
        };
        let held = |opened: u64, eaddr: u64, other: u64, kernel: u64| Held {
            total: HoldReport {
                opened,
                failed: eaddr + other,
                errors: [
                    ("EADDRNOTAVAIL".to_string(), eaddr),
                    ("ECONNREFUSED".into(), other),
                ]
                .into_iter()
                .filter(|(_, c)| *c > 0)
                .collect(),
            },
            open_ms: 10,
            held_now: kernel,
            tw_left: 0,
        };
        let m = 150;
        let predicted = predict_failures(host.free, 0, m, false);
        assert!(hold_problems(&host, &held(100, 50, 0, 100), m, predicted).is_empty());
        let p = hold_problems(&host, &held(100, 40, 10, 100), m, predicted);
        assert!(
            p[0].contains("10 connects failed with other errors"),
            "{p:?}"
        );
        let p = hold_problems(&host, &held(100, 50, 0, 10), m, predicted);
        assert!(
            p[0].contains("the kernel shows 10 sockets toward 127.0.0.9:5000"),
            "{p:?}"
        );
        let p = hold_problems(&host, &held(150, 0, 0, 150), m, predicted);
        assert!(
            p[0].contains("0 failures outside the predicted 50..=50"),
            "{p:?}"
        );
        let closed = Closed {
            tw: 0,
            ss0: Default::default(),
            ss1: Default::default(),
            closed_ms: 1,
        };
        let d = hold_details(&host, &closed, &held(100, 50, 0, 100), m, predicted);
        assert!(
            d[0].starts_with("port range 32768-32867 = 100 ports"),
            "{d:?}"
        );
        assert!(d[1].contains("EADDRNOTAVAIL 50"), "{d:?}");
    }
}
