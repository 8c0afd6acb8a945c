//! `rtcheck audit`.
use crate::cli::Ctx;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct AuditArgs {}

pub fn run(_a: AuditArgs, _ctx: Ctx) -> anyhow::Result<ExitCode> {
    anyhow::bail!("audit: not built yet")
}
