//! `rtcheck verify delivery` end to end at small scale, and the server's answers to bad
//! resume ids. Counts are read back from the JSON, never from text.
use crate::common;
use common::{rtcheck, Server};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn delivery_json(extra: &[&str]) -> (i32, Value) {
    let mut args = vec![
        "verify",
        "delivery",
        "--rate",
        "50",
        "--size",
        "256",
        "--max-disconnect",
        "600ms",
        "--connections",
        "3",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = rtcheck().args(&args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

fn run<'a>(v: &'a Value, delivery: &str, disconnect: &str, case: &str) -> &'a Value {
    v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["delivery"] == delivery && r["disconnect"] == disconnect && r["case"] == case)
        .unwrap_or_else(|| panic!("no run {delivery}/{disconnect}/{case}: {v}"))
}

/// The `server-restart` run of `delivery`: the server was stopped (SIGTERM) while the
/// clients were connected and started again on the same port; every client resumed from
/// its last position, was told of the restart by a reset marker (or a session reset), and
/// nothing was lost silently. (Before epochs, a resume after seq N skipped the new
/// instance's 1..N without a word.)
fn assert_restart(v: &Value, delivery: &str) {
    let r = run(v, delivery, "clean", "server-restart");
    assert_eq!(r["lost_silently"], 0, "{r}");
    assert_eq!(r["resets"], r["clients"], "every client got a reset: {r}");
    assert_eq!(r["status"], "pass", "{r}");
    assert!(r["received"].as_u64().unwrap() > 0, "{r}");
    assert!(
        r["verdict"]
            .as_str()
            .unwrap()
            .starts_with("told of the restart"),
        "{r}"
    );
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == format!("delivery-{delivery}-clean-server-restart"))
        .unwrap_or_else(|| panic!("no restart finding: {v}"));
    assert_eq!(f["numbers"]["lost_silently"], 0.0, "{f}");
    assert_eq!(f["evidence"][0]["id"], "seq-numbers", "{f}");
}

