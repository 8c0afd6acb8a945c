//! `rtcheck verify delivery`: the delivery flags (flattened into `verify`), resolved
//! against the profile, the experiment, and its renderers.
use super::output::AllFormat;
use super::workload::EditArg;
use super::Ctx;
use crate::findings::FailOn;
use crate::profile::Profile;
use crate::report::{FindingsReport, Format, Palette};
use crate::verify::delivery::{self, DeliveryOptions, DeliveryReport};
use anyhow::anyhow;
use rtcheck_base::names::Named;
use rtcheck_wire::delivery::Delivery;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Clients per run when `--connections` is not given (the profile's connections size
/// the memory, they are not all opened).
pub const DEFAULT_CLIENTS: u64 = 10;

#[derive(Debug, Clone, clap::Args)]
#[command(
    edit_arg("app_protocol", |a| a.help(
        "delivery, with --publish and a ws:// --server: the library protocol its \
         clients speak (socketio, signalr, phoenix, actioncable, graphql-ws, \
         stomp, sockjs, mqtt or raw). Default: detected from the URL where it is \
         unambiguous (`?EIO=4`...)"
    )),
    edit_arg("channel", |a| a.help(
        "delivery, with --app-protocol: what to subscribe to (Phoenix topic, \
         ActionCable channel, STOMP destination, MQTT topic)"
    )),
    edit_arg("event", |a| a.help(
        "delivery, with --app-protocol: the Socket.IO event or SignalR method \
         carrying the payload, and the one a ws publisher sends (default \
         `message`)"
    ))
)]
pub struct DeliveryFlags {
    /// delivery: snapshot, seq-ring, session-ack or all (default: the profile's design,
    /// else all).
    #[arg(long, value_parser = ["snapshot", "seq-ring", "session-ack", "all"])]
    pub delivery: Option<String>,
    /// delivery: workload profile from `choose --save` (rate, size, max_disconnect; its
    /// transport and delivery design narrow the run, --transport and --delivery widen it).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// delivery: transport of the clients (default: the profile's, else sse).
    #[arg(long, value_parser = ["sse", "websocket", "poll"])]
    pub transport: Option<String>,
    /// delivery: messages per second (default: the profile's rate).
    #[arg(long, value_name = "MSGS_PER_S")]
    pub rate: Option<f64>,
    /// delivery: bytes per message (default: the profile's size).
    #[arg(long, value_name = "BYTES", value_parser = rtcheck_base::units::parse_size)]
    pub size: Option<u64>,
    /// delivery: how long clients stay away (default: the profile's max_disconnect).
    #[arg(long, value_name = "DUR", value_parser = rtcheck_base::units::parse_duration)]
    pub max_disconnect: Option<Duration>,
    /// delivery: server ring, bytes (100KiB) or messages (1024); default: max_disconnect
    /// x rate plus one second.
    #[arg(long, value_name = "SIZE")]
    pub ring: Option<String>,
    /// delivery: session TTL for session-ack (default: twice the longer of max_disconnect and
    /// the ring's span).
    #[arg(long, value_name = "DUR", value_parser = rtcheck_base::units::parse_duration)]
    pub session_ttl: Option<Duration>,
    /// delivery: measure another server on loopback: http://127.0.0.1:PORT (rtcheck's
    /// protocol), or with --publish the clients' URL of any server (ws:// or
    /// wss://HOST:PORT/PATH, or http(s)://HOST:PORT/PATH for SSE; any name with
    /// --connect-to).
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// delivery, a foreign --server: its process(es), sampled through the runs (RSS,
    /// fds, threads, CPU): `"$(pidof NAME)"` or 1,2,3. Default: the process listening
    /// on --server's port, when it runs here and its fds are readable.
    #[arg(long, value_name = "PIDS", value_parser = super::parse_pids)]
    pub pid: Option<super::PidList>,
    /// delivery, a foreign --server: who publishes: `ws` (rtcheck sends each message on
    /// a WebSocket of its own; the server broadcasts it), 'POST URL' (the app's publish
    /// API), or `server` (rtcheck's protocol, the default).
    #[arg(long, value_name = "HOW", value_parser = crate::bench::publisher::PublishVia::parse)]
    pub publish: Option<crate::bench::publisher::PublishVia>,
    /// delivery, with --publish: what rtcheck publishes, a template with {seq}, {ts},
    /// {pad}, {marker} (default: rtcheck's JSON payload).
    #[arg(long, value_name = "TEMPLATE")]
    pub message: Option<String>,
    /// delivery, with --publish and a ws:// --server: sent by every client (and a ws
    /// publisher) after connecting (join a room).
    #[arg(long, value_name = "TEXT")]
    pub subscribe: Option<String>,
    /// delivery, with --publish: JSON path of the seq in what clients receive.
    #[arg(long, value_name = "PATH")]
    pub seq_path: Option<String>,
    /// delivery, with --publish: JSON path of the scheduled time (alone, on SSE: the
    /// seq is the event's `id:`).
    #[arg(long, value_name = "PATH")]
    pub ts_path: Option<String>,
    /// delivery, with --publish 'POST URL': a header ('Name: value'; never printed).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// delivery, with --publish: how a client comes back: none, last-event-id (SSE's
    /// default), 'query since={seq}', 'message TEMPLATE' (WebSocket); {seq} is the last
    /// seq it received.
    #[arg(long, value_name = "HOW", value_parser = crate::verify::delivery::foreign::Resume::parse)]
    pub resume: Option<crate::verify::delivery::foreign::Resume>,
    #[command(flatten)]
    pub app: super::reach::AppProtocolArgs,
    /// delivery: lowest finding status that exits 1.
    #[arg(long, value_enum, default_value_t = FailOn::Fail)]
    pub fail_on: FailOn,
    /// delivery: fail (exit 1) when a figure crosses EXPR, e.g. 'lost_silently == 0' (every
    /// run), 'resume_ms.max < 2s': keys of the JSON report, at the top or in each of
    /// `runs`; an unknown name is exit 2. Repeatable.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = crate::findings::threshold::parse)]
    pub thresholds: Vec<crate::findings::threshold::Threshold>,
    #[command(flatten)]
    pub reach: super::reach::ReachArgs,
    #[command(flatten)]
    pub baseline: super::baseline::BaselineArgs,
}

