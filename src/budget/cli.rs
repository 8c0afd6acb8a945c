//! `rtcheck budget`: flags and glue (parse hops, compute, optionally measure, render).
use super::model::{BudgetReport, Hop};
use super::{hops, live, plan};
use crate::cli::Ctx;
use crate::evidence;
use crate::report::{self, FailOn, Finding, Fix, Format, Status};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Cost model: new connection = 2 x RTT + server time (handshake, then the call), reused
connection = 1 x RTT + server time; sequential calls add up, parallel calls wait for the
slowest; a fan-out to n hops meets at least one hop at its p99 in 1 - 0.99^n of requests.

Examples:
  rtcheck budget --hop auth:24ms:18ms --hop db:24ms:18ms --hop search:24ms:118ms
  rtcheck budget --hops hops.yaml --budget 200ms --deadline 120ms --hedge-after 80ms
  rtcheck budget --live http://127.0.0.1:8080/work?ms=24 http://127.0.0.1:8081/work?ms=24

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
    #[arg(long, default_value = "2s", value_parser = crate::units::parse_duration)]
    pub timeout: Duration,
    /// Allow --live URLs that are not loopback.
    #[arg(long)]
    pub allow_remote: bool,
    /// The latency budget of the whole request: adds the `latency-budget` finding.
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub budget: Option<Duration>,
    /// Price a per-call deadline (every call abandoned after DURATION).
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub deadline: Option<Duration>,
    /// Price hedged requests (a second call after DURATION, first answer wins).
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub hedge_after: Option<Duration>,
    /// Output format: text, json, yaml, markdown, junit (findings).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Lowest finding status that makes the exit code 1.
    #[arg(long, value_enum, default_value_t = FailOn::Fail)]
    pub fail_on: FailOn,
    /// Write the report to FILE atomically instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn read_hops(a: &BudgetArgs) -> anyhow::Result<Vec<Hop>> {
    if let Some(p) = &a.hops {
        let origin = p.display().to_string();
        let text = std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
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

/// `latency-budget`: within the budget in sequence (pass), only in parallel (warn), or
/// not at all (fail), with each hop's connection setting.
pub fn budget_finding(r: &BudgetReport, budget_ms: f64) -> Finding {
    let c = &r.as_configured;
    let (mut status, observed) = if c.sequential_ms <= budget_ms {
        (Status::Pass, "within the budget even in sequence")
    } else if c.parallel_ms <= budget_ms {
        (
            Status::Warn,
            "over the budget in sequence, within it only in parallel",
        )
    } else {
        (Status::Fail, "over the budget even in parallel")
    };
    // Fan-out makes one hop's p99 common: over the budget there, a warning at least.
    let tail = r.tail.as_ref().filter(|t| t.parallel_p99_ms > budget_ms);
    if tail.is_some() {
        status = status.max(Status::Warn);
    }
    let tail_text = tail.map_or(String::new(), |t| {
        format!(
            "; at the p99 of {} the request takes {:.1} ms ({:.1}% of requests meet a p99)",
            t.hop,
            t.parallel_p99_ms,
            t.share * 100.0
        )
    });
    let mut f = Finding {
        id: "latency-budget".into(),
        title: "The request fits its latency budget".into(),
        status,
        observed: format!(
            "{observed}: sequential {:.1} ms, parallel {:.1} ms (slowest hop {}){tail_text}",
            c.sequential_ms, c.parallel_ms, r.slowest_hop.name
        ),
        expected: format!("total <= {budget_ms:.1} ms"),
        rule: plan::MODEL.into(),
        reason: None,
        evidence: vec![
            evidence::reference("sequential-hops"),
            evidence::reference("fanout-slowest"),
            evidence::reference("connection-reuse"),
        ],
        fix: Fix {
            summary: "Call independent hops in parallel, reuse connections (pool, keep-alive), and give each call a deadline; speed up the slowest hop first.".into(),
            ..Default::default()
        },
        verify: None,
        verification: None,
        numbers: Default::default(),
    };
    f.numbers.insert("budget_ms".into(), budget_ms);
    f.numbers.insert("sequential_ms".into(), c.sequential_ms);
    f.numbers.insert("parallel_ms".into(), c.parallel_ms);
    f
}

/// `live-budget`: the measured totals against the model fed with the measured hops.
pub fn live_finding(l: &super::model::Live) -> Finding {
    let off = live::agrees(l, 25.0, 5.0);
    let (status, observed) = match &l.invalid {
        Some(why) => (Status::Fail, format!("invalid run: {why}")),
        None if off.is_empty() => (
            Status::Pass,
            "all four ways within 25% (or 5 ms) of the model".to_string(),
        ),
        None => (Status::Warn, off.join("; ")),
    };
    Finding {
        id: "live-budget".into(),
        title: "Measured hops add up as the model says".into(),
        status,
        observed,
        expected: "measured within 25% or 5 ms of computed".into(),
        rule: plan::MODEL.into(),
        reason: None,
        evidence: vec![evidence::reference("self-nagle")],
        fix: Fix {
            summary: "A gap is the tool or server talking (Nagle, pool limits, queueing): find it before trusting the totals.".into(),
            ..Default::default()
        },
        verify: None,
        verification: None,
        numbers: Default::default(),
    }
}

pub fn run(a: BudgetArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    a.format.ensure_one_of(
        &[
            Format::Text,
            Format::Json,
            Format::Yaml,
            Format::Markdown,
            Format::Junit,
        ],
        "budget",
    )?;
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
        Some(rt.block_on(live::run(&targets, a.rounds, a.timeout)))
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
    let out = render(&r, a.format, a.fail_on, &ctx, a.output.is_some())?;
    report::output::emit(&out, a.output.as_deref())?;
    let summary = report::Summary::of(&r.findings);
    Ok(if a.fail_on.trips(&summary) || invalid {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn render(
    r: &BudgetReport,
    format: Format,
    fail_on: FailOn,
    ctx: &Ctx,
    to_file: bool,
) -> anyhow::Result<String> {
    let colour = !to_file || ctx.color == report::ColorChoice::Always;
    Ok(match format {
        Format::Json => report::json::render(r)?,
        Format::Yaml => report::yaml::render(r)?,
        Format::Markdown => report::markdown::budget::render(r),
        Format::Junit => report::junit::render(&findings_report("budget", &r.findings), fail_on)?,
        _ => report::text::budget::render(
            r,
            &if colour {
                ctx.palette()
            } else {
                report::Palette::plain()
            },
        ),
    })
}

/// The findings of a non-audit command as a findings report (for junit).
pub fn findings_report(kind: &str, findings: &[Finding]) -> report::FindingsReport {
    report::FindingsReport::new(
        kind,
        crate::profile::Profile::default(),
        None,
        findings.to_vec(),
        0.0,
    )
}