#[test]
fn seq_ring_loses_nothing_within_the_ring_and_announces_every_loss_beyond_it() {
    let _timed = common::timed();
    let (code, v) = delivery_json(&["--delivery", "seq-ring"]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["runs"].as_array().unwrap().len(), 7, "{v:#}");
    assert_restart(&v, "seq-ring");
    for d in ["clean", "reset", "silent", "storm"] {
        let r = run(&v, "seq-ring", d, "within-ring");
        assert_eq!(r["clients"], 3);
        assert!(r["received"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["lost"], 0, "{d}: {r}");
        assert_eq!(r["lost_silently"], 0, "{d}: {r}");
        assert_eq!(r["verdict"].as_str().unwrap(), "0 lost within the ring");
        assert!(r["resume_ms"]["max"].as_f64().unwrap() >= r["resume_ms"]["p50"].as_f64().unwrap());
        assert_eq!(r["session_bytes_per_client"], 0);
    }
    let over = run(&v, "seq-ring", "clean", "beyond-ring");
    assert!(
        over["gaps"].as_u64().unwrap() > 0,
        "the ring overflowed: {over}"
    );
    assert_eq!(over["lost_silently"], 0, "{over}");
    assert_eq!(over["lost"], over["gaps"], "{over}");
    // The default ring is max_disconnect x rate plus one second: 30 + 50 messages.
    assert_eq!(v["options"]["ring_messages"], 80);
    // The ring as the server holds it: each message in four encodings (WebSocket, SSE, raw,
    // JSON), so more than three times the payload that choose's sizing counts.
    let ring = over["ring_bytes"].as_u64().unwrap();
    assert!(ring > 3 * 80 * 256 && ring < 5 * 80 * 300, "{ring}");
    let f = &v["findings"][0];
    assert_eq!(f["status"], "pass");
    assert_eq!(f["evidence"][0]["id"], "ring-buffer");
    assert_eq!(f["evidence"][1]["id"], "loss-dup-order");
    assert_eq!(f["numbers"]["lost_silently"], 0.0);
}

#[test]
fn the_no_seq_control_shows_silent_loss_and_a_small_ring_fails_loudly() {
    let _timed = common::timed();
    // A ring of 10 messages (0.2 s) cannot cover 0.6 s away: within-ring fails, loudly.
    let (code, v) = delivery_json(&[
        "--ring",
        "2560B",
        "--delivery",
        "seq-ring",
        "--threshold",
        "lost_silently == 0",
    ]);
    assert_eq!(code, 1, "a failed run exits 1: {v:#}");
    // --threshold over every run: the no-seq control's silent loss crosses it, by name.
    let t = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "threshold:lost_silently==0")
        .unwrap_or_else(|| panic!("no threshold finding: {v:#}"));
    assert_eq!(t["status"], "fail", "{t}");
    assert!(
        t["observed"]
            .as_str()
            .unwrap()
            .contains("].lost_silently = "),
        "{t}"
    );
    assert_eq!(v["options"]["ring_messages"], 10);
    let ctl = run(&v, "no-seq", "clean", "within-ring");
    let silent = ctl["lost_silently"].as_u64().unwrap();
    assert!(silent >= 10, "0.6 s at 50/s for 3 clients: {ctl}");
    assert_eq!(ctl["gaps"], 0);
    let r = run(&v, "seq-ring", "clean", "within-ring");
    assert!(r["lost"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["lost_silently"], 0, "every loss is in a gap marker: {r}");
    assert_eq!(v["summary"]["skip"], 0, "every mode is measured: {v:#}");
    assert!(v["summary"]["fail"].as_u64().unwrap() >= 1);
}

#[test]
fn bad_flags_are_one_line_exit_2() {
    let _timed = common::timed();
    for (args, needle) in [
        (vec!["--ring", "lots"], "--ring"),
        (vec!["--server", "http://10.0.0.1:80"], "not a loopback"),
        (vec!["--server", "127.0.0.1:80"], "http://HOST:PORT"),
        (vec!["--connections", "100000"], "at most 500"),
        (vec!["--rate", "0"], "--rate"),
        (vec!["fd-limit"], "runs alone"),
    ] {
        let out = rtcheck()
            .args(["verify", "delivery"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

/// Read an SSE response until `want` is in it (or 10 s).
fn sse(addr: std::net::SocketAddr, last_id: &str, want: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    write!(
        s,
        "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: {last_id}\r\n\r\n"
    )
    .unwrap();
    let (mut got, mut buf, t0) = (Vec::new(), [0u8; 8192], Instant::now());
    while t0.elapsed() < Duration::from_secs(10) {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        if String::from_utf8_lossy(&got).contains(want) {
            break;
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn bad_resume_ids_get_a_defined_answer() {
    let _timed = common::timed();
    let srv = Server::start(&["--rate", "50", "--size", "128", "--ring", "10"]);
    // Wait until the ring has wrapped.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        let (_, body) = common::http_get(srv.addr, "/poll?since=0");
        let v: Value = serde_json::from_str(&body).unwrap();
        if v["oldest"].as_u64().unwrap_or(0) > 5 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Far in the past: a gap marker from the id + 1 to just before the ring, then data.
    let r = sse(srv.addr, "1", "\"seq\"");
    assert!(r.contains("event: gap\ndata: {\"from\":2,\"to\":"), "{r}");
    // From the future (beyond what the server holds: it restarted, or the id is not its
    // own): a reset marker, then the ring from its start after a gap marker from seq 1.
    let r = sse(srv.addr, "18446744073709551615", "\"seq\"");
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(r.contains("event: reset\ndata: {\"reset\":true"), "{r}");
    assert!(r.contains("event: gap\ndata: {\"from\":1,\"to\":"), "{r}");
    // Not a number: an unknown position, answered like 0: a gap marker from seq 1 to just
    // before the ring, then the ring; never a 400.
    let r = sse(srv.addr, "abc", "\"seq\"");
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(r.contains("event: gap\ndata: {\"from\":1,\"to\":"), "{r}");
    let (code, _) = common::http_get(srv.addr, "/healthz");
    assert_eq!(code, 200);
}

#[test]
fn polling_clients_resume_with_since_and_see_the_same_gaps() {
    let _timed = common::timed();
    let (code, v) = delivery_json(&["--delivery", "seq-ring", "--transport", "poll"]);
    assert_eq!(code, 0, "{v:#}");
    let kinds: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["disconnect"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["clean", "storm", "clean", "clean", "clean"],
        "{v:#}"
    );
    assert_restart(&v, "seq-ring");
    for d in ["clean", "storm"] {
        let r = run(&v, "seq-ring", d, "within-ring");
        assert_eq!(
            (r["lost"].as_u64(), r["lost_silently"].as_u64()),
            (Some(0), Some(0)),
            "{r}"
        );
    }
    let over = run(&v, "seq-ring", "clean", "beyond-ring");
    assert!(over["gaps"].as_u64().unwrap() > 0, "{over}");
    assert_eq!(over["lost_silently"], 0, "{over}");
    let ctl = run(&v, "no-seq", "clean", "within-ring");
    assert!(ctl["lost_silently"].as_u64().unwrap() > 0, "{ctl}");
}

/// Messages of a WebSocket resumed with `/ws?since=SEQ` until `n` binary payloads: the
/// text frames (gap markers) and the seqs.
fn ws_resume(addr: std::net::SocketAddr, since: &str, n: usize) -> (Vec<String>, Vec<u64>) {
    use tokio_tungstenite::tungstenite::{connect, Message};
    let (mut ws, _) = connect(format!("ws://{addr}/ws?since={since}")).unwrap();
    let (mut texts, mut seqs) = (Vec::new(), Vec::new());
    while seqs.len() < n {
        match ws.read().unwrap() {
            // The hello (`{"epoch":..}`) opens every connection.
            Message::Text(t) if t.as_str().starts_with("{\"epoch\"") => {}
            Message::Text(t) => texts.push(t.to_string()),
            Message::Binary(b) => seqs.push(rtcheck_wire::payload::decode(&b).unwrap().0),
            _ => {}
        }
    }
    (texts, seqs)
}

#[test]
fn websocket_resume_replays_the_ring_or_sends_the_same_gap_marker_as_sse() {
    let _timed = common::timed();
    let srv = Server::start(&["--rate", "50", "--size", "128", "--ring", "10"]);
    let t0 = Instant::now();
    let mut oldest = 0;
    while t0.elapsed() < Duration::from_secs(20) && oldest <= 5 {
        let (_, body) = common::http_get(srv.addr, "/poll?since=0");
        let v: Value = serde_json::from_str(&body).unwrap();
        oldest = v["oldest"].as_u64().unwrap_or(0);
        std::thread::sleep(Duration::from_millis(50));
    }
    // Far in the past: the gap marker first, then the ring from its oldest, in order.
    let (texts, seqs) = ws_resume(srv.addr, "1", 12);
    let gap: Value = serde_json::from_str(&texts[0]).unwrap();
    assert_eq!(gap["from"], 2, "{texts:?}");
    let to = gap["to"].as_u64().unwrap();
    assert_eq!(
        seqs[0],
        to + 1,
        "replay starts right after the gap: {seqs:?}"
    );
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "no loss, no dup: {seqs:?}"
    );
    // Inside the ring: no gap, the replay continues from since + 1.
    let (_, body) = common::http_get(srv.addr, "/poll?since=0");
    let latest = serde_json::from_str::<Value>(&body).unwrap()["latest"]
        .as_u64()
        .unwrap();
    let (texts, seqs) = ws_resume(srv.addr, &(latest - 3).to_string(), 5);
    assert!(texts.is_empty(), "{texts:?}");
    assert_eq!(seqs[0], latest - 2, "{seqs:?}");
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    // From the future: a reset marker, then the gap marker from seq 1 and the ring.
    let (texts, seqs) = ws_resume(srv.addr, "18446744073709551615", 2);
    assert!(texts[0].starts_with("{\"reset\":true"), "{texts:?}");
    assert!(texts[1].starts_with("{\"from\":1,"), "{texts:?}");
    assert_eq!(seqs.len(), 2);
    // Not a number: an unknown position, the same gap marker from seq 1 as SSE's.
    let (texts, seqs) = ws_resume(srv.addr, "abc", 3);
    let gap: Value = serde_json::from_str(&texts[0]).unwrap();
    assert_eq!(gap["from"], 1, "{texts:?}");
    assert_eq!(seqs[0], gap["to"].as_u64().unwrap() + 1, "{seqs:?}");
}

#[test]
fn websocket_clients_resume_with_since_for_every_way_of_leaving() {
    let _timed = common::timed();
    let (code, v) = delivery_json(&["--delivery", "seq-ring", "--transport", "websocket"]);
    assert_eq!(code, 0, "{v:#}");
    for d in ["clean", "reset", "silent", "storm"] {
        let r = run(&v, "seq-ring", d, "within-ring");
        assert_eq!(
            (r["lost"].as_u64(), r["lost_silently"].as_u64()),
            (Some(0), Some(0)),
            "{d}: {r}"
        );
        assert!(r["received"].as_u64().unwrap() > 0, "{r}");
    }
    let over = run(&v, "seq-ring", "clean", "beyond-ring");
    assert!(over["gaps"].as_u64().unwrap() > 0, "{over}");
    assert_eq!(over["lost_silently"], 0, "{over}");
    assert_restart(&v, "seq-ring");
}

#[test]
fn session_ack_loses_nothing_filters_duplicates_and_reports_overflow_and_expiry() {
    let _timed = common::timed();
    let (code, v) = delivery_json(&["--delivery", "session-ack", "--transport", "websocket"]);
    assert_eq!(code, 0, "{v:#}");
    // Default TTL: 2 x max(0.6 s, ring span 1.6 s) + 1 s.
    assert_eq!(v["options"]["session_ttl"], "4200ms", "{}", v["options"]);
    for d in ["clean", "reset", "silent", "storm"] {
        let r = run(&v, "session-ack", d, "within-queue");
        assert_eq!(
            (r["lost"].as_u64(), r["lost_silently"].as_u64()),
            (Some(0), Some(0)),
            "{d}: {r}"
        );
        assert_eq!(r["status"], "pass", "{r}");
        let per = r["session_bytes_per_client"].as_u64().unwrap();
        // 0.6 s x 50/s x 256 B held while away, plus bookkeeping and what was not yet acked.
        assert!((30 * 256..200 * 300).contains(&per), "{d}: {per}");
        assert_eq!(
            r["sessions_worst_case_bytes"].as_u64().unwrap(),
            per * v["sizing"]["connections"].as_u64().unwrap()
        );
    }
    let over = run(&v, "session-ack", "clean", "beyond-queue");
    assert!(over["gaps"].as_u64().unwrap() > 0, "{over}");
    assert_eq!(over["lost_silently"], 0, "{over}");
    let exp = run(&v, "session-ack", "clean", "beyond-ttl");
    assert_eq!(
        exp["resets"], 3,
        "every client was told its session was gone: {exp}"
    );
    assert!(
        exp["lost"].as_u64().unwrap() > 0 && exp["lost_silently"] == 0,
        "{exp}"
    );
    assert_eq!(
        v["sizing"]["session_bytes_per_client"], 7680,
        "0.6 s x 50/s x 256 B"
    );
    assert_restart(&v, "session-ack");
}

#[test]
fn snapshot_clients_get_the_latest_state_first_over_sse_and_poll() {
    let _timed = common::timed();
    for transport in ["sse", "poll"] {
        let (code, v) = delivery_json(&["--delivery", "snapshot", "--transport", transport]);
        assert_eq!(code, 0, "{v:#}");
        let r = run(&v, "snapshot", "clean", "latest-first");
        assert_eq!(r["stale_snapshots"], 0, "{r}");
        assert_eq!(r["lost_silently"], 0, "{r}");
        assert!(
            r["gaps"].as_u64().unwrap() > 0,
            "intermediate messages replaced: {r}"
        );
        assert_eq!(r["status"], "pass");
        // The ring as the server holds it: every encoding, more than the payload alone.
        assert!(r["ring_bytes"].as_u64().unwrap() > 80 * 256 * 3, "{r}");
        assert_restart(&v, "snapshot");
    }
}

#[test]
fn a_reconnect_storm_of_300_session_clients_loses_nothing() {
    let _timed = common::timed();
    let srv = Server::start(&[
        "--delivery",
        "session-ack",
        "--rate",
        "20",
        "--size",
        "256",
        "--session-ttl",
        "30s",
    ]);
    let spec = rtcheck::verify::delivery::run::RunSpec {
        delivery: "session-ack",
        disconnect: rtcheck::verify::delivery::client::Disconnect::Storm,
        case: "within-queue",
        clients: 300,
        away: Duration::from_secs(1),
    };
    let ph = rtcheck::verify::delivery::run::Phases {
        ws: true,
        ..rtcheck::verify::delivery::run::Phases::for_rate(20.0)
    };
    let runs = rtcheck::verify::delivery::run::run_all(srv.addr, &[spec], ph, 0).unwrap();
    let r = &runs[0];
    assert_eq!(r.clients, 300);
    assert_eq!((r.counts.lost, r.counts.lost_silently), (0, 0), "{r:?}");
    assert_eq!(r.resets, 0, "{r:?}");
    assert!(r.counts.received >= 300 * 20, "{r:?}");
    assert_eq!(r.status, rtcheck::findings::Status::Pass, "{r:?}");
    let s = srv.stats();
    assert_eq!(
        s["sessions"]["count"], 300,
        "one session per client, reused: {s}"
    );
    assert_eq!(s["sessions"]["resets"], 0, "{s}");
}

#[test]
fn bad_session_flags_are_one_line_exit_2() {
    let _timed = common::timed();
    for (args, needle) in [
        (vec!["--session-ttl", "0s"], "--session-ttl"),
        (vec!["--session-ttl", "soon"], "--session-ttl"),
        (vec!["--delivery", "acks"], "--delivery"),
    ] {
        let out = rtcheck()
            .args(["verify", "delivery"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn a_websocket_resume_message_replays_what_the_client_missed_before_joining() {
    let _timed = common::timed();
    use tokio_tungstenite::tungstenite::{connect, Message};
    let srv = Server::start(&["--rate", "50", "--size", "128", "--ring", "20"]);
    srv.wait_stats(Duration::from_secs(30), |s| {
        s["rounds_sent"].as_u64() > Some(30)
    });
    let latest = |srv: &Server| {
        let (_, body) = common::http_get(srv.addr, "/poll?since=0");
        serde_json::from_str::<Value>(&body).unwrap()["latest"]
            .as_u64()
            .unwrap()
    };
    // Within the ring: every seq after `since` exactly once (live ones may come first).
    let since = latest(&srv) - 5;
    let (mut ws, _) = connect(format!("ws://{}/ws", srv.addr)).unwrap();
    ws.send(Message::text(format!("{{\"since\":{since}}}")))
        .unwrap();
    let mut seqs = Vec::new();
    let mut texts = Vec::new();
    while seqs.len() < 15 {
        match ws.read().unwrap() {
            Message::Binary(b) => seqs.push(rtcheck_wire::payload::decode(&b).unwrap().0),
            Message::Text(t) => texts.push(t.to_string()),
            _ => {}
        }
    }
    // Only the hello, first: no reset, no gap.
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(texts[0].starts_with("{\"epoch\":"), "{texts:?}");
    let mut sorted = seqs.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), seqs.len(), "no duplicates: {seqs:?}");
    assert_eq!(sorted[0], since + 1, "{seqs:?}");
    assert!(
        sorted.windows(2).all(|w| w[1] == w[0] + 1),
        "no hole: {seqs:?}"
    );
    // Far in the past, as a string id: the same gap marker as SSE, then the ring.
    let (mut ws, _) = connect(format!("ws://{}/ws", srv.addr)).unwrap();
    ws.send(Message::text("{\"since\":\"1\"}")).unwrap();
    let gap = loop {
        if let Message::Text(t) = ws.read().unwrap() {
            if !t.as_str().starts_with("{\"epoch\"") {
                break serde_json::from_str::<Value>(t.as_str()).unwrap();
            }
        }
    };
    assert_eq!(gap["from"], 2, "{gap}");
    assert!(gap["to"].as_u64().unwrap() >= 10, "{gap}");
}

#[test]
fn polling_session_clients_ack_with_since_and_lose_nothing() {
    let _timed = common::timed();
    let (code, v) = delivery_json(&["--delivery", "session-ack", "--transport", "poll"]);
    assert_eq!(code, 0, "{v:#}");
    for d in ["clean", "storm"] {
        let r = run(&v, "session-ack", d, "within-queue");
        assert_eq!(
            (r["lost"].as_u64(), r["lost_silently"].as_u64()),
            (Some(0), Some(0)),
            "{d}: {r}"
        );
        assert!(
            r["session_bytes_per_client"].as_u64().unwrap() > 30 * 256,
            "{r}"
        );
    }
    let exp = run(&v, "session-ack", "clean", "beyond-ttl");
    assert_eq!(exp["resets"], 3, "{exp}");
}

#[test]
fn text_output_fits_80_columns_verdict_first() {
    let _timed = common::timed();
    let out = rtcheck()
        .args([
            "verify",
            "delivery",
            "--delivery",
            "snapshot",
            "--transport",
            "poll",
        ])
        .args(["--rate", "50", "--size", "256", "--max-disconnect", "600ms"])
        .args(["--connections", "2"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with("verify delivery (rtcheck serve): 0 fail, 0 warn, 4 pass"),
        "{text}"
    );
    for l in text.lines() {
        assert!(
            l.chars().count() <= 80,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    assert!(text.contains("pass snapshot clean latest-first"), "{text}");
}
