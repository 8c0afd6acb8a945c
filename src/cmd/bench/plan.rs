//! `rtcheck bench plan --connections N --rate R` (issue 37): machines needed, from the
//! load generator's measured cost (`--from` a bench JSON report, or the figures given).
use super::Ctx;
use crate::bench::plan::{self, PlanInputs};
use crate::cmd::output::{HumanFormat, HumanFormats, OutputArgs};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Examples:
  from a run's own figures (bench fanout --format json > run.json first):
    rtcheck bench plan --connections 1000000 --rate 5 --from run.json
  figures measured elsewhere, 16-core machines with 4 addresses each:
    rtcheck bench plan --connections 1000000 --rate 5 --cpu-us-per-message 3 \\
      --rss-per-connection 2KiB --cores 16 --memory 32GiB --source-addresses 4

Nothing is measured here: the figures are a run's (its loadgen_cost), and a plan
without them is refused. Exit codes: 0 planned, 2 error.")]
pub struct PlanArgs {
    /// Connections the whole load holds.
    #[arg(long, value_name = "N", value_parser = crate::cmd::parse_count)]
    pub connections: u64,
    /// Messages per second each client receives.
    #[arg(long, default_value_t = 5.0)]
    pub rate: f64,
    /// Bytes per message (for the bandwidth line), units allowed.
    #[arg(long, default_value = "1024", value_parser = rtcheck_base::units::parse_size)]
    pub size: u64,
    /// A bench fanout, shard or merge JSON report: its load generator's cost.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Instead of --from: the load generator's CPU per received message (us).
    #[arg(long, value_name = "US")]
    pub cpu_us_per_message: Option<f64>,
    /// Instead of --from: its RSS per held connection (bytes, units allowed).
    #[arg(long, value_name = "BYTES", value_parser = rtcheck_base::units::parse_size)]
    pub rss_per_connection: Option<u64>,
    /// One load machine's cores (default: this host's).
    #[arg(long)]
    pub cores: Option<u64>,
    /// One load machine's memory (default: this host's MemTotal), units allowed.
    #[arg(long, value_parser = rtcheck_base::units::parse_size)]
    pub memory: Option<u64>,
    /// Ephemeral ports per source address (default: this host's ip_local_port_range).
    #[arg(long)]
    pub ports: Option<u64>,
    /// Source addresses per machine (bench fanout --source-ip).
    #[arg(long, default_value_t = 1, value_parser = crate::cmd::parse_count)]
    pub source_addresses: u64,
    #[command(flatten)]
    pub out: OutputArgs<HumanFormats>,
}

/// The two figures: from --from's first run that has them, or the flags; never invented.
fn figures(a: &PlanArgs) -> anyhow::Result<(f64, f64, String)> {
    if let Some(p) = &a.from {
        if a.cpu_us_per_message.is_some() || a.rss_per_connection.is_some() {
            anyhow::bail!("--from or --cpu-us-per-message/--rss-per-connection, not both");
        }
        let shown = p.display().to_string();
        let text = rtcheck_base::input::report("--from", p)?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("--from {shown}: not JSON: {e}"))?;
        // Only a valid run's cost: an invalid run's load generator did not do the work
        // its figures would be divided by.
        let found = v["scenarios"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["valid"].as_bool() == Some(true))
            .find_map(|s| {
                let c = &s["loadgen_cost"];
                Some((
                    c["cpu_us_per_message"].as_f64()?,
                    c["rss_bytes_per_connection"].as_f64()?,
                ))
            });
        let (cpu, rss) = found.ok_or_else(|| {
            anyhow::anyhow!("--from {shown}: no valid run with the load generator's cost (loadgen_cost: a bench fanout JSON report with samples)")
        })?;
        return Ok((cpu, rss, shown));
    }
    match (a.cpu_us_per_message, a.rss_per_connection) {
        (Some(c), Some(r)) if c.is_finite() && c > 0.0 => Ok((c, r as f64, "the flags".into())),
        (Some(_), Some(_)) => anyhow::bail!("--cpu-us-per-message: must be a positive number"),
        _ => anyhow::bail!("bench plan needs measured figures: --from a bench fanout JSON report, or both --cpu-us-per-message and --rss-per-connection"),
    }
}

pub fn run(a: PlanArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    a.out.validate()?;
    if !(a.rate > 0.0 && a.rate <= 1000.0) {
        anyhow::bail!(rtcheck_base::units::out_of_bounds(
            "--rate",
            a.rate,
            "0 (excluded)",
            1000,
            "msg/s"
        ));
    }
    let (cpu, rss, from) = figures(&a)?;
    let ports = match a.ports {
        Some(p) => p,
        None => {
            let (lo, hi) = rtcheck_base::os::proc::port_range()?;
            u64::from(hi.saturating_sub(lo)) + 1
        }
    };
    let memory = match a.memory {
        Some(m) => m,
        None => std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| rtcheck_base::os::proc::meminfo_fields(&t))
            .map(|(total, _)| total)
            .ok_or_else(|| anyhow::anyhow!("/proc/meminfo: no MemTotal; give --memory"))?,
    };
    let inputs = PlanInputs {
        connections: a.connections,
        rate: a.rate,
        size: a.size,
        cpu_us_per_message: cpu,
        rss_bytes_per_connection: rss,
        figures_from: from,
        cores: a
            .cores
            .unwrap_or_else(|| rtcheck_base::os::clock::cores().max(1)),
        memory_bytes: memory,
        ports_per_address: ports,
        source_addresses: a.source_addresses,
    };
    inputs.check().map_err(anyhow::Error::msg)?;
    let p = plan::plan(inputs);
    let doc = || crate::report::plan::plan_doc(&p);
    a.out.emit_with(ctx.color, |f, pal| {
        Ok(match HumanFormat::of(f)? {
            HumanFormat::Text => crate::report::doc::text::render(&doc()?, &pal),
            HumanFormat::Markdown => crate::report::doc::markdown::render(&doc()?),
            HumanFormat::Json => crate::report::json::render(&p)?,
            HumanFormat::Yaml => crate::report::yaml::render(&p)?,
        })
    })?;
    Ok(ExitCode::SUCCESS)
}
