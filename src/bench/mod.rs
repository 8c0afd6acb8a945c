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
pub mod scenario;
pub mod stats;
pub mod sys;
pub mod validity;
pub mod wire;

use crate::cli::Ctx;
use std::process::ExitCode;

/// Output formats of `bench fanout` and `bench idle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchFormat {
    /// Tables, checks and notes for a terminal.
    Text,
    /// The canonical machine format.
    Json,
    /// Tables for BENCHMARKS.md or a PR comment.
    Markdown,
}

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Fan-out tail latency: scenarios F, A, C1, C2, C3, G1, G3, P1 (seed 000, part 11).
    Fanout(fanout::FanoutArgs),
    /// Server RSS per idle WebSocket / SSE connection.
    Idle(idle::IdleArgs),
    /// The load generator process (started by `fanout` and `idle`).
    #[command(hide = true)]
    Loadgen(loadgen::LoadgenArgs),
}

pub fn run(a: BenchArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    match a.command {
        BenchCommand::Fanout(f) => fanout::run(f, ctx),
        BenchCommand::Idle(i) => idle::run(i, ctx),
        BenchCommand::Loadgen(l) => loadgen::run(l),
    }
}
