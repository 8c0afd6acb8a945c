//! The four-question framework (REFERENCE section 1) as a pure function:
//! `decide(&Profile) -> Recommendation`. No I/O here; prompts and flags live elsewhere.
use super::reason::Reason;
use super::sizing::{self, Sizing};
use crate::evidence::EvidenceRef;
use crate::evidence::{self, fmt_num};
use crate::profile::{Loss, Profile, Upstream};
use rtcheck_base::units::fmt_duration;
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::transport::Transport;
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub const Q1: &str = "How often does the data change, and how soon must the user see it?";
pub const Q2: &str = "Is the upstream (client to server) dense, or is it binary?";
pub const Q3: &str = "What happens if one message is lost?";
pub const Q4: &str = "How many connections, on how many machines?";

/// Said wherever pub/sub meets a replay design (seq-ring, session-ack): the series
/// measured replay on one node only (REFERENCE "not measured": Redis Streams).
pub const CROSS_NODE_REPLAY_NOTE: &str = "Replay across nodes (a client reconnecting to another node with its last sequence number) was not measured by the series; plan it (e.g. Redis Streams) and measure it on your nodes: `rtcheck bench cluster --scenario node-kill` kills a node and counts what its clients lose, get as a gap or twice after resuming on another.";

/// Below this, only push meets the freshness target.
pub const PUSH_ONLY_BELOW: Duration = Duration::from_secs(1);
/// From this up, polling is recommended (push below).
pub const POLLING_FROM: Duration = Duration::from_secs(5);
/// From this up, polling only (no comparison shown).
pub const POLLING_ONLY_FROM: Duration = Duration::from_secs(60);
/// One process is enough and cheap below this many connections per machine ("Polling, SSE or WebSocket: four questions and an ops checklist").
pub const ONE_PROCESS_LIMIT: u64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    SingleProcess,
    Pubsub,
}

impl Topology {
    pub fn as_str(self) -> &'static str {
        match self {
            Topology::SingleProcess => "single-process",
            Topology::Pubsub => "pubsub",
        }
    }
}

/// Q1 in the 1 s .. 60 s zone: both options with their costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alternative {
    /// "polling" or the push transport Q2 picks ("sse" / "websocket").
    pub transport: Transport,
    pub label: String,
    pub recommended: bool,
    /// Median delay from change to client: about half the poll interval, or 0.3 ms pushed.
    pub delivery_p50_ms: f64,
    /// Bytes per client-minute with nothing new to deliver.
    pub idle_bytes_per_client_minute: u64,
    /// HTTP requests per second on the servers (connections / interval; 0 for push).
    pub requests_per_s: f64,
    /// Long-lived connections held open.
    pub open_connections: u64,
    pub evidence: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MustHave {
    pub id: String,
    pub title: String,
    pub applies: bool,
    pub why: String,
    /// Why it does not apply (polling), when `applies` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
    pub evidence: Vec<EvidenceRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    pub transport: Transport,
    pub delivery: Delivery,
    pub topology: Topology,
    /// Poll interval when transport is polling (milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    pub reasons: Vec<Reason>,
    /// Q1 between 1 s and 60 s: polling and push side by side.
    pub alternatives: Vec<Alternative>,
    pub sizing: Sizing,
    pub must_haves: Vec<MustHave>,
    pub notes: Vec<String>,
    /// Profile fields left at their defaults (filled by the caller, which knows what was given).
    #[serde(default)]
    pub defaulted: Vec<String>,
    /// The full profile used, with `transport` set to the recommendation.
    pub profile: Profile,
    /// `choose --verify`: the recommended delivery measured live (`verify delivery`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<crate::findings::Finding>,
    /// The declared path's timeout chain (profile `path:`, `--path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<crate::hops::chain::Chain>,
}

/// The required answers still missing, as YAML key names.
pub fn missing_answers(p: &Profile) -> Vec<&'static str> {
    let mut m = Vec::new();
    if p.visible_within.is_none() {
        m.push("visible_within");
    }
    if p.upstream.is_none() && !p.binary {
        m.push("upstream");
    }
    if p.loss.is_none() {
        m.push("loss");
    }
    m
}

