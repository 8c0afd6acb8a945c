//! The rehearsal's findings, pure, in the evidence's terms: the hook, the drain, every
//! client back, the accept backlog against the burst, ports and TIME_WAIT, session
//! memory, replay and loss, and jitter's effect on the wave's shape.
use super::model::Run;
use super::wave::synchronised;
use crate::evidence::reference;
use crate::findings::{Finding, Fix, Status};

fn finding(run: &Run, id: &str, title: &str, status: Status, observed: String) -> Finding {
    Finding {
        id: format!("{id}:{}", run.name),
        title: format!("{title} ({})", run.name),
        status,
        observed,
        expected: String::new(),
        rule: String::new(),
        reason: None,
        evidence: Vec::new(),
        fix: Fix::default(),
        verify: None,
        verification: None,
        numbers: Default::default(),
        location: None,
    }
}

/// Why backlog, ports and session memory are not judged when nothing dropped.
const NO_DROP: &str = "no client dropped after the restart began: there was no wave to measure";

/// `Some(Skip)` when no client dropped: the wave's checks measured nothing.
fn nothing_dropped(run: &Run) -> Option<Status> {
    (run.wave.dropped == 0).then_some(Status::Skip)
}

fn fix(f: &mut Finding, summary: &str, runtime: &[&str]) {
    f.fix = Fix {
        summary: summary.into(),
        runtime: runtime.iter().map(|s| s.to_string()).collect(),
        persistent: Vec::new(),
    };
}

/// Every finding of one run.
pub fn judge(run: &Run) -> Vec<Finding> {
    let mut v = vec![hook(run)];
    if !run.hook.ok && run.wave.dropped == 0 {
        return v;
    }
    v.extend([
        drain(run),
        back(run),
        backlog(run),
        ports(run),
        delivery(run),
    ]);
    v.push(shape(run));
    v.push(memory(run));
    v
}

fn hook(run: &Run) -> Finding {
    let h = &run.hook;
    let (status, observed) = match (h.ok, h.timed_out, &h.error) {
        (_, _, Some(e)) => (Status::Fail, e.clone()),
        (true, _, _) => (Status::Pass, format!("exit 0 after {:.0} ms", h.took_ms)),
        (false, true, _) => (
            Status::Fail,
            format!(
                "still running after {:.0} ms: killed (--restart-timeout)",
                h.took_ms
            ),
        ),
        (false, false, _) => (
            Status::Fail,
            format!(
                "exit {} after {:.0} ms",
                h.exit_code.map_or("by a signal".into(), |c| c.to_string()),
                h.took_ms
            ),
        ),
    };
    let mut f = finding(run, "restart-hook", "the restart command", status, observed);
    f.expected = "exits 0 within --restart-timeout".into();
    f.rule = "a deploy step that fails or hangs is the incident before the wave".into();
    if !h.ok {
        fix(
            &mut f,
            "run the command by hand and read its output (in the report)",
            &[],
        );
    }
    f
}

fn drain(run: &Run) -> Finding {
    let d = &run.drain;
    let n = run.wave.dropped;
    let mut observed = format!(
        "{} of {n} dropped client(s) got a drain signal first (1001: {}, 1012: {}, SSE end: {}",
        d.signalled(),
        d.ws_1001,
        d.ws_1012,
        d.sse_end
    );
    if d.app_close > 0 {
        observed.push_str(&format!(", the protocol's own close: {}", d.app_close));
    }
    let codes: Vec<String> = d
        .other_codes
        .iter()
        .map(|(c, k)| format!("{c}: {k}"))
        .collect();
    let codes = match codes.is_empty() {
        true => String::new(),
        false => format!(" ({})", codes.join(", ")),
    };
    observed.push_str(&format!(
        "); {} closed with another code{codes}, {} ended with no signal (reset or EOF)",
        d.ws_other_close, d.abrupt
    ));
    if let Some(g) = d.goaway {
        let lead = d
            .goaway_lead_p50_ms
            .map(|l| format!(", {l:.0} ms before the end (p50)"))
            .unwrap_or_default();
        observed.push_str(&format!("; HTTP/2 GOAWAY first: {g} of {n}{lead}"));
    }
    let named: Vec<String> = d.reasons.iter().map(|(r, k)| format!("{r}: {k}")).collect();
    if !named.is_empty() {
        observed.push_str(&format!("; named: {}", named.join(", ")));
    }
    let status = match (n, d.abrupt + d.ws_other_close) {
        (0, _) => Status::Skip,
        (_, 0) => Status::Pass,
        (_, x) if x == n => Status::Fail,
        _ => Status::Warn,
    };
    let mut f = finding(
        run,
        "drain",
        "a drain signal before the close",
        status,
        observed,
    );
    f.expected = "every client told before its socket goes (WebSocket close 1001 or 1012, the SSE stream ended)".into();
    f.rule = "a client told the server is going can reconnect at once, elsewhere; a reset looks like a network fault (hypha #960, nostream #772 added 1001 after incidents)".into();
    if status == Status::Skip {
        f.reason = Some("no client dropped after the restart began".into());
    } else if status != Status::Pass {
        fix(
            &mut f,
            "on SIGTERM stop accepting, send every WebSocket a close 1001 (or 1012), end SSE streams, then exit; give it the time (Kubernetes terminationGracePeriodSeconds, a preStop sleep while the endpoints update)",
            &[],
        );
    }
    f
}

