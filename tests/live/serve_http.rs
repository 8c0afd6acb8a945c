//! `rtcheck serve` plain-HTTP side: /sse resume, /poll, /metrics, /healthz, bad requests.
use crate::common;
use common::*;
use rtcheck_wire::{payload, sse};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Read SSE events until `n` data events arrived (or panic after 10 s).
fn sse_events(addr: std::net::SocketAddr, last_id: Option<u64>, n: usize) -> Vec<sse::Event> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let hdr = last_id.map_or(String::new(), |id| format!("Last-Event-ID: {id}\r\n"));
    write!(s, "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n{hdr}\r\n").unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head
        .to_ascii_lowercase()
        .contains("content-type: text/event-stream"));
    let mut p = sse::Parser::new(64 * 1024);
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let t0 = Instant::now();
    while out.len() < n {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "got {} events",
            out.len()
        );
        let k = s.read(&mut buf).unwrap();
        assert!(k > 0, "server closed the SSE stream");
        p.feed(&buf[..k], &mut out).unwrap();
    }
    // One read can carry more events than asked for (a replay arrives in a burst).
    out.truncate(n);
    out
}

#[test]
fn sse_resumes_from_last_event_id_and_reports_a_gap() {
    // A ring of 100 at 50 rounds/s: resuming 5 behind the latest stays inside the ring
    // even when this host takes ~1.9 s between reading the stats and the request landing.
    let srv = Server::start(&["--rate", "50", "--size", "100", "--ring", "100"]);
    srv.wait_stats(Duration::from_secs(30), |s| {
        s["rounds_sent"].as_u64() >= Some(110)
    });

    // Resume inside the ring: the next events are exactly last+1, last+2, ...
    let latest = srv.stats()["rounds_sent"].as_u64().unwrap();
    let from = latest - 5;
    let ev = sse_events(srv.addr, Some(from), 8);
    let seqs: Vec<u64> = ev
        .iter()
        .map(|e| {
            let (seq, ts) = payload::decode_text(&e.data).unwrap();
            assert!(ts > 1_600_000_000_000_000_000, "ts is ns since epoch");
            // `SEQ@EPOCH`: the seq first, then the server's epoch (16 hex digits).
            let (id_seq, epoch) = e.id.as_deref().unwrap().split_once('@').unwrap();
            assert_eq!(id_seq, seq.to_string());
            assert_eq!(epoch.len(), 16);
            assert_eq!(e.data.len(), 100, "data padded to --size");
            seq
        })
        .collect();
    assert_eq!(seqs, ((from + 1)..=(from + 8)).collect::<Vec<_>>());

    // Resume from before the ring: a gap event names the lost range, then the ring.
    let ev = sse_events(srv.addr, Some(1), 3);
    assert_eq!(ev[0].event.as_deref(), Some("gap"));
    let gap: serde_json::Value = serde_json::from_str(&ev[0].data).unwrap();
    assert_eq!(gap["from"], 2);
    let oldest = payload::decode_text(&ev[1].data).unwrap().0;
    assert_eq!(gap["to"].as_u64().unwrap(), oldest - 1);
    assert_eq!(payload::decode_text(&ev[2].data).unwrap().0, oldest + 1);

    // No Last-Event-ID: live only, strictly increasing by one.
    let ev = sse_events(srv.addr, None, 5);
    let seqs: Vec<u64> = ev
        .iter()
        .map(|e| payload::decode_text(&e.data).unwrap().0)
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    assert!(seqs[0] > latest);
}

