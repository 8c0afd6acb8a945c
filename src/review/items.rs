//! Review-only metadata of checklist items: which values an item asks, which rule checks
//! them, which command can measure it, and which items a profile leaves out.
use crate::choose::decide::Topology;
use crate::profile::{Loss, Profile};
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::transport::Transport;

crate::findings::check_ids! {
    /// The checklist items review's own tables name (values, measurements, what the
    /// audit measures, what a profile leaves out): one list, each one an item of a
    /// checklist (the tests hold it), so a misspelt id cannot compile.
    pub enum ItemId {
        PingInterval = "ping-interval",
        ReadDeadlineWithPing = "read-deadline-with-ping",
        ReconnectJitter = "reconnect-jitter",
        WriteDeadlineValue = "write-deadline-value",
        BoundedQueue = "bounded-queue",
        ReplayWindow = "replay-window",
        SessionTtl = "session-ttl",
        PresenceTtl = "presence-ttl",
        OneRetryLayer = "one-retry-layer",
        PoolPerDependency = "pool-per-dependency",
        OpenFiles = "open-files",
        EphemeralPorts = "ephemeral-ports",
        SendBuffer = "send-buffer",
        MemoryPerConnection = "memory-per-connection",
        FdsPerConnection = "fds-per-connection",
        TimeWaitSockstat = "time-wait-sockstat",
        PingPong = "ping-pong",
        WriteDeadline = "write-deadline",
        WriterIsolation = "writer-isolation",
        TailAndLastClient = "tail-and-last-client",
        HubRoundTime = "hub-round-time",
        HotPathAlloc = "hot-path-alloc",
        ProxyConfig = "proxy-config",
        SeqNumbers = "seq-numbers",
        LossDupOrder = "loss-dup-order",
        HubTimeWithLatency = "hub-time-with-latency",
        CpuFallAlert = "cpu-fall-alert",
        IsolationMemory = "isolation-memory",
        SseHttp2 = "sse-http2",
        SinglePath = "single-path",
    }
}

/// The type of a declared value, as the answers file and the prompts accept it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `25s`, `500ms`, `2m`.
    Duration,
    /// A whole number (`0` allowed: "none", e.g. an unbounded queue).
    Count,
    /// `102400`, `100KB`, `1MiB`.
    Bytes,
    /// `yes` / `no` (also true / false).
    Flag,
}

impl Kind {
    pub fn example(self) -> &'static str {
        match self {
            Kind::Duration => "a duration such as 25s or 500ms",
            Kind::Count => "a whole number such as 64",
            Kind::Bytes => "a size such as 102400, 100KB or 1MiB",
            Kind::Flag => "yes or no",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueSpec {
    pub name: &'static str,
    pub kind: Kind,
    /// The prompt, short: "Ping interval".
    pub prompt: &'static str,
    pub required: bool,
}

const fn v(name: &'static str, kind: Kind, prompt: &'static str, required: bool) -> ValueSpec {
    ValueSpec {
        name,
        kind,
        prompt,
        required,
    }
}

/// Which rule of `rules` an item's values go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Ping,
    WriteDeadline,
    Queue,
    Ring,
    Session,
    Presence,
    Retries,
    Pool,
    ReadDeadline,
    Reconnect,
}

/// Review metadata of one item with values.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub item: ItemId,
    pub rule: Rule,
    pub values: &'static [ValueSpec],
}

