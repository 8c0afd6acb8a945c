//! `rtcheck bench cluster`: flags to options, run the scenarios, render, write.
use crate::bench::cluster::model::ClusterReport;
use crate::bench::cluster::{self, ClusterOptions, Kind};
use crate::cmd::output::{ClusterFormat, ClusterFormats, OutputArgs};
use crate::cmd::thresholds;
use crate::cmd::{parse_count, parse_rate, Ctx};
use crate::findings::FailOn;
use crate::report::{gates, Format};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Examples:
  every scenario, redis-server started here:
    rtcheck bench cluster

    rtcheck bench cluster --nodes 2 --scenario single,one-path,naive
    rtcheck bench cluster --redis redis://127.0.0.1:6379 \\
      --scenario one-path,node-kill
    rtcheck bench cluster --format markdown -o cluster.md
    rtcheck bench cluster --format html -o cluster.html

Scenarios: single (one node, no Redis: the baseline), naive (DEMONSTRATION: the publishing
node also delivers locally), one-path (publisher -> Redis -> every node), node-kill (SIGKILL
one node mid-run; presence ttl vs events), redis-restart (Redis stopped and started mid-run).
Redis: without --redis, redis-server (Debian package redis-server) runs on a free loopback
port in a temp dir with persistence off, and stops at the end. Load goes to loopback only.
Exit codes: 0 every result valid (and every --threshold held), 1 a result failed its
validity check or a --threshold was crossed, 2 error.")]
pub struct ClusterArgs {
    /// Nodes (rtcheck serve processes), 2 to 4; `single` always runs one.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = parse_count, allow_negative_numbers = true)]
    pub nodes: u64,
    /// Clients, spread over the nodes (client i on node i mod N).
    #[arg(long, value_name = "N", default_value_t = 60, value_parser = parse_count, allow_negative_numbers = true)]
    pub connections: u64,
    /// Rounds per second, published by node a.
    #[arg(long, default_value_t = 20.0, value_parser = parse_rate)]
    pub rate: f64,
    /// Payload bytes per message, units allowed (256, 1KiB) (at least 16).
    #[arg(long, default_value = "256", value_parser = rtcheck_base::units::parse_size)]
    pub size: u64,
    /// Messages per client (one per round).
    #[arg(long, default_value_t = 60, value_parser = parse_count, allow_negative_numbers = true)]
    pub rounds: u64,
    /// Use this Redis (redis://HOST:PORT on loopback) instead of starting redis-server.
    /// redis-restart and redis-publisher-restart need the one rtcheck starts.
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// Prefix of the nodes' Redis keys (default: one unique to this run). A Redis that
    /// already holds keys under it is refused: another cluster would mix with this one.
    #[arg(long, value_name = "PREFIX", value_parser = rtcheck_serve::cluster::config::parse_prefix)]
    pub redis_prefix: Option<String>,
    /// Comma-separated: single, naive, one-path, node-kill, redis-restart,
    /// redis-publisher-restart.
    #[arg(long, default_value = "single,naive,one-path,node-kill,redis-restart,redis-publisher-restart", value_parser = parse_scenario_list)]
    pub scenario: ScenarioList,
    /// Presence alive-key TTL on the nodes (the seed: 3 s).
    #[arg(long, default_value = "3s", value_parser = rtcheck_base::units::parse_duration)]
    pub presence_ttl: Duration,
    /// Longest wait for all clients to connect.
    #[arg(long, default_value = "30s", value_parser = rtcheck_base::units::parse_duration)]
    pub connect_timeout: Duration,
    /// How long to wait past the last scheduled round for stragglers.
    #[arg(long, default_value = "5s", value_parser = rtcheck_base::units::parse_duration, hide = true)]
    pub drain: Duration,
    #[command(flatten)]
    pub out: OutputArgs<ClusterFormats>,
    /// Fail (exit 1) when a figure crosses EXPR, e.g. 'lost_silently == 0',
    /// 'one-path.p99 < 50ms': keys of the JSON report, at the top or in each of
    /// `scenarios`; an unknown name is exit 2, an invalid run fails every threshold.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = crate::findings::threshold::parse)]
    pub thresholds: Vec<crate::findings::threshold::Threshold>,
    /// Also write the JSON report here (atomically), whatever --format says.
    #[arg(long, value_name = "PATH")]
    pub save_json: Option<PathBuf>,
}

