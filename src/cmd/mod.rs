//! The command layer: clap types, one file per command (parse flags, run the domain, pick
//! the renderer, write). Nothing below this layer imports it.
//!
//! Layers point down: data (units, evidence, checklist, profile) <- domain (findings,
//! choose, audit, verify, bench, review) <- report (models, one renderer per format) <- cmd;
//! the crates below the root crate: rtcheck-base <- rtcheck-wire <- rtcheck-serve.
pub mod audit;
pub mod baseline;
pub mod bench;
pub mod budget;
pub mod catalog;
pub mod choose;
pub mod delivery;
pub mod exit;
pub mod explain;
pub mod guided;
pub mod hops;
pub mod lint;
pub mod load;
pub mod output;
pub mod probe;
pub mod prompts;
pub mod reach;
pub mod rehearse;
pub mod review;
pub mod serve;
pub mod thresholds;
pub mod verify;
pub mod workload;

use clap::{Parser, Subcommand};
pub use output::{ColorChoice, OutputArgs};
use rtcheck_base::names::Named;

const EXAMPLES: &str = "\
Examples:
  guided run: choose, then audit this host:
    rtcheck

    rtcheck choose --visible-within 200ms --upstream sparse --loss shared \\
      --machines 2
    rtcheck choose --answers answers.yaml --save profile.yaml
    rtcheck audit --profile profile.yaml --format junit > audit.xml
    rtcheck audit --connections 50000 --role proxy --fail-on warn
    rtcheck evidence ulimit-n
    rtcheck hops --path cloudflare,aws-alb,nginx
    rtcheck checklist realtime-ops
    rtcheck serve --rate 5 --size 1024
    rtcheck bench fanout --connections 2000 --scenario A,C1,C3
    rtcheck verify fd-limit tcp-wmem
    rtcheck lint deploy/nginx.conf --profile profile.yaml --format github
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
    Choose(choose::ChooseArgs),
    /// Preflight audit of this host (or a mounted host, or a process) for a workload.
    Audit(audit::AuditArgs),
    /// List or show the measured numbers behind every rule.
    Evidence(catalog::EvidenceArgs),
    /// List or show the ops and async-service checklists.
    Checklist(catalog::ChecklistArgs),
    /// Run the embedded realtime server (WebSocket, SSE, polling, metrics) on loopback.
    Serve(serve::ServeArgs),
    /// Reproduce the published tail-latency scenarios against the embedded or another server.
    Bench(bench::BenchArgs),
    /// Latency budget of a request calling N backends: sequential vs parallel, new vs reused.
    Budget(budget::BudgetArgs),
    /// Concurrency sweep of an HTTP endpoint: throughput, latency, errors, saturation.
    Load(load::LoadArgs),
    /// Demonstrate audit findings live on loopback.
    Verify(verify::VerifyArgs),
    /// The full rule, evidence and fix of one audit check, one evidence entry, or one hop.
    Explain(explain::ExplainArgs),
    /// Documented limits of proxies, load balancers and CDNs, and the timeout chain of a path.
    Hops(hops::HopsArgs),
    /// Walk the application checklist, check declared values against the rules, gate CI.
    Review(review::ReviewArgs),
    /// Find the realtime mistakes (WebSocket, SSE, polling) in nginx, HAProxy, Caddy and Ingress configs.
    Lint(lint::LintArgs),
    /// Check a deployed realtime path (proxy + server) from outside: upgrade, buffering, idle timeout, heartbeat, resume.
    Probe(probe::ProbeArgs),
    /// Rehearse a deploy: N clients, the user's restart command, the reconnect wave measured.
    Rehearse(rehearse::RehearseArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell to complete for.
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
    /// The palette for a report written to `output` (None or `-` is stdout).
    pub fn palette_for(&self, output: Option<&std::path::Path>) -> crate::report::Palette {
        let sink = output::Sink::of(output);
        crate::report::Palette::new(output::color_enabled(
            self.color,
            sink,
            output::no_color_env(),
        ))
        .with_width(output::width_for(sink))
    }
}

/// The refusal of a command or flag whose cargo feature this build left out (it still
/// parses, so help and scripts are the same in every build): one line, exit 2, naming
/// the feature and how to get it.
pub fn feature_off(what: &str, feature: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{what}: this rtcheck was built without the \"{feature}\" feature (cargo install --path . --features {feature})"
    )
}

/// The one parser for `--connections` and other counts: a whole number of at least 1
/// (negative and zero are named, not "unexpected argument"), written as people write
/// counts (`20k`, `1.5M`, `20_000`, `20,000`).
pub fn parse_count(s: &str) -> Result<u64, String> {
    count_at_least(s, 1)
}

/// A count that may be 0 (`--slow 0`, `--rounds 0` for "until stopped").
pub fn parse_count0(s: &str) -> Result<u64, String> {
    count_at_least(s, 0)
}

/// A count held as `usize` (queue lengths, sessions); its consumer names its own bounds.
pub fn parse_count_usize(s: &str) -> Result<usize, String> {
    usize::try_from(parse_count0(s)?).map_err(|_| format!("`{}` is too large", s.trim()))
}

fn count_at_least(s: &str, min: u64) -> Result<u64, String> {
    let t = s.trim();
    match rtcheck_base::units::parse_count(t.strip_prefix('-').unwrap_or(t)) {
        Ok(v) if t.starts_with('-') && v > 0 => Err(format!("must be at least {min}, got {t}")),
        Ok(v) if v < min => Err(format!("must be at least {min}, got {v}")),
        r => r,
    }
}

/// `--pid`: one pid or several, as `pidof` prints them (spaces) or comma-separated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidList(pub Vec<u32>);

/// `--pid "$(pidof nginx)"`: `1 2 3`, `1,2,3`; each a process id above 0, at most 4096
/// of them (a list that long is not one server); duplicates kept once, order kept.
pub fn parse_pids(s: &str) -> Result<PidList, String> {
    let mut v: Vec<u32> = Vec::new();
    for w in s
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
    {
        match w.parse::<u32>() {
            Ok(p) if p > 0 => {
                if !v.contains(&p) {
                    v.push(p);
                }
            }
            _ => {
                return Err(format!(
                    "`{w}` is not a process id (a list: `pidof NAME` output, or 1234,5678)"
                ))
            }
        }
        if v.len() > 4096 {
            return Err("more than 4096 process ids".into());
        }
    }
    if v.is_empty() {
        return Err("no process id (is the server running? `pidof NAME` printed nothing)".into());
    }
    Ok(PidList(v))
}

/// `--rate`: messages per second, a finite number above 0.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a positive number of messages per second"
        )),
    }
}

/// `--size`: a size with an optional unit, at least 1 byte (the profile bounds the top).
pub fn parse_message_size(s: &str) -> Result<u64, String> {
    match rtcheck_base::units::parse_size(s)? {
        0 => Err("must be at least 1 byte".into()),
        v => Ok(v),
    }
}

/// A flag's value parser for an enum with stable names ([`Named`]): help lists exactly
/// its values and the parsed value is the enum, so the two cannot drift.
pub fn named<T: Named + Send + Sync>() -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(T::ALL.iter().map(|v| v.name()))
        .try_map(|s| T::from_name(&s).ok_or_else(|| format!("expected {}", T::expected())))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_feature_left_out_is_one_line_naming_it_and_the_install_command() {
        let e = super::feature_off("probe --browser", "browser").to_string();
        assert_eq!(
            e,
            "probe --browser: this rtcheck was built without the \"browser\" feature (cargo install --path . --features browser)"
        );
        assert!(!e.contains('\n'));
    }
}
