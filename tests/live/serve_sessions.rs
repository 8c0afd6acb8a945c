//! `serve --delivery session-ack|snapshot` (issue 12): sessions issued at connect, acks,
//! bounded queues with reported overflow, resets for unknown sessions, expiry that gives
//! the memory back, and snapshot's latest-first. Values are read back from the wire, the
//! stats JSON and /metrics; waits are on conditions with generous bounds.
use crate::common;
use common::{header, http, http_full, http_get, Server};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::{connect, Message};

type Ws = tokio_tungstenite::tungstenite::WebSocket<
    tokio_tungstenite::tungstenite::stream::MaybeTlsStream<TcpStream>,
>;

/// Text frames and seqs until `n` payloads have arrived.
fn ws_read(ws: &mut Ws, n: usize) -> (Vec<Value>, Vec<u64>) {
    let (mut texts, mut seqs) = (Vec::new(), Vec::new());
    while seqs.len() < n {
        match ws.read().unwrap() {
            // The server's hello (`{"epoch":..}`, first on every /ws outside session-ack).
            Message::Text(t) if t.as_str().starts_with("{\"epoch\"") => {}
            Message::Text(t) => texts.push(serde_json::from_str(t.as_str()).unwrap()),
            Message::Binary(b) => seqs.push(rtcheck_wire::payload::decode(&b).unwrap().0),
            _ => {}
        }
    }
    (texts, seqs)
}

fn sessions(srv: &Server) -> Value {
    srv.stats()["sessions"].clone()
}

fn post(addr: SocketAddr, path: &str) -> (u16, String) {
    http(
        addr,
        &format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    )
}

#[test]
fn websocket_sessions_replay_what_was_not_acked_and_drop_what_was() {
    let srv = Server::start(&["--delivery", "session-ack", "--rate", "50", "--size", "128"]);
    let (mut ws, _) = connect(format!("ws://{}/ws", srv.addr)).unwrap();
    let (texts, seqs) = ws_read(&mut ws, 10);
    let id = texts[0]["session"].as_str().unwrap().to_string();
    assert_eq!(texts[0]["reset"], false, "{texts:?}");
    assert_eq!(id.len(), 32);
    let acked = seqs[6];
    ws.send(Message::text(format!("{{\"ack\":{acked}}}")))
        .unwrap();
    srv.wait_stats(Duration::from_secs(30), |s| s["sessions"]["acks"] == 1);
    ws.close(None).unwrap();
    let _ = ws.flush();
    drop(ws);
    let last = *seqs.last().unwrap();
    srv.wait_stats(Duration::from_secs(30), |s| {
        s["sessions"]["connected"] == 0 && s["rounds_sent"].as_u64().unwrap() > last + 10
    });
    // Back with the session: everything after the ack, once and in order, then live.
    let (mut ws, _) = connect(format!("ws://{}/ws?session={id}", srv.addr)).unwrap();
    let (texts, seqs) = ws_read(&mut ws, 20);
    assert_eq!(texts[0]["session"], id.as_str(), "{texts:?}");
    assert_eq!(texts[0]["reset"], false);
    assert_eq!(texts.len(), 1, "no gap marker: {texts:?}");
    assert_eq!(seqs[0], acked + 1, "{seqs:?}");
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    // An ack for a seq never sent is ignored and counted; the session is untouched.
    ws.send(Message::text(format!("{{\"ack\":{}}}", u64::MAX)))
        .unwrap();
    let s = srv.wait_stats(Duration::from_secs(30), |s| {
        s["sessions"]["acks_ignored"] == 1
    });
    assert_eq!(s["sessions"]["count"], 1, "{s}");
    assert!(s["sessions"]["bytes"].as_u64().unwrap() > 0, "{s}");
    let (_, metrics) = http_get(srv.addr, "/metrics");
    assert!(
        metrics.contains("\nrtcheck_session_acks_ignored_total 1\n"),
        "{metrics}"
    );
}

/// Read an SSE response until `want` is in it (or 20 s).
fn sse(addr: SocketAddr, path: &str, want: &str) -> (TcpStream, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let (mut got, mut buf, t0) = (Vec::new(), [0u8; 8192], Instant::now());
    while t0.elapsed() < Duration::from_secs(20) {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        if String::from_utf8_lossy(&got).contains(want) {
            break;
        }
    }
    (s, String::from_utf8_lossy(&got).into_owned())
}

fn first_id(text: &str) -> u64 {
    let rest = text.split("id: ").nth(1).unwrap();
    // `SEQ@EPOCH`: the seq first.
    let id = rest.lines().next().unwrap();
    id.split('@').next().unwrap().parse().unwrap()
}

fn event_data<'a>(text: &'a str, event: &str) -> Option<&'a str> {
    let at = text.find(&format!("event: {event}\ndata: "))?;
    let rest = &text[at + event.len() + 14..];
    Some(&rest[..rest.find('\n')?])
}

