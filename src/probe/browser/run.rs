//! The browser run (feature `browser`): Chromium started once, each URL's experiments in
//! its page, their observations judged by checks.rs.
use super::chrome::{self, Chromium, ProbePage, TlsTrust};
use super::obs::{ConnsObs, ConnsState, ResumeObs, ResumeState, WsObs, WsState};
use super::{checks, tls};
use crate::findings::Finding;
use crate::probe::client::ClientOpts;
use crate::probe::target::{Scheme, Target};
use crate::probe::{kind_for, own_origin, Choice, Kind};
use rtcheck_base::os::signal::check_interrupted;
use std::time::{Duration, Instant};

/// EventSources opened at once: one more than the 6 per host browsers allow on HTTP/1.1.
pub const EVENT_SOURCES: usize = 7;
/// How long the page holds the EventSources before it frees one for the waiting 7th.
const HOLD: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
pub struct Options {
    pub client: ClientOpts,
    pub transport: Choice,
    /// How long the reconnect and WebSocket experiments wait for the server to close.
    pub window: Duration,
}

/// What the report says about the browser's TLS trust, when it is not the system's.
pub fn trust_note(t: &TlsTrust) -> Option<&'static str> {
    match t {
        TlsTrust::System => None,
        TlsTrust::Pinned(_) => {
            Some("browser: leaf key pinned after rtcheck verified it against --ca")
        }
        TlsTrust::Ignore => Some("browser: certificate errors ignored (--insecure)"),
    }
}

/// The browser's trust for these targets: --insecure ignores errors; --ca pins each TLS
/// endpoint's leaf once rustls verified it.
async fn trust_for(targets: &[Target], o: &ClientOpts) -> anyhow::Result<TlsTrust> {
    let tls: Vec<&Target> = targets.iter().filter(|t| t.scheme.tls()).collect();
    if tls.is_empty() || (o.ca.is_none() && !o.insecure) {
        return Ok(TlsTrust::System);
    }
    if o.insecure {
        return Ok(TlsTrust::Ignore);
    }
    let mut pins = Vec::new();
    for t in tls {
        let pin = tls::verified_leaf_pin(t, o).await?;
        if !pins.contains(&pin) {
            pins.push(pin);
        }
    }
    Ok(TlsTrust::Pinned(pins.join(",")))
}

/// The URL as the browser must request it (secrets included: never print it).
fn real_url(t: &Target) -> String {
    let scheme = match t.scheme {
        Scheme::Ws => "ws",
        Scheme::Wss => "wss",
        Scheme::Http => "http",
        Scheme::Https => "https",
    };
    format!("{scheme}://{}{}", t.host_header(), t.path_and_query)
}

/// A JavaScript string literal (JSON's is one).
fn js_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Every URL in Chromium; the browser's findings and the TLS note for the report. A URL
/// whose experiments fail is reported as not measured (why, for each of its checks); the
/// other URLs' findings are kept. Only an interrupt is an error.
pub fn run(
    targets: &[Target],
    o: &Options,
    skip: &[String],
) -> anyhow::Result<(Vec<Finding>, Option<&'static str>)> {
    chrome::find_chromium()?;
    rtcheck_base::os::signal::install_interrupt_handler();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut findings = Vec::new();
    let result = run_in(&rt, targets, o, skip, &mut findings);
    rt.shutdown_timeout(Duration::from_millis(100));
    match result {
        Ok(note) => Ok((findings, note)),
        Err(e) if rtcheck_base::os::signal::interrupted() => Err(e),
        Err(e) => {
            // Chromium did not start (or TLS pinning failed): no URL was measured by it.
            for t in targets {
                let (t, kind) = kind_for(t, o.transport.for_url(t));
                findings.extend(not_measured(&t, kind, skip, &format!("{e:#}")));
            }
            Ok((findings, None))
        }
    }
}

fn run_in(
    rt: &tokio::runtime::Runtime,
    targets: &[Target],
    o: &Options,
    skip: &[String],
    findings: &mut Vec<Finding>,
) -> anyhow::Result<Option<&'static str>> {
    let trust = rt.block_on(trust_for(targets, &o.client))?;
    // Started on this (main) thread: its parent-death signal follows this thread.
    let mut chromium = Chromium::start(&trust)?;
    let devtools = chromium.devtools_url(o.client.timeout.max(Duration::from_secs(30)))?;
    let bar = crate::probe::progress::Bar::new(true);
    for t in targets {
        let (t, kind) = kind_for(t, o.transport.for_url(t));
        match rt.block_on(probe_one(&devtools, &t, kind, o, skip, &bar)) {
            Ok(found) => findings.extend(found),
            Err(e) if rtcheck_base::os::signal::interrupted() => return Err(e),
            Err(e) => findings.extend(not_measured(&t, kind, skip, &format!("{e:#}"))),
        }
        findings.extend(skipped(&t, kind, skip));
    }
    bar.finish();
    drop(chromium);
    Ok(trust_note(&trust))
}

