//! A WebSocket the server closed before any message: the handshake worked, the stream
//! did not. The close is named (code, its meaning, the server's reason) and the likely
//! causes given, none claimed: libraries accept the upgrade and then refuse the session
//! with 1008 (Starlette, FastAPI) or an application code (graphql-ws: 4401, 4403, 4406)
//! when the token, the Origin or the subprotocol does not satisfy them.
use super::session::{Ending, StreamObs};
use crate::findings::Fix;

/// A stream that ended, by the far side, before one message came.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedEmpty {
    /// The close frame's code (None: a close frame without one, or no close frame).
    pub code: Option<u16>,
    /// The close frame's reason, escaped and bounded.
    pub reason: Option<String>,
    /// How it ended: a close frame, an EOF or a reset.
    pub ending: Ending,
    /// Milliseconds after the response head.
    pub after_ms: f64,
}

/// Pure: Some when the stream ended by the far side (a close frame, EOF, reset) with no
/// message counted. A stream still open, cut by the probe, or broken is not this.
pub fn closed_empty(s: &StreamObs) -> Option<ClosedEmpty> {
    let ending = s.ending.clone()?;
    let code = match ending {
        Ending::CloseFrame(c) => c,
        Ending::Eof | Ending::Reset => None,
        Ending::Open | Ending::Error(_) => return None,
    };
    if !s.events.is_empty() || s.unrecorded > 0 || s.cut.is_some() {
        return None;
    }
    Some(ClosedEmpty {
        code,
        reason: s.close_reason.clone(),
        ending,
        after_ms: (s.ended_ms - s.head_ms).max(0.0),
    })
}

/// A close this soon after the head is no idle timeout (none is set under a second).
pub const AT_ONCE_MS: f64 = 1000.0;

/// Pure: the close that ends the stream's judgement: a refusal code at any time, any
/// close at once, or any close in a short (`--quick`) watch. Later closes of a quiet
/// stream in the idle watch are the idle timeout's to judge.
pub fn refused(s: &StreamObs, quick: bool) -> Option<ClosedEmpty> {
    // From the request, not the head: a path that held the head back and then cut the
    // stream timed out on a silence that began with the request.
    closed_empty(s).filter(|c| quick || is_refusal(c.code) || s.ended_ms < AT_ONCE_MS)
}

/// Pure: why the idle checks measured nothing on a refused stream.
pub fn skip_reason(c: &ClosedEmpty) -> String {
    format!("not measured: {}", describe(c))
}

/// Pure: what a close code means (one table, the wire crate's: bench and verify name
/// closes too).
pub use rtcheck_wire::ws::close::meaning;

/// Pure: the close as one phrase: who ended it, with what, when.
pub fn describe(c: &ClosedEmpty) -> String {
    let what = match (&c.ending, c.code) {
        (Ending::CloseFrame(_), Some(code)) => {
            format!("the server sent close {code} ({})", meaning(code))
        }
        (Ending::CloseFrame(_), None) => "the server sent a close frame without a code".into(),
        (Ending::Reset, _) => "the connection was reset".into(),
        _ => "the connection was closed (EOF, no close frame)".into(),
    };
    let reason = match &c.reason {
        Some(r) => format!(", reason \"{r}\""),
        None => String::new(),
    };
    format!(
        "{what}{reason} {} after the response head, before any message",
        super::fmt_s(c.after_ms)
    )
}

/// Refusals libraries send after the handshake: a policy, an auth or an app code.
fn is_refusal(code: Option<u16>) -> bool {
    matches!(code, Some(1008 | 3000 | 3003 | 4000..=4999))
}

