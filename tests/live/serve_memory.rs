//! Idle memory per connection of `rtcheck serve` (a measurement, so #[ignore]d: run with
//! `cargo test --release --test serve_memory -- --ignored --nocapture`;
//! RTCHECK_IDLE_CONNS sets the count, default 2000).
use crate::common;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn raise_nofile() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
}

fn open(addr: std::net::SocketAddr, path: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let req = if path == "/ws" {
        "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    } else {
        "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    };
    s.write_all(req.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 10") || head.starts_with(b"HTTP/1.1 200"));
    s
}

fn measure(path: &str) {
    raise_nofile();
    let n: usize = std::env::var("RTCHECK_IDLE_CONNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let srv = Server::start(&["--wait-start"]);
    let base = srv.stats()["rss_bytes"].as_u64().unwrap();
    let conns: Vec<TcpStream> = (0..n).map(|_| open(srv.addr, path)).collect();
    let key = if path == "/ws" { "ws" } else { "sse" };
    let s = srv.wait_stats(Duration::from_secs(30), |s| s["clients"][key] == n as u64);
    std::thread::sleep(Duration::from_millis(500));
    let rss = srv.stats()["rss_bytes"].as_u64().unwrap();
    let per = (rss.saturating_sub(base)) as f64 / n as f64;
    println!(
        "{path}: {n} idle connections: server RSS {:.1} MB (baseline {:.1} MB, open fds {}): {:.0} B per connection",
        rss as f64 / 1e6,
        base as f64 / 1e6,
        s["open_fds"],
        per
    );
    assert!(
        per < 6.0 * 1024.0,
        "{per} B per idle connection exceeds 6 KB"
    );
    drop(conns);
}

#[test]
#[ignore = "measurement: run with --release -- --ignored --nocapture"]
fn idle_websocket_memory_per_connection() {
    measure("/ws");
}

#[test]
#[ignore = "measurement: run with --release -- --ignored --nocapture"]
fn idle_sse_memory_per_connection() {
    measure("/sse");
}
