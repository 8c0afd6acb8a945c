//! `upgrade`: the WebSocket handshake through the path answers 101 with a valid
//! `Sec-WebSocket-Accept` (evidence proxy-config: without the Upgrade headers, 400 at once).
use super::session::{Afterward, Ending, StreamObs, WsObs};
use super::{closed, finding, fmt_s, proxy, Kind, Meta, UrlObs};
use crate::findings::{Finding, Status};

pub const ID: &str = super::CheckId::Upgrade.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::Upgrade,
    title: "WebSocket upgrade through the path",
    evidence: &["proxy-config"],
    run: check,
};

/// Where a status class points, before the fix says what to change.
fn what_status_says(code: u16) -> &'static str {
    match code {
        400 | 426 => "the server saw a plain request: the Upgrade headers did not reach it",
        200..=299 => "the path answered the upgrade itself (a page, a cache, a catch-all route)",
        401 => "the endpoint wants credentials",
        404 => "no route for this path on the proxy or the application",
        502..=504 => "the proxy could not reach the backend",
        _ => "the upgrade was refused",
    }
}

/// What a refusal says: the server's own words when its body had any (a library names
/// its reason there), else what the status class points to.
fn refused_says(code: u16, body: Option<&str>) -> String {
    match body {
        Some(b) if matches!(code, 400 | 426) => format!("the server answered {b}"),
        _ => what_status_says(code).to_string(),
    }
}

/// What the --direct endpoint answered, when it was asked.
fn direct_note(u: &UrlObs) -> String {
    match u.direct_status() {
        Some(d) => format!("; direct: {d}"),
        None => String::new(),
    }
}

/// What the stream after a 101 showed that makes it no working stream: the probe cut it
/// (a flood, a peer that stopped reading), or it broke (frames that are not WebSocket).
struct Cut<'a> {
    why: &'a str,
    broken: bool,
}

fn stream_cut(ws: &WsObs) -> Option<Cut<'_>> {
    let s = ws.stream.as_ref()?;
    let broken = match &s.ending {
        Some(Ending::Error(e)) if e.starts_with("WebSocket ") => Some(e),
        _ => None,
    };
    s.cut.as_ref().or(broken).map(|why| Cut {
        why,
        broken: broken.is_some(),
    })
}

pub fn check(u: &UrlObs) -> Option<Finding> {
    let ws = match (&u.kind, &u.ws) {
        (Kind::WebSocket, Some(ws)) => ws,
        _ => return None,
    };
    let h = &ws.head;
    // A 101 that carries no usable stream is not a pass.
    let cut = stream_cut(ws);
    // Closed by the far side before any message: the handshake worked, the stream did not.
    let closed = ws.stream.as_ref().and_then(|s| closed::refused(s, u.quick));
    let sent = format!("Origin: {}", u.origin_sent.as_deref().unwrap_or("-"));
    let (status, observed) = verdict(u, ws, cut.as_ref(), closed.as_ref());
    let mut fix = match (h.status, ws.accept_ok, &closed) {
        (101, true, Some(c)) if cut.is_none() => closed::fix(c, &sent),
        (101, _, _) => proxy::upgrade(u.proxy),
        (code, _, _) => proxy::status(u.proxy, code, Kind::WebSocket, u.direct_status()),
    };
    if let (400 | 426, Some(b)) = (h.status, ws.body.as_deref()) {
        // The server said why: its words, not a guess that the Upgrade headers were lost.
        fix.summary = format!(
            "HTTP {}: the server refused the upgrade and said why: {b}; when that names \
             the Origin or Host, the proxy rewrote Host (forward the client's, with its \
             port: nginx proxy_set_header Host $http_host); when it names the upgrade, \
             the lines below",
            h.status
        );
    }
    let mut f = finding(
        &META,
        u,
        status,
        observed,
        "101 Switching Protocols with a valid Sec-WebSocket-Accept",
        "a proxy must forward Upgrade and Connection over HTTP/1.1; without them WebSocket dies at once with 400",
        fix,
    );
    f.numbers.insert("status".into(), h.status as f64);
    if let Some(fb) = &u.fallback {
        f.observed
            .push_str(&format!("; {}", super::fallback::note(fb)));
    }
    if let Some(s) = &ws.stream {
        add_stream(&mut f, s, closed.is_some());
    }
    Some(f)
}

/// Pure: the verdict from the head and what the stream after it showed.
fn verdict(
    u: &UrlObs,
    ws: &WsObs,
    cut: Option<&Cut>,
    closed: Option<&closed::ClosedEmpty>,
) -> (Status, String) {
    let h = &ws.head;
    match (h.status, ws.accept_ok) {
        (101, true) if cut.is_some() => (
            Status::Fail,
            format!(
                "101 Switching Protocols, then {}: {}",
                if cut.is_some_and(|c| c.broken) {
                    "the stream broke"
                } else {
                    "the probe cut the connection"
                },
                cut.map_or("", |c| c.why)
            ),
        ),
        (101, true) if closed.is_some() => (
            Status::Fail,
            format!(
                "101 Switching Protocols, Sec-WebSocket-Accept valid: the upgrade worked; \
                 then {}",
                closed.map(closed::describe).unwrap_or_default()
            ),
        ),
        (101, true) if ws.stream.as_ref().is_some_and(ping_unanswered) => (
            Status::Warn,
            "101 Switching Protocols, Sec-WebSocket-Accept valid: the upgrade completed, \
             but a working stream is not shown"
                .to_string(),
        ),
        (101, true) => (
            Status::Pass,
            "101 Switching Protocols, Sec-WebSocket-Accept valid".to_string(),
        ),
        (101, false) => (
            Status::Fail,
            "101 but Sec-WebSocket-Accept missing or wrong (a proxy answered for the server?)"
                .to_string(),
        ),
        (403, _) => (
            Status::Fail,
            format!(
                "HTTP 403 {} instead of 101: refused (sent Host: {}, Origin: {}){}",
                h.reason,
                u.target.host_header(),
                u.origin_sent.as_deref().unwrap_or("-"),
                direct_note(u)
            ),
        ),
        (s, _) => (
            Status::Fail,
            format!(
                "HTTP {s} {} instead of 101: {}{}",
                h.reason,
                refused_says(s, ws.body.as_deref()),
                direct_note(u)
            ),
        ),
    }
}

