//! Judging one scenario (pure): the checks that make its numbers trustworthy (every
//! message accounted for, every client connected, every round published, the load
//! generator not saturated, a clean exit with no process or port left), and the notes that
//! say what the numbers show next to the seed's.
use super::account::{identity_gap, Tally};
use super::model::{ClusterScenario, GhostSeries};
use super::Kind;
use crate::bench::model::Check;
use crate::bench::validity::LOADGEN_CPU_LIMIT;
use crate::findings::Status;
use std::net::SocketAddr;

/// What one scenario measured.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub kind: Kind,
    pub nodes: u64,
    pub tally: Tally,
    /// Clients connected before publishing began.
    pub connected: u64,
    pub connect_errors: Vec<String>,
    /// Rounds node a says it published, and the rounds asked for.
    pub published: u64,
    pub rounds: u64,
    /// Rounds node a could not publish (Redis down): its rtcheck_redis_publish_failures_total.
    pub publish_failures: u64,
    /// This process's CPU seconds (the clients) over the run's wall time, and the cores.
    pub cpu_s: f64,
    pub wall_s: f64,
    pub cores: u64,
    /// Every node still running left on SIGTERM.
    pub nodes_clean: bool,
    /// Node addresses still accepting connections after the stop.
    pub leftover: Vec<SocketAddr>,
    pub ghosts: Vec<GhostSeries>,
    /// What happened during the run, said by the runner (kill time, outage length).
    pub events: Vec<String>,
    /// Why the scenario could not run as designed (e.g. redis-restart on the user's Redis).
    pub refused: Option<String>,
    pub presence_ttl_s: f64,
}

fn check(name: &str, ok: bool, detail: String) -> Check {
    Check {
        name: name.into(),
        status: if ok { Status::Pass } else { Status::Fail },
        detail,
    }
}

/// A check that measured nothing: skipped, never a pass on nothing.
fn skipped(name: &str, detail: &str) -> Check {
    Check {
        name: name.into(),
        status: Status::Skip,
        detail: detail.into(),
    }
}

/// Nothing arrived at any client: there is no seq to check and no latency.
const NOTHING: &str = "no message arrived at any client: nothing to check";

/// Every check of one scenario, by family: what arrived, the load generator, the seqs,
/// the restart (deploy-restart), the cleanup, and whether the scenario ran as designed.
pub fn checks(inp: &Inputs) -> Vec<Check> {
    let mut v = arrivals(inp);
    v.push(loadgen_cpu(inp));
    v.push(seqs(inp));
    if inp.kind == Kind::DeployRestart {
        v.extend(restart_checks(inp));
    }
    v.push(cleanup(inp));
    if let Some(why) = &inp.refused {
        v.push(check("scenario ran", false, why.clone()));
    }
    v
}

/// Samples received, every client connected, every round published, every sample
/// accounted for.
fn arrivals(inp: &Inputs) -> Vec<Check> {
    let t = &inp.tally;
    vec![
        check(
            "samples received",
            t.counts.received > 0,
            format!("{} message(s) received", t.counts.received),
        ),
        check(
            "clients connected",
            inp.connected == t.clients,
            format!(
                "{} of {} before publishing began{}",
                inp.connected,
                t.clients,
                match inp.connect_errors.first() {
                    Some(e) => format!(" ({e})"),
                    None => String::new(),
                }
            ),
        ),
        check(
            "rounds published",
            inp.published + inp.publish_failures >= inp.rounds,
            format!(
                "node a published {} of {} rounds{}",
                inp.published.min(inp.rounds),
                inp.rounds,
                match inp.publish_failures {
                    0 => String::new(),
                    n => format!(" and counted {n} it could not publish"),
                }
            ),
        ),
        match identity_gap(t) {
            None => check(
                "samples accounted",
                true,
                format!(
                    "{} expected = {} received once + {} lost ({} gap-reported); {} received = first copies + {} duplicates + {} outside the span",
                    t.expected, t.unique_in_span, t.counts.lost, t.counts.gaps,
                    t.counts.received, t.counts.duplicated, t.outside_span
                ),
            ),
            Some(g) => check("samples accounted", false, format!("does not add up: {g}")),
        },
    ]
}

