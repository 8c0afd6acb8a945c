//! `rtcheck rehearse URL --connections N --restart 'COMMAND'` (issue 38): the flags, the
//! rehearsal, its thresholds and its renderers.
use super::output::{BenchFormat, BenchFormats, OutputArgs};
use super::Ctx;
use crate::findings::FailOn;
use crate::rehearse::policy::Reconnect;
use crate::rehearse::{self, model::RehearseReport};
use crate::report::FindingsReport;
use rtcheck_base::units::parse_duration;
use std::process::ExitCode;
use std::time::Duration;

const AFTER: &str = "\
Examples:
  Rehearse a restart of the server behind nginx with 500 WebSocket clients:
    rtcheck rehearse ws://127.0.0.1:8080/ws --connections 500 \\
      --restart 'systemctl restart app'
  SSE clients that back off with jitter, gated in CI:
    rtcheck rehearse http://127.0.0.1:8080/events --connections 2000 \\
      --restart 'kubectl rollout restart deploy/app' \\
      --reconnect exp:1s..30s+jitter --threshold 'back_95 < 10s' \\
      --threshold 'lost_silently == 0' --format junit -o rehearse.xml
  Both waves side by side:
    rtcheck rehearse ws://127.0.0.1:8080/ws --connections 2000 \\
      --restart ./deploy.sh --compare-reconnect fixed:1s,exp:500ms..30s+jitter \\
      --format html -o wave.html

Traffic goes to loopback only unless --allow-remote is given. The restart command runs \
with sh -c; its output is captured and shown when it fails or overruns.";

#[derive(Debug, Clone, clap::Args)]
#[command(after_help = AFTER)]
pub struct RehearseArgs {
    /// The clients' URL: ws:// or wss:// (WebSocket), http:// or https:// (SSE).
    pub url: String,
    /// Clients to connect before the restart (20k, 1.5k...).
    #[arg(long, value_parser = super::parse_count, default_value = "100")]
    pub connections: u64,
    /// The restart hook, run with sh -c once the clients settled: 'systemctl restart app',
    /// 'kill -TERM $(pidof app)', 'nginx -s reload'.
    #[arg(long, value_name = "COMMAND")]
    pub restart: String,
    /// How long the restart command may run before it is killed (a finding of its own).
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = parse_duration)]
    pub restart_timeout: Duration,
    /// How long to wait, from the restart, for every client to come back.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// How long the clients stay connected before the restart (and between policies).
    #[arg(long, value_name = "DUR", default_value = "2s", value_parser = parse_duration)]
    pub settle: Duration,
    /// After the command returned and every client is back, how long nothing may drop
    /// before the rehearsal ends (a reload closes old connections late).
    #[arg(long, value_name = "DUR", default_value = "2s", value_parser = parse_duration)]
    pub grace: Duration,
    /// How clients come back: fixed:1s, exp:500ms..30s, exp:500ms..30s+jitter, eventsource
    /// (SSE: the server's retry:, else 3 s; gives up on a non-200 like the browser's).
    #[arg(long, value_name = "POLICY", default_value = "exp:500ms..30s+jitter", value_parser = Reconnect::parse)]
    pub reconnect: Reconnect,
    /// Rehearse once per policy and show the waves side by side: A,B[,C].
    #[arg(long, value_name = "A,B", value_parser = Reconnect::parse_list, conflicts_with = "reconnect")]
    pub compare_reconnect: Option<crate::rehearse::policy::Policies>,
    /// The server's process(es) for RSS and fds (default: the listener on the URL's port,
    /// found again after the restart).
    #[arg(long, value_name = "PIDS", value_parser = super::parse_pids)]
    pub pid: Option<super::PidList>,
    /// The server's own listener behind a proxy on this host (ADDR:PORT): its process
    /// is the one watched, found again after the restart (default: the URL's port).
    #[arg(long, value_name = "ADDR:PORT", value_parser = crate::bench::target::parse_connect_to, conflicts_with = "pid")]
    pub server_addr: Option<std::net::SocketAddr>,
    /// JSON path of the seq in a foreign payload (default: rtcheck serve's payload).
    #[arg(long, value_name = "PATH")]
    pub seq_path: Option<String>,
    /// JSON path of the publish time in a foreign payload (alone, on SSE: seq from id:).
    #[arg(long, value_name = "PATH")]
    pub ts_path: Option<String>,
    /// Sent by every client after connecting, WebSocket (join a room).
    #[arg(long, value_name = "TEXT")]
    pub subscribe: Option<String>,
    /// Who publishes: `server` (the hub publishes by itself), `ws` (rtcheck sends each
    /// message on a WebSocket of its own, dialled again across the restart, and the hub
    /// broadcasts it), or 'POST URL' (the app's publish API). A publish that failed
    /// while the hub was down is owed to no client.
    #[arg(long, value_name = "MODE", default_value = "server", value_parser = crate::bench::publisher::PublishVia::parse)]
    pub publish: crate::bench::publisher::PublishVia,
    /// What rtcheck publishes with --publish: a template with {seq}, {ts}, {marker}
    /// (default: rtcheck's JSON payload).
    #[arg(long, value_name = "TEMPLATE")]
    pub message: Option<String>,
    /// Messages per second with --publish, from the settle to the end.
    #[arg(long, value_name = "N", default_value_t = 10.0)]
    pub rate: f64,
    #[command(flatten)]
    pub app: super::reach::AppProtocolArgs,
    /// A header for --publish 'POST URL' ('Name: value'; never printed). Repeatable.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// SSE over HTTP/2 (https:// only; TLS offers h2 alone): each client's stream on a
    /// connection of its own, and the GOAWAY before the stream's end measured.
    #[arg(long)]
    pub http2: bool,
    /// Send this traffic to a host that is not loopback.
    #[arg(long)]
    pub allow_remote: bool,
    /// Extra trusted root certificate(s), PEM, for wss:// and https://.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<std::path::PathBuf>,
    /// Fail (exit 1) when a figure crosses EXPR: 'back_95 < 10s', 'lost_silently == 0',
    /// 'peak_connects_per_s < 2000' (keys of each run in the JSON). Repeatable.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = crate::findings::threshold::parse)]
    pub thresholds: Vec<crate::findings::threshold::Threshold>,
    /// Lowest finding status that exits 1.
    #[arg(long, value_enum, default_value_t = FailOn::Fail)]
    pub fail_on: FailOn,
    #[command(flatten)]
    pub out: OutputArgs<BenchFormats>,
}