fn back(run: &Run) -> Finding {
    let w = &run.wave;
    let ms = |v: Option<f64>| v.map_or("never".into(), |v| format!("{:.0} ms", v));
    let observed = format!(
        "{} of {} back; 50 % after {}, 95 % after {}, all after {}; {} gave up",
        w.back,
        w.dropped,
        ms(w.back_50_ms),
        ms(w.back_95_ms),
        ms(w.back_100_ms),
        run.gave_up
    );
    let status = match (w.dropped, w.never_back) {
        (0, _) => Status::Skip,
        (_, 0) => Status::Pass,
        _ => Status::Fail,
    };
    let mut f = finding(run, "all-back", "every client back", status, observed);
    f.expected = "every dropped client reconnected before --timeout".into();
    f.rule = "a client that stays away after a deploy is a user who sees nothing until they reload"
        .into();
    f.numbers.insert("never_back".into(), w.never_back as f64);
    if status == Status::Skip {
        f.reason = Some("no client dropped after the restart began".into());
    } else if status == Status::Fail {
        let why = if run.gave_up > 0 {
            "EventSource stops for good on a non-200 answer (a 502/503 while the server restarts): have the proxy queue or retry instead of answering an error, or reconnect from the application"
        } else {
            "read failed_connects for the cause; a longer --timeout if the server needs longer to start"
        };
        fix(&mut f, why, &[]);
    }
    f
}

fn backlog(run: &Run) -> Finding {
    let l = &run.listen;
    let peak = run.wave.peak_connects_per_s;
    let (status, observed) = match (l.listen_overflows, l.listen_drops) {
        (Some(o), Some(d)) => (
            if o > 0 || d > 0 {
                Status::Fail
            } else {
                Status::Pass
            },
            format!(
                "ListenOverflows +{o}, ListenDrops +{d} over the wave (peak {peak:.0} connects/s)"
            ),
        ),
        _ => (Status::Skip, "the host's counters were not read".into()),
    };
    let status = nothing_dropped(run).unwrap_or(status);
    let mut f = finding(
        run,
        "backlog",
        "the accept queue against the burst",
        status,
        observed,
    );
    f.expected = "no accept-queue overflow while the clients come back".into();
    f.rule = "a listen backlog shorter than the reconnect burst drops SYNs: clients wait for their SYN retransmit (1 s, 3 s...) and the wave stretches".into();
    if status == Status::Skip {
        f.reason = if run.wave.dropped == 0 {
            Some(NO_DROP.into())
        } else {
            l.error.clone()
        };
    }
    if status == Status::Fail {
        fix(
            &mut f,
            "raise the server's listen backlog and the kernel's cap, and spread the clients' reconnects (jitter)",
            &["sudo sysctl -w net.core.somaxconn=4096", "sudo sysctl -w net.ipv4.tcp_max_syn_backlog=8192"],
        );
    }
    f.numbers.insert("peak_connects_per_s".into(), peak);
    f
}

fn ports(run: &Run) -> Finding {
    let n = run
        .failed_connects
        .get("eaddrnotavail")
        .copied()
        .unwrap_or(0);
    let status = match nothing_dropped(run) {
        Some(s) if n == 0 => s,
        _ if n > 0 => Status::Fail,
        _ => Status::Pass,
    };
    let mut f = finding(
        run,
        "ports",
        "ephemeral ports and TIME_WAIT",
        status,
        format!("{n} connect(s) failed with EADDRNOTAVAIL"),
    );
    f.expected = "no connect fails for want of a local port".into();
    f.rule = "every closed connection holds its port in TIME_WAIT for 60 s; reopening many at once to one address runs out".into();
    f.evidence = vec![reference("ephemeral-ports"), reference("tw-sockstat")];
    if status == Status::Skip {
        f.reason = Some(NO_DROP.into());
    }
    if n > 0 {
        fix(
            &mut f,
            "widen the local port range on the clients' (or the proxy's) side, or add destination addresses",
            &["sudo sysctl -w net.ipv4.ip_local_port_range='1024 65535'"],
        );
    }
    f
}

