//! The result of `bench cluster` (rendered by report::{text,markdown}::cluster and
//! serialized as JSON and YAML): one row per scenario, with the keys issue 13 names.
use crate::bench::model::Check;
use crate::evidence::EvidenceRef;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Presence as a surviving node saw it after one node was SIGKILLed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GhostSeries {
    /// `ttl` (alive key per client) or `events` (join/leave over pub/sub).
    pub presence: String,
    pub samples: Vec<GhostSample>,
    /// Seconds after the kill when ghosts first reached 0 and stayed there; null: never.
    pub cleared_after_s: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GhostSample {
    /// Seconds since the kill.
    pub t_s: f64,
    /// `online` from GET /presence (as Redis sees it).
    pub online: u64,
    /// Clients the bench actually held connected at that moment.
    pub connected: u64,
    /// online − connected (never below 0).
    pub ghosts: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterScenario {
    pub name: String,
    pub description: String,
    pub nodes: u64,
    /// Latency (receive − scheduled time, first copy of each message); null when invalid.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p999_ms: Option<f64>,
    /// Against `single` in the same run (null without a valid `single`).
    pub delta_p50_ms: Option<f64>,
    pub delta_p99_ms: Option<f64>,
    /// Messages received, duplicates included.
    pub received: u64,
    /// Messages of the span a client never received.
    pub lost: u64,
    /// Lost and not covered by a gap marker.
    pub lost_silently: u64,
    /// Messages covered by gap markers.
    pub gap_reported: u64,
    pub duplicates: u64,
    /// Duplicates by the node that delivered the second copy.
    pub duplicates_by_node: BTreeMap<String, u64>,
    /// Clients that received more than one copy of some message.
    pub clients_with_duplicates: u64,
    /// Every client saw the messages they all received in one order (null: under 2 clients).
    pub order_hash_agree: Option<bool>,
    /// Presence over time after a kill (node-kill only).
    pub ghosts: Vec<GhostSeries>,
    pub clients: u64,
    /// Rounds the publishing node says it published.
    pub published: u64,
    /// Rounds node a could not publish (Redis down), from its /metrics.
    pub unpublished: u64,
    /// The seqs counted (first..=last): lowest seen to highest seen, or further when node
    /// a published more rounds than the highest seq shows.
    pub first_seq: u64,
    pub last_seq: u64,
    /// Highest seq any client received.
    pub max_seq_seen: u64,
    /// Messages every client should have had (span × clients).
    pub expected: u64,
    pub reconnects: u64,
    /// Clients told of an epoch reset (a reset marker: the cluster's seqs started over).
    pub resets: u64,
    /// Arrivals under a seq the client already had from another round (must be 0).
    pub seq_conflicts: u64,
    pub client_cpu_s: f64,
    pub duration_s: f64,
    pub valid: bool,
    pub notes: Vec<String>,
    pub checks: Vec<Check>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterReport {
    pub command: String,
    pub nodes: u64,
    pub connections: u64,
    pub rounds: u64,
    pub size: u64,
    pub rate: f64,
    /// `redis-server started by rtcheck on 127.0.0.1:PORT` or the --redis URL (no password).
    pub redis: String,
    pub presence_ttl_s: f64,
    pub host_cores: u64,
    pub scenarios: Vec<ClusterScenario>,
    pub valid: bool,
    /// The seed's figures (evidence redis-pubsub, single-path, presence-ttl, loss-dup-order).
    pub reference: Vec<EvidenceRef>,
}
