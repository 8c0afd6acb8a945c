//! `rtcheck serve` restarted on the same port (issue 21, item 1): its seqs start at 1
//! again, so every resume from before the restart (SSE Last-Event-ID with the old epoch or
//! a bare number beyond the new server's latest, `/ws?since=`, the WebSocket resume
//! message, `/poll?since=`) must get a reset marker and the new epoch's ring from its
//! start (a gap marker for what it no longer holds): nothing skipped silently. The
//! clients here are raw TCP and tungstenite, not rtcheck's own resume logic.
use crate::common;
use common::Server;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// `/poll?...` as JSON.
fn poll(addr: SocketAddr, query: &str) -> Value {
    let (code, body) = common::http_get(addr, &format!("/poll?{query}"));
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A poll from 0 followed to the end (an answer carries at most 64 KiB of messages,
/// `"more":true` then): the last answer, whose `latest` is the server's.
fn poll_to_end(addr: SocketAddr) -> Value {
    let mut v = poll(addr, "since=0");
    while v["more"] == true {
        let e = v["epoch"].as_str().unwrap().to_string();
        v = poll(addr, &format!("since={}&epoch={e}", v["latest"]));
    }
    v
}

/// Wait until the server's latest seq reaches `n`; returns the poll answer.
fn wait_latest(addr: SocketAddr, n: u64) -> Value {
    let t0 = Instant::now();
    loop {
        let v = poll_to_end(addr);
        if v["latest"].as_u64().unwrap_or(0) >= n {
            return v;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "latest < {n}: {v}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every seq from 1 to the highest received is either received or inside a gap marker:
/// what a client that drops duplicates by seq keeps is complete, or told it is not.
fn assert_nothing_silent(seqs: &[u64], gaps: &[(u64, u64)], what: &str) {
    let top = seqs.iter().copied().max().unwrap_or(0);
    assert!(top > 0, "{what}: no message after the reset");
    for s in 1..=top {
        let marked = gaps.iter().any(|&(a, b)| a <= s && s <= b);
        assert!(
            seqs.contains(&s) || marked,
            "{what}: seq {s} skipped silently (seqs {seqs:?}, gaps {gaps:?})"
        );
    }
}

/// An SSE stream read raw until `n` data events: (reset markers' data, gaps, seqs, ids).
struct Sse {
    resets: Vec<Value>,
    gaps: Vec<(u64, u64)>,
    seqs: Vec<u64>,
    ids: Vec<String>,
    /// Event kinds in order ("reset", "gap", "data").
    order: Vec<&'static str>,
}

fn sse(addr: SocketAddr, last_event_id: &str, n: usize) -> Sse {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    write!(
        s,
        "GET /sse HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nLast-Event-ID: {last_event_id}\r\n\r\n"
    )
    .unwrap();
    let (mut got, mut buf) = (Vec::new(), [0u8; 65536]);
    let t0 = Instant::now();
    let mut out = Sse {
        resets: vec![],
        gaps: vec![],
        seqs: vec![],
        ids: vec![],
        order: vec![],
    };
    while out.seqs.len() < n {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "SSE: {} of {n} events: {}",
            out.seqs.len(),
            String::from_utf8_lossy(&got)
        );
        match s.read(&mut buf) {
            Ok(0) => panic!("SSE closed: {}", String::from_utf8_lossy(&got)),
            Ok(k) => got.extend_from_slice(&buf[..k]),
            Err(_) => continue,
        }
        let text = String::from_utf8_lossy(&got).to_string();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        out = Sse {
            resets: vec![],
            gaps: vec![],
            seqs: vec![],
            ids: vec![],
            order: vec![],
        };
        // Complete events only (each ends with a blank line).
        let complete = &body[..body.rfind("\n\n").map_or(0, |i| i + 2)];
        for ev in complete.split("\n\n").filter(|e| !e.is_empty()) {
            let field = |k: &str| {
                ev.lines()
                    .find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_string()))
            };
            let data = field("data:").unwrap_or_default();
            match field("event:").as_deref() {
                Some("reset") => {
                    out.resets.push(serde_json::from_str(&data).unwrap());
                    out.order.push("reset");
                }
                Some("gap") => {
                    let g: Value = serde_json::from_str(&data).unwrap();
                    out.gaps
                        .push((g["from"].as_u64().unwrap(), g["to"].as_u64().unwrap()));
                    out.order.push("gap");
                }
                Some(e) => panic!("unexpected event {e}: {ev}"),
                None if data.is_empty() => {} // a comment (keepalive)
                None => {
                    let v: Value = serde_json::from_str(&data).unwrap();
                    out.seqs.push(v["seq"].as_u64().unwrap());
                    out.ids.push(field("id:").unwrap_or_default());
                    out.order.push("data");
                }
            }
        }
    }
    out
}

/// A WebSocket (tungstenite) until `n` payloads: its text frames as JSON, then the seqs.
fn ws(
    addr: SocketAddr,
    query: &str,
    resume_message: Option<String>,
    n: usize,
) -> (Vec<Value>, Vec<u64>) {
    use tokio_tungstenite::tungstenite::{connect, stream::MaybeTlsStream, Message};
    let (mut ws, _) = connect(format!("ws://{addr}/ws{query}")).unwrap();
    if let MaybeTlsStream::Plain(s) = ws.get_ref() {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    }
    if let Some(m) = &resume_message {
        ws.send(Message::text(m.clone())).unwrap();
    }
    // After a resume message, live payloads may come before its answer: read `n` more
    // after the reset marker.
    let need_reset = resume_message.is_some();
    let (mut texts, mut seqs): (Vec<Value>, Vec<u64>) = (Vec::new(), Vec::new());
    let mut after_reset = 0;
    while seqs.len() < n || (need_reset && after_reset < n) {
        match ws.read().unwrap() {
            Message::Text(t) => texts.push(serde_json::from_str(t.as_str()).unwrap()),
            Message::Binary(b) => {
                seqs.push(rtcheck_wire::payload::decode(&b).unwrap().0);
                after_reset += texts.iter().any(|t| t["reset"] == true) as usize;
            }
            _ => {}
        }
    }
    (texts, seqs)
}

/// Gap markers among WebSocket text frames.
fn ws_gaps(texts: &[Value]) -> Vec<(u64, u64)> {
    texts
        .iter()
        .filter(|t| t.get("from").is_some())
        .map(|t| (t["from"].as_u64().unwrap(), t["to"].as_u64().unwrap()))
        .collect()
}

/// Stop `srv` with SIGTERM and start a new one on the same port.
fn restart(mut srv: Server, args: &[&str]) -> Server {
    let addr = srv.addr;
    srv.signal(libc::SIGTERM);
    assert!(srv.wait_exit(Duration::from_secs(20)).is_some(), "no exit");
    drop(srv);
    Server::start_at(&addr.to_string(), args)
}

#[test]
fn every_resume_across_a_restart_gets_a_reset_marker_and_loses_nothing_silently() {
    // The old instance runs fast and far; the new one slowly, so every old position is
    // still beyond what the new one holds while the resumes are tried.
    let a = Server::start(&["--rate", "400", "--ring", "2000"]);
    let before = wait_latest(a.addr, 300);
    let old_epoch = before["epoch"].as_str().unwrap().to_string();
    assert_eq!(old_epoch.len(), 16, "{before}");
    let since = before["latest"].as_u64().unwrap();
    // An old SSE id, as the old instance wrote it: SEQ@EPOCH.
    let old = sse(a.addr, &format!("{}@{old_epoch}", since - 3), 3);
    assert!(old.resets.is_empty() && old.gaps.is_empty(), "same epoch");
    assert_eq!(old.seqs[..3], [since - 2, since - 1, since]);
    assert_eq!(old.ids[0], format!("{}@{old_epoch}", since - 2));

    let b = restart(a, &["--rate", "20", "--ring", "6"]);
    let now = wait_latest(b.addr, 9);
    let new_epoch = now["epoch"].as_str().unwrap().to_string();
    assert_ne!(new_epoch, old_epoch, "a restart has a new epoch");
    assert!(now["latest"].as_u64().unwrap() < since, "{now}");

    // SSE: the old epoch's id, and a bare number beyond the new server's latest.
    for id in [format!("{since}@{old_epoch}"), since.to_string()] {
        let r = sse(b.addr, &id, 6);
        assert_eq!(r.order[0], "reset", "{id}: {:?}", r.order);
        assert_eq!(r.resets.len(), 1, "{id}");
        assert_eq!(r.resets[0]["epoch"], new_epoch.as_str(), "{id}");
        assert_eq!(r.resets[0]["since"], since, "{id}");
        assert!(r.resets[0]["latest"].as_u64().unwrap() >= 9, "{id}");
        // The ring (6) no longer starts at 1: a gap marker from 1, then the ring.
        assert_eq!(r.gaps[0].0, 1, "{id}: {:?}", r.gaps);
        assert_eq!(r.seqs[0], r.gaps[0].1 + 1, "{id}");
        assert_nothing_silent(&r.seqs, &r.gaps, &id);
        assert!(r.ids.iter().all(|i| i.ends_with(&format!("@{new_epoch}"))));
    }
    // A resume in the new epoch is an ordinary one: no reset.
    let latest = poll_to_end(b.addr)["latest"].as_u64().unwrap();
    let r = sse(b.addr, &format!("{}@{new_epoch}", latest - 2), 2);
    assert!(r.resets.is_empty() && r.gaps.is_empty(), "{:?}", r.order);
    assert_eq!(r.seqs[0], latest - 1);

    // WebSocket in the URL: the hello, the reset marker, the gap marker, the ring.
    let q = format!("?since={since}&epoch={old_epoch}");
    let (texts, seqs) = ws(b.addr, &q, None, 6);
    assert_eq!(
        texts[0]["epoch"],
        new_epoch.as_str(),
        "hello first: {texts:?}"
    );
    assert_eq!(texts[1]["reset"], true, "{texts:?}");
    assert_eq!(texts[1]["epoch"], new_epoch.as_str());
    let gaps = ws_gaps(&texts);
    assert_eq!(gaps[0].0, 1, "{texts:?}");
    assert_nothing_silent(&seqs, &gaps, "ws?since");
    // A bare since beyond the new server's latest: the same.
    let (texts, seqs) = ws(b.addr, &format!("?since={since}"), None, 6);
    assert_eq!(texts[1]["reset"], true, "{texts:?}");
    assert_nothing_silent(&seqs, &ws_gaps(&texts), "ws?since bare");

    // The resume message, after the hello.
    let msg = format!("{{\"since\":{since},\"epoch\":\"{old_epoch}\"}}");
    let (texts, seqs) = ws(b.addr, "", Some(msg), 6);
    assert!(texts.iter().any(|t| t["reset"] == true), "{texts:?}");
    assert_nothing_silent(&seqs, &ws_gaps(&texts), "resume message");

    // Poll: reset true, the new epoch, the ring from its start after the gap.
    for q in [
        format!("since={since}&epoch={old_epoch}"),
        format!("since={since}"),
    ] {
        let v = poll(b.addr, &q);
        assert_eq!(v["reset"], true, "{q}: {v}");
        assert_eq!(v["epoch"], new_epoch.as_str(), "{v}");
        assert_eq!(v["gap"], true, "{v}");
        let seqs: Vec<u64> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["seq"].as_u64().unwrap())
            .collect();
        let oldest = v["oldest"].as_u64().unwrap();
        assert_eq!(seqs[0], oldest, "{v}");
        assert_nothing_silent(&seqs, &[(1, oldest - 1)], &q);
    }
    let v = poll(b.addr, &format!("since={}&epoch={new_epoch}", latest - 1));
    assert_eq!(v["reset"], false, "{v}");
    assert_eq!(v["messages"][0]["seq"], latest, "{v}");
}

#[test]
fn a_reset_poll_answer_is_capped_and_paging_from_it_gets_the_new_ring_once() {
    let a = Server::start(&["--rate", "400"]);
    let before = wait_latest(a.addr, 20);
    let old_epoch = before["epoch"].as_str().unwrap().to_string();
    let since = before["latest"].as_u64().unwrap();
    // 300 x 1 KiB in the new ring: more than one answer's 64 KiB.
    let b = restart(a, &["--rate", "2000", "--rounds", "300", "--ring", "1024"]);
    b.wait_stats(Duration::from_secs(60), |s| {
        s["finished"] == true && s["ring_messages"] == 300
    });
    let mut v = poll(b.addr, &format!("since={since}&epoch={old_epoch}"));
    assert_eq!(
        (&v["reset"], &v["more"]),
        (&Value::Bool(true), &Value::Bool(true)),
        "{v}"
    );
    let new_epoch = v["epoch"].as_str().unwrap().to_string();
    assert_ne!(new_epoch, old_epoch);
    let mut seqs: Vec<u64> = Vec::new();
    let mut answers = 0;
    loop {
        let page: Vec<u64> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["seq"].as_u64().unwrap())
            .collect();
        if let Some(&last) = page.last() {
            assert_eq!(v["latest"], last, "latest is the last carried: {v}");
        }
        seqs.extend(page);
        answers += 1;
        assert!(answers < 50, "{answers} answers");
        if v["more"] == false {
            break;
        }
        v = poll(b.addr, &format!("since={}&epoch={new_epoch}", v["latest"]));
        assert_eq!(v["reset"], false, "paging in the new epoch: {v}");
        assert_eq!(v["epoch"], new_epoch.as_str());
    }
    assert_eq!(
        seqs,
        (1..=300).collect::<Vec<_>>(),
        "the new ring, every seq once"
    );
    assert!(answers >= 5, "{answers} answers for 300 KiB");
}