/// `--ring`: a bare number is messages, a size with a unit is bytes (rounded up to
/// whole messages of `size`).
pub fn ring_messages(s: &str, size: u64) -> anyhow::Result<u64> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map_err(|_| anyhow!("--ring {t}: too large"));
    }
    let bytes = rtcheck_base::units::parse_size(t).map_err(|e| anyhow!("--ring: {e}"))?;
    Ok(bytes.div_ceil(size.max(1)))
}

/// `http://HOST:PORT[/]` on loopback.
pub fn server_addr(url: &str) -> anyhow::Result<SocketAddr> {
    let shown = rtcheck_base::redact::url(url);
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("--server {shown}: expected http://HOST:PORT"))?;
    let hp = rest.trim_end_matches('/');
    let a = rtcheck_base::os::addr::parse_host_port(hp).ok_or_else(|| {
        anyhow!("--server {shown}: expected http://HOST:PORT with an IP or localhost")
    })?;
    rtcheck_base::os::addr::ensure_loopback(&a)?;
    Ok(a)
}

/// The profile's transport as `--transport` names it (None: it declares none).
fn profile_transport(p: &Profile) -> Option<&'static str> {
    match p.transport? {
        rtcheck_wire::transport::Transport::Websocket => Some("websocket"),
        rtcheck_wire::transport::Transport::Polling => Some("poll"),
        _ => Some("sse"),
    }
}

