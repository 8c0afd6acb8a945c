//! `idle-timeout`: hold the connection with no traffic from the client for --idle-for and
//! record when and how the path closed it. A proxy cuts a connection silent longer than its
//! idle timeout (nginx proxy_read_timeout 60 s by default): evidence proxy-config,
//! ping-timing.
use super::session::{Ending, StreamObs};
use super::{finding, fmt_s, proxy, Kind, Meta, UrlObs};
use crate::findings::{Finding, Status};

pub const ID: &str = super::CheckId::IdleTimeout.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::IdleTimeout,
    title: "Idle connection held by the path",
    evidence: &["proxy-config", "ping-timing"],
    run: check,
};

/// A watch that ends this close to its window watched all of it (timer granularity).
const WINDOW_SLACK_MS: f64 = 50.0;

pub fn ending_text(e: &Ending) -> String {
    match e {
        Ending::Open => "still open".into(),
        Ending::CloseFrame(Some(c)) => format!("close frame {c}"),
        Ending::CloseFrame(None) => "close frame without a code".into(),
        Ending::Eof => {
            "EOF: closed by the path (the proxy or the server; which one is not known)".into()
        }
        Ending::Reset => "connection reset".into(),
        Ending::Error(e) => format!("read error: {e}"),
    }
}

/// The silence that preceded a close: the path's idle timeout as measured (ms).
pub fn silence_before_close(s: &StreamObs) -> Option<f64> {
    if matches!(s.ending, Some(Ending::Open) | None) {
        return None;
    }
    Some(s.ended_ms - s.reads_ms.last().copied().unwrap_or(0.0))
}

pub fn stream(u: &UrlObs) -> Option<&StreamObs> {
    match u.kind {
        Kind::WebSocket => u.ws.as_ref()?.stream.as_ref(),
        Kind::Sse => u.sse.as_ref()?.stream.as_ref(),
        Kind::Poll => None,
    }
}

/// How a close is explained by the library protocol spoken on the connection: the server
/// ended the session at the protocol level (its reason), or the close came when the
/// library's own heartbeat timeout drops a silent peer. Either is the application layer's
/// doing, never a proxy's; a close at any other time is still the path's.
pub fn app_close(s: &StreamObs) -> Option<String> {
    let a = s.app.as_ref()?;
    if let Some(r) = &a.closed {
        return Some(format!(
            "the {} server ended the session at the protocol level: {r}",
            a.protocol.name()
        ));
    }
    // The silence before the close matches the library's drop: the whole drop time after
    // the client's last word (a client-driven heartbeat), or the server's wait for an
    // answer after its last ping (Engine.IO's pingTimeout). Never the close time alone:
    // a proxy's 60 s cut may fall on a library's default too.
    let drop = a.drop_after()? * 1000.0;
    let answer_wait = a.protocol.defaults().timeout_s.map(|t| t * 1000.0);
    let wait = match (a.drop_after_s, a.interval_s) {
        (Some(d), Some(i)) => Some((d - i) * 1000.0),
        _ => answer_wait,
    };
    let silence = silence_before_close(s)?;
    let near = |t: f64, want: f64| (t - want).abs() <= (want * 0.1).max(2000.0);
    let server_wait = a.heartbeats > 0 && wait.is_some_and(|w| near(silence, w));
    (near(silence, drop) || server_wait).then(|| {
        format!(
            "the close matches {}'s own heartbeat timeout ({}): the application layer dropped the client, not a proxy",
            a.protocol.name(),
            fmt_s(drop)
        )
    })
}

/// The fix for a close the application layer made.
fn app_fix(s: &StreamObs) -> crate::findings::Fix {
    let name = s.app.as_ref().map_or("the library", |a| a.protocol.name());
    crate::findings::Fix {
        summary: format!(
            "not a proxy: read the server's log for why {name} ended the session; check the client speaks the version the server expects (`--app-protocol`, the URL's EIO= or vsn=)"
        ),
        ..Default::default()
    }
}

