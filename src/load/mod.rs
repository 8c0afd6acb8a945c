//! `rtcheck load`: a closed-loop (or open-loop) concurrency sweep against an HTTP endpoint.
//! `sweep` does the I/O; `analysis` and `findings` are pure; flags live in `cmd::load`.
pub mod analysis;
pub mod client;
pub mod conn;
pub mod findings;
pub mod model;
pub mod saturation;
pub mod sweep;
pub mod wire;

pub use model::LoadReport;