/// The target: the URL's host must be loopback unless --allow-remote (then resolved).
fn target(a: &RehearseArgs) -> anyhow::Result<crate::bench::target::Target> {
    let url = crate::bench::target::parse_url(&a.url)?;
    if url.proto == crate::bench::target::Proto::Raw {
        anyhow::bail!(
            "{}: rehearse takes ws://, wss://, http:// or https://",
            url.shown
        );
    }
    if !a.allow_remote {
        return url.resolve(None);
    }
    let port = url.port.unwrap_or(if url.tls { 443 } else { 80 });
    let host = url
        .host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
        .map_err(|e| anyhow::anyhow!("{}: {e}", url.shown))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{}: the name resolves to no address", url.shown))?;
    url.resolve(Some(addr))
}

/// `--publish`/`--message`/`--rate`/`-H` into bench's publisher plan (None: the hub
/// publishes by itself). Its schedule outlasts the rehearsal; the run's end stops it.
type App = (
    rtcheck_wire::appproto::AppProtocol,
    rtcheck_wire::appproto::Subscribe,
    crate::bench::appws::Spoken,
);

/// The library protocol of a ws:// URL: `--app-protocol`, or the one its path names.
fn app_protocol(a: &RehearseArgs, t: &crate::bench::target::Target) -> anyhow::Result<Option<App>> {
    let ws = t.proto == crate::bench::target::Proto::Ws;
    let given = a
        .app
        .app_protocol
        .is_some_and(|p| p != rtcheck_wire::appproto::AppProtocol::Raw);
    if !ws && given {
        anyhow::bail!(
            "--app-protocol: the library protocols run over WebSocket; give a ws:// or wss:// URL"
        );
    }
    let app = ws
        .then(|| crate::bench::appws::resolve(a.app.app_protocol, &a.url))
        .flatten();
    if app.is_none() && a.app.names_subscription() {
        anyhow::bail!("--channel and --event go with a library protocol (--app-protocol NAME, or a URL that names one)");
    }
    let sub = a.app.subscribe();
    Ok(app.map(|(p, why)| (p, sub, why)))
}

fn publisher(
    a: &RehearseArgs,
    t: &crate::bench::target::Target,
    message: crate::bench::template::Template,
    app: Option<&App>,
) -> anyhow::Result<Option<crate::bench::publisher::Plan>> {
    use crate::bench::publisher::{Endpoint, PublishVia};
    let flag_without = |f: &str| anyhow::anyhow!("{f} goes with --publish ws or 'POST URL'");
    match &a.publish {
        PublishVia::Server if a.message.is_some() => return Err(flag_without("--message")),
        PublishVia::Server if !a.headers.is_empty() => return Err(flag_without("-H")),
        PublishVia::Server => return Ok(None),
        PublishVia::Ws if t.proto != crate::bench::target::Proto::Ws => {
            anyhow::bail!("--publish ws sends on a WebSocket of the clients' URL; give a ws:// URL or 'POST URL'")
        }
        // Bench's publisher speaks the protocol but keeps one session: it would not
        // come back through the restart.
        PublishVia::Ws if app.is_some() => {
            anyhow::bail!("--publish ws with a library protocol: rtcheck's publisher does not dial its session again after the restart; use --publish 'POST URL' or the hub's own messages")
        }
        _ => {}
    }
    if !(a.rate.is_finite() && a.rate > 0.0 && a.rate <= 10_000.0) {
        anyhow::bail!(
            "--rate {}: expected a number of messages per second, above 0 and at most 10000",
            a.rate
        );
    }
    let trust = crate::sys::tls::Trust::with_ca(a.ca.clone());
    let headers = a
        .headers
        .iter()
        .map(|h| crate::bench::publisher::parse_header(h))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let life = a.settle + a.restart_timeout + a.timeout + a.grace + Duration::from_secs(60);
    Ok(Some(crate::bench::publisher::Plan {
        via: a.publish.clone(),
        ws_url: a.url.clone(),
        ws: Endpoint {
            target: t.clone(),
            tls: t.tls(&trust)?,
        },
        post: a.publish.post(None, &trust)?,
        message,
        subscribe: a.subscribe.clone(),
        app: None,
        headers,
        rounds: (life.as_secs_f64() * a.rate).ceil() as u64,
        rate: a.rate,
        size: 0,
        redial: true,
    }))
}

