//! `rtcheck load`: flags and glue (validate, preflight, sweep, read, render).
use super::output::{FindingsFormat, FindingsFormats, OutputArgs};
use super::Ctx;
use crate::findings::{threshold, FailOn, Status, Summary};
use crate::load::client::{self, ErrorKind, Target};
use crate::load::conn::{Engine, Request};
use crate::load::model::LoadReport;
use crate::load::{analysis, findings, single, sweep};
use crate::report::{self, FindingsReport, Format, Palette};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Closed loop by default: each virtual user has one connection (reused, TCP_NODELAY) and sends
its next request when the answer arrives; latency counts from the request start. --rate R is
an open loop: R arrivals per second whatever the answers, latency from the scheduled start.
Every level reports throughput, p50/p99/max, errors by kind beside the timeout, Little's law
(W = C / throughput against the mean), the load generator's CPU, and is marked invalid when
a check fails. Findings: littles-law, knee, nagle.

Traffic is bounded (levels x step) and goes to loopback only unless --allow-remote is given.

Examples:
  /work?ms=20: 8 workers, capacity 400 req/s:
    rtcheck serve --workers 8 &

    rtcheck load 'http://127.0.0.1:8080/work?ms=20' \\
      --metrics http://127.0.0.1:8080/metrics
    rtcheck load 'http://127.0.0.1:8080/work?ms=20' --concurrency 1,8,64 \\
      --step 2s --timeout 200ms
    rtcheck load http://127.0.0.1:8080/healthz --rate 500 \\
      --concurrency 16 --format json

Exit codes: 0 ok, 1 a finding at or above --fail-on or an invalid level, 2 bad input.")]
pub struct LoadArgs {
    /// Endpoint to load (http://HOST[:PORT]/PATH).
    pub url: String,
    /// Concurrency levels, swept in order.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "1,2,4,8,12,16,32,64",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub concurrency: Vec<u32>,
    /// Time per level.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = rtcheck_base::units::parse_duration)]
    pub step: Duration,
    /// Client timeout per request (it decides the errors column).
    #[arg(long, value_name = "DURATION", default_value = "500ms", value_parser = rtcheck_base::units::parse_duration)]
    pub timeout: Duration,
    /// Open loop: this many arrivals per second at every level (concurrency caps connections).
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// The target's Prometheus metrics, scraped during each level for its saturation.
    #[arg(long, value_name = "URL")]
    pub metrics: Option<String>,
    /// HTTP method.
    #[arg(long, default_value = "GET")]
    pub method: String,
    /// Request header "Name: value" (repeat).
    #[arg(long, value_name = "NAME: VALUE")]
    pub header: Vec<String>,
    /// Request body.
    #[arg(long)]
    pub body: Option<String>,
    /// Largest Little's law disagreement (percent) for a valid level.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub littles_tolerance: f64,
    /// Load generator threads [default: one per CPU].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: Option<u32>,
    /// HTTP client of the virtual users: wire (the request encoded once, answers read with
    /// httparse) or hyper (hyper's client connection: a cross-check, about 4x the user CPU per
    /// request).
    #[arg(long, value_enum, default_value_t = Engine::Wire)]
    pub engine: Engine,
    /// Allow a target (or --metrics) that is not loopback.
    #[arg(long)]
    pub allow_remote: bool,
    #[command(flatten)]
    pub out: OutputArgs<FindingsFormats>,
    /// Lowest finding status that makes the exit code 1.
    #[arg(long, value_enum, default_value_t = FailOn::Fail)]
    pub fail_on: FailOn,
    /// Fail (exit 1) when a figure of the run crosses EXPR, e.g. 'p99 < 50ms' (every level),
    /// 'knee.c >= 16', 'errors == 0': names are keys of the JSON report (looked up at the
    /// top, then in each of `levels`); an unknown name is exit 2. Repeatable.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = threshold::parse)]
    pub thresholds: Vec<threshold::Threshold>,
}

/// Longest sweep accepted (levels x step).
const MAX_TOTAL: Duration = Duration::from_secs(3600);