/// The delivery modes and transport: the flags, else what the profile declares (its
/// design from its loss answer, its transport), else every mode over SSE; and the
/// sentence saying what the profile narrowed, for the output.
fn scope(f: &DeliveryFlags, p: Option<&Profile>) -> (Vec<Delivery>, String, Option<String>) {
    let design = p.and_then(|p| crate::review::items::design(p).0);
    let d = design.filter(|_| f.delivery.is_none());
    let t = p
        .and_then(profile_transport)
        .map(String::from)
        .filter(|_| f.transport.is_none());
    let delivery = match (f.delivery.as_deref(), d) {
        (Some("all") | None, None) => Delivery::WEAKEST_FIRST.to_vec(),
        // The flag's values are checked by clap: one of the names, or `all`.
        (Some(m), _) => Delivery::from_name(m).into_iter().collect(),
        (None, Some(m)) => vec![m],
    };
    let transport = f
        .transport
        .clone()
        .or_else(|| t.clone())
        .unwrap_or_else(|| "sse".into());
    let said = match (&d, &t) {
        (None, None) => None,
        (Some(d), None) => Some(format!(
            "narrowed to the profile's design {d} (--delivery all widens it)"
        )),
        (None, Some(t)) => Some(format!(
            "narrowed to the profile's transport {t} (--transport widens it)"
        )),
        (Some(d), Some(t)) => Some(format!(
            "narrowed to the profile's design {d} over {t} (--delivery all, --transport widen it)"
        )),
    };
    (delivery, transport, said)
}

/// With --publish ws|'POST URL': the foreign server, how rtcheck publishes to it and
/// reads it back; None for rtcheck's own protocol. Bad combinations are one line.
fn foreign_target(
    f: &DeliveryFlags,
    size: u64,
) -> anyhow::Result<Option<delivery::foreign::ForeignTarget>> {
    use delivery::foreign::ForeignTarget;
    let Some(via) = foreign_via(f)? else {
        return Ok(None);
    };
    let url = f.server.as_deref().ok_or_else(|| {
        anyhow!(
            "--publish {}: needs --server URL (the foreign server's clients' URL)",
            via.name()
        )
    })?;
    let (server, post) = foreign_endpoints(f, url, &via)?;
    let ws = server.target.proto == crate::bench::target::Proto::Ws;
    check_foreign_flags(f, &via, ws, &rtcheck_base::redact::url(url))?;
    let headers = f
        .headers
        .iter()
        .map(|h| crate::bench::publisher::parse_header(h))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let (t, decoder) = crate::bench::template::message_and_decoder(
        f.message.as_deref(),
        f.seq_path.as_deref(),
        f.ts_path.as_deref(),
        !ws,
    )
    .map_err(anyhow::Error::msg)?;
    if t.min_len() as u64 > size {
        anyhow::bail!(
            "--message: the template is up to {} bytes before padding, above --size {size}",
            t.min_len()
        );
    }
    let resume = foreign_resume(f, ws)?;
    let app = ws
        .then(|| crate::bench::appws::resolve(f.app.app_protocol, url))
        .flatten();
    let app_sub = f.app.subscribe();
    Ok(Some(ForeignTarget {
        app_protocol: app.as_ref().map(|(_, s)| s.clone()),
        app: app.map(|(p, _)| (p, app_sub)),
        url: rtcheck_base::redact::url(url),
        publish: via.name(),
        resume: resume.name().into(),
        message: f
            .message
            .clone()
            .unwrap_or_else(|| crate::bench::template::DEFAULT_MESSAGE.into()),
        subscribe: f.subscribe.clone(),
        seq_path: f.seq_path.clone(),
        ts_path: f.ts_path.clone(),
        raw_url: url.to_string(),
        via,
        headers,
        resume_as: resume,
        decoder,
        ws,
        server,
        post,
        pids: f.pid.clone().map(|p| p.0).unwrap_or_default(),
    }))
}