/// `--scenario` as one value (clap would otherwise take a Vec as repeated values).
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioList(pub Vec<Kind>);

fn parse_scenario_list(s: &str) -> Result<ScenarioList, String> {
    cluster::parse_scenarios(s).map(ScenarioList)
}

impl ClusterArgs {
    pub fn options(&self) -> ClusterOptions {
        ClusterOptions {
            nodes: self.nodes,
            connections: self.connections,
            rounds: self.rounds,
            size: self.size,
            rate: self.rate,
            redis: self.redis.clone(),
            redis_prefix: self.redis_prefix.clone(),
            scenarios: self.scenario.0.clone(),
            presence_ttl: self.presence_ttl,
            connect_timeout: self.connect_timeout,
            drain: self.drain,
        }
    }
}

pub fn run(a: ClusterArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    a.out.validate()?;
    let report = measure(&a)?;
    let results = || {
        report
            .scenarios
            .iter()
            .map(|s| (s.name.as_str(), s.valid, s.notes.as_slice()))
    };
    let invalid = thresholds::invalid_scenarios(results());
    let gated = thresholds::gates(&a.thresholds, &report, invalid.as_deref());
    let found = gated.as_ref().map_or(&[][..], Vec::as_slice);
    let findings = thresholds::findings_report(&report.command, results(), found);
    let doc = crate::report::cluster::cluster_doc(&report)?;
    let render = |f: Format, p: crate::report::Palette| -> anyhow::Result<String> {
        use crate::report::doc;
        Ok(match ClusterFormat::of(f)? {
            ClusterFormat::Text => doc::text::render(&doc, &p) + &gates::text(found, p),
            ClusterFormat::Json => {
                crate::report::json::render(&thresholds::with_thresholds(&report, found)?)?
            }
            ClusterFormat::Yaml => {
                crate::report::yaml::render(&thresholds::with_thresholds(&report, found)?)?
            }
            ClusterFormat::Markdown => doc::markdown::render(&doc) + &gates::markdown(found),
            ClusterFormat::Junit => crate::report::junit::render(&findings, FailOn::Fail)?,
            ClusterFormat::Github => crate::report::github::render(&findings),
            ClusterFormat::Html => gates::html(doc::html::render(&doc), found),
        })
    };
    if let Some(p) = &a.save_json {
        let json = crate::report::json::render(&thresholds::with_thresholds(&report, found)?)?;
        rtcheck_base::outfile::write_atomic(p, json.as_bytes())?;
    }
    a.out.emit_with(ctx.color, render)?;
    thresholds::gate_exit(report.valid, gated)
}

/// The scenarios over Redis (a build without the `redis` feature refuses the command).
#[cfg(feature = "redis")]
fn measure(a: &ClusterArgs) -> anyhow::Result<ClusterReport> {
    cluster::run::run(&a.options())
}

#[cfg(not(feature = "redis"))]
fn measure(_: &ClusterArgs) -> anyhow::Result<ClusterReport> {
    Err(crate::cmd::feature_off("bench cluster", "redis"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        a: ClusterArgs,
    }

    #[test]
    fn defaults_run_every_scenario_and_validate() {
        let a = Wrap::try_parse_from(["x"]).unwrap().a;
        assert_eq!(a.scenario.0, Kind::ALL.to_vec());
        assert!(cluster::validate(&a.options()).is_ok());
        let o = a.options();
        // Well under a minute: six short schedules.
        assert!(o.rounds as f64 / o.rate <= 5.0);
        let a = Wrap::try_parse_from(["x", "--scenario", "one-path,single", "--format", "yaml"])
            .unwrap()
            .a;
        assert_eq!(a.scenario.0, [Kind::OnePath, Kind::Single]);
        let e = Wrap::try_parse_from(["x", "--scenario", "nope"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("unknown scenario `nope`"), "{e}");
    }

    #[test]
    fn junit_and_github_are_formats_of_bench_cluster() {
        for f in ["junit", "github"] {
            let a = Wrap::try_parse_from(["x", "--format", f, "--threshold", "lost_silently == 0"])
                .unwrap_or_else(|e| panic!("{f}: {e}"))
                .a;
            assert_eq!(a.out.format.as_str(), f);
            assert!(ClusterFormat::of(a.out.format).is_ok());
        }
        let e = Wrap::try_parse_from(["x", "--format", "sarif"])
            .err()
            .unwrap();
        assert_eq!(e.exit_code(), 2);
    }
}
