//! Parse, dispatch, and map errors to exit codes (0 ok, 1 findings, 2 usage/runtime error).
use crate::cli::{Cli, Command, Ctx};
use clap::{CommandFactory, Parser};
use std::process::ExitCode;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let ctx = Ctx { color: cli.color };
    match run(cli.command, ctx) {
        Ok(code) => code,
        Err(e) => {
            // One line: the chain joined, most specific last.
            let msg = e
                .chain()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(": ");
            eprintln!("rtcheck: error: {msg}");
            ExitCode::from(2)
        }
    }
}

pub fn run(command: Option<Command>, ctx: Ctx) -> anyhow::Result<ExitCode> {
    match command {
        None => crate::guided::run(ctx),
        Some(Command::Choose(a)) => crate::choose::run(a, ctx),
        Some(Command::Audit(a)) => crate::audit::run(a, ctx),
        Some(Command::Evidence(a)) => crate::catalog::run_evidence(a, ctx),
        Some(Command::Checklist(a)) => crate::catalog::run_checklist(a, ctx),
        Some(Command::Serve(a)) => crate::net::run_serve(a, ctx),
        Some(Command::Bench(a)) => crate::bench::run(a, ctx),
        Some(Command::Verify(a)) => crate::verify::run(a, ctx),
        Some(Command::Completions { shell }) => {
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "rtcheck", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    }
}
