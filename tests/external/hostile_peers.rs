//! Hostile peers on loopback (issue 41, the runtime half): servers that flood pings without
//! reading, send an event stream of garbage, flood events, or answer a poll with a body
//! that never ends. rtcheck ends in bounded time, never passes what it did not measure,
//! and says what the peer did. Each peer is a scripted stub (`probe_common::stub`) or
//! tests/fixtures/foreign/ping_flood.py, stopped on drop.
use crate::common;
use crate::foreign_common;
#[allow(unused_imports)]
use crate::probe_common;
use probe_common::stub::{pause, Stub};
use probe_common::{probe_json, summary};
use serde_json::Value;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

fn finding<'a>(r: &'a Value, id: &str) -> &'a Value {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no finding {id} in {r:#}"))
}

fn sse_head(s: &mut TcpStream) -> bool {
    s.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n",
    )
    .is_ok()
}

/// Issue 41 item 6: `probe --quick` against a server that floods pings and never reads
/// ends within its window (not past 90 s), the stream cut and the upgrade failed saying
/// why; what it measured is a JSON report.
#[test]
fn a_ping_flood_that_never_reads_ends_the_probe_on_time() {
    let flood = foreign_common::ping_flood();
    let url = flood.url("ws", "/ws");
    let started = std::time::Instant::now();
    let (r, code, err) = probe_json(&["--quick", "--timeout", "3s", &url]);
    let ctx = format!("exit {code}, stderr {err}\n{}", summary(&r));
    // Bounded by the probe itself (common::RUN_LIMIT would catch a hang): far below it.
    assert!(started.elapsed() < Duration::from_secs(60), "{ctx}");
    let up = finding(&r, "upgrade");
    let observed = up["observed"].as_str().unwrap();
    // Cut and reported: a flood of pings (or pongs backed up unsent), a fail saying so.
    assert_eq!(up["status"], "fail", "{ctx}");
    assert!(
        observed.contains("a flood, not a heartbeat") || observed.contains("stopped reading"),
        "{ctx}"
    );
    assert_eq!(code, 1, "{ctx}");
}

/// A stub's script: the connection, the request head, whether the stub was stopped.
type Script = fn(&mut TcpStream, &str, &dyn Fn() -> bool);

fn garbage(s: &mut TcpStream, _: &str, stopped: &dyn Fn() -> bool) {
    if !sse_head(s) {
        return;
    }
    // Not random from run to run: bytes no SSE parser reads as an event or a comment.
    let junk: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8 | 1)
        .collect();
    let junk: Vec<u8> = junk
        .into_iter()
        .map(|b| if b == b':' { b'x' } else { b })
        .collect();
    let _ = s.write_all(&junk);
    pause(Duration::from_secs(30), stopped);
}

fn empty(s: &mut TcpStream, _: &str, _: &dyn Fn() -> bool) {
    let _ = s.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 0\r\n\r\n",
    );
}

fn no_data(s: &mut TcpStream, _: &str, stopped: &dyn Fn() -> bool) {
    if !sse_head(s) {
        return;
    }
    for i in 0..20 {
        if s.write_all(format!("id: {i}\nevent: tick\n\n").as_bytes())
            .is_err()
        {
            return;
        }
    }
    pause(Duration::from_secs(30), stopped);
}

/// `retry: 3000` at connect, then a quiet stream: a common server, not garbage.
fn retry_then_quiet(s: &mut TcpStream, _: &str, stopped: &dyn Fn() -> bool) {
    if !sse_head(s) || s.write_all(b"retry: 3000\n\n").is_err() {
        return;
    }
    pause(Duration::from_secs(30), stopped);
}

/// A quiet stream that announced only its retry is not called broken (nothing to time:
/// never a pass either).
#[test]
fn a_quiet_stream_with_only_its_retry_is_not_garbage() {
    let stub = Stub::start(retry_then_quiet);
    let (r, _, err) = probe_json(&["--quick", "--timeout", "2s", &stub.url("/events")]);
    let f = finding(&r, "sse-buffering");
    let ctx = format!("stderr {err}\n{}", summary(&r));
    assert_ne!(f["status"], "fail", "{ctx}");
    assert_ne!(f["status"], "pass", "{ctx}");
}

/// Issue 41 item 9: an event stream of garbage, an empty body, or fields without
/// `data:` is not a pass: sse-buffering fails saying what arrived, exit 1.
#[test]
fn an_event_stream_without_events_is_not_a_pass() {
    let cases: [(Script, &str); 3] = [
        (garbage, "none of it an SSE event"),
        (empty, "empty body"),
        (no_data, "none of it an SSE event"),
    ];
    for (script, says) in cases {
        let stub = Stub::start(script);
        let (r, code, err) = probe_json(&["--quick", "--timeout", "2s", &stub.url("/events")]);
        let ctx = format!("exit {code}, stderr {err}\n{}", summary(&r));
        assert_eq!(code, 1, "{ctx}");
        let f = finding(&r, "sse-buffering");
        assert_eq!(f["status"], "fail", "{ctx}");
        assert!(f["observed"].as_str().unwrap().contains(says), "{ctx}");
    }
}

