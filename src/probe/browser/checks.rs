//! The three browser checks: observations (obs.rs) to findings. Pure.
use super::obs::{ConnsObs, ResumeObs, WsObs};
use crate::findings::{Finding, Fix, Status};
use crate::probe::fmt_s;
use std::collections::BTreeMap;

pub const CONNECTIONS: &str = "browser-sse-connections";
pub const RECONNECT: &str = "browser-sse-reconnect";
pub const WEBSOCKET: &str = "browser-websocket";
pub const IDS: [&str; 3] = [CONNECTIONS, RECONNECT, WEBSOCKET];

/// Chromium's EventSource reconnect delay when the server sends no `retry:` (ms).
pub const DEFAULT_RETRY_MS: f64 = 3000.0;

struct Draft<'a> {
    id: &'a str,
    title: &'a str,
    url: &'a str,
    expected: &'a str,
    rule: &'a str,
    evidence: &'a [&'a str],
    fix: Fix,
}

impl Draft<'_> {
    fn finish(self, status: Status, observed: String, numbers: &[(&str, f64)]) -> Finding {
        Finding {
            location: None,
            id: self.id.to_string(),
            title: format!("{}: {}", self.title, self.url),
            status,
            observed,
            expected: self.expected.to_string(),
            rule: self.rule.to_string(),
            reason: None,
            evidence: self
                .evidence
                .iter()
                .map(|e| crate::evidence::reference(e))
                .collect(),
            fix: if status == Status::Pass {
                Fix::default()
            } else {
                self.fix
            },
            verify: None,
            verification: None,
            numbers: numbers
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect::<BTreeMap<_, _>>(),
        }
    }
}

/// A check that did not run, with why.
pub fn skipped(id: &str, url: &str, reason: &str) -> Finding {
    let title = match id {
        CONNECTIONS => "EventSources to one host in Chromium",
        RECONNECT => "EventSource reconnect in Chromium",
        _ => "WebSocket in Chromium",
    };
    Finding {
        location: None,
        id: id.to_string(),
        title: format!("{title}: {url}"),
        status: Status::Skip,
        observed: String::new(),
        expected: String::new(),
        rule: String::new(),
        reason: Some(reason.to_string()),
        evidence: Vec::new(),
        fix: Fix::default(),
        verify: None,
        verification: None,
        numbers: BTreeMap::new(),
    }
}

fn ms(v: f64) -> String {
    if v < 1000.0 {
        format!("{v:.0} ms")
    } else {
        fmt_s(v)
    }
}

/// N EventSources to one host: all open at once (h2), or the 7th waits (HTTP/1.1: 6).
pub fn connections(url: &str, o: &ConnsObs) -> Finding {
    let d = Draft {
        id: CONNECTIONS,
        title: "EventSources to one host in Chromium",
        url,
        expected: "every EventSource open at once (HTTP/2 at the edge)",
        rule: "browsers allow 6 HTTP/1.1 connections per host: one more EventSource (another tab of the app) waits until one closes; HTTP/2 carries them all on one connection",
        evidence: &["sse-conditions", "sse-h2"],
        fix: Fix {
            summary: "serve the event stream over HTTP/2: TLS with h2 at the edge (browsers speak HTTP/2 only over TLS)".into(),
            runtime: vec![],
            persistent: vec![
                "nginx (server): listen 443 ssl; http2 on;  (before 1.25.1: listen 443 ssl http2;)".into(),
                "HAProxy (frontend): bind :443 ssl crt /etc/haproxy/site.pem alpn h2,http/1.1".into(),
                "Caddy: h2 is on by default for https sites".into(),
            ],
        },
    };
    let n = o.requested();
    let at_once = o.at_once();
    let proto = o.protocol().unwrap_or_else(|| "unknown protocol".into());
    let conns = o.connections();
    let mut numbers = vec![
        ("requested", n as f64),
        ("open_at_once", at_once as f64),
        ("tcp_connections", conns as f64),
        ("h2", f64::from(u8::from(proto == "h2"))),
    ];
    let head =
        format!("{at_once} of {n} open at once over {proto} ({conns} TCP connection(s) in all)");
    if at_once == n {
        return d.finish(Status::Pass, head, &numbers);
    }
    match o.waiter() {
        Some((i, Some(t))) => {
            let freed = o.state.freed_at.unwrap_or(0.0);
            numbers.push(("waiter_wait_ms", t));
            numbers.push(("waiter_after_free_ms", t - freed));
            let observed = format!(
                "{head}; EventSource #{} waited {}, until the page closed one ({} after)",
                i + 1,
                ms(t),
                ms(t - freed)
            );
            d.finish(Status::Warn, observed, &numbers)
        }
        Some((i, None)) => {
            let observed = format!(
                "{head}; EventSource #{} never opened, even after the page closed one ({} error event(s))",
                i + 1,
                o.state.errors
            );
            d.finish(Status::Fail, observed, &numbers)
        }
        None => {
            let observed = format!("{head}; {} error event(s)", o.state.errors);
            d.finish(Status::Fail, observed, &numbers)
        }
    }
}

