//! The embedded server's `GET /control/stats` contract (contracts/net.md), written by
//! `rtcheck serve` and read by bench, verify and every other client of the control plane.
//! One type for both sides: every field has a default, so another server's partial stats
//! still parse (a missing number reads as 0, a missing `clients` as not reported).
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The stats JSON, keys in the order the server writes them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerStats {
    pub rounds_sent: u64,
    pub rounds_total: Option<u64>,
    /// Time to hand each round to every client (the first 100,000 rounds).
    pub hub_round_ms: Vec<f64>,
    pub publish_start_ns: u64,
    pub drops: u64,
    pub removed: u64,
    pub missed_by_removed: u64,
    /// Open clients by transport (None: the server does not report them).
    pub clients: Option<ClientCounts>,
    pub max_queue_depth: u64,
    pub rss_bytes: u64,
    pub cpu_seconds: f64,
    pub nodelay: Option<bool>,
    pub open_fds: u64,
    pub finished: bool,
    // Beyond the contract's minimum (another server may have none of them).
    pub messages_sent: ClientCounts,
    /// Closed connections by reason.
    pub closed: BTreeMap<String, u64>,
    pub partial_frame_bytes: u64,
    pub echo_connections: u64,
    /// `serve --redis`: this node's name and whether it reaches Redis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis_up: Option<bool>,
    /// Messages in the resume ring and their bytes in every encoding it keeps.
    pub ring_messages: u64,
    pub ring_bytes: u64,
    pub sessions: SessionStats,
    /// Requests refused by the access rules (Host, Origin).
    pub refused: Refusals,
    /// Failed accepts (the process or system out of file descriptors, ...).
    pub accept_errors: AcceptErrors,
    /// Resume replay bytes in flight against `--replay-budget`.
    pub replay: ReplayStats,
}

impl ServerStats {
    /// Open clients of one transport by its label (`ws`, `sse`, `poll`, `raw`), 0 when
    /// not reported.
    pub fn clients_of(&self, label: &str) -> u64 {
        self.clients_reported(label).unwrap_or(0)
    }

    /// Open clients of one transport by its label, None when the server reports none.
    pub fn clients_reported(&self, label: &str) -> Option<u64> {
        self.clients.as_ref()?.get(label)
    }
}

/// A count per transport, keyed by the server's labels
/// ([`Transport::label`](crate::transport::Transport::label)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientCounts {
    pub ws: u64,
    pub sse: u64,
    pub poll: u64,
    pub raw: u64,
}

impl ClientCounts {
    /// The count for `label`, None for a label that is not a transport's.
    pub fn get(&self, label: &str) -> Option<u64> {
        match label {
            "ws" => Some(self.ws),
            "sse" => Some(self.sse),
            "poll" => Some(self.poll),
            "raw" => Some(self.raw),
            _ => None,
        }
    }
}

/// Session counters (`sessions`; `serve --delivery session-ack`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionStats {
    /// Sessions held (connected or away).
    pub count: u64,
    /// `--max-sessions`: the cap on `count`.
    pub max: u64,
    /// New sessions refused at the cap (503 + Retry-After; WebSocket close 1013).
    pub refused: u64,
    /// `--session-memory` in bytes, what one session can hold at worst, the sessions that
    /// fit (the cap is the lower of this and `max`), and the refusals where memory was the
    /// binding cap.
    pub memory_budget: u64,
    pub worst_session_bytes: u64,
    pub max_by_memory: u64,
    pub refused_memory: u64,
    pub connected: u64,
    /// Bytes of session state held: payload copies plus bookkeeping (counted, not the
    /// allocator's view; RSS is the independent check).
    pub bytes: u64,
    /// Unacked messages held over every session.
    pub messages: u64,
    pub created: u64,
    pub expired: u64,
    /// A client presented an unknown or expired session and got a new one (reset: true).
    pub resets: u64,
    /// Messages dropped from a full session queue (each reported in a gap marker).
    pub overflow_messages: u64,
    pub acks: u64,
    /// Acks for a seq never sent to that session, or for no session: ignored.
    pub acks_ignored: u64,
}

/// Requests refused by the access rules: a Host that is not this server's (421), an
/// Origin of another site on /control/* or /ws (403).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Refusals {
    pub host: u64,
    pub origin: u64,
}

/// Failed accepts by kind (`rtcheck_accept_errors_total{kind}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AcceptErrors {
    pub emfile: u64,
    pub enfile: u64,
    pub other: u64,
}

/// Resume replay counters (`replay`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplayStats {
    /// `--replay-budget`.
    pub budget_bytes: u64,
    pub in_flight_bytes: u64,
    pub peak_in_flight_bytes: u64,
    /// Replay writes (and polls) that waited for the budget.
    pub waits: u64,
    /// Heap trims after a flood (memory handed back to the OS).
    pub heap_trims: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_stats_of_another_server_parse() {
        let s: ServerStats = serde_json::from_str(r#"{"rounds_sent":3,"rss_bytes":10}"#).unwrap();
        assert_eq!((s.rounds_sent, s.rss_bytes, s.nodelay), (3, 10, None));
        assert_eq!(s.clients_reported("ws"), None);
        let s: ServerStats = serde_json::from_str(
            r#"{"clients":{"ws":3,"sse":1},"removed":2,"rss_bytes":5,"open_fds":9,"extra":1}"#,
        )
        .unwrap();
        assert_eq!(
            (s.clients_of("ws"), s.clients_of("sse"), s.removed),
            (3, 1, 2)
        );
        assert_eq!(
            (s.clients_of("nope"), s.clients_reported("raw")),
            (0, Some(0))
        );
    }

    #[test]
    fn the_server_writes_every_key_in_contract_order() {
        let s = ServerStats {
            clients: Some(ClientCounts::default()),
            nodelay: Some(true),
            closed: [("peer".to_string(), 0)].into(),
            ..Default::default()
        };
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(
            j,
            concat!(
                r#"{"rounds_sent":0,"rounds_total":null,"hub_round_ms":[],"publish_start_ns":0,"#,
                r#""drops":0,"removed":0,"missed_by_removed":0,"#,
                r#""clients":{"ws":0,"sse":0,"poll":0,"raw":0},"max_queue_depth":0,"#,
                r#""rss_bytes":0,"cpu_seconds":0.0,"nodelay":true,"open_fds":0,"finished":false,"#,
                r#""messages_sent":{"ws":0,"sse":0,"poll":0,"raw":0},"closed":{"peer":0},"#,
                r#""partial_frame_bytes":0,"echo_connections":0,"ring_messages":0,"ring_bytes":0,"#,
                r#""sessions":{"count":0,"max":0,"refused":0,"memory_budget":0,"#,
                r#""worst_session_bytes":0,"max_by_memory":0,"refused_memory":0,"connected":0,"#,
                r#""bytes":0,"messages":0,"created":0,"expired":0,"resets":0,"#,
                r#""overflow_messages":0,"acks":0,"acks_ignored":0},"refused":{"host":0,"origin":0},"#,
                r#""accept_errors":{"emfile":0,"enfile":0,"other":0},"#,
                r#""replay":{"budget_bytes":0,"in_flight_bytes":0,"peak_in_flight_bytes":0,"#,
                r#""waits":0,"heap_trims":0}}"#
            )
        );
        assert_eq!(serde_json::from_str::<ServerStats>(&j).unwrap(), s);
    }
}
