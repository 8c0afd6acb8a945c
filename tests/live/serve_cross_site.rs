//! Cross-site requests against a loopback `rtcheck serve` (issue 21 item 7): a page of
//! another site may not POST /control/start (browsers send Origin even with `no-cors`),
//! and a DNS-rebinding page (Host: its own name, resolved to 127.0.0.1) is refused on
//! every endpoint, /ws included, unless `--public-host` names it.
use crate::common;
use common::*;

const WS_HEAD: &str = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";

fn request(srv: &Server, line: &str, headers: &str) -> (u16, String) {
    let (st, _, body) = http_full(
        srv.addr,
        format!("{line} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n").as_bytes(),
    );
    (st, body)
}

/// The status of a WebSocket handshake (the head only: a 101 stays open).
fn ws_status(srv: &Server, headers: &str) -> u16 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(s, "GET /ws HTTP/1.1\r\n{headers}{WS_HEAD}\r\n").unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap_or(0) == 1 {
        head.push(b[0]);
    }
    let text = String::from_utf8_lossy(&head);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn refused(srv: &Server, reason: &str) -> u64 {
    let (_, body) = http_get(srv.addr, "/metrics");
    let name = format!("rtcheck_requests_refused_total{{reason=\"{reason}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&name))
        .unwrap_or_else(|| panic!("no {name} in /metrics: {body}"))
        .parse()
        .unwrap()
}

#[test]
fn control_refuses_a_page_of_another_origin_and_serves_its_own_clients() {
    let srv = Server::start(&["--wait-start"]);
    let host = format!("Host: 127.0.0.1:{}\r\n", srv.addr.port());
    // What a no-cors form POST from https://evil.example sends.
    let evil = format!("{host}Origin: https://evil.example\r\n");
    let (st, body) = request(&srv, "POST /control/start?rounds=999999", &evil);
    assert_eq!(st, 403, "{body}");
    assert!(body.contains("other sites"), "{body}");
    let (st, _) = request(&srv, "GET /control/stats", &evil);
    assert_eq!(st, 403);
    let s = srv.stats();
    assert_eq!(s["rounds_sent"], 0, "not started: {s}");
    assert_eq!(s["refused"]["origin"], 2, "{s}");
    assert_eq!(refused(&srv, "origin"), 2);
    // Another port of loopback is another site too.
    let other = format!("{host}Origin: http://127.0.0.1:1\r\n");
    assert_eq!(request(&srv, "POST /control/start", &other).0, 403);
    // The server's own origin, and no Origin at all (rtcheck's clients, curl), work.
    let own = format!("{host}Origin: http://127.0.0.1:{}\r\n", srv.addr.port());
    assert_eq!(request(&srv, "POST /control/start?rounds=3", &own).0, 200);
    assert_eq!(request(&srv, "GET /control/stats", &host).0, 200);
    srv.wait_stats(std::time::Duration::from_secs(20), |s| {
        s["rounds_sent"] == 3
    });
}

#[test]
fn a_dns_rebinding_host_is_refused_everywhere_including_ws() {
    let srv = Server::start(&[]);
    let evil = "Host: evil.example\r\nOrigin: http://evil.example\r\n";
    let (st, body) = request(&srv, "GET /ws", &format!("{evil}{WS_HEAD}"));
    assert_eq!(st, 421, "a rebinding page must not get 101: {body}");
    assert!(body.contains("--public-host"), "{body}");
    for path in ["/healthz", "/poll?since=0", "/sse", "/metrics"] {
        let (st, body) = request(&srv, &format!("GET {path}"), "Host: evil.example:8080\r\n");
        assert_eq!(st, 421, "{path}: {body}");
    }
    assert_eq!(srv.stats()["refused"]["host"], 5);
    assert_eq!(refused(&srv, "host"), 5);
    // Loopback names are this server's.
    for h in ["localhost", "127.0.0.1:1", "[::1]:8080", "app.localhost"] {
        let (st, body) = request(&srv, "GET /healthz", &format!("Host: {h}\r\n"));
        assert_eq!(st, 200, "{h}: {body}");
    }
    let own = format!(
        "Host: 127.0.0.1:{0}\r\nOrigin: http://127.0.0.1:{0}\r\n",
        srv.addr.port()
    );
    assert_eq!(ws_status(&srv, &own), 101);
}

#[test]
fn public_host_names_the_server_for_a_page_on_it() {
    let srv = Server::start(&["--public-host", "rt.example.com"]);
    let ok = "Host: rt.example.com\r\nOrigin: https://rt.example.com\r\n";
    assert_eq!(ws_status(&srv, ok), 101);
    let (st, _) = request(&srv, "GET /healthz", "Host: evil.example\r\n");
    assert_eq!(st, 421);
    let e = rtcheck()
        .args(["serve", "--public-host", "http://a.com/x"])
        .output()
        .unwrap();
    assert_eq!(e.status.code(), Some(2));
    let err = String::from_utf8_lossy(&e.stderr);
    assert!(
        err.contains("--public-host") && err.lines().count() == 1,
        "{err}"
    );
}
