//! `rtcheck budget`: flags and glue (parse hops, compute, optionally measure, render).
use super::output::{FindingsFormat, FindingsFormats, OutputArgs};
use super::Ctx;
use crate::budget::findings::{budget_finding, live_finding};
use crate::budget::model::{BudgetReport, Hop};
use crate::budget::{hops, live, plan};
use crate::findings::{FailOn, Summary};
use crate::report::{self, FindingsReport, Format, Palette};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Cost model: new connection = 2 x RTT + server time (handshake, then the call), reused
connection = 1 x RTT + server time; sequential calls add up, parallel calls wait for the
slowest; a fan-out to n hops meets at least one hop at its p99 in 1 - 0.99^n of requests.

Examples:
    rtcheck budget --hop auth:24ms:18ms --hop db:24ms:18ms \\
      --hop search:24ms:118ms
    rtcheck budget --hops hops.yaml --budget 200ms --deadline 120ms \\
      --hedge-after 80ms
    rtcheck budget --live http://127.0.0.1:8080/work?ms=24 \\
      http://127.0.0.1:8081/work?ms=24

hops.yaml: hops: [{name: db, rtt: 24ms, server_time: 18ms, p99: 120ms, reuse: true}]
(times are durations or bare milliseconds).
--live sends a few requests per URL (rounds x 8); only to loopback unless --allow-remote.

Exit codes: 0 ok, 1 a finding at or above --fail-on or an invalid live run, 2 bad input.")]
pub struct BudgetArgs {
    /// Hops from a YAML file (hops: [{name, rtt, server_time, p99, reuse}]).
    #[arg(long, value_name = "FILE", conflicts_with = "hop")]
    pub hops: Option<PathBuf>,
    /// One hop: NAME:RTT[:SERVER_TIME] (repeat per hop), e.g. db:24ms:18ms.
    #[arg(long, value_name = "NAME:RTT[:SERVER_TIME]")]
    pub hop: Vec<String>,
    /// Measure the four ways against these endpoints (one URL per hop).
    #[arg(long, value_name = "URL", num_args = 1..)]
    pub live: Vec<String>,
    /// Rounds of the live measurement (medians are reported).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=200))]
    pub rounds: u32,
    /// Time limit per live call.
    #[arg(long, default_value = "2s", value_parser = rtcheck_base::units::parse_duration)]
    pub timeout: Duration,
    /// Allow --live URLs that are not loopback.
    #[arg(long)]
    pub allow_remote: bool,
    /// The latency budget of the whole request: adds the `latency-budget` finding.
    #[arg(long, value_name = "DURATION", value_parser = rtcheck_base::units::parse_duration)]
    pub budget: Option<Duration>,
    /// Price a per-call deadline (every call abandoned after DURATION).
    #[arg(long, value_name = "DURATION", value_parser = rtcheck_base::units::parse_duration)]
    pub deadline: Option<Duration>,
    /// Price hedged requests (a second call after DURATION, first answer wins).
    #[arg(long, value_name = "DURATION", value_parser = rtcheck_base::units::parse_duration)]
    pub hedge_after: Option<Duration>,
    #[command(flatten)]
    pub out: OutputArgs<FindingsFormats>,
    /// Lowest finding status that makes the exit code 1.
    #[arg(long, value_enum, default_value_t = FailOn::Fail)]
    pub fail_on: FailOn,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn read_hops(a: &BudgetArgs) -> anyhow::Result<Vec<Hop>> {
    if let Some(p) = &a.hops {
        let origin = p.display().to_string();
        let text = rtcheck_base::input::yaml("--hops", p)?;
        return hops::from_yaml(&text, &origin).map_err(anyhow::Error::msg);
    }
    let v = a
        .hop
        .iter()
        .map(|s| hops::parse_flag(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    if !v.is_empty() || a.live.is_empty() {
        hops::check_count(&v, "--hop").map_err(anyhow::Error::msg)?;
    }
    Ok(v)
}

pub fn run(a: BudgetArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    let mut hop_list = read_hops(&a)?;
    let targets = a
        .live
        .iter()
        .map(|u| {
            let t = crate::load::client::parse_url(u)?;
            crate::load::client::check_loopback(&t, a.allow_remote)?;
            Ok(t)
        })
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| anyhow::anyhow!("--live {e}"))?;
    if targets.len() > hops::MAX_HOPS {
        anyhow::bail!("--live: {} URLs, at most {}", targets.len(), hops::MAX_HOPS);
    }
    let live = if targets.is_empty() {
        None
    } else {
        let rt = crate::load::client::runtime()?;
        let pb = super::output::steps_bar("rtcheck budget --live", live::steps(&targets, a.rounds));
        let step = || pb.inc(1);
        let live = rt.block_on(live::run(&targets, a.rounds, a.timeout, &step));
        pb.finish_and_clear();
        Some(live)
    };
    if hop_list.is_empty() {
        // Only --live: the budget is computed from the hops as measured.
        hop_list = live.as_ref().map(|l| l.hops.clone()).unwrap_or_default();
        if hop_list.is_empty() {
            let why = live.as_ref().and_then(|l| l.invalid.clone());
            anyhow::bail!("--live: no hop measured ({})", why.unwrap_or_default());
        }
    }
    let mut r = plan::compute(hop_list, a.deadline.map(ms), a.hedge_after.map(ms));
    if let Some(b) = a.budget {
        r.budget_ms = Some(ms(b));
        r.findings.push(budget_finding(&r, ms(b)));
    }
    if let Some(l) = live {
        r.findings.push(live_finding(&l));
        r.live = Some(l);
    }
    let invalid = r.live.as_ref().is_some_and(|l| l.invalid.is_some());
    a.out
        .emit_with(ctx.color, |f, p| render(&r, f, a.fail_on, p))?;
    let summary = Summary::of(&r.findings);
    Ok(super::exit::verdict(a.fail_on.trips(&summary), invalid))
}

fn render(r: &BudgetReport, format: Format, fail_on: FailOn, p: Palette) -> anyhow::Result<String> {
    Ok(match FindingsFormat::of(format)? {
        FindingsFormat::Text => report::doc::text::render(&report::budget::doc(r)?, &p),
        FindingsFormat::Json => report::json::render(r)?,
        FindingsFormat::Yaml => report::yaml::render(r)?,
        FindingsFormat::Markdown => report::doc::markdown::render(&report::budget::doc(r)?),
        FindingsFormat::Html => report::doc::html::render(&report::budget::doc(r)?),
        FindingsFormat::Junit => {
            report::junit::render(&FindingsReport::of_findings("budget", &r.findings), fail_on)?
        }
        FindingsFormat::Github => {
            report::github::render(&FindingsReport::of_findings("budget", &r.findings))
        }
    })
}
