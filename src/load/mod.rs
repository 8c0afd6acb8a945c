//! `rtcheck load`: a closed-loop (or open-loop) concurrency sweep against an HTTP endpoint.
//! `sweep` does the I/O; `analysis` and `findings` are pure; flags live in `cmd::load`.
//! HTTP: `client` (the target, errors, timings), `wire` (the bytes), `conn` (a virtual
//! user's connection by engine), `single` (one-off requests), `hyper_engine` (feature
//! `hyper`).
pub mod analysis;
pub mod client;
pub mod conn;
pub mod findings;
#[cfg(feature = "hyper")]
pub mod hyper_engine;
pub mod model;
pub mod saturation;
pub mod single;
pub mod sweep;
pub mod wire;

pub use model::LoadReport;