/// The reconnect after the server closed the stream: delay, Last-Event-ID, loss.
pub fn reconnect(url: &str, o: &ResumeObs) -> Finding {
    let d = Draft {
        id: RECONNECT,
        title: "EventSource reconnect in Chromium",
        url,
        expected: "reconnects with Last-Event-ID = the last id seen; the next event follows it (0 lost)",
        rule: "EventSource reconnects by itself and sends Last-Event-ID; the server must replay from it (seq + ring) or send a gap marker, never restart silently",
        evidence: &["seq-numbers", "ring-buffer"],
        fix: Fix {
            summary: "send `id: <seq>` on every event and replay from Last-Event-ID out of a ring buffer (or send a gap event when it is too old)".into(),
            runtime: vec![],
            persistent: vec![],
        },
    };
    let Some(r) = o.reconnect() else {
        let mut f = d.finish(
            Status::Skip,
            format!("the stream stayed open for {}", fmt_s(o.window_ms)),
            &[],
        );
        f.reason = Some(format!(
            "the server did not close the stream within {}: nothing to reconnect from (rtcheck serve: --sse-max-age)",
            fmt_s(o.window_ms)
        ));
        return f;
    };
    let mut numbers = vec![
        ("closed_at_ms", r.closed_at_ms),
        ("gap_markers", r.gaps as f64),
    ];
    let Some(delay) = r.delay_ms.filter(|_| !r.gave_up) else {
        let status = r
            .reconnect_status
            .map_or("no answer".to_string(), |s| format!("HTTP {s}"));
        let observed = format!(
            "the path closed the stream after {}; EventSource {} (reconnect: {status})",
            ms(r.closed_at_ms),
            if r.gave_up {
                "gave up"
            } else {
                "did not come back within the window"
            }
        );
        return d.finish(Status::Fail, observed, &numbers);
    };
    numbers.push(("reconnect_delay_ms", delay));
    numbers.push((
        "last_event_id_sent",
        f64::from(u8::from(r.sent_id.is_some())),
    ));
    numbers.push(("lost", r.lost as f64));
    numbers.push(("duplicated", r.duplicated as f64));
    let sent = match (&r.sent_id, r.last_before) {
        (Some(id), _) => format!("sent Last-Event-ID {id}"),
        (None, _) => "sent no Last-Event-ID".into(),
    };
    let next = match (r.last_before, r.first_after) {
        (Some(a), Some(b)) => format!("last seq before {a}, first after {b}: {} lost", r.lost),
        (_, None) => "no event after the reconnect within the window".into(),
        (None, Some(b)) => format!("first seq after {b}"),
    };
    let restart = match (&r.epoch_changed, r.resets) {
        (_, n) if n > 0 => format!("; the server announced a restart ({n} reset marker(s))"),
        (Some((a, b)), _) => format!("; the ids' epoch changed {a} -> {b}: the server restarted"),
        _ if r.duplicated > 0 => {
            "; the ids started over at or below the one sent: a restart".into()
        }
        _ => String::new(),
    };
    let observed = format!(
        "closed by the path after {}; the browser waited {} and {sent}; {next}{restart}",
        ms(r.closed_at_ms),
        ms(delay)
    );
    numbers.push(("resets", r.resets as f64));
    let sent_seq = r
        .sent_id
        .as_deref()
        .and_then(rtcheck_wire::sse::seq_id)
        .map(|(s, _)| s);
    let id_matches = r.sent_id.is_some() && sent_seq == r.last_before;
    let silent_restart = r.resets == 0 && (r.epoch_changed.is_some() || r.duplicated > 0);
    let status = if (r.lost > 0 && r.gaps == 0) || silent_restart {
        Status::Fail
    } else if !id_matches || r.first_after.is_none() || r.gaps > 0 || r.resets > 0 {
        Status::Warn
    } else {
        Status::Pass
    };
    d.finish(status, observed, &numbers)
}