/// The clients' CPU share of the cores under the limit; skipped when there was no wall
/// time or no core count to measure it against.
fn loadgen_cpu(inp: &Inputs) -> Check {
    let measured = inp.wall_s > 0.0 && inp.cores > 0;
    let share = match measured {
        true => inp.cpu_s / (inp.wall_s * inp.cores as f64),
        false => 0.0,
    };
    Check {
        name: "load generator CPU".into(),
        status: match (measured, share < LOADGEN_CPU_LIMIT) {
            (false, _) => Status::Skip,
            (true, true) => Status::Pass,
            (true, false) => Status::Fail,
        },
        detail: format!(
            "{:.1} CPU s over {:.1} s on {} cores = {:.0}% (limit {:.0}%)",
            inp.cpu_s,
            inp.wall_s,
            inp.cores,
            share * 100.0,
            LOADGEN_CPU_LIMIT * 100.0
        ),
    }
}

/// No client got two different rounds under one seq (skipped when nothing arrived).
fn seqs(inp: &Inputs) -> Check {
    let t = &inp.tally;
    match t.counts.received > 0 {
        false => skipped("one round per seq", NOTHING),
        true => check(
            "one round per seq",
            t.seq_conflicts == 0,
            match t.seq_conflicts {
                0 => "no client got two different rounds under one seq".into(),
                n => format!("{n} arrival(s) under a seq their client already had from another round: seqs reused"),
            },
        ),
    }
}

/// Redis and the publisher restarted together: a new epoch; every client must be told by
/// a reset marker and lose nothing silently (a relay that took the new seqs as already
/// delivered dropped ~200 rounds per client without a word).
fn restart_checks(inp: &Inputs) -> Vec<Check> {
    let t = &inp.tally;
    if t.counts.received == 0 {
        return ["every client told of the reset", "nothing lost silently"]
            .map(|n| skipped(n, NOTHING))
            .to_vec();
    }
    vec![
        check(
            "every client told of the reset",
            t.told == t.clients,
            format!("{} of {} client(s) got a reset marker", t.told, t.clients),
        ),
        check(
            "nothing lost silently",
            t.counts.lost_silently == 0,
            format!(
                "{} lost silently; {} lost in all ({} announced by gap or reset markers)",
                t.counts.lost_silently, t.counts.lost, t.counts.gaps
            ),
        ),
    ]
}

