//! `rtcheck budget`: the latency budget of a request that calls N backends (seed 004).
//! `plan` is the pure arithmetic, `hops` parses flags and YAML, `live` measures real
//! endpoints the same four ways, `cli` holds the flags and the glue.
pub mod cli;
pub mod hops;
pub mod live;
pub mod model;
pub mod plan;

pub use cli::{run, BudgetArgs};
pub use model::{BudgetReport, Hop};
