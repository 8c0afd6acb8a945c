//! The nginx timeout rules' claims shown on the real proxy (issue 34): nginx from Debian in
//! front of a scripted backend on loopback, observed by an independent client (raw
//! sockets, written here, not rtcheck's wire code). One config holds every case, lint
//! reads that same file:
//! - `nginx-read-timeout`: `proxy_read_timeout 3s` with a server heartbeat every 4 s
//!   (declared `--ping 4s`) is a fail; nginx cuts the quiet WebSocket and the event stream
//!   at 3 s (within 10 %). lint's fix line (`proxy_read_timeout 14s`) passes, and the same
//!   streams with the heartbeat stay open past 9 s.
//! - the direction: client pings every second keep the 3 s WebSocket open for 8 s (frames
//!   either way reset the timer, as the rule says).
//! - `nginx-send-timeout`: `proxy_send_timeout 2s` cuts neither a WebSocket nor an event
//!   stream quiet for 7 s, so lint no longer reports it against the heartbeat.
//! - `nginx-sse-buffering`: with buffering on, events written every 500 ms reach no
//!   client in 4 s; with `proxy_buffering off` the first arrives within 1.5 s.
//! - `haproxy-timeout-tunnel`: HAProxy 2.6 with `timeout client/server 3s` and no tunnel
//!   timeout cuts a quiet WebSocket at 3 s; lint's `timeout tunnel 14s` with the 4 s
//!   heartbeat keeps it open.
//! - `nginx-ws-http-version`, `nginx-ws-upgrade`, with two real WebSocket servers
//!   (Node `ws`, python3-websockets, from Debian): a location that proxies with HTTP/1.0
//!   gets 400 from python3-websockets (Node ws accepts it: the rule says "a server that
//!   checks"); one that does not pass Upgrade gets 426 from both; the fixed location 101.
//! - `caddy-encode-stream` on Caddy 2.6 and the retired `caddy-flush-interval`: with
//!   `encode gzip` or `flush_interval 2s`, events written every 500 ms arrive every
//!   500 ms, uncompressed (Caddy flushes event streams at once): lint, reading the
//!   version from `caddy version`, reports neither.
//! - the retired `nginx-sse-gzip`: `gzip on` with `text/event-stream` and buffering off
//!   sends each event at once, compressed (events every 500 ms arrive every 500 ms).
//! - the retired `haproxy-compression`: HAProxy 2.6 gzips an express event stream and
//!   every event is decodable when it arrives (none held in the compressor).
//! - `haproxy-timeout-server`: `timeout server 3s` cuts a quiet event stream at 3 s; lint's
//!   `timeout server 14s` with the 4 s heartbeat keeps it open.
//! - `haproxy-nbproc`: HAProxy 2.6 refuses a config with `nbproc` (`haproxy -c`), and
//!   loads it without; lint fails the one and not the other.
//! - `haproxy-tcp-mode-http`: without `mode http`, a WebSocket request whose head comes
//!   in two packets is answered by the default backend; with `mode http`, upgraded.
use crate::common;
use crate::foreign_common;
#[allow(unused_imports)]
use crate::probe_common;
use probe_common::stub::{pause, Stub};
use probe_common::{Kind, Proxy};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const CONFIG: &str = "daemon off;
master_process off;
worker_processes 1;
pid {DIR}/nginx.pid;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path {DIR}/body; proxy_temp_path {DIR}/proxy;
  fastcgi_temp_path {DIR}/fcgi; uwsgi_temp_path {DIR}/uwsgi; scgi_temp_path {DIR}/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
  server {
    listen 127.0.0.1:{PORT};
    proxy_http_version 1.1;
    proxy_set_header Upgrade $http_upgrade;
    proxy_set_header Connection $connection_upgrade;
    proxy_buffering off;
    location /trip/ {
      proxy_pass http://{BACKEND};
      proxy_read_timeout 3s;
    }
    location /fixed/ {
      proxy_pass http://{BACKEND};
      proxy_read_timeout 14s;
    }
    location /send/ {
      proxy_pass http://{BACKEND};
      proxy_send_timeout 2s;
      proxy_read_timeout 3600s;
    }
  }
}
";

