//! `rtcheck evidence` and `rtcheck checklist`: list and show the embedded data.
use crate::cli::Ctx;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct EvidenceArgs {
    /// Evidence id to show (all when omitted).
    pub id: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ChecklistArgs {
    /// Checklist name (realtime-ops, async-service) or item id.
    pub name: Option<String>,
}

pub fn run_evidence(_a: EvidenceArgs, _ctx: Ctx) -> anyhow::Result<ExitCode> {
    anyhow::bail!("evidence: not built yet")
}

pub fn run_checklist(_a: ChecklistArgs, _ctx: Ctx) -> anyhow::Result<ExitCode> {
    anyhow::bail!("checklist: not built yet")
}