/// `--publish ws|'POST URL'`, or None (rtcheck's protocol), where the flags of a
/// foreign server are refused and rtcheck's own server's flags are refused with one.
fn foreign_via(f: &DeliveryFlags) -> anyhow::Result<Option<crate::bench::publisher::PublishVia>> {
    use crate::bench::publisher::PublishVia;
    match &f.publish {
        None | Some(PublishVia::Server) => {
            let foreign_only = f.message.is_some()
                || f.subscribe.is_some()
                || f.seq_path.is_some()
                || f.ts_path.is_some()
                || !f.headers.is_empty()
                || f.resume.is_some()
                || f.app.any()
                || f.reach.connect_to.is_some()
                || f.reach.ca.is_some()
                || f.reach.allow_remote
                || f.pid.is_some();
            if foreign_only {
                anyhow::bail!("--message, --subscribe, --seq-path, --ts-path, -H, --resume, --app-protocol, --channel, --event, --pid, --connect-to and --ca go with --publish ws or --publish 'POST URL' (a foreign --server), as does --allow-remote");
            }
            Ok(None)
        }
        Some(_) if f.delivery.is_some() || f.ring.is_some() || f.session_ttl.is_some() => {
            anyhow::bail!("--delivery, --ring and --session-ttl set up rtcheck's own server; with --publish the server is yours (its resume is --resume)")
        }
        Some(v) => Ok(Some(v.clone())),
    }
}

/// The clients' URL and the POST's, resolved (loopback, or `--connect-to`) with their
/// TLS set up once; `--ca` only where there is TLS.
fn foreign_endpoints(
    f: &DeliveryFlags,
    url: &str,
    via: &crate::bench::publisher::PublishVia,
) -> anyhow::Result<(
    crate::bench::publisher::Endpoint,
    Option<crate::bench::publisher::Endpoint>,
)> {
    use crate::bench::target::Proto;
    let server_tls = crate::bench::target::parse_url(url).is_ok_and(|u| u.tls);
    if f.reach.ca.is_some() && !server_tls && !via.is_tls() {
        anyhow::bail!("--ca applies to wss:// and https://");
    }
    // --allow-remote: the server's own address, resolved once, goes where --connect-to
    // would (the URL keeps its name for TLS and Host).
    let connect_to = f.reach.connect_to_for(url)?;
    let remote = connect_to.is_some() && f.reach.connect_to.is_none();
    if let (true, crate::bench::publisher::PublishVia::Post { url: post }) = (remote, via) {
        let (s, p) = (
            crate::bench::target::parse_url(url)?,
            crate::bench::target::parse_url(post)?,
        );
        if !crate::bench::target::same_host_port(&s, &p) {
            anyhow::bail!(
                "--publish POST {}: with --allow-remote it goes to --server's host and port ({})",
                p.shown,
                s.authority
            );
        }
    }
    let trust = f.reach.trust()?;
    let server = crate::bench::publisher::Endpoint::new(url, connect_to, &trust)
        .map_err(|e| anyhow!("--server {e}"))?;
    if server.target.proto == Proto::Raw {
        anyhow::bail!(
            "--server {}: tcp:// has no delivery runs; use ws(s):// or http(s):// (SSE)",
            rtcheck_base::redact::url(url)
        );
    }
    let post = via.post(connect_to, &trust)?;
    Ok((server, post))
}

/// The flags that must fit the foreign server's transport and the way it is published to.
fn check_foreign_flags(
    f: &DeliveryFlags,
    via: &crate::bench::publisher::PublishVia,
    ws: bool,
    shown: &str,
) -> anyhow::Result<()> {
    use crate::bench::publisher::PublishVia;
    let transport = if ws { "websocket" } else { "sse" };
    if f.transport.as_deref().is_some_and(|t| t != transport) {
        anyhow::bail!(
            "--transport {}: the --server URL {shown} is {transport}",
            f.transport.as_deref().unwrap_or_default()
        );
    }
    if *via == PublishVia::Ws && !ws {
        anyhow::bail!("--publish ws needs a ws:// or wss:// --server (rtcheck publishes on a WebSocket of its own there); for SSE use --publish 'POST URL'");
    }
    if !f.headers.is_empty() && !matches!(via, PublishVia::Post { .. }) {
        anyhow::bail!("-H goes with --publish 'POST URL'");
    }
    if !ws && f.app.any() {
        anyhow::bail!("--app-protocol, --channel and --event: the --server URL {shown} is SSE; a library protocol rides on a ws:// URL");
    }
    if !ws && f.subscribe.is_some() {
        anyhow::bail!("--subscribe: an SSE client sends nothing after connecting; put the channel in the --server URL");
    }
    Ok(())
}