/// The heartbeat the backend sends on `*-beat` paths (and lint is told: `--ping 4s`).
const BEAT: Duration = Duration::from_secs(4);

/// How often the backend writes an event on `*-drip` paths.
const DRIP: Duration = Duration::from_millis(500);

/// The backend: WebSocket (the RFC 6455 sample key's answer) or an event stream; quiet
/// after the handshake or the first event, or a heartbeat every `BEAT` on `*-beat`. It
/// reads and drops what the client sends.
fn backend(s: &mut TcpStream, req: &str, stopped: &dyn Fn() -> bool) {
    let first = req.lines().next().unwrap_or("");
    let beat = first.contains("-beat");
    let drip = first.contains("-drip");
    let ws = req.to_ascii_lowercase().contains("upgrade: websocket");
    let head = if ws {
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
    } else {
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\ndata: hello\n\n"
    };
    if s.write_all(head.as_bytes()).is_err() {
        return;
    }
    let mut r = s.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1024];
        while matches!(r.read(&mut buf), Ok(n) if n > 0) {}
    });
    let tick: &[u8] = if ws { &[0x89, 0x00] } else { b": beat\n\n" };
    let every = if drip { DRIP } else { BEAT };
    let mut next = Instant::now() + every;
    while !stopped() && pause(Duration::from_millis(50), stopped) {
        if (beat || drip) && Instant::now() >= next {
            let out: &[u8] = if drip { b"data: tick\n\n" } else { tick };
            if s.write_all(out).is_err() {
                return;
            }
            next += every;
        }
    }
}

/// What the client saw: when the proxy closed (after the handshake or the first event),
/// or still open at the end; and how many heartbeats it received.
#[derive(Debug)]
struct Seen {
    closed_after: Option<Duration>,
    beats: usize,
}

/// Open `path` through the proxy as a WebSocket or an event stream, then watch it for
/// `watch`; with `client_ping`, send a masked ping every second.
fn watch(proxy: SocketAddr, path: &str, ws: bool, client_ping: bool, watch: Duration) -> Seen {
    let mut s = TcpStream::connect(proxy).unwrap();
    let req = if ws {
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    } else {
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
    };
    s.write_all(req.as_bytes()).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    // The handshake (and the first event): the quiet starts when they arrive.
    let ready = if ws { "\r\n\r\n" } else { "data: hello\n\n" };
    let mut t0 = None;
    let mut last_ping = Instant::now();
    while started.elapsed() < watch + Duration::from_secs(30) {
        if t0.is_some_and(|t: Instant| t.elapsed() >= watch) {
            break;
        }
        if client_ping && t0.is_some() && last_ping.elapsed() >= Duration::from_secs(1) {
            // A masked, empty ping (mask key 0): the client's heartbeat.
            if s.write_all(&[0x89, 0x80, 0, 0, 0, 0]).is_err() {
                break;
            }
            last_ping = Instant::now();
        }
        match s.read(&mut buf) {
            Ok(0) => {
                let at = t0.map(|t| t.elapsed());
                return Seen {
                    closed_after: Some(at.expect("closed before the stream started")),
                    beats: beats(&got, ws, ready),
                };
            }
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => {
                return Seen {
                    closed_after: t0.map(|t| t.elapsed()),
                    beats: beats(&got, ws, ready),
                }
            }
        }
        if t0.is_none() && String::from_utf8_lossy(&got).contains(ready) {
            let head = String::from_utf8_lossy(&got).to_string();
            assert!(
                head.starts_with(if ws { "HTTP/1.1 101" } else { "HTTP/1.1 200" }),
                "{path}: {head}"
            );
            t0 = Some(Instant::now());
        }
    }
    assert!(t0.is_some(), "{path}: the stream never started");
    Seen {
        closed_after: None,
        beats: beats(&got, ws, ready),
    }
}

/// Heartbeats received after the handshake: server pings (0x89 0x00) or `: beat` lines.
fn beats(got: &[u8], ws: bool, ready: &str) -> usize {
    let text = String::from_utf8_lossy(got);
    let Some(i) = text.find(ready) else { return 0 };
    let after = &got[i + ready.len()..];
    if ws {
        after.windows(2).filter(|w| w == &[0x89, 0x00]).count()
    } else {
        String::from_utf8_lossy(after).matches(": beat").count()
    }
}

