//! Pure: turn what the load generator and the server reported into one scenario result,
//! with its independent checks. A check that fails makes the result invalid, and an invalid
//! result carries no latency numbers.
use super::model::{Accounting, Check, RoundPoint, ScenarioResult};
use super::stats;
use super::wire::{LoadgenResult, RoundStat};
use crate::findings::Status;
use rtcheck_wire::stats::ServerStats;

/// Load generator CPU above this share of its cores means it measured itself.
pub const LOADGEN_CPU_LIMIT: f64 = 0.90;

pub struct Inputs<'a> {
    pub name: String,
    pub description: String,
    pub stall_expected: bool,
    pub lg: &'a LoadgenResult,
    /// Final server stats (after the run), None when the server has no /control/stats.
    pub server: Option<&'a ServerStats>,
    /// Server CPU seconds when measurement started.
    pub server_cpu_start: Option<f64>,
    pub server_peak_rss: Option<u64>,
    pub rounds_total: u64,
    pub rate: f64,
    /// Payload bytes the run asked for.
    pub size: u64,
    pub duration_s: f64,
    pub time_bound_s: f64,
    /// `--server`: how its control plane answered (None for an embedded server).
    pub control: Option<ControlSeen>,
}

/// What `--server`'s control plane said before the run.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlSeen {
    /// POST /control/start: Ok, or the refusal (e.g. "HTTP 404").
    pub start: Result<(), String>,
    /// Rounds /control/stats counted before the start (None: no stats).
    pub rounds_before: Option<u64>,
}

/// Payload sizes accepted around `--size`: a real server's JSON varies by a few bytes
/// (63-65 B for one asked 64 B), so ±10 % of it, at least 16 B, and text up to 80 B (the
/// JSON fields alone take ~60 B).
pub fn size_range(size: u64) -> (u64, u64) {
    let tol = (size / 10).max(16);
    (size.saturating_sub(tol), (size + tol).max(80))
}

pub fn account(inp: &Inputs) -> Accounting {
    let lg = inp.lg;
    let healthy_connected = lg.connected.saturating_sub(lg.slow);
    let healthy_total = lg.connections.saturating_sub(lg.slow);
    // A server's count above what was asked for means nothing more: clamp it.
    // rtcheck's own publisher sends in order: the rounds it sent are the published ones.
    let rounds_sent = inp
        .server
        .map(|s| s.rounds_sent)
        .or(lg.publisher.as_ref().map(|p| p.sent))
        .unwrap_or(inp.rounds_total)
        .min(inp.rounds_total);
    let mut drops_left = inp.server.map(|s| s.drops).unwrap_or(0);
    let mut a = Accounting {
        expected: healthy_total * inp.rounds_total,
        never_connected: healthy_total.saturating_sub(healthy_connected) * inp.rounds_total,
        ..Default::default()
    };
    for (i, r) in lg.rounds.iter().enumerate() {
        let seq = i as u64 + 1;
        a.received += r.received;
        let missing = r.missing_live + r.missing_removed;
        if seq > rounds_sent {
            a.unpublished += missing;
            continue;
        }
        a.after_removal += r.missing_removed;
        let dropped = r.missing_live.min(drops_left);
        drops_left -= dropped;
        a.dropped += dropped;
        let rest = r.missing_live - dropped;
        if inp.stall_expected {
            a.stalled += rest;
        } else {
            a.unexplained += rest;
        }
    }
    // Rounds the loadgen never saw at all (rounds vector shorter than expected).
    let seen = lg.rounds.len() as u64;
    if seen < inp.rounds_total {
        a.unexplained += (inp.rounds_total - seen) * healthy_connected;
    }
    a
}

/// None when received + dropped + after_removal + unpublished + stalled + never_connected +
/// unexplained == expected; otherwise the gap, named.
pub fn accounting_gap(a: &Accounting) -> Option<String> {
    let sum = [
        a.received,
        a.dropped,
        a.after_removal,
        a.unpublished,
        a.stalled,
        a.never_connected,
        a.unexplained,
    ]
    .iter()
    .fold(0u128, |s, &v| s + u128::from(v));
    let expected = u128::from(a.expected);
    if sum == expected {
        return None;
    }
    let (word, n) = if sum > expected {
        ("more", sum - expected)
    } else {
        ("fewer", expected - sum)
    };
    Some(format!(
        "categories sum to {sum}, {n} {word} than expected {expected} (received {} + dropped {} + after removal {} + unpublished {} + stalled {} + never connected {} + unexplained {})",
        a.received, a.dropped, a.after_removal, a.unpublished, a.stalled, a.never_connected, a.unexplained
    ))
}

/// Highest round with at least one healthy client's frame (1-based), None if none.
pub fn highest_seq_received(lg: &LoadgenResult) -> Option<u64> {
    lg.rounds
        .iter()
        .rposition(|r| r.received > 0)
        .map(|i| i as u64 + 1)
}

fn check(name: &str, status: Status, detail: String) -> Check {
    Check {
        name: name.to_string(),
        status,
        detail,
    }
}

pub fn analyze(inp: &Inputs) -> ScenarioResult {
    let acc = account(inp);
    let checks = checks(inp, &acc);
    let valid = checks.iter().all(|c| c.status != Status::Fail);
    let notes = notes(inp, &checks, valid);
    result(inp, acc, checks, notes, valid)
}

