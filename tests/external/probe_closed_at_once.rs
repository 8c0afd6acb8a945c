//! A peer that accepts the handshake and then ends the stream before any message: a 101
//! then a close (1008, the policy refusal Starlette and FastAPI send on a bad token; 4403,
//! graphql-ws's Forbidden), or a 200 event stream that ends at once. The upgrade worked,
//! the stream did not: never a pass, the close named with its code and reason, and the
//! idle checks not blamed for it. Each peer is a scripted stub, stopped on drop.
use crate::probe_common;
use probe_common::stub::{pause, Stub};
use probe_common::{probe_json, summary};
use serde_json::Value;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

fn finding<'a>(r: &'a Value, id: &str) -> &'a Value {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no finding {id} in {r:#}"))
}

/// The 101 for this request, with its valid accept key.
fn head_101(req: &str) -> Vec<u8> {
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
    let key = req
        .lines()
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        .unwrap_or("")
        .trim();
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    )
    .into_bytes()
}

/// An unmasked server close frame with a code and a reason.
fn close(code: u16, reason: &str) -> Vec<u8> {
    let mut payload = code.to_be_bytes().to_vec();
    payload.extend_from_slice(reason.as_bytes());
    let mut f = vec![0x88, payload.len() as u8];
    f.extend(payload);
    f
}

/// 101, then at once 1008 with a reason holding an ESC (escaped in the report).
fn policy_close(s: &mut TcpStream, req: &str, stopped: &dyn Fn() -> bool) {
    let mut out = head_101(req);
    out.extend(close(1008, "invalid token\x1b[2J"));
    if s.write_all(&out).is_ok() {
        pause(Duration::from_secs(5), stopped);
    }
}

/// 101, 1.5 s of silence (a wait for an auth message), then 4403.
fn late_forbidden(s: &mut TcpStream, req: &str, stopped: &dyn Fn() -> bool) {
    if s.write_all(&head_101(req)).is_err() || !pause(Duration::from_millis(1500), stopped) {
        return;
    }
    if s.write_all(&close(4403, "Forbidden")).is_ok() {
        pause(Duration::from_secs(5), stopped);
    }
}

/// 101, one message, then a normal close: a stream that worked.
fn one_then_close(s: &mut TcpStream, req: &str, stopped: &dyn Fn() -> bool) {
    let mut out = head_101(req);
    out.extend([0x81, 5]);
    out.extend(b"hello");
    out.extend(close(1000, "done"));
    if s.write_all(&out).is_ok() {
        pause(Duration::from_secs(5), stopped);
    }
}

/// A 200 event stream that ends at once (no length, closed: the body is empty).
fn sse_ends(s: &mut TcpStream, _: &str, _: &dyn Fn() -> bool) {
    let _ = s.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n",
    );
}

fn ws_url(stub: &Stub) -> String {
    format!("ws://127.0.0.1:{}/ws", stub.port)
}

/// The colleague's case: `probe --quick` passed `upgrade` on "0 message(s) received".
#[test]
fn a_101_then_a_policy_close_is_not_a_working_stream() {
    let stub = Stub::start(policy_close);
    let (r, code, err) = probe_json(&["--quick", "--timeout", "3s", &ws_url(&stub)]);
    let ctx = format!("exit {code}, stderr {err}\n{}", summary(&r));
    assert_eq!(code, 1, "{ctx}");
    let up = finding(&r, "upgrade");
    assert_eq!(up["status"], "fail", "{ctx}");
    assert_eq!(up["numbers"]["close_code"], 1008.0, "{ctx}");
    assert_eq!(up["numbers"]["messages"], 0.0, "{ctx}");
    let observed = up["observed"].as_str().unwrap();
    assert!(observed.contains("the upgrade worked"), "{ctx}");
    assert!(observed.contains("close 1008 (policy violation)"), "{ctx}");
    assert!(observed.contains("invalid token\\x1b[2J"), "{ctx}");
    assert!(!observed.contains('\x1b'), "{ctx}");
    let fix = up["fix"]["summary"].as_str().unwrap();
    assert!(
        fix.contains("auth token") && fix.contains("--origin"),
        "{ctx}"
    );
    // The foreign Origin's 101 is no proof a foreign site gets a session here.
    let origin = finding(&r, "origin")["observed"].as_str().unwrap();
    assert!(origin.contains("is not known"), "{ctx}");
}

