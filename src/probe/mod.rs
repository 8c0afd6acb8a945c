//! `rtcheck probe URL`: the deployed realtime path (proxy + server) checked from outside.
//! `session` makes a handful of connections and records what each saw, timed per read;
//! one file per check judges those observations (pure); `proxy` names the proxy and
//! writes its fix. The flags and the glue to the report are `cmd::probe`.
pub mod browser;
pub mod client;
pub mod compression;
pub mod heartbeat;
pub mod http2;
pub mod idle_timeout;
pub mod origin;
pub mod progress;
pub mod proxy;
pub mod resume;
pub mod session;
pub mod sse_buffering;
pub mod target;
pub mod upgrade;
pub mod wire;

use crate::findings::{Finding, Fix, Status};
use client::ClientOpts;
use proxy::Proxy;
use session::{Progress, SseObs, Watch, WsObs};
use std::collections::BTreeMap;
use std::time::Duration;
use target::{Scheme, Target};

/// Every check id, in report order.
pub const IDS: [&str; 8] = [
    upgrade::ID,
    sse_buffering::ID,
    idle_timeout::ID,
    heartbeat::ID,
    resume::ID,
    compression::ID,
    http2::ID,
    origin::ID,
];

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

/// What a URL was probed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    WebSocket,
    Sse,
    Poll,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub client: ClientOpts,
    pub transport: TransportChoice,
    pub origin: Option<String>,
    pub idle_for: Duration,
    pub quick: bool,
    pub public: bool,
    pub direct: Option<Target>,
    /// `--proxy`: the proxy on the path when its headers do not name it.
    pub proxy: Option<Proxy>,
}

