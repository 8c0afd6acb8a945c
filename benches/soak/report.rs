//! The soak's figures per client kind, its checks and its verdict (pure), and their text
//! table and JSON line.
use super::clients::{Kind, Outcome};
use super::phase::{Measured, FDS_BACK};
use rtcheck::bench::seq_account::{count, Counts};
use serde::Serialize;

/// One client kind's sums.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    pub kind: &'static str,
    pub clients: usize,
    pub connects: u64,
    /// Counting kinds: the accounting over seq 1 ..= the last round.
    pub counts: Option<Counts>,
    pub resets: u64,
    pub session_resets: u64,
    pub server_closed: u64,
    pub refused: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub unknown: u64,
    pub first_unknown: Option<String>,
    pub never_read_judged: u64,
    pub never_read_removed: u64,
    pub requests: u64,
    pub sessions: u64,
    #[serde(skip)]
    pub healthy: bool,
}

/// Pure: sum outcomes per kind, in the order kinds first appear.
pub fn rows(outcomes: &[(Kind, Outcome)]) -> Vec<Row> {
    let mut out: Vec<(Kind, Row)> = Vec::new();
    for (k, o) in outcomes {
        let i = match out.iter().position(|(x, _)| x == k) {
            Some(i) => i,
            None => {
                out.push((
                    *k,
                    Row {
                        kind: k.name(),
                        healthy: k.healthy(),
                        ..Row::default()
                    },
                ));
                out.len() - 1
            }
        };
        let r = &mut out[i].1;
        r.clients += 1;
        r.connects += o.connects;
        if let Some(t) = &o.trace {
            r.counts.get_or_insert_with(Counts::default).add(&count(t));
            r.resets += t.resets;
        }
        r.session_resets += o.session_resets;
        r.server_closed += o.server_closed;
        r.refused += o.refused;
        r.errors += o.errors;
        if r.first_error.is_none() {
            r.first_error = o.first_error.clone();
        }
        r.unknown += o.unknown;
        if r.first_unknown.is_none() {
            r.first_unknown = o.first_unknown.clone();
        }
        r.never_read_judged += o.judged;
        r.never_read_removed += o.removed;
        r.requests += o.requests;
        r.sessions += o.sessions;
    }
    out.into_iter().map(|(_, r)| r).collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub pass: bool,
    pub detail: String,
}

/// The server's memory bound and where each term comes from.
#[derive(Debug, Clone, Serialize)]
pub struct Bound {
    pub bytes: u64,
    pub source: String,
}

/// Slack in the RSS bound for what is neither budget nor connection (runtime, allocator).
pub const SLACK: u64 = 64 << 20;
/// Per connection: 2.5-2.9 KB idle at 10,000 (BENCHMARKS.md "Idle memory"), plus a task's
/// read buffer, queue entries and timers while active.
pub const PER_CLIENT: u64 = 16 << 10;

/// Pure: the RSS bound: baseline + the replay budget + the sessions held at worst (the
/// lower of `--max-sessions` and what `--session-memory` holds, x one session's worst) +
/// a per-client allowance + slack.
pub fn bound(base: u64, replay_budget: u64, sessions: Option<(u64, u64)>, clients: usize) -> Bound {
    let (n, per) = sessions.unwrap_or((0, 0));
    let bytes = base + replay_budget + n * per + clients as u64 * PER_CLIENT + SLACK;
    let mut source = format!(
        "baseline {} + --replay-budget {}",
        mib(base),
        mib(replay_budget)
    );
    if sessions.is_some() {
        source += &format!(
            " + {n} sessions x {:.0} KiB at worst (--max-sessions / --session-memory, --session-queue)",
            per as f64 / 1024.0
        );
    }
    source += &format!(
        " + {clients} clients x {} KiB + {} slack",
        PER_CLIENT >> 10,
        mib(SLACK)
    );
    Bound { bytes, source }
}

pub fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / 1048576.0)
}