/// Whatever the payload: the messages that came through, how often, and a close after
/// them (named, not failed; `refused`: a close before any message, said already).
fn add_stream(f: &mut Finding, s: &StreamObs, refused: bool) {
    f.observed.push_str(&format!(
        "; in {}: {}",
        fmt_s(s.ended_ms),
        s.messages_text()
    ));
    f.numbers.insert("messages".into(), s.events.len() as f64);
    f.observed.push_str(&silence_note(s));
    if let Some(Ending::CloseFrame(code)) = &s.ending {
        if let Some(c) = code {
            f.numbers.insert("close_code".into(), *c as f64);
        }
        if !refused && !s.events.is_empty() {
            // After messages a close is not a failure here, but it is named.
            f.observed.push_str(&format!(
                "; then the server sent close {}{}",
                code.map_or("without a code".into(), |c| format!(
                    "{c} ({})",
                    closed::meaning(c)
                )),
                s.close_reason
                    .as_ref()
                    .map_or(String::new(), |r| format!(", reason \"{r}\""))
            ));
        }
    }
    if let Some(c) = s.cadence_ms() {
        f.numbers
            .insert("message_interval_s".into(), (c / 10.0).round() / 100.0);
    }
}

/// Pure: the stream stayed open with nothing from the server, and the probe's ping after
/// the idle watch went unanswered: nothing shows the stream works.
fn ping_unanswered(s: &StreamObs) -> bool {
    silent_open(s)
        && s.after_idle
            .as_ref()
            .is_some_and(|a| matches!(a.outcome, Afterward::Silent { .. }))
}

/// Pure: open to the end with nothing read from the server, and not cut.
fn silent_open(s: &StreamObs) -> bool {
    matches!(s.ending, Some(Ending::Open) | None) && s.reads_ms.is_empty() && s.cut.is_none()
}

/// Pure: what a stream that stayed open with nothing from the server did not show. The
/// upgrade worked; a working stream is not shown by silence, and the ping after it says
/// whether the server still answers (RFC 6455 owes a pong).
fn silence_note(s: &StreamObs) -> String {
    if !silent_open(s) {
        return String::new();
    }
    let ping = match s.after_idle.as_ref() {
        Some(a) => match a.outcome {
            Afterward::Answered(ms) => {
                format!("; the probe's ping after it was answered in {}", fmt_s(ms))
            }
            Afterward::Silent { .. } => format!(
                "; the probe's ping after it went unanswered in {} (RFC 6455 owes a pong)",
                fmt_s(a.waited_ms)
            ),
            Afterward::Ended(_) => String::new(),
        },
        None => "; no ping was sent to ask".into(),
    };
    format!(
        "; nothing came from the server after the 101{ping}: the upgrade is shown, a working stream is not"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::session::AfterIdle;

    /// A 101 and then silence: the note says what was not shown, and whether the ping
    /// after the silence was answered; a stream that sent anything gets no note.
    #[test]
    fn a_silent_stream_after_the_101_is_said_not_shown_working() {
        let mut s = StreamObs {
            ending: Some(Ending::Open),
            ended_ms: 4000.0,
            window_ms: 4000.0,
            ..Default::default()
        };
        let n = silence_note(&s);
        assert!(
            n.contains("nothing came from the server after the 101"),
            "{n}"
        );
        assert!(n.contains("no ping was sent"), "{n}");
        s.after_idle = Some(AfterIdle {
            sent_ms: 4000.0,
            waited_ms: 3000.0,
            outcome: Afterward::Silent {
                tcp: None,
                retrans: None,
                acked: true,
            },
        });
        let n = silence_note(&s);
        assert!(n.contains("ping after it went unanswered in 3"), "{n}");
        assert!(n.contains("a working stream is not"), "{n}");
        // The upgrade's verdict: a warn, not a pass, on an unanswered ping.
        assert!(ping_unanswered(&s));
        let answered = StreamObs {
            after_idle: Some(AfterIdle {
                outcome: Afterward::Answered(2.0),
                ..s.after_idle.clone().unwrap()
            }),
            ..s.clone()
        };
        assert!(!ping_unanswered(&answered));
        s.reads_ms.push(100.0);
        assert_eq!(silence_note(&s), "");
        assert!(!ping_unanswered(&s));
    }

    #[test]
    fn a_refusal_with_a_body_is_quoted_not_guessed() {
        let said = refused_says(400, Some("\"Not an accepted origin.\""));
        assert_eq!(said, "the server answered \"Not an accepted origin.\"");
        assert!(!said.contains("Upgrade"));
        // No body: the status class is all there is.
        assert!(refused_says(400, None).contains("Upgrade headers"));
        // A body on another status keeps that status's pointer.
        assert_eq!(refused_says(404, Some("nope")), what_status_says(404));
    }
}