pub const SPECS: &[Spec] = &[
    Spec {
        item: ItemId::PingInterval,
        rule: Rule::Ping,
        values: &[
            v("ping", Kind::Duration, "Ping interval", true),
            v("pong_wait", Kind::Duration, "Pong wait", true),
            v(
                "idle_timeout",
                Kind::Duration,
                "Shortest idle timeout on the path (proxy, LB)",
                false,
            ),
        ],
    },
    Spec {
        item: ItemId::ReadDeadlineWithPing,
        rule: Rule::ReadDeadline,
        values: &[
            v(
                "read_deadline",
                Kind::Duration,
                "Read deadline, extended by each pong (0 = none)",
                true,
            ),
            v(
                "ping",
                Kind::Duration,
                "Ping interval (default: the profile's ping)",
                false,
            ),
        ],
    },
    Spec {
        item: ItemId::ReconnectJitter,
        rule: Rule::Reconnect,
        values: &[
            v(
                "reconnect",
                Kind::Flag,
                "The client reconnects by itself (yes/no)",
                true,
            ),
            v(
                "resume",
                Kind::Flag,
                "It resumes from its last position: Last-Event-ID, seq (yes/no)",
                true,
            ),
            v(
                "backoff_max",
                Kind::Duration,
                "Longest wait between reconnect attempts",
                false,
            ),
        ],
    },
    Spec {
        item: ItemId::WriteDeadlineValue,
        rule: Rule::WriteDeadline,
        values: &[
            v(
                "deadline",
                Kind::Duration,
                "Write deadline (0 = none)",
                true,
            ),
            v(
                "slow_per_writer",
                Kind::Count,
                "Slow clients that can share one writer (1 = isolated)",
                true,
            ),
        ],
    },
    Spec {
        item: ItemId::BoundedQueue,
        rule: Rule::Queue,
        values: &[
            v(
                "queue",
                Kind::Count,
                "Per-client queue length in messages (0 = unbounded)",
                true,
            ),
            v(
                "tolerance",
                Kind::Duration,
                "Slowness a client must survive before it is dropped",
                false,
            ),
        ],
    },
    Spec {
        item: ItemId::ReplayWindow,
        rule: Rule::Ring,
        values: &[v("ring", Kind::Bytes, "Replay ring size", true)],
    },
    Spec {
        item: ItemId::SessionTtl,
        rule: Rule::Session,
        values: &[
            v(
                "ttl",
                Kind::Duration,
                "Session TTL (0 = never expires)",
                true,
            ),
            v("cap", Kind::Count, "Cap on retained sessions", false),
        ],
    },
    Spec {
        item: ItemId::PresenceTtl,
        rule: Rule::Presence,
        values: &[
            v("ttl", Kind::Duration, "Presence key TTL", true),
            v(
                "refresh",
                Kind::Duration,
                "Presence key refresh interval",
                true,
            ),
        ],
    },
    Spec {
        item: ItemId::OneRetryLayer,
        rule: Rule::Retries,
        values: &[
            v(
                "layers",
                Kind::Count,
                "Layers that retry (client, gateway, service...)",
                true,
            ),
            v("tries", Kind::Count, "Tries per layer", true),
        ],
    },
    Spec {
        item: ItemId::PoolPerDependency,
        rule: Rule::Pool,
        values: &[
            v(
                "pool",
                Kind::Count,
                "Connection pool size per instance",
                true,
            ),
            v(
                "instances",
                Kind::Count,
                "Instances (processes x verticles) holding a pool",
                true,
            ),
            v(
                "downstream_max",
                Kind::Count,
                "Connection limit of the downstream, as it reports it",
                false,
            ),
        ],
    },
];

pub fn spec(item: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.item.as_str() == item)
}

/// Items the host audit measures (`rtcheck audit`): the review leaves them to it.
pub const LEFT_TO_AUDIT: &[ItemId] = &[
    ItemId::OpenFiles,
    ItemId::EphemeralPorts,
    ItemId::SendBuffer,
    ItemId::MemoryPerConnection,
    ItemId::FdsPerConnection,
    ItemId::TimeWaitSockstat,
];