#[test]
fn sse_session_overflow_is_a_gap_marker_and_unknown_sessions_reset() {
    let srv = Server::start(&[
        "--delivery",
        "session-ack",
        "--rate",
        "50",
        "--size",
        "128",
        "--session-queue",
        "5",
    ]);
    let (s, text) = sse(srv.addr, "/sse", "id: ");
    let hello: Value = serde_json::from_str(event_data(&text, "session").unwrap()).unwrap();
    let id = hello["session"].as_str().unwrap().to_string();
    assert_eq!(hello["reset"], false);
    // Ack over HTTP, then leave for long enough to overflow the 5-message queue.
    let first = first_id(&text);
    let (code, body) = post(srv.addr, &format!("/ack?session={id}&seq={first}"));
    assert_eq!(code, 200, "{body}");
    drop(s);
    let t = srv.wait_stats(Duration::from_secs(30), |s| {
        s["sessions"]["connected"] == 0 && s["sessions"]["overflow_messages"].as_u64() > Some(10)
    });
    assert_eq!(t["sessions"]["messages"], 5, "bounded: {t}");
    let (_, text) = sse(srv.addr, &format!("/sse?session={id}"), "id: ");
    let gap: Value = serde_json::from_str(event_data(&text, "gap").unwrap()).unwrap();
    assert_eq!(gap["from"], first + 1, "what followed the ack: {text}");
    assert!(gap["to"].as_u64().unwrap() > first + 10, "{text}");
    assert_eq!(first_id(&text), gap["to"].as_u64().unwrap() + 1, "{text}");
    // Unknown session: a new one, reset true, counted.
    let (_, text) = sse(srv.addr, "/sse?session=doesnotexist", "\"reset\"");
    let hello: Value = serde_json::from_str(event_data(&text, "session").unwrap()).unwrap();
    assert_eq!(hello["reset"], true, "{text}");
    assert_ne!(hello["session"], id.as_str());
    assert_eq!(sessions(&srv)["resets"], 1);
    // Bad acks: never-sent seq and unknown session are ignored and counted; no seq is a 400.
    assert_eq!(
        post(srv.addr, &format!("/ack?session={id}&seq=999999999")).0,
        200
    );
    assert_eq!(post(srv.addr, "/ack?session=nope&seq=1").0, 200);
    assert_eq!(post(srv.addr, &format!("/ack?session={id}&seq=x")).0, 400);
    assert_eq!(http_get(srv.addr, "/ack?session=a&seq=1").0, 405);
    assert_eq!(sessions(&srv)["acks_ignored"], 2);
    let (code, body) = http_get(srv.addr, &format!("/session?id={id}"));
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(v["bytes"].as_u64().unwrap() > 5 * 128, "{v}");
    assert_eq!(http_get(srv.addr, "/session?id=nope").0, 404);
}

fn rss(srv: &Server) -> u64 {
    srv.stats()["rss_bytes"].as_u64().unwrap()
}

#[test]
fn expired_sessions_give_their_memory_back() {
    // 200 polling sessions x 40 messages x 4 KiB: about 33 MB held, then expired.
    let srv = Server::start(&[
        "--delivery",
        "session-ack",
        "--rate",
        "40",
        "--size",
        "4KiB",
        "--ring",
        "40",
        "--session-ttl",
        "3s",
    ]);
    srv.wait_stats(Duration::from_secs(30), |s| {
        s["rounds_sent"].as_u64() > Some(5)
    });
    let base = rss(&srv);
    let n = 200u64;
    for _ in 0..n {
        let (code, body) = http_get(srv.addr, "/poll?session=&since=0");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!((code, v["reset"].as_bool()), (200, Some(false)), "{body}");
        assert_eq!(v["session"].as_str().unwrap().len(), 32);
    }
    let full = (n * 40 * 4096) as f64;
    let peak = srv.wait_stats(Duration::from_secs(60), |s| {
        s["sessions"]["bytes"].as_f64().unwrap() >= full
    });
    let held = peak["sessions"]["bytes"].as_u64().unwrap();
    let high = peak["rss_bytes"].as_u64().unwrap();
    assert!(high > base + held / 2, "RSS {high} vs base {base} + {held}");
    let after = srv.wait_stats(Duration::from_secs(60), |s| {
        s["sessions"]["count"] == 0 && s["sessions"]["expired"].as_u64() >= Some(n)
    });
    assert_eq!(after["sessions"]["bytes"], 0, "{after}");
    let (_, metrics) = http_get(srv.addr, "/metrics");
    assert!(metrics.contains("\nrtcheck_sessions 0\n"), "{metrics}");
    assert!(metrics.contains("\nrtcheck_session_bytes 0\n"), "{metrics}");
    // RSS follows: at least half of what the sessions added is given back.
    let t0 = Instant::now();
    let mut now = rss(&srv);
    while now > base + (high - base) / 2 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
        now = rss(&srv);
    }
    assert!(
        now <= base + (high - base) / 2,
        "RSS base {base}, with sessions {high}, after expiry {now}"
    );
}

