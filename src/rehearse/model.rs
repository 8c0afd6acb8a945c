//! The rehearsal's report: one run per reconnect policy, each with its hook, drain,
//! wave, failed connects, host counters, server process and delivery; findings last.
use super::hook::HookRun;
use super::wave::Wave;
use crate::findings::Finding;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct RehearseReport {
    pub command: String,
    /// The URL, redacted.
    pub url: String,
    /// websocket or sse.
    pub transport: String,
    /// The library protocol spoken, and why (`--app-protocol`, or what the URL names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<crate::bench::appws::Spoken>,
    pub connections: u64,
    /// Every run measured a wave (or said why not).
    pub valid: bool,
    pub notes: Vec<String>,
    pub runs: Vec<Run>,
    pub findings: Vec<Finding>,
}

/// The drain signals the dropped clients saw before their connection ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Drain {
    pub ws_1001: u64,
    pub ws_1012: u64,
    /// Another close code (1000, 1006 ...).
    pub ws_other_close: u64,
    /// Those other close codes, each with its count.
    pub other_codes: BTreeMap<String, u64>,
    pub sse_end: u64,
    /// The library protocol closed the session itself (`--app-protocol`).
    pub app_close: u64,
    /// EOF or reset with no signal first.
    pub abrupt: u64,
    /// The protocol's words for the drops it named (its closes, its close codes).
    pub reasons: BTreeMap<String, u64>,
    /// From the drain signal to the socket's end, per client.
    pub lead_p50_ms: Option<f64>,
    pub lead_max_ms: Option<f64>,
    /// Over HTTP/2 (`--http2`): dropped clients whose connection got a GOAWAY before
    /// their stream ended, and from the GOAWAY to the end. Null: not measured (HTTP/1.1).
    pub goaway: Option<u64>,
    pub goaway_lead_p50_ms: Option<f64>,
    pub goaway_lead_max_ms: Option<f64>,
}

impl Drain {
    pub fn signalled(&self) -> u64 {
        self.ws_1001 + self.ws_1012 + self.sse_end + self.app_close
    }
}

/// The host's accept-queue counters over the wave (this network namespace).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listen {
    pub listen_overflows: Option<u64>,
    pub listen_drops: Option<u64>,
    /// Why they could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The server's process through the wave (re-found by port after a restart).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerSeries {
    /// `--pid N`, or the process(es) behind the URL's port.
    pub found_by: Vec<String>,
    pub samples: u64,
    pub rss_before_mb: Option<f64>,
    pub rss_peak_mb: Option<f64>,
    pub rss_end_mb: Option<f64>,
    pub fds_before: Option<u64>,
    pub fds_peak: Option<u64>,
    /// (ms since the hook, RSS MB, fds): the plot.
    pub series: Vec<(f64, f64, u64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the clients received, counted by seq across the restart.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Delivery {
    pub received: u64,
    pub lost: u64,
    pub lost_silently: u64,
    pub duplicated: u64,
    pub out_of_order: u64,
    /// Clients that lost anything silently.
    pub clients_lost_silently: u64,
    /// Messages a client got at or below what was already published when it came back.
    pub replay_messages: u64,
    pub replay_bytes: u64,
    pub replay_bytes_per_client_max: u64,
    /// Server epochs seen (2: the restart started a new seq history).
    pub epochs: u64,
    /// Clients that got nothing with a seq: their delivery is not counted.
    pub clients_without_seq: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// The reconnect policy, as the flag takes it.
    pub name: String,
    pub reconnect: super::policy::Reconnect,
    /// Clients connected before the hook ran.
    pub connected: u64,
    /// Clients that dropped before the restart began (the server or the path removed
    /// them while they settled), and those still away when it began: the wave counts
    /// only the clients connected then.
    pub dropped_before_restart: u64,
    pub away_at_restart: u64,
    pub connect_errors: Vec<String>,
    pub hook: HookRun,
    /// ms from the hook's start to the first drop (null: nothing dropped).
    pub first_drop_ms: Option<f64>,
    pub measured_ms: f64,
    /// Ended at --timeout with clients still away.
    pub timed_out: bool,
    pub drain: Drain,
    pub wave: Wave,
    /// The wave's figures at the top, for --threshold (`back_95 < 10s`).
    pub back_50_ms: Option<f64>,
    pub back_95_ms: Option<f64>,
    pub back_100_ms: Option<f64>,
    pub peak_connects_per_s: f64,
    pub lost_silently: u64,
    /// Clients that stopped trying (EventSource after a non-200).
    pub gave_up: u64,
    pub failed_connects: BTreeMap<String, u64>,
    pub listen: Listen,
    pub server: ServerSeries,
    pub delivery: Delivery,
    pub valid: bool,
    pub notes: Vec<String>,
    /// `--publish ws|'POST URL'`: what rtcheck's publisher sent, and failed to send.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publisher: Option<crate::bench::wire::PublisherStat>,
    /// Publishes that failed and that no client received: not counted as lost.
    pub unowed: u64,
    /// `--publish ws`: messages written without error just before a failed send that no
    /// client received: sent into a socket whose hub died, not known whether the hub
    /// took them. Still owed (counted in `lost`), reported apart.
    pub unconfirmed: u64,
}

/// Why a run that dropped no client rehearsed nothing.
pub const NOTHING_REHEARSED: &str = "nothing rehearsed: the restart hook did not drop any connection (likely it restarted something else than the server these clients reach, or a proxy in front kept their connections open)";

impl Run {
    /// Pure: the restart command succeeded and no client dropped after it began, so
    /// there was no restart of these connections to judge (a failed command is its own
    /// failure instead).
    pub fn nothing_rehearsed(&self) -> bool {
        self.hook.ok && self.wave.dropped == 0
    }
}
