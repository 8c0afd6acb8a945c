//! `rtcheck serve` against hand-made raw-socket input: the RFC 6455 / HTTP defects of
//! issue 10 (close reasons, ping bursts, handshake strictness, partial frames).
use crate::common;
use common::*;
use rtcheck_wire::ws::{self, client_frame};
use std::io::Write;
use std::time::Duration;

const M: [u8; 4] = [0x11, 0x22, 0x33, 0x44];

fn close_payload(code: u16, reason: &[u8]) -> Vec<u8> {
    let mut p = code.to_be_bytes().to_vec();
    p.extend_from_slice(reason);
    p
}

#[test]
fn close_with_an_invalid_utf8_reason_fails_with_1007() {
    let srv = Server::start(&["--rate", "1"]);
    let mut s = raw_ws(srv.addr, None);
    let p = close_payload(
        1000,
        &[
            0xce, 0xba, 0xe1, 0xbd, 0xb9, 0xcf, 0x83, 0xce, 0xbc, 0xce, 0xb5, 0xed, 0xa0, 0x80,
        ],
    );
    s.write_all(&client_frame(ws::OP_CLOSE, true, &p, M))
        .unwrap();
    assert_eq!(read_close_code(&mut s), ws::CLOSE_INVALID_DATA);
    // A valid UTF-8 reason is echoed with the client's code.
    let mut s = raw_ws(srv.addr, None);
    let p = close_payload(1001, "κόσμε".as_bytes());
    s.write_all(&client_frame(ws::OP_CLOSE, true, &p, M))
        .unwrap();
    assert_eq!(read_close_code(&mut s), 1001);
}

#[test]
fn frames_after_a_close_in_the_same_read_are_not_parsed() {
    let srv = Server::start(&["--rate", "1"]);
    let mut s = raw_ws(srv.addr, None);
    let mut wire = client_frame(ws::OP_CLOSE, true, &1000u16.to_be_bytes(), M);
    wire.extend(client_frame(ws::OP_TEXT, true, &[0xff, 0xfe], M));
    wire.extend_from_slice(b"\xff\xff not a frame");
    s.write_all(&wire).unwrap();
    let frames = read_frames_until_eof(&mut s, Duration::from_secs(10));
    let closes: Vec<_> = frames
        .iter()
        .filter(|(op, _)| *op == ws::OP_CLOSE)
        .collect();
    assert_eq!(closes.len(), 1, "{frames:?}");
    assert_eq!(closes[0].1[..2], 1000u16.to_be_bytes());
    let st = srv.wait_stats(Duration::from_secs(5), |s| s["clients"]["ws"] == 0);
    assert_eq!(st["closed"]["peer"], 1, "{st}");
    assert_eq!(st["closed"]["bad_input"], 0, "{st}");
}

/// 200 pings of 125 bytes, each payload ending in its index.
fn ping_burst() -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut wire = Vec::new();
    let mut payloads = Vec::new();
    for i in 0..200u8 {
        let mut p = vec![b'p'; 124];
        p.push(i);
        wire.extend(client_frame(ws::OP_PING, true, &p, M));
        payloads.push(p);
    }
    (wire, payloads)
}

