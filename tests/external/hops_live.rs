//! The chain's heartbeat rule against real proxies (issue 24): nginx and HAProxy started on
//! 127.0.0.1 with their idle timeouts at a scaled-down value (4 s for nginx's documented
//! 60 s `proxy_read_timeout`; HAProxy has no default, so the same 4 s is its configured
//! `timeout tunnel`), declared to the chain as overrides. A quiet `rtcheck serve` (no
//! events) whose heartbeat is below the computed maximum keeps the connection open for the
//! whole hold (3 x the idle limit); one whose heartbeat is above the idle limit is cut near
//! it. Bounds are generous (a loaded 2-core machine); waits are on conditions, not sleeps.
use crate::probe_common;
use probe_common::*;
use rtcheck::hops::chain::{self, HopOverride, Overrides};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const IDLE: Duration = Duration::from_secs(4);

/// The heartbeat maximum the chain computes for `hop` with its idle limit declared as IDLE.
fn heartbeat_max(hop: &str) -> Duration {
    let mut over = Overrides::new();
    over.insert(
        hop.to_string(),
        HopOverride {
            idle: Some(IDLE),
            ..Default::default()
        },
    );
    let c = chain::compute(&[hop.to_string()], &over).unwrap();
    assert_eq!(
        c.tightest_idle_s,
        Some(IDLE.as_secs()),
        "{hop}: the override binds"
    );
    Duration::from_secs(c.heartbeat_max_s.expect("an idle limit gives a maximum"))
}

/// Send `request` to the proxy and read until EOF or `hold`; Some(when) if it was cut.
fn hold(port: u16, request: &str, hold: Duration) -> (Option<Duration>, usize) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let start = Instant::now();
    let mut got = 0;
    let mut buf = [0u8; 4096];
    while start.elapsed() < hold {
        match s.read(&mut buf) {
            Ok(0) => return (Some(start.elapsed()), got),
            Ok(n) => got += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return (Some(start.elapsed()), got),
        }
    }
    (None, got)
}

const SSE: &str = "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n";
const WS: &str =
    "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

/// Both backends held at once (the hold is the slow part); asserts the rule on each and
/// returns when the one above was cut.
fn check(port: u16, request: &'static str, max: Duration) -> Duration {
    let hold_for = IDLE * 3;
    let below =
        std::thread::spawn(move || hold(port, &request.replace("GET /", "GET /below/"), hold_for));
    let above =
        std::thread::spawn(move || hold(port, &request.replace("GET /", "GET /above/"), hold_for));
    let (cut, got) = below.join().unwrap();
    assert_eq!(
        cut, None,
        "a heartbeat below {max:?} kept the path open for {hold_for:?} ({got} bytes)"
    );
    assert!(got > 0, "the heartbeat reached the client");
    let (cut, _) = above.join().unwrap();
    let cut = cut.expect("a heartbeat above the idle limit is cut");
    assert!(
        cut >= IDLE - Duration::from_millis(500) && cut < IDLE * 2,
        "cut after {cut:?}, expected near the {IDLE:?} idle limit"
    );
    cut
}

fn backends(max: Duration) -> (Serve, Serve) {
    let below = format!("{}ms", (max.as_millis() / 2).max(500));
    let above = format!("{}s", IDLE.as_secs() + 2);
    (
        Serve::start(&["--wait-start", "--ping", &below]),
        Serve::start(&["--wait-start", "--ping", &above]),
    )
}

#[test]
fn nginx_sse_heartbeat_below_the_chain_maximum_survives_and_above_is_cut() {
    let max = heartbeat_max("nginx");
    assert_eq!(
        max,
        IDLE / 2,
        "the stated rule: half the tightest idle limit"
    );
    let (below, above) = backends(max);
    let cfg = "daemon off;
master_process off;
worker_processes 1;
pid {DIR}/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path {DIR}/body; proxy_temp_path {DIR}/proxy;
  fastcgi_temp_path {DIR}/fcgi; uwsgi_temp_path {DIR}/uwsgi; scgi_temp_path {DIR}/scgi;
  server {
    listen 127.0.0.1:{PORT};
    proxy_http_version 1.1;
    proxy_buffering off;
    proxy_read_timeout 4s;
    location /below/ { proxy_pass http://{BELOW}/; }
    location /above/ { proxy_pass http://{ABOVE}/; }
  }
}
"
    .replace("{BELOW}", &below.addr.to_string())
    .replace("{ABOVE}", &above.addr.to_string());
    let p = Proxy::start(Kind::Nginx, &cfg);
    let cut = check(p.port, SSE, max);
    // Scaled back up (4 s stands for nginx's documented 60 s), the measured cut names the
    // hop and the setting to change, as probe will.
    let m = rtcheck::hops::cut::matching_cut(
        &["nginx".into()],
        cut * 15,
        rtcheck_wire::transport::Transport::Sse,
    );
    assert_eq!(m.first().map(|c| c.hop.as_str()), Some("nginx"), "{cut:?}");
    assert!(
        m[0].describe().contains("proxy_read_timeout"),
        "{}",
        m[0].describe()
    );
}

#[test]
fn haproxy_websocket_heartbeat_below_the_chain_maximum_survives_and_above_is_cut() {
    let max = heartbeat_max("haproxy");
    let (below, above) = backends(max);
    let cfg = "global
  maxconn 64
defaults
  mode http
  timeout connect 5s
  timeout client 4s
  timeout server 4s
  timeout tunnel 4s
frontend fe
  bind 127.0.0.1:{PORT}
  use_backend below if { path_beg /below/ }
  default_backend above
backend below
  http-request replace-path /below(/.*) \\1
  server s1 {BELOW}
backend above
  http-request replace-path /above(/.*) \\1
  server s1 {ABOVE}
"
    .replace("{BELOW}", &below.addr.to_string())
    .replace("{ABOVE}", &above.addr.to_string());
    let p = Proxy::start(Kind::Haproxy, &cfg);
    check(p.port, WS, max);
}