/// Without --quick: a refusal after a wait fails `upgrade` too, and the idle checks do
/// not call it the path's idle timeout.
#[test]
fn a_late_refusal_fails_upgrade_and_is_no_idle_timeout() {
    let stub = Stub::start(late_forbidden);
    let url = ws_url(&stub);
    let (r, code, err) = probe_json(&["--idle-for", "4s", "--timeout", "3s", &url]);
    let ctx = format!("exit {code}, stderr {err}\n{}", summary(&r));
    assert_eq!(code, 1, "{ctx}");
    let up = finding(&r, "upgrade");
    assert_eq!(up["status"], "fail", "{ctx}");
    assert_eq!(up["numbers"]["close_code"], 4403.0, "{ctx}");
    let observed = up["observed"].as_str().unwrap();
    assert!(observed.contains("(as HTTP 403)"), "{ctx}");
    assert!(observed.contains("reason \"Forbidden\""), "{ctx}");
    for id in ["idle-timeout", "heartbeat"] {
        let f = finding(&r, id);
        assert_eq!(f["status"], "skip", "{id}: {ctx}");
        assert!(
            f["reason"].as_str().unwrap().contains("4403"),
            "{id}: {ctx}"
        );
    }
}

/// The counter-case: a message, then a normal close, is a working upgrade; the close is
/// still named.
#[test]
fn a_close_after_a_message_is_named_not_failed() {
    let stub = Stub::start(one_then_close);
    let (r, code, err) = probe_json(&["--quick", "--timeout", "3s", &ws_url(&stub)]);
    let ctx = format!("exit {code}, stderr {err}\n{}", summary(&r));
    let up = finding(&r, "upgrade");
    assert_eq!(up["status"], "pass", "{ctx}");
    assert_eq!(up["numbers"]["messages"], 1.0, "{ctx}");
    assert_eq!(up["numbers"]["close_code"], 1000.0, "{ctx}");
    let observed = up["observed"].as_str().unwrap();
    assert!(
        observed.contains("1000 (normal closure), reason \"done\""),
        "{ctx}"
    );
}

/// SSE: a 200 text/event-stream that ends at once fails sse-buffering, and the idle
/// checks skip instead of blaming a proxy's timeout.
#[test]
fn an_event_stream_that_ends_at_once_is_not_an_idle_timeout() {
    let stub = Stub::start(sse_ends);
    let url = stub.url("/events");
    let (r, code, err) = probe_json(&["--idle-for", "3s", "--timeout", "3s", &url]);
    let ctx = format!("exit {code}, stderr {err}\n{}", summary(&r));
    assert_eq!(code, 1, "{ctx}");
    assert_eq!(finding(&r, "sse-buffering")["status"], "fail", "{ctx}");
    for id in ["idle-timeout", "heartbeat"] {
        let f = finding(&r, id);
        assert_eq!(f["status"], "skip", "{id}: {ctx}");
        assert!(f["reason"].as_str().unwrap().contains("EOF"), "{id}: {ctx}");
    }
}

/// 101, then nothing: no message, no ping, no answer to the probe's ping, no close.
fn silent_hold(s: &mut TcpStream, req: &str, stopped: &dyn Fn() -> bool) {
    if s.write_all(&head_101(req)).is_ok() {
        pause(Duration::from_secs(30), stopped);
    }
}

/// A peer that completes the 101 and then holds the connection silently: the upgrade
/// completed, but with the ping after the idle watch unanswered a working stream is not
/// shown (a warn, not a pass), and nothing that needs an answer passes on its silence.
#[test]
fn a_silent_peer_after_the_101_passes_nothing_that_needs_an_answer() {
    let stub = Stub::start(silent_hold);
    let url = ws_url(&stub);
    let (r, code, err) = probe_json(&["--idle-for", "4s", "--timeout", "3s", &url]);
    let ctx = format!("exit {code}, stderr {err}\n{}", summary(&r));
    let up = finding(&r, "upgrade");
    assert_eq!(up["status"], "warn", "{ctx}");
    assert_eq!(up["numbers"]["messages"], 0.0, "{ctx}");
    let observed = up["observed"].as_str().unwrap();
    assert!(
        observed.contains("nothing came from the server after the 101"),
        "{ctx}"
    );
    assert!(observed.contains("ping after it went unanswered"), "{ctx}");
    assert!(observed.contains("a working stream is not"), "{ctx}");
    // The checks that need an answer or a beat from the server do not pass on silence.
    for id in ["idle-timeout", "heartbeat"] {
        let f = finding(&r, id);
        assert_ne!(f["status"], "pass", "{id}: {ctx}");
    }
    let idle = finding(&r, "idle-timeout")["observed"].as_str().unwrap();
    assert!(idle.contains("not answered"), "{ctx}");
}
