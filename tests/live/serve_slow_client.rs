//! A client too slow for its queue (`serve --queue`): with seqs (seq-ring, session-ack)
//! every message dropped from its queue is announced in-band by a gap marker
//! `{"from":A,"to":B}` (WebSocket text frame, SSE `event: gap`), never silently missing;
//! under `--delivery snapshot` the slow client is removed (`queue_full`) and reconnects to
//! the latest state. The client stops reading (small receive buffer, the server's send
//! buffer 4 KB) until the server counts drops, then reads again; everything is read back
//! from the wire and /control/stats.
use crate::common;
use common::{parse_server_frames, raw_ws, Server};
use rtcheck_wire::{payload, sse};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A fast publisher, a 2-message queue, no write deadline or pings (the client is
/// stalled on purpose and must not be removed for it in the seq modes).
fn slow_server(delivery: &str) -> Server {
    Server::start(&[
        "--delivery",
        delivery,
        "--rate",
        "200",
        "--size",
        "1024",
        "--queue",
        "2",
        "--sndbuf",
        "4096",
        "--write-deadline",
        "0",
        "--ping",
        "0",
        "--pong-wait",
        "0",
    ])
}

/// What a client saw: payload seqs and gap markers, in arrival order.
#[derive(Default, Debug)]
struct Seen {
    seqs: Vec<u64>,
    gaps: Vec<(u64, u64)>,
}

fn gap(text: &str) -> (u64, u64) {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let g = (v["from"].as_u64().unwrap(), v["to"].as_u64().unwrap());
    assert!(g.0 <= g.1, "{text}");
    g
}

/// Read until a payload with seq >= `upto` arrived (or 60 s), parsing with `parse`.
fn read_until(s: &mut TcpStream, upto: u64, mut parse: impl FnMut(&[u8]) -> Seen) -> Seen {
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let (mut all, mut buf, t0) = (Vec::new(), [0u8; 65536], Instant::now());
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        let seen = parse(&all);
        if seen.seqs.last().is_some_and(|&l| l >= upto) || t0.elapsed() > Duration::from_secs(60) {
            return seen;
        }
    }
    parse(&all)
}

fn ws_seen(all: &[u8]) -> Seen {
    let mut seen = Seen::default();
    for (op, body) in parse_server_frames(all) {
        match op {
            // The server's hello first (`{"epoch":..}`), then gap markers.
            1 if body.starts_with(b"{\"epoch\"") => {}
            1 => seen.gaps.push(gap(std::str::from_utf8(&body).unwrap())),
            2 => seen.seqs.push(payload::decode(&body).unwrap().0),
            _ => {}
        }
    }
    seen
}

fn sse_seen(all: &[u8]) -> Seen {
    let mut p = sse::Parser::new(1 << 20);
    let mut events = Vec::new();
    p.feed(all, &mut events).unwrap();
    let mut seen = Seen::default();
    for e in events {
        match e.event.as_deref() {
            Some("gap") => seen.gaps.push(gap(&e.data)),
            Some("session") => {}
            _ => seen.seqs.push(payload::decode_text(&e.data).unwrap().0),
        }
    }
    seen
}

/// Stall until the server has dropped at least 20 messages for this client, read on, and
/// check that every seq missing between the first and the last received is inside a gap
/// marker (none silent), that markers cover nothing received, and that they add up to
/// the server's drop counter for what was published before the last seq read.
fn stalled_client_is_told(srv: &Server, mut s: TcpStream, parse: fn(&[u8]) -> Seen) {
    let st = srv.wait_stats(Duration::from_secs(60), |s| {
        s["drops"].as_u64().unwrap() >= 20
    });
    let upto = st["rounds_sent"].as_u64().unwrap() + 40;
    let seen = read_until(&mut s, upto, parse);
    let (first, last) = (seen.seqs[0], *seen.seqs.last().unwrap());
    assert!(last >= upto, "read up to {last}, wanted {upto}");
    assert!(seen.seqs.windows(2).all(|w| w[1] > w[0]), "{:?}", seen.seqs);
    assert!(!seen.gaps.is_empty(), "no gap marker: {seen:?}");
    let got: std::collections::BTreeSet<u64> = seen.seqs.iter().copied().collect();
    let covered = |q: u64| seen.gaps.iter().any(|g| g.0 <= q && q <= g.1);
    let silent: Vec<u64> = (first..=last)
        .filter(|q| !got.contains(q) && !covered(*q))
        .collect();
    assert!(silent.is_empty(), "lost silently: {silent:?}; {seen:?}");
    assert!(
        got.iter().all(|q| !covered(*q)),
        "a marker covers a received seq: {seen:?}"
    );
    // A marker read after the last payload announces drops not yet followed by anything.
    let marked: u64 = seen
        .gaps
        .iter()
        .filter(|g| g.1 < last)
        .map(|g| g.1 - g.0 + 1)
        .sum();
    let missing = (last - first + 1) - got.len() as u64;
    assert_eq!(marked, missing, "{seen:?}");
    let st = srv.stats();
    assert!(st["drops"].as_u64().unwrap() >= marked, "{st}");
    assert_eq!(st["removed"], 0, "a seq client is told, not removed: {st}");
}

#[test]
fn seq_ring_websocket_drops_arrive_as_gap_markers() {
    let srv = slow_server("seq-ring");
    let s = raw_ws(srv.addr, Some(4096));
    stalled_client_is_told(&srv, s, ws_seen);
}

#[test]
fn session_ack_sse_drops_arrive_as_gap_markers() {
    let srv = slow_server("session-ack");
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    sock.connect(&srv.addr.into()).unwrap();
    let mut s: TcpStream = sock.into();
    write!(s, "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    // Skip the response head byte by byte, so the body is parsed from its start.
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"));
    stalled_client_is_told(&srv, s, sse_seen);
    // The session keeps the dropped messages until they are acked past.
    assert!(srv.stats()["sessions"]["messages"].as_u64().unwrap() > 0);
}

#[test]
fn snapshot_removes_a_slow_client_instead_of_dropping_silently() {
    let srv = slow_server("snapshot");
    let mut s = raw_ws(srv.addr, Some(4096));
    let st = srv.wait_stats(Duration::from_secs(60), |s| s["closed"]["queue_full"] == 1);
    assert_eq!(st["removed"], 1, "{st}");
    assert_eq!(st["clients"]["ws"], 0, "{st}");
    let drops = st["drops"].as_u64().unwrap();
    assert!(drops >= 1, "{st}");
    // What it had in its socket still arrives, then the end: no marker, no hole.
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    let seen = ws_seen(&all);
    assert!(seen.gaps.is_empty(), "{seen:?}");
    assert!(!seen.seqs.is_empty());
    assert!(
        seen.seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "{:?}",
        seen.seqs
    );
    // Removed once; later rounds do not count it again.
    let after = srv.wait_stats(Duration::from_secs(30), |x| {
        x["rounds_sent"].as_u64().unwrap() > st["rounds_sent"].as_u64().unwrap() + 20
    });
    assert_eq!(after["drops"].as_u64().unwrap(), drops, "{after}");
    assert_eq!(after["removed"], 1);
}