/// Must-haves that only concern long-lived connections, and why.
fn not_for_polling(id: &str) -> Option<&'static str> {
    match id {
        "write-deadline" => Some("polling has no hub writing to many long-lived connections; an ordinary HTTP write timeout is enough"),
        "writer-isolation" => Some("polling answers each request on its own; there is no shared writer to isolate"),
        "ping-pong" => Some("polling holds no long-lived connection, so there is no silent peer to detect"),
        "proxy-config" => Some("polling is plain request/response: no Upgrade, no streaming through the proxy"),
        _ => None,
    }
}

fn q1_push_transport(p: &Profile) -> Transport {
    if p.binary || p.upstream == Some(Upstream::Dense) {
        Transport::Websocket
    } else {
        Transport::Sse
    }
}

/// Milliseconds as the articles print them: `486 ms`, `2.3 s`.
pub fn fmt_ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{} s", fmt_num(v / 1000.0))
    } else {
        format!("{} ms", fmt_num(v))
    }
}

/// Walk the four questions. Errors only when a required answer is missing.
pub fn decide(p: &Profile) -> Result<Recommendation, String> {
    let missing = missing_answers(p);
    if !missing.is_empty() {
        return Err(format!("missing answers: {}", missing.join(", ")));
    }
    let visible = p.visible_within.expect("checked above");
    let loss = p.loss.expect("checked above");

    // Q1: freshness decides push or polling.
    let push = visible < POLLING_FROM;
    let push_transport = q1_push_transport(p);
    let answered = if push {
        push_transport
    } else {
        Transport::Polling
    };
    // The declared path may exclude the answered transport (SSE through Azure Front Door).
    let path = super::path::decide_path(p, answered)?;
    let transport = path.as_ref().map_or(answered, |d| d.transport);
    let q1 = q1(visible, push);
    let alternatives = if visible >= PUSH_ONLY_BELOW && visible < POLLING_ONLY_FROM {
        compare(p, visible, push_transport, push)
    } else {
        Vec::new()
    };
    let mut notes = Vec::new();
    let q2 = q2(p, transport, push_transport, &mut notes);
    let (delivery, q3) = q3(loss);
    let (topology, q4) = q4(p);
    notes.extend(shape_notes(p, transport, delivery, topology));
    let mut reasons = vec![q1, q2, q3, q4];
    let chain = path.map(|d| {
        reasons.push(d.reason);
        notes.extend(d.notes);
        d.chain
    });

    let sizing = sizing::size(p);
    if delivery == Delivery::SessionAck && sizing.durable_inbox {
        let inbox = inbox_note(p, &sizing);
        if let Some(q3) = reasons.iter_mut().find(|q| q.id == "q3") {
            q3.detail.push(' ');
            q3.detail.push_str(&inbox);
        }
    }
    let mut profile = p.clone();
    profile.transport = Some(transport);
    Ok(Recommendation {
        transport,
        delivery,
        topology,
        poll_interval_ms: (transport == Transport::Polling).then_some(visible.as_millis() as u64),
        reasons,
        alternatives,
        sizing,
        must_haves: must_haves(transport),
        notes,
        defaulted: Vec::new(),
        profile,
        findings: Vec::new(),
        chain,
    })
}

/// Per-user data past the memory budget: the arithmetic, and where it goes instead.
fn inbox_note(p: &Profile, z: &Sizing) -> String {
    let fig = |key: &str, b: u64| sizing::fmt_figure(b, z.is_saturated(key));
    format!(
        "Held in memory, {} sessions per machine x {} each ({} messages of {} B) = {}, past the {} budget per machine (rtcheck serve's default for sessions): keep each user's messages in a durable inbox instead, a database table (user, seq, payload) or a stream per user, written before the push and fetched on reconnect from the last acked seq; memory holds only what is in flight.",
        fmt_num(z.connections_per_machine as f64),
        fig("session_bytes_per_client", z.session_bytes_per_client),
        fmt_num(z.messages_to_replay as f64),
        fmt_num(p.size as f64),
        fig("sessions_per_machine_bytes", z.sessions_per_machine_bytes),
        sizing::fmt_budget(z.session_budget_bytes)
    )
}