/// Send the burst in pieces of `chunk` bytes, then a close; the server must answer the
/// most recent ping and echo the close, never close silently.
fn ping_burst_case(chunk: usize) {
    let srv = Server::start(&["--wait-start"]);
    let mut s = raw_ws(srv.addr, None);
    s.set_nodelay(true).unwrap();
    let (wire, payloads) = ping_burst();
    for piece in wire.chunks(chunk) {
        s.write_all(piece).unwrap();
    }
    // Wait for the pong to the last ping before closing (bounded).
    let mut frames = Vec::new();
    let t0 = std::time::Instant::now();
    let mut raw = Vec::new();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    while t0.elapsed() < Duration::from_secs(10) {
        let mut b = [0u8; 65536];
        if let Ok(n) = std::io::Read::read(&mut s, &mut b) {
            assert!(n > 0, "server closed during the ping burst (chunk {chunk})");
            raw.extend_from_slice(&b[..n]);
        }
        frames = parse_server_frames(&raw);
        if frames
            .last()
            .is_some_and(|(_, p)| p == payloads.last().unwrap())
        {
            break;
        }
    }
    // Every /ws connection opens with the server's hello (its epoch), then the pongs.
    assert!(!frames.is_empty(), "no hello (chunk {chunk})");
    let hello = frames.remove(0);
    assert_eq!(hello.0, ws::OP_TEXT, "chunk {chunk}");
    assert!(hello.1.starts_with(b"{\"epoch\":\""), "chunk {chunk}");
    assert!(!frames.is_empty(), "no pong at all (chunk {chunk})");
    for (op, p) in &frames {
        assert_eq!(*op, ws::OP_PONG, "chunk {chunk}");
        assert!(
            payloads.contains(p),
            "pong payload is a ping's (chunk {chunk})"
        );
    }
    assert_eq!(
        &frames.last().unwrap().1,
        payloads.last().unwrap(),
        "chunk {chunk}"
    );
    s.write_all(&client_frame(ws::OP_CLOSE, true, &1000u16.to_be_bytes(), M))
        .unwrap();
    assert_eq!(read_close_code(&mut s), 1000, "chunk {chunk}");
    let st = srv.wait_stats(Duration::from_secs(5), |s| s["clients"]["ws"] == 0);
    assert_eq!(st["closed"]["bad_input"], 0, "{st}");
}

#[test]
fn a_ping_burst_gets_the_latest_pong_whole() {
    ping_burst_case(usize::MAX);
}

#[test]
fn a_ping_burst_gets_the_latest_pong_in_odd_pieces() {
    ping_burst_case(1000);
    ping_burst_case(131);
}

const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

fn upgrade(version: &str, host: bool, key: &str, proto: &str) -> Vec<u8> {
    format!(
        "GET /ws {proto}\r\n{}Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: {version}\r\n\r\n",
        if host { "Host: 127.0.0.1\r\n" } else { "" }
    )
    .into_bytes()
}