fn cleanup(inp: &Inputs) -> Check {
    if !inp.leftover.is_empty() {
        let list: Vec<String> = inp.leftover.iter().map(|a| a.to_string()).collect();
        return check(
            "cleanup",
            false,
            format!("still listening after the stop: {}", list.join(", ")),
        );
    }
    Check {
        name: "cleanup".into(),
        status: if inp.nodes_clean {
            Status::Pass
        } else {
            Status::Warn
        },
        detail: if inp.nodes_clean {
            "every node left on SIGTERM; no node port left open".into()
        } else {
            "a node had to be killed (SIGKILL); no node port left open".into()
        },
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// What the numbers show, next to the seed's.
pub fn notes(inp: &Inputs) -> Vec<String> {
    let t = &inp.tally;
    let mut v = inp.events.clone();
    let dups = t.counts.duplicated;
    match inp.kind {
        Kind::Naive => {
            let a_dups = t.duplicates_by_node.get("a").copied().unwrap_or(0);
            let a_recv = t.received_by_node.get("a").copied().unwrap_or(0);
            v.push(format!(
                "demonstration: node a delivered {:.0}% duplicates ({a_dups} of {a_recv} messages its clients received); the other nodes {} (the article measured 50% on the publishing node)",
                pct(a_dups, a_recv),
                match dups - a_dups {
                    0 => "none".to_string(),
                    n => format!("{n}"),
                }
            ));
        }
        Kind::OnePath | Kind::NodeKill | Kind::RedisRestart | Kind::DeployRestart if dups == 0 => {
            v.push("one path: 0 duplicates".into())
        }
        Kind::OnePath | Kind::NodeKill | Kind::RedisRestart | Kind::DeployRestart => {
            v.push(format!(
                "{dups} duplicates ({} clients; by node: {}) on the one-path cluster",
                t.clients_with_duplicates,
                by_node(&t.duplicates_by_node)
            ))
        }
        Kind::Single => {}
    }
    if matches!(
        inp.kind,
        Kind::NodeKill | Kind::RedisRestart | Kind::DeployRestart
    ) || t.counts.lost > 0
    {
        v.push(format!(
            "lost {} of {} ({} gap-reported, {} silently); {} reconnects",
            t.counts.lost, t.expected, t.counts.gaps, t.counts.lost_silently, t.reconnects
        ));
    }
    if inp.publish_failures > 0 {
        v.push(format!(
            "{} round(s) scheduled while Redis was down were never published (node a counts them in rtcheck_redis_publish_failures_total; once Redis was back their seqs were reserved and every client got them as a gap marker)",
            inp.publish_failures
        ));
    }
    if t.span.1 > t.max_seen && t.max_seen > 0 {
        v.push(format!(
            "node a published {} rounds but no client ever saw a seq above {}: {} published round(s) reached nobody and no gap marker named them",
            inp.published.min(inp.rounds),
            t.max_seen,
            t.span.1 - t.max_seen
        ));
    }
    match t.order_hash_agree {
        Some(false) => v.push(format!(
            "{} different orders among the clients: not one history",
            t.distinct_orders
        )),
        Some(true) if inp.nodes > 1 => {
            v.push("every client saw one order (order hashes agree across nodes)".into())
        }
        _ => {}
    }
    for g in &inp.ghosts {
        v.push(ghost_note(g, inp.presence_ttl_s));
    }
    v
}

fn by_node(m: &std::collections::BTreeMap<String, u64>) -> String {
    let v: Vec<String> = m.iter().map(|(n, c)| format!("{n} {c}")).collect();
    v.join(", ")
}

fn ghost_note(g: &GhostSeries, ttl_s: f64) -> String {
    let last = g.samples.last();
    let peak = g.samples.iter().map(|s| s.ghosts).max().unwrap_or(0);
    match (g.cleared_after_s, last) {
        (_, None) => format!("presence {}: /presence never answered", g.presence),
        (Some(t), _) => format!(
            "presence {}: up to {peak} ghosts, 0 after {t:.1} s (TTL {ttl_s:.0} s; the article: corrected after 3 s)",
            g.presence
        ),
        (None, Some(l)) => format!(
            "presence {}: {} ghosts still there {:.1} s after the kill (the article: ghosts forever with join/leave events)",
            g.presence, l.ghosts, l.t_s
        ),
    }
}

/// The scenario's row: numbers withheld when a check failed.
pub fn analyze(name: &str, description: &str, inp: Inputs, duration_s: f64) -> ClusterScenario {
    let checks = checks(&inp);
    let valid = checks.iter().all(|c| c.status != Status::Fail);
    let mut notes = notes(&inp);
    if !valid {
        notes.insert(0, "invalid: numbers withheld (see the failed check)".into());
    }
    let t = &inp.tally;
    let q = |v: f64| (valid && t.latency.count > 0).then_some(v);
    ClusterScenario {
        name: name.into(),
        description: description.into(),
        nodes: inp.nodes,
        p50_ms: q(t.latency.p50_ms),
        p99_ms: q(t.latency.p99_ms),
        p999_ms: q(t.latency.p999_ms),
        delta_p50_ms: None,
        delta_p99_ms: None,
        received: t.counts.received,
        lost: t.counts.lost,
        lost_silently: t.counts.lost_silently,
        gap_reported: t.counts.gaps,
        duplicates: t.counts.duplicated,
        duplicates_by_node: t.duplicates_by_node.clone(),
        clients_with_duplicates: t.clients_with_duplicates,
        order_hash_agree: t.order_hash_agree,
        ghosts: inp.ghosts.clone(),
        clients: t.clients,
        published: inp.published,
        unpublished: inp.publish_failures,
        first_seq: t.span.0,
        last_seq: t.span.1,
        max_seq_seen: t.max_seen,
        expected: t.expected,
        reconnects: t.reconnects,
        resets: t.told,
        seq_conflicts: t.seq_conflicts,
        client_cpu_s: inp.cpu_s,
        duration_s,
        valid,
        notes,
        checks,
    }
}

/// Each cluster row against a valid `single` of the same run: the latency Redis adds.
pub fn apply_single_delta(rows: &mut [ClusterScenario]) {
    let Some(base) = rows
        .iter()
        .find(|r| r.name == Kind::Single.name() && r.valid)
        .cloned()
    else {
        return;
    };
    for r in rows.iter_mut().filter(|r| r.name != base.name) {
        let d = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
        r.delta_p50_ms = d(r.p50_ms, base.p50_ms);
        r.delta_p99_ms = d(r.p99_ms, base.p99_ms);
        if let (Some(p50), Some(p99)) = (r.delta_p50_ms, r.delta_p99_ms) {
            let seed = |name| crate::evidence::fmt_num(crate::evidence::num("redis-pubsub", name));
            r.notes.push(format!(
                "over single: {p50:+.1} ms p50, {p99:+.1} ms p99 (the article, Redis pub/sub: +{} ms p50, +{} ms p99)",
                seed("p50_added"),
                seed("p99_added")
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::account::{tally, ClientLog};
    use super::*;
    use crate::bench::cluster::account::Arrival;

    fn client(node: usize, seqs: &[u64]) -> ClientLog {
        ClientLog {
            home: node,
            arrivals: seqs
                .iter()
                .map(|&seq| Arrival {
                    seq,
                    sched_ns: 0,
                    recv_ns: 1_000_000,
                    node,
                })
                .collect(),
            connected: true,
            ..Default::default()
        }
    }

    fn inputs(kind: Kind, clients: &[ClientLog]) -> Inputs {
        let names: Vec<String> = ["a", "b"].map(String::from).to_vec();
        Inputs {
            kind,
            nodes: 2,
            tally: tally(clients, (1, 3), &names),
            connected: clients.len() as u64,
            connect_errors: vec![],
            published: 3,
            rounds: 3,
            publish_failures: 0,
            cpu_s: 0.5,
            wall_s: 2.0,
            cores: 2,
            nodes_clean: true,
            leftover: vec![],
            ghosts: vec![],
            events: vec![],
            refused: None,
            presence_ttl_s: 3.0,
        }
    }

    #[test]
    fn naive_note_names_the_share_on_the_publishing_node() {
        let c = [client(0, &[1, 1, 2, 2, 3, 3]), client(1, &[1, 2, 3])];
        let r = analyze("naive", "d", inputs(Kind::Naive, &c), 1.0);
        assert!(r.valid, "{:?}", r.checks);
        assert_eq!(r.duplicates, 3);
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("node a delivered 50% duplicates")
                    && n.contains("other nodes none")),
            "{:?}",
            r.notes
        );
        assert_eq!(r.p50_ms, Some(1.0));
    }

    /// The load generator's CPU check: under the limit passes, over it fails, no wall
    /// time skips; the checks keep their order whatever the family.
    #[test]
    fn the_cpu_check_is_decided_where_it_is_built() {
        let c = [client(0, &[1, 2, 3]), client(1, &[1, 2, 3])];
        let mut i = inputs(Kind::OnePath, &c);
        assert_eq!(loadgen_cpu(&i).status, Status::Pass);
        i.cpu_s = 2.0 * 2.0 * LOADGEN_CPU_LIMIT;
        assert_eq!(loadgen_cpu(&i).status, Status::Fail);
        i.cores = 0;
        assert_eq!(loadgen_cpu(&i).status, Status::Skip);
        let names: Vec<String> = checks(&inputs(Kind::DeployRestart, &c))
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(
            names,
            [
                "samples received",
                "clients connected",
                "rounds published",
                "samples accounted",
                "load generator CPU",
                "one round per seq",
                "every client told of the reset",
                "nothing lost silently",
                "cleanup",
            ]
        );
    }

    /// Nothing passes on nothing: clients that received no message make the run
    /// invalid, and the seq checks and the CPU share that measured nothing are skipped.
    #[test]
    fn a_run_where_nothing_arrived_is_invalid_and_passes_nothing_on_it() {
        let c = [client(0, &[]), client(1, &[])];
        let mut i = inputs(Kind::DeployRestart, &c);
        i.wall_s = 0.0;
        let r = analyze("deploy-restart", "d", i, 1.0);
        assert!(!r.valid, "{:?}", r.checks);
        let status = |n: &str| r.checks.iter().find(|c| c.name == n).unwrap().status;
        assert_eq!(status("samples received"), Status::Fail);
        for n in [
            "one round per seq",
            "load generator CPU",
            "every client told of the reset",
            "nothing lost silently",
        ] {
            assert_eq!(status(n), Status::Skip, "{n}: {:?}", r.checks);
        }
        // Arrivals: the same checks are measured again.
        let c = [client(0, &[1, 2, 3]), client(1, &[1, 2, 3])];
        let r = analyze("one-path", "d", inputs(Kind::OnePath, &c), 1.0);
        assert_eq!(
            r.checks
                .iter()
                .find(|c| c.name == "one round per seq")
                .unwrap()
                .status,
            Status::Pass
        );
    }

    #[test]
    fn failed_checks_withhold_numbers() {
        let c = [client(0, &[1, 2, 3]), client(1, &[1, 2, 3])];
        let mut i = inputs(Kind::OnePath, &c);
        i.cpu_s = 3.9; // 97% of 2 cores
        let r = analyze("one-path", "d", i, 1.0);
        assert!(!r.valid && r.p50_ms.is_none());
        let mut i = inputs(Kind::OnePath, &c);
        i.leftover = vec!["127.0.0.1:9".parse().unwrap()];
        let r = analyze("one-path", "d", i, 1.0);
        assert!(r
            .checks
            .iter()
            .any(|c| c.name == "cleanup" && c.status == Status::Fail));
        let mut i = inputs(Kind::RedisRestart, &c);
        i.refused = Some("needs the Redis rtcheck starts".into());
        assert!(!analyze("redis-restart", "d", i, 1.0).valid);
        let mut i = inputs(Kind::OnePath, &c);
        i.published = 2;
        assert!(!analyze("one-path", "d", i.clone(), 1.0).valid);
        i.publish_failures = 1;
        let r = analyze("one-path", "d", i, 1.0);
        assert!(
            r.valid,
            "an unpublished round the publisher counted is accounted for"
        );
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("1 round(s) scheduled while Redis was down")));
    }

    #[test]
    fn delta_against_single_and_ghost_notes() {
        let c = [client(0, &[1, 2, 3]), client(1, &[1, 2, 3])];
        let mut rows = vec![
            analyze("single", "d", inputs(Kind::Single, &c), 1.0),
            analyze("one-path", "d", inputs(Kind::OnePath, &c), 1.0),
        ];
        rows[1].p50_ms = Some(1.5);
        apply_single_delta(&mut rows);
        assert_eq!(rows[1].delta_p50_ms, Some(0.5));
        assert!(rows[1].notes.iter().any(|n| n.contains("+0.5 ms p50")));
        use crate::bench::cluster::model::GhostSample;
        let s = |t_s, ghosts| GhostSample {
            t_s,
            online: 10 + ghosts,
            connected: 10,
            ghosts,
        };
        let ttl = GhostSeries {
            presence: "ttl".into(),
            samples: vec![s(0.1, 5), s(3.5, 0)],
            cleared_after_s: Some(3.5),
        };
        assert!(ghost_note(&ttl, 3.0).contains("0 after 3.5 s"));
        let ev = GhostSeries {
            presence: "events".into(),
            samples: vec![s(6.0, 5)],
            cleared_after_s: None,
        };
        assert!(ghost_note(&ev, 3.0).contains("5 ghosts still there 6.0 s"));
    }
}
