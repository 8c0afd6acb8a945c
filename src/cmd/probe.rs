//! `rtcheck probe`: flags to `probe::Options`, the run over the URLs (`crate::probe`), the
//! report in the chosen format.
use super::output::{GaugeFormat, GaugeFormats, OutputArgs};
use super::workload::{EditArg, PathFlags};
use super::Ctx;
use crate::findings::{FailOn, Finding, Status, Summary};
use crate::probe::target::{parse_header, Target};
use crate::probe::{self, client::ClientOpts, Options, TransportChoice};
use crate::profile::Profile;
use crate::report::{self, FindingsReport, Format, Palette};
use anyhow::anyhow;
use rtcheck_wire::transport::Transport;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Check ids: reachable response upgrade sse-buffering idle-timeout heartbeat resume
compression http2 origin measured
  polling: poll-status poll-cache poll-conditional poll-latency poll-overhead
  with a declared path (--path, or `path:` in --profile): path-hops path-idle

Examples:
    rtcheck probe wss://app.example.com/ws https://app.example.com/events
    rtcheck probe --quick http://127.0.0.1:8080/sse ws://127.0.0.1:8080/ws
    rtcheck probe --header 'Authorization: Bearer $TOKEN' \\
      --idle-for 90s wss://app.example.com/ws
    rtcheck probe --direct http://10.0.0.5:8080/sse \\
      https://app.example.com/sse
    rtcheck probe --ca ./ca.pem --format junit -o probe.xml \\
      https://staging.internal/sse
  the declared hops against the headers, the idle cut against their limits:
    rtcheck probe --path cloudflare,aws-alb,nginx --idle-for 90s \\
      wss://app.example.com/ws

