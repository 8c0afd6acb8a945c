//! `rtcheck load`: a closed-loop (or open-loop) concurrency sweep against an HTTP endpoint.
//! `sweep` does the I/O; `analysis` and `findings` are pure; `cli` holds flags and glue.
pub mod analysis;
pub mod cli;
pub mod client;
pub mod findings;
pub mod model;
pub mod saturation;
pub mod sweep;

pub use cli::{run, LoadArgs};
pub use model::LoadReport;