#[test]
fn a_session_from_before_a_restart_is_never_accepted() {
    let args = ["--rate", "50", "--delivery", "session-ack"];
    let a = Server::start(&args);
    let v = poll(a.addr, "session=&since=0");
    let (id, old_epoch) = (
        v["session"].as_str().unwrap().to_string(),
        v["epoch"].clone(),
    );
    assert_eq!(old_epoch.as_str().unwrap().len(), 16, "{v}");
    std::thread::sleep(Duration::from_millis(300));
    let v = poll(a.addr, &format!("session={id}&since=0"));
    assert_eq!(
        (v["session"].as_str(), v["reset"].as_bool()),
        (Some(&*id), Some(false))
    );
    let seen = v["latest"].as_u64().unwrap();
    let b = restart(a, &args);
    let v = poll(
        b.addr,
        &format!(
            "session={id}&since={seen}&epoch={}",
            old_epoch.as_str().unwrap()
        ),
    );
    assert_eq!(v["reset"], true, "{v}");
    assert_ne!(v["session"].as_str(), Some(&*id), "{v}");
    assert_ne!(v["epoch"], old_epoch, "{v}");
    // The SSE hello names the new epoch too.
    let mut s = TcpStream::connect(b.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /sse?session={id} HTTP/1.1\r\nHost: {}\r\nLast-Event-ID: {seen}@{}\r\n\r\n",
        b.addr,
        old_epoch.as_str().unwrap()
    )
    .unwrap();
    let mut got = String::new();
    let mut buf = [0u8; 4096];
    let hello_done = |g: &str| {
        g.find("event: session")
            .is_some_and(|i| g[i..].contains("\n\n"))
    };
    while !hello_done(&got) {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "{got}");
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let line = got
        .lines()
        .find(|l| l.starts_with("data: {\"session\""))
        .unwrap();
    let hello: Value = serde_json::from_str(&line[6..]).unwrap();
    assert_eq!(hello["reset"], true, "{hello}");
    assert_eq!(hello["epoch"], v["epoch"], "{hello}");
}
