//! Messages between the orchestrator (`bench fanout`) and the load generator process
//! (`bench loadgen`): JSON lines on the load generator's stdout, plain commands on its stdin.
use serde::{Deserialize, Serialize};

/// Commands the orchestrator writes to the load generator's stdin, one per line.
pub const CMD_CLOSE_SLOW: &str = "close-slow";
pub const CMD_STOP: &str = "stop";
/// `cutoff N`: rounds above N began after the time bound and are outside the measurement
/// window (C1: the hub catching up once the slow clients are closed).
pub const CMD_CUTOFF: &str = "cutoff";

/// One line of load generator output.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// While connecting.
    Connecting { done: u64, failed: u64, total: u64 },
    /// Every client has connected (or failed); measurement starts now.
    Connected { connected: u64, failed: u64 },
    /// Periodically while running.
    Progress {
        received: u64,
        /// Healthy clients that received the last round.
        complete: u64,
        /// Healthy clients closed by the server.
        removed: u64,
    },
    /// Final result, then the process exits.
    Result(Box<LoadgenResult>),
}

/// Per-round view from the clients (healthy clients only: slow ones never read).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundStat {
    pub received: u64,
    /// First and last arrival latency in this round (ms); 0 when nobody received it.
    pub first_ms: f64,
    pub last_ms: f64,
    /// Healthy clients that did not receive it because the server had closed them.
    pub missing_removed: u64,
    /// Healthy, still-open clients that did not receive it.
    pub missing_live: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadgenResult {
    pub connections: u64,
    pub slow: u64,
    pub connected: u64,
    pub connect_failed: u64,
    pub connect_errors: Vec<String>,
    /// Latency over healthy clients' samples (receive time - scheduled send time).
    pub samples: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    pub over_100ms: u64,
    pub over_1s: u64,
    /// The distribution at `stats::PERCENTILES`.
    #[serde(default)]
    pub percentiles: Vec<super::model::Percentile>,
    /// Index 0 = seq 1.
    pub rounds: Vec<RoundStat>,
    /// Samples with seq above --rounds (another server publishing more): not in `rounds`.
    pub beyond_rounds: u64,
    /// Last round inside the measurement window (from `cutoff`), and the samples of later
    /// rounds left out.
    pub cutoff: Option<u64>,
    pub after_cutoff: u64,
    /// Per-client seq not strictly increasing (duplicates or reordering).
    pub order_violations: u64,
    /// Frames we could not decode as the payload.
    pub undecodable: u64,
    /// Healthy clients closed by the server before the stop command.
    pub removed_healthy: u64,
    /// Client sockets whose TCP_NODELAY was read back with getsockopt, and how many were off.
    pub nodelay_checked: u64,
    pub nodelay_off: u64,
    /// SO_RCVBUF read back on slow clients (the kernel doubles what was asked).
    pub slow_rcvbuf: Option<u64>,
    pub cores: u64,
    pub cpu_connect_s: f64,
    pub cpu_run_s: f64,
    pub wall_run_s: f64,
}
