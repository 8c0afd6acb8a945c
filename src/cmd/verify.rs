//! `rtcheck verify`: flags to options, run the selected experiments, render verify's own
//! report. `audit --verify` (in `cmd::audit`) takes its defaults from here.
use super::output::{AllFormat, AllFormats, OutputArgs};
use super::{parse_count, Ctx};
use crate::findings::{FailOn, Finding, Fix, Status};
use crate::profile::DEFAULT_CONNECTIONS;
use crate::report::{FindingsReport, Format, Palette, VerifyReport};
use crate::verify::{self, VerifyOptions};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Experiments (all when none is named):
  fd-limit         child at --limit opens connections until EMFILE; can it still
                   read /proc?
  ephemeral-ports  close --closed (TIME_WAIT), hold --opened at once: any
                   EADDRNOTAVAIL?
  time-wait        only the first half of ephemeral-ports: TIME_WAIT rising in
                   sockstat
  tcp-wmem         a client that never reads: bytes the kernel accepts before a
                   write blocks
  memory           server RSS per idle WebSocket and SSE connection
                   (--connections)
  delivery         clients disconnect (clean, reset, silent, storm), resume with
                   seq numbers from the ring, and count lost, silently lost,
                   duplicated (run alone: `rtcheck verify delivery --rate 50
                   --max-disconnect 1s`)
  tcp-keepalive    time until the server notices a silent peer
                   (--ping/--pong-wait), and read-deadline: a read deadline
                   alone closes a healthy quiet client

Examples:
  every experiment at its default scale:
    rtcheck verify
  reproduce ulimit -n 1024 (reference: 1,018):
    rtcheck verify fd-limit --limit 1024
  10,000 closed + 20,000 opened:
    rtcheck verify ephemeral-ports --full

    rtcheck verify memory --connections 2000 --format json
  attach each measurement to its finding:
    rtcheck audit --verify

Everything runs on loopback only, bounded by --timeout, and cleans up on error and Ctrl-C.
Exit codes: 0 every measurement valid, 1 a measurement failed its validity check, 2 error.")]
pub struct VerifyArgs {
    /// Experiments to run (default: all). Comma or space separated.
    pub names: Vec<String>,
    /// fd-limit: soft open-files limit of the child (default: the current soft limit).
    #[arg(long, value_name = "N", value_parser = super::parse_count, allow_negative_numbers = true)]
    pub limit: Option<u64>,
    /// ephemeral-ports: connections to open and close first (they stay in TIME_WAIT).
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = super::parse_count0, allow_negative_numbers = true)]
    pub closed: u64,
    /// ephemeral-ports: connections then opened and held at once.
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = super::parse_count, allow_negative_numbers = true)]
    pub opened: u64,
    /// ephemeral-ports: the reference scale, 10,000 closed + 20,000 opened.
    #[arg(long)]
    pub full: bool,
    /// memory: idle connections per transport (default 10000); delivery: clients per run
    /// (default 10).
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub connections: Option<u64>,
    /// tcp-keepalive: server ping interval.
    #[arg(long, default_value = "5s", value_parser = rtcheck_base::units::parse_duration)]
    pub ping: Duration,
    /// tcp-keepalive: server pong wait (removes a peer silent this long).
    #[arg(long, default_value = "8s", value_parser = rtcheck_base::units::parse_duration)]
    pub pong_wait: Duration,
    /// read-deadline: the server's read deadline (no ping) for a healthy quiet client.
    #[arg(long, default_value = "10s", value_parser = rtcheck_base::units::parse_duration)]
    pub read_deadline: Duration,
    /// tcp-wmem: SO_RCVBUF of the client that never reads.
    #[arg(long, default_value_t = 2048)]
    pub rcvbuf: u64,
    /// tcp-wmem: message size written by the server.
    #[arg(long, default_value_t = 1024)]
    pub message_size: u64,
    /// Total time bound for the whole run.
    #[arg(long, default_value = "3m", value_parser = rtcheck_base::units::parse_duration)]
    pub timeout: Duration,
    // json/yaml: verify's own report (experiments, options, verifications, summary);
    // junit/github: one test case or annotation per measurement.
    #[command(flatten)]
    pub out: OutputArgs<AllFormats>,
    /// Text: each run's reference, finding and details (invalid runs always show them).
    #[arg(long)]
    pub explain: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub delivery: Box<super::delivery::DeliveryFlags>,

    // Internal: the re-executed child of an experiment.
    #[arg(long, hide = true)]
    pub child: Option<String>,
    #[arg(long, hide = true)]
    pub target: Option<String>,
    #[arg(long, hide = true)]
    pub count: Option<u64>,
}