fn lint(file: &std::path::Path) -> Value {
    let out = common::rtcheck()
        .arg("lint")
        .arg(file)
        .args(["--ping", "4s", "--format", "json"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

fn at_line<'a>(v: &'a Value, id: &str, block: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == id && f["status"] != "pass")
        .filter(|f| {
            f["location"]["block"]
                .as_str()
                .is_some_and(|b| b.starts_with(block))
        })
        .collect()
}

#[test]
fn the_read_timeout_cuts_where_lint_says_and_the_send_timeout_does_not() {
    let stub = Stub::start(backend);
    let cfg = CONFIG.replace("{BACKEND}", &format!("127.0.0.1:{}", stub.port));
    let proxy = Proxy::start(Kind::Nginx, &cfg);
    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.port));

    // lint on the running file: the 3 s location fails against a 4 s heartbeat, its fix
    // (14 s) and the send-timeout location are clean.
    let v = lint(&proxy.dir().join("nginx.conf"));
    let trip = at_line(&v, "nginx-read-timeout", "location /trip/");
    assert!(
        !trip.is_empty() && trip.iter().all(|f| f["status"] == "fail"),
        "{v:#}"
    );
    let fix = trip[0]["fix"]["persistent"][0].as_str().unwrap();
    assert_eq!(
        fix, "proxy_read_timeout 14s;",
        "the config's /fixed/ is lint's fix"
    );
    assert!(
        at_line(&v, "nginx-read-timeout", "location /fixed/").is_empty(),
        "{v:#}"
    );
    assert!(
        at_line(&v, "nginx-send-timeout", "location /send/").is_empty(),
        "{v:#}"
    );

    let cases: Vec<(&str, bool, bool, Duration)> = vec![
        ("/trip/ws", true, false, Duration::from_secs(8)),
        ("/trip/events", false, false, Duration::from_secs(8)),
        ("/fixed/ws-beat", true, false, Duration::from_secs(9)),
        ("/fixed/events-beat", false, false, Duration::from_secs(9)),
        ("/trip/ws", true, true, Duration::from_secs(8)),
        ("/send/ws", true, false, Duration::from_secs(7)),
        ("/send/events", false, false, Duration::from_secs(7)),
    ];
    let handles: Vec<_> = cases
        .iter()
        .map(|&(path, ws, ping, d)| std::thread::spawn(move || watch(addr, path, ws, ping, d)))
        .collect();
    let seen: Vec<Seen> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let timeout = Duration::from_secs(3);
    for (i, (path, _, ping, _)) in cases.iter().enumerate() {
        let s = &seen[i];
        // Shown with --nocapture: the figures docs/lint.md records.
        eprintln!("{path} (client pings: {ping}): {s:?}");
        match (i, s.closed_after) {
            // The trip: cut at proxy_read_timeout, within 10 %.
            (0 | 1, Some(t)) => assert!(
                t >= timeout.mul_f64(0.9) && t <= timeout.mul_f64(1.1),
                "{path}: cut after {t:?}, not at 3 s"
            ),
            (0 | 1, None) => panic!("{path}: not cut in 8 s"),
            // The fix and the heartbeat; the client's pings; the send timeout: open.
            (_, Some(t)) => panic!("{path} (client pings: {ping}): cut after {t:?}"),
            (_, None) => {}
        }
        if i == 2 || i == 3 {
            assert!(s.beats >= 2, "{path}: {} heartbeats through nginx", s.beats);
        }
    }
    drop(proxy);
}

/// The app behind a default backend: a plain 200 that says who answered.
fn app(s: &mut TcpStream, _req: &str, _stopped: &dyn Fn() -> bool) {
    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\napp");
}

/// Time from the request to the first `data: tick` event through the proxy (None: not
/// within `limit`).
fn first_event(proxy: SocketAddr, path: &str, limit: Duration) -> Option<Duration> {
    let mut s = TcpStream::connect(proxy).unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let t0 = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while t0.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return None,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return None,
        }
        if String::from_utf8_lossy(&got).contains("data: tick") {
            return Some(t0.elapsed());
        }
    }
    None
}