#[test]
fn snapshot_clients_get_the_latest_message_first() {
    let srv = Server::start(&["--delivery", "snapshot", "--rate", "50", "--size", "128"]);
    srv.wait_stats(Duration::from_secs(30), |s| {
        s["rounds_sent"].as_u64() > Some(10)
    });
    let (_, body) = http_get(srv.addr, "/poll?since=0");
    let v: Value = serde_json::from_str(&body).unwrap();
    let latest = v["latest"].as_u64().unwrap();
    // The skipped seqs are announced: gap from since + 1 to just before the latest.
    assert_eq!(
        (&v["gap"], &v["oldest"]),
        (&Value::Bool(true), &v["latest"]),
        "{v}"
    );
    let items = v["messages"].as_array().unwrap();
    assert_eq!(items.len(), 1, "only the latest state: {v}");
    assert_eq!(items[0]["seq"], latest);
    // WebSocket, fresh or resuming from far back: the first message is the latest state.
    for url in ["/ws", "/ws?since=1"] {
        let (_, body) = http_get(srv.addr, "/poll?since=0");
        let before = serde_json::from_str::<Value>(&body).unwrap()["latest"]
            .as_u64()
            .unwrap();
        let (mut ws, _) = connect(format!("ws://{}{url}", srv.addr)).unwrap();
        let (texts, seqs) = ws_read(&mut ws, 5);
        assert!(
            texts.is_empty(),
            "no gap marker in snapshot mode: {texts:?}"
        );
        assert!(seqs[0] >= before, "{url}: {seqs:?} before {before}");
        assert!(
            seqs[0] <= before + 2,
            "{url}: first is the latest: {seqs:?}"
        );
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    }
    let (_, text) = sse(srv.addr, "/sse", "id: ");
    assert!(!text.contains("event: gap"), "{text}");
}

/// A refusal at --max-sessions: 503, a Retry-After within the TTL, the reason in the body.
fn assert_refused(addr: SocketAddr, request: &str) -> String {
    let (code, head, body) = http_full(addr, request.as_bytes());
    assert_eq!(code, 503, "{head}\n{body}");
    let retry: u64 = header(&head, "retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{head}");
    body
}

#[test]
fn max_sessions_refuses_new_sessions_never_a_returning_one() {
    let srv = Server::start(&[
        "--delivery",
        "session-ack",
        "--max-sessions",
        "2",
        "--session-ttl",
        "60s",
        "--rate",
        "20",
        "--size",
        "64",
    ]);
    let new_poll = || http_get(srv.addr, "/poll?session=&since=0");
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let (code, body) = new_poll();
            assert_eq!(code, 200, "{body}");
            let v: Value = serde_json::from_str(&body).unwrap();
            v["session"].as_str().unwrap().to_string()
        })
        .collect();
    // The cap is reached: a new session is refused on every transport, and so is an
    // unknown id (it would be a new session).
    let get =
        |path: &str| format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    let body = assert_refused(srv.addr, &get("/poll?session=&since=0"));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (v["error"].as_str(), v["max_sessions"].as_u64()),
        (Some("too many sessions"), Some(2)),
        "{v}"
    );
    assert_refused(srv.addr, &get("/poll?session=gone&since=0"));
    let body = assert_refused(srv.addr, &get("/sse"));
    assert!(body.contains("--max-sessions"), "{body}");
    let ws = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    assert_refused(srv.addr, ws);
    // A returning session is never refused, on any transport.
    let (code, body) = http_get(srv.addr, &format!("/poll?session={}&since=0", ids[0]));
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (v["session"].as_str(), v["reset"].as_bool()),
        (Some(ids[0].as_str()), Some(false))
    );
    let (mut ws, _) = connect(format!("ws://{}/ws?session={}", srv.addr, ids[1])).unwrap();
    let (texts, _) = ws_read(&mut ws, 1);
    assert_eq!(texts[0]["session"], ids[1].as_str(), "{texts:?}");
    assert_eq!(texts[0]["reset"], false);
    let s = sessions(&srv);
    assert_eq!(
        (
            s["count"].as_u64(),
            s["max"].as_u64(),
            s["refused"].as_u64()
        ),
        (Some(2), Some(2), Some(4)),
        "{s}"
    );
    let (_, metrics) = http_get(srv.addr, "/metrics");
    assert!(metrics.contains("\nrtcheck_sessions_max 2\n"), "{metrics}");
    assert!(
        metrics.contains("\nrtcheck_sessions_refused_total 4\n"),
        "{metrics}"
    );
    assert!(metrics.contains("\nrtcheck_sessions 2\n"), "{metrics}");
}