/// `--resume`, or the transport's default, checked against the transport.
fn foreign_resume(f: &DeliveryFlags, ws: bool) -> anyhow::Result<delivery::foreign::Resume> {
    use delivery::foreign::Resume;
    let resume = f.resume.clone().unwrap_or(if ws {
        Resume::None
    } else {
        Resume::LastEventId
    });
    match (&resume, ws) {
        (Resume::LastEventId, true) => anyhow::bail!("--resume last-event-id is SSE's; a WebSocket resumes by 'query since={{seq}}' or 'message TEMPLATE'"),
        (Resume::Message(_), false) => anyhow::bail!("--resume message: an SSE client sends nothing after connecting; use last-event-id or 'query since={{seq}}'"),
        _ => {}
    }
    Ok(resume)
}

/// Flags over the profile over the defaults.
pub fn options(
    f: &DeliveryFlags,
    connections: Option<u64>,
    timeout: Duration,
) -> anyhow::Result<DeliveryOptions> {
    let loaded = match &f.profile {
        Some(path) => Some(Profile::load("--profile", path)?),
        None => None,
    };
    let (modes, transport, said) = scope(f, loaded.as_ref());
    let p = loaded.unwrap_or_default();
    let rate = f.rate.unwrap_or(p.rate);
    let size = f.size.unwrap_or(p.size);
    let max_disconnect = f.max_disconnect.unwrap_or(p.max_disconnect);
    let ring_messages = match &f.ring {
        Some(s) => ring_messages(s, size)?,
        None => delivery::default_ring_messages(rate, max_disconnect),
    };
    let foreign = foreign_target(f, size)?;
    // A foreign server's runs come back with --resume: rtcheck's modes do not apply.
    let (delivery, transport, scope) = match &foreign {
        Some(t) => (
            Vec::new(),
            if t.ws { "websocket" } else { "sse" }.to_string(),
            None,
        ),
        None => (modes, transport, said),
    };
    Ok(DeliveryOptions {
        delivery,
        transport: transport_named(&transport)?,
        connections: connections.unwrap_or(DEFAULT_CLIENTS),
        rate,
        size,
        max_disconnect,
        ring_messages,
        session_ttl: f.session_ttl.unwrap_or_else(|| {
            let span = Duration::from_secs_f64(ring_messages as f64 / rate.max(1e-3));
            delivery::default_session_ttl(max_disconnect, span.min(Duration::from_secs(86_400)))
        }),
        profile_connections: p.connections,
        server: match &foreign {
            Some(t) => Some(t.server.target.addr),
            None => f.server.as_deref().map(server_addr).transpose()?,
        },
        timeout,
        allow_remote: f.reach.allow_remote && foreign.is_some(),
        foreign,
        scope,
    })
}

/// The transport `--transport` (clap checked it), the profile or the foreign URL named.
fn transport_named(t: &str) -> anyhow::Result<rtcheck_wire::transport::Transport> {
    delivery::parse_transport_flag(t)
        .ok_or_else(|| anyhow::anyhow!("--transport {t}: sse, websocket or poll"))
}