fn event_flood(s: &mut TcpStream, _: &str, stopped: &dyn Fn() -> bool) {
    if !sse_head(s) {
        return;
    }
    let burst = "data: x\n\n".repeat(2000);
    while !stopped() {
        if s.write_all(burst.as_bytes()).is_err() {
            return;
        }
    }
}

/// Issue 41 item 10: `--idle-for` against an event flood holds the connection for the
/// whole window (the flood is counted, not kept) instead of passing after 0.03 s; the
/// heartbeat skip names the flag as it is typed.
#[test]
fn an_event_flood_is_watched_for_the_whole_idle_window() {
    let stub = Stub::start(event_flood);
    let (r, code, err) = probe_json(&["--idle-for", "3s", "--timeout", "3s", &stub.url("/")]);
    let ctx = format!("exit {code}, stderr {err}\n{}", summary(&r));
    let idle = finding(&r, "idle-timeout");
    let held = idle["numbers"]["held_s"].as_f64().unwrap();
    assert!(held >= 3.0, "held {held} s, not the window: {ctx}");
    assert_eq!(idle["status"], "pass", "{ctx}");
    let hb = finding(&r, "heartbeat");
    let why = hb["reason"].as_str().unwrap_or("");
    if hb["status"] == "skip" {
        assert!(why.contains("use --idle-for 31s or more"), "{ctx}");
    }
}

fn endless_poll(s: &mut TcpStream, _: &str, stopped: &dyn Fn() -> bool) {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nTransfer-Encoding: chunked\r\n\r\n";
    if s.write_all(head.as_bytes()).is_err() {
        return;
    }
    let chunk = format!("{:x}\r\n{}\r\n", 4096, "[".repeat(4096));
    while !stopped() {
        if s.write_all(chunk.as_bytes()).is_err() {
            return;
        }
    }
}

/// Issue 41 item 10: a poll answer whose body never ends is not "answered".
#[test]
fn a_poll_body_that_never_ends_is_a_failed_poll() {
    let stub = Stub::start(endless_poll);
    let (r, code, err) =
        probe_json(&["--transport", "poll", "--timeout", "2s", &stub.url("/poll")]);
    let ctx = format!("exit {code}, stderr {err}\n{}", summary(&r));
    assert_eq!(code, 1, "{ctx}");
    let f = finding(&r, "poll-status");
    assert_eq!(f["status"], "fail", "{ctx}");
    assert!(
        f["observed"].as_str().unwrap().contains("the poll failed"),
        "{ctx}"
    );
    let latency = finding(&r, "poll-latency")["observed"].as_str().unwrap();
    assert!(!latency.contains("5 of 5 polls answered"), "{ctx}");
}