impl VerifyArgs {
    /// The options these flags give (`--full` is the reference scale).
    pub fn options(&self) -> VerifyOptions {
        let (closed, opened) = if self.full {
            // The reference run's scale, from the evidence.
            let n = |v| crate::evidence::num("ephemeral-ports", v) as u64;
            (n("closed"), n("opened"))
        } else {
            (self.closed, self.opened)
        };
        VerifyOptions {
            limit: self.limit,
            closed,
            opened,
            connections: self.connections.unwrap_or(DEFAULT_CONNECTIONS),
            ping: self.ping,
            pong_wait: self.pong_wait,
            read_deadline: self.read_deadline,
            rcvbuf: self.rcvbuf,
            message_size: self.message_size,
            timeout: self.timeout,
            progress: !self.quiet,
        }
    }
}

/// The options of `rtcheck verify` with no flags: the defaults live once, in the clap
/// attributes above (`audit --verify` starts from these).
pub fn default_options() -> VerifyOptions {
    use clap::Parser;
    #[derive(Parser)]
    struct Bare {
        #[command(flatten)]
        a: VerifyArgs,
    }
    match Bare::try_parse_from(["verify"]) {
        Ok(b) => b.a.options(),
        // The defaults are literals above; a failure here is a programming error that
        // every test run would show.
        Err(e) => unreachable!("verify defaults do not parse: {e}"),
    }
}

pub fn run(a: VerifyArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    if let Some(child) = &a.child {
        return verify::run_child(child, a.target.as_deref(), a.limit, a.count);
    }
    if a.names.iter().any(|n| n == "delivery") {
        if a.names.len() > 1 {
            anyhow::bail!("`verify delivery` runs alone; run the other experiments separately");
        }
        return super::delivery::run(&a.delivery, a.connections, a.timeout, &a.out, ctx, a.quiet);
    }
    if !a.delivery.thresholds.is_empty() {
        anyhow::bail!("--threshold applies to `verify delivery` only");
    }
    if a.delivery.baseline.baseline.is_some() || a.delivery.baseline.write_baseline.is_some() {
        // A measurement is valid or not: an invalid one is never accepted away.
        anyhow::bail!("--baseline and --write-baseline apply to `verify delivery` only");
    }
    if a.delivery.reach.connect_to.is_some() || a.delivery.reach.ca.is_some() {
        anyhow::bail!("--connect-to and --ca apply to `verify delivery` only");
    }
    a.out.validate()?;
    let wanted = verify::select(&a.names)?;
    let opts = a.options();
    opts.validate()?;
    let started = Instant::now();
    let results = verify::run_selected(&wanted, &opts)?;
    // An experiment that returned after Ctrl-C: no partial report, exit 130.
    rtcheck_base::os::signal::check_interrupted("verify interrupted")?;
    let experiments = verify::experiments_for(&wanted)
        .into_iter()
        .map(String::from)
        .collect();
    let report = VerifyReport::new(experiments, results, opts, started);
    a.out
        .emit_with(ctx.color, |f, p| render(&report, f, &p, a.explain))?;
    Ok(super::exit::verdict(false, report.summary.invalid > 0))
}

/// The renderer for `format`: verify's own model for text, markdown, json and yaml; the
/// CI formats take it as findings.
pub fn render(
    r: &VerifyReport,
    format: Format,
    p: &Palette,
    explain: bool,
) -> anyhow::Result<String> {
    Ok(match AllFormat::of(format)? {
        AllFormat::Text => {
            crate::report::doc::text::render(&crate::report::verify::verify_doc(r, explain)?, p)
        }
        // Markdown is read later, in full: every experiment explained.
        AllFormat::Markdown => {
            crate::report::doc::markdown::render(&crate::report::verify::verify_doc(r, true)?)
        }
        AllFormat::Json => crate::report::json::render(r)?,
        AllFormat::Yaml => crate::report::yaml::render(r)?,
        AllFormat::Junit => crate::report::junit::render(&as_findings(r), FailOn::Fail)?,
        AllFormat::Github => crate::report::github::render(&as_findings(r)),
        AllFormat::Html => {
            crate::report::doc::html::render(&crate::report::verify::verify_page(r)?)
        }
        AllFormat::Sarif => crate::report::sarif::render(&as_findings(r))?,
    })
}