fn delivery(run: &Run) -> Finding {
    let d = &run.delivery;
    let observed = format!(
        "{} received; {} lost ({} silently, in {} client(s)), {} duplicated, {} out of order; replayed {} message(s), {} B",
        d.received, d.lost, d.lost_silently, d.clients_lost_silently, d.duplicated, d.out_of_order,
        d.replay_messages, d.replay_bytes
    );
    let status = match (d.received, d.lost_silently, d.lost) {
        _ if run.wave.dropped == 0 => Status::Skip,
        (0, _, _) => Status::Skip,
        (_, s, _) if s > 0 => Status::Fail,
        (_, _, l) if l > 0 => Status::Warn,
        _ => Status::Pass,
    };
    let mut f = finding(
        run,
        "delivery",
        "nothing lost silently across the restart",
        status,
        observed,
    );
    f.expected = "lost_silently 0: every loss announced (a gap or reset marker), the replay sized to the outage".into();
    f.rule = "without seq numbers and a replay sized to the outage, a restart loses messages nobody is told about".into();
    f.evidence = vec![
        reference("seq-numbers"),
        reference("ring-sizing"),
        reference("loss-dup-order"),
    ];
    match status {
        Status::Skip if run.wave.dropped == 0 => f.reason = Some(NO_DROP.into()),
        Status::Skip => f.reason = Some("no message with a seq was received (--seq-path for a foreign payload)".into()),
        Status::Fail => fix(&mut f, "keep the publisher's seq and history across restarts (a shared ring or log), resume clients from their last seq, and send a reset marker when the history changed", &[]),
        Status::Warn => fix(&mut f, "size the replay ring as the longest downtime times the message rate; every loss was announced", &[]),
        _ => {}
    }
    f
}

fn shape(run: &Run) -> Finding {
    let w = &run.wave;
    let sync = synchronised(w);
    let observed = format!(
        "peak {:.0} connects/s against a mean of {:.0}; {:.0} % of the reconnects in the busiest 100 ms",
        w.peak_connects_per_s, w.mean_connects_per_s, w.in_peak_100ms_pct
    );
    let status = match (w.back, sync, run.reconnect.jittered()) {
        (0, _, _) => Status::Skip,
        (_, true, _) => Status::Warn,
        _ => Status::Pass,
    };
    let mut f = finding(
        run,
        "wave-shape",
        "the reconnect wave's shape",
        status,
        observed,
    );
    f.expected = "reconnects spread out, not every client in the same 100 ms".into();
    f.rule = "jitter does not lower the total reconnect load, it only reshapes it, and does nothing for the first wave: the spread must come from the clients' delays".into();
    f.evidence = vec![reference("jitter-reshapes")];
    if status == Status::Skip {
        f.reason = Some("no client came back".into());
    }
    if sync {
        fix(&mut f, "give the clients exponential backoff with jitter (--compare-reconnect fixed:1s,exp:500ms..30s+jitter shows both waves), and size the server and its backlog for the first wave anyway", &[]);
    }
    f
}

