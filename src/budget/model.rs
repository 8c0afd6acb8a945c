//! The budget result model: what json/yaml print and the text/markdown renderers take.
use crate::findings::Finding;
use serde::{Deserialize, Serialize};

/// One backend call. Times in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hop {
    pub name: String,
    /// Network round trip to the backend.
    pub rtt_ms: f64,
    /// Time the backend spends on the call (typical).
    pub server_time_ms: f64,
    /// The backend's server time at its p99, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
    /// The caller keeps a warm connection to this hop (pool / keep-alive).
    pub reuse: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowestHop {
    pub name: String,
    /// Its cost on a new connection (2 RTT + server time).
    pub ms: f64,
}

/// Totals with each hop's own `reuse` setting (the way the caller is configured).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Configured {
    pub sequential_ms: f64,
    pub parallel_ms: f64,
}

/// The fan-out's tail: the request when its worst hop is at its p99.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tail {
    /// Parallel total (as configured) when the worst hop is at its p99.
    pub parallel_p99_ms: f64,
    /// Share of requests (0..1) that meet at least one hop at its p99: 1 - 0.99^n.
    pub share: f64,
    pub hop: String,
}

/// Per-call deadline priced: the parallel total is capped, and calls cut off fail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deadline {
    pub deadline_ms: f64,
    /// Parallel total (as configured) with every call cut at the deadline.
    pub parallel_ms: f64,
    /// Parallel total at the p99 with the cut (the tail it removes).
    pub parallel_p99_ms: f64,
    /// Hops whose typical call is longer than the deadline: they would always fail.
    pub always_cut: Vec<String>,
    /// Hops cut only at their tail (at most 1% of their calls fail or degrade).
    pub tail_cut: Vec<String>,
}

/// Hedged requests priced: a second call after `after_ms`, whichever answers first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hedge {
    pub after_ms: f64,
    /// Parallel total at the p99 with hedging (worst hop: min(p99, after + typical)).
    pub parallel_p99_ms: f64,
    /// Upper bound on the extra calls, in percent of calls (1 when `after` is past every
    /// hop's p99, 50 past the typical time, 100 below it): the price of the hedge.
    pub extra_calls_max_pct: f64,
}

/// `--live`: the same four ways measured against real endpoints (medians of rounds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Live {
    pub urls: Vec<String>,
    pub rounds: u32,
    pub sequential_ms: f64,
    pub parallel_ms: f64,
    pub sequential_reused_ms: f64,
    pub parallel_reused_ms: f64,
    /// The hops as measured (connect time as RTT, request on a warm connection minus it as
    /// server time), which gave the computed totals beside the measured ones.
    pub hops: Vec<Hop>,
    pub computed: Computed,
    pub tcp_nodelay: bool,
    /// None when every round succeeded; otherwise why the run is invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Computed {
    pub sequential_ms: f64,
    pub parallel_ms: f64,
    pub sequential_reused_ms: f64,
    pub parallel_reused_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetReport {
    pub kind: String,
    pub hops: Vec<Hop>,
    /// Every hop on a new connection (2 RTT + server time each), one after another.
    pub sequential_ms: f64,
    /// Every hop on a new connection, all at once: the slowest hop.
    pub parallel_ms: f64,
    /// Every hop on a reused connection (1 RTT + server time each), one after another.
    pub sequential_reused_ms: f64,
    pub parallel_reused_ms: f64,
    pub slowest_hop: SlowestHop,
    /// Chance (0..1) that a fan-out to all hops meets at least one at its p99: 1 - 0.99^n.
    pub tail_amplification: f64,
    pub as_configured: Configured,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<Tail>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Deadline>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedge: Option<Hedge>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<Live>,
    /// `latency-budget` when --budget is given; `live-budget` when a live run disagrees.
    pub findings: Vec<Finding>,
    /// The cost model in one sentence.
    pub model: String,
}
