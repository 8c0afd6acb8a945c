//! `serve --redis URL --node NAME`: several nodes meet in one Redis. Every published round
//! takes one path (publisher -> Redis -> every node, the publisher included), seqs are global
//! (INCR in the same script as XADD and PUBLISH, so the Stream and the channel share one
//! order), the ring is a Redis Stream capped at `--ring` (resume on any node), and presence
//! is an alive key per client with a TTL (or join/leave events, the demonstration that
//! leaves ghosts). Losing Redis never takes the node's clients: the link reconnects with a
//! bounded backoff and catches up from the Stream, or sends the usual gap marker.
//!
//! `config` (the flags' settings) always compiles; the rest needs the `redis` feature.
//! Without it `Cluster` is a type with no values (`off.rs`), so callers need no `cfg`.
pub mod config;
#[cfg(feature = "redis")]
mod link;
#[cfg(feature = "redis")]
pub mod node;
#[cfg(not(feature = "redis"))]
mod off;
pub mod order;
#[cfg(feature = "redis")]
pub mod presence;
#[cfg(feature = "redis")]
pub mod store;

#[cfg(feature = "redis")]
pub use link::{start, stream_after};
#[cfg(feature = "redis")]
pub use node::{health, metrics, Cluster};
#[cfg(not(feature = "redis"))]
pub use off::{farewell, health, metrics, presence_json, start, stream_after, Cluster};
#[cfg(feature = "redis")]
pub use presence::{farewell, json as presence_json};