/// The browser checks of this kind that were wanted but could not run, with why.
fn not_measured(t: &Target, kind: Kind, skip: &[String], why: &str) -> Vec<Finding> {
    let ids: &[&str] = match kind {
        Kind::Sse => &[checks::CONNECTIONS, checks::RECONNECT],
        Kind::WebSocket => &[checks::WEBSOCKET],
        Kind::Poll => &[],
    };
    let reason = format!("the browser experiment failed: {why}");
    ids.iter()
        .filter(|id| !skip.iter().any(|s| s == *id))
        .map(|id| checks::skipped(id, &t.to_string(), &reason))
        .collect()
}

async fn probe_one(
    devtools: &str,
    t: &Target,
    kind: Kind,
    o: &Options,
    skip: &[String],
    bar: &crate::probe::progress::Bar,
) -> anyhow::Result<Vec<Finding>> {
    let shown = t.to_string();
    let window = crate::probe::fmt_s(o.window.as_secs_f64() * 1000.0);
    let url = real_url(t);
    let limit = o.client.timeout.max(Duration::from_secs(30));
    let page = chrome::open(devtools, &own_origin(t), limit)
        .await
        .map_err(|e| e.context(format!("probe --browser {shown}")))?;
    page.take_net();
    // A check skipped on request is reported as skipped without running its experiment.
    let wanted = |id: &str| !skip.iter().any(|s| s == id);
    let mut found = Vec::new();
    if kind == Kind::Sse && wanted(checks::CONNECTIONS) {
        bar.label(&format!("browser: {EVENT_SOURCES} EventSources to {shown}"));
        found.push(checks::connections(
            &shown,
            &event_sources(&page, &url, o).await?,
        ));
    }
    if kind == Kind::Sse && wanted(checks::RECONNECT) {
        bar.label(&format!(
            "browser: {shown} held until the server closes it (up to {window})"
        ));
        found.push(checks::reconnect(&shown, &resume(&page, &url, o).await?));
    }
    if kind == Kind::WebSocket && wanted(checks::WEBSOCKET) {
        bar.label(&format!(
            "browser: WebSocket {shown} until the server closes it (up to {window})"
        ));
        found.push(checks::websocket(&shown, &websocket(&page, &url, o).await?));
    }
    let _ = page.page.close().await;
    Ok(found)
}

/// The checks of this kind skipped on request, as skipped findings.
fn skipped(t: &Target, kind: Kind, skip: &[String]) -> Vec<Finding> {
    let ids: &[&str] = match kind {
        Kind::Sse => &[checks::CONNECTIONS, checks::RECONNECT],
        Kind::WebSocket => &[checks::WEBSOCKET],
        Kind::Poll => &[],
    };
    ids.iter()
        .filter(|id| skip.iter().any(|s| s == *id))
        .map(|id| checks::skipped(id, &t.to_string(), "skipped by request (--skip)"))
        .collect()
}

/// Poll `state` until `done` holds or `limit` passes; the last state read.
async fn wait_for<T: serde::de::DeserializeOwned>(
    page: &ProbePage,
    name: &str,
    limit: Duration,
    done: impl Fn(&T) -> bool,
) -> anyhow::Result<T> {
    let until = Instant::now() + limit;
    loop {
        check_interrupted("probe --browser interrupted")?;
        let s: T = page.state(name).await?;
        if done(&s) || Instant::now() >= until {
            return Ok(s);
        }
        tokio::time::sleep(POLL).await;
    }
}

fn open_count(s: &ConnsState) -> usize {
    s.opened.iter().filter(|o| o.is_some()).count()
}