#[test]
fn poll_since_returns_newer_messages_and_marks_gaps() {
    let srv = Server::start(&[
        "--rate", "100", "--size", "64", "--ring", "10", "--rounds", "25",
    ]);
    srv.wait_stats(Duration::from_secs(30), |s| s["finished"] == true);

    let (st, body) = http_get(srv.addr, "/poll?since=20");
    assert_eq!(st, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["latest"], 25);
    assert_eq!(v["gap"], false);
    assert_eq!(v["oldest"], 16);
    let seqs: Vec<u64> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, vec![21, 22, 23, 24, 25]);
    let m = &v["messages"][0];
    assert!(m["ts"].as_u64().unwrap() > 1_600_000_000_000_000_000);

    let (_, body) = http_get(srv.addr, "/poll?since=3");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["gap"], true);
    assert_eq!(v["messages"].as_array().unwrap().len(), 10);

    let (_, body) = http_get(srv.addr, "/poll?since=25");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["messages"].as_array().unwrap().len(), 0);

    assert_eq!(http_get(srv.addr, "/poll").0, 400);
    // Not a number: an unknown position, answered like since=0 (the ring, with its gap).
    let (code, body) = http_get(srv.addr, "/poll?since=-1");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!((code, &v["gap"]), (200, &serde_json::json!(true)), "{body}");
    assert_eq!(srv.stats()["clients"]["poll"], 4, "valid polls counted");
}

#[test]
fn poll_keep_alive_serves_several_requests_on_one_connection() {
    let srv = Server::start(&["--rate", "100", "--rounds", "3"]);
    srv.wait_stats(Duration::from_secs(30), |s| s["finished"] == true);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for _ in 0..3 {
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        let mut buf = vec![0u8; 4096];
        let n = s.read(&mut buf).unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(text.ends_with("\r\n\r\nok"), "{text}");
    }
}

#[test]
fn head_has_headers_but_no_body_so_keep_alive_framing_holds() {
    let srv = Server::start(&["--rate", "100", "--rounds", "1"]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // Pipelined: HEAD then GET on one connection.
    s.write_all(b"HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let text = String::from_utf8_lossy(&all);
    let parts: Vec<&str> = text.split("HTTP/1.1 ").filter(|p| !p.is_empty()).collect();
    assert_eq!(parts.len(), 2, "{text}");
    assert!(parts[0].contains("Content-Length: 2\r\n"), "{text}");
    assert!(
        parts[0].ends_with("\r\n\r\n"),
        "HEAD carried a body: {text}"
    );
    assert!(
        parts[1].starts_with("200 OK") && parts[1].ends_with("\r\n\r\nok"),
        "{text}"
    );
}

/// A bare Last-Event-ID beyond what the server holds (u64::MAX: the largest there is) is
/// a reset: the server restarted or the id is not its own. A reset marker, then the ring
/// from its start; never a gap computed from a wrapped `id + 1`.
#[test]
fn last_event_id_at_u64_max_is_a_reset_not_a_gap() {
    let srv = Server::start(&["--rate", "100", "--rounds", "5", "--ring", "8"]);
    srv.wait_stats(Duration::from_secs(30), |s| s["finished"] == true);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(800)))
        .unwrap();
    s.write_all(
        b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 18446744073709551615\r\n\r\n",
    )
    .unwrap();
    let mut buf = vec![0u8; 8192];
    let mut got = Vec::new();
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(!text.contains("event: gap"), "{text}");
    let reset = text.find("event: reset\ndata: {").expect(&text);
    let data = text[reset..].lines().nth(1).unwrap();
    let v: serde_json::Value = serde_json::from_str(&data[6..]).unwrap();
    assert_eq!(
        (v["latest"].as_u64(), v["since"].as_u64()),
        (Some(5), Some(u64::MAX))
    );
    // The whole ring (5 rounds) after the marker, from seq 1.
    let first = text.find("\nid: 1@").expect(&text);
    assert!(first > reset, "{text}");
    assert_eq!(text.matches("\nid: ").count(), 5, "{text}");
}

