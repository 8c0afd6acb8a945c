//! Result types of `bench fanout` and `bench idle` (rendered by report::{text,markdown}::bench
//! and serialized as JSON).
use super::wire::Percentile;
use crate::evidence::EvidenceRef;
use crate::findings::Status;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub status: Status,
    pub detail: String,
}

/// Where every expected sample went (healthy clients; slow clients never read by design).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Accounting {
    pub expected: u64,
    pub received: u64,
    /// Missing on open clients in published rounds, covered by the server's drop counter.
    pub dropped: u64,
    /// Missing because the server had closed the client.
    pub after_removal: u64,
    /// Rounds the server never finished publishing (its rounds_sent < round).
    pub unpublished: u64,
    /// C1/C2 only: held behind a stalled shard writer when the run hit its time bound.
    pub stalled: u64,
    /// Clients that never connected x rounds.
    pub never_connected: u64,
    /// Nothing above explains these: the result is invalid.
    pub unexplained: u64,
}

/// One round as the clients and the hub saw it (None: nobody received it / no hub stats).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundPoint {
    /// 1-based seq.
    pub round: u64,
    /// The last healthy client's latency in this round.
    pub last_client_ms: Option<f64>,
    /// The server's time to hand this round to every client.
    pub hub_ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub name: String,
    pub description: String,
    pub connections: u64,
    pub slow_clients: u64,
    /// Latency (receive - scheduled send) over healthy clients; null when invalid.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p999_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub over_100ms: Option<u64>,
    pub over_1s: Option<u64>,
    pub samples: u64,
    pub rounds_completed: u64,
    pub rounds_total: u64,
    /// Rounds the hub had published when the time bound hit (before slow clients closed).
    pub rounds_published_at_bound: Option<u64>,
    pub last_client_median_ms: Option<f64>,
    pub last_client_max_ms: Option<f64>,
    /// Hub time per round from the server (null without /control/stats).
    pub hub_median_ms: Option<f64>,
    pub hub_max_ms: Option<f64>,
    pub drops: Option<u64>,
    pub removed: Option<u64>,
    pub server_rss_mb: Option<f64>,
    pub server_cpu_s: Option<f64>,
    pub client_cpu_s: f64,
    /// p99 and p99.9 divided by the raw-TCP floor's (null without a valid F in this run).
    pub p99_vs_floor: Option<f64>,
    pub p999_vs_floor: Option<f64>,
    /// First arrival per round minus its schedule: the publisher's start drift.
    pub round_start_drift_median_ms: Option<f64>,
    pub round_start_drift_max_ms: Option<f64>,
    pub duration_s: f64,
    pub time_bound_s: f64,
    pub valid: bool,
    pub notes: Vec<String>,
    pub checks: Vec<Check>,
    pub accounting: Accounting,
    /// The seed's row for the same scenario (10,000 clients, Go + gorilla, 10 vCPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<EvidenceRef>,
    /// The latency distribution over healthy clients (empty when invalid).
    #[serde(default)]
    pub percentiles: Vec<Percentile>,
    /// Per round: last client's latency and hub time (empty when invalid).
    #[serde(default)]
    pub per_round: Vec<RoundPoint>,
    /// A C run on `--server`: the seed's shape the hub showed (C1, C2, C3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<super::shape::ShapeVerdict>,
    /// A server rtcheck did not start, read from outside through the run (sys::procwatch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_process: Option<crate::sys::procwatch::ServerProcess>,
    /// Why the server's process was not measured (remote, not found, unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_unmeasured: Option<String>,
    /// rtcheck's publisher against its schedule (`--publish ws` / `POST`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<super::wire::PublisherStat>,
    /// The load generator's own cost in this run (what `bench plan` sizes machines from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loadgen_cost: Option<LoadgenCost>,
}

/// What the load generator itself spent (issue 37): None where it had nothing to divide
/// by (no sample received, no connection held).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LoadgenCost {
    pub cpu_us_per_message: Option<f64>,
    pub rss_bytes_per_connection: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    pub command: String,
    pub server: String,
    pub connections: u64,
    pub rounds: u64,
    pub size: u64,
    pub rate: f64,
    pub slow: u64,
    pub host_cores: u64,
    pub scenarios: Vec<ScenarioResult>,
    pub valid: bool,
    /// The library protocol spoken on --server (Socket.IO...), and why; absent: raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<super::appws::Spoken>,
}

/// `bench idle`: RSS per idle connection, measured by the server's own rss_bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleResult {
    pub protocol: String,
    pub connections: u64,
    pub connected: u64,
    pub rss_before_bytes: u64,
    pub rss_after_bytes: u64,
    pub bytes_per_connection: Option<f64>,
    pub server_clients_seen: Option<u64>,
    pub valid: bool,
    pub notes: Vec<String>,
    /// Server RSS sampled while the clients connected, first before any, last after all.
    #[serde(default)]
    pub samples: Vec<RssSample>,
}

/// The server's RSS with this many clients connected (the server's own count when it
/// reports one, else the load generator's).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RssSample {
    pub connections: u64,
    pub rss_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleReport {
    pub command: String,
    pub connections: u64,
    pub target_bytes_per_connection: u64,
    pub results: Vec<IdleResult>,
    pub reference: EvidenceRef,
    pub valid: bool,
}