/// Commands that can measure an item, and the finding, verification or scenario ids in
/// their JSON that mark it measured (`--evidence FILE`). Every id is one a command emits
/// (`emitted_ids` in the tests keeps them from drifting).
pub const MEASURED_BY: &[(ItemId, &[&str], &[&str])] = &[
    (
        ItemId::PingPong,
        &["verify tcp-keepalive", "probe"],
        &["tcp-keepalive", "read-deadline", "heartbeat"],
    ),
    (
        ItemId::PingInterval,
        &["probe"],
        &["heartbeat", "idle-timeout"],
    ),
    (
        ItemId::WriteDeadline,
        &["bench fanout --scenario C1,C2"],
        &["C1", "C2"],
    ),
    (
        ItemId::WriterIsolation,
        &["bench fanout --scenario C3"],
        &["C3"],
    ),
    (ItemId::TailAndLastClient, &["bench fanout"], &["A"]),
    (ItemId::HubRoundTime, &["bench fanout"], &["A"]),
    (
        ItemId::HotPathAlloc,
        &["bench fanout --scenario G1,G3"],
        &["G1", "G3"],
    ),
    (
        ItemId::ProxyConfig,
        &["probe"],
        &["upgrade", "sse-buffering", "idle-timeout"],
    ),
    (
        ItemId::SeqNumbers,
        &["verify delivery"],
        &[
            "delivery-no-seq-clean-within-ring",
            "delivery-seq-ring-clean-within-ring",
            "delivery-seq-ring-reset-within-ring",
            "delivery-seq-ring-silent-within-ring",
            "delivery-seq-ring-storm-within-ring",
        ],
    ),
    (
        ItemId::LossDupOrder,
        &["verify delivery"],
        &[
            "delivery-seq-ring-clean-within-ring",
            "delivery-seq-ring-reset-within-ring",
            "delivery-seq-ring-silent-within-ring",
            "delivery-seq-ring-storm-within-ring",
        ],
    ),
    (
        ItemId::ReplayWindow,
        &["verify delivery"],
        &[
            "delivery-seq-ring-clean-within-ring",
            "delivery-seq-ring-clean-beyond-ring",
        ],
    ),
];

/// The commands (without `rtcheck`) and the JSON ids that measure an item.
/// Ids whose pass does not measure the item: `upgrade` passing shows the handshake went
/// through the proxy, not the proxy's buffering or timeouts (its warn or fail still
/// does: a refused or dead upgrade is the proxy's configuration).
pub const PASS_MEASURES_NOTHING: &[(ItemId, &[&str])] = &[(ItemId::ProxyConfig, &["upgrade"])];

/// Pure: whether a passing `id` leaves `item` unmeasured ([`PASS_MEASURES_NOTHING`]).
pub fn pass_measures_nothing(item: &str, id: &str) -> bool {
    PASS_MEASURES_NOTHING
        .iter()
        .any(|(i, ids)| i.as_str() == item && ids.contains(&id))
}

pub fn measured_by(item: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    MEASURED_BY
        .iter()
        .find(|(i, _, _)| i.as_str() == item)
        .map(|(_, c, ids)| (*c, *ids))
}

/// "`rtcheck verify tcp-keepalive` or `rtcheck probe`".
pub fn measure_hint(item: &str) -> Option<String> {
    measured_by(item).map(|(cmds, _)| {
        cmds.iter()
            .map(|c| format!("`rtcheck {c}`"))
            .collect::<Vec<_>>()
            .join(" or ")
    })
}

/// Delivery design and topology a profile implies (the same answers as `choose`).
pub fn design(p: &Profile) -> (Option<Delivery>, Topology) {
    let delivery = p.loss.map(|l| match l {
        Loss::Replaceable => Delivery::Snapshot,
        Loss::Shared => Delivery::SeqRing,
        Loss::PerUser => Delivery::SessionAck,
    });
    let topo = if p.machines > 1 {
        Topology::Pubsub
    } else {
        Topology::SingleProcess
    };
    (delivery, topo)
}

