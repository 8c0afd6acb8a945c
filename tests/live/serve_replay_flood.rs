//! Resume replay cannot amplify memory (issue 21 item 2): every `Last-Event-ID: 0`,
//! `/ws?since=0` or `/poll?since=0` used to build the whole ring (about 1 MB for 1024 x
//! 1 KiB) and hold it up to 30 s: 3,000 SSE clients took RSS to 2.57 GB, and it stayed at
//! 1.15-1.5 GB after they left. Now a replay is written in chunks under `--replay-budget`
//! (bytes in flight over every client) and the write deadline, a poll answer is bounded,
//! and the heap is trimmed after the flood. RSS of the serve child is read from
//! /proc/PID/status; the bounds are generous (debug build, loaded machine).
use crate::common;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);
const BUDGET: u64 = 8 << 20;
const CLIENTS: usize = 1000;

fn raise_nofile() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
}

fn rss(srv: &Server) -> u64 {
    rtcheck_base::os::proc::rss_of(srv.child.id()).unwrap()
}

/// A ring of 1024 x 1 KiB, full, publishing finished.
fn full_ring() -> Server {
    let srv = Server::start(&[
        "--ring",
        "1024",
        "--size",
        "1KiB",
        "--rate",
        "2000",
        "--rounds",
        "1024",
        "--replay-budget",
        "8MiB",
        // Small kernel send buffers: a replay write blocks at once for a client that does
        // not read, instead of the kernel taking the whole replay off the server's hands.
        "--sndbuf",
        "4096",
    ]);
    srv.wait_stats(LIMIT, |s| {
        s["finished"] == true && s["ring_messages"] == 1024
    });
    srv
}

/// A client that asks for the whole ring and does not read (a small receive buffer).
fn flooder(srv: &Server, request: &str) -> TcpStream {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    sock.connect(&srv.addr.into()).unwrap();
    let mut s: TcpStream = sock.into();
    s.write_all(request.as_bytes()).unwrap();
    s
}

fn wait_clients_gone(srv: &Server) {
    srv.wait_stats(LIMIT, |s| {
        s["clients"]["sse"] == 0 && s["clients"]["ws"] == 0
    });
}

/// RSS falls back near where it started once the flood has left (bounded wait).
fn wait_rss_below(srv: &Server, bound: u64) -> u64 {
    let t0 = Instant::now();
    loop {
        let r = rss(srv);
        if r <= bound {
            return r;
        }
        assert!(
            t0.elapsed() < LIMIT,
            "RSS stayed at {} MiB after the flood (bound {} MiB)",
            r >> 20,
            bound >> 20
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn flood(srv: &Server, what: &str, request: &str) {
    let base = rss(srv);
    let mut peak = base;
    let mut clients = Vec::with_capacity(CLIENTS);
    for i in 0..CLIENTS {
        clients.push(flooder(srv, request));
        if i % 50 == 0 {
            peak = peak.max(rss(srv));
        }
    }
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        peak = peak.max(rss(srv));
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = srv.stats();
    let in_flight = s["replay"]["peak_in_flight_bytes"].as_u64().unwrap();
    eprintln!(
        "{what}: {CLIENTS} clients, RSS {} -> peak {} MiB, replay peak in flight {} KiB, waits {}",
        base >> 20,
        peak >> 20,
        in_flight >> 10,
        s["replay"]["waits"]
    );
    assert!(in_flight <= BUDGET, "{s}");
    // The budget, plus what 1000 connections cost anyway (a few KiB each), plus slack.
    let bound = base + BUDGET + (48 << 20);
    assert!(
        peak <= bound,
        "{what}: RSS peaked at {} MiB (base {} MiB, budget {} MiB)",
        peak >> 20,
        base >> 20,
        BUDGET >> 20
    );
    drop(clients);
    wait_clients_gone(srv);
    let after = wait_rss_below(srv, base + (24 << 20));
    eprintln!("{what}: after the flood RSS {} MiB", after >> 20);
}

#[test]
fn a_flood_of_sse_resumes_from_0_stays_within_the_replay_budget_and_memory_comes_back() {
    raise_nofile();
    let srv = full_ring();
    assert!(
        srv.stderr()
            .contains("replay budget: 8.4 MB in flight over all clients (--replay-budget)"),
        "{}",
        srv.stderr()
    );
    flood(
        &srv,
        "sse",
        "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 0\r\n\r\n",
    );
    // A reader that takes the whole replay gets every round once, in order, no marker.
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 0\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 65536];
    let t0 = Instant::now();
    while !text.contains("id: 1024@") {
        assert!(t0.elapsed() < LIMIT, "no id 1024 yet: {text}");
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed early");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let ids: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(|v| v.split_once('@').expect("SEQ@EPOCH").0.parse().unwrap())
        .collect();
    assert_eq!(ids, (1..=1024).collect::<Vec<_>>());
    assert!(!text.contains("event: gap") && !text.contains("event: reset"));
    let m = http_get(srv.addr, "/metrics").1;
    assert!(
        m.contains(&format!("rtcheck_replay_budget_bytes {BUDGET}\n")),
        "{m}"
    );
}

#[test]
fn a_flood_of_websocket_resumes_from_0_stays_within_the_replay_budget() {
    raise_nofile();
    let srv = full_ring();
    flood(
        &srv,
        "ws",
        "GET /ws?since=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
}

#[test]
fn poll_answers_are_bounded_and_a_flood_of_them_stays_within_the_budget() {
    raise_nofile();
    let srv = full_ring();
    // One answer carries at most 64 KiB of messages; polling again from `latest` gets the
    // rest, every seq once.
    let mut since = 0;
    let mut seen: Vec<u64> = Vec::new();
    let mut answers = 0;
    loop {
        let (st, body) = http_get(srv.addr, &format!("/poll?since={since}"));
        assert_eq!(st, 200, "{body}");
        assert!(body.len() <= 64 * 1024 + 4096, "{} bytes", body.len());
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let seqs: Vec<u64> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["seq"].as_u64().unwrap())
            .collect();
        answers += 1;
        if seqs.is_empty() {
            assert_eq!(v["more"], false);
            break;
        }
        assert_eq!(v["latest"], *seqs.last().unwrap(), "{}", &body[..200]);
        seen.extend(&seqs);
        since = *seqs.last().unwrap();
        assert!(answers < 100);
    }
    assert_eq!(seen, (1..=1024).collect::<Vec<_>>());
    assert!(answers > 10, "{answers} answers for 1 MiB");
    flood(
        &srv,
        "poll",
        "GET /poll?since=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    );
}
