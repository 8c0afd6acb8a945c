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
use super::{guard, sys, verification, Run};
use crate::evidence::fmt_num;
use crate::findings::Verification;
use anyhow::{anyhow, bail};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

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
pub fn fresh_address(rows: &[sys::TcpRow]) -> Option<Ipv4Addr> {
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

pub fn run(run: &Run) -> anyhow::Result<Vec<Verification>> {
    let started = Instant::now();
    let k = run.opts.closed;
    let m = if run.wants("ephemeral-ports") {
        run.opts.opened
    } else {
        0
    };
    // The server side of every closed connection is held until the clients have closed
    // (so the clients, not the server, end in TIME_WAIT): K descriptors here.
    let (_, hard) = sys::nofile()?;
    let room = hard.saturating_sub(sys::open_fds("self")? + 64);
    if k > room {
        bail!("--closed {k}: needs {k} descriptors in this process, the open-files limit leaves {room}");
    }
    let (lo, hi) = sys::port_range()?;
    let range = (hi - lo) as u64 + 1;
    let tw_reuse = sys::read_sysctl_u64("net/ipv4/tcp_tw_reuse").unwrap_or(0);
    let timestamps = sys::read_sysctl_u64("net/ipv4/tcp_timestamps").unwrap_or(1);
    let rows = sys::read_proc_net_tcp()?;
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
        .filter(|r| r.state == sys::LISTEN && (lo..=hi).contains(&r.local.port()))
        .map(|r| r.local.port())
        .collect();
    let free = range.saturating_sub(bound.len() as u64);

    // Phase 1: K connections, each closed by the client.
    let ss0 = sys::read_sockstat()?;
    let t1 = Instant::now();
    let budget = run.budget.within(Duration::from_secs(120));
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
    // The FIN exchange finishes asynchronously: wait (bounded) until it settles.
    let settle = Instant::now() + Duration::from_secs(3);
    let tw = loop {
        let rows = sys::read_proc_net_tcp()?;
        let tw = sys::count_to(&rows, dest, sys::TIME_WAIT) as u64;
        if tw >= k || Instant::now() >= settle {
            break tw;
        }
        budget.check("time-wait")?;
        std::thread::sleep(Duration::from_millis(50));
    };
    let ss1 = sys::read_sockstat()?;
    let mut out = Vec::new();

    if run.wants("time-wait") {
        let tol = (k / 100).max(2);
        let valid = tw + tol >= k;
        let details = vec![
            format!("target: rtcheck's own loopback listener on {dest} (fresh address)"),
            format!(
                "{} connections opened and closed by the client in {closed_ms} ms",
                fmt_num(k as f64)
            ),
            format!(
                "sockstat tw {} -> {} (+{}, namespace-wide); TIME_WAIT toward {dest} in /proc/net/tcp: {}",
                fmt_num(ss0.tw as f64),
                fmt_num(ss1.tw as f64),
                fmt_num(ss1.tw.saturating_sub(ss0.tw) as f64),
                fmt_num(tw as f64)
            ),
            "each keeps its local port for 60 s without any descriptor; closing first puts the client (load tester, proxy) in TIME_WAIT".into(),
        ];
        let verdict = if valid {
            format!(
                "confirms: {} TIME_WAIT sockets on the client side after {} closes, each holding a port toward {dest}",
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
        out.push(verification(
            "time-wait",
            Some(tw as f64),
            "sockets",
            super::reference_for("time-wait"),
            verdict,
            details,
            valid,
            started,
        ));
    }
    if m == 0 {
        return Ok(out);
    }

    // Phase 2: M connections held at once, in children of at most 8,000 each.
    acceptor.set_mode(OnAccept::Close);
    let per_child = hard.saturating_sub(64).clamp(64, 8000);
    let exe = guard::exe()?;
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
        let mut cmd = Command::new(&exe);
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
        let mut g = guard::ChildGuard::spawn(cmd, "an ephemeral-ports child")?;
        let stdout = g
            .child
            .stdout
            .take()
            .ok_or_else(|| anyhow!("no child stdout"))?;
        let rep = read_report(stdout, &budget)?;
        total.opened += rep.opened;
        total.failed += rep.failed;
        for (e, c) in rep.errors {
            *total.errors.entry(e).or_default() += c;
        }
        children.push(g);
    }
    let open_ms = t2.elapsed().as_millis();
    let rows2 = sys::read_proc_net_tcp()?;
    let held_now = rows2
        .iter()
        .filter(|r| r.remote == dest && matches!(r.state, sys::ESTABLISHED | sys::CLOSE_WAIT))
        .count() as u64;
    let tw_left = sys::count_to(&rows2, dest, sys::TIME_WAIT) as u64;
    // Release: closing stdin tells each child to exit; the guards reap them.
    for mut g in children {
        drop(g.child.stdin.take());
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until && matches!(g.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    drop(acceptor);

    let reuse = reuse_applies(tw_reuse, true) && timestamps != 0;
    let (low, high) = predict_failures(free, tw, m, reuse);
    let tol = (m / 100).max(16);
    let eaddr = total.errors.get("EADDRNOTAVAIL").copied().unwrap_or(0);
    let other: u64 = total.failed - eaddr;
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
    if held_now + tol < total.opened || held_now > total.opened + tol {
        problems.push(format!(
            "the kernel shows {held_now} sockets toward {dest}, the children report {} open",
            total.opened
        ));
    }
    if eaddr + tol < low || eaddr > high + tol {
        problems.push(format!(
            "{eaddr} failures outside the predicted {low}..={high}"
        ));
    }
    let details = vec![
        format!(
            "port range {lo}-{hi} = {} ports ({} free of listeners); tcp_tw_reuse = {tw_reuse} ({}), tcp_timestamps = {timestamps}",
            fmt_num(range as f64),
            fmt_num(free as f64),
            match tw_reuse {
                0 => "off",
                1 => "on",
                2 => "loopback only: applies here",
                _ => "unknown",
            }
        ),
        format!(
            "{} in TIME_WAIT, then {} opened at once in {open_ms} ms: {} held, {} failed ({})",
            fmt_num(tw as f64),
            fmt_num(m as f64),
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
            fmt_num(tw_left as f64)
        ),
        format!(
            "kernel count of held sockets toward {dest}: {}",
            fmt_num(held_now as f64)
        ),
    ];
    let verdict = if !problems.is_empty() {
        format!("invalid: {}", problems.join("; "))
    } else if eaddr > 0 {
        format!(
            "confirms: {} of {} connects failed with EADDRNOTAVAIL once {} ports toward one destination were taken ({} free in the range, {} in TIME_WAIT at the start, {} of them left after)",
            fmt_num(eaddr as f64),
            fmt_num(m as f64),
            fmt_num(held_now as f64),
            fmt_num(free as f64),
            fmt_num(tw as f64),
            fmt_num(tw_left as f64)
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
            "differs: 0 failed because tcp_tw_reuse = {tw_reuse} reused TIME_WAIT ports on loopback; without reuse (between hosts) {} would fail",
            fmt_num(high as f64)
        )
    };
    out.push(verification(
        "ephemeral-ports",
        Some(eaddr as f64),
        "connections",
        super::reference_for("ephemeral-ports"),
        verdict,
        details,
        problems.is_empty(),
        started,
    ));
    Ok(out)
}

/// Read one JSON line from a child's stdout within the budget.
fn read_report(
    stdout: std::process::ChildStdout,
    budget: &guard::Budget,
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
    guard::ensure_loopback(&target)?;
    sys::raise_nofile_to_hard()?;
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
        let row = |l: &str, r: &str| sys::TcpRow {
            local: l.parse().unwrap(),
            remote: r.parse().unwrap(),
            state: sys::ESTABLISHED,
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
}