/// Q1: how soon the user must see a change decides push or polling.
fn q1(visible: Duration, push: bool) -> Reason {
    let poll_1s = evidence::num("poll-1s", "delivery_p50");
    let poll_5s = evidence::num("poll-5s", "delivery_p50");
    let vis = fmt_duration(visible);
    let (q1_decision, q1_detail) = if visible < PUSH_ONLY_BELOW {
        (
            "push".to_string(),
            format!(
                "Under 1 s only a long-lived connection keeps up: SSE and WebSocket delivered in {} ms, while polling every second already had a median delay of {} ms. SSE or WebSocket is decided by Q2.",
                fmt_num(evidence::num("push-latency", "delivery_ms")),
                fmt_num(poll_1s)
            ),
        )
    } else if push {
        (
            "push".to_string(),
            format!(
                "Between 1 s and 5 s polling is possible but costs a request per client per interval and half an interval of delay (measured {} at 1 s, {} at 5 s); push is recommended below 5 s. Both options are compared below.",
                fmt_ms(poll_1s),
                fmt_ms(poll_5s)
            ),
        )
    } else if visible < POLLING_ONLY_FROM {
        (
            format!("polling every {vis}"),
            format!(
                "From 5 s up polling is recommended: no long connection, no heartbeat, no reconnect, and it passes every proxy and cache; the median delay is about half the interval (measured {} at 5 s). Push is compared below.",
                fmt_ms(poll_5s)
            ),
        )
    } else {
        (
            format!("polling every {vis}"),
            "Minutes, not instant: polling needs no long connection, no heartbeat and no reconnect, and passes every proxy and cache.".to_string(),
        )
    };
    Reason {
        id: "q1".into(),
        question: Q1.into(),
        answer: format!("visible within {vis}"),
        decision: q1_decision,
        detail: q1_detail,
        evidence: vec![
            evidence::reference("poll-1s"),
            evidence::reference("poll-5s"),
            evidence::reference("push-latency"),
        ],
    }
}

/// Q2: upstream and binary decide SSE or WebSocket (or how upstream travels with polling).
/// A caveat for the reader goes to `notes`.
fn q2(
    p: &Profile,
    transport: Transport,
    push_transport: Transport,
    notes: &mut Vec<String>,
) -> Reason {
    let up = match p.upstream {
        Some(Upstream::None) => "upstream none",
        Some(Upstream::Sparse) => "upstream sparse",
        Some(Upstream::Dense) => "upstream dense",
        None => "upstream not given",
    };
    let q2_answer = format!("{up}, {}", if p.binary { "binary" } else { "text" });
    let post_ms = fmt_num(evidence::num("post-upstream", "post_ms"));
    let echo_ms = fmt_num(evidence::num("post-upstream", "ws_echo_ms"));
    match (transport, push_transport) {
        (Transport::Polling, _) => {
            let how = match (p.upstream, p.binary) {
                (_, true) | (Some(Upstream::Dense), _) => {
                    notes.push("Dense or binary upstream with polling: every client action is its own POST; if the upstream is interactive (chat, game), reconsider Q1.".into());
                    "POST requests (binary bodies / batched)"
                }
                (Some(Upstream::Sparse), _) => "ordinary POST requests",
                _ => "nothing (download only)",
            };
            Reason {
                id: "q2".into(),
                question: Q2.into(),
                answer: q2_answer,
                decision: format!("upstream via {how}"),
                detail: format!(
                    "With polling Q2 only decides how upstream travels; a POST cost {post_ms} ms against {echo_ms} ms for a WebSocket echo."
                ),
                evidence: vec![evidence::reference("post-upstream")],
            }
        }
        (_, Transport::Websocket) => Reason {
            id: "q2".into(),
            question: Q2.into(),
            answer: q2_answer,
            decision: "websocket".into(),
            detail: format!(
                "Dense or binary upstream: both directions on one connection with {}-{} bytes of framing per message; upstream over POST would cost {post_ms} ms instead of {echo_ms} ms per message.",
                fmt_num(evidence::num("ws-framing", "framing_min")),
                fmt_num(evidence::num("ws-framing", "framing_max"))
            ),
            evidence: vec![
                evidence::reference("ws-framing"),
                evidence::reference("post-upstream"),
            ],
        },
        _ => Reason {
            id: "q2".into(),
            question: Q2.into(),
            answer: q2_answer,
            decision: "sse".into(),
            detail: format!(
                "SSE is enough and removes the reconnect code (EventSource resumes with Last-Event-ID); sparse upstream goes as POST ({post_ms} ms vs {echo_ms} ms). Conditions: HTTP/2 at the edge (browsers allow {} HTTP/1.1 connections per host) and buffering off on every proxy.",
                fmt_num(evidence::num("sse-conditions", "browser_h1_per_host"))
            ),
            evidence: vec![
                evidence::reference("sse-conditions"),
                evidence::reference("post-upstream"),
                evidence::reference("proxy-config"),
            ],
        },
    }
}