fn memory(run: &Run) -> Finding {
    let s = &run.server;
    let (status, observed) = match (s.rss_before_mb, s.rss_peak_mb) {
        (Some(a), Some(p)) => (
            Status::Pass,
            format!(
                "RSS {a:.1} MB before, {p:.1} MB peak through the wave; fds {} before, {} peak",
                s.fds_before.map_or("-".into(), |v| v.to_string()),
                s.fds_peak.map_or("-".into(), |v| v.to_string())
            ),
        ),
        (None, Some(_)) => (
            Status::Skip,
            "the server's memory before the restart was not measured (first read after the restart command started)".into(),
        ),
        _ => (Status::Skip, "the server's process was not read".into()),
    };
    let no_drop = nothing_dropped(run).is_some();
    let status = if no_drop { Status::Skip } else { status };
    let mut f = finding(
        run,
        "session-memory",
        "the server's memory through the wave",
        status,
        observed,
    );
    f.expected = "memory held for disconnected clients bounded (sessions expire)".into();
    f.rule = "sessions kept for disconnected clients add up: 10,000 of them held 830 MB".into();
    f.evidence = vec![reference("session-expiry"), reference("session-ack")];
    if no_drop {
        f.reason = Some(NO_DROP.into());
    } else if s.rss_before_mb.is_none() && s.rss_peak_mb.is_some() {
        f.reason = Some(
            "not measured: no reading of the server's process before the restart command started"
                .into(),
        );
    } else if status == Status::Skip {
        f.reason = s.error.clone().or(Some("no process found".into()));
    }
    if let (Some(a), Some(p)) = (s.rss_before_mb, s.rss_peak_mb) {
        // Above the seed's 83 KB per client for every dropped client: the sessions.
        let per_client_kb = (p - a).max(0.0) * 1000.0 / run.wave.dropped.max(1) as f64;
        f.numbers
            .insert("rss_growth_kb_per_client".into(), per_client_kb);
        let seed_kb = crate::evidence::num("session-ack", "bytes_per_client") / 1000.0;
        if run.wave.dropped > 0 && per_client_kb >= seed_kb {
            f.status = Status::Warn;
            fix(
                &mut f,
                "expire the sessions of disconnected clients (a TTL) and bound what each holds",
                &[],
            );
        }
    }
    f
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::model::{Delivery, Drain, Listen, ServerSeries};
    use super::super::{hook::HookRun, policy::Reconnect, wave};
    use super::*;

    pub(crate) fn run(dropped: bool) -> Run {
        let outages = if dropped {
            vec![wave::Outage {
                dropped_ms: 10.0,
                back_ms: Some(20.0),
            }]
        } else {
            vec![]
        };
        let w = wave::measure(&outages);
        Run {
            name: "fixed".into(),
            reconnect: Reconnect::Fixed { delay_ms: 1000 },
            connected: 1,
            dropped_before_restart: 0,
            away_at_restart: 0,
            connect_errors: vec![],
            hook: HookRun {
                command: "true".into(),
                exit_code: Some(0),
                timed_out: false,
                took_ms: 1.0,
                output: String::new(),
                ok: true,
                error: None,
            },
            first_drop_ms: None,
            measured_ms: 100.0,
            timed_out: false,
            drain: Drain::default(),
            back_50_ms: w.back_50_ms,
            back_95_ms: w.back_95_ms,
            back_100_ms: w.back_100_ms,
            peak_connects_per_s: w.peak_connects_per_s,
            wave: w,
            lost_silently: 0,
            gave_up: 0,
            failed_connects: Default::default(),
            listen: Listen {
                listen_overflows: Some(0),
                listen_drops: Some(0),
                error: None,
            },
            server: ServerSeries {
                found_by: vec![],
                samples: 2,
                rss_before_mb: Some(10.0),
                rss_peak_mb: Some(10.0),
                rss_end_mb: Some(10.0),
                fds_before: Some(5),
                fds_peak: Some(5),
                series: vec![],
                error: None,
            },
            delivery: Delivery::default(),
            valid: true,
            notes: vec![],
            publisher: None,
            unowed: 0,
            unconfirmed: 0,
        }
    }

    fn status(fs: &[Finding], id: &str) -> (Status, Option<String>) {
        let f = fs.iter().find(|f| f.id.starts_with(id)).unwrap();
        (f.status, f.reason.clone())
    }

    #[test]
    fn nothing_dropped_skips_backlog_ports_memory_and_delivery_with_the_reason() {
        let mut idle = run(false);
        // Messages came through, but no restart cut them: nothing judged on that.
        idle.delivery.received = 5;
        let fs = judge(&idle);
        for id in ["backlog:", "ports:", "session-memory:", "delivery:"] {
            let (s, why) = status(&fs, id);
            assert_eq!(s, Status::Skip, "{id}");
            assert!(why.unwrap().contains("no client dropped"), "{id}");
        }
        let fs = judge(&run(true));
        for id in ["backlog:", "ports:", "session-memory:"] {
            assert_eq!(status(&fs, id).0, Status::Pass, "{id}");
        }
    }

    #[test]
    fn memory_without_a_reading_before_the_restart_is_not_measured() {
        let mut r = run(true);
        r.server.rss_before_mb = None;
        let (s, why) = status(&judge(&r), "session-memory:");
        assert_eq!(s, Status::Skip);
        assert!(why.unwrap().contains("not measured"));
    }

    #[test]
    fn counters_not_this_hosts_skip_the_backlog() {
        let mut r = run(true);
        r.listen = Listen {
            listen_overflows: None,
            listen_drops: None,
            error: Some("the server 203.0.113.7:80 is not on this host".into()),
        };
        let (s, why) = status(&judge(&r), "backlog:");
        assert_eq!(s, Status::Skip);
        assert!(why.unwrap().contains("not on this host"));
    }
}