fn validate(a: &LoadArgs) -> anyhow::Result<()> {
    use anyhow::bail;
    if a.concurrency.len() > 32 {
        bail!("--concurrency: {} levels, at most 32", a.concurrency.len());
    }
    // Each level is a row, a testcase (`validity:C=N`) and a threshold path: once each.
    if let Some((i, c)) =
        (a.concurrency.iter().enumerate()).find(|(i, c)| a.concurrency[..*i].contains(c))
    {
        bail!(
            "--concurrency: level {c} given twice (position {}); list each level once",
            i + 1
        );
    }
    if a.step < Duration::from_millis(100) || a.step > Duration::from_secs(600) {
        bail!(
            "--step {}: must be 100ms ..= 10m",
            rtcheck_base::units::fmt_duration(a.step)
        );
    }
    if a.timeout < Duration::from_millis(1) || a.timeout > Duration::from_secs(60) {
        bail!(
            "--timeout {}: must be 1ms ..= 60s",
            rtcheck_base::units::fmt_duration(a.timeout)
        );
    }
    if a.step * a.concurrency.len() as u32 > MAX_TOTAL {
        bail!("--concurrency x --step: the sweep would take over an hour");
    }
    if let Some(r) = a.rate {
        if !(r > 0.0 && r <= 100_000.0) {
            bail!("--rate {r}: must be > 0 and <= 100000");
        }
    }
    if !(a.littles_tolerance > 0.0 && a.littles_tolerance <= 100.0) {
        bail!(
            "--littles-tolerance {}: must be > 0 and <= 100",
            a.littles_tolerance
        );
    }
    Ok(())
}

fn target(a: &LoadArgs) -> anyhow::Result<Target> {
    let mut t = client::parse_url(&a.url).map_err(anyhow::Error::msg)?;
    client::check_loopback(&t, a.allow_remote).map_err(anyhow::Error::msg)?;
    t.method = a
        .method
        .parse()
        .map_err(|_| anyhow::anyhow!("--method `{}`: not an HTTP method", a.method))?;
    for h in &a.header {
        // probe's parser: errors name the header, never its value (it may be a secret).
        let (name, value) = crate::probe::target::parse_header(h).map_err(anyhow::Error::msg)?;
        let k = name
            .parse()
            .map_err(|_| anyhow::anyhow!("--header {name}: bad name"))?;
        let v = value
            .parse()
            .map_err(|_| anyhow::anyhow!("--header {name}: bad value (not visible ASCII)"))?;
        t.headers.push((k, v));
    }
    if let Some(b) = &a.body {
        t.body = bytes::Bytes::from(b.clone());
    }
    Ok(t)
}

/// `--threshold` on the run's own JSON, one finding each (an invalid level fails them
/// all); true when one is crossed (exit 1 whatever --fail-on). An unknown name: exit 2.
fn add_thresholds(r: &mut LoadReport, ts: &[threshold::Threshold]) -> anyhow::Result<bool> {
    if ts.is_empty() {
        return Ok(false);
    }
    let invalid = r
        .levels
        .iter()
        .find(|l| !l.valid)
        .map(|l| format!("level {} invalid: {}", l.concurrency, l.invalid.join("; ")));
    let json = serde_json::to_value(&*r)?;
    let found = threshold::evaluate(ts, &json, &["levels"], invalid.as_deref())
        .map_err(anyhow::Error::msg)?;
    let crossed = found.iter().any(|f| f.status == Status::Fail);
    r.findings.extend(found);
    Ok(crossed)
}

/// The load report in `format` (one of [`FindingsFormats`]).
fn render(r: &LoadReport, format: Format, fail_on: FailOn, p: &Palette) -> anyhow::Result<String> {
    let doc = || report::load::load_doc(r);
    Ok(match FindingsFormat::of(format)? {
        FindingsFormat::Text => report::doc::text::render(&doc()?, p),
        FindingsFormat::Json => report::json::render(r)?,
        FindingsFormat::Yaml => report::yaml::render(r)?,
        FindingsFormat::Markdown => report::doc::markdown::render(&doc()?),
        FindingsFormat::Html => report::doc::html::render(&doc()?),
        FindingsFormat::Junit => report::junit::render(&as_findings(r), fail_on)?,
        FindingsFormat::Github => report::github::render(&as_findings(r)),
    })
}

/// The run for junit and github: each level's validity (`validity:C=N`, as bench's
/// scenarios: an invalid level fails on a line of its own), then the findings.
fn as_findings(r: &LoadReport) -> FindingsReport {
    let names: Vec<String> = r
        .levels
        .iter()
        .map(|l| format!("C={}", l.concurrency))
        .collect();
    let levels = r
        .levels
        .iter()
        .zip(&names)
        .map(|(l, n)| (n.as_str(), l.valid, l.invalid.as_slice()));
    super::thresholds::findings_report("load", levels, &r.findings)
}