/// Generator figures that judge the run's validity.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Generator {
    pub cpu_cores: f64,
    pub loop_lag_p99_ms: f64,
    pub loop_lag_max_ms: f64,
    pub lateness_p50_ms: f64,
    pub lateness_p99_ms: f64,
    pub lateness_max_ms: f64,
    pub rss_peak: u64,
}

/// The generator is late waking its own timers: over this p99 or max, a healthy client
/// that fell behind may have been the generator's (INVALID), not the server's.
pub const LOOP_LAG_P99_MS: f64 = 100.0;
pub const LOOP_LAG_MAX_MS: f64 = 1000.0;
/// Healthy clients "fell behind" beyond this lateness p99, or on any loss or removal.
pub const BEHIND_P99_MS: f64 = 1000.0;

/// Pure: why the run is not a result, if it is not: healthy clients fell behind while the
/// generator itself was late.
pub fn invalid(rows: &[Row], g: &Generator) -> Option<String> {
    let healthy = rows.iter().filter(|r| r.healthy);
    let lost: u64 = healthy
        .clone()
        .filter_map(|r| r.counts)
        .map(|c| c.lost)
        .sum();
    let closed: u64 = healthy.map(|r| r.server_closed).sum();
    let behind = lost > 0 || closed > 0 || g.lateness_p99_ms > BEHIND_P99_MS;
    let gen_late = g.loop_lag_p99_ms > LOOP_LAG_P99_MS || g.loop_lag_max_ms > LOOP_LAG_MAX_MS;
    (behind && gen_late).then(|| {
        format!(
            "healthy clients fell behind (lost {lost}, closed {closed}, lateness p99 {:.0} ms) while the generator was late (timer lag p99 {:.0} ms, max {:.0} ms; CPU {:.2} cores)",
            g.lateness_p99_ms, g.loop_lag_p99_ms, g.loop_lag_max_ms, g.cpu_cores
        )
    })
}

/// Pure: the phase's checks (the exit code follows them).
pub fn checks(rows: &[Row], s: &super::phase::Samples, b: &Bound) -> Vec<Check> {
    let sum = |f: fn(&Counts) -> u64| -> u64 {
        rows.iter().filter_map(|r| r.counts.as_ref()).map(f).sum()
    };
    let silent = sum(|c| c.lost_silently);
    let unknown: u64 = rows.iter().map(|r| r.unknown).sum();
    let judged: u64 = rows.iter().map(|r| r.never_read_judged).sum();
    let removed: u64 = rows.iter().map(|r| r.never_read_removed).sum();
    let fds_ok = s.fds_back_s.is_some();
    let mut v = vec![
        Check {
            name: "lost silently".into(),
            pass: silent == 0,
            detail: format!(
                "{silent} (of {} messages lost, {} marked)",
                sum(|c| c.lost),
                sum(|c| c.gaps)
            ),
        },
        Check {
            name: "fds back to baseline".into(),
            pass: fds_ok,
            detail: match s.fds_back_s {
                Some(t) => format!(
                    "{} -> peak {} -> {} within {t:.1} s",
                    s.fds_base, s.fds_peak, s.fds_after
                ),
                None => format!(
                    "{} -> peak {} -> still {} after {} s",
                    s.fds_base,
                    s.fds_peak,
                    s.fds_after,
                    FDS_BACK.as_secs()
                ),
            },
        },
        Check {
            name: "RSS peak within bound".into(),
            pass: s.rss_peak <= b.bytes,
            detail: format!(
                "peak {} <= {} ({})",
                mib(s.rss_peak),
                mib(b.bytes),
                b.source
            ),
        },
        Check {
            name: "RSS back after".into(),
            pass: s.rss_after <= s.rss_base + SLACK,
            detail: format!(
                "{} <= baseline {} + {}",
                mib(s.rss_after),
                mib(s.rss_base),
                mib(SLACK)
            ),
        },
        Check {
            name: "every frame understood".into(),
            pass: unknown == 0,
            detail: format!("{unknown} unknown"),
        },
    ];
    if rows.iter().any(|r| r.kind.starts_with("never-read")) {
        v.push(Check {
            name: "never-reading clients removed".into(),
            pass: removed == judged,
            detail: format!("{removed} of {judged} holds closed by the server"),
        });
    }
    v
}