/// Kills the child on drop (a failing test leaves no listener behind).
struct Guard(std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One GET /metrics on a fresh connection, waiting at most `limit` for the whole answer:
/// (status, body), or why not.
fn scrape_within(addr: std::net::SocketAddr, limit: Duration) -> Result<(u16, String), String> {
    use std::io::Read;
    let mut s = TcpStream::connect_timeout(&addr, limit).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(limit)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut all = Vec::new();
    s.read_to_end(&mut all).map_err(|e| format!("read: {e}"))?;
    let text = String::from_utf8_lossy(&all).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status: {text:.200}"))?;
    Ok((status, text))
}

/// Issue 41 item 15: `audit --listen` answers scrapes while idle and slowloris clients
/// hold sockets (more than it keeps open), and cuts a silent client at its deadline. A
/// listener serving one connection at a time held each scrape 5 s per idle client ahead.
#[test]
fn metrics_listener_answers_scrapes_while_idle_clients_hold_sockets() {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small-container");
    let port = common::free_port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let child = std::process::Command::new(common::binary())
        .args(["audit", "--no-proxy-config", "--procfs"])
        .arg(fixture.join("proc"))
        .arg("--sysfs")
        .arg(fixture.join("sys"))
        .args(["--listen", &addr.to_string(), "--watch", "1s"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _g = Guard(child);
    // Up: the first audit's gauges served (generous: a loaded host).
    let t0 = std::time::Instant::now();
    while !matches!(scrape_within(addr, Duration::from_secs(2)), Ok((200, _))) {
        assert!(t0.elapsed() < Duration::from_secs(60), "listener never up");
        std::thread::sleep(Duration::from_millis(50));
    }
    // 100 silent clients and 20 slowloris ones (a byte of a head, then nothing).
    let mut held = Vec::new();
    for i in 0..120 {
        let mut s = TcpStream::connect(addr).unwrap();
        if i >= 100 {
            s.write_all(b"G").unwrap();
        }
        held.push(s);
    }
    // Each scrape answered in full well inside one head deadline (5 s): behind even one
    // idle client, a serial listener could not.
    for _ in 0..5 {
        let r = scrape_within(addr, Duration::from_secs(4));
        let (status, text) = r.unwrap_or_else(|e| panic!("scrape failed: {e}"));
        assert_eq!(status, 200, "{text:.300}");
        assert!(text.contains("rtcheck_check_status"), "{text:.300}");
    }
    // A silent client is cut (evicted or at its deadline), not held for ever.
    use std::io::Read;
    let last = held.last_mut().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut b = [0u8; 64];
    match last.read(&mut b) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("a silent client was not cut: {other:?}"),
    }
}

/// 101 with the right accept key, then bytes that are not WebSocket frames (a reserved
/// opcode, a masked server frame).
fn not_websocket(s: &mut TcpStream, req: &str, stopped: &dyn Fn() -> bool) {
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
    let key = req
        .lines()
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        .unwrap_or("")
        .trim();
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    );
    let mut junk = head.into_bytes();
    junk.extend_from_slice(&[0x83, 0x03, b'a', b'b', b'c', 0x81, 0x85, 1, 2, 3, 4, 5]);
    if s.write_all(&junk).is_ok() {
        pause(Duration::from_secs(30), stopped);
    }
}

/// Issue 41 item 9 for WebSocket: a 101 followed by bytes that are not WebSocket frames
/// is not a pass under --quick (nothing else judges the stream there).
#[test]
fn a_101_followed_by_garbage_is_not_a_pass() {
    let stub = Stub::start(not_websocket);
    let url = format!("ws://127.0.0.1:{}/ws", stub.port);
    let (r, code, err) = probe_json(&["--quick", "--timeout", "2s", &url]);
    let ctx = format!("exit {code}, stderr {err}\n{}", summary(&r));
    assert_eq!(code, 1, "{ctx}");
    let up = finding(&r, "upgrade");
    assert_eq!(up["status"], "fail", "{ctx}");
    assert!(
        up["observed"].as_str().unwrap().contains("WebSocket"),
        "{ctx}"
    );
}

/// ESC, OSC and BEL: what would clear a terminal, retitle it and ring it if printed raw.
const HOSTILE: &str = "\x1b[2J\x1b]0;pwned\x07";

/// A 400 whose status line carries [`HOSTILE`] in its reason phrase.
fn hostile_status(s: &mut TcpStream, _: &str, _: &dyn Fn() -> bool) {
    let head = format!("HTTP/1.1 400 Bad{HOSTILE}\r\nContent-Length: 0\r\n\r\n");
    let _ = s.write_all(head.as_bytes());
}

/// A 101, then a close 1008 whose reason carries [`HOSTILE`].
fn hostile_close(s: &mut TcpStream, req: &str, stopped: &dyn Fn() -> bool) {
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
    let key = req
        .lines()
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        .unwrap_or("")
        .trim();
    let mut out = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    )
    .into_bytes();
    let mut payload = 1008u16.to_be_bytes().to_vec();
    payload.extend_from_slice(format!("bye{HOSTILE}").as_bytes());
    out.extend_from_slice(&[0x88, payload.len() as u8]);
    out.extend_from_slice(&payload);
    if s.write_all(&out).is_ok() {
        pause(Duration::from_secs(5), stopped);
    }
}

/// Peer-controlled text on a terminal (issue 36h item 2): a peer's status line or close
/// reason holding ESC sequences never reaches stdout or stderr raw, in text output.
#[test]
fn a_peers_escape_sequences_never_reach_the_terminal_raw() {
    for (name, script) in [
        ("status line", hostile_status as Script),
        ("close reason", hostile_close as Script),
    ] {
        let stub = Stub::start(script);
        let url = format!("ws://127.0.0.1:{}/ws", stub.port);
        let out = common::rtcheck()
            .args([
                "probe",
                "--quick",
                "--timeout",
                "2s",
                "--format",
                "text",
                &url,
            ])
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let ctx = format!(
            "{name}: exit {:?}\nstdout {o}\nstderr {e}",
            out.status.code()
        );
        // Something was said about this peer: a report, or an error line naming it.
        assert!(
            o.contains(&url) || e.contains(&format!("{}", stub.port)),
            "{ctx}"
        );
        assert!(
            !o.contains('\x1b') && !e.contains('\x1b'),
            "raw ESC: {ctx:?}"
        );
        assert!(
            !o.contains('\x07') && !e.contains('\x07'),
            "raw BEL: {ctx:?}"
        );
    }
}

/// A file path holding ESC sequences (a `--procfs` root here; a file's words the same)
/// in `audit --watch`'s per-run error line: shown escaped, never raw.
#[test]
fn audit_watch_run_errors_show_escape_sequences_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join(format!("p{HOSTILE}"));
    std::fs::create_dir(&root).unwrap();
    let err = tmp.path().join("stderr");
    let child = std::process::Command::new(common::binary())
        .args(["audit", "--no-proxy-config", "--watch", "1s", "--procfs"])
        .arg(&root)
        .arg("--sysfs")
        .arg(&root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let _g = Guard(child);
    // Polled: the first run's line, on a loaded host within a generous bound.
    let t0 = std::time::Instant::now();
    let text = loop {
        let t = std::fs::read_to_string(&err).unwrap_or_default();
        if t.contains("run 1:") && t.ends_with('\n') {
            break t;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "no run line: {t:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    assert!(text.contains("p\\x1b[2J\\x1b]0;pwned\\x07"), "{text:?}");
}
