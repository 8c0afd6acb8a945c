//! `rtcheck probe URL`: the deployed realtime path (proxy + server) checked from outside.
//! `session` makes a handful of connections and records what each saw, timed per read;
//! one file per check judges those observations (pure); `proxy` names the proxy and
//! writes its fix. The flags and the glue to the report are `cmd::probe`.
pub mod browser;
pub mod client;
pub mod closed;
pub mod compression;
pub mod fallback;
pub mod heartbeat;
pub mod http2;
pub mod idle_timeout;
mod ids;
pub mod origin;
pub mod path;
pub mod polling;
pub mod progress;
pub mod proxy;
pub mod reachable;
pub mod response;
pub mod resume;
pub mod session;
pub mod sse_buffering;
pub mod target;
pub mod upgrade;
pub mod ws_h2;

use crate::findings::{Finding, Fix, Status};
use client::ClientOpts;
pub use ids::CheckId;
use proxy::Proxy;
use session::{Progress, SseObs, Watch, WsObs};
use std::collections::BTreeMap;
use std::time::Duration;
use target::{Scheme, Target};

/// Static facts of a probe check: its stable id, the title its findings start with (the
/// URL follows), the evidence they cite, and its judge of one URL (None: the check does
/// not apply to that URL).
pub struct Meta {
    pub id: CheckId,
    pub title: &'static str,
    pub evidence: &'static [&'static str],
    pub run: fn(&UrlObs) -> Option<Finding>,
}

impl Meta {
    /// What `explain` shows of it.
    pub fn info(&self) -> crate::findings::CheckInfo {
        crate::findings::CheckInfo {
            id: self.id.as_str().into(),
            kind: "probe check".into(),
            title: self.title.into(),
            why: String::new(),
            fix: String::new(),
            evidence: crate::findings::evidence_ids(self.evidence),
            see: "docs/probe.md; run it: rtcheck probe URL".into(),
        }
    }
}

/// Every check, in report order: the id list (`IDS`, `--skip`) and the judging order
/// (`judge`) both come from here. Polling checks judge only a URL probed as polling, path
/// checks only with a declared path.
pub const CHECKS: &[Meta] = &[
    reachable::META,
    response::META,
    upgrade::META,
    sse_buffering::META,
    idle_timeout::META,
    heartbeat::META,
    resume::META,
    compression::META,
    http2::META,
    origin::META,
    ws_h2::META,
    MEASURED,
    polling::STATUS,
    polling::CACHE,
    polling::CONDITIONAL,
    polling::LATENCY,
    polling::OVERHEAD,
    path::HOPS,
    path::IDLE,
];

/// Every check id, in report order.
pub const IDS: [&str; CHECKS.len()] = {
    let mut ids = [""; CHECKS.len()];
    let mut i = 0;
    while i < CHECKS.len() {
        ids[i] = CHECKS[i].id.as_str();
        i += 1;
    }
    ids
};

/// The report-level finding of a run in which no check measured anything (no verdict).
pub const NOTHING_MEASURED: &str = MEASURED.id.as_str();

/// Judged over the whole run (`nothing_measured`), never per URL.
const MEASURED: Meta = Meta {
    id: CheckId::Measured,
    title: "No verdict, nothing was measured",
    evidence: &[],
    run: |_| None,
};

/// The Origin of the cross-site handshake (`.invalid` never resolves: RFC 2606).
pub const FOREIGN_ORIGIN: &str = "https://rtcheck-probe.invalid";
/// Events a quick watch waits for before it stops.
const QUICK_EVENTS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TransportChoice {
    Auto,
    Websocket,
    Sse,
    Poll,
}

/// The transport to probe a URL as: `--transport`, else the profile's, which fills only
/// what the URL's scheme leaves open (an explicit ws:// is never probed as SSE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    pub flag: TransportChoice,
    pub profile: Option<TransportChoice>,
}

impl Choice {
    pub fn for_url(&self, t: &Target) -> TransportChoice {
        if self.flag != TransportChoice::Auto {
            return self.flag;
        }
        match self.profile {
            // ws(s):// says WebSocket; http(s):// says HTTP, leaving SSE or polling open.
            Some(c @ (TransportChoice::Sse | TransportChoice::Poll)) if !t.scheme.websocket() => c,
            _ => TransportChoice::Auto,
        }
    }
}