/// Q3: what losing a message means decides the application protocol.
fn q3(loss: Loss) -> (Delivery, Reason) {
    let (delivery, q3_answer, q3_detail, q3_evidence) = match loss {
        Loss::Replaceable => (
            Delivery::Snapshot,
            "replaceable: newer replaces older",
            format!(
                "No sequence numbers needed: send a full snapshot on (re)connect. A write never proves delivery ({} events were written into a dead connection), so the snapshot is what resynchronises the client.",
                fmt_num(evidence::num("kernel-sndbuf", "events_written_dead"))
            ),
            vec![evidence::reference("kernel-sndbuf")],
        ),
        Loss::Shared => (
            Delivery::SeqRing,
            "shared: must not lose, everyone sees the same stream",
            format!(
                "Sequence numbers in the payload, a ring buffer shared by all clients, and a GAP marker when a client fell further behind than the ring: a {} ring lost 0 events after a {} s disconnect; without seq {} events vanished silently.",
                rtcheck_base::units::fmt_bytes(evidence::num("ring-buffer", "ring_bytes") as u64),
                fmt_num(evidence::num("ring-buffer", "disconnect")),
                fmt_num(evidence::num("seq-numbers", "lost_silently"))
            ),
            vec![
                evidence::reference("ring-buffer"),
                evidence::reference("ring-sizing"),
                evidence::reference("seq-numbers"),
            ],
        ),
        Loss::PerUser => (
            Delivery::SessionAck,
            "per-user: must not lose, data is per user",
            format!(
                "A session per user with acks, dedup on the client and a TTL: sessions held {} per client per {} s of disconnect with {} duplicates to filter, and 10,000 disconnected clients held {}.",
                rtcheck_base::units::fmt_bytes(evidence::num("session-ack", "bytes_per_client") as u64),
                fmt_num(evidence::num("session-ack", "disconnect")),
                fmt_num(evidence::num("session-ack", "duplicates")),
                rtcheck_base::units::fmt_bytes(evidence::num("session-expiry", "bytes") as u64)
            ),
            vec![
                evidence::reference("session-ack"),
                evidence::reference("session-expiry"),
                evidence::reference("loss-dup-order"),
            ],
        ),
    };
    let q3 = Reason {
        id: "q3".into(),
        question: Q3.into(),
        answer: q3_answer.into(),
        decision: delivery.name().into(),
        detail: q3_detail,
        evidence: q3_evidence,
    };
    (delivery, q3)
}

/// Q4: machines decide one process or a meeting point.
/// One process's memory: the profile's measured figure when `bench idle --server --save`
/// wrote one, else the seed's reference host, said as such.
fn single_process_detail(p: &Profile) -> String {
    match p.memory_per_connection.as_ref().and_then(|m| m.sizing()) {
        Some((b, variant)) => format!(
            "One process on one machine is enough and cheap: {} per connection ({variant}, measured on your server by rtcheck bench idle --server), {} for 10,000.",
            rtcheck_base::units::fmt_bytes(b),
            rtcheck_base::units::fmt_bytes(b.saturating_mul(10_000))
        ),
        None => format!(
            "One process on one machine is enough and cheap: {} of RSS per idle connection, {} for 10,000 (the seed's reference host, not your server).",
            rtcheck_base::units::fmt_bytes(evidence::num("conn-ram", "rss_per_conn") as u64),
            rtcheck_base::units::fmt_bytes(evidence::num("conn-ram", "rss_10k") as u64)
        ),
    }
}

