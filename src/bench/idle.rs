//! `rtcheck bench idle`: server RSS per idle connection (WebSocket and SSE), read from the
//! server's own /control/stats before and after N idle clients connect.
use super::check_interrupted;
use super::fanout::{progress_bar, start_loadgen, start_server, Loadgen, Server};
use super::model::{IdleReport, IdleResult, RssSample};
use super::wire::Event;
use crate::sys::control;
use crate::sys::serve::Scratch;
use rtcheck_base::os::{limits, signal};
use rtcheck_wire::stats::ServerStats;
use std::time::{Duration, Instant};

/// The target: at most 6 KB RSS per idle WebSocket connection at 10,000.
pub const TARGET_BYTES: u64 = 6_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IdleProto {
    Ws,
    Sse,
}

/// What `bench idle` measures (the command layer fills it from its flags).
#[derive(Debug, Clone)]
pub struct IdleOptions {
    pub connections: u64,
    /// Protocols to measure, in order.
    pub protocol: Vec<IdleProto>,
    /// Time to let the server settle after the last connection before reading RSS.
    pub settle: Duration,
    pub connect_timeout: Duration,
}

/// Bytes per connection, or None when nothing connected or RSS did not grow (a shrinking
/// RSS says the reading is disturbed, not that connections are free).
pub fn per_connection(before: u64, after: u64, connected: u64) -> Option<f64> {
    if connected == 0 || rss_growth_problem(before, after).is_some() {
        return None;
    }
    Some((after - before) as f64 / connected as f64)
}

/// Why the RSS pair cannot give a per-connection figure, if it cannot.
pub fn rss_growth_problem(before: u64, after: u64) -> Option<String> {
    if after > before {
        None
    } else {
        Some(format!(
            "RSS did not grow ({before} B before, {after} B after): no per-connection figure (the server released memory, or its RSS reading is wrong)"
        ))
    }
}

/// Measure each protocol in turn: the report every format renders.
pub fn run(a: &IdleOptions) -> anyhow::Result<IdleReport> {
    if a.connections == 0 {
        anyhow::bail!("--connections must be at least 1");
    }
    let (_, hard) = limits::raise_nofile_to_hard()?;
    limits::check_fd_budget(a.connections, hard)?;
    signal::install_interrupt_handler();
    let mut results = Vec::new();
    for p in &a.protocol {
        results.push(measure(*p, a)?);
        check_interrupted()?;
    }
    let report = IdleReport {
        command: "bench idle".into(),
        connections: a.connections,
        target_bytes_per_connection: TARGET_BYTES,
        valid: results.iter().all(|r| r.valid),
        results,
        reference: crate::evidence::reference("conn-ram"),
    };
    Ok(report)
}

