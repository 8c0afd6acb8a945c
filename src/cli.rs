//! Command-line types (clap derive). Each subcommand's arguments live next to its code.
use crate::report::ColorChoice;
use clap::{Parser, Subcommand};

const EXAMPLES: &str = "\
Examples:
  rtcheck                                   guided run: choose, then audit this host
  rtcheck choose --visible-within 200ms --upstream sparse --loss shared --machines 2
  rtcheck choose --answers answers.yaml --save profile.yaml
  rtcheck audit --profile profile.yaml --format junit > audit.xml
  rtcheck audit --connections 50000 --role proxy --fail-on warn
  rtcheck evidence ulimit-n
  rtcheck checklist realtime-ops
  rtcheck serve --rate 5 --size 1024
  rtcheck bench fanout --connections 2000 --scenario A,C1,C3
  rtcheck verify fd-limit tcp-wmem
  rtcheck completions bash > /etc/bash_completion.d/rtcheck

Exit codes: 0 ok, 1 findings at or above --fail-on (or an invalid measurement), 2 usage or runtime error.";

#[derive(Debug, Parser)]
#[command(
    name = "rtcheck",
    version,
    about = "Choose, audit and verify realtime transports (polling, SSE, WebSocket) against measured numbers",
    after_help = EXAMPLES
)]
pub struct Cli {
    /// Colour: auto (terminal, honours NO_COLOR), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Walk the four questions and recommend transport, delivery design and topology.
    Choose(crate::choose::ChooseArgs),
    /// Preflight audit of this host (or a mounted host, or a process) for a workload.
    Audit(crate::audit::AuditArgs),
    /// List or show the measured numbers behind every rule.
    Evidence(crate::catalog::EvidenceArgs),
    /// List or show the ops and async-service checklists.
    Checklist(crate::catalog::ChecklistArgs),
    /// Run the embedded realtime server (WebSocket, SSE, polling, metrics) on loopback.
    Serve(crate::net::ServeArgs),
    /// Reproduce the published tail-latency scenarios against the embedded or another server.
    Bench(crate::bench::BenchArgs),
    /// Demonstrate audit findings live on loopback.
    Verify(crate::verify::VerifyArgs),
    /// Check a deployed realtime path (proxy + server) from outside: upgrade, buffering, idle timeout, heartbeat, resume.
    Probe(crate::probe::ProbeArgs),
    /// Print a shell completion script.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// What every command gets besides its own arguments.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    pub color: ColorChoice,
}

impl Ctx {
    pub fn palette(&self) -> crate::report::Palette {
        crate::report::Palette::new(self.color.enabled_for_stdout())
    }
}