#[test]
fn metrics_parse_as_prometheus_with_the_right_values() {
    let srv = Server::start(&[
        "--rate",
        "100",
        "--size",
        "64",
        "--rounds",
        "10",
        "--wait-start",
    ]);
    // Two SSE clients, then publish 10 rounds to them.
    let a = srv.addr;
    let t1 = std::thread::spawn(move || sse_events(a, None, 10));
    let t2 = std::thread::spawn(move || sse_events(a, None, 10));
    srv.wait_stats(Duration::from_secs(30), |s| s["clients"]["sse"] == 2);
    srv.start_publishing(10);
    let e1 = t1.join().unwrap();
    let e2 = t2.join().unwrap();
    assert_eq!(e1.len(), 10);
    assert_eq!(e2.len(), 10);
    // A message is counted once its write returns, which can trail the reader a moment.
    srv.wait_stats(Duration::from_secs(30), |s| {
        s["finished"] == true && s["messages_sent"]["sse"] == 20
    });

    let (st, body) = http_get(srv.addr, "/metrics");
    assert_eq!(st, 200);
    let lines = body.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
    let get = |name: &str, label: Option<(&str, &str)>| -> f64 {
        let s = scrape
            .samples
            .iter()
            .find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
            .unwrap_or_else(|| panic!("no sample {name} {label:?}"));
        match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            ref other => panic!("{name}: unexpected {other:?}"),
        }
    };
    assert_eq!(get("rtcheck_rounds_sent_total", None), 10.0);
    assert_eq!(
        get("rtcheck_messages_sent_total", Some(("transport", "sse"))),
        20.0
    );
    assert_eq!(
        get("rtcheck_messages_sent_total", Some(("transport", "ws"))),
        0.0
    );
    assert_eq!(get("rtcheck_drops_total", None), 0.0);
    assert_eq!(get("rtcheck_slow_clients_removed_total", None), 0.0);
    // Same figure as /control/stats, and bounded by --queue.
    let depth = get("rtcheck_max_queue_depth", None);
    assert_eq!(depth, srv.stats()["max_queue_depth"].as_f64().unwrap());
    assert!(depth <= 64.0);
    assert!(get("process_resident_memory_bytes", None) > 1e6);
    assert!(get("process_open_fds", None) >= 4.0);
    // The hub histogram counted every round.
    let hist = scrape
        .samples
        .iter()
        .find(|s| s.metric == "rtcheck_hub_round_seconds")
        .expect("hub histogram");
    match &hist.value {
        prometheus_parse::Value::Histogram(h) => {
            let inf = h.iter().map(|b| b.count).fold(0.0, f64::max);
            assert_eq!(inf, 10.0);
        }
        other => panic!("hub round time is not a histogram: {other:?}"),
    }
}

#[test]
fn garbage_and_bad_requests_get_4xx_and_the_server_keeps_serving() {
    let srv = Server::start(&["--rate", "10"]);
    let (st, _) = http(srv.addr, "\x00\x01garbage\r\n\r\n");
    assert_eq!(st, 400);
    let (st, _) = http(
        srv.addr,
        &format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(10_000)),
    );
    assert_eq!(st, 414);
    assert_eq!(http_get(srv.addr, "/nope").0, 404);
    assert_eq!(http_get(srv.addr, "/ws").0, 426);
    let (st, _) = http(
        srv.addr,
        "POST /control/start?rounds=x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    );
    assert_eq!(st, 400);
    // A client that connects and vanishes mid-request.
    {
        let mut s = TcpStream::connect(srv.addr).unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHo").unwrap();
    }
    let (st, body) = http_get(srv.addr, "/healthz");
    assert_eq!((st, body.as_str()), (200, "ok"));
}

#[test]
fn poll_latest_is_the_highest_seq_served_so_since_latest_never_repeats() {
    // A round in progress (300 clients to hand it to) while one client polls since=latest.
    let srv = Server::start(&["--rate", "1000", "--size", "256", "--rounds", "3000"]);
    let clients: Vec<_> = (0..300).map(|_| common::raw_ws(srv.addr, None)).collect();
    let (mut since, mut seen) = (0u64, std::collections::HashSet::new());
    let (mut dups, mut polls) = (0, 0);
    while polls < 2000 {
        let (st, body) = http_get(srv.addr, &format!("/poll?since={since}"));
        assert_eq!(st, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let seqs: Vec<u64> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["seq"].as_u64().unwrap())
            .collect();
        let latest = v["latest"].as_u64().unwrap();
        if let Some(max) = seqs.iter().max() {
            assert_eq!(
                latest, *max,
                "latest must be the highest seq served: {seqs:?}"
            );
        }
        dups += seqs.iter().filter(|s| !seen.insert(**s)).count();
        since = latest;
        polls += 1;
        if latest >= 3000 {
            break;
        }
    }
    assert_eq!(dups, 0, "duplicates in {polls} polls");
    assert!(seen.len() > 100, "only {} messages seen", seen.len());
    drop(clients);
}