/// Everything observed for one URL: the checks' only input.
#[derive(Debug, Clone)]
pub struct UrlObs {
    pub target: Target,
    pub kind: Kind,
    pub ws: Option<WsObs>,
    pub origin_status: Option<u16>,
    pub sse: Option<SseObs>,
    /// The reconnect with Last-Event-ID, or why it could not be made.
    pub resume: Option<Result<resume::ResumeObs, String>>,
    /// None: plain http (not measured); Some(None): TLS without ALPN.
    pub alpn: Option<Option<String>>,
    pub direct: Option<SseObs>,
    pub quick: bool,
    pub public: bool,
    pub idle_for_ms: f64,
    pub proxy: Proxy,
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

#[allow(clippy::too_many_arguments)]
fn finding(
    id: &str,
    u: &UrlObs,
    title: &str,
    status: Status,
    observed: String,
    expected: &str,
    rule: &str,
    evidence: &[&str],
    fix: Fix,
) -> Finding {
    let mut rule = rule.to_string();
    if u.proxy != Proxy::Unknown {
        rule.push_str(&format!(" (path: {})", u.proxy.name()));
    }
    Finding {
        location: None,
        id: id.to_string(),
        title: format!("{title}: {}", u.target),
        status,
        observed,
        expected: expected.to_string(),
        rule,
        reason: None,
        evidence: evidence
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
    let at = ["ws://", "wss://", "http://", "https://"]
        .iter()
        .filter_map(|s| f.title.rfind(&format!(": {s}")))
        .max();
    match at {
        Some(i) => {
            let url = &f.title[i + 2..];
            format!("{} {}", f.id, url.split(['?', '#']).next().unwrap_or(url))
        }
        None => f.id.clone(),
    }
}

/// All checks of one URL, in report order; `skip` ids become skipped by request.
pub fn judge(u: &UrlObs, skip: &[String]) -> Vec<Finding> {
    let checks: [fn(&UrlObs) -> Option<Finding>; 8] = [
        upgrade::check,
        sse_buffering::check,
        idle_timeout::check,
        heartbeat::check,
        resume::check,
        compression::check,
        http2::check,
        origin::check,
    ];
    checks
        .iter()
        .filter_map(|c| c(u))
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
pub async fn probe_url(
    t: &Target,
    o: &Options,
    skip: &[String],
    progress: &dyn Progress,
) -> anyhow::Result<UrlObs> {
    let (t, kind) = kind_for(t, o.transport);
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
        ws: None,
        origin_status: None,
        sse: None,
        resume: None,
        alpn: None,
        direct: None,
        quick,
        public: o.public,
        idle_for_ms: o.idle_for.as_secs_f64() * 1000.0,
        proxy: Proxy::Unknown,
    };
    match kind {
        Kind::WebSocket => probe_ws(&t, o, watch, progress, &mut u).await?,
        Kind::Sse | Kind::Poll => probe_sse(&t, o, watch, progress, &mut u).await?,
    }
    let heads = [
        u.ws.as_ref().map(|w| &w.head),
        u.sse.as_ref().map(|s| &s.head),
    ];
    u.proxy = o
        .proxy
        .unwrap_or_else(|| proxy::identify(heads.into_iter().flatten()));
    Ok(u)
}

/// The own-Origin handshake watched for the window, then a foreign-Origin one.
async fn probe_ws(
    t: &Target,
    o: &Options,
    watch: Watch,
    progress: &dyn Progress,
    u: &mut UrlObs,
) -> anyhow::Result<()> {
    let origin = o.origin.clone().unwrap_or_else(|| own_origin(t));
    let ws = session::websocket(t, &o.client, &origin, Some(watch), progress).await?;
    // A server may refuse a foreign Origin by closing without an answer (0).
    let foreign = session::websocket(t, &o.client, FOREIGN_ORIGIN, None, &session::NoProgress);
    u.origin_status = Some(foreign.await.map_or(0, |f| f.head.status));
    u.ws = Some(ws);
    Ok(())
}

/// The event stream watched for the window (or the polling answer), then resume, ALPN
/// and the direct endpoint.
async fn probe_sse(
    t: &Target,
    o: &Options,
    watch: Watch,
    progress: &dyn Progress,
    u: &mut UrlObs,
) -> anyhow::Result<()> {
    let sse = session::sse(t, &o.client, None, watch, progress).await?;
    if u.kind == Kind::Sse && o.transport == TransportChoice::Auto && !sse.is_event_stream() {
        u.kind = Kind::Poll;
    }
    if u.kind == Kind::Sse {
        u.resume = resume_session(t, o, &sse)
            .await
            .map(|r| r.map_err(|e| format!("{e:#}")));
    }
    u.sse = Some(sse);
    if t.scheme.tls() {
        u.alpn = Some(session::alpn(t, &o.client).await?);
    }
    if let (Some(d), Kind::Sse) = (&o.direct, u.kind) {
        let w = Watch {
            window: o.client.timeout,
            max_events: Some(1),
        };
        u.direct = Some(session::sse(d, &o.client, None, w, &session::NoProgress).await?);
    }
    Ok(())
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

/// Every URL in turn; the first that cannot be probed ends the run (exit 2).
pub fn probe_all(targets: &[Target], o: &Options, skip: &[String]) -> anyhow::Result<Vec<Finding>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let bar = progress::Bar::new(true);
    let mut findings = Vec::new();
    let mut result = Ok(());
    for t in targets {
        bar.label(&format!("probing {t}"));
        match rt.block_on(probe_url(t, o, skip, &bar)) {
            Ok(u) => findings.extend(judge(&u, skip)),
            Err(e) => {
                result = Err(e.context(format!("probe {t}")));
                break;
            }
        }
    }
    bar.finish();
    // A DNS lookup that outlived --timeout runs on a blocking thread: do not wait for it.
    rt.shutdown_timeout(Duration::from_millis(100));
    result.map(|()| findings)
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
        assert_eq!(own_origin(&w), "http://127.0.0.1:8080");
        assert_eq!(own_origin(&t), "https://app.example.com");
        assert_eq!(fmt_s(260.0), "0.3 s");
        assert_eq!(fmt_s(75_000.0), "75 s");
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
