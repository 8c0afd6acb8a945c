//! `rtcheck bench`: reproduce the published tail-latency scenarios (seed 000, part 11)
//! on loopback. The server and the load generator run as separate OS processes.
//!
//! - `fanout`: orchestration of scenarios ([`fanout`]), judged by [`validity`].
//! - `idle`: RSS per idle connection ([`idle`]).
//! - `loadgen` (hidden): the load generator process ([`loadgen`]), speaking [`wire`].
pub mod control;
pub mod fanout;
pub mod idle;
pub mod loadgen;
pub mod model;
pub mod publisher;
pub mod scenario;
pub mod shape;
pub mod stats;
pub mod sys;
pub mod template;
pub mod validity;
pub mod wire;
