//! `rtcheck` with no subcommand: on a terminal, walk `choose`, audit this host for that
//! profile, offer to save both. Without a terminal: usage and exit 2.
use crate::cli::Ctx;
use std::process::ExitCode;

pub fn run(_ctx: Ctx) -> anyhow::Result<ExitCode> {
    anyhow::bail!("guided run: not built yet")
}