/// Pure: the fix, by what the close says. `sent`: what the probe's handshake carried
/// (Origin, header names), so the reader compares it with what the app's client sends.
pub fn fix(c: &ClosedEmpty, sent: &str) -> Fix {
    let summary = match c.code {
        code if is_refusal(code) => format!(
            "the upgrade worked and the server then refused the session (its reason, when \
             it gave one, says which): the likely causes are a missing or expired auth \
             token, an Origin it does not allow, or a subprotocol it wants; send what the \
             app's client sends: its token (-H 'Authorization: ...' or its cookie), its \
             Origin (--origin), its subprotocol (-H 'Sec-WebSocket-Protocol: ...'); the \
             probe sent {sent}"
        ),
        Some(1001 | 1012 | 1013) => "the server was going away or restarting: probe \
             again; when it repeats, a deploy or a proxy drain is ending connections"
            .into(),
        Some(1011 | 1014) => "the server failed after the upgrade: its log at this time \
             says why"
            .into(),
        Some(1002 | 1003 | 1007 | 1009 | 1010) => "the server rejected what it got: with \
             a library protocol, name it (--app-protocol) so the probe speaks it"
            .into(),
        Some(_) | None if matches!(c.ending, Ending::CloseFrame(_)) => format!(
            "the server ended the session before any message: an endpoint that wants a first message \
             (a subscribe: --app-protocol, --channel) or credentials closes like this; the \
             probe sent {sent}"
        ),
        _ => format!(
            "something on the path (the server's connect handler, an auth layer, a proxy) \
             dropped the connection before any message: the server's log says which; \
             the probe sent {sent}"
        ),
    };
    Fix {
        summary,
        ..Fix::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(ending: Ending, events: usize, reason: Option<&str>) -> StreamObs {
        let mut s = StreamObs {
            head_ms: 10.0,
            ended_ms: 12.0,
            ending: Some(ending),
            close_reason: reason.map(str::to_string),
            ..Default::default()
        };
        for _ in 0..events {
            s.events.push(crate::probe::session::EventRec {
                at_ms: 11.0,
                read: 0,
                id: None,
                name: None,
                seq_ts: None,
                wall_ns: 0,
            });
        }
        s
    }

    #[test]
    fn a_policy_close_before_any_message_is_named_with_its_reason() {
        let s = obs(Ending::CloseFrame(Some(1008)), 0, Some("invalid token"));
        let c = closed_empty(&s).unwrap();
        let d = describe(&c);
        assert!(d.contains("close 1008 (policy violation)"), "{d}");
        assert!(d.contains("reason \"invalid token\""), "{d}");
        let f = fix(&c, "Origin: http://x");
        assert!(f.summary.contains("auth"), "{}", f.summary);
        assert!(f.summary.contains("Origin: http://x"), "{}", f.summary);
    }

    #[test]
    fn only_an_empty_stream_ended_by_the_far_side_counts() {
        assert!(closed_empty(&obs(Ending::CloseFrame(Some(1000)), 1, None)).is_none());
        assert!(closed_empty(&obs(Ending::Open, 0, None)).is_none());
        assert!(closed_empty(&obs(Ending::Error("WebSocket x".into()), 0, None)).is_none());
        let eof = closed_empty(&obs(Ending::Eof, 0, None)).unwrap();
        assert!(describe(&eof).contains("EOF, no close frame"));
        assert!(fix(&eof, "-").summary.contains("dropped the connection"));
    }

    #[test]
    fn a_late_quiet_close_is_the_idle_watchs_unless_it_is_a_refusal() {
        let mut s = obs(Ending::Eof, 0, None);
        s.ended_ms = 60_000.0;
        assert!(refused(&s, false).is_none());
        assert!(refused(&s, true).is_some());
        s.ending = Some(Ending::CloseFrame(Some(4408)));
        assert!(refused(&s, false).is_some());
        // A head held 3 s by a buffering proxy, then its idle cut: not at once.
        let mut held = obs(Ending::Eof, 0, None);
        (held.head_ms, held.ended_ms) = (3000.0, 3010.0);
        assert!(refused(&held, false).is_none());
    }

    #[test]
    fn application_codes_read_as_their_http_status() {
        assert_eq!(meaning(4401), "the application's code (as HTTP 401)");
        assert_eq!(meaning(4000), "the application's code");
        assert_eq!(meaning(2999), "unregistered");
        assert!(is_refusal(Some(4403)) && !is_refusal(Some(1000)));
    }
}