/// A WebSocket from the page: handshake, frames decoded, the close code it saw.
pub fn websocket(url: &str, o: &WsObs) -> Finding {
    let d = Draft {
        id: WEBSOCKET,
        title: "WebSocket in Chromium",
        url,
        expected: "handshake from the page, frames decoded, a close code from the server when it goes away (1001)",
        rule: "a proxy without the Upgrade headers kills WebSocket at once; a server that goes away should say so (1001) rather than vanish (1006)",
        evidence: &["proxy-config", "ws-framing"],
        fix: Fix {
            summary: "forward Upgrade and Connection over HTTP/1.1 on every proxy; close with 1001 on shutdown".into(),
            runtime: vec![],
            persistent: vec![],
        },
    };
    let s = &o.state;
    let Some(open) = s.open else {
        let code = s.close.as_ref().map_or(0, |c| c.code);
        let observed = format!("the page's WebSocket never opened (close code {code})");
        return d.finish(Status::Fail, observed, &[("close_code", f64::from(code))]);
    };
    let mut numbers = vec![
        ("handshake_ms", open),
        ("text_frames", s.text as f64),
        ("binary_frames", s.binary as f64),
        ("undecoded_frames", s.undecoded as f64),
        ("lost", s.lost() as f64),
    ];
    let frames = format!(
        "{} text and {} binary frame(s) decoded ({} not rtcheck's payload), {} lost",
        s.text,
        s.binary,
        s.undecoded,
        s.lost()
    );
    let (status, close) = match &s.close {
        None => (
            Status::Pass,
            format!("no close within {}", fmt_s(o.window_ms)),
        ),
        Some(c) => {
            numbers.push(("close_code", f64::from(c.code)));
            let reason = if c.reason.is_empty() {
                String::new()
            } else {
                format!(" \"{}\"", c.reason.chars().take(60).collect::<String>())
            };
            // 1000/1001 came in a close frame; 1006 means the connection just ended.
            // (wasClean also needs the closing handshake's echo, which a server that
            // exits right after its close frame does not wait for.)
            let status = if matches!(c.code, 1000 | 1001) {
                Status::Pass
            } else {
                Status::Warn
            };
            let how = if c.clean {
                ""
            } else {
                ", no closing handshake"
            };
            (
                status,
                format!("closed {}{reason} after {}{how}", c.code, ms(c.t)),
            )
        }
    };
    if let Some(h) = o.handshake_status {
        numbers.push(("handshake_status", h as f64));
    }
    let observed = format!(
        "handshake in {}{}; {frames}; {close}",
        ms(open),
        carried_by(o)
    );
    d.finish(status, observed, &numbers)
}

/// Which HTTP carried the page's WebSocket, as DevTools shows it: the handshake's status
/// is 200 for RFC 8441's extended CONNECT on an HTTP/2 stream, 101 for an HTTP/1.1
/// Upgrade (a browser falls back to it when the edge does not advertise extended
/// CONNECT: fine). Not a verdict: the version is reported, the check judges the socket.
fn carried_by(o: &WsObs) -> String {
    let after = match o.warmed_h2 {
        Some(true) => " (an HTTP/2 connection to the origin was open first)",
        Some(false) => " (the request made first to the origin did not use HTTP/2)",
        None => "",
    };
    match o.handshake_status {
        Some(200) => {
            format!(" over HTTP/2 (RFC 8441 extended CONNECT, DevTools status 200){after}")
        }
        Some(101) => format!(" over HTTP/1.1 (Upgrade, 101){after}"),
        Some(other) => format!(" (DevTools handshake status {other}){after}"),
        None => " (which HTTP version carried it: DevTools showed no handshake)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::browser::obs::WsState;

    #[test]
    fn the_handshake_status_says_which_http_carried_the_websocket() {
        let obs = |status, warmed| WsObs {
            state: WsState {
                open: Some(3.0),
                ..Default::default()
            },
            window_ms: 1000.0,
            handshake_status: status,
            warmed_h2: warmed,
        };
        let f = websocket("wss://h/ws", &obs(Some(200), Some(true)));
        assert!(
            f.observed.contains("over HTTP/2 (RFC 8441"),
            "{}",
            f.observed
        );
        assert_eq!(f.numbers["handshake_status"], 200.0);
        assert_eq!(f.status, Status::Pass);
        let f = websocket("wss://h/ws", &obs(Some(101), Some(false)));
        assert!(f.observed.contains("over HTTP/1.1"), "{}", f.observed);
        assert!(f.observed.contains("did not use HTTP/2"), "{}", f.observed);
        let f = websocket("ws://h/ws", &obs(None, None));
        assert!(f.observed.contains("DevTools showed no handshake"));
        assert!(!f.numbers.contains_key("handshake_status"));
    }
}
