//! The load result model: json/yaml print it, text/markdown render it.
use crate::findings::Finding;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The target's own saturation during a level, from its Prometheus metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// Metric read (e.g. rtcheck_work_busy_workers).
    pub metric: String,
    pub busy_mean: f64,
    pub busy_max: f64,
    /// Pool size when the target exposes it; then `saturation_pct` = busy_mean / workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_max: Option<f64>,
    pub samples: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// Virtual users (closed loop) or connection cap (open loop).
    pub concurrency: u32,
    /// Successful answers per second of the users' active time.
    pub throughput_rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Mean latency of every completed attempt (errors included), for Little's law.
    pub mean_ms: f64,
    pub requests: u64,
    pub errors: u64,
    /// errors / requests, in percent; read it with `timeout_ms` beside it.
    pub error_rate: f64,
    pub errors_by_kind: BTreeMap<String, u64>,
    pub timeout_ms: f64,
    /// W = C / throughput (all completions), closed loop only.
    pub littles_law_w_ms: Option<f64>,
    /// (mean - W) / W in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub littles_law_diff_pct: Option<f64>,
    /// Open loop: requests offered per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rps: Option<f64>,
    /// Median time from the response head to the end of its body (client side).
    pub body_gap_p50_ms: f64,
    /// Share of answers whose body came 30-250 ms after the head (delayed-ACK range).
    pub body_gap_stalled_pct: f64,
    pub body_bytes_mean: f64,
    /// Load generator CPU, percent of one core, and of its threads.
    pub loadgen_cpu_pct: f64,
    pub loadgen_threads: u32,
    pub active_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation: Option<Saturation>,
    /// The level in equal slices of its step: the spread a knee or a reaction must stand
    /// outside of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<Slice>,
    pub valid: bool,
    /// Why the level is not valid (its numbers are not to be read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slice {
    pub throughput_rps: f64,
    pub p99_ms: f64,
}

impl Level {
    /// Slowest and fastest slice (the level's own figure when it has no slices).
    pub fn throughput_range(&self) -> (f64, f64) {
        range(
            self.slices.iter().map(|s| s.throughput_rps),
            self.throughput_rps,
        )
    }

    /// Lowest and highest slice p99.
    pub fn p99_range(&self) -> (f64, f64) {
        range(self.slices.iter().map(|s| s.p99_ms), self.p99_ms)
    }
}

fn range(v: impl Iterator<Item = f64>, own: f64) -> (f64, f64) {
    v.fold(None, |m: Option<(f64, f64)>, x| {
        Some(m.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))))
    })
    .unwrap_or((own, own))
}

/// Where throughput stops growing while the tail multiplies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    pub concurrency: u32,
    pub throughput_rps: f64,
    pub p99_ms: f64,
    /// From the knee to the last valid level.
    pub last_concurrency: u32,
    pub throughput_gain_pct: f64,
    pub p99_factor: f64,
}

/// The first level at which a signal reacted (None: not within the sweep).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reaction {
    pub signal: String,
    pub concurrency: Option<u32>,
    pub rule: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    pub kind: String,
    pub url: String,
    pub method: String,
    /// "closed" (users wait for their answer) or "open" (--rate, arrivals on a schedule).
    pub mode: String,
    /// "request start" (closed loop) or "scheduled start" (open loop).
    pub latency_from: String,
    pub step_ms: f64,
    pub timeout_ms: f64,
    pub littles_law_tolerance_pct: f64,
    pub levels: Vec<Level>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<Knee>,
    pub order_of_reaction: Vec<Reaction>,
    pub findings: Vec<Finding>,
    /// The client sets TCP_NODELAY on every connection.
    pub client_tcp_nodelay: bool,
    /// The HTTP client the users ran (`--engine`).
    pub client_engine: crate::load::conn::Engine,
    pub duration_ms: f64,
}
