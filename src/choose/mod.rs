//! `rtcheck choose`.
use crate::cli::Ctx;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ChooseArgs {}

pub fn run(_a: ChooseArgs, _ctx: Ctx) -> anyhow::Result<ExitCode> {
    anyhow::bail!("choose: not built yet")
}