/// A phase, judged.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseReport {
    pub phase: &'static str,
    pub server_flags: Vec<String>,
    pub clients: usize,
    pub rounds: u64,
    pub publish_s: f64,
    pub rows: Vec<Row>,
    pub server: serde_json::Value,
    pub generator: Generator,
    pub bound: Bound,
    pub checks: Vec<Check>,
    pub invalid: Option<String>,
    pub pass: bool,
}

pub fn judge(m: &Measured) -> PhaseReport {
    let rows = rows(&m.outcomes);
    let s = &m.server;
    let ss = &s.stats_start["sessions"];
    let sessions = m.spec.session_ack.then(|| {
        let held = ss["max"]
            .as_u64()
            .unwrap_or(0)
            .min(ss["max_by_memory"].as_u64().unwrap_or(u64::MAX));
        (held, ss["worst_session_bytes"].as_u64().unwrap_or(0))
    });
    let budget = s.stats_start["replay"]["budget_bytes"]
        .as_u64()
        .unwrap_or(0);
    let clients = m.outcomes.len();
    let b = bound(s.rss_base, budget, sessions, clients);
    let g = Generator {
        cpu_cores: m.gen_cpu_s / m.publish_s.max(1e-9),
        loop_lag_p99_ms: m.loop_lag.2,
        loop_lag_max_ms: m.loop_lag.3,
        lateness_p50_ms: m.lateness.1,
        lateness_p99_ms: m.lateness.2,
        lateness_max_ms: m.lateness.3,
        rss_peak: m.gen_rss_peak,
    };
    let checks = checks(&rows, s, &b);
    let invalid = invalid(&rows, &g);
    let e = &s.stats_end;
    let server = serde_json::json!({
        "rss_base": s.rss_base, "rss_peak": s.rss_peak, "rss_after": s.rss_after,
        "fds_base": s.fds_base, "fds_peak": s.fds_peak, "fds_after": s.fds_after, "fds_back_s": s.fds_back_s,
        "cpu_cores": m.server_cpu_s / m.publish_s.max(1e-9),
        "rounds_sent": e["rounds_sent"], "removed": e["removed"], "drops": e["drops"],
        "missed_by_removed": e["missed_by_removed"], "closed": e["closed"],
        "replay": e["replay"], "sessions": e["sessions"], "accept_errors": e["accept_errors"],
        "poll_requests": e["clients"]["poll"],
    });
    let pass = invalid.is_none() && checks.iter().all(|c| c.pass);
    PhaseReport {
        phase: m.spec.name,
        server_flags: m.spec.flags.clone(),
        clients,
        rounds: m.spec.rounds,
        publish_s: m.publish_s,
        rows,
        server,
        generator: g,
        bound: b,
        checks,
        invalid,
        pass,
    }
}

