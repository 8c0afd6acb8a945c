//! `rtcheck probe --browser` in headless Chromium (Debian package `chromium`; missing, the
//! test fails naming it) against `rtcheck serve` on loopback, and through nginx with TLS
//! and HTTP/2. The JSON report is parsed back and each measured number checked.
use crate::common;
use crate::probe_common;
use probe_common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

fn finding<'a>(r: &'a Value, id: &str, url_part: &str) -> &'a Value {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id && f["title"].as_str().unwrap().contains(url_part))
        .unwrap_or_else(|| panic!("no finding {id} for {url_part} in {}", summary(r)))
}

fn num(f: &Value, key: &str) -> f64 {
    f["numbers"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {key} in {f:#}"))
}

/// Once the browser's WebSocket is the only one left on `s` (the plain probe's two
/// handshakes, own and foreign Origin, closed before the browser runs) and 5 more
/// messages went out, stop the server: it says goodbye with 1001. Bounded by `limit`.
fn sigterm_when_browser_connects(s: &Serve, limit: Duration) {
    let t0 = Instant::now();
    let mut since = None;
    while t0.elapsed() < limit {
        let st = s.stats();
        let closed: u64 = st["closed"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        let sent = st["messages_sent"]["ws"].as_u64().unwrap();
        // The probe's own handshake has closed (its foreign-Origin one is refused with 403,
        // never a client): the one WebSocket open now is the page's.
        if closed >= 1 && st["clients"]["ws"].as_u64() == Some(1) {
            // Let a few frames reach the page first.
            let from = *since.get_or_insert(sent);
            if sent >= from + 5 {
                s.signal(libc::SIGTERM);
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn http1_seventh_event_source_waits_reconnect_resumes_ws_sees_1001() {
    common::require_binary("chromium", "chromium");
    let sse = Serve::start(&["--rate", "10", "--size", "64", "--sse-max-age", "3s"]);
    let bin = Serve::start(&["--rate", "10", "--size", "64"]);
    let text = Serve::start(&["--rate", "10", "--size", "64", "--text"]);
    let (sse_url, bin_url, text_url) = (
        format!("http://{}/sse", sse.addr),
        format!("ws://{}/ws", bin.addr),
        format!("ws://{}/ws", text.addr),
    );
    let (r, code, err) = std::thread::scope(|sc| {
        sc.spawn(|| {
            sigterm_when_browser_connects(&bin, Duration::from_secs(110));
            sigterm_when_browser_connects(&text, Duration::from_secs(60));
        });
        probe_json(&[
            "--quick",
            "--public",
            "--browser",
            "--timeout",
            "60s",
            &sse_url,
            &bin_url,
            &text_url,
        ])
    });
    let ctx = format!("{}\nstderr: {err}", summary(&r));
    assert_eq!(code, 0, "{ctx}");

    // HTTP/1.1: 6 per host; the 7th opens only once the page closed one.
    let c = finding(&r, "browser-sse-connections", &sse_url);
    assert_eq!(c["status"], "warn", "{ctx}");
    assert_eq!(num(c, "requested"), 7.0, "{ctx}");
    assert_eq!(num(c, "open_at_once"), 6.0, "{ctx}");
    assert_eq!(num(c, "h2"), 0.0, "{ctx}");
    let waited = num(c, "waiter_wait_ms");
    let after = num(c, "waiter_after_free_ms");
    // It waited through the 2 s hold, and opened soon after a connection was freed.
    assert!(waited >= 1500.0 && after >= 0.0 && after < waited, "{ctx}");

    // The server closed the stream after 3 s; Chromium came back with Last-Event-ID.
    let re = finding(&r, "browser-sse-reconnect", &sse_url);
    assert_eq!(re["status"], "pass", "{ctx}");
    assert_eq!(num(re, "last_event_id_sent"), 1.0, "{ctx}");
    assert_eq!(num(re, "lost"), 0.0, "{ctx}");
    let closed_at = num(re, "closed_at_ms");
    assert!((2500.0..30_000.0).contains(&closed_at), "{ctx}");
    // Chromium's default retry is 3 s.
    let delay = num(re, "reconnect_delay_ms");
    assert!((2000.0..15_000.0).contains(&delay), "{ctx}");

    // WebSocket from the page: binary frames from one server, text from the other, and
    // the 1001 each sent on SIGTERM.
    let b = finding(&r, "browser-websocket", &bin_url);
    assert_eq!(b["status"], "pass", "{ctx}");
    assert!(num(b, "binary_frames") >= 1.0, "{ctx}");
    assert_eq!(num(b, "undecoded_frames"), 0.0, "{ctx}");
    assert_eq!(num(b, "close_code"), 1001.0, "{ctx}");
    let t = finding(&r, "browser-websocket", &text_url);
    assert!(num(t, "text_frames") >= 1.0, "{ctx}");
    assert_eq!(num(t, "binary_frames"), 0.0, "{ctx}");
    assert_eq!(num(t, "close_code"), 1001.0, "{ctx}");
}

#[test]
fn h2_through_nginx_tls_opens_all_seven_on_one_connection() {
    common::require_binary("chromium", "chromium");
    let s = Serve::start(&["--rate", "10", "--size", "64", "--sse-max-age", "3s"]);
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    let nginx = Proxy::start(Kind::Nginx, &nginx_tls_h2(certs.path(), s.addr));
    let ca = certs.path().join("ca.pem").display().to_string();
    let url = nginx.url("https", "/sse");
    let (r, code, err) = probe_json(&[
        "--quick",
        "--public",
        "--browser",
        "--timeout",
        "60s",
        "--ca",
        &ca,
        &url,
    ]);
    let ctx = format!("{}\nstderr: {err}", summary(&r));
    assert_eq!(code, 0, "{ctx}");
    let c = finding(&r, "browser-sse-connections", &url);
    assert_eq!(c["status"], "pass", "{ctx}");
    assert_eq!(num(c, "open_at_once"), 7.0, "{ctx}");
    assert_eq!(num(c, "h2"), 1.0, "{ctx}");
    assert_eq!(num(c, "tcp_connections"), 1.0, "{ctx}");
    // The reconnect works over h2 through the proxy too.
    let re = finding(&r, "browser-sse-reconnect", &url);
    assert_eq!(re["status"], "pass", "{ctx}");
    assert_eq!(num(re, "lost"), 0.0, "{ctx}");
    // How the browser trusted the test CA is in the report.
    let target = r["target"].as_str().unwrap();
    assert!(target.contains("pinned"), "{target}");
    assert!(err.contains("pinned"), "{err}");

    // --insecure: the browser ignores certificate errors, and the report says so.
    let (r, code, _) = probe_json(&[
        "--quick",
        "--insecure",
        "--browser",
        "--skip",
        "browser-sse-reconnect",
        &url,
    ]);
    assert_eq!(code, 0, "{}", summary(&r));
    assert_eq!(finding(&r, "browser-sse-reconnect", &url)["status"], "skip");
    assert_eq!(num(finding(&r, "browser-sse-connections", &url), "h2"), 1.0);
    assert!(r["target"].as_str().unwrap().contains("ignored"), "{r}");
}

#[test]
fn missing_chromium_is_one_line_naming_the_package() {
    let out = common::rtcheck()
        .env("PATH", "/nonexistent")
        .args(["probe", "--quick", "--browser", "http://127.0.0.1:9/sse"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("Debian package `chromium`"), "{err}");
}

/// Processes whose command line mentions `needle` (Chromium's --user-data-dir).
fn processes_mentioning(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

#[test]
fn ctrl_c_kills_chromium_and_removes_its_profile() {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    common::require_binary("chromium", "chromium");
    let s = Serve::start(&["--rate", "10", "--size", "64"]);
    let tmp = tempfile::tempdir().unwrap();
    let tmp_path = tmp.path().display().to_string();
    let ws = format!("ws://{}/ws", s.addr);
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtcheck"))
        .args([
            "probe",
            "--quick",
            "--public",
            "--browser",
            "--timeout",
            "60s",
            &ws,
        ])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, as a terminal's Ctrl-C reaches it (not the harness).
        .process_group(0)
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(110);
    loop {
        let st = s.stats();
        let closed: u64 = st["closed"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        if closed >= 1 && st["clients"]["ws"].as_u64() == Some(1) {
            break; // the browser's WebSocket is open
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("probe exited early ({st})");
        }
        assert!(Instant::now() < until, "the browser never connected");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!processes_mentioning(&tmp_path).is_empty(), "chromium runs");
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < until, "probe did not stop after Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(out.stdout.is_empty(), "no partial report");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "profile left behind: {left:?}");
    // Killed as a group: renderers and helpers too (zombies have no command line).
    let until = Instant::now() + Duration::from_secs(10);
    while !processes_mentioning(&tmp_path).is_empty() {
        assert!(Instant::now() < until, "chromium still running");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Issue 21: with $TMPDIR 33 characters or longer Chromium aborted ("Socket path too
/// long" for its SingletonSocket under the profile, its TMPDIR) before DevTools answered.
/// The profile now moves under /tmp when the socket path would not fit; it is removed after.
#[test]
fn a_long_tmpdir_still_runs_the_browser() {
    common::require_binary("chromium", "chromium");
    let s = Serve::start(&["--rate", "10", "--size", "64"]);
    let tmp = tempfile::tempdir().unwrap();
    let long = tmp
        .path()
        .join("a-temporary-directory-with-a-long-name-0123456789");
    std::fs::create_dir(&long).unwrap();
    assert!(long.as_os_str().len() >= 60);
    let ws = format!("ws://{}/ws", s.addr);
    let out = std::thread::scope(|sc| {
        sc.spawn(|| sigterm_when_browser_connects(&s, Duration::from_secs(110)));
        common::rtcheck()
            .args([
                "probe",
                "--quick",
                "--public",
                "--browser",
                "--timeout",
                "60s",
            ])
            .args(["--format", "json", &ws])
            .env("TMPDIR", &long)
            .output()
            .unwrap()
    });
    let err = String::from_utf8_lossy(&out.stderr);
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}); stderr: {err}"));
    assert_eq!(out.status.code(), Some(0), "{}\nstderr: {err}", summary(&r));
    let b = finding(&r, "browser-websocket", &ws);
    assert_eq!(b["status"], "pass", "{}", summary(&r));
    assert!(num(b, "binary_frames") >= 1.0, "{}", summary(&r));
    assert_eq!(
        std::fs::read_dir(&long).unwrap().count(),
        0,
        "left in TMPDIR"
    );
}

/// A foreign SSE server (ids per connection, as tutorials write it) that ends each stream
/// after 5 events, so EventSource reconnects.
fn per_connection_ids_closing(s: &mut std::net::TcpStream, _req: &str, stopped: &dyn Fn() -> bool) {
    use std::io::Write;
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    if s.write_all(head.as_bytes()).is_err() {
        return;
    }
    for i in 1..=5 {
        let ev = format!("id: {i}\ndata: {{\"price\": {i}}}\n\n");
        if s.write_all(ev.as_bytes()).is_err() || !stub::pause(Duration::from_millis(200), stopped)
        {
            return;
        }
    }
}

#[test]
fn a_foreign_servers_ids_that_start_over_fail_the_browser_reconnect() {
    common::require_binary("chromium", "chromium");
    let server = stub::Stub::start(per_connection_ids_closing);
    let url = server.url("/prices");
    let (r, code, err) = probe_json(&[
        "--quick",
        "--browser",
        "--timeout",
        "10s",
        "--skip",
        "browser-sse-connections",
        &url,
    ]);
    assert_eq!(code, 1, "{}\n{err}", summary(&r));
    let f = finding(&r, "browser-sse-reconnect", "/prices");
    assert_eq!(f["status"], "fail", "{}", summary(&r));
    let o = f["observed"].as_str().unwrap();
    assert!(o.contains("sent Last-Event-ID 5"), "{o}");
    assert!(o.contains("started over"), "{o}");
    assert_eq!(num(f, "duplicated"), 5.0, "{f:#}");
}