fn measure(p: IdleProto, a: &IdleOptions) -> anyhow::Result<IdleResult> {
    let name = match p {
        IdleProto::Ws => "ws",
        IdleProto::Sse => "sse",
    };
    let scratch = Scratch::new(&format!("bench-idle-{name}"))?;
    // --wait-start and never started: the clients stay idle.
    let flags: Vec<String> = ["--wait-start", "--rounds", "1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut srv = start_server(&flags, &scratch, false)?;
    let before = control::stats(srv.control)?;
    let url = match p {
        IdleProto::Ws => format!("ws://{}/ws", srv.data),
        IdleProto::Sse => format!("http://{}/sse", srv.data),
    };
    let args = vec![
        "--connections".to_string(),
        a.connections.to_string(),
        "--rounds".into(),
        "0".into(),
        "--max-seconds".into(),
        (a.connect_timeout.as_secs() + a.settle.as_secs() + 60).to_string(),
    ];
    let mut lg = start_loadgen(&url, &args, &scratch)?;
    let mut samples = vec![sample(&before, name, 0)];
    let (connected, failed) = connect_sampling(&mut lg, &srv, a, name, |s| samples.push(s))?;
    std::thread::sleep(a.settle);
    let after = control::stats(srv.control)?;
    samples.push(sample(&after, name, connected));
    let _ = lg.finish(Duration::from_secs(30));
    lg.guard.wait_or_terminate(Duration::from_secs(5));
    srv.guard.terminate(Duration::from_secs(5));

    let seen = after.clients_reported(name);
    let mut notes = Vec::new();
    let mut valid = failed == 0 && connected == a.connections;
    if !valid {
        notes.push(format!(
            "INVALID: {connected} of {} clients connected",
            a.connections
        ));
    }
    match seen {
        Some(n) if n != connected => {
            valid = false;
            notes.push(format!(
                "INVALID: the server counts {n} {name} clients, the load generator {connected}"
            ));
        }
        None => notes.push("the server does not report its client count".into()),
        _ => {}
    }
    if before.rss_bytes == 0 || after.rss_bytes == 0 {
        valid = false;
        notes.push("INVALID: the server reported no rss_bytes".into());
    }
    if let Some(why) = rss_growth_problem(before.rss_bytes, after.rss_bytes) {
        valid = false;
        notes.push(format!("INVALID: {why}"));
    }
    let per = per_connection(before.rss_bytes, after.rss_bytes, connected);
    Ok(IdleResult {
        protocol: name.into(),
        connections: a.connections,
        connected,
        rss_before_bytes: before.rss_bytes,
        rss_after_bytes: after.rss_bytes,
        bytes_per_connection: if valid { per } else { None },
        server_clients_seen: seen,
        valid,
        notes,
        samples,
    })
}

/// An RSS sample: the server's own client count when it reports one, else `fallback`.
fn sample(s: &ServerStats, name: &str, fallback: u64) -> RssSample {
    RssSample {
        connections: s.clients_reported(name).unwrap_or(fallback),
        rss_bytes: s.rss_bytes,
    }
}

/// Wait until every client connected (or failed), sampling the server's RSS on each
/// progress event (the load generator sends one every 200 ms). Returns (connected, failed).
fn connect_sampling(
    lg: &mut Loadgen,
    srv: &Server,
    a: &IdleOptions,
    name: &str,
    mut on_sample: impl FnMut(RssSample),
) -> anyhow::Result<(u64, u64)> {
    let pb = progress_bar(a.connections, format!("{name}: connecting"));
    let until = Instant::now() + a.connect_timeout;
    let out = loop {
        check_interrupted()?;
        if Instant::now() > until {
            pb.finish_and_clear();
            anyhow::bail!(
                "{name}: clients not connected within {} (raise --connect-timeout or lower --connections)",
                rtcheck_base::units::fmt_duration(a.connect_timeout)
            );
        }
        match lg.next(Duration::from_millis(100))? {
            Some(Event::Connecting { done, .. }) => {
                pb.set_position(done);
                // A missed sample only thins the curve; the before/after pair is what counts.
                if let Ok(s) = control::stats(srv.control) {
                    on_sample(sample(&s, name, done));
                }
            }
            Some(Event::Connected {
                connected, failed, ..
            }) => break (connected, failed),
            _ => {}
        }
    };
    pb.finish_and_clear();
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn per_connection_math() {
        assert_eq!(
            super::per_connection(10_000_000, 60_000_000, 10_000),
            Some(5000.0)
        );
        assert_eq!(super::per_connection(1, 2, 0), None);
    }

    #[test]
    fn rss_that_did_not_grow_gives_no_figure() {
        // Shrinking or flat RSS once read as 0 B per connection and passed the 6 KB target.
        assert_eq!(super::per_connection(10, 5, 1), None);
        assert_eq!(super::per_connection(10, 10, 1), None);
        let why = super::rss_growth_problem(10, 5).unwrap();
        assert!(
            why.starts_with("RSS did not grow (10 B before, 5 B after)"),
            "{why}"
        );
        assert_eq!(super::rss_growth_problem(10, 11), None);
    }
}
