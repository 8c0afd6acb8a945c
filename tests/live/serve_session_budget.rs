//! Anonymous sessions cannot pin memory past `--session-memory` (issue 21 item 3): under
//! `--delivery session-ack` every bare `GET /poll?session=` used to get a session that
//! filled its queue (2,000 of them held 2.18 GB for the TTL). Now the sessions that fit the
//! budget at their worst are issued and the rest get 503 + Retry-After, as at
//! `--max-sessions`; RSS of the serve child stays under the budget plus its baseline.
use crate::common;
use common::*;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const BUDGET: u64 = 64 << 20;

fn rss(srv: &Server) -> u64 {
    rtcheck_base::os::proc::rss_of(srv.child.id()).unwrap()
}

/// One request on a fresh connection: (status, head, body).
fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
    http_full(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

#[test]
fn a_flood_of_bare_session_polls_stays_within_the_session_memory() {
    // 200 rounds a second fill a 1024-message queue in about 5 s.
    let srv = Server::start(&[
        "--delivery",
        "session-ack",
        "--rate",
        "200",
        "--size",
        "1KiB",
        "--ring",
        "1024",
        "--session-memory",
        "64MiB",
    ]);
    let banner = srv.stderr();
    let stats = srv.stats();
    let fit = stats["sessions"]["max_by_memory"].as_u64().unwrap();
    let worst = stats["sessions"]["worst_session_bytes"].as_u64().unwrap();
    assert!(fit > 10 && fit * worst <= BUDGET, "{stats}");
    assert_eq!(stats["sessions"]["memory_budget"], BUDGET);
    assert!(
        banner.contains("session memory: 67.1 MB (--session-memory)\n"),
        "{banner}"
    );
    let line = format!("({fit} x 1.1 MB, away with full queues)");
    assert!(banner.contains(&line), "{banner}");
    let ours = |l: &&str| l.contains("session") || l.contains("replay");
    assert!(
        banner.lines().filter(ours).all(|l| l.len() <= 80),
        "{banner}"
    );
    let base = rss(&srv);
    let (mut ok, mut refused) = (0u64, 0u64);
    for _ in 0..2000 {
        let (st, head, body) = get(srv.addr, "/poll?session=");
        match st {
            200 => ok += 1,
            503 => {
                refused += 1;
                assert!(header(&head, "Retry-After").is_some(), "{head}");
                let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                assert_eq!(v["error"], "session memory full", "{body}");
            }
            other => panic!("{other}: {head}{body}"),
        }
    }
    assert_eq!(ok, fit, "exactly the sessions that fit");
    assert_eq!(refused, 2000 - fit);
    // Let every issued session fill its queue: the worst case, then measure.
    let queue = 1024;
    srv.wait_stats(Duration::from_secs(60), |s| {
        s["sessions"]["messages"].as_u64().unwrap() >= fit * queue
    });
    let peak = rss(&srv);
    let grown = peak.saturating_sub(base);
    eprintln!(
        "2000 bare polls: {ok} sessions, {refused} refused; RSS {} -> {} MiB",
        base >> 20,
        peak >> 20
    );
    assert!(
        grown <= BUDGET + (32 << 20),
        "RSS grew {} MiB with a {} MiB budget (base {} MiB)",
        grown >> 20,
        BUDGET >> 20,
        base >> 20
    );
    let s = srv.stats();
    assert!(s["sessions"]["bytes"].as_u64().unwrap() <= BUDGET, "{s}");
    assert_eq!(s["sessions"]["refused_memory"], refused);
    let (_, m) = http_get(srv.addr, "/metrics");
    assert!(
        m.contains(&format!(
            "rtcheck_sessions_refused_memory_total {refused}\n"
        )),
        "{m}"
    );
    assert!(m.contains(&format!("rtcheck_session_memory_budget_bytes {BUDGET}\n")));
    // A WebSocket asking for a new session is refused before its handshake.
    let mut ws = std::net::TcpStream::connect(srv.addr).unwrap();
    ws.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    ws.write_all(b"GET /ws?session= HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").unwrap();
    let mut head = String::new();
    let t0 = Instant::now();
    let mut b = [0u8; 512];
    while !head.contains("\r\n\r\n") && t0.elapsed() < Duration::from_secs(10) {
        match ws.read(&mut b) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.push_str(&String::from_utf8_lossy(&b[..n])),
        }
    }
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(head.contains("session memory full"), "{head}");
}