fn q4(p: &Profile) -> (Topology, Reason) {
    let cpm = p.connections_per_machine();
    let q4_answer = format!(
        "{} connections on {} machine{} ({} per machine)",
        fmt_num(p.connections as f64),
        p.machines,
        if p.machines == 1 { "" } else { "s" },
        fmt_num(cpm as f64)
    );
    if p.machines <= 1 {
        (
            Topology::SingleProcess,
            Reason {
                id: "q4".into(),
                question: Q4.into(),
                answer: q4_answer,
                decision: "single-process".into(),
                detail: single_process_detail(p),
                evidence: vec![
                    evidence::reference("conn-ram"),
                    evidence::reference("fds-goroutines"),
                ],
            },
        )
    } else {
        (
            Topology::Pubsub,
            Reason {
                id: "q4".into(),
                question: Q4.into(),
                answer: q4_answer,
                decision: "pubsub".into(),
                detail: format!(
                    "Several machines need a meeting point, usually Redis pub/sub (+{} ms p50, +{} ms p99). Every event takes one path, also back to the publishing node (otherwise {}% duplicates), and presence is an alive key with a TTL, not join/leave events.",
                    fmt_num(evidence::num("redis-pubsub", "p50_added")),
                    fmt_num(evidence::num("redis-pubsub", "p99_added")),
                    fmt_num(evidence::num("single-path", "duplicates"))
                ),
                evidence: vec![
                    evidence::reference("redis-pubsub"),
                    evidence::reference("single-path"),
                    evidence::reference("presence-ttl"),
                ],
            },
        )
    }
}

/// Notes on the shape of the deployment: scale beyond what was measured, polling with a
/// meeting point, replay across nodes (not measured), a transport the profile gave that the
/// answers now contradict.
fn shape_notes(
    p: &Profile,
    transport: Transport,
    delivery: Delivery,
    topology: Topology,
) -> Vec<String> {
    let cpm = p.connections_per_machine();
    let mut notes = Vec::new();
    if cpm > ONE_PROCESS_LIMIT && transport != Transport::Polling {
        notes.push(format!(
            "{} connections per machine is above the 10,000 the series measured on one machine; check the host with `rtcheck audit` (open files, RAM, ports).",
            fmt_num(cpm as f64)
        ));
    }
    if topology == Topology::Pubsub && delivery != Delivery::Snapshot {
        notes.push(CROSS_NODE_REPLAY_NOTE.into());
    }
    if transport == Transport::Polling && topology == Topology::Pubsub {
        notes.push("With polling the meeting point can be the store the polls read from; each event still takes one path.".into());
    }
    if let Some(given) = p.transport {
        if given != transport {
            notes.push(format!(
                "The profile said transport {}; the answers now give {}.",
                given.name(),
                transport.name()
            ));
        }
    }
    notes
}

/// The checklist's must-haves, with the long-connection ones marked not applicable to polling.
fn must_haves(transport: Transport) -> Vec<MustHave> {
    crate::checklist::must_haves()
        .into_iter()
        .map(|item| {
            let na = (transport == Transport::Polling)
                .then(|| not_for_polling(&item.id))
                .flatten();
            MustHave {
                id: item.id.clone(),
                title: item.title.clone(),
                applies: na.is_none(),
                why: item.why.clone(),
                not_applicable: na.map(String::from),
                evidence: item.evidence_refs(),
            }
        })
        .collect()
}