/// 7 EventSources at once: wait for 6, hold; if one still waits, free one and time it.
async fn event_sources(page: &ProbePage, url: &str, o: &Options) -> anyhow::Result<ConnsObs> {
    let limit = o.client.timeout;
    let n = EVENT_SOURCES;
    page.run(&format!("rtConns({}, {n})", js_str(url))).await?;
    wait_for(page, "conns", limit, |s: &ConnsState| {
        open_count(s) >= n - 1
    })
    .await?;
    let s = wait_for(page, "conns", HOLD, |s: &ConnsState| open_count(s) >= n).await?;
    if open_count(&s) < n {
        page.run("rtConnsFree()").await?;
        wait_for(page, "conns", limit, |s: &ConnsState| open_count(s) >= n).await?;
    }
    let state: ConnsState = page.state("conns").await?;
    page.run("rtConnsEnd()").await?;
    Ok(ConnsObs {
        state,
        net: page.take_net(),
    })
}

/// One EventSource held until the server closes it, it reconnects and an event arrives.
async fn resume(page: &ProbePage, url: &str, o: &Options) -> anyhow::Result<ResumeObs> {
    page.take_net();
    page.run(&format!("rtResume({})", js_str(url))).await?;
    let closed = |s: &ResumeState| !s.errors.is_empty();
    let s = wait_for(page, "resume", o.window, closed).await?;
    if closed(&s) {
        // Chromium's default delay is 3 s; a server's `retry:` may ask for more.
        let back = o.client.timeout + Duration::from_millis(checks::DEFAULT_RETRY_MS as u64);
        let after = |s: &ResumeState| {
            s.errors.iter().any(|e| e.state == 2) || s.events.iter().any(|e| e.open >= 2)
        };
        wait_for(page, "resume", back, after).await?;
    }
    let state: ResumeState = page.state("resume").await?;
    page.run("rtResumeEnd()").await?;
    Ok(ResumeObs {
        state,
        net: page.take_net(),
        window_ms: o.window.as_secs_f64() * 1000.0,
    })
}

/// One WebSocket held until the server closes it (or the window ends).
async fn websocket(page: &ProbePage, url: &str, o: &Options) -> anyhow::Result<WsObs> {
    let mut warmed_h2 = None;
    if let Some(rest) = url.strip_prefix("wss://") {
        page.take_net();
        page.run(&format!("rtWarm({})", js_str(&format!("https://{rest}"))))
            .await?;
        let limit = o.client.timeout;
        let w: WarmState = wait_for(page, "warm", limit, |w: &WarmState| w.done).await?;
        let h2 = page
            .take_net()
            .iter()
            .any(|r| r.protocol.as_deref() == Some("h2"));
        warmed_h2 = Some(w.done && h2);
    }
    page.run(&format!("rtWs({})", js_str(url))).await?;
    let state = wait_for(page, "ws", o.window, |s: &WsState| s.close.is_some()).await?;
    page.run("rtWsEnd()").await?;
    let net = page.take_net();
    let sockets: Vec<_> = net.iter().filter(|r| r.websocket).collect();
    // DevTools' URL is Chromium's normalised one: compare parsed; else the page's only one.
    let handshake_status = sockets
        .iter()
        .filter(|r| same_url(&r.url, url))
        .find_map(|r| r.status)
        .or(match sockets.as_slice() {
            [only] => only.status,
            _ => None,
        });
    Ok(WsObs {
        state,
        window_ms: o.window.as_secs_f64() * 1000.0,
        handshake_status,
        warmed_h2,
    })
}

/// Whether two URLs name the same resource as Chromium normalises them: scheme and host
/// case-insensitive, the default port dropped, an empty path `/`, no fragment. Text
/// that does not parse is compared as written.
fn same_url(a: &str, b: &str) -> bool {
    let key = |u: &str| {
        Target::parse(u).ok().map(|t| {
            (
                t.scheme,
                t.host.to_ascii_lowercase(),
                t.port,
                t.path_and_query,
            )
        })
    };
    match (key(a), key(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// `rtWarm`: whether the request to the origin ended.
#[derive(Debug, Clone, Default, serde::Deserialize)]
struct WarmState {
    done: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devtools_urls_match_as_chromium_normalises_them() {
        assert!(same_url("wss://Example.COM:443", "wss://example.com/"));
        assert!(same_url("WS://h:80/ws?x=1", "ws://h/ws?x=1"));
        assert!(same_url("ws://[::1]:9000/a", "ws://[::1]:9000/a"));
        assert!(same_url("ws://h/a#frag", "ws://h/a"));
        assert!(!same_url("ws://h:8080/", "ws://h/"));
        assert!(!same_url("ws://h/a", "ws://h/b"));
        assert!(!same_url("ws://h/a?x=1", "ws://h/a?x=2"));
        assert!(!same_url("wss://h/", "ws://h/"));
    }
}