/// What a URL was probed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    WebSocket,
    Sse,
    Poll,
}

impl Kind {
    /// The transport a URL probed as this kind carries (the hops' and lint's word).
    pub fn transport(self) -> rtcheck_wire::transport::Transport {
        use rtcheck_wire::transport::Transport;
        match self {
            Kind::WebSocket => Transport::Websocket,
            Kind::Sse => Transport::Sse,
            Kind::Poll => Transport::Polling,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub client: ClientOpts,
    pub transport: Choice,
    pub origin: Option<String>,
    pub idle_for: Duration,
    pub quick: bool,
    pub public: bool,
    /// Each URL's `--direct` endpoint (same order as the URLs).
    pub directs: Vec<Option<Target>>,
    /// `--proxy`: the proxy on the path when its headers do not name it.
    pub proxy: Option<Proxy>,
    /// `--path` / the profile's `path:` with its chain: the `path-*` checks.
    pub path: Option<std::sync::Arc<path::Declared>>,
    /// `--app-protocol` (None: detected from each URL) and `--channel`/`--event`.
    pub app: Option<rtcheck_wire::appproto::AppProtocol>,
    pub app_sub: rtcheck_wire::appproto::Subscribe,
}

/// The library protocol to speak on `t`: the one given (raw: none), else the one its
/// path names unambiguously, with why.
pub fn app_spec(t: &Target, o: &Options) -> Option<session::AppSpec> {
    use rtcheck_wire::appproto::{detect, AppProtocol};
    let (protocol, why) = match o.app {
        Some(AppProtocol::Raw) => return None,
        Some(p) => (p, "--app-protocol".to_string()),
        None => {
            let d = detect(&t.path_and_query)?;
            (d.protocol, d.why)
        }
    };
    Some(session::AppSpec {
        protocol,
        why,
        sub: o.app_sub.clone(),
    })
}

/// Everything observed for one URL: the checks' only input.
#[derive(Debug, Clone)]
pub struct UrlObs {
    pub target: Target,
    pub kind: Kind,
    /// The URL could not be probed: the step that failed (only `reachable` is judged).
    pub unreached: Option<reachable::Unreached>,
    /// The event stream's head did not come within this bound (ms): held on the path.
    pub head_held_ms: Option<f64>,
    pub ws: Option<WsObs>,
    /// The Origin the own-origin handshake sent.
    pub origin_sent: Option<String>,
    pub origin_status: Option<u16>,
    pub sse: Option<SseObs>,
    /// The reconnect with Last-Event-ID, or why it could not be made.
    pub resume: Option<Result<resume::ResumeObs, String>>,
    /// None: plain http (not measured); Some(None): TLS without ALPN.
    pub alpn: Option<Option<String>>,
    /// The ALPN connection failed (after the stream itself was probed).
    pub alpn_error: Option<String>,
    pub direct: Option<SseObs>,
    /// The polls of a URL probed as polling (`polling`).
    pub poll: Option<polling::PollObs>,
    /// The --direct endpoint's WebSocket handshake (same Origin as through the path).
    pub direct_ws: Option<WsObs>,
    /// The --direct endpoint could not be probed.
    pub direct_error: Option<String>,
    /// When the first connection was made, ms since the run began (URLs run at once).
    pub started_ms: f64,
    pub quick: bool,
    pub public: bool,
    pub idle_for_ms: f64,
    pub proxy: Proxy,
    /// The declared path, when one was (`path::checks`).
    pub path: Option<std::sync::Arc<path::Declared>>,
    /// A Socket.IO, SignalR or Phoenix URL whose upgrade failed: the library's HTTP
    /// fallback (Engine.IO polling, SignalR's negotiation, Phoenix's long poll), asked once.
    pub fallback: Option<fallback::Fallback>,
    /// wss:// over h2: extended CONNECT advertised and tried (RFC 8441), or why not read.
    pub ws_h2: Option<Result<ws_h2::H2Obs, String>>,
}

impl UrlObs {
    /// What the --direct endpoint answered, when it was probed.
    pub fn direct_status(&self) -> Option<u16> {
        let ws = self.direct_ws.as_ref().map(|d| d.head.status);
        ws.or_else(|| self.direct.as_ref().map(|d| d.head.status))
    }
}

/// Seconds with one decimal below 10 s, whole seconds above ("0.2 s", "75 s").
pub fn fmt_s(ms: f64) -> String {
    let s = ms / 1000.0;
    if s < 10.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}

fn finding(
    m: &Meta,
    u: &UrlObs,
    status: Status,
    observed: String,
    expected: &str,
    rule: &str,
    fix: Fix,
) -> Finding {
    let mut rule = rule.to_string();
    if u.proxy != Proxy::Unknown {
        rule.push_str(&format!(" (path: {})", u.proxy.name()));
    }
    Finding {
        location: None,
        id: m.id.as_str().to_string(),
        title: format!("{}: {}", m.title, u.target),
        status,
        observed,
        expected: expected.to_string(),
        rule,
        reason: None,
        evidence: m
            .evidence
            .iter()
            .map(|e| crate::evidence::reference(e))
            .collect(),
        fix: if status == Status::Pass {
            Fix::default()
        } else {
            fix
        },
        verify: None,
        verification: None,
        numbers: BTreeMap::new(),
    }
}

/// A finding's JUnit name: its id and the URL it is about (the end of its title), without
/// the query, so names do not repeat over several URLs and never carry a token.
pub fn case_name(f: &Finding) -> String {
    match url_of(f) {
        Some(url) => format!("{} {}", f.id, url.split(['?', '#']).next().unwrap_or(url)),
        None => f.id.clone(),
    }
}

/// The URL a finding is about (redacted, as its title ends), when it names one.
pub fn url_of(f: &Finding) -> Option<&str> {
    let at = ["ws://", "wss://", "http://", "https://"]
        .iter()
        .filter_map(|s| f.title.rfind(&format!(": {s}")))
        .max()?;
    Some(&f.title[at + 2..])
}

/// All checks of one URL, in report order; `skip` ids become skipped by request.
pub fn judge(u: &UrlObs, skip: &[String]) -> Vec<Finding> {
    // An unreachable URL measured nothing: only why.
    let run: &[Meta] = if u.unreached.is_some() {
        &[reachable::META]
    } else {
        CHECKS
    };
    run.iter()
        .filter_map(|c| (c.run)(u).or_else(|| held_skip(c, u)))
        .map(|mut f| {
            if skip.contains(&f.id) {
                f.status = Status::Skip;
                f.reason = Some("skipped by request (--skip)".into());
                f.fix = Fix::default();
            }
            f
        })
        .collect()
}

/// A check of the event stream whose head the path held past --head-timeout: nothing to
/// judge, said as a skip pointing at `sse-buffering` (a check left out reads as never tried).
fn held_skip(c: &Meta, u: &UrlObs) -> Option<Finding> {
    let needs_stream = [heartbeat::ID, resume::ID, compression::ID].contains(&c.id.as_str());
    if !needs_stream || u.kind != Kind::Sse || u.sse.is_some() || u.head_held_ms.is_none() {
        return None;
    }
    let mut f = finding(
        c,
        u,
        Status::Skip,
        "not measured".into(),
        "",
        "",
        Fix::default(),
    );
    f.reason = Some(format!(
        "no response head within --head-timeout: the path held the stream (see `{}`)",
        sse_buffering::ID
    ));
    Some(f)
}

/// What to probe a URL as.
pub fn kind_for(t: &Target, choice: TransportChoice) -> (Target, Kind) {
    let ws_twin = |t: &Target| match t.scheme {
        Scheme::Http => t.with_scheme(Scheme::Ws),
        Scheme::Https => t.with_scheme(Scheme::Wss),
        _ => t.clone(),
    };
    let http_twin = |t: &Target| match t.scheme {
        Scheme::Ws => t.with_scheme(Scheme::Http),
        Scheme::Wss => t.with_scheme(Scheme::Https),
        _ => t.clone(),
    };
    match choice {
        TransportChoice::Websocket => (ws_twin(t), Kind::WebSocket),
        TransportChoice::Auto if t.scheme.websocket() => (t.clone(), Kind::WebSocket),
        TransportChoice::Auto | TransportChoice::Sse => (http_twin(t), Kind::Sse),
        TransportChoice::Poll => (http_twin(t), Kind::Poll),
    }
}

/// The page origin a browser would send for this URL.
pub fn own_origin(t: &Target) -> String {
    let scheme = if t.scheme.tls() { "https" } else { "http" };
    let mut o = t.with_scheme(if t.scheme.tls() {
        Scheme::Https
    } else {
        Scheme::Http
    });
    o.path_and_query = String::new();
    format!("{scheme}://{}", o.host_header())
}

/// Probe one URL: the connections its kind needs, then the observations for the checks.
/// Never an error: a URL that cannot be probed says why in `unreached`.
pub async fn probe_url(
    t: &Target,
    direct: Option<&Target>,
    o: &Options,
    skip: &[String],
    progress: &dyn Progress,
) -> UrlObs {
    let (t, kind) = kind_for(t, o.transport.for_url(t));
    let direct = direct.map(|d| kind_for(d, o.transport.for_url(d)).0);
    let quick = o.quick
        || (skip.iter().any(|s| s == idle_timeout::ID) && skip.iter().any(|s| s == heartbeat::ID));
    let watch = if quick {
        Watch {
            window: o.client.timeout,
            max_events: Some(QUICK_EVENTS),
        }
    } else {
        Watch {
            window: o.idle_for,
            max_events: None,
        }
    };
    let mut u = UrlObs {
        target: t.clone(),
        kind,
        unreached: None,
        head_held_ms: None,
        ws: None,
        origin_sent: None,
        origin_status: None,
        sse: None,
        resume: None,
        alpn: None,
        alpn_error: None,
        direct: None,
        poll: None,
        direct_ws: None,
        direct_error: None,
        started_ms: 0.0,
        quick,
        public: o.public,
        idle_for_ms: o.idle_for.as_secs_f64() * 1000.0,
        proxy: Proxy::Unknown,
        path: o.path.clone(),
        fallback: None,
        ws_h2: None,
    };
    let d = direct.as_ref();
    let probed = match kind {
        Kind::WebSocket => probe_ws(&t, d, o, watch, progress, &mut u).await,
        Kind::Sse | Kind::Poll => probe_sse(&t, d, o, watch, progress, &mut u).await,
    };
    if let Err(e) = probed {
        failed(&mut u, o, &e);
    }
    if let (Some(_), Some(d)) = (u.head_held_ms, &direct) {
        // The head never came through the path: does the server itself send it?
        direct_sse(d, o, &mut u).await;
    }
    let heads = [
        u.ws.as_ref().map(|w| &w.head),
        u.sse.as_ref().map(|s| &s.head),
    ];
    u.proxy = o
        .proxy
        .unwrap_or_else(|| proxy::identify(heads.into_iter().flatten()));
    u
}

/// The first connection failed: an event stream's head that outlived its bound was held on
/// the path (sse-buffering); anything else leaves the URL unreached, with the step.
fn failed(u: &mut UrlObs, o: &Options, e: &anyhow::Error) {
    let step = client::failed_step(e);
    let held = step.is_some_and(|s| s.step == client::Step::Head && s.timed_out);
    // Only an event stream's head is held with its body; a poll or a handshake that never
    // answers is unreached.
    if held && u.kind == Kind::Sse {
        u.head_held_ms = Some(o.client.head_timeout.as_secs_f64() * 1000.0);
        return;
    }
    u.unreached = Some(reachable::Unreached {
        step: step.map_or(client::Step::Request, |s| s.step),
        timed_out: step.is_some_and(|s| s.timed_out),
        reason: step.map_or_else(|| format!("{e:#}"), |s| s.message.clone()),
    });
}

/// The own-Origin handshake watched for the window, then a foreign-Origin one.
async fn probe_ws(
    t: &Target,
    direct: Option<&Target>,
    o: &Options,
    watch: Watch,
    progress: &dyn Progress,
    u: &mut UrlObs,
) -> anyhow::Result<()> {
    let origin = o.origin.clone().unwrap_or_else(|| own_origin(t));
    u.origin_sent = Some(origin.clone());
    let app = app_spec(t, o);
    let ws = session::websocket(t, &o.client, &origin, Some(watch), app.as_ref(), progress).await?;
    // A server may refuse a foreign Origin by closing without an answer (0).
    // The same request as the watched one (subprotocol, extensions) but its Origin.
    let nop = &session::NoProgress;
    let foreign = session::websocket(t, &o.client, FOREIGN_ORIGIN, None, app.as_ref(), nop);
    u.origin_status = Some(foreign.await.map_or(0, |f| f.head.status));
    let via = app.as_ref().and_then(|a| fallback::Via::of(a.protocol));
    if let Some(v) = via.filter(|_| ws.head.status != 101) {
        u.fallback = Some(fallback::polling(t, &o.client, v).await);
    }
    u.ws = Some(ws);
    if t.scheme.tls() {
        u.ws_h2 = Some(ws_h2::observe(t, &o.client, &origin).await);
    }
    if let Some(d) = direct {
        // The page's Origin, to the endpoint itself: what the path changes shows.
        match session::websocket(d, &o.client, &origin, None, app.as_ref(), nop).await {
            Ok(obs) => u.direct_ws = Some(obs),
            Err(e) => u.direct_error = Some(format!("{e:#}")),
        }
    }
    Ok(())
}

/// The event stream watched for the window (or the polling answer), then resume, ALPN
/// and the direct endpoint. Only the first connection's failure is an error: what it
/// measured is kept whatever the later ones do.
async fn probe_sse(
    t: &Target,
    direct: Option<&Target>,
    o: &Options,
    watch: Watch,
    progress: &dyn Progress,
    u: &mut UrlObs,
) -> anyhow::Result<()> {
    let sse = session::sse(t, &o.client, None, watch, progress).await;
    // A held head still lets the edge's ALPN be read; an unreachable URL would fail again.
    let held = sse
        .as_ref()
        .err()
        .and_then(client::failed_step)
        .is_some_and(|s| s.timed_out && s.step == client::Step::Head);
    if t.scheme.tls() && (sse.is_ok() || held) {
        match session::alpn(t, &o.client).await {
            Ok(a) => u.alpn = Some(a),
            Err(e) => u.alpn_error = Some(format!("{e:#}")),
        }
    }
    let sse = sse?;
    let fallback = o.transport.for_url(t) == TransportChoice::Auto
        && !sse.is_event_stream()
        && response::is_poll_body(&sse.head);
    if u.kind == Kind::Sse && fallback {
        u.kind = Kind::Poll;
    }
    if u.kind == Kind::Sse {
        u.resume = resume_session(t, o, &sse)
            .await
            .map(|r| r.map_err(|e| format!("{e:#}")));
    }
    u.sse = Some(sse);
    if u.kind == Kind::Poll {
        u.poll = Some(polling::observe(t, &o.client).await);
    }
    if let (Some(d), Kind::Sse) = (direct, u.kind) {
        direct_sse(d, o, u).await;
    }
    Ok(())
}

/// The --direct event stream until its first event (or --timeout).
async fn direct_sse(d: &Target, o: &Options, u: &mut UrlObs) {
    let w = Watch {
        window: o.client.timeout,
        max_events: Some(1),
    };
    match session::sse(d, &o.client, None, w, &session::NoProgress).await {
        Ok(obs) => u.direct = Some(obs),
        Err(e) => u.direct_error = Some(format!("{e:#}")),
    }
}

/// A URL whose answers named no proxy (a held head names nothing) takes the proxy another
/// URL of the same host and port showed.
fn share_proxy(all: &mut [UrlObs]) {
    let known: Vec<(String, u16, Proxy)> = all
        .iter()
        .filter(|u| u.proxy != Proxy::Unknown)
        .map(|u| (u.target.host.clone(), u.target.port, u.proxy))
        .collect();
    for u in all.iter_mut().filter(|u| u.proxy == Proxy::Unknown) {
        let same = known
            .iter()
            .find(|(h, p, _)| *h == u.target.host && *p == u.target.port);
        if let Some((_, _, p)) = same {
            u.proxy = *p;
        }
    }
}

/// `--skip` names only probe check ids.
pub fn validate_skip(skip: &[String]) -> anyhow::Result<()> {
    let known = || IDS.iter().chain(&browser::checks::IDS);
    if let Some(bad) = skip.iter().find(|s| !known().any(|k| k == s)) {
        anyhow::bail!(
            "--skip: unknown check id `{bad}` (known: {})",
            known().copied().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// URLs probed at once: a run's idle time is its longest idle test, not the sum, and a
/// handful of connections per URL stays far from loading anything.
pub const CONCURRENT_URLS: usize = 4;

/// Every URL, each judged on its own, up to [`CONCURRENT_URLS`] at once: one that cannot
/// be reached is a `reachable` finding and the others are reported in full. An error
/// (exit 2) only when no URL could be reached at all.
pub fn probe_all(targets: &[Target], o: &Options, skip: &[String]) -> anyhow::Result<Vec<Finding>> {
    use futures_util::stream::StreamExt;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let bars = progress::Bars::new(true);
    let run_start = std::time::Instant::now();
    let mut all: Vec<UrlObs> = rt.block_on(
        futures_util::stream::iter(targets.iter().enumerate())
            .map(|(i, t)| {
                let bar = bars.add(&t.to_string());
                let direct = o.directs.get(i).and_then(Option::as_ref);
                async move {
                    let started_ms = run_start.elapsed().as_secs_f64() * 1000.0;
                    let mut u = probe_url(t, direct, o, skip, &bar).await;
                    u.started_ms = started_ms;
                    bar.finish();
                    u
                }
            })
            .buffered(CONCURRENT_URLS)
            .collect(),
    );
    bars.finish();
    // A DNS lookup that outlived --timeout runs on a blocking thread: do not wait for it.
    rt.shutdown_timeout(Duration::from_millis(100));
    none_reached(&all)?;
    if o.proxy.is_none() {
        share_proxy(&mut all);
        path::proxy_from_path(&mut all);
    }
    Ok(all.iter().flat_map(|u| judge(u, skip)).collect())
}

/// The run's error when not one URL could be reached: one line naming each URL's failure.
fn none_reached(all: &[UrlObs]) -> anyhow::Result<()> {
    let why: Vec<String> = all
        .iter()
        .filter_map(|u| {
            let n = u.unreached.as_ref()?;
            Some(format!("probe {}: {}", u.target, n.reason))
        })
        .collect();
    if all.is_empty() || why.len() < all.len() {
        return Ok(());
    }
    if why.len() == 1 {
        anyhow::bail!("{}", why[0]);
    }
    anyhow::bail!("no URL could be reached: {}", why.join("; "))
}

/// A run whose findings hold no pass, warn or fail measured nothing: the report says what
/// was not measured instead of passing (None: something was measured).
pub fn nothing_measured(findings: &[Finding], target: &str) -> Option<Finding> {
    if findings.iter().any(|f| f.status != Status::Skip) {
        return None;
    }
    let mut why: Vec<&str> = Vec::new();
    for f in findings {
        if !why.contains(&f.id.as_str()) {
            why.push(&f.id);
        }
    }
    Some(Finding {
        id: NOTHING_MEASURED.to_string(),
        title: format!("{}: {target}", MEASURED.title),
        status: Status::Fail,
        observed: if why.is_empty() {
            "no check ran".into()
        } else {
            format!(
                "every check was skipped (why: each one's line): {}",
                why.join(", ")
            )
        },
        expected: "at least one check measured (pass, warn or fail)".into(),
        rule: "no verdict without a measurement: a run that measured nothing is not a pass".into(),
        reason: None,
        evidence: Vec::new(),
        fix: Fix {
            summary: "probe the stream's own URL (an event stream or a WebSocket), or run without --quick/--skip so the idle checks measure".into(),
            ..Fix::default()
        },
        verify: None,
        verification: None,
        numbers: BTreeMap::new(),
        location: None,
    })
}

/// Reconnect with the first id seen; watch until the first event (or --timeout).
async fn resume_session(
    t: &Target,
    o: &Options,
    first: &SseObs,
) -> Option<anyhow::Result<resume::ResumeObs>> {
    let s = first.stream.as_ref()?;
    let pos = s.events.iter().position(|e| e.id.is_some())?;
    Some(resume_from(t, o, s, pos).await)
}

async fn resume_from(
    t: &Target,
    o: &Options,
    s: &session::StreamObs,
    pos: usize,
) -> anyhow::Result<resume::ResumeObs> {
    let sent = s.events[pos].id.clone().unwrap_or_default();
    let next = s.events.get(pos + 1).and_then(|e| e.id.clone());
    let w = Watch {
        window: o.client.timeout,
        max_events: Some(1),
    };
    let obs = session::sse(t, &o.client, Some(&sent), w, &session::NoProgress).await?;
    Ok(resume::ResumeObs { sent, next, obs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_choice_and_origin() {
        let t = Target::parse("https://app.example.com/events?token=x").unwrap();
        assert_eq!(kind_for(&t, TransportChoice::Auto).1, Kind::Sse);
        let (ws, k) = kind_for(&t, TransportChoice::Websocket);
        assert_eq!((ws.scheme, k), (Scheme::Wss, Kind::WebSocket));
        let w = Target::parse("ws://127.0.0.1:8080/ws").unwrap();
        assert_eq!(kind_for(&w, TransportChoice::Auto).1, Kind::WebSocket);
        assert_eq!(kind_for(&w, TransportChoice::Poll).0.scheme, Scheme::Http);
        // The profile never rewrites an explicit scheme; it fills what http(s) leaves open.
        let sse = Choice {
            flag: TransportChoice::Auto,
            profile: Some(TransportChoice::Sse),
        };
        assert_eq!(kind_for(&w, sse.for_url(&w)), (w.clone(), Kind::WebSocket));
        assert_eq!(kind_for(&t, sse.for_url(&t)).1, Kind::Sse);
        let ws = Choice {
            profile: Some(TransportChoice::Websocket),
            ..sse
        };
        assert_eq!(ws.for_url(&t), TransportChoice::Auto);
        let flag = Choice {
            flag: TransportChoice::Sse,
            ..ws
        };
        assert_eq!(kind_for(&w, flag.for_url(&w)).1, Kind::Sse);
        assert_eq!(own_origin(&w), "http://127.0.0.1:8080");
        assert_eq!(own_origin(&t), "https://app.example.com");
        assert_eq!(fmt_s(260.0), "0.3 s");
        assert_eq!(fmt_s(75_000.0), "75 s");
    }

    #[test]
    fn ids_come_from_the_table_in_report_order() {
        let ids: Vec<&str> = CHECKS.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(IDS.to_vec(), ids);
        let single = [
            "reachable",
            "response",
            "upgrade",
            "sse-buffering",
            "idle-timeout",
            "heartbeat",
            "resume",
            "compression",
            "http2",
            "origin",
            "ws-over-h2",
            "measured",
        ];
        assert_eq!(IDS[..single.len()], single);
        assert_eq!(IDS[single.len()..].len(), 7, "{IDS:?}");
        for (i, id) in IDS.iter().enumerate() {
            assert!(!IDS[..i].contains(id), "{id} twice");
        }
    }

    #[test]
    fn case_name_is_id_and_url_without_query() {
        let mut f = Finding {
            location: None,
            id: "upgrade".into(),
            title: "WebSocket upgrade: ws://h:1/ws?token=***".into(),
            status: Status::Pass,
            observed: String::new(),
            expected: String::new(),
            rule: String::new(),
            reason: None,
            evidence: vec![],
            fix: Fix::default(),
            verify: None,
            verification: None,
            numbers: BTreeMap::new(),
        };
        assert_eq!(case_name(&f), "upgrade ws://h:1/ws");
        f.title = "Resume: a: https://h/sse".into();
        assert_eq!(case_name(&f), "upgrade https://h/sse");
        f.title = "no url".into();
        assert_eq!(case_name(&f), "upgrade");
    }
}