/// One request before the sweep: a dead or non-HTTP target is bad input, not a report.
async fn preflight(t: &Target, timeout: Duration, what: &str) -> anyhow::Result<()> {
    match single::once(t, timeout.max(Duration::from_millis(500))).await {
        Ok(_) => Ok(()),
        Err(e) => {
            let why = match e {
                ErrorKind::Refused => "connection refused (nothing listening)".to_string(),
                ErrorKind::Connect => "cannot connect".to_string(),
                ErrorKind::Protocol => "the answer is not HTTP/1.1".to_string(),
                ErrorKind::Timeout => format!(
                    "no answer within {}",
                    rtcheck_base::units::fmt_duration(timeout.max(Duration::from_millis(500)))
                ),
                ErrorKind::Status4xx => {
                    "answers 4xx (check the URL, --method and --header)".to_string()
                }
                ErrorKind::Status5xx => "answers 5xx before any load".to_string(),
            };
            let what = if what.is_empty() {
                String::new()
            } else {
                format!("{what} ")
            };
            anyhow::bail!("{what}{}: {why}", t.url)
        }
    }
}

/// Sweep and read: the whole report (used by the CLI and tests).
pub async fn sweep_report(a: &LoadArgs, plan: sweep::Plan) -> LoadReport {
    let started = Instant::now();
    let plan = Arc::new(plan);
    let o = analysis::Opts {
        timeout_ms: a.timeout.as_secs_f64() * 1000.0,
        littles_tolerance_pct: a.littles_tolerance,
        closed_loop: a.rate.is_none(),
    };
    let pb = super::output::steps_bar("rtcheck load", a.concurrency.len() as u64);
    let mut levels = Vec::new();
    for &c in &a.concurrency {
        pb.set_message(format!("C = {c}"));
        let raw = sweep::level(plan.clone(), c).await;
        levels.push(analysis::level(&raw, &o));
        pb.inc(1);
    }
    pb.finish_and_clear();
    let knee = analysis::knee(&levels);
    let order = analysis::order_of_reaction(&levels, knee.as_ref());
    let findings = vec![
        findings::littles_law(&levels, a.littles_tolerance, o.closed_loop),
        findings::knee(knee.as_ref(), &levels),
        findings::nagle(&levels),
    ];
    LoadReport {
        kind: "load".into(),
        url: rtcheck_base::redact::url(&a.url),
        method: a.method.clone(),
        mode: if o.closed_loop { "closed" } else { "open" }.into(),
        latency_from: if o.closed_loop {
            "request start"
        } else {
            "scheduled start"
        }
        .into(),
        step_ms: a.step.as_secs_f64() * 1000.0,
        timeout_ms: o.timeout_ms,
        littles_law_tolerance_pct: a.littles_tolerance,
        levels,
        knee,
        order_of_reaction: order,
        findings,
        client_tcp_nodelay: true,
        client_engine: a.engine,
        duration_ms: (started.elapsed().as_secs_f64() * 1000.0).round(),
    }
}

pub fn run(a: LoadArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    #[cfg(not(feature = "hyper"))]
    if a.engine == Engine::Hyper {
        return Err(super::feature_off("load --engine hyper", "hyper"));
    }
    a.out.validate()?;
    validate(&a)?;
    let t = target(&a)?;
    let metrics = a
        .metrics
        .as_deref()
        .map(|m| {
            let t = client::parse_url(m)?;
            client::check_loopback(&t, a.allow_remote)?;
            Ok::<_, String>(t)
        })
        .transpose()
        .map_err(|e| anyhow::anyhow!("--metrics {e}"))?;
    let _ = rtcheck_base::os::limits::raise_nofile();
    let threads = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads as usize)
        .enable_all()
        .build()?;
    let r = rt.block_on(async {
        preflight(&t, a.timeout, "").await?;
        if let Some(m) = &metrics {
            preflight(m, a.timeout, "--metrics").await?;
        }
        let plan = sweep::Plan {
            request: Arc::new(Request::new(t, a.engine)),
            step: a.step,
            timeout: a.timeout,
            rate: a.rate,
            metrics: metrics.map(Arc::new),
            threads,
        };
        Ok::<_, anyhow::Error>(sweep_report(&a, plan).await)
    })?;
    rt.shutdown_timeout(Duration::from_millis(100));
    let mut r = r;
    let crossed = add_thresholds(&mut r, &a.thresholds)?;
    a.out
        .emit_with(ctx.color, |f, p| render(&r, f, a.fail_on, &p))?;
    let invalid = r.levels.iter().any(|l| !l.valid);
    let tripped = a.fail_on.trips(&Summary::of(&r.findings)) || crossed;
    Ok(super::exit::verdict(tripped, invalid))
}