/// `verify delivery` as `choose --verify` and `audit --verify` run it for a profile: the
/// delivery the profile's loss answer implies (every mode when it has none), its
/// transport, rate, size and max disconnect, [`DEFAULT_CLIENTS`] clients; the findings.
pub fn for_profile(
    p: &Profile,
    timeout: Duration,
) -> anyhow::Result<Vec<crate::findings::Finding>> {
    let delivery = match crate::review::items::design(p).0 {
        Some(d) => vec![d],
        None => Delivery::WEAKEST_FIRST.to_vec(),
    };
    let transport = profile_transport(p).unwrap_or("sse");
    let ring_messages = delivery::default_ring_messages(p.rate, p.max_disconnect);
    let span = Duration::from_secs_f64(ring_messages as f64 / p.rate.max(1e-3));
    let o = DeliveryOptions {
        delivery,
        transport: transport_named(transport)?,
        connections: DEFAULT_CLIENTS,
        rate: p.rate,
        size: p.size,
        max_disconnect: p.max_disconnect,
        ring_messages,
        session_ttl: delivery::default_session_ttl(p.max_disconnect, span),
        profile_connections: p.connections,
        server: None,
        timeout,
        foreign: None,
        scope: None,
        allow_remote: false,
    };
    o.validate()
        .map_err(|e| anyhow!("verify delivery for the profile: {e}"))?;
    rtcheck_base::os::signal::install_interrupt_handler();
    Ok(measure(&o, true)?.findings)
}