/// The text table of one phase.
pub fn text(p: &PhaseReport) -> String {
    let mut o = String::new();
    o += &format!(
        "\nphase {}: rtcheck serve {}\n",
        p.phase,
        p.server_flags.join(" ")
    );
    o += &format!(
        "{:<15} {:>7} {:>8} {:>10} {:>7} {:>6} {:>7} {:>6} {:>6} {:>6} {:>7}  {}\n",
        "kind",
        "clients",
        "connects",
        "received",
        "lost",
        "silent",
        "marked",
        "dup",
        "resets",
        "closed",
        "refused",
        "other"
    );
    for r in &p.rows {
        let c = r.counts;
        let n = |f: fn(&Counts) -> u64| c.as_ref().map_or("-".to_string(), |c| f(c).to_string());
        let mut other = Vec::new();
        if r.never_read_judged > 0 || r.kind.starts_with("never-read") {
            other.push(format!(
                "removed by server {}/{}",
                r.never_read_removed, r.never_read_judged
            ));
        }
        if r.requests > 0 {
            other.push(format!("requests {}", r.requests));
        }
        if r.kind == "pin-poll" {
            other.push(format!("sessions issued {}", r.sessions));
        }
        if r.session_resets > 0 {
            other.push(format!("session resets {}", r.session_resets));
        }
        if r.unknown > 0 {
            other.push(format!(
                "unknown {} ({})",
                r.unknown,
                r.first_unknown.as_deref().unwrap_or("")
            ));
        }
        if r.errors > 0 {
            other.push(format!(
                "errors {} ({})",
                r.errors,
                r.first_error.as_deref().unwrap_or("")
            ));
        }
        o += &format!(
            "{:<15} {:>7} {:>8} {:>10} {:>7} {:>6} {:>7} {:>6} {:>6} {:>6} {:>7}  {}\n",
            r.kind,
            r.clients,
            r.connects,
            n(|c| c.received),
            n(|c| c.lost),
            n(|c| c.lost_silently),
            n(|c| c.gaps),
            n(|c| c.duplicated),
            if c.is_some() {
                (r.resets).to_string()
            } else {
                "-".into()
            },
            r.server_closed,
            r.refused,
            other.join("; ")
        );
    }
    let s = &p.server;
    let u = |k: &str| s[k].as_u64().unwrap_or(0);
    o += &format!(
        "server: RSS {} -> peak {} -> after {}; fds {} -> peak {} -> after {}; CPU {:.2} cores; rounds {} in {:.0} s\n",
        mib(u("rss_base")), mib(u("rss_peak")), mib(u("rss_after")),
        u("fds_base"), u("fds_peak"), u("fds_after"),
        s["cpu_cores"].as_f64().unwrap_or(0.0), s["rounds_sent"], p.publish_s
    );
    o += &format!(
        "  removed {} (closed: {}), drops {}, missed by removed {}, replay {}, accept errors {}\n",
        s["removed"],
        compact(&s["closed"]),
        s["drops"],
        s["missed_by_removed"],
        compact(&s["replay"]),
        compact(&s["accept_errors"])
    );
    if !s["sessions"].is_null() && p.server_flags.iter().any(|f| f == "session-ack") {
        o += &format!("  sessions: {}\n", compact(&s["sessions"]));
    }
    let g = &p.generator;
    o += &format!(
        "generator: CPU {:.2} cores (this host has {}), timer lag p99 {:.0} ms max {:.0} ms, healthy lateness p50 {:.1} ms p99 {:.1} ms max {:.0} ms, RSS peak {}\n",
        g.cpu_cores, rtcheck_base::os::clock::cores(), g.loop_lag_p99_ms, g.loop_lag_max_ms,
        g.lateness_p50_ms, g.lateness_p99_ms, g.lateness_max_ms, mib(g.rss_peak)
    );
    for c in &p.checks {
        o += &format!(
            "  [{}] {}: {}\n",
            if c.pass { "pass" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    o += &match (&p.invalid, p.pass) {
        (Some(why), _) => format!("phase {}: INVALID: {why}\n", p.phase),
        (None, true) => format!("phase {}: pass\n", p.phase),
        (None, false) => format!("phase {}: FAIL\n", p.phase),
    };
    o
}

/// `{"a":1,"b":2}` as `a 1, b 2` (zeros left out).
fn compact(v: &serde_json::Value) -> String {
    let Some(m) = v.as_object() else {
        return v.to_string();
    };
    let parts: Vec<String> = m
        .iter()
        .filter(|(_, x)| !(x.as_u64() == Some(0) || x.as_f64() == Some(0.0)))
        .map(|(k, x)| format!("{k} {x}"))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}
