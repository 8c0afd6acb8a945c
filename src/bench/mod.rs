//! `rtcheck bench`.
use crate::cli::Ctx;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct BenchArgs {}

pub fn run(_a: BenchArgs, _ctx: Ctx) -> anyhow::Result<ExitCode> {
    anyhow::bail!("bench: not built yet")
}