/// The progress line on stderr: drawn only on a terminal, outside CI, once the run has
/// taken a second; the elapsed time against the expected one. Cleared on drop.
struct Ticker {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(enabled: bool, o: &DeliveryOptions) -> Ticker {
        use std::io::IsTerminal;
        use std::sync::atomic::Ordering;
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let show = enabled && std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
        if !show {
            return Ticker { done, thread: None };
        }
        let (runs, about) = delivery::expected(o);
        let flag = done.clone();
        let thread = std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            while t0.elapsed() < Duration::from_secs(1) {
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let bar = indicatif::ProgressBar::new(about.as_millis() as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} verify delivery [{elapsed}] {bar:20} {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_message(format!(
                "{runs} runs at once, about {} s",
                about.as_secs_f64().ceil()
            ));
            while !flag.load(Ordering::SeqCst) {
                bar.set_position(t0.elapsed().as_millis() as u64);
                bar.tick();
                std::thread::sleep(Duration::from_millis(120));
            }
            bar.finish_and_clear();
        });
        Ticker {
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The experiment, with its progress line; after Ctrl-C any outcome is `Interrupted`
/// (exit 130, no partial report).
fn measure(o: &DeliveryOptions, progress: bool) -> anyhow::Result<DeliveryReport> {
    use rtcheck_base::os::signal::{interrupted, Interrupted};
    const STOPPED: &str = "verify delivery interrupted; its server and clients were stopped";
    let ticker = Ticker::start(progress, o);
    let r = delivery::measure(o);
    drop(ticker);
    match r {
        Err(e) if interrupted() => Err(e.context(Interrupted(STOPPED))),
        r => {
            rtcheck_base::os::signal::check_interrupted(STOPPED)?;
            r
        }
    }
}

pub fn run(
    f: &DeliveryFlags,
    connections: Option<u64>,
    timeout: Duration,
    out: &super::OutputArgs<super::output::AllFormats>,
    ctx: Ctx,
    quiet: bool,
) -> anyhow::Result<ExitCode> {
    out.validate()?;
    let base = f.baseline.load(&[])?;
    let o = options(f, connections, timeout)?;
    o.validate()?;
    if let Some(t) = o.foreign.as_ref().filter(|_| f.reach.connect_to.is_none()) {
        let u = f.server.as_deref().unwrap_or_default();
        if !crate::bench::target::parse_url(u).is_ok_and(|u| {
            rtcheck_base::os::addr::parse_host(&u.host)
                .is_some_and(rtcheck_base::os::addr::is_loopback)
        }) {
            let load = delivery::foreign::Load {
                clients: o.connections as usize,
                away: o.max_disconnect,
                rate: o.rate,
                size: o.size as usize,
            };
            let plan = delivery::foreign::remote_plan(t, load);
            eprintln!(
                "{}",
                crate::report::text::wrap(&plan, 80, "", "  ").trim_end()
            );
        }
    }
    rtcheck_base::os::signal::install_interrupt_handler();
    let mut r = measure(&o, !quiet)?;
    let json = serde_json::to_value(&r)?;
    let found = crate::findings::threshold::evaluate(&f.thresholds, &json, &["runs"], None)
        .map_err(anyhow::Error::msg)?;
    let crossed = found
        .iter()
        .any(|t| t.status == crate::findings::Status::Fail);
    r.findings.extend(found);
    let written = base.apply(&f.baseline, &mut r.findings, |_| Default::default())?;
    r.summary = crate::findings::Summary::of(&r.findings);
    let extra: Vec<(&std::path::Path, &[u8])> = written
        .iter()
        .map(|(p, t)| (p.as_path(), t.as_bytes()))
        .collect();
    out.write_with(ctx.color, &extra, |f, p| render(&r, f, &p))?;
    let (code, nothing) = exit_of(&r, f.fail_on.trips(&r.summary) || crossed);
    if let Some(why) = nothing {
        eprintln!(
            "rtcheck: verify delivery: {}",
            rtcheck_base::escape::plain(&why)
        );
    }
    Ok(code)
}

/// The exit of a written report: 1 when a finding or threshold tripped, else 1 with the
/// reason when it measured nothing (no run was made: nothing passes on nothing), else 0.
fn exit_of(r: &DeliveryReport, tripped: bool) -> (ExitCode, Option<String>) {
    let nothing = r.invalid_reason.clone();
    (super::exit::verdict(tripped, nothing.is_some()), nothing)
}

pub fn render(r: &DeliveryReport, format: Format, p: &Palette) -> anyhow::Result<String> {
    use crate::report::{delivery::delivery_doc, doc};
    Ok(match AllFormat::of(format)? {
        AllFormat::Text => {
            doc::text::render(&delivery_doc(r)?, p)
                + &crate::report::gates::text(&gate_findings(r), *p)
        }
        AllFormat::Markdown => {
            doc::markdown::render(&delivery_doc(r)?)
                + &crate::report::gates::markdown(&gate_findings(r))
        }
        AllFormat::Json => crate::report::json::render(r)?,
        AllFormat::Yaml => crate::report::yaml::render(r)?,
        AllFormat::Junit => crate::report::junit::render(&as_findings(r), FailOn::Fail)?,
        AllFormat::Github => crate::report::github::render(&as_findings(r)),
        AllFormat::Html => {
            crate::report::gates::html(doc::html::render(&delivery_doc(r)?), &gate_findings(r))
        }
        AllFormat::Sarif => crate::report::sarif::render(&as_findings(r))?,
    })
}

/// The findings the report lists after its own (`report::delivery::is_gate`): thresholds,
/// baseline problems and accepted findings.
fn gate_findings(r: &DeliveryReport) -> Vec<crate::findings::Finding> {
    let gates = r
        .findings
        .iter()
        .filter(|f| crate::report::delivery::is_gate(f));
    gates.cloned().collect()
}

fn as_findings(r: &DeliveryReport) -> FindingsReport {
    FindingsReport::new(
        "verify",
        Profile::default(),
        Some(r.target.clone()),
        r.findings.clone(),
        r.duration_ms as f64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_is_messages_or_bytes() {
        assert_eq!(ring_messages("1024", 100).unwrap(), 1024);
        assert_eq!(ring_messages("100KiB", 1024).unwrap(), 100);
        assert_eq!(ring_messages("100KB", 1024).unwrap(), 98);
        assert!(ring_messages("lots", 1024).is_err());
    }

    /// No run was made (no runs, no findings): the report says it is invalid (JSON
    /// `valid` false with the reason, a bad tone and the reason in the verdict) and the
    /// exit is 1, never 0; one run measured is a plain exit 0.
    #[test]
    fn a_report_with_no_run_is_invalid_and_does_not_exit_0() {
        use crate::findings::Summary;
        let p = Profile::default();
        let o = DeliveryOptions {
            delivery: vec![Delivery::SessionAck],
            transport: rtcheck_wire::transport::Transport::Sse,
            connections: 2,
            rate: 10.0,
            size: 64,
            max_disconnect: Duration::from_secs(1),
            ring_messages: 16,
            session_ttl: Duration::from_secs(3),
            profile_connections: p.connections,
            server: None,
            timeout: Duration::from_secs(5),
            foreign: None,
            scope: None,
            allow_remote: false,
        };
        let invalid_reason = delivery::invalid_reason(&[]);
        let mut r = DeliveryReport {
            kind: "verify-delivery",
            target: "rtcheck serve".into(),
            sizing: delivery::Sized::of(&o),
            options: o,
            runs: vec![],
            summary: Summary::of(&[]),
            findings: vec![],
            duration_ms: 1,
            publisher: None,
            server_process: None,
            server_unmeasured: None,
            valid: invalid_reason.is_none(),
            invalid_reason,
        };
        let json = render(&r, Format::Json, &Palette::plain()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["runs"].as_array().map(Vec::len), Some(0), "{v}");
        assert_eq!(v["summary"]["pass"], 0, "{v}");
        assert_eq!(v["valid"], false, "{v}");
        let why = v["invalid_reason"].as_str().unwrap_or_default();
        assert!(why.contains("no run was made"), "{v}");
        let doc = crate::report::delivery::delivery_doc(&r).unwrap();
        assert_eq!(doc.verdict.tone, crate::report::doc::Tone::Bad);
        let text = render(&r, Format::Text, &Palette::plain()).unwrap();
        // Verdict first (the line may wrap at 80 columns).
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let head = "verify delivery (rtcheck serve): invalid: nothing measured: no run was made";
        assert!(flat.starts_with(head), "{text}");
        let (code, why) = exit_of(&r, false);
        assert_eq!(code, super::super::exit::invalid());
        assert!(why.expect("a reason").contains("no run was made"));
        // A run in which no client ran: made, but it measured nothing, and says so.
        let spec = delivery::run::RunSpec {
            delivery: "seq-ring",
            disconnect: delivery::client::Disconnect::Clean,
            case: "within-ring",
            clients: 1,
            away: Duration::from_secs(1),
        };
        r.runs.push(delivery::run::summarize(&spec, &[], 0));
        r.invalid_reason = delivery::invalid_reason(&r.runs);
        r.valid = r.invalid_reason.is_none();
        let why = r
            .invalid_reason
            .clone()
            .expect("an invalid run makes the report invalid");
        assert!(
            why.starts_with("invalid: 1 of 1 run(s)")
                && why.contains("seq-ring clean within-ring: no client ran"),
            "{why}"
        );
        assert_eq!(exit_of(&r, false).0, super::super::exit::invalid());
        let v: serde_json::Value =
            serde_json::from_str(&render(&r, Format::Json, &Palette::plain()).unwrap()).unwrap();
        assert_eq!(v["valid"], false, "{v}");
        // A run that measured (what it found is the findings' business): valid.
        r.runs[0].verdict = "0 lost within the ring".into();
        r.invalid_reason = delivery::invalid_reason(&r.runs);
        r.valid = r.invalid_reason.is_none();
        assert_eq!(exit_of(&r, false), (ExitCode::SUCCESS, None));
        assert_eq!(exit_of(&r, true).0, super::super::exit::findings());
        let v: serde_json::Value =
            serde_json::from_str(&render(&r, Format::Json, &Palette::plain()).unwrap()).unwrap();
        assert_eq!(v["valid"], true, "{v}");
        assert!(v.get("invalid_reason").is_none(), "{v}");
    }

    #[test]
    fn servers_must_be_loopback_urls() {
        assert_eq!(server_addr("http://127.0.0.1:8080/").unwrap().port(), 8080);
        assert!(server_addr("http://localhost:1").is_ok());
        assert!(server_addr("127.0.0.1:80").is_err());
        let e = server_addr("http://10.0.0.1:80").unwrap_err().to_string();
        assert!(e.contains("not a loopback"), "{e}");
    }
}