/// Every independent check, in report order; a check that does not apply is absent.
fn checks(inp: &Inputs, acc: &Accounting) -> Vec<Check> {
    let lg = inp.lg;
    [
        Some(samples_received(inp, acc)),
        Some(accounting_identity(acc)),
        rounds_published(inp, acc),
        server_agrees(inp),
        Some(samples_accounted(acc)),
        Some(connections(lg)),
        Some(loadgen_cpu(lg)),
        Some(round_start_drift(inp)),
        server_schedule(inp),
        publisher(inp),
        control_plane(inp),
        Some(nodelay(inp)),
        Some(seq_order(lg)),
        clock_correction(lg),
        seq_range(inp),
        server_closed(inp),
        time_bound(inp),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Something was measured at all: a peer that never sends a frame has no latency.
fn samples_received(inp: &Inputs, acc: &Accounting) -> Check {
    let lg = inp.lg;
    if lg.samples == 0 || acc.received == 0 {
        let head = format!(
            "{} samples, {} of {} expected received",
            lg.samples, acc.received, acc.expected
        );
        check(
            "samples received",
            Status::Fail,
            nothing_measured(inp, head),
        )
    } else {
        check(
            "samples received",
            Status::Pass,
            format!("{} samples", lg.samples),
        )
    }
}

/// Why a run measured nothing, from what did arrive: frames that were not the payload
/// (the first one's shape), frames of rounds past --rounds (already publishing), and the
/// control plane's refusal.
fn nothing_measured(inp: &Inputs, head: String) -> String {
    let lg = inp.lg;
    let mut why = Vec::new();
    if lg.removed_healthy > 0 && lg.first_close.is_some() {
        why.push(format!(
            "the server ended {} client(s) after the handshake{}",
            lg.removed_healthy,
            closes_said(lg)
        ));
    }
    if lg.undecodable > 0 {
        why.push(format!(
            "{} frames arrived but none was rtcheck's payload (JSON with seq and ts, or its binary form); the first: {}",
            lg.undecodable,
            lg.first_undecodable.as_deref().unwrap_or("not kept")
        ));
    }
    if lg.beyond_rounds > 0 {
        let cause = if lg.publisher.is_some() {
            "rtcheck published no such seq: the server rewrote or invented it"
        } else {
            "the server was already publishing before the run"
        };
        why.push(format!(
            "{} frames had a seq above --rounds {}: {cause}",
            lg.beyond_rounds, inp.rounds_total
        ));
    }
    if let Some(Err(e)) = inp.control.as_ref().map(|c| &c.start) {
        why.push(format!(
            "POST /control/start answered {e}: the server has no rtcheck control plane and did not publish by itself"
        ));
    }
    if why.is_empty() {
        why.push("the server sent nothing".into());
    }
    format!("{head}: {}", why.join("; "))
}

/// `--server`: did /control/start start it, and was it publishing already?
fn control_plane(inp: &Inputs) -> Option<Check> {
    let c = inp.control.as_ref()?;
    let mut issues = Vec::new();
    if let Err(e) = &c.start {
        issues.push(format!(
            "POST /control/start answered {e} (no rtcheck control plane: the server publishes by itself)"
        ));
    }
    if let Some(n) = c.rounds_before.filter(|n| *n > 0) {
        issues.push(format!(
            "already publishing before the run: /control/stats counted {n} rounds before the start"
        ));
    }
    if let Some((seq, _)) = inp.lg.schedule.first.filter(|(s, _)| *s > 1) {
        issues.push(format!(
            "already publishing before the run: the first round seen was seq {seq}, not 1"
        ));
    }
    Some(if issues.is_empty() {
        check(
            "control plane",
            Status::Pass,
            "POST /control/start accepted before the first round".into(),
        )
    } else {
        check("control plane", Status::Warn, issues.join("; "))
    })
}

/// The categories must add up to the expectation exactly; a gap means the accounting
/// itself is wrong, whatever the other checks say.
fn accounting_identity(acc: &Accounting) -> Check {
    match accounting_gap(acc) {
        Some(gap) => check("accounting identity", Status::Fail, gap),
        None => check(
            "accounting identity",
            Status::Pass,
            format!("categories sum to expected {}", acc.expected),
        ),
    }
}

/// Rounds never published are only a result where a stall is the point (C1/C2).
fn rounds_published(inp: &Inputs, acc: &Accounting) -> Option<Check> {
    (acc.unpublished > 0 && !inp.stall_expected).then(|| {
        check(
            "rounds published",
            Status::Fail,
            format!(
                "{} samples in rounds the server never published ({} rounds asked); only C1/C2 expect a stall",
                acc.unpublished, inp.rounds_total
            ),
        )
    })
}

/// The server's own count must not contradict what the clients saw. One round may be in
/// progress when stats are read (rounds_sent counts finished rounds), hence the + 1.
fn server_agrees(inp: &Inputs) -> Option<Check> {
    let (s, top) = (inp.server?, highest_seq_received(inp.lg)?);
    let sent = s.rounds_sent.min(inp.rounds_total);
    (top > sent.saturating_add(1)).then(|| {
        check(
            "server stats",
            Status::Fail,
            format!(
                "server stats contradict the clients: rounds_sent {sent}, but clients received seq {top}"
            ),
        )
    })
}

/// Every expected sample accounted for.
fn samples_accounted(acc: &Accounting) -> Check {
    let named = format!(
        "expected {} = received {} + dropped {} + after removal {} + unpublished {} + stalled {} + never connected {}",
        acc.expected, acc.received, acc.dropped, acc.after_removal, acc.unpublished, acc.stalled,
        acc.never_connected
    );
    if acc.unexplained == 0 && acc.never_connected == 0 {
        check("samples accounted", Status::Pass, named)
    } else {
        check(
            "samples accounted",
            Status::Fail,
            format!("{named}; {} samples unexplained", acc.unexplained),
        )
    }
}

fn connections(lg: &LoadgenResult) -> Check {
    if lg.connect_failed == 0 && lg.connected == lg.connections {
        check(
            "connections",
            Status::Pass,
            format!("{} of {} connected", lg.connected, lg.connections),
        )
    } else {
        check(
            "connections",
            Status::Fail,
            format!(
                "{} of {} connected; {} failed: {}{}",
                lg.connected,
                lg.connections,
                lg.connect_failed,
                lg.connect_errors.join("; "),
                if out_of_ports(lg) { PORTS } else { "" }
            ),
        )
    }
}

/// Why connects failed with EADDRNOTAVAIL, said so the fix is plain (issue 37).
const PORTS: &str = " (ports: this host ran out of ephemeral ports to this server, \
    net.ipv4.ip_local_port_range; add local addresses with --source-ip, or spread the \
    load with --shard I/N over more hosts)";

/// connect() found no free local port (EADDRNOTAVAIL, os error 99).
fn out_of_ports(lg: &LoadgenResult) -> bool {
    lg.connect_errors
        .iter()
        .any(|e| e.contains("os error 99") || e.contains("Cannot assign requested address"))
}

/// The load generator was not saturated (else it measured itself).
fn loadgen_cpu(lg: &LoadgenResult) -> Check {
    let share = if lg.wall_run_s > 0.0 && lg.cores > 0 {
        lg.cpu_run_s / (lg.wall_run_s * lg.cores as f64)
    } else {
        0.0
    };
    let detail = format!(
        "{:.1} CPU s over {:.1} s on {} cores = {:.0}% (limit {:.0}%){}",
        lg.cpu_run_s,
        lg.wall_run_s,
        lg.cores,
        share * 100.0,
        LOADGEN_CPU_LIMIT * 100.0,
        loadgen_cost(lg)
    );
    if lg.wall_run_s <= 0.0 || lg.cores == 0 {
        // No run time (or no cores read): no share was measured.
        check("load generator CPU", Status::Skip, detail)
    } else if share < LOADGEN_CPU_LIMIT {
        check("load generator CPU", Status::Pass, detail)
    } else {
        check(
            "load generator CPU",
            Status::Fail,
            format!("{detail}: it measured itself"),
        )
    }
}

/// The load generator's own cost (issue 37): CPU per received message and RSS per held
/// connection, from what it measured.
pub fn cost(lg: &LoadgenResult) -> super::model::LoadgenCost {
    let rss = match (lg.rss_start_bytes, lg.rss_connected_bytes) {
        (Some(a), Some(b)) if lg.connected > 0 => {
            Some(b.saturating_sub(a) as f64 / lg.connected as f64)
        }
        _ => None,
    };
    super::model::LoadgenCost {
        cpu_us_per_message: (lg.samples > 0).then(|| lg.cpu_run_s * 1e6 / lg.samples as f64),
        rss_bytes_per_connection: rss,
    }
}

/// [`cost`] as the load generator check says it, to size how many machines a target
/// needs; empty when it has nothing to divide by.
pub fn loadgen_cost(lg: &LoadgenResult) -> String {
    let c = cost(lg);
    let mut v = Vec::new();
    if let Some(us) = c.cpu_us_per_message {
        v.push(format!("{us:.1} us CPU per received message"));
    }
    if let Some(b) = c.rss_bytes_per_connection {
        v.push(format!("{b:.0} B RSS per held connection"));
    }
    match v.is_empty() {
        true => String::new(),
        false => format!("; its own cost: {}", v.join(", ")),
    }
}

/// First (or last) arrival per received round, ms after its schedule.
fn arrivals(lg: &LoadgenResult, last: bool) -> Vec<f64> {
    lg.rounds
        .iter()
        .filter(|r| r.received > 0)
        .map(|r| if last { r.last_ms } else { r.first_ms })
        .collect()
}

/// (median, max), None for no values.
fn median_max(v: &[f64]) -> (Option<f64>, Option<f64>) {
    if v.is_empty() {
        (None, None)
    } else {
        (Some(stats::median(v)), Some(stats::max(v)))
    }
}

/// Round start drift: first arrival per round vs the schedule, within one period.
fn round_start_drift(inp: &Inputs) -> Check {
    let period_ms = 1000.0 / inp.rate;
    match median_max(&arrivals(inp.lg, false)) {
        (Some(med), Some(m)) => {
            let detail = format!(
                "first arrival vs schedule: median {med:.2} ms, max {m:.2} ms (period {period_ms:.0} ms)"
            );
            let st = if m <= period_ms || inp.stall_expected {
                Status::Pass
            } else {
                Status::Warn
            };
            check("round start drift", st, detail)
        }
        _ => check(
            "round start drift",
            Status::Warn,
            "no round received".into(),
        ),
    }
}

/// The server sends what the run asked for: with `--server` nothing forces its --rate and
/// --size to match ours, and a 10/s server read as 5/s halves every figure silently.
/// Text payloads may be longer than a tiny --size (the JSON fields alone take ~60 bytes).
fn server_schedule(inp: &Inputs) -> Option<Check> {
    let seen = &inp.lg.schedule;
    let (min, max) = (seen.bytes_min?, seen.bytes_max?);
    let want_ms = 1000.0 / inp.rate;
    let period = seen.period_ms();
    let (lo, hi) = size_range(inp.size);
    // rtcheck's own publisher sets the size; the server may wrap the message (a sender
    // name, an envelope): only the rate is the server's to get wrong then.
    let own = inp.lg.publisher.is_some();
    let size_ok = own || (min >= lo && max <= hi);
    let rate_ok = period.is_none_or(|p| (p - want_ms).abs() <= 0.05 * want_ms);
    let got = period.map_or("one round seen".into(), |p| format!("every {p:.1} ms"));
    let detail = format!(
        "payloads {min}-{max} bytes {got}; the run asked for {} bytes (accepted {lo}-{hi}: ±10 %, at least 16 B) every {want_ms:.1} ms",
        inp.size
    );
    Some(if size_ok && rate_ok {
        check("server schedule", Status::Pass, detail)
    } else {
        check(
            "server schedule",
            Status::Fail,
            format!("{detail}: start the server with the run's --rate and --size"),
        )
    })
}

/// Pure: "N of M publishes failed, the first: E" when any failed (M: the sends that
/// finished, sent or failed); with none counted failed but an error (the publisher never
/// connected, or its connection went), that error as it is, never a made-up count, and
/// the rounds still blocked. Written once: bench's validity and `verify delivery`'s
/// foreign runs both say it.
pub fn publishes_failed(p: &super::wire::PublisherStat) -> Option<String> {
    if p.failed == 0 && p.first_error.is_none() {
        return None;
    }
    let first = p
        .first_error
        .as_deref()
        .map_or("no error given", |e| e.trim_start_matches("publisher: "));
    let blocked = match p.unsent {
        0 => String::new(),
        u => format!(" ({u} still blocked)"),
    };
    Some(match (p.failed, p.sent) {
        (0, 0) => format!("the publisher failed before sending: {first}{blocked}"),
        (0, n) => format!("the publisher failed after {n} send(s): {first}{blocked}"),
        (f, n) => format!("{f} of {} publishes failed, the first: {first}", f + n),
    })
}

/// rtcheck's publisher kept its schedule: every round sent, the timer on time (its
/// lateness is the load generator's, and would count as the server's latency), the
/// achieved period within 5 % of the asked one. The sender held up by the server (its
/// backpressure) is a result, said, not a failure.
fn publisher(inp: &Inputs) -> Option<Check> {
    let p = inp.lg.publisher.as_ref()?;
    let period = 1000.0 / inp.rate;
    let late_bound = (0.1 * period).max(10.0);
    let late_note = (p.timer_late_p99_ms > late_bound).then(|| {
        format!(
            "the publisher's timer ran {:.1} ms late at p99 (over {late_bound:.0} ms): the figures include that much of the load generator's own delay",
            p.timer_late_p99_ms
        )
    });
    let mut fails = Vec::new();
    let refused = publishes_failed(p);
    // With slow clients a stalled hub also stalls its publish API (a POST that times
    // out, a broadcast channel that blocks): that is the C result, said, not a failure.
    let refused_is_result = inp.stall_expected && p.sent > 0;
    if let Some(r) = refused.as_ref().filter(|_| !refused_is_result) {
        fails.push(r.clone());
    }
    if p.timer_rounds < p.planned && !inp.stall_expected {
        fails.push(format!(
            "the publisher reached round {} of {}",
            p.timer_rounds, p.planned
        ));
    }
    // Later than one period, the schedule itself slipped (rounds bunch up): invalid.
    // Less is counted, honestly, in the latency (measured from the schedule) and said.
    if p.timer_late_p99_ms > period {
        fails.push(format!(
            "the publisher's timer ran {:.1} ms late at p99, over one period ({period:.0} ms): the load generator fell behind its schedule",
            p.timer_late_p99_ms
        ));
    }
    if let Some(ap) = p
        .achieved_period_ms
        .filter(|ap| (ap - period).abs() > 0.05 * period)
    {
        fails.push(format!(
            "achieved every {ap:.1} ms, asked every {period:.1} ms"
        ));
    }
    let detail = format!(
        "{} via {}: {} of {} sent on schedule (timer late p99 {:.1} ms, max {:.1} ms; every {} ms achieved); the server held the sender up to {:.0} ms{}",
        if fails.is_empty() { "published" } else { "publishing failed" },
        p.via,
        p.sent,
        p.scheduled,
        p.timer_late_p99_ms,
        p.timer_late_max_ms,
        p.achieved_period_ms.map_or("-".into(), |v| format!("{v:.1}")),
        p.backlog_max_ms,
        if p.unsent > 0 { format!(", {} sends still blocked at the stop", p.unsent) } else { String::new() }
    );
    Some(if fails.is_empty() {
        let warns: Vec<String> = refused.into_iter().chain(late_note).collect();
        if warns.is_empty() {
            check("publisher schedule", Status::Pass, detail)
        } else {
            check(
                "publisher schedule",
                Status::Warn,
                format!("{}; {detail}", warns.join("; ")),
            )
        }
    } else {
        check(
            "publisher schedule",
            Status::Fail,
            format!("{}; {detail}", fails.join("; ")),
        )
    })
}

/// TCP_NODELAY on both ends. No socket read back proves nothing: 0 of 0 is not "on
/// everywhere".
fn nodelay(inp: &Inputs) -> Check {
    let lg = inp.lg;
    let client_nd =
        lg.nodelay_checked > 0 && lg.nodelay_off == 0 && lg.nodelay_checked == lg.connected;
    let server_nd = inp.server.and_then(|s| s.nodelay);
    let (st, d) = match (client_nd, server_nd) {
        (true, Some(true)) => (
            Status::Pass,
            format!(
                "client {} sockets read back on; server reports on",
                lg.nodelay_checked
            ),
        ),
        (true, None) => (
            Status::Warn,
            "client sockets on; the server does not report it".to_string(),
        ),
        _ => (
            Status::Fail,
            format!(
                "client off on {} of {} sockets read back ({} connected); server {:?}: Nagle can add 40 ms+ per write",
                lg.nodelay_off, lg.nodelay_checked, lg.connected, server_nd
            ),
        ),
    };
    check("TCP_NODELAY", st, d)
}

/// Per-client seq strictly increasing, every frame decodable. No frame at all orders
/// nothing: skipped, never a pass on nothing.
fn seq_order(lg: &LoadgenResult) -> Check {
    let frames = lg.samples + lg.order_violations + lg.undecodable + lg.beyond_rounds;
    if frames == 0 {
        check(
            "seq order",
            Status::Skip,
            "no frame received: no seq to order".into(),
        )
    } else if lg.order_violations == 0 && lg.undecodable == 0 {
        check(
            "seq order",
            Status::Pass,
            "seq strictly increasing on every client".into(),
        )
    } else {
        check(
            "seq order",
            Status::Fail,
            format!(
                "{} out-of-order or duplicate, {} undecodable frames",
                lg.order_violations, lg.undecodable
            ),
        )
    }
}

/// A coordinated shard's corrected latencies: below 0 within the correction's
/// uncertainty is the clocks' measurement error (counted as 1 us); below by more, the
/// correction is wrong and no latency of this run can be trusted. Absent when nothing
/// fell below 0.
fn clock_correction(lg: &LoadgenResult) -> Option<Check> {
    if lg.below_zero == 0 {
        return None;
    }
    let bound = lg
        .clock_uncertainty_us
        .map_or_else(|| "?".into(), |u| format!("{:.1}", u as f64 / 1000.0));
    Some(if lg.below_uncertainty > 0 {
        check(
            "clock correction",
            Status::Fail,
            format!(
                "{} of {} corrected latencies below 0 by more than the clocks' uncertainty ({bound} ms): the correction is wrong",
                lg.below_uncertainty, lg.below_zero
            ),
        )
    } else {
        check(
            "clock correction",
            Status::Pass,
            format!(
                "{} corrected latencies below 0, within the clocks' uncertainty ({bound} ms): counted as 1 us",
                lg.below_zero
            ),
        )
    })
}

/// With rtcheck's own publisher the seqs a client may see are exactly 1..=--rounds: one
/// above was rewritten or invented by the server (issue 41 item 13), and the samples can
/// no longer be matched to what was sent. (A server that publishes by itself may have been
/// publishing before the run: that stays a note.)
fn seq_range(inp: &Inputs) -> Option<Check> {
    let lg = inp.lg;
    lg.publisher.as_ref()?;
    Some(if lg.beyond_rounds == 0 && lg.samples == 0 {
        // No seq seen: nothing was within or beyond the range.
        check(
            "seq range",
            Status::Skip,
            "no seq received: nothing to hold to the range".into(),
        )
    } else if lg.beyond_rounds == 0 {
        check(
            "seq range",
            Status::Pass,
            format!(
                "every seq within the {} rtcheck published",
                inp.rounds_total
            ),
        )
    } else {
        check(
            "seq range",
            Status::Fail,
            format!(
                "{} frame(s) carried a seq above the {} rtcheck published: the server rewrote or invented seqs",
                lg.beyond_rounds, inp.rounds_total
            ),
        )
    })
}

/// Healthy clients the server closed before the stop (issue 41 item 14): their rounds
/// after the close are missing "after removal", so the figures describe fewer clients than
/// the scenario asked. A scenario that stalls the hub may see it; any other is invalid.
fn server_closed(inp: &Inputs) -> Option<Check> {
    let lg = inp.lg;
    let healthy = lg.connected.saturating_sub(lg.slow);
    if lg.removed_healthy == 0 {
        return (healthy > 0).then(|| {
            check(
                "server-closed clients",
                Status::Pass,
                format!("none of the {healthy} healthy client(s) closed by the server"),
            )
        });
    }
    let status = if inp.stall_expected {
        Status::Warn
    } else {
        Status::Fail
    };
    Some(check(
        "server-closed clients",
        status,
        format!(
            "the server closed {} of {healthy} healthy client(s) during the run{}: their rounds after the close are missing, not measured",
            lg.removed_healthy,
            closes_said(lg)
        ),
    ))
}

/// Pure: how the clients the server ended were ended, counted apart: those with a close
/// frame (one of them named: the one kept, not the earliest) and those by a reset or EOF.
fn closes_said(lg: &LoadgenResult) -> String {
    let Some(close) = &lg.first_close else {
        return String::new();
    };
    // A close was kept, so at least one client was ended by a frame.
    let framed = lg.closed_by_frame.max(1);
    match lg.removed_healthy.saturating_sub(framed) {
        0 => format!(" (all by a close frame, one of them {close})"),
        rest => {
            format!(" ({framed} by a close frame, one of them {close}; {rest} by a reset or EOF)")
        }
    }
}

/// Ended on time (5 s of slack for start-up and teardown).
fn time_bound(inp: &Inputs) -> Option<Check> {
    (inp.duration_s > inp.time_bound_s + 5.0).then(|| {
        check(
            "time bound",
            Status::Warn,
            format!(
                "ran {:.1} s, bound {:.1} s",
                inp.duration_s, inp.time_bound_s
            ),
        )
    })
}

/// What a reader needs besides the checks; an invalid result starts with why.
fn notes(inp: &Inputs, checks: &[Check], valid: bool) -> Vec<String> {
    let lg = inp.lg;
    let mut notes = Vec::new();
    if !valid {
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| format!("{}: {}", c.name, c.detail))
            .collect();
        notes.push(format!("INVALID: {}", failed.join("; ")));
    }
    if let Some(s) = inp.server {
        if s.rounds_sent < inp.rounds_total {
            notes.push(format!(
                "rounds {}..={} were not published within the measurement window",
                s.rounds_sent + 1,
                inp.rounds_total
            ));
        }
        if lg.slow > 0 {
            notes.push(format!(
                "{} slow clients never read (SO_RCVBUF read back {} B); server: {} drops, {} clients removed, {} messages missed by removed clients",
                lg.slow,
                lg.slow_rcvbuf.map(|b| b.to_string()).unwrap_or_else(|| "?".into()),
                s.drops,
                s.removed,
                s.missed_by_removed
            ));
        }
    }
    if lg.after_cutoff > 0 {
        notes.push(format!(
            "{} samples of rounds the hub began after the time bound (once the slow clients were closed) are outside the measurement window",
            lg.after_cutoff
        ));
    }
    if lg.beyond_rounds > 0 {
        notes.push(format!(
            "{} frames with seq above {} ignored",
            lg.beyond_rounds, inp.rounds_total
        ));
    }
    notes
}

/// The result row: an invalid result carries no latency numbers.
fn result(
    inp: &Inputs,
    acc: Accounting,
    checks: Vec<Check>,
    notes: Vec<String>,
    valid: bool,
) -> ScenarioResult {
    let lg = inp.lg;
    let keep = |v: f64| if valid { Some(v) } else { None };
    let keep_u = |v: u64| if valid { Some(v) } else { None };
    let (drift_med, drift_max) = median_max(&arrivals(lg, false));
    let (last_med, last_max) = median_max(&arrivals(lg, true));
    let hub = inp
        .server
        .map(|s| s.hub_round_ms.clone())
        .unwrap_or_default();
    let (hub_med, hub_max) = median_max(&hub);
    ScenarioResult {
        name: inp.name.clone(),
        description: inp.description.clone(),
        connections: lg.connections,
        slow_clients: lg.slow,
        p50_ms: keep(lg.p50_ms),
        p99_ms: keep(lg.p99_ms),
        p999_ms: keep(lg.p999_ms),
        max_ms: keep(lg.max_ms),
        over_100ms: keep_u(lg.over_100ms),
        over_1s: keep_u(lg.over_1s),
        samples: lg.samples,
        rounds_completed: lg
            .rounds
            .iter()
            .filter(|r| r.received > 0 && r.missing_live == 0)
            .count() as u64,
        rounds_total: inp.rounds_total,
        rounds_published_at_bound: None,
        last_client_median_ms: last_med.filter(|_| valid),
        last_client_max_ms: last_max.filter(|_| valid),
        hub_median_ms: hub_med,
        hub_max_ms: hub_max,
        drops: inp.server.map(|s| s.drops),
        // Without server stats, the closes the healthy clients saw, when they saw any
        // (none seen is not "none": slow clients never read, so theirs are not known).
        removed: inp
            .server
            .map(|s| s.removed)
            .or((lg.removed_healthy > 0).then_some(lg.removed_healthy)),
        server_rss_mb: inp.server_peak_rss.map(|b| b as f64 / 1e6),
        server_cpu_s: match (inp.server, inp.server_cpu_start) {
            (Some(s), Some(c0)) => Some((s.cpu_seconds - c0).max(0.0)),
            _ => None,
        },
        client_cpu_s: lg.cpu_run_s,
        p99_vs_floor: None,
        p999_vs_floor: None,
        round_start_drift_median_ms: drift_med,
        round_start_drift_max_ms: drift_max,
        duration_s: inp.duration_s,
        time_bound_s: inp.time_bound_s,
        valid,
        notes,
        checks,
        accounting: acc,
        reference: None,
        percentiles: if valid {
            lg.percentiles.clone()
        } else {
            Vec::new()
        },
        per_round: if valid {
            per_round(&lg.rounds, &hub, inp.rounds_total)
        } else {
            Vec::new()
        },
        shape: None,
        publisher: lg.publisher.clone(),
        loadgen_cost: Some(cost(lg)),
        server_process: None,
        server_unmeasured: None,
    }
}

/// Per round: the last healthy client's latency (None when nobody received it) and the
/// hub's time (None past what the server reported).
pub fn per_round(rounds: &[RoundStat], hub_ms: &[f64], total: u64) -> Vec<RoundPoint> {
    (0..total as usize)
        .map(|i| RoundPoint {
            round: i as u64 + 1,
            last_client_ms: rounds.get(i).filter(|r| r.received > 0).map(|r| r.last_ms),
            hub_ms: hub_ms.get(i).copied(),
        })
        .collect()
}

/// Fill the ratio-to-floor columns from a valid floor row.
pub fn apply_floor(results: &mut [ScenarioResult], floor_name: &str) {
    let Some(f) = results
        .iter()
        .find(|r| r.name == floor_name && r.valid)
        .map(|r| (r.p99_ms, r.p999_ms))
    else {
        return;
    };
    for r in results.iter_mut().filter(|r| r.name != floor_name) {
        r.p99_vs_floor = ratio(r.p99_ms, f.0);
        r.p999_vs_floor = ratio(r.p999_ms, f.1);
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lg(rounds: Vec<RoundStat>, connections: u64, slow: u64) -> LoadgenResult {
        LoadgenResult {
            samples: rounds.iter().map(|r| r.received).sum(),
            connections,
            slow,
            connected: connections,
            rounds,
            cores: 2,
            cpu_run_s: 1.0,
            wall_run_s: 10.0,
            nodelay_checked: connections,
            p50_ms: 1.0,
            p99_ms: 2.0,
            p999_ms: 3.0,
            max_ms: 4.0,
            ..Default::default()
        }
    }

    #[test]
    fn the_load_generators_own_cost_is_stated_from_what_it_measured() {
        let mut l = lg(vec![], 100, 0);
        (l.samples, l.cpu_run_s) = (10_000, 0.5);
        (l.rss_start_bytes, l.rss_connected_bytes) = (Some(1_000_000), Some(1_200_000));
        let c = loadgen_cost(&l);
        assert!(c.contains("50.0 us CPU per received message"), "{c}");
        assert!(c.contains("2000 B RSS per held connection"), "{c}");
        // Nothing to divide by: nothing said.
        l.samples = 0;
        l.connected = 0;
        assert_eq!(loadgen_cost(&l), "");
    }

    fn round(received: u64, live: u64, removed: u64) -> RoundStat {
        RoundStat {
            received,
            first_ms: 0.5,
            last_ms: 2.0,
            missing_removed: removed,
            missing_live: live,
        }
    }

    fn inputs<'a>(lg: &'a LoadgenResult, s: &'a ServerStats, stall: bool) -> Inputs<'a> {
        Inputs {
            name: "A".into(),
            description: String::new(),
            stall_expected: stall,
            lg,
            server: Some(s),
            server_cpu_start: Some(1.0),
            server_peak_rss: Some(50_000_000),
            rounds_total: lg.rounds.len() as u64,
            rate: 5.0,
            size: 1024,
            duration_s: 3.0,
            time_bound_s: 10.0,
            control: None,
        }
    }

    fn stats(sent: u64, drops: u64) -> ServerStats {
        ServerStats {
            rounds_sent: sent,
            drops,
            nodelay: Some(true),
            cpu_seconds: 3.5,
            hub_round_ms: vec![1.0, 2.0, 9.0],
            ..Default::default()
        }
    }

    fn check_of<'a>(r: &'a ScenarioResult, name: &str) -> Option<&'a Check> {
        r.checks.iter().find(|c| c.name == name)
    }

    /// Issue 41 item 13: with rtcheck's publisher, a seq above what it published was
    /// rewritten or invented by the server: invalid, saying so (not "already publishing").
    #[test]
    fn a_seq_rtcheck_never_published_invalidates_the_run() {
        let mut l = lg(vec![round(10, 0, 0); 3], 10, 0);
        l.publisher = Some(Default::default());
        let s = stats(3, 0);
        let r = analyze(&inputs(&l, &s, false));
        assert_eq!(check_of(&r, "seq range").unwrap().status, Status::Pass);
        l.beyond_rounds = 7;
        let r = analyze(&inputs(&l, &s, false));
        assert!(!r.valid);
        let c = check_of(&r, "seq range").unwrap();
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("rewrote or invented"), "{}", c.detail);
        // A server publishing by itself: a note, as before.
        l.publisher = None;
        let r = analyze(&inputs(&l, &s, false));
        assert!(check_of(&r, "seq range").is_none());
        assert!(r.notes.iter().any(|n| n.contains("seq above 3 ignored")));
    }

    /// Issue 41 item 14: healthy clients closed by the server make the run invalid, and
    /// without server stats the table's `removed` is what the clients saw.
    #[test]
    fn healthy_clients_closed_by_the_server_invalidate_the_run() {
        let mut l = lg(vec![round(10, 0, 0), round(9, 0, 1), round(9, 0, 1)], 10, 0);
        l.removed_healthy = 1;
        let s = stats(3, 0);
        let r = analyze(&inputs(&l, &s, false));
        assert!(!r.valid);
        let c = check_of(&r, "server-closed clients").unwrap();
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("closed 1 of 10 healthy"), "{}", c.detail);
        assert_eq!(r.p50_ms, None, "no figures from an invalid run");
        // Where the scenario stalls the hub, said but not invalid on its own.
        let r = analyze(&inputs(&l, &s, true));
        assert_eq!(
            check_of(&r, "server-closed clients").unwrap().status,
            Status::Warn
        );
        let mut foreign = inputs(&l, &s, false);
        foreign.server = None;
        assert_eq!(analyze(&foreign).removed, Some(1));
    }

    #[test]
    fn complete_run_is_valid() {
        let l = lg(vec![round(10, 0, 0); 3], 10, 0);
        let s = stats(3, 0);
        let r = analyze(&inputs(&l, &s, false));
        assert!(r.valid, "{:?}", r.checks);
        assert_eq!(r.accounting.expected, 30);
        assert_eq!(r.accounting.received, 30);
        assert_eq!(r.rounds_completed, 3);
        assert_eq!(r.p999_ms, Some(3.0));
        assert_eq!(r.hub_max_ms, Some(9.0));
        assert_eq!(r.hub_median_ms, Some(2.0));
        assert_eq!(r.server_cpu_s, Some(2.5));
        assert_eq!(r.per_round.len(), 3);
        assert_eq!(r.per_round[2].round, 3);
        assert_eq!(r.per_round[2].last_client_ms, Some(2.0));
        assert_eq!(r.per_round[2].hub_ms, Some(9.0));
    }

    #[test]
    fn per_round_names_rounds_nobody_received() {
        let p = per_round(&[round(1, 0, 0), round(0, 1, 0)], &[4.0], 3);
        assert_eq!(p[0].last_client_ms, Some(2.0));
        assert_eq!((p[1].last_client_ms, p[1].hub_ms), (None, None));
        assert_eq!((p[2].round, p[2].last_client_ms), (3, None));
    }

    #[test]
    fn unexplained_gap_invalidates_and_hides_numbers() {
        let l = lg(
            vec![round(10, 0, 0), round(9, 1, 0), round(10, 0, 0)],
            10,
            0,
        );
        let s = stats(3, 0);
        let r = analyze(&inputs(&l, &s, false));
        assert!(!r.valid);
        assert_eq!(r.accounting.unexplained, 1);
        assert_eq!(r.p999_ms, None);
        assert!(r.percentiles.is_empty() && r.per_round.is_empty());
        assert!(r.notes[0].starts_with("INVALID"), "{:?}", r.notes);
        // The same gap covered by the server's drop counter is named, so valid.
        let s = stats(3, 1);
        let r = analyze(&inputs(&l, &s, false));
        assert!(r.valid);
        assert_eq!(r.accounting.dropped, 1);
    }

    #[test]
    fn stall_is_named_in_c1_and_unpublished_rounds_are_named() {
        // Round 2 partly stuck behind a stalled shard, round 3 never published.
        let l = lg(
            vec![round(10, 0, 0), round(6, 4, 0), round(0, 10, 0)],
            10,
            0,
        );
        let s = stats(2, 0);
        let r = analyze(&inputs(&l, &s, true));
        assert!(r.valid, "{:?}", r.checks);
        assert_eq!(r.accounting.stalled, 4);
        assert_eq!(r.accounting.unpublished, 10);
        assert_eq!(r.rounds_completed, 1);
        let r = analyze(&inputs(&l, &s, false));
        assert!(!r.valid);
    }

    #[test]
    fn saturated_loadgen_and_nagle_invalidate() {
        let mut l = lg(vec![round(10, 0, 0)], 10, 0);
        l.cpu_run_s = 19.0; // 95% of 2 cores over 10 s
        let s = stats(1, 0);
        let r = analyze(&inputs(&l, &s, false));
        assert!(!r.valid);
        assert!(r
            .checks
            .iter()
            .any(|c| c.name == "load generator CPU" && c.status == Status::Fail));
        let mut l = lg(vec![round(10, 0, 0)], 10, 0);
        l.nodelay_off = 1;
        let r = analyze(&inputs(&l, &s, false));
        assert!(!r.valid);
    }

    #[test]
    fn floor_ratios() {
        let l = lg(vec![round(10, 0, 0)], 10, 0);
        let s = stats(1, 0);
        let mut f = analyze(&inputs(&l, &s, false));
        f.name = "F".into();
        let mut a = analyze(&inputs(&l, &s, false));
        a.p99_ms = Some(4.0);
        let mut v = vec![f, a];
        apply_floor(&mut v, "F");
        assert_eq!(v[1].p99_vs_floor, Some(2.0));
        assert_eq!(v[1].p999_vs_floor, Some(1.0));
        assert_eq!(v[0].p99_vs_floor, None);
    }

    /// Nothing passes on nothing: a run that received no frame has no seq to order or to
    /// hold to the range, and a run with no run time no CPU share.
    #[test]
    fn checks_that_measured_nothing_are_skipped_not_passed() {
        let mut l = lg(vec![round(0, 10, 0); 3], 10, 0);
        l.publisher = Some(Default::default());
        l.wall_run_s = 0.0;
        let r = analyze(&inputs(&l, &stats(3, 0), false));
        assert!(!r.valid);
        for name in ["seq order", "seq range", "load generator CPU"] {
            let c = check_of(&r, name).unwrap_or_else(|| panic!("{name}: {:?}", r.checks));
            assert_eq!(c.status, Status::Skip, "{name}: {}", c.detail);
        }
        // Frames that arrived but were not the payload are a measured failure.
        l.undecodable = 4;
        let r = analyze(&inputs(&l, &stats(3, 0), false));
        assert_eq!(check_of(&r, "seq order").unwrap().status, Status::Fail);
    }

    /// A server that accepts the upgrade and then refuses every client (1008 after an
    /// auth check): the close, code and reason, is the cause said, not "sent nothing".
    #[test]
    fn clients_refused_after_the_handshake_are_named_with_the_close() {
        let mut l = lg(vec![round(0, 0, 10); 3], 10, 0);
        l.removed_healthy = 10;
        l.closed_by_frame = 7;
        l.first_close = Some("close 1008 (policy violation), reason \"no token\"".into());
        let r = analyze(&inputs(&l, &stats(3, 0), false));
        assert!(!r.valid);
        let c = check_of(&r, "samples received").unwrap();
        assert_eq!(c.status, Status::Fail);
        assert!(
            c.detail.contains("ended 10 client(s) after the handshake (7 by a close frame, one of them close 1008 (policy violation), reason \"no token\"; 3 by a reset or EOF)"),
            "{}",
            c.detail
        );
        assert!(!c.detail.contains("sent nothing"), "{}", c.detail);
        let c = check_of(&r, "server-closed clients").unwrap();
        assert!(c.detail.contains("1008"), "{}", c.detail);
        assert!(!c.detail.contains("the first with"), "{}", c.detail);
        // Every one ended by a close frame: said so, still "one of them".
        l.closed_by_frame = 10;
        let r = analyze(&inputs(&l, &stats(3, 0), false));
        let c = check_of(&r, "samples received").unwrap();
        assert!(
            c.detail.contains("ended 10 client(s) after the handshake (all by a close frame, one of them close 1008"),
            "{}",
            c.detail
        );
    }

    fn failed(r: &ScenarioResult, name: &str) -> bool {
        r.checks
            .iter()
            .any(|c| c.name == name && c.status == Status::Fail)
    }

    #[test]
    fn silent_peer_is_invalid_without_stats() {
        // Handshake done, no frame ever: the loadgen reports zeros everywhere.
        let mut l = lg(vec![round(0, 10, 0); 3], 10, 0);
        l.nodelay_checked = 10;
        let r = analyze(&Inputs {
            server: None,
            ..inputs(&l, &stats(3, 0), false)
        });
        assert!(!r.valid);
        assert!(failed(&r, "samples received"), "{:?}", r.checks);
        assert_eq!((r.p50_ms, r.p99_ms, r.max_ms), (None, None, None));
    }

    #[test]
    fn silent_peer_reporting_nothing_published_is_invalid() {
        // The same peer answering stats with rounds_sent 0: every sample is "unpublished".
        let l = lg(vec![round(0, 10, 0); 3], 10, 0);
        let s = stats(0, 0);
        let r = analyze(&inputs(&l, &s, false));
        assert_eq!(r.accounting.unpublished, 30);
        assert!(!r.valid);
        assert!(failed(&r, "samples received"));
        assert!(failed(&r, "rounds published"));
        assert_eq!(r.p99_ms, None);
    }

    #[test]
    fn unpublished_rounds_fail_unless_a_stall_is_expected() {
        let l = lg(
            vec![round(10, 0, 0), round(10, 0, 0), round(0, 10, 0)],
            10,
            0,
        );
        let s = stats(2, 0);
        let r = analyze(&inputs(&l, &s, false));
        assert!(failed(&r, "rounds published"), "{:?}", r.checks);
        assert!(!r.valid);
        let r = analyze(&inputs(&l, &s, true));
        assert!(!failed(&r, "rounds published"));
        assert!(r.valid, "{:?}", r.checks);
    }

    #[test]
    fn nodelay_read_back_on_no_socket_fails() {
        let mut l = lg(vec![round(10, 0, 0)], 10, 0);
        l.nodelay_checked = 0;
        l.connected = 0;
        let s = stats(1, 0);
        let r = analyze(&inputs(&l, &s, false));
        assert!(failed(&r, "TCP_NODELAY"), "{:?}", r.checks);
        assert!(!r.valid);
    }

    #[test]
    fn accounting_identity_names_the_gap() {
        let a = Accounting {
            expected: 30,
            received: 25,
            dropped: 2,
            ..Default::default()
        };
        let gap = accounting_gap(&a).unwrap();
        assert!(gap.contains("3 fewer than expected 30"), "{gap}");
        let a = Accounting {
            expected: 30,
            received: 31,
            ..Default::default()
        };
        assert!(accounting_gap(&a).unwrap().contains("1 more"));
        let a = Accounting {
            expected: 30,
            received: 20,
            dropped: 1,
            after_removal: 2,
            unpublished: 3,
            stalled: 1,
            never_connected: 2,
            unexplained: 1,
        };
        assert_eq!(accounting_gap(&a), None);
        // More rounds reported than asked for break the identity in analyze.
        let l = lg(vec![round(10, 0, 0); 4], 10, 0);
        let s = stats(3, 0);
        let r = analyze(&Inputs {
            rounds_total: 3,
            ..inputs(&l, &s, false)
        });
        assert!(failed(&r, "accounting identity"), "{:?}", r.checks);
        assert!(!r.valid);
    }

    #[test]
    fn server_stats_contradicting_the_clients_fail() {
        let l = lg(vec![round(10, 0, 0); 3], 10, 0);
        // rounds_sent 1 but clients got seq 3: more than the one round in progress.
        let s = stats(1, 0);
        let r = analyze(&inputs(&l, &s, true));
        assert!(failed(&r, "server stats"), "{:?}", r.checks);
        assert!(!r.valid);
        // One round in progress at the read is allowed.
        let s = stats(2, 0);
        let r = analyze(&inputs(&l, &s, false));
        assert!(!failed(&r, "server stats"));
        assert!(r.valid, "{:?}", r.checks);
        // A hostile huge count is clamped to the rounds asked for, no overflow.
        let s = stats(u64::MAX, 0);
        let r = analyze(&inputs(&l, &s, false));
        assert!(r.valid, "{:?}", r.checks);
        assert_eq!(r.accounting.unpublished, 0);
    }

    #[test]
    fn each_check_on_its_own() {
        let l = lg(vec![round(10, 0, 0); 3], 10, 0);
        let s = stats(3, 0);
        let mut inp = inputs(&l, &s, false);
        assert_eq!(median_max(&[]), (None, None));
        assert_eq!(median_max(&[3.0, 1.0, 2.0]), (Some(2.0), Some(3.0)));
        assert_eq!(arrivals(&l, true), vec![2.0; 3]);
        assert!(time_bound(&inp).is_none());
        inp.duration_s = 15.1;
        assert_eq!(time_bound(&inp).unwrap().status, Status::Warn);
        // The server claims one round; the clients saw seq 3: a contradiction.
        let one = stats(1, 0);
        inp.server = Some(&one);
        assert_eq!(server_agrees(&inp).unwrap().status, Status::Fail);
        inp.server = None;
        assert!(server_agrees(&inp).is_none());
        // Clients read back on, the server silent: a warning, not a pass.
        assert_eq!(nodelay(&inp).status, Status::Warn);
        let mut busy = l.clone();
        busy.cpu_run_s = 19.0;
        let c = loadgen_cpu(&busy);
        assert_eq!(c.status, Status::Fail);
        assert!(
            c.detail.contains("95%") && c.detail.contains("measured itself"),
            "{}",
            c.detail
        );
        inp.rate = 1000.0; // period 1 ms: first arrivals at 0.5 ms still within it
        assert_eq!(round_start_drift(&inp).status, Status::Pass);
        inp.rate = 4000.0;
        assert_eq!(round_start_drift(&inp).status, Status::Warn);
    }

    #[test]
    fn a_server_on_another_rate_or_size_invalidates_the_run() {
        let s = stats(2, 0);
        let mut l = lg(vec![round(10, 0, 0), round(10, 0, 0)], 10, 0);
        // 5/s asked: 200 ms between scheduled times.
        l.schedule.see(1024, 1, 1_000_000_000);
        l.schedule.see(1024, 11, 3_000_000_000);
        let sched = |l: &LoadgenResult| {
            let r = analyze(&inputs(l, &s, false));
            let c = r
                .checks
                .iter()
                .find(|c| c.name == "server schedule")
                .cloned();
            c.map(|c| c.status)
        };
        assert_eq!(sched(&l), Some(Status::Pass));
        let mut fast = l.clone();
        fast.schedule.see(1024, 31, 4_000_000_000); // 10/s over the later frames
        assert_eq!(sched(&fast), Some(Status::Fail));
        let mut small = l.clone();
        small.schedule.see(256, 2, 1_200_000_000);
        assert_eq!(sched(&small), Some(Status::Fail));
        assert_eq!(
            sched(&lg(vec![round(10, 0, 0)], 10, 0)),
            None,
            "nothing seen, nothing claimed"
        );
    }

    fn detail<'a>(r: &'a ScenarioResult, name: &str) -> (&'a Status, &'a str) {
        let c = r.checks.iter().find(|c| c.name == name).unwrap();
        (&c.status, c.detail.as_str())
    }

    #[test]
    fn an_external_run_that_measured_nothing_says_what_arrived() {
        let mut l = lg(vec![round(0, 10, 0); 3], 10, 0);
        l.samples = 0;
        l.undecodable = 1050;
        l.first_undecodable = Some("38 B JSON {n: number, type: string}".into());
        let none = ServerStats::default();
        let mut inp = inputs(&l, &none, false);
        inp.server = None;
        inp.control = Some(ControlSeen {
            start: Err("HTTP 404".into()),
            rounds_before: None,
        });
        let r = analyze(&inp);
        assert!(!r.valid);
        let (st, d) = detail(&r, "samples received");
        assert_eq!(*st, Status::Fail);
        assert!(d.contains("1050 frames arrived but none"), "{d}");
        assert!(d.contains("{n: number, type: string}"), "{d}");
        assert!(d.contains("/control/start answered HTTP 404"), "{d}");
        assert!(!d.contains("sent nothing"), "{d}");
        let (st, d) = detail(&r, "control plane");
        assert_eq!(*st, Status::Warn);
        assert!(d.contains("HTTP 404"), "{d}");
        assert!(
            r.notes[0].starts_with("INVALID: samples received"),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn already_publishing_is_named() {
        let mut l = lg(vec![round(10, 0, 0); 3], 10, 0);
        l.schedule.see(1024, 7, 1_000);
        let s = stats(3, 0);
        let mut inp = inputs(&l, &s, false);
        inp.control = Some(ControlSeen {
            start: Ok(()),
            rounds_before: Some(40),
        });
        let r = analyze(&inp);
        let (st, d) = detail(&r, "control plane");
        assert_eq!(*st, Status::Warn);
        assert!(d.contains("counted 40 rounds"), "{d}");
        assert!(d.contains("first round seen was seq 7"), "{d}");
        inp.control = Some(ControlSeen {
            start: Ok(()),
            rounds_before: Some(0),
        });
        let mut l2 = lg(vec![round(10, 0, 0); 3], 10, 0);
        l2.schedule.see(1024, 1, 1_000);
        inp.lg = &l2;
        let r = analyze(&inp);
        assert_eq!(*detail(&r, "control plane").0, Status::Pass);
        // Nothing received, every frame past --rounds: already publishing, said so.
        let mut none = lg(vec![round(0, 10, 0); 3], 10, 0);
        none.samples = 0;
        none.beyond_rounds = 500;
        inp.lg = &none;
        let r = analyze(&inp);
        let (_, d) = detail(&r, "samples received");
        assert!(d.contains("500 frames had a seq above --rounds 3"), "{d}");
    }

    #[test]
    fn payload_sizes_within_the_stated_tolerance_pass() {
        assert_eq!(size_range(64), (48, 80));
        assert_eq!(size_range(1024), (922, 1126));
        let mut l = lg(vec![round(10, 0, 0); 3], 10, 0);
        l.schedule.see(63, 1, 0);
        l.schedule.see(65, 3, 400_000_000);
        let s = stats(3, 0);
        let mut inp = inputs(&l, &s, false);
        inp.size = 64;
        let r = analyze(&inp);
        let (st, d) = detail(&r, "server schedule");
        assert_eq!(*st, Status::Pass, "{d}");
        assert!(d.contains("payloads 63-65 bytes"), "{d}");
        assert!(d.contains("accepted 48-80"), "{d}");
        inp.size = 1024;
        let r = analyze(&inp);
        assert_eq!(*detail(&r, "server schedule").0, Status::Fail);
    }

    #[test]
    fn the_publisher_is_held_to_its_schedule() {
        use crate::bench::wire::PublisherStat;
        let rounds: Vec<RoundStat> = (0..4).map(|_| round(10, 0, 0)).collect();
        let st = stats(4, 0);
        let run = |p: PublisherStat, stall: bool| {
            let mut l = lg(rounds.clone(), 10, 0);
            l.publisher = Some(p);
            analyze(&Inputs {
                server: None,
                ..inputs(&l, &st, stall)
            })
        };
        let ok = PublisherStat {
            via: "ws".into(),
            scheduled: 4,
            planned: 4,
            timer_rounds: 4,
            sent: 4,
            timer_late_p99_ms: 2.0,
            achieved_period_ms: Some(200.0),
            ..Default::default()
        };
        let r = run(ok.clone(), false);
        assert_eq!(detail(&r, "publisher schedule").0, &Status::Pass);
        // Late by less than a period (200 ms at 5/s): said, still valid.
        let r = run(
            PublisherStat {
                timer_late_p99_ms: 40.0,
                ..ok.clone()
            },
            false,
        );
        let (st_, d) = detail(&r, "publisher schedule");
        assert_eq!(st_, &Status::Warn, "{d}");
        assert!(d.contains("load generator's own delay"), "{d}");
        assert!(r.valid);
        // Stopped at round 2 of the 4 planned: invalid, held to the plan, not to the
        // 2 that were due by the stop.
        let r = run(
            PublisherStat {
                scheduled: 2,
                timer_rounds: 2,
                sent: 2,
                ..ok.clone()
            },
            false,
        );
        let (st_, d) = detail(&r, "publisher schedule");
        assert_eq!(st_, &Status::Fail, "{d}");
        assert!(d.contains("reached round 2 of 4"), "{d}");
        assert!(d.contains("2 of 2 sent on schedule"), "{d}");
        // Over one period, or off the rate: invalid, no figure.
        let r = run(
            PublisherStat {
                timer_late_p99_ms: 250.0,
                ..ok.clone()
            },
            false,
        );
        assert!(!r.valid && r.p99_ms.is_none());
        let r = run(
            PublisherStat {
                achieved_period_ms: Some(230.0),
                ..ok.clone()
            },
            false,
        );
        assert!(!r.valid);
        // A refused publish: invalid in A; in C (a stall expected) the hub's result.
        let refused = PublisherStat {
            failed: 1,
            sent: 3,
            first_error: Some("publisher: POST /p: no answer within 10s".into()),
            ..ok
        };
        assert!(!run(refused.clone(), false).valid);
        let r = run(refused.clone(), false);
        let (_, d) = detail(&r, "publisher schedule");
        assert!(
            d.contains("1 of 4 publishes failed, the first: POST /p: no answer"),
            "{d}"
        );
        let r = run(refused, true);
        assert_eq!(detail(&r, "publisher schedule").0, &Status::Warn);
    }

    #[test]
    fn publishes_failed_is_said_once_for_every_caller() {
        use crate::bench::wire::PublisherStat;
        let mut p = PublisherStat {
            sent: 9,
            ..Default::default()
        };
        assert_eq!(publishes_failed(&p), None);
        p.failed = 3;
        assert_eq!(
            publishes_failed(&p).as_deref(),
            Some("3 of 12 publishes failed, the first: no error given")
        );
        p.first_error = Some("publisher: HTTP 503".into());
        assert_eq!(
            publishes_failed(&p).as_deref(),
            Some("3 of 12 publishes failed, the first: HTTP 503")
        );
        // Never connected: no send finished, none counted failed; no count made up.
        let mut never = PublisherStat {
            first_error: Some("publisher: connect 127.0.0.1:9: refused".into()),
            ..Default::default()
        };
        assert_eq!(
            publishes_failed(&never).as_deref(),
            Some("the publisher failed before sending: connect 127.0.0.1:9: refused")
        );
        never.unsent = 4;
        assert_eq!(
            publishes_failed(&never).as_deref(),
            Some("the publisher failed before sending: connect 127.0.0.1:9: refused (4 still blocked)")
        );
    }

    #[test]
    fn corrected_latencies_below_zero_beyond_the_uncertainty_invalidate() {
        let mut lg = LoadgenResult::default();
        assert!(clock_correction(&lg).is_none());
        lg.clock_uncertainty_us = Some(5_500);
        lg.below_zero = 3;
        assert_eq!(clock_correction(&lg).unwrap().status, Status::Pass);
        lg.below_uncertainty = 1;
        let c = clock_correction(&lg).unwrap();
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("5.5 ms"), "{}", c.detail);
    }
}