/// Measurements as findings (kind "verify") for junit and github: a valid measurement
/// passes, an invalid one fails.
pub fn as_findings(r: &VerifyReport) -> FindingsReport {
    let findings = r
        .verifications
        .iter()
        .map(|v| {
            let part = verify::part(&v.name);
            Finding {
                location: None,
                id: v.name.clone(),
                title: part.map_or(v.name.as_str(), |p| p.title).to_string(),
                status: if v.valid { Status::Pass } else { Status::Fail },
                observed: crate::report::verify::measured(v),
                expected: v.reference.clone(),
                rule: v.verdict.clone(),
                reason: None,
                evidence: part
                    .map(|p| vec![crate::evidence::reference(p.evidence)])
                    .unwrap_or_default(),
                fix: Fix::default(),
                verify: Some(v.name.clone()),
                verification: Some(v.clone()),
                numbers: v
                    .measured
                    .map(|m| [("measured".to_string(), m)].into_iter().collect())
                    .unwrap_or_default(),
            }
        })
        .collect();
    FindingsReport::new(
        "verify",
        crate::profile::Profile::default(),
        Some(r.target.clone()),
        findings,
        r.duration_ms as f64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_come_from_the_flags() {
        let d = default_options();
        assert_eq!((d.closed, d.opened), (2000, 2000));
        assert_eq!(d.connections, DEFAULT_CONNECTIONS);
        assert_eq!(d.ping, Duration::from_secs(5));
        assert_eq!(d.timeout, Duration::from_secs(180));
        assert!(d.progress);
        d.validate().unwrap();
    }

    #[test]
    fn full_is_the_reference_scale_of_the_evidence() {
        use clap::Parser;
        #[derive(Parser)]
        struct W {
            #[command(flatten)]
            a: VerifyArgs,
        }
        let o = W::try_parse_from(["v", "--full"]).unwrap().a.options();
        assert_eq!((o.closed, o.opened), (10_000, 20_000));
    }

    #[test]
    fn options_reject_unmeasurable_values() {
        let ok = default_options();
        let bad = VerifyOptions {
            limit: Some(4),
            ..ok.clone()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--limit 4"));
        let bad = VerifyOptions {
            limit: Some(verify::fd_limit::MAX_LIMIT + 1),
            ..ok.clone()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("this experiment opens"), "{e}");
        let (_, hard) = rtcheck_base::os::limits::nofile().unwrap();
        if hard < verify::fd_limit::MAX_LIMIT {
            let bad = VerifyOptions {
                limit: Some(hard + 1),
                ..ok.clone()
            };
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains("hard open-files limit"), "{e}");
        }
        let bad = VerifyOptions {
            message_size: 1,
            ..ok
        };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn json_is_verifys_own_model_with_its_options() {
        let v = crate::findings::Verification {
            name: "tcp-wmem".into(),
            measured: Some(2_000_000.0),
            unit: "B".into(),
            reference: "ref".into(),
            verdict: "confirms".into(),
            details: vec![],
            valid: true,
            duration_ms: 10,
        };
        let opts = VerifyOptions {
            rcvbuf: 4096,
            ..default_options()
        };
        let r = VerifyReport::new(vec!["tcp-wmem".into()], vec![v], opts, Instant::now());
        let j: serde_json::Value =
            serde_json::from_str(&render(&r, Format::Json, &Palette::plain(), false).unwrap())
                .unwrap();
        assert_eq!(j["kind"], "verify");
        assert_eq!(j["experiments"], serde_json::json!(["tcp-wmem"]));
        assert_eq!(j["options"]["rcvbuf"], 4096);
        assert_eq!(j["verifications"][0]["measured"], 2_000_000.0);
        assert_eq!(j["summary"]["valid"], 1);
        assert!(j.get("profile").is_none(), "no made-up audit profile: {j}");
        let f = as_findings(&r);
        assert_eq!(
            f.findings[0].title,
            "Bytes the kernel accepts for a client that never reads"
        );
        assert_eq!(f.findings[0].evidence[0].id, "kernel-sndbuf");
    }
}
