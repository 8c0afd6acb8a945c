//! `rtcheck budget`: the latency budget of a request that calls N backends ("Latency
//! budget: hops in sequence and in parallel").
//! `plan` is the pure arithmetic, `hops` parses the hop list and YAML, `live` measures real
//! endpoints the same four ways, `findings` judges the result; flags live in `cmd::budget`.
pub mod findings;
pub mod hops;
pub mod live;
pub mod model;
pub mod plan;

pub use model::{BudgetReport, Hop};