#[test]
fn nginx_buffering_holds_events_where_lint_says() {
    let stub = Stub::start(backend);
    let cfg = CONFIG
        .replace("{BACKEND}", &format!("127.0.0.1:{}", stub.port))
        .replace(
            "    location /send/ {",
            "    location /buffered/ {\n      proxy_pass http://{BACKEND};\n      proxy_buffering on;\n    }\n    location /send/ {",
        )
        .replace("{BACKEND}", &format!("127.0.0.1:{}", stub.port));
    let proxy = Proxy::start(Kind::Nginx, &cfg);
    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.port));
    let out = common::rtcheck()
        .arg("lint")
        .arg(proxy.dir().join("nginx.conf"))
        .args([
            "--ping",
            "4s",
            "--sse-location",
            "/buffered/",
            "--sse-location",
            "/fixed/",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let held = at_line(&v, "nginx-sse-buffering", "location /buffered/");
    assert!(!held.is_empty() && held[0]["status"] == "fail", "{v:#}");
    assert_eq!(held[0]["fix"]["persistent"][0], "proxy_buffering off;");
    assert!(
        at_line(&v, "nginx-sse-buffering", "location /fixed/").is_empty(),
        "{v:#}"
    );
    let h = std::thread::spawn(move || {
        first_event(addr, "/buffered/events-drip", Duration::from_secs(4))
    });
    let fixed = first_event(addr, "/fixed/events-drip", Duration::from_secs(4));
    let buffered = h.join().unwrap();
    eprintln!("buffered: {buffered:?}; proxy_buffering off: {fixed:?}");
    assert_eq!(buffered, None, "events came through the buffering location");
    let fixed = fixed.expect("no event through proxy_buffering off");
    assert!(
        fixed < Duration::from_millis(1500),
        "first event after {fixed:?}"
    );
}

const HAPROXY: &str = "global
  maxconn 1000
defaults
@MODE@  timeout connect 5s
  timeout client 3s
  timeout server 3s
  timeout client-fin 3s
frontend fe
  bind 127.0.0.1:{PORT}
  acl is_ws hdr(Upgrade) -i websocket
  acl fixed path_beg /fixed/
  use_backend tunnel if is_ws fixed
  use_backend ws if is_ws
  default_backend app
backend ws
  server s1 {BACKEND}
backend tunnel
  timeout tunnel 14s
  server s1 {BACKEND}
backend app
  server s1 {APP}
";

fn haproxy(mode: &str, ws: u16, app_port: u16) -> Proxy {
    let cfg = HAPROXY
        .replace("@MODE@", mode)
        .replace("{BACKEND}", &format!("127.0.0.1:{ws}"))
        .replace("{APP}", &format!("127.0.0.1:{app_port}"));
    Proxy::start(Kind::Haproxy, &cfg)
}

fn lint_haproxy(p: &Proxy) -> Value {
    let out = common::rtcheck()
        .arg("lint")
        .arg(p.dir().join("haproxy.cfg"))
        .args(["--ping", "4s", "--connections", "500", "--format", "json"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn haproxy_cuts_an_upgraded_connection_without_timeout_tunnel() {
    let stub = Stub::start(backend);
    let other = Stub::start(app);
    let proxy = haproxy("  mode http\n", stub.port, other.port);
    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.port));
    let v = lint_haproxy(&proxy);
    let trip = at_line(&v, "haproxy-timeout-tunnel", "backend ws");
    assert!(!trip.is_empty() && trip[0]["status"] == "fail", "{v:#}");
    assert_eq!(trip[0]["fix"]["persistent"][0], "timeout tunnel 14s");
    assert!(
        at_line(&v, "haproxy-timeout-tunnel", "backend tunnel").is_empty(),
        "{v:#}"
    );
    assert!(
        at_line(&v, "haproxy-tcp-mode-http", "frontend fe").is_empty(),
        "{v:#}"
    );
    let h =
        std::thread::spawn(move || watch(addr, "/trip/ws", true, false, Duration::from_secs(8)));
    let fixed = watch(addr, "/fixed/ws-beat", true, false, Duration::from_secs(9));
    let cut = h.join().unwrap();
    eprintln!("no tunnel: {cut:?}; timeout tunnel 14s: {fixed:?}");
    let t = cut.closed_after.expect("not cut in 8 s");
    let timeout = Duration::from_secs(3);
    assert!(
        t >= timeout.mul_f64(0.9) && t <= timeout.mul_f64(1.1),
        "cut after {t:?}"
    );
    assert_eq!(fixed.closed_after, None, "{fixed:?}");
    assert!(fixed.beats >= 2, "{fixed:?}");
}

/// A WebSocket request sent in two packets (the Upgrade header in the second): who
/// answers, by the status line.
fn split_upgrade(proxy: SocketAddr) -> String {
    let mut s = TcpStream::connect(proxy).unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    s.write_all(b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(2).any(|w| w == b"\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn haproxy_in_tcp_mode_misses_a_split_upgrade() {
    let stub = Stub::start(backend);
    let other = Stub::start(app);
    let tcp = haproxy("", stub.port, other.port);
    let http = haproxy("  mode http\n", stub.port, other.port);
    let v = lint_haproxy(&tcp);
    let trip = at_line(&v, "haproxy-tcp-mode-http", "frontend fe");
    assert!(!trip.is_empty() && trip[0]["status"] == "fail", "{v:#}");
    assert_eq!(trip[0]["fix"]["persistent"][0], "mode http");
    assert!(at_line(&lint_haproxy(&http), "haproxy-tcp-mode-http", "frontend fe").is_empty());
    let in_tcp = split_upgrade(SocketAddr::from(([127, 0, 0, 1], tcp.port)));
    let in_http = split_upgrade(SocketAddr::from(([127, 0, 0, 1], http.port)));
    eprintln!("mode tcp: {in_tcp}; mode http: {in_http}");
    assert!(in_tcp.starts_with("HTTP/1.1 200"), "mode tcp: {in_tcp}");
    assert!(in_http.starts_with("HTTP/1.1 101"), "mode http: {in_http}");
}

#[test]
fn haproxy_refuses_nbproc_where_lint_says() {
    let bin = common::require_binary("haproxy", "haproxy");
    let dir = tempfile::tempdir().unwrap();
    let text = |g: &str| {
        format!("global\n{g}  maxconn 100\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 5s\n  timeout server 5s\nfrontend fe\n  bind 127.0.0.1:{}\n  default_backend b\nbackend b\n  server s 127.0.0.1:9\n", probe_common::free_port())
    };
    for (trip, g) in [(true, "  nbproc 2\n"), (false, "")] {
        let f = dir.path().join(if trip { "trip.cfg" } else { "fixed.cfg" });
        std::fs::write(&f, text(g)).unwrap();
        let check = std::process::Command::new(&bin)
            .arg("-c")
            .arg("-f")
            .arg(&f)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&check.stderr).to_string();
        assert_eq!(check.status.success(), !trip, "{said}");
        if trip {
            assert!(said.contains("nbproc"), "{said}");
        }
        let out = common::rtcheck()
            .arg("lint")
            .arg(&f)
            .args([
                "--kind",
                "haproxy",
                "--format",
                "json",
                "--connections",
                "50",
            ])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let hits: Vec<&Value> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["id"] == "haproxy-nbproc" && x["status"] != "pass")
            .collect();
        assert_eq!(hits.len(), usize::from(trip), "{v:#}");
        if trip {
            // The version comes from `haproxy -v` on PATH (2.6 here): a fail, said so.
            assert_eq!(hits[0]["status"], "fail", "{v:#}");
            assert!(
                hits[0]["observed"].as_str().unwrap().contains("haproxy 2."),
                "{v:#}"
            );
        }
    }
}

/// The status line a WebSocket handshake through `path` gets.
fn handshake(proxy: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(proxy).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").as_bytes())
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(2).any(|w| w == b"\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn nginx_upgrade_needs_http11_and_the_headers_with_real_servers() {
    let node = foreign_common::node_ws(&[]);
    let py = foreign_common::py_websockets(&[]);
    let loc = |name: &str, port: u16, body: &str| {
        format!("    location /{name}/ {{\n      proxy_pass http://127.0.0.1:{port}/;\n      {body}\n    }}\n")
    };
    let v10 = "proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection \"upgrade\";";
    let noh = "proxy_http_version 1.1; proxy_set_header Host $host;";
    let ok = "proxy_http_version 1.1; proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection \"upgrade\";";
    let mut locs = String::new();
    for (server, port) in [("node", node.port), ("py", py.port)] {
        locs.push_str(&loc(&format!("{server}-v10"), port, v10));
        locs.push_str(&loc(&format!("{server}-noheaders"), port, noh));
        locs.push_str(&loc(&format!("{server}-ok"), port, ok));
    }
    let cfg = format!("daemon off;\nmaster_process off;\nworker_processes 1;\npid {{DIR}}/nginx.pid;\nevents {{ worker_connections 64; }}\nhttp {{\n  access_log off;\n  client_body_temp_path {{DIR}}/body; proxy_temp_path {{DIR}}/proxy;\n  fastcgi_temp_path {{DIR}}/fcgi; uwsgi_temp_path {{DIR}}/uwsgi; scgi_temp_path {{DIR}}/scgi;\n  server {{\n    listen 127.0.0.1:{{PORT}};\n{locs}  }}\n}}\n");
    let proxy = Proxy::start(Kind::Nginx, &cfg);
    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.port));
    let out = common::rtcheck()
        .arg("lint")
        .arg(proxy.dir().join("nginx.conf"))
        .args(["--ping", "20s", "--proxy-version", "nginx=1.22.1"])
        .args(["--ws-location=-noheaders/", "--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for server in ["node", "py"] {
        let v10 = at_line(
            &v,
            "nginx-ws-http-version",
            &format!("location /{server}-v10/"),
        );
        assert!(!v10.is_empty() && v10[0]["status"] == "fail", "{v:#}");
        let noh = at_line(
            &v,
            "nginx-ws-upgrade",
            &format!("location /{server}-noheaders/"),
        );
        assert!(!noh.is_empty() && noh[0]["status"] == "fail", "{v:#}");
        for id in ["nginx-ws-http-version", "nginx-ws-upgrade"] {
            assert!(
                at_line(&v, id, &format!("location /{server}-ok/")).is_empty(),
                "{v:#}"
            );
        }
    }
    let seen = |p: &str| {
        let line = handshake(addr, p);
        eprintln!("{p}: {line}");
        line
    };
    // HTTP/1.0 to the upstream: the server that checks the version refuses it.
    assert!(seen("/py-v10/").starts_with("HTTP/1.1 400"));
    // Node ws does not check it: the rule claims the refusal only for servers that do.
    assert!(seen("/node-v10/").starts_with("HTTP/1.1 101"));
    for server in ["node", "py"] {
        assert!(seen(&format!("/{server}-noheaders/")).starts_with("HTTP/1.1 426"));
        assert!(seen(&format!("/{server}-ok/")).starts_with("HTTP/1.1 101"));
    }
}

/// Event-stream chunks received through `path` (with `Accept-Encoding: gzip`, as a
/// browser asks) and when each arrived, with the response head.
fn chunks(proxy: SocketAddr, path: &str, watch: Duration) -> (String, Vec<Duration>) {
    let mut s = TcpStream::connect(proxy).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: gzip\r\nAccept: text/event-stream\r\n\r\n").as_bytes())
        .unwrap();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let t0 = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut at = Vec::new();
    while t0.elapsed() < watch {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                at.push(t0.elapsed());
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{path}: {text}");
    let head = text.split("\r\n\r\n").next().unwrap_or("").to_string();
    (head, at)
}

#[test]
fn caddy_26_passes_an_event_stream_at_once_whatever_encode_and_flush_interval_say() {
    let stub = Stub::start(backend);
    let cfg = format!(
        "{{\n  admin off\n  auto_https off\n}}\nhttp://127.0.0.1:{{PORT}} {{\n  handle /gz/* {{\n    encode gzip\n    reverse_proxy 127.0.0.1:{p}\n  }}\n  handle /slow/* {{\n    reverse_proxy 127.0.0.1:{p} {{\n      flush_interval 2s\n    }}\n  }}\n}}\n",
        p = stub.port
    );
    let proxy = Proxy::start(Kind::Caddy, &cfg);
    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.port));
    // lint reads Caddy's version from `caddy version` (2.6 here): no encode finding, and
    // the retired flush-interval rule is still accepted by --skip.
    let out = common::rtcheck()
        .arg("lint")
        .arg(proxy.dir().join("Caddyfile"))
        .args([
            "--sse-location",
            "/gz/",
            "--sse-location",
            "/slow/",
            "--ping",
            "4s",
        ])
        .args(["--skip", "caddy-flush-interval", "--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(v["target"].as_str().unwrap().contains("caddy 2.6"), "{v:#}");
    let encode: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "caddy-encode-stream" && f["status"] != "pass")
        .collect();
    assert!(encode.is_empty(), "{v:#}");
    let h = std::thread::spawn(move || chunks(addr, "/gz/events-drip", Duration::from_secs(4)));
    let slow = chunks(addr, "/slow/events-drip", Duration::from_secs(4));
    let gz = h.join().unwrap();
    for (what, (head, at)) in [("encode gzip", &gz), ("flush_interval 2s", &slow)] {
        eprintln!("{what}: {} chunks, {at:?}", at.len());
        assert!(
            !head.to_ascii_lowercase().contains("content-encoding"),
            "{what}: {head}"
        );
        // An event every 500 ms: held for 2 s (or until a compressor fills) would give
        // a handful at most; passed at once gives one per event.
        assert!(at.len() >= 6, "{what}: {at:?}");
        let gaps = at.windows(2).map(|w| w[1] - w[0]).max().unwrap();
        assert!(
            gaps < Duration::from_millis(1500),
            "{what}: a gap of {gaps:?}"
        );
    }
}

#[test]
fn nginx_gzip_sends_each_event_at_once_with_buffering_off() {
    let stub = Stub::start(backend);
    let cfg = CONFIG
        .replace(
            "    location /send/ {",
            "    location /gz/ {\n      proxy_pass http://{BACKEND};\n      gzip on;\n      gzip_types text/event-stream;\n      gzip_min_length 1;\n    }\n    location /send/ {",
        )
        .replace("{BACKEND}", &format!("127.0.0.1:{}", stub.port));
    let proxy = Proxy::start(Kind::Nginx, &cfg);
    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.port));
    // The retired rule is accepted by --skip and reported by nobody.
    let out = common::rtcheck()
        .arg("lint")
        .arg(proxy.dir().join("nginx.conf"))
        .args([
            "--ping",
            "4s",
            "--sse-location",
            "/gz/",
            "--skip",
            "nginx-sse-gzip",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["id"] != "nginx-sse-gzip"));
    let (head, at) = chunks(addr, "/gz/events-drip", Duration::from_secs(4));
    eprintln!("gzip on, buffering off: {} chunks, {at:?}", at.len());
    assert!(
        head.to_ascii_lowercase().contains("content-encoding: gzip"),
        "{head}"
    );
    assert!(at.len() >= 6, "{at:?}");
    let gap = at.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(gap < Duration::from_millis(1500), "a gap of {gap:?}");
}

/// Events decodable from a gzip'ed, chunked response as it arrives: (when, how many).
fn gunzipped_events(
    proxy: SocketAddr,
    path: &str,
    watch: Duration,
) -> (String, Vec<(Duration, usize)>) {
    let mut s = TcpStream::connect(proxy).unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: gzip\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let t0 = Instant::now();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let mut seen = Vec::new();
    while t0.elapsed() < watch {
        let n = match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => continue,
        };
        raw.extend_from_slice(&buf[..n]);
        let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        // De-chunk what arrived, then gunzip as far as it goes.
        let mut body = Vec::new();
        let mut rest = &raw[i + 4..];
        while let Some(j) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = std::str::from_utf8(&rest[..j])
                .unwrap_or("0")
                .trim()
                .to_string();
            let len = usize::from_str_radix(&size, 16).unwrap_or(0);
            if len == 0 || rest.len() < j + 4 + len {
                break;
            }
            body.extend_from_slice(&rest[j + 2..j + 2 + len]);
            rest = &rest[j + 4 + len..];
        }
        let mut out = Vec::new();
        let _ = flate2::read::GzDecoder::new(&body[..]).read_to_end(&mut out);
        seen.push((
            t0.elapsed(),
            String::from_utf8_lossy(&out).matches("data:").count(),
        ));
    }
    let head = String::from_utf8_lossy(&raw)
        .split("\r\n\r\n")
        .next()
        .unwrap_or("")
        .to_string();
    (head, seen)
}