/// Polling at the freshness interval vs push, with the costs the articles measured.
fn compare(p: &Profile, visible: Duration, push: Transport, push_wins: bool) -> Vec<Alternative> {
    let secs = visible.as_secs_f64();
    // Idle polling cost scales with requests per minute: 8.4 KB/min at one request per second.
    let idle_1s = evidence::num("poll-1s", "idle_bytes_per_min");
    let push_idle = if push == Transport::Websocket {
        evidence::num("push-latency", "ws_idle_bytes_per_min")
    } else {
        evidence::num("push-latency", "sse_idle_bytes_per_min")
    };
    vec![
        Alternative {
            transport: Transport::Polling,
            label: format!("polling every {}", fmt_duration(visible)),
            recommended: !push_wins,
            delivery_p50_ms: secs * 1000.0 / 2.0,
            idle_bytes_per_client_minute: (idle_1s / secs).round() as u64,
            requests_per_s: p.connections as f64 / secs,
            open_connections: 0,
            evidence: vec!["poll-1s".into(), "poll-5s".into()],
        },
        Alternative {
            transport: push,
            label: format!("push ({})", push.name()),
            recommended: push_wins,
            delivery_p50_ms: evidence::num("push-latency", "delivery_ms"),
            idle_bytes_per_client_minute: push_idle as u64,
            requests_per_s: 0.0,
            open_connections: p.connections,
            evidence: vec!["push-latency".into()],
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One machine: the memory sentence uses the figure measured on the user's server when
    /// the profile has one, and names the seed's reference host when not.
    #[test]
    fn a_single_process_cites_the_measured_figure_or_the_reference_host() {
        let mut p = Profile::default();
        assert!(single_process_detail(&p).contains("the seed's reference host"));
        p.memory_per_connection = Some(crate::profile::MemoryPerConnection {
            plain: Some(8_000),
            tls: None,
            deflate: None,
            activity: "idle".into(),
            how: "rtcheck bench idle --server ws://127.0.0.1:1/ws on h".into(),
        });
        let d = single_process_detail(&p);
        assert!(d.contains("(plain, measured on your server"), "{d}");
        assert!(!d.contains("reference host"), "{d}");
    }

    fn answers(visible_ms: u64, upstream: Upstream, loss: Loss) -> Profile {
        Profile {
            visible_within: Some(Duration::from_millis(visible_ms)),
            upstream: Some(upstream),
            loss: Some(loss),
            ..Profile::default()
        }
    }

    fn transport_at(ms: u64) -> Transport {
        decide(&answers(ms, Upstream::Sparse, Loss::Replaceable))
            .unwrap()
            .transport
    }

    #[test]
    fn seed_examples_prices_positions_online_counts_are_replaceable() {
        // A price ticker: sub-second, nothing upstream, newer replaces older.
        let r = decide(&answers(200, Upstream::None, Loss::Replaceable)).unwrap();
        assert_eq!(
            (r.transport, r.delivery, r.topology),
            (Transport::Sse, Delivery::Snapshot, Topology::SingleProcess)
        );
        // Online count refreshed every couple of minutes: polling, snapshot.
        let r = decide(&answers(120_000, Upstream::None, Loss::Replaceable)).unwrap();
        assert_eq!(r.transport, Transport::Polling);
        assert_eq!(r.poll_interval_ms, Some(120_000));
        assert_eq!(r.delivery, Delivery::Snapshot);
    }

    #[test]
    fn shared_stream_that_must_not_lose_gets_seq_ring() {
        let r = decide(&answers(500, Upstream::Sparse, Loss::Shared)).unwrap();
        assert_eq!(r.delivery, Delivery::SeqRing);
        let q3 = &r.reasons[2];
        assert_eq!((q3.id.as_str(), q3.decision.as_str()), ("q3", "seq-ring"));
        let ids: Vec<&str> = q3.evidence.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["ring-buffer", "ring-sizing", "seq-numbers"]);
    }

    #[test]
    fn per_user_data_gets_session_ack() {
        // Chat: dense upstream, per-user inbox.
        let r = decide(&answers(300, Upstream::Dense, Loss::PerUser)).unwrap();
        assert_eq!(r.transport, Transport::Websocket);
        assert_eq!(r.delivery, Delivery::SessionAck);
        assert!(r.reasons[2]
            .evidence
            .iter()
            .any(|e| e.id == "session-expiry"));
        assert!(!r.reasons[2].detail.contains("durable inbox"), "3 s fits");
        // An hour away for 20,000 users: past the memory budget, a durable inbox named
        // with the arithmetic behind it.
        let mut p = answers(300, Upstream::Dense, Loss::PerUser);
        p.connections = 20_000;
        p.machines = 2;
        p.rate = 1.0;
        p.size = 200;
        p.max_disconnect = Duration::from_secs(3600);
        let r = decide(&p).unwrap();
        let d = &r.reasons[2].detail;
        for want in [
            "10,000 sessions per machine x 720.0 KB each (3,600 messages of 200 B) = 7.2 GB",
            "past the 1 GiB budget",
            "durable inbox",
            "a database table",
            "fetched on reconnect",
        ] {
            assert!(d.contains(want), "{want}: {d}");
        }
    }

    #[test]
    fn one_machine_is_single_process_several_are_pubsub() {
        let mut p = answers(200, Upstream::Sparse, Loss::Shared);
        p.machines = 1;
        assert_eq!(decide(&p).unwrap().topology, Topology::SingleProcess);
        p.machines = 2;
        p.connections = 20_000;
        let r = decide(&p).unwrap();
        assert_eq!(r.topology, Topology::Pubsub);
        let ids: Vec<&str> = r.reasons[3]
            .evidence
            .iter()
            .map(|e| e.id.as_str())
            .collect();
        assert_eq!(ids, ["redis-pubsub", "single-path", "presence-ttl"]);
        assert_eq!(r.sizing.connections_per_machine, 10_000);
        assert!(r.notes.iter().any(|n| n == CROSS_NODE_REPLAY_NOTE));
        p.loss = Some(Loss::Replaceable);
        let r = decide(&p).unwrap();
        assert!(!r.notes.iter().any(|n| n == CROSS_NODE_REPLAY_NOTE));
    }

    #[test]
    fn q1_boundaries_1s_5s_60s() {
        assert_eq!(transport_at(999), Transport::Sse);
        assert_eq!(transport_at(1_000), Transport::Sse);
        assert_eq!(transport_at(4_999), Transport::Sse);
        assert_eq!(transport_at(5_000), Transport::Polling);
        assert_eq!(transport_at(59_999), Transport::Polling);
        assert_eq!(transport_at(60_000), Transport::Polling);
        // The comparison is shown from 1 s up to (not including) 60 s.
        let alts = |ms| {
            decide(&answers(ms, Upstream::Sparse, Loss::Replaceable))
                .unwrap()
                .alternatives
                .len()
        };
        assert_eq!(alts(999), 0);
        assert_eq!(alts(1_000), 2);
        assert_eq!(alts(59_999), 2);
        assert_eq!(alts(60_000), 0);
    }

    #[test]
    fn between_zone_shows_both_costs() {
        let mut p = answers(5_000, Upstream::Sparse, Loss::Replaceable);
        p.connections = 10_000;
        let r = decide(&p).unwrap();
        let poll = &r.alternatives[0];
        let push = &r.alternatives[1];
        assert_eq!(poll.transport, Transport::Polling);
        assert!(poll.recommended && !push.recommended);
        // p50 about half the interval (poll-5s measured 2.3 s at 5 s).
        assert_eq!(poll.delivery_p50_ms, 2_500.0);
        assert_eq!(poll.requests_per_s, 2_000.0);
        // 8.4 KB/min at 1 s scales to 1.68 KB/min at 5 s.
        assert_eq!(poll.idle_bytes_per_client_minute, 1_680);
        assert_eq!(push.transport, Transport::Sse);
        assert_eq!(push.delivery_p50_ms, 0.3);
        assert_eq!(push.idle_bytes_per_client_minute, 1_200);
        assert_eq!(push.open_connections, 10_000);
        // At 2 s push is the recommended one, and a websocket costs 1.3 KB/min.
        let r = decide(&answers(2_000, Upstream::Dense, Loss::Replaceable)).unwrap();
        assert!(r.alternatives[1].recommended && !r.alternatives[0].recommended);
        assert_eq!(r.alternatives[1].idle_bytes_per_client_minute, 1_300);
    }

    #[test]
    fn q2_dense_or_binary_is_websocket_else_sse() {
        let t = |up, binary| {
            let mut p = answers(200, up, Loss::Replaceable);
            p.binary = binary;
            decide(&p).unwrap().transport
        };
        assert_eq!(t(Upstream::None, false), Transport::Sse);
        assert_eq!(t(Upstream::Sparse, false), Transport::Sse);
        assert_eq!(t(Upstream::Dense, false), Transport::Websocket);
        assert_eq!(t(Upstream::None, true), Transport::Websocket);
        // Binary alone answers Q2: upstream may be left out.
        let p = Profile {
            visible_within: Some(Duration::from_millis(100)),
            binary: true,
            loss: Some(Loss::Shared),
            ..Profile::default()
        };
        assert!(missing_answers(&p).is_empty());
        assert_eq!(decide(&p).unwrap().transport, Transport::Websocket);
    }

    #[test]
    fn with_polling_q2_only_decides_how_upstream_travels() {
        let r = decide(&answers(120_000, Upstream::Dense, Loss::Replaceable)).unwrap();
        assert_eq!(r.transport, Transport::Polling);
        assert!(
            r.reasons[1].decision.starts_with("upstream via POST"),
            "{}",
            r.reasons[1].decision
        );
        assert!(!r.notes.is_empty());
    }

    #[test]
    fn must_haves_mark_what_does_not_apply_to_polling() {
        let push = decide(&answers(200, Upstream::Sparse, Loss::Shared)).unwrap();
        let ids: Vec<&str> = push.must_haves.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "write-deadline",
                "writer-isolation",
                "ping-pong",
                "seq-numbers",
                "hot-path-alloc",
                "proxy-config"
            ]
        );
        assert!(push
            .must_haves
            .iter()
            .all(|m| m.applies && !m.evidence.is_empty()));
        let poll = decide(&answers(120_000, Upstream::Sparse, Loss::Shared)).unwrap();
        let applies: Vec<(&str, bool)> = poll
            .must_haves
            .iter()
            .map(|m| (m.id.as_str(), m.applies))
            .collect();
        assert_eq!(
            applies,
            [
                ("write-deadline", false),
                ("writer-isolation", false),
                ("ping-pong", false),
                ("seq-numbers", true),
                ("hot-path-alloc", true),
                ("proxy-config", false)
            ]
        );
        assert!(poll
            .must_haves
            .iter()
            .all(|m| m.applies == m.not_applicable.is_none()));
    }

    #[test]
    fn missing_answers_are_named_and_refused() {
        let p = Profile::default();
        assert_eq!(missing_answers(&p), ["visible_within", "upstream", "loss"]);
        let e = decide(&p).unwrap_err();
        assert!(e.contains("visible_within, upstream, loss"), "{e}");
    }

    #[test]
    fn recommendation_carries_the_transport_into_the_profile_and_json_keys() {
        let r = decide(&answers(200, Upstream::Dense, Loss::Shared)).unwrap();
        assert_eq!(r.profile.transport, Some(Transport::Websocket));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["transport"], "websocket");
        assert_eq!(v["delivery"], "seq-ring");
        assert_eq!(v["topology"], "single-process");
        assert_eq!(v["reasons"].as_array().unwrap().len(), 4);
        assert!(v["sizing"]["ring_bytes"].is_u64());
        assert_eq!(v["must_haves"][0]["applies"], true);
    }

    #[test]
    fn a_stale_transport_in_the_profile_is_noted_and_replaced() {
        let mut p = answers(200, Upstream::Sparse, Loss::Shared);
        p.transport = Some(Transport::Polling);
        let r = decide(&p).unwrap();
        assert_eq!(r.profile.transport, Some(Transport::Sse));
        assert!(r.notes.iter().any(|n| n.contains("transport polling")));
    }

    #[test]
    fn each_question_on_its_own() {
        assert_eq!(q1(Duration::from_millis(300), true).decision, "push");
        assert_eq!(
            q1(Duration::from_secs(10), false).decision,
            "polling every 10s"
        );
        let (d, r) = q3(Loss::Shared);
        assert_eq!((d, r.decision.as_str()), (Delivery::SeqRing, "seq-ring"));
        let mut p = answers(300, Upstream::Dense, Loss::PerUser);
        let (t, r) = q4(&p);
        assert_eq!(
            (t, r.decision.as_str()),
            (Topology::SingleProcess, "single-process")
        );
        p.machines = 3;
        assert_eq!(q4(&p).0, Topology::Pubsub);
        let mut notes = Vec::new();
        let r = q2(&p, Transport::Polling, Transport::Websocket, &mut notes);
        assert!(r.decision.contains("POST"), "{}", r.decision);
        assert_eq!(notes.len(), 1, "dense upstream with polling is named");
        let n = shape_notes(&p, Transport::Polling, Delivery::Snapshot, Topology::Pubsub);
        assert!(n.iter().any(|n| n.contains("meeting point")), "{n:?}");
        let polling = must_haves(Transport::Polling);
        let push = must_haves(Transport::Sse);
        assert!(push.iter().all(|m| m.applies));
        assert!(polling
            .iter()
            .any(|m| !m.applies && m.not_applicable.is_some()));
    }
}