#[test]
fn an_unsupported_version_gets_426_naming_version_13() {
    let srv = Server::start(&["--wait-start"]);
    let (st, head, _) = http_full(srv.addr, &upgrade("8", true, KEY, "HTTP/1.1"));
    assert_eq!(st, 426, "{head}");
    assert_eq!(header(&head, "Sec-WebSocket-Version"), Some("13"), "{head}");
    assert_eq!(header(&head, "Upgrade"), Some("websocket"), "{head}");
    // A plain GET of the WebSocket endpoint says what it needs the same way.
    let (st, head, _) = http_full(srv.addr, b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    assert_eq!(st, 426, "{head}");
    assert_eq!(header(&head, "Sec-WebSocket-Version"), Some("13"), "{head}");
    assert_eq!(header(&head, "Upgrade"), Some("websocket"), "{head}");
}

#[test]
fn lenient_handshakes_get_400() {
    let srv = Server::start(&["--wait-start"]);
    let cases: [(&str, Vec<u8>); 5] = [
        ("HTTP/1.0", upgrade("13", true, KEY, "HTTP/1.0")),
        ("no Host", upgrade("13", false, KEY, "HTTP/1.1")),
        (
            "15-byte key",
            upgrade("13", true, "dGhlIHNhbXBsZSBub25j", "HTTP/1.1"),
        ),
        (
            "key not base64",
            upgrade("13", true, "not a key at all!!!!!!==", "HTTP/1.1"),
        ),
        ("no key", upgrade("13", true, "", "HTTP/1.1")),
    ];
    for (what, req) in cases {
        let (st, head, _) = http_full(srv.addr, &req);
        assert_eq!(st, 400, "{what}: {head}");
    }
    // The well-formed handshake still upgrades.
    drop(raw_ws(srv.addr, None));
}

#[test]
fn http_framing_is_strict() {
    let srv = Server::start(&["--wait-start"]);
    let post = |extra: &str| {
        http_full(
            srv.addr,
            format!("POST /control/start HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\nabcde")
                .as_bytes(),
        )
        .0
    };
    assert_eq!(post("Content-Length: -1\r\n"), 400);
    assert_eq!(post("Content-Length: 5\r\nContent-Length: 6\r\n"), 400);
    assert_eq!(post("Content-Length: 5, 6\r\n"), 400);
    // Headers over 8 KiB in total, and too many header fields: 431.
    let big = format!("X-Big: {}\r\n", "a".repeat(9000));
    assert_eq!(
        http_full(
            srv.addr,
            format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n{big}\r\n").as_bytes()
        )
        .0,
        431
    );
    let many: String = (0..100).map(|i| format!("X-{i}: y\r\n")).collect();
    assert_eq!(
        http_full(
            srv.addr,
            format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n{many}\r\n").as_bytes()
        )
        .0,
        431
    );
    // HTTP/1.1 without Host.
    assert_eq!(http_full(srv.addr, b"GET /healthz HTTP/1.1\r\n\r\n").0, 400);
    // Two equal Content-Lengths are one length: the request is served.
    assert_eq!(
        post("Content-Length: 5\r\nContent-Length: 5\r\nConnection: close\r\n"),
        200
    );
}

#[test]
fn expect_100_continue_is_answered_before_the_body() {
    let srv = Server::start(&["--wait-start"]);
    let mut s = std::net::TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"POST /control/start?rounds=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        std::io::Read::read_exact(&mut s, &mut b).expect("an interim 100 response");
        got.push(b[0]);
    }
    assert!(
        got.starts_with(b"HTTP/1.1 100 Continue\r\n"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    s.write_all(b"body").unwrap();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut s, &mut rest);
    assert!(rest.starts_with("HTTP/1.1 200 "), "{rest}");
    assert!(rest.contains("\"started\":true"), "{rest}");
}

#[test]
fn absolute_form_targets_are_routed_and_query_values_decoded() {
    let srv = Server::start(&["--rate", "200", "--rounds", "5"]);
    srv.wait_stats(Duration::from_secs(10), |s| s["rounds_sent"] == 5);
    let (st, _, body) = http_full(
        srv.addr,
        format!(
            "GET http://{}/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            srv.addr
        )
        .as_bytes(),
    );
    assert_eq!((st, body.as_str()), (200, "ok"));
    let (st, _, body) = http_full(
        srv.addr,
        b"GET /poll?s%69nce=%33 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(st, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let seqs: Vec<u64> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, vec![4, 5], "{body}");
}

fn metric(addr: std::net::SocketAddr, name: &str) -> Option<f64> {
    let (st, body) = http_get(addr, "/metrics");
    assert_eq!(st, 200);
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn a_dripped_frame_is_counted_then_closed_after_the_message_timeout() {
    let srv = Server::start(&[
        "--wait-start",
        "--message-timeout",
        "1s",
        "--pong-wait",
        "30s",
    ]);
    let mut s = raw_ws(srv.addr, None);
    s.set_nodelay(true).unwrap();
    let frame = client_frame(ws::OP_BINARY, true, &[7; 2000], M);
    // 8 header bytes (2 + 2 extended length + 4 mask) and 1000 of 2000 payload bytes.
    s.write_all(&frame[..1008]).unwrap();
    let st = srv.wait_stats(Duration::from_secs(5), |s| s["partial_frame_bytes"] == 1008);
    assert_eq!(st["clients"]["ws"], 1, "{st}");
    assert_eq!(
        metric(srv.addr, "rtcheck_partial_frame_bytes"),
        Some(1008.0)
    );
    // Drip: one byte every 100 ms keeps the socket busy but never finishes the message.
    let t0 = std::time::Instant::now();
    let mut closed_at = None;
    for b in &frame[1008..1100] {
        if s.write_all(std::slice::from_ref(b)).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        let st = srv.stats();
        if st["closed"]["message_timeout"] == 1 {
            closed_at = Some(t0.elapsed());
            break;
        }
    }
    let closed_at = closed_at.expect("the dripping client was never closed");
    assert!(closed_at < Duration::from_secs(8), "{closed_at:?}");
    let frames = read_frames_until_eof(&mut s, Duration::from_secs(5));
    assert_eq!(
        frames.last().map(|(op, p)| (*op, p[..2].to_vec())),
        Some((ws::OP_CLOSE, ws::CLOSE_POLICY.to_be_bytes().to_vec())),
        "{frames:?}"
    );
    let st = srv.wait_stats(Duration::from_secs(5), |s| s["clients"]["ws"] == 0);
    assert_eq!(st["partial_frame_bytes"], 0, "{st}");
    assert_eq!(metric(srv.addr, "rtcheck_partial_frame_bytes"), Some(0.0));
}

#[test]
fn a_slow_but_complete_message_is_not_cut() {
    let srv = Server::start(&["--wait-start", "--message-timeout", "5s"]);
    let mut s = raw_ws(srv.addr, None);
    let frame = client_frame(ws::OP_TEXT, true, &[b'a'; 300], M);
    for piece in frame.chunks(100) {
        s.write_all(piece).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let st = srv.wait_stats(Duration::from_secs(5), |s| s["partial_frame_bytes"] == 0);
    assert_eq!(st["closed"]["message_timeout"], 0, "{st}");
    assert_eq!(st["clients"]["ws"], 1, "{st}");
}

/// Read server frames until `n` have arrived (bounded).
fn read_n_frames(s: &mut std::net::TcpStream, n: usize) -> Vec<(u8, Vec<u8>)> {
    let t0 = std::time::Instant::now();
    let mut raw = Vec::new();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    loop {
        let frames = parse_server_frames(&raw);
        if frames.len() >= n || t0.elapsed() > Duration::from_secs(10) {
            return frames;
        }
        let mut b = [0u8; 65536];
        if let Ok(k) = std::io::Read::read(s, &mut b) {
            assert!(k > 0, "closed early: {frames:?}");
            raw.extend_from_slice(&b[..k]);
        }
    }
}

#[test]
fn echo_answers_every_ping_of_a_short_burst_and_pongs_before_a_fragmented_message() {
    let srv = Server::start(&["--wait-start"]);
    // Autobahn 2.10: ten pings in one write, ten pongs in order.
    let mut s = raw_ws_at(srv.addr, "/echo", None);
    let wire: Vec<u8> = (0..10u8)
        .flat_map(|i| client_frame(ws::OP_PING, true, &[i; 20], M))
        .collect();
    s.write_all(&wire).unwrap();
    let frames = read_n_frames(&mut s, 10);
    let want: Vec<(u8, Vec<u8>)> = (0..10u8).map(|i| (ws::OP_PONG, vec![i; 20])).collect();
    assert_eq!(frames, want);
    // Autobahn 5.6: a ping between two fragments is answered before the message's echo.
    let mut s = raw_ws_at(srv.addr, "/echo", None);
    let mut wire = client_frame(ws::OP_TEXT, false, b"frag", M);
    wire.extend(client_frame(ws::OP_PING, true, b"p", M));
    wire.extend(client_frame(ws::OP_CONT, true, b"ment", M));
    s.write_all(&wire).unwrap();
    let frames = read_n_frames(&mut s, 2);
    assert_eq!(
        frames,
        vec![
            (ws::OP_PONG, b"p".to_vec()),
            (ws::OP_TEXT, b"fragment".to_vec())
        ]
    );
}

#[test]
fn an_unfinished_text_frame_with_invalid_utf8_fails_at_once() {
    let srv = Server::start(&["--wait-start", "--message-timeout", "60s"]);
    let mut s = raw_ws_at(srv.addr, "/echo", None);
    // 100-byte text frame (6-byte header): only 12 payload bytes come, the 4th invalid.
    let mut payload = vec![b'a'; 100];
    payload[3] = 0xff;
    let f = client_frame(ws::OP_TEXT, true, &payload, M);
    s.write_all(&f[..6 + 12]).unwrap();
    assert_eq!(read_close_code(&mut s), ws::CLOSE_INVALID_DATA);
}
