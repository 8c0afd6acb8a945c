//! Embedded realtime server, payload format, and client-side protocol code.
pub mod payload;
pub mod sse;
use crate::cli::Ctx;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

pub fn run_serve(_a: ServeArgs, _ctx: Ctx) -> anyhow::Result<ExitCode> {
    anyhow::bail!("serve: not built yet")
}
