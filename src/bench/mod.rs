//! `rtcheck bench`: reproduce the published tail-latency scenarios ("Tail latency at 10,000 connections")
//! on loopback. The server and the load generator run as separate OS processes.
//!
//! - `fanout`: orchestration of scenarios ([`fanout`]), judged by [`validity`].
//! - `idle`: RSS per idle connection ([`idle`]).
//! - `loadgen` (hidden): the load generator process ([`loadgen`]), speaking [`wire`].
pub mod appws;
pub mod conncost;
pub mod fanout;
pub mod holder;
pub mod idle;
pub mod loadgen;
pub mod model;
pub mod publisher;
pub mod scenario;
pub mod shape;
pub mod stats;
pub mod target;
pub mod template;
pub mod validity;
pub mod wire;
pub mod ws_client;

/// What a bench run says when Ctrl-C stopped it (the guards stopped the children and removed
/// the temp dir on the way out).
pub const INTERRUPTED: &str =
    "interrupted: stopped the server and load generator, removed the temp files; no report";

pub fn check_interrupted() -> anyhow::Result<()> {
    rtcheck_base::os::signal::check_interrupted(INTERRUPTED)
}
pub mod cluster;
pub mod coordinate;
pub mod k8s;
pub mod plan;
pub mod seq_account;
pub mod shard;