pub fn run(a: RehearseArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    a.out.validate()?;
    let t = target(&a)?;
    let sse = t.proto != crate::bench::target::Proto::Ws;
    if a.http2 && !(sse && t.tls) {
        anyhow::bail!("--http2: SSE over HTTP/2 needs an https:// URL (h2 is negotiated in TLS)");
    }
    let policies = a
        .compare_reconnect
        .clone()
        .map_or_else(|| vec![a.reconnect], |p| p.0);
    if !sse && policies.contains(&Reconnect::Eventsource) {
        anyhow::bail!("--reconnect eventsource: the browser's EventSource is SSE; give an http:// or https:// URL");
    }
    let (message, decoder) = crate::bench::template::message_and_decoder(
        a.message.as_deref(),
        a.seq_path.as_deref(),
        a.ts_path.as_deref(),
        sse,
    )
    .map_err(anyhow::Error::msg)?;
    let app = app_protocol(&a, &t)?;
    let publish = publisher(&a, &t, message, app.as_ref())?;
    let o = rehearse::Options {
        url_shown: rtcheck_base::redact::url(&a.url),
        watch: a.server_addr.unwrap_or(t.addr),
        target: t,
        connections: a.connections,
        restart: a.restart.clone(),
        restart_timeout: a.restart_timeout,
        timeout: a.timeout,
        settle: a.settle,
        grace: a.grace,
        policies,
        pids: a.pid.clone().map(|p| p.0).unwrap_or_default(),
        decoder,
        publish,
        app,
        subscribe: a.subscribe.clone(),
        ca: a.ca.clone(),
        connect_timeout: Duration::from_secs(10),
        http2: a.http2,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
    };
    let report = rehearse::run(&o)?;
    let invalid = (!report.valid).then(|| report.notes.join("; "));
    let gated = gates(&a.thresholds, &report, invalid.as_deref());
    let found = gated.clone().unwrap_or_default();
    let findings = as_findings(&report, &found);
    let json = super::thresholds::with_thresholds(&report, &found)?;
    let doc = || crate::report::rehearse::rehearse_doc(&report, &found);
    a.out.emit_with(ctx.color, |f, p| {
        Ok(match BenchFormat::of(f)? {
            BenchFormat::Text => crate::report::doc::text::render(&doc()?, &p),
            BenchFormat::Json => serde_json::to_string_pretty(&json)? + "\n",
            BenchFormat::Markdown => crate::report::doc::markdown::render(&doc()?),
            BenchFormat::Junit => crate::report::junit::render(&findings, a.fail_on)?,
            BenchFormat::Github => crate::report::github::render(&findings),
            BenchFormat::Html => crate::report::doc::html::render(&doc()?),
        })
    })?;
    let crossed = a.fail_on.trips(&findings.summary);
    let gate = super::thresholds::gate_exit(report.valid, gated)?;
    Ok(if crossed {
        super::exit::verdict(true, false)
    } else {
        gate
    })
}

/// `--threshold` on each run of the report's JSON (`back_95` is every run's `back_95_ms`).
fn gates(
    ts: &[crate::findings::threshold::Threshold],
    r: &RehearseReport,
    invalid: Option<&str>,
) -> Result<Vec<crate::findings::Finding>, String> {
    if ts.is_empty() {
        return Ok(Vec::new());
    }
    let json = serde_json::to_value(r).map_err(|e| e.to_string())?;
    crate::findings::threshold::evaluate(ts, &json, &["runs"], invalid)
}

/// The rehearsal for junit and github: its findings, then each `--threshold`.
pub fn as_findings(r: &RehearseReport, thresholds: &[crate::findings::Finding]) -> FindingsReport {
    let mut all = r.findings.clone();
    for run in r.runs.iter().filter(|x| !x.valid) {
        all.push(super::thresholds::validity_finding(
            &run.name, false, &run.notes,
        ));
    }
    all.extend_from_slice(thresholds);
    FindingsReport::of_findings("rehearse", &all)
}