pub fn check(u: &UrlObs) -> Option<Finding> {
    let mut reason = None;
    let mut app_fixed = None;
    let mut numbers = Vec::new();
    let (status, observed) = match (stream(u), u.quick, u.kind) {
        (_, _, Kind::Poll) => {
            reason = Some("polling holds no connection open".to_string());
            (Status::Skip, "polling".to_string())
        }
        (_, true, _) => {
            reason = Some("--quick: idle test not run".to_string());
            (Status::Skip, "not run".to_string())
        }
        (None, _, _) => {
            reason = Some("no connection was established to hold".to_string());
            (Status::Skip, "no stream".to_string())
        }
        (Some(s), false, _) => {
            let silence = s.longest_silence_ms();
            numbers.push(("longest_silence_s", silence / 1000.0));
            numbers.push(("held_s", s.ended_ms / 1000.0));
            // When this URL's probe began in the run: URLs are probed at once.
            numbers.push(("started_s", u.started_ms / 1000.0));
            match &s.ending {
                // Open, but the watch stopped before --idle-for: no idle period measured.
                Some(Ending::Open) | None if s.ended_ms + WINDOW_SLACK_MS < s.window_ms => {
                    reason = Some(format!(
                        "the watch stopped after {} of --idle-for {}: no idle period was measured",
                        fmt_s(s.ended_ms),
                        fmt_s(s.window_ms)
                    ));
                    (Status::Skip, "not measured".to_string())
                }
                Some(Ending::Open) | None => (
                    Status::Pass,
                    format!(
                        "held open {} with nothing sent by the client; longest silence from the server {}{}",
                        fmt_s(s.ended_ms),
                        fmt_s(silence),
                        if s.events.is_empty() {
                            String::new()
                        } else {
                            format!("; {}", s.messages_text())
                        }
                    ),
                ),
                Some(e) if app_close(s).is_some() => {
                    numbers.push(("closed_after_s", s.ended_ms / 1000.0));
                    app_fixed = Some(app_fix(s));
                    (
                        Status::Warn,
                        format!(
                            "closed after {} by {}: {}",
                            fmt_s(s.ended_ms),
                            ending_text(e),
                            app_close(s).unwrap_or_default()
                        ),
                    )
                }
                Some(e) => {
                    let before = silence_before_close(s).unwrap_or(silence);
                    numbers.push(("closed_after_s", s.ended_ms / 1000.0));
                    numbers.push(("idle_timeout_s", before / 1000.0));
                    (
                        Status::Fail,
                        format!(
                            "closed after {} by {} following {} of silence; {} heartbeat(s) seen",
                            fmt_s(s.ended_ms),
                            ending_text(e),
                            fmt_s(before),
                            s.heartbeats_ms.len()
                        ),
                    )
                }
            }
        }
    };
    let expected = format!("open for --idle-for {}", fmt_s(u.idle_for_ms));
    let mut f = finding(
        &META,
        u,
        status,
        observed,
        &expected,
        "every proxy cuts a connection silent longer than its idle timeout (nginx: proxy_read_timeout 60 s); the heartbeat must come sooner",
        proxy::idle(u.proxy),
    );
    f.reason = reason;
    if let (Some(fix), true) = (app_fixed, f.status != Status::Pass) {
        f.fix = fix;
    }
    if let Some(a) = stream(u).and_then(|s| s.app.as_ref()) {
        f.observed = format!("{}; spoken: {}", f.observed, a.label());
    }
    for (k, v) in numbers {
        f.numbers.insert(k.into(), (v * 1000.0).round() / 1000.0);
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_before_a_close_is_the_timeout_found() {
        let cut = StreamObs {
            head_ms: 5.0,
            reads_ms: vec![5.0, 400.0],
            ended_ms: 3400.0,
            ending: Some(Ending::Eof),
            ..Default::default()
        };
        assert_eq!(silence_before_close(&cut), Some(3000.0));
        assert_eq!(cut.longest_silence_ms(), 3000.0);
        let open = StreamObs {
            ending: Some(Ending::Open),
            ended_ms: 6000.0,
            ..cut.clone()
        };
        assert_eq!(silence_before_close(&open), None);
        assert_eq!(open.longest_silence_ms(), 5600.0);
        assert!(ending_text(&Ending::CloseFrame(Some(1001))).contains("1001"));
    }
}