#[test]
fn haproxy_compression_delivers_each_event_at_once() {
    let sse = foreign_common::express_sse(&[("EVENT_MS", "500")]);
    let cfg = format!("global\n  maxconn 100\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\nfrontend fe\n  bind 127.0.0.1:{{PORT}}\n  default_backend be_events\nbackend be_events\n  compression algo gzip\n  server s1 127.0.0.1:{}\n", sse.port);
    let proxy = Proxy::start(Kind::Haproxy, &cfg);
    let out = common::rtcheck()
        .arg("lint")
        .arg(proxy.dir().join("haproxy.cfg"))
        .args([
            "--ping",
            "4s",
            "--connections",
            "50",
            "--skip",
            "haproxy-compression",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["id"] != "haproxy-compression"));
    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.port));
    let (head, seen) = gunzipped_events(addr, "/events-noid", Duration::from_secs(4));
    eprintln!("{head}\n{seen:?}");
    assert!(
        head.to_ascii_lowercase().contains("content-encoding: gzip"),
        "{head}"
    );
    // Each arrival carries one more decodable event: none is held in the compressor.
    let counts: Vec<usize> = seen.iter().map(|(_, n)| *n).collect();
    assert!(counts.last().copied().unwrap_or(0) >= 6, "{seen:?}");
    for w in seen.windows(2) {
        assert!(
            w[1].1 <= w[0].1 + 1,
            "events held then released together: {seen:?}"
        );
    }
}

