//! `rtcheck verify`.
use crate::cli::Ctx;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {}

pub fn run(_a: VerifyArgs, _ctx: Ctx) -> anyhow::Result<ExitCode> {
    anyhow::bail!("verify: not built yet")
}