/// Why a profile leaves an item out of the review (None: it is asked).
pub fn left_out(item: &str, p: &Profile) -> Option<String> {
    use ItemId as I;
    // The rest of the checklists' items are asked whatever the profile.
    let item = ItemId::parse(item)?;
    if LEFT_TO_AUDIT.contains(&item) {
        return Some("measured on the host by `rtcheck audit`".into());
    }
    let transport = p.transport.unwrap_or(Transport::Websocket);
    let (delivery, topo) = design(p);
    let long_lived = [
        I::PingInterval,
        I::PingPong,
        I::ReadDeadlineWithPing,
        I::WriteDeadline,
        I::WriteDeadlineValue,
        I::WriterIsolation,
        I::ProxyConfig,
        I::HubRoundTime,
        I::HubTimeWithLatency,
        I::CpuFallAlert,
        I::IsolationMemory,
    ];
    if transport == Transport::Polling && long_lived.contains(&item) {
        return Some("polling holds no long-lived connection (no ping/pong, no hub writer)".into());
    }
    if item == I::SseHttp2 && transport != Transport::Sse {
        return Some(format!("transport is {}", transport.name()));
    }
    match item {
        I::ReplayWindow if delivery != Some(Delivery::SeqRing) => {
            Some("only the seq-ring design (loss: shared) keeps a replay ring".into())
        }
        I::SessionTtl if delivery != Some(Delivery::SessionAck) => {
            Some("only the session-ack design (loss: per-user) keeps sessions".into())
        }
        I::PresenceTtl | I::SinglePath if topo != Topology::Pubsub => {
            Some("one machine: no pub/sub between nodes".into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every id a command writes into its JSON: probe checks, `verify delivery` runs,
    /// `verify` measurements and `bench fanout` scenarios.
    fn emitted_ids() -> Vec<String> {
        let mut v: Vec<String> = crate::probe::IDS.iter().map(|s| s.to_string()).collect();
        v.extend(crate::verify::delivery::finding_ids());
        v.extend(crate::verify::names().into_iter().map(String::from));
        v.extend(
            crate::bench::scenario::ALL
                .iter()
                .map(|s| s.name().to_string()),
        );
        v
    }

    #[test]
    fn every_measured_by_id_is_one_a_command_emits() {
        let emitted = emitted_ids();
        for (item, cmds, ids) in MEASURED_BY {
            assert!(!cmds.is_empty() && !ids.is_empty(), "{item}");
            for id in *ids {
                assert!(
                    emitted.iter().any(|e| e == id),
                    "{item}: `{id}` is emitted by no command"
                );
            }
        }
        // The list is built from the modules, not typed: a renamed id shows here.
        assert!(emitted
            .iter()
            .any(|e| e == "delivery-seq-ring-storm-within-ring"));
        assert!(emitted.iter().any(|e| e == "tcp-keepalive"));
    }

    fn profile(transport: Transport, loss: Loss, machines: u64) -> Profile {
        Profile {
            transport: Some(transport),
            loss: Some(loss),
            machines,
            connections: 20_000,
            ..Profile::default()
        }
    }

    #[test]
    fn polling_skips_ping_pong_and_write_deadline() {
        let p = profile(Transport::Polling, Loss::Replaceable, 1);
        for id in [
            "ping-interval",
            "ping-pong",
            "write-deadline",
            "write-deadline-value",
        ] {
            assert!(left_out(id, &p).is_some(), "{id}");
        }
        assert!(left_out("seq-numbers", &p).is_none());
        let ws = profile(Transport::Websocket, Loss::Replaceable, 1);
        assert!(left_out("ping-interval", &ws).is_none());
        assert!(left_out("write-deadline-value", &ws).is_none());
    }

    #[test]
    fn delivery_and_topology_choose_the_sizing_items() {
        let ring = profile(Transport::Websocket, Loss::Shared, 1);
        assert!(left_out("replay-window", &ring).is_none());
        assert!(left_out("session-ttl", &ring).is_some());
        let sess = profile(Transport::Websocket, Loss::PerUser, 1);
        assert!(left_out("session-ttl", &sess).is_none());
        assert!(left_out("replay-window", &sess).is_some());
        assert!(left_out("presence-ttl", &sess).is_some());
        let cluster = profile(Transport::Sse, Loss::Shared, 3);
        assert!(left_out("presence-ttl", &cluster).is_none());
        assert!(left_out("single-path", &cluster).is_none());
        assert!(left_out("sse-http2", &cluster).is_none());
        assert!(left_out("sse-http2", &ring).is_some());
    }

    #[test]
    fn audit_items_are_left_to_audit() {
        let p = Profile::default();
        assert!(left_out("open-files", &p).unwrap().contains("audit"));
        assert!(left_out("ephemeral-ports", &p).is_some());
    }

    #[test]
    fn specs_name_existing_items_and_unique_values() {
        for s in SPECS {
            let mut names: Vec<_> = s.values.iter().map(|v| v.name).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), s.values.len(), "{}", s.item);
        }
    }
}