#[test]
fn haproxy_timeout_server_cuts_a_quiet_event_stream() {
    let stub = Stub::start(backend);
    let cfg = format!(
        "global\n  maxconn 100\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 3s\nfrontend fe\n  bind 127.0.0.1:{{PORT}}\n  acl fixed path_beg /fixed/\n  use_backend be_events_fixed if fixed\n  default_backend be_events\nbackend be_events\n  server s1 127.0.0.1:{p}\nbackend be_events_fixed\n  timeout server 14s\n  server s1 127.0.0.1:{p}\n",
        p = stub.port
    );
    let proxy = Proxy::start(Kind::Haproxy, &cfg);
    let out = common::rtcheck()
        .arg("lint")
        .arg(proxy.dir().join("haproxy.cfg"))
        .args(["--ping", "4s", "--connections", "50", "--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let trip = at_line(&v, "haproxy-timeout-server", "backend be_events (");
    assert!(!trip.is_empty() && trip[0]["status"] == "fail", "{v:#}");
    assert_eq!(trip[0]["fix"]["persistent"][0], "timeout server 14s");
    assert!(
        at_line(&v, "haproxy-timeout-server", "backend be_events_fixed").is_empty(),
        "{v:#}"
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.port));
    let h =
        std::thread::spawn(move || watch(addr, "/events", false, false, Duration::from_secs(8)));
    let fixed = watch(
        addr,
        "/fixed/events-beat",
        false,
        false,
        Duration::from_secs(9),
    );
    let cut = h.join().unwrap();
    eprintln!("timeout server 3s: {cut:?}; 14s with a 4 s heartbeat: {fixed:?}");
    let t = cut.closed_after.expect("not cut in 8 s");
    let timeout = Duration::from_secs(3);
    assert!(
        t >= timeout.mul_f64(0.9) && t <= timeout.mul_f64(1.1),
        "cut after {t:?}"
    );
    assert_eq!(fixed.closed_after, None, "{fixed:?}");
    assert!(fixed.beats >= 2, "{fixed:?}");
}