Header values and secret-looking URL query values (token, key, sig, session..., or a
long opaque value) never appear in any output; `EIO=4` and the like are shown.
Exit codes: 0 nothing at or above --fail-on, 1 something is (a run that measured
nothing is no verdict: 1), 2 usage error or no URL could be reached.")]
#[command(
    edit_arg("path", |a| a.help(
        "The hops between the users and the server, outermost first (ids of `rtcheck hops`; \
         `direct` for none): matched with the hops the headers name, and the idle cut with \
         their limits (path-hops, path-idle). Wins over the profile's `path:`"
    )),
    edit_arg("overrides", |a| a.help(
        "A value a hop of the path is configured with instead of its documented default: \
         HOP.FIELD=DURATION (aws-alb.idle=300s; fields idle, lifetime, first_byte)"
    )),
    edit_arg("app_protocol", |a| a.help(
        "The library protocol on the WebSocket: socketio, signalr, phoenix, \
         actioncable, graphql-ws, stomp, sockjs, mqtt or raw. Default: detected \
         from the URL where it is unambiguous (`?EIO=4`, `/websocket?vsn=`, \
         `/<n>/<id>/websocket`, `/cable`), else raw"
    )),
    edit_arg("channel", |a| a.help(
        "What to subscribe to where the protocol has one: Phoenix topic, \
         ActionCable channel, STOMP destination, MQTT topic, graphql-ws \
         subscription query"
    )),
    edit_arg("event", |a| a.help(
        "The Socket.IO event or SignalR method whose messages carry the payload"
    ))
)]
pub struct ProbeArgs {
    /// Endpoints to probe: ws://, wss://, http://, https://.
    #[arg(value_name = "URL", required = true)]
    pub urls: Vec<String>,
    /// auto: ws(s) is WebSocket; http(s) asks for an event stream and falls back to polling.
    #[arg(long, value_enum)]
    pub transport: Option<TransportChoice>,
    /// Extra request header `Name: value` (repeatable; e.g. Authorization, Cookie).
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Origin of the WebSocket handshake [default: the URL's own origin].
    #[arg(long, value_name = "ORIGIN")]
    pub origin: Option<String>,
    /// The endpoint is meant for any site: a foreign Origin accepted is not a warning.
    #[arg(long)]
    pub public: bool,
    /// Extra trusted root certificate(s), PEM.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// Accept any TLS certificate (said loudly in the report).
    #[arg(long)]
    pub insecure: bool,
    /// How long to hold a connection with no client traffic (past the common 60 s defaults).
    #[arg(long, value_name = "DURATION", default_value = "75s", value_parser = rtcheck_base::units::parse_duration)]
    pub idle_for: Duration,
    /// Skip the idle test (idle-timeout and heartbeat are reported as skipped).
    #[arg(long)]
    pub quick: bool,
    /// The same endpoint without the proxy, to compare against (repeatable): the n-th
    /// --direct pairs with the n-th URL, or name the pair as URL=DIRECT.
    #[arg(long, value_name = "URL")]
    pub direct: Vec<String>,
    /// The proxy on the path, for its fixes, when Server/Via do not name it (HAProxy adds neither).
    #[arg(long, value_enum, value_name = "KIND")]
    pub proxy: Option<probe::proxy::Proxy>,
    /// Workload profile (from `rtcheck choose --save`): its `path:` is the declared path;
    /// its transport fills only what a URL leaves open (an http(s) URL: SSE or polling;
    /// a ws(s) URL stays WebSocket).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    #[command(flatten)]
    pub hops: PathFlags,
    /// Bound of each step (DNS, connect, TLS, response).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = rtcheck_base::units::parse_duration)]
    pub timeout: Duration,
    /// How long an event stream's response head may take: a buffering proxy holds a slow
    /// stream's head with its first full buffer (nginx: ~100 s); later is `sse-buffering` fail.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = rtcheck_base::units::parse_duration)]
    pub head_timeout: Duration,
    #[command(flatten)]
    pub out: OutputArgs<GaugeFormats>,
    #[command(flatten)]
    pub baseline: super::baseline::BaselineArgs,
    /// Lowest status that makes the exit code 1.
    #[arg(long, value_enum, default_value_t = FailOn::Fail)]
    pub fail_on: FailOn,
    /// Fail (exit 1) when a figure crosses EXPR, e.g. 'heartbeat.numbers.gap < 30s': a check
    /// id, then keys of its finding in the JSON report (every URL's); a skipped check fails
    /// it, an unknown name is exit 2. Repeatable.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = crate::findings::threshold::parse)]
    pub thresholds: Vec<crate::findings::threshold::Threshold>,
    /// Also open the URLs in headless Chromium (Debian package `chromium`): 7 EventSources
    /// to one host, EventSource reconnect, WebSocket from a page (the browser-* checks).
    #[arg(long)]
    pub browser: bool,
    #[command(flatten)]
    pub app: super::reach::AppProtocolArgs,
    /// Show these checks as skipped (by request); they still appear in the report.
    /// (One value per flag, so it never swallows the URLs that follow.)
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    pub skip: Vec<String>,
}

fn options(a: &ProbeArgs, profile: &Profile) -> anyhow::Result<Options> {
    if a.timeout.is_zero() || a.idle_for.is_zero() || a.head_timeout.is_zero() {
        anyhow::bail!("--timeout, --head-timeout and --idle-for must be above zero");
    }
    if a.timeout > Duration::from_secs(3600)
        || a.head_timeout > Duration::from_secs(3600)
        || a.idle_for > Duration::from_secs(24 * 3600)
    {
        anyhow::bail!("--timeout and --head-timeout are at most 1h and --idle-for at most 24h");
    }
    let transport = probe::Choice {
        flag: a.transport.unwrap_or(TransportChoice::Auto),
        profile: match profile.transport {
            _ if a.profile.is_none() => None,
            Some(Transport::Websocket) => Some(TransportChoice::Websocket),
            Some(Transport::Sse) => Some(TransportChoice::Sse),
            Some(Transport::Polling) => Some(TransportChoice::Poll),
            Some(Transport::Raw) | None => None,
        },
    };
    let directs = pair_directs(&a.urls, &a.direct)?
        .into_iter()
        .map(|d| {
            d.map(|d| Target::parse(&d).map_err(|e| anyhow!("--direct {}: {e}", shown(&d))))
                .transpose()
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let client = ClientOpts {
        timeout: a.timeout,
        head_timeout: a.head_timeout,
        ca: a.ca.clone(),
        insecure: a.insecure,
        headers: a.headers.clone(),
    };
    if client.ca.is_some() {
        // A bad --ca file is a usage error of the run, not a failure of each https URL.
        probe::client::tls_config(&client, &[])?;
    }
    Ok(Options {
        client,
        transport,
        origin: a.origin.clone(),
        idle_for: a.idle_for,
        quick: a.quick,
        public: a.public,
        directs,
        proxy: a.proxy,
        path: declared_path(a, profile)?.map(std::sync::Arc::new),
        app: a.app.app_protocol,
        app_sub: a.app.subscribe(),
    })
}

/// The path of --path (or the profile's `path:`, with its declared values) and --override:
/// None when neither declares one.
fn declared_path(
    a: &ProbeArgs,
    profile: &Profile,
) -> anyhow::Result<Option<probe::path::Declared>> {
    let Some((ids, over)) = a.hops.declared(profile)? else {
        return Ok(None);
    };
    let d = probe::path::Declared::new(ids, over).map_err(|e| anyhow!("--path: {e}"))?;
    Ok(Some(d))
}

/// Each URL's --direct endpoint: `URL=DIRECT` names its URL, a bare value pairs by
/// position among the bare values. A URL may itself hold `=` (in its query), so the pair
/// is split where the left side is one of the URLs.
pub fn pair_directs(urls: &[String], directs: &[String]) -> anyhow::Result<Vec<Option<String>>> {
    let mut out: Vec<Option<String>> = vec![None; urls.len()];
    let mut bare = Vec::new();
    for d in directs {
        let named = ["=ws://", "=wss://", "=http://", "=https://"]
            .iter()
            .flat_map(|p| d.match_indices(p).map(|(i, _)| i))
            .find_map(|i| {
                urls.iter()
                    .position(|u| *u == d[..i])
                    .map(|n| (n, &d[i + 1..]))
            });
        match named {
            Some((n, _)) if out[n].is_some() => {
                anyhow::bail!("--direct: URL {} has two direct endpoints", shown(&urls[n]))
            }
            Some((n, direct)) => out[n] = Some(direct.to_string()),
            None => bare.push(d.clone()),
        }
    }
    let mut free = (0..urls.len())
        .filter(|&i| out[i].is_none())
        .collect::<Vec<_>>()
        .into_iter();
    for d in bare {
        let Some(i) = free.next() else {
            anyhow::bail!(
                "--direct {}: more direct endpoints than URLs ({}); pair one as URL=DIRECT",
                shown(&d),
                urls.len()
            );
        };
        out[i] = Some(d);
    }
    Ok(out)
}

pub fn run(a: ProbeArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    let profile = match &a.profile {
        Some(p) => Profile::load("--profile", p)?,
        None => Profile::default(),
    };
    a.out.validate()?;
    let base = a.baseline.load(&[])?;
    let mut r = report(&a, profile)?;
    let json = serde_json::to_value(&r)?;
    let found = crate::findings::threshold::evaluate(&a.thresholds, &json, &["findings"], None)
        .map_err(anyhow::Error::msg)?;
    let crossed = found
        .iter()
        .any(|t| t.status == crate::findings::Status::Fail);
    r.findings.extend(found);
    let subject = super::baseline::url_subject(|f| probe::url_of(f).map(String::from));
    let written = base.apply(&a.baseline, &mut r.findings, subject)?;
    r.summary = crate::findings::Summary::of(&r.findings);
    let extra: Vec<(&std::path::Path, &[u8])> = written
        .iter()
        .map(|(p, t)| (p.as_path(), t.as_bytes()))
        .collect();
    a.out
        .write_with(ctx.color, &extra, |f, p| render(&r, f, a.fail_on, p))?;
    Ok(super::exit::verdict(tripped(&a, &r) || crossed, false))
}

/// Probe every URL of `a` for `profile` (the guided run calls this too).
pub fn report(a: &ProbeArgs, profile: Profile) -> anyhow::Result<FindingsReport> {
    probe::validate_skip(&a.skip)?;
    if let Some(ca) = &a.ca {
        // Checked before any connection: a device or FIFO is refused at once, not mid-run.
        rtcheck_base::input::read("--ca", ca)?;
    }
    let o = options(a, &profile)?;
    let targets: Vec<Target> = a
        .urls
        .iter()
        .map(|u| Target::parse(u).map_err(|e| anyhow!("URL {}: {e}", shown(u))))
        .collect::<anyhow::Result<_>>()?;
    if a.insecure {
        eprintln!("rtcheck probe: WARNING: --insecure: TLS certificates are NOT verified");
    }
    if a.browser {
        browser_ready()?;
    }
    let start = Instant::now();
    let mut findings = probe::probe_all(&targets, &o, &a.skip)?;
    let mut browser_note = None;
    if a.browser {
        let (found, note) = browser_run(&targets, &o, &a.skip)?;
        findings.extend(found);
        if let Some(n) = note {
            // Text shows no target line: say it where --insecure's warning goes too.
            eprintln!("rtcheck probe: {n}");
        }
        browser_note = note;
    }
    let mut target = targets
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if a.insecure {
        target.push_str(" (TLS NOT VERIFIED: --insecure)");
    }
    if let Some(note) = browser_note {
        target.push_str(&format!(" ({note})"));
    }
    findings.extend(probe::nothing_measured(&findings, &target));
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    Ok(FindingsReport::new(
        "probe",
        profile,
        Some(target),
        findings,
        ms,
    ))
}

/// True when `--fail-on` trips on what was not skipped on request (`--skip`, `--quick`).
pub fn tripped(a: &ProbeArgs, r: &FindingsReport) -> bool {
    let mut requested = a.skip.clone();
    if a.quick {
        requested.extend([probe::idle_timeout::ID, probe::heartbeat::ID].map(String::from));
    }
    a.fail_on.trips(&unrequested(&r.findings, &requested))
}

/// `--browser` needs Chromium, found before any probe starts (a build without the
/// `browser` feature refuses the flag here).
#[cfg(feature = "browser")]
fn browser_ready() -> anyhow::Result<()> {
    probe::browser::chrome::find_chromium().map(drop)
}

#[cfg(not(feature = "browser"))]
fn browser_ready() -> anyhow::Result<()> {
    Err(super::feature_off("probe --browser", "browser"))
}

/// The browser's findings and its TLS note.
#[cfg(feature = "browser")]
fn browser_run(
    targets: &[Target],
    o: &Options,
    skip: &[String],
) -> anyhow::Result<(Vec<Finding>, Option<&'static str>)> {
    probe::browser::run(targets, &browser_options(o), skip)
}

#[cfg(not(feature = "browser"))]
fn browser_run(
    _: &[Target],
    _: &Options,
    _: &[String],
) -> anyhow::Result<(Vec<Finding>, Option<&'static str>)> {
    browser_ready().map(|()| (Vec::new(), None))
}

/// The browser waits for the server to close a stream as long as the idle test would.
#[cfg(feature = "browser")]
fn browser_options(o: &Options) -> probe::browser::Options {
    probe::browser::Options {
        client: o.client.clone(),
        transport: o.transport,
        window: if o.quick {
            o.client.timeout
        } else {
            o.idle_for
        },
    }
}

/// Render a probe report: its own Doc for the human formats, the shared findings formats
/// otherwise.
pub fn render(
    r: &FindingsReport,
    format: Format,
    fail_on: FailOn,
    p: Palette,
) -> anyhow::Result<String> {
    Ok(match GaugeFormat::of(format)? {
        GaugeFormat::Text => report::doc::text::render(&report::probe::probe_doc(r)?, &p),
        GaugeFormat::Markdown => report::doc::markdown::render(&report::probe::probe_doc(r)?),
        GaugeFormat::Junit => report::junit::render_named(r, fail_on, &probe::case_name)?,
        GaugeFormat::Html => report::doc::html::render(&report::probe::probe_page(r)?),
        GaugeFormat::Prometheus => {
            report::prometheus::render_with(r, report::prometheus::unix_now(), &|f| {
                probe::url_of(f).map(String::from)
            })
        }
        GaugeFormat::Json | GaugeFormat::Yaml | GaugeFormat::Github | GaugeFormat::Sarif => {
            super::audit::render(r, format, fail_on, p, false)?
        }
    })
}

/// The summary `--fail-on` judges: a check skipped on request (`--skip`, `--quick`) is not
/// a skip to fail on.
fn unrequested(findings: &[Finding], requested: &[String]) -> Summary {
    let mut s = Summary::of(findings);
    s.skip = findings
        .iter()
        .filter(|f| f.status == Status::Skip && !requested.contains(&f.id))
        .count();
    s
}

/// A URL as it may be printed in an error: redacted when it parses, else its scheme only.
fn shown(u: &str) -> String {
    match Target::parse(u) {
        Ok(t) => t.to_string(),
        Err(_) => {
            u.split("://")
                .next()
                .unwrap_or("")
                .chars()
                .take(10)
                .collect::<String>()
                + "://…"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pair_directs;

    #[test]
    fn directs_pair_by_position_or_by_name() {
        let urls: Vec<String> = ["https://app/ws", "https://app/sse?k=v"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let d =
            |v: &[&str]| pair_directs(&urls, &v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(d(&[]).unwrap(), vec![None, None]);
        assert_eq!(
            d(&["ws://10.0.0.5/ws"]).unwrap(),
            vec![Some("ws://10.0.0.5/ws".into()), None]
        );
        // Named: the query's own `=` is not the split.
        assert_eq!(
            d(&["https://app/sse?k=v=http://10.0.0.5/sse"]).unwrap(),
            vec![None, Some("http://10.0.0.5/sse".into())]
        );
        // A bare value fills the first URL without a named one.
        assert_eq!(
            d(&["https://app/ws=ws://a/ws", "http://b/sse"]).unwrap(),
            vec![Some("ws://a/ws".into()), Some("http://b/sse".into())]
        );
        assert!(d(&["http://a", "http://b", "http://c"]).is_err());
        assert!(d(&["https://app/ws=ws://a/ws", "https://app/ws=ws://b/ws"]).is_err());
    }
}
