//! `rtcheck probe` directly against `serve`, over TLS through nginx, secrets redacted in
//! every output, and bad peers: one line, exit 2, within the step timeout.
use crate::probe_common;
use probe_common::stub::{pause, Stub};
use probe_common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

fn rtcheck() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("rtcheck"))
}

#[test]
fn probe_against_serve_directly_passes_every_check() {
    let s = Serve::start(&["--rate", "5", "--size", "256", "--ping", "2s"]);
    let ws = format!("ws://{}/ws", s.addr);
    let sse = format!("http://{}/sse", s.addr);
    // No --public: serve refuses a foreign Origin on /ws, so the origin check passes as is.
    let (r, code, _) = probe_json(&["--idle-for", "5s", &ws, &sse]);
    let ctx = summary(&r);
    assert_eq!(code, 0, "{ctx}");
    assert_eq!(r["kind"], "probe");
    for id in [
        "upgrade",
        "idle-timeout",
        "heartbeat",
        "compression",
        "origin",
    ] {
        assert_eq!(status(&r, id, "/ws"), "pass", "{id}\n{ctx}");
    }
    for id in [
        "sse-buffering",
        "idle-timeout",
        "heartbeat",
        "resume",
        "compression",
    ] {
        assert_eq!(status(&r, id, "/sse"), "pass", "{id}\n{ctx}");
    }
    // Plain http: HTTP/2 does not apply (browsers speak h2 over TLS only).
    assert_eq!(status(&r, "http2", "/sse"), "skip", "{ctx}");
    assert_eq!(r["summary"]["pass"], 10, "{ctx}");
    // The numbers behind the verdicts are machine-readable.
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "heartbeat")
        .unwrap();
    let interval = f["numbers"]["interval_s"].as_f64().unwrap();
    assert!((1.0..=3.5).contains(&interval), "{interval}");
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "origin")
        .unwrap();
    assert!(f["observed"].as_str().unwrap().contains("403"), "{f}");
}

#[test]
fn a_server_open_to_any_origin_is_a_warning_unless_public() {
    let s = Serve::start(&["--rate", "5", "--cors", "*"]);
    let ws = format!("ws://{}/ws", s.addr);
    let (r, code, _) = probe_json(&["--quick", &ws]);
    assert_eq!(status(&r, "origin", "/ws"), "warn", "{}", summary(&r));
    assert_eq!(code, 0, "warn is below the default --fail-on fail");
    let (_, code, _) = probe_json(&["--quick", "--fail-on", "warn", &ws]);
    assert_eq!(code, 1);
    let (r, _, _) = probe_json(&["--quick", "--public", &ws]);
    assert_eq!(status(&r, "origin", "/ws"), "pass", "{}", summary(&r));
}

#[test]
fn polling_fallback_and_skip() {
    let s = Serve::start(&["--rate", "5"]);
    let poll = format!("http://{}/poll?since=0", s.addr);
    let (r, _, _) = probe_json(&["--quick", &poll]);
    assert_eq!(
        status(&r, "idle-timeout", "/poll"),
        "skip",
        "{}",
        summary(&r)
    );
    let f = &r["findings"][0];
    assert_eq!(f["id"], "sse-buffering");
    assert!(
        f["reason"].as_str().unwrap().contains("probed as polling"),
        "{f}"
    );
    let ws = format!("ws://{}/ws", s.addr);
    let (r, _, _) = probe_json(&["--quick", "--skip", "upgrade,origin", &ws]);
    assert_eq!(status(&r, "upgrade", "/ws"), "skip");
    let out = rtcheck()
        .args(["probe", "--skip", "nope", &ws])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown check id `nope`"));
}

#[test]
fn tls_through_nginx_with_ca_h2_and_failures() {
    let s = Serve::start(&["--rate", "5", "--size", "256"]);
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    let c = certs.path().display().to_string();
    let conf = nginx_tls_h2(certs.path(), s.addr);
    let nginx = Proxy::start(Kind::Nginx, &conf);
    let ca = format!("{c}/ca.pem");
    let https = nginx.url("https", "/sse");
    let wss = nginx.url("wss", "/ws");
    let (r, code, _) = probe_json(&["--quick", "--public", "--ca", &ca, &https, &wss]);
    let ctx = summary(&r);
    assert_eq!(code, 0, "{ctx}");
    assert_eq!(status(&r, "http2", "/sse"), "pass", "{ctx}");
    assert_eq!(status(&r, "sse-buffering", "/sse"), "pass", "{ctx}");
    assert_eq!(status(&r, "upgrade", "/ws"), "pass", "{ctx}");
    // Without the CA: a TLS failure, one line, exit 2.
    let out = rtcheck()
        .args(["probe", "--quick", "--timeout", "5s", &https])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("TLS handshake"), "{err}");
    // --insecure works and says so in the report and on stderr.
    let (r, code, err) = probe_json(&["--quick", "--insecure", &https]);
    assert_eq!(code, 0, "{}", summary(&r));
    assert!(
        r["target"].as_str().unwrap().contains("NOT VERIFIED"),
        "{r}"
    );
    assert!(err.contains("--insecure"), "{err}");
}

/// A one-shot server that records the request and answers with `reply`.
fn capture_server(reply: &'static [u8]) -> (u16, std::sync::mpsc::Receiver<String>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming().take(4) {
            let Ok(mut s) = s else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = vec![0u8; 8192];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let _ = tx.send(String::from_utf8_lossy(&got).to_string());
            let _ = s.write_all(reply);
        }
    });
    (port, rx)
}

#[test]
fn junit_names_are_unique_over_several_urls_and_carry_no_query() {
    let s = Serve::start(&["--rate", "5"]);
    let ws = format!("ws://{}/ws?token=SECRET", s.addr);
    let sse = format!("http://{}/sse", s.addr);
    let out = rtcheck()
        .args([
            "probe", "--quick", "--public", "--format", "junit", &ws, &sse,
        ])
        .output()
        .unwrap();
    let xml = String::from_utf8(out.stdout).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let names: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| n.attribute("name").unwrap())
        .collect();
    let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    // 5 checks apply to a WebSocket URL, 6 to an SSE one; idle-timeout, heartbeat and
    // compression appear for both.
    assert_eq!(names.len(), 11, "{names:?}");
    assert!(
        names.contains(&format!("upgrade ws://{}/ws", s.addr).as_str()),
        "{names:?}"
    );
    assert!(
        names.contains(&format!("sse-buffering http://{}/sse", s.addr).as_str()),
        "{names:?}"
    );
    assert!(
        names.contains(&format!("compression http://{}/sse", s.addr).as_str()),
        "{names:?}"
    );
    assert!(
        !xml.contains("SECRET") && !names.iter().any(|n| n.contains('?')),
        "{xml}"
    );
}

#[test]
fn secrets_never_appear_in_any_output() {
    let s = Serve::start(&["--rate", "5"]);
    let secrets = ["SECRET-BEARER-123", "SECRET-COOKIE-456", "SECRET-QUERY-789"];
    let ws = format!("ws://{}/ws?token={}", s.addr, secrets[2]);
    let sse = format!("http://{}/sse?access_token={}&x=1", s.addr, secrets[2]);
    let dir = tempfile::tempdir().unwrap();
    let formats = ["text", "json", "yaml", "junit", "markdown", "github"];
    // One probe per format of the same server, each mostly waiting: all at once.
    let outs = std::thread::scope(|sc| {
        let runs = formats.map(|fmt| {
            let (file, ws, sse) = (dir.path().join(format!("out.{fmt}")), &ws, &sse);
            sc.spawn(move || {
                let out = rtcheck()
                    .args(["probe", "--quick", "--format", fmt])
                    .args(["--header", &format!("Authorization: Bearer {}", secrets[0])])
                    .args(["-H", &format!("Cookie: sid={}", secrets[1])])
                    .arg("-o")
                    .arg(&file)
                    .args([ws, sse])
                    .output()
                    .unwrap();
                (out, std::fs::read_to_string(&file).unwrap())
            })
        });
        runs.map(|r| r.join().unwrap())
    });
    for (fmt, (out, written)) in formats.into_iter().zip(outs) {
        let all = format!(
            "{written}{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if fmt == "markdown" {
            assert!(written.starts_with("# rtcheck probe\n"), "{written}");
            assert!(written.contains("| `upgrade` |"), "{written}");
        }
        if !matches!(fmt, "junit" | "github") {
            assert!(
                written.contains("token=***"),
                "{fmt}: URL shown redacted:\n{written}"
            );
        }
        for secret in secrets {
            assert!(!all.contains(secret), "{fmt} leaked {secret}:\n{all}");
        }
    }
    // The header really is sent (so the test above is not vacuous), and an error about
    // that peer does not print it either.
    let (port, rx) = capture_server(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
    let url = format!("ws://127.0.0.1:{port}/ws?token={}", secrets[2]);
    let out = rtcheck()
        .args(["probe", "--quick", "--format", "json", "-H"])
        .arg(format!("Authorization: Bearer {}", secrets[0]))
        .arg(&url)
        .output()
        .unwrap();
    let req = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        req.contains(secrets[0]) && req.contains(secrets[2]),
        "{req}"
    );
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for secret in secrets {
        assert!(!all.contains(secret), "leaked {secret}:\n{all}");
    }
    let closed = format!("http://127.0.0.1:{}/sse?token={}", free_port(), secrets[2]);
    let out = rtcheck()
        .args(["probe", "--quick", &closed])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !err.contains(secrets[2]) && err.contains("token=***"),
        "{err}"
    );
}

/// Probe `url` with `--timeout 2s`: exit 2, one line on stderr naming `expect`, quickly.
fn bad_peer(url: &str, expect: &str) {
    let t0 = Instant::now();
    let out = rtcheck()
        .args(["probe", "--quick", "--timeout", "2s", url])
        .output()
        .unwrap();
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{url}: {err}");
    assert!(out.stdout.is_empty(), "{url}: no report of nothing");
    assert_eq!(err.trim().lines().count(), 1, "{url}: one line: {err}");
    assert!(err.starts_with("rtcheck: error: "), "{err}");
    assert!(err.contains(expect), "{url}: `{expect}` in {err}");
    assert!(!err.contains("panicked"), "{err}");
    // One step bounded by 2 s (DNS, connect, request, response each): far below 15 s.
    assert!(took < Duration::from_secs(15), "{url}: {took:?}");
}

#[test]
fn bad_peers_fail_in_one_line_within_the_timeout() {
    bad_peer(&format!("http://127.0.0.1:{}/sse", free_port()), "refused");
    bad_peer("http://no-such-host.invalid/sse", "no-such-host.invalid");
    // TEST-NET-1: unroutable, either no answer or unreachable, bounded either way.
    bad_peer("http://192.0.2.1:81/sse", "192.0.2.1");
    // A non-HTTP answer, and a server that accepts and never answers.
    let (port, _rx) = capture_server(b"SSH-2.0-OpenSSH_9.2\r\n");
    bad_peer(
        &format!("http://127.0.0.1:{port}/sse"),
        "not an HTTP response",
    );
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let hold = std::thread::spawn(move || {
        let c = silent.accept();
        std::thread::sleep(Duration::from_secs(4));
        drop(c);
    });
    bad_peer(&format!("ws://127.0.0.1:{port}/ws"), "no answer within");
    hold.join().unwrap();
    // TLS to a plain-HTTP server.
    let s = Serve::start(&["--rate", "1"]);
    bad_peer(&format!("https://{}/sse", s.addr), "TLS handshake");
    // Bad flags: URL, header.
    let out = rtcheck().args(["probe", "ftp://x/"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = rtcheck()
        .args(["probe", "-H", "no colon here", "http://x/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn profile_transport_and_direct_comparison() {
    let s = Serve::start(&["--rate", "5", "--size", "256"]);
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.yaml");
    std::fs::write(&profile, "transport: sse\n").unwrap();
    // The profile says SSE: it fills what an http:// URL leaves open (an event stream, no
    // polling fallback).
    let sse = format!("http://{}/sse", s.addr);
    let direct = format!("http://{}/sse", s.addr);
    let (r, code, _) = probe_json(&[
        "--quick",
        "--profile",
        profile.to_str().unwrap(),
        "--direct",
        &direct,
        &sse,
    ]);
    let ctx = summary(&r);
    assert_eq!(code, 0, "{ctx}");
    assert_eq!(status(&r, "sse-buffering", "http://"), "pass", "{ctx}");
    let f = &r["findings"][0];
    assert!(
        f["observed"]
            .as_str()
            .unwrap()
            .contains("direct: first event after"),
        "{f}"
    );
    assert_eq!(r["profile"]["transport"], "sse");

    // An explicit ws:// is never rewritten by the profile: probed as WebSocket, at ws://.
    let ws = format!("ws://{}/ws", s.addr);
    let (r, code, _) = probe_json(&["--quick", "--profile", profile.to_str().unwrap(), &ws]);
    let ctx = summary(&r);
    assert_eq!(code, 0, "{ctx}");
    assert_eq!(status(&r, "upgrade", "ws://"), "pass", "{ctx}");
    assert!(
        !ctx.contains("http://"),
        "the ws:// URL was probed as http: {ctx}"
    );
}

/// An event stream whose head comes only after 2 s together with a buffer of 5 events
/// (what a buffering proxy does with a slow stream), then an event every 200 ms.
fn late_head(s: &mut std::net::TcpStream, _req: &str, stopped: &dyn Fn() -> bool) {
    late_head_with(s, stopped, 5)
}

/// A server that sends its head only with its first event (Node's res.writeHead without
/// flushHeaders), 2 s after the request: not the path's doing.
fn head_with_first_write(s: &mut std::net::TcpStream, _req: &str, stopped: &dyn Fn() -> bool) {
    late_head_with(s, stopped, 1)
}

fn late_head_with(s: &mut std::net::TcpStream, stopped: &dyn Fn() -> bool, burst: u64) {
    if !pause(Duration::from_secs(2), stopped) {
        return;
    }
    let mut first = String::from(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n",
    );
    for i in 1..=burst {
        first.push_str(&format!("id: {i}\ndata: tick {i}\n\n"));
    }
    if s.write_all(first.as_bytes()).is_err() || !pause(Duration::from_millis(200), stopped) {
        return;
    }
    for i in burst + 1..200 {
        let ev = format!("id: {i}\ndata: tick {i}\n\n");
        if s.write_all(ev.as_bytes()).is_err() || !pause(Duration::from_millis(200), stopped) {
            return;
        }
    }
}

fn finding<'a>(r: &'a serde_json::Value, id: &str, url_part: &str) -> &'a serde_json::Value {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id && f["title"].as_str().unwrap().contains(url_part))
        .unwrap_or_else(|| panic!("no finding {id} for {url_part} in {r:#}"))
}

#[test]
fn an_error_status_is_a_finding_never_a_pass() {
    let s = Serve::start(&["--rate", "5"]);
    // 502: nginx in front of a port nothing listens on.
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {{DIR}}/nginx.pid;\nevents {{ worker_connections 64; }}\n\
http {{\n  access_log off;\n  client_body_temp_path {{DIR}}/body; proxy_temp_path {{DIR}}/proxy;\n\
  fastcgi_temp_path {{DIR}}/fcgi; uwsgi_temp_path {{DIR}}/uwsgi; scgi_temp_path {{DIR}}/scgi;\n\
  server {{\n    listen 127.0.0.1:{{PORT}};\n    location / {{ proxy_pass http://127.0.0.1:{}; }}\n  }}\n}}\n",
        free_port()
    );
    let nginx = Proxy::start(Kind::Nginx, &conf);
    let typo = format!("http://{}/sse-typo", s.addr);
    let down = nginx.url("http", "/sse");
    let (r, code, _) = probe_json(&["--quick", &typo, &down]);
    let ctx = summary(&r);
    assert_eq!(code, 1, "{ctx}");
    for (url, st) in [(&typo, 404.0), (&down, 502.0)] {
        let f = finding(&r, "response", url);
        assert_eq!(f["status"], "fail", "{ctx}");
        assert_eq!(f["numbers"]["status"], st, "{ctx}");
        // Not probed as polling, and nothing of that URL passes.
        assert_ne!(status(&r, "sse-buffering", url), "pass", "{ctx}");
    }
    assert_eq!(r["summary"]["pass"], 0, "{ctx}");
    // The fix follows the status: a route for the 404, the backend for nginx's 502, in
    // nginx's language (nginx named itself).
    let f = finding(&r, "response", &typo);
    assert!(
        f["fix"]["summary"].as_str().unwrap().contains("no route"),
        "{f}"
    );
    let f = finding(&r, "response", &down);
    let fix = f["fix"].to_string();
    assert!(
        fix.contains("could not get an answer from the backend"),
        "{fix}"
    );
    assert!(fix.contains("nginx (location): proxy_pass"), "{fix}");
    assert!(!fix.contains("haproxy"), "{fix}");
}

#[test]
fn an_unreachable_url_is_its_own_finding_and_the_others_are_kept() {
    let s = Serve::start(&["--rate", "5"]);
    let good = format!("http://{}/sse", s.addr);
    let closed = format!("http://127.0.0.1:{}/sse", free_port());
    let (r, code, err) = probe_json(&["--quick", &closed, &good]);
    let ctx = summary(&r);
    assert_eq!(code, 1, "{ctx}\n{err}");
    let f = finding(&r, "reachable", &closed);
    assert_eq!(f["status"], "fail", "{ctx}");
    let observed = f["observed"].as_str().unwrap();
    assert!(observed.starts_with("connect step failed"), "{observed}");
    assert!(observed.contains("refused"), "{observed}");
    assert_eq!(status(&r, "sse-buffering", &good), "pass", "{ctx}");
    assert_eq!(status(&r, "resume", &good), "pass", "{ctx}");
}

#[test]
fn a_held_response_head_is_buffering_not_a_runtime_error() {
    let stub = Stub::start(late_head);
    let url = stub.url("/events");
    // Held 2 s, within --head-timeout: measured and failed.
    let (r, code, err) = probe_json(&["--quick", "--timeout", "1s", &url]);
    let ctx = summary(&r);
    assert_eq!(code, 1, "{ctx}\n{err}");
    let f = finding(&r, "sse-buffering", "/events");
    assert_eq!(f["status"], "fail", "{ctx}");
    let held = f["numbers"]["head_ms"].as_f64().unwrap();
    assert!((1900.0..30_000.0).contains(&held), "{held}\n{ctx}");
    assert!(
        f["observed"].as_str().unwrap().contains("head held"),
        "{ctx}"
    );
    // Held past --head-timeout: still a finding for that URL, with the bound.
    let (r, code, _) = probe_json(&["--quick", "--head-timeout", "1s", "--timeout", "1s", &url]);
    let ctx = summary(&r);
    assert_eq!(code, 1, "{ctx}");
    let f = finding(&r, "sse-buffering", "/events");
    assert_eq!(f["status"], "fail", "{ctx}");
    assert_eq!(f["numbers"]["head_held_ms"], 1000.0, "{ctx}");
    assert!(
        f["observed"]
            .as_str()
            .unwrap()
            .contains("head held more than 1.0 s"),
        "{ctx}"
    );
    // The checks that needed the stream say why they measured nothing, not vanish.
    for id in ["resume", "compression", "heartbeat"] {
        let f = finding(&r, id, "/events");
        assert_eq!(f["status"], "skip", "{id}: {ctx}");
        let reason = f["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("sse-buffering"), "{id}: {reason}");
    }
    // A head that came with the server's first write alone is the server's: a warning
    // that says so, not the path blamed.
    let stub = Stub::start(head_with_first_write);
    let (r, _, _) = probe_json(&["--quick", "--timeout", "1s", &stub.url("/events")]);
    let f = finding(&r, "sse-buffering", "/events");
    assert_eq!(f["status"], "warn", "{}", summary(&r));
    assert!(
        f["observed"].as_str().unwrap().contains("first write"),
        "{f}"
    );
}

#[test]
fn a_run_that_measured_nothing_is_no_verdict() {
    let s = Serve::start(&["--rate", "5"]);
    let health = format!("http://{}/healthz", s.addr);
    // A health check is probed as polling: its answers are measured (text/plain is not a
    // poll body), so that run has a verdict.
    let (r, _, _) = probe_json(&["--quick", &health]);
    assert_eq!(
        finding(&r, "poll-status", "/healthz")["status"],
        "warn",
        "{}",
        summary(&r)
    );
    // With the polling checks skipped nothing is left measured: no verdict, never PASS.
    let skip = "poll-status,poll-cache,poll-conditional,poll-latency,poll-overhead";
    let (r, code, _) = probe_json(&["--quick", "--skip", skip, &health]);
    let ctx = summary(&r);
    assert_eq!(code, 1, "{ctx}");
    assert_eq!(r["summary"]["pass"], 0, "{ctx}");
    let f = finding(&r, "measured", "/healthz");
    assert_eq!(f["status"], "fail", "{ctx}");
    let out = rtcheck()
        .args(["probe", "--quick", "--skip", skip, &health])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("rtcheck probe NO VERDICT"), "{text}");
    assert_eq!(out.status.code(), Some(1));
}

/// A foreign SSE server whose ids are per connection: 1, 2, 3... on every connection,
/// whatever Last-Event-ID says (the way tutorials write it).
fn per_connection_ids(s: &mut std::net::TcpStream, _req: &str, stopped: &dyn Fn() -> bool) {
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
    if s.write_all(head.as_bytes()).is_err() {
        return;
    }
    for i in 1..300 {
        let ev = format!("id: {i}\ndata: {{\"price\": {i}}}\n\n");
        if s.write_all(ev.as_bytes()).is_err() || !pause(Duration::from_millis(100), stopped) {
            return;
        }
    }
}

#[test]
fn foreign_sse_ids_are_the_sequence_a_restart_fails_resume() {
    let stub = Stub::start(per_connection_ids);
    let (r, code, _) = probe_json(&["--quick", &stub.url("/prices")]);
    let ctx = summary(&r);
    assert_eq!(code, 1, "{ctx}");
    let f = finding(&r, "resume", "/prices");
    assert_eq!(f["status"], "fail", "{ctx}");
    let o = f["observed"].as_str().unwrap();
    assert!(o.contains("at or below"), "{o}");
    assert_eq!(status(&r, "sse-buffering", "/prices"), "pass", "{ctx}");
}

#[test]
fn a_websocket_probe_says_what_arrived_and_how_often() {
    let s = Serve::start(&["--rate", "5"]);
    let (r, _, _) = probe_json(&["--quick", "--public", &format!("ws://{}/ws", s.addr)]);
    let f = finding(&r, "upgrade", "/ws");
    let ctx = summary(&r);
    assert_eq!(f["status"], "pass", "{ctx}");
    assert!(f["numbers"]["messages"].as_f64().unwrap() >= 2.0, "{f}");
    let every = f["numbers"]["message_interval_s"].as_f64().unwrap();
    assert!((0.05..=1.0).contains(&every), "5/s: {every}\n{f}");
    assert!(
        f["observed"]
            .as_str()
            .unwrap()
            .contains("message(s) received, every"),
        "{f}"
    );
}

/// The Last-Event-ID a request sent, as a number (0: none).
fn last_event_id(req: &str) -> u64 {
    req.lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("last-event-id")
                .then(|| v.trim().parse().ok())
                .flatten()
        })
        .unwrap_or(0)
}

/// A gzip-compressed event stream (chunked), resuming after Last-Event-ID. `flush`: each
/// event is sync-flushed out of the compressor (nginx `gzip on` + `proxy_buffering off`);
/// otherwise the compressor keeps it (a compressor waiting for its buffer to fill).
fn gzip_stream(s: &mut std::net::TcpStream, req: &str, stopped: &dyn Fn() -> bool, flush: bool) {
    use flate2::{write::GzEncoder, Compression};
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n";
    if s.write_all(head.as_bytes()).is_err() {
        return;
    }
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    for i in last_event_id(req) + 1..300 {
        gz.write_all(format!("id: {i}\ndata: {{\"n\": {i}}}\n\n").as_bytes())
            .unwrap();
        if flush {
            gz.flush().unwrap();
        }
        let out = std::mem::take(gz.get_mut());
        if !out.is_empty() {
            let mut chunk = format!("{:x}\r\n", out.len()).into_bytes();
            chunk.extend_from_slice(&out);
            chunk.extend_from_slice(b"\r\n");
            if s.write_all(&chunk).is_err() {
                return;
            }
        }
        if !pause(Duration::from_millis(300), stopped) {
            return;
        }
    }
}

fn gzip_flushed(s: &mut std::net::TcpStream, req: &str, stopped: &dyn Fn() -> bool) {
    gzip_stream(s, req, stopped, true)
}

/// Flushed on the first connection, held on a reconnect (Caddy `encode gzip` with a
/// replay: the compressor keeps the small replay).
fn gzip_held_on_reconnect(s: &mut std::net::TcpStream, req: &str, stopped: &dyn Fn() -> bool) {
    gzip_stream(s, req, stopped, last_event_id(req) == 0)
}

#[test]
fn a_compressed_but_flushed_stream_is_a_compression_warning_with_its_cadence() {
    let stub = Stub::start(gzip_flushed);
    let (r, _, _) = probe_json(&["--quick", "--timeout", "4s", &stub.url("/gz")]);
    let ctx = summary(&r);
    // Decoded: the events are timed themselves, so this is not buffering...
    assert_eq!(status(&r, "sse-buffering", "/gz"), "pass", "{ctx}");
    // ... and resume is measured through the compression.
    assert_eq!(status(&r, "resume", "/gz"), "pass", "{ctx}");
    let f = finding(&r, "compression", "/gz");
    assert_eq!(f["status"], "warn", "{ctx}");
    let cadence = f["numbers"]["cadence_s"].as_f64().unwrap();
    assert!(
        (0.2..=1.0).contains(&cadence),
        "every 0.3 s: {cadence}\n{ctx}"
    );
    let o = f["observed"].as_str().unwrap();
    assert!(o.contains("gzip, flushed per event"), "{o}");
    assert!(o.contains("reconnect: Content-Encoding gzip"), "{o}");
}

#[test]
fn compression_is_checked_on_the_reconnect_too() {
    let stub = Stub::start(gzip_held_on_reconnect);
    let (r, code, _) = probe_json(&["--quick", "--timeout", "3s", &stub.url("/gz")]);
    let ctx = summary(&r);
    assert_eq!(code, 1, "{ctx}");
    let f = finding(&r, "compression", "/gz");
    assert_eq!(f["status"], "fail", "{ctx}");
    let o = f["observed"].as_str().unwrap();
    assert!(
        o.contains("reconnect: Content-Encoding gzip, no event decoded"),
        "{o}"
    );
    // The stuck replay is the compressor's, not the server's resume.
    let f = finding(&r, "resume", "/gz");
    assert_eq!(f["status"], "skip", "{ctx}");
    assert!(f["reason"].as_str().unwrap().contains("compression"), "{f}");
}

/// Answers a WebSocket upgrade with the status in the request path (`/s403`...).
fn status_from_path(s: &mut std::net::TcpStream, req: &str, _: &dyn Fn() -> bool) {
    let code: u16 = req
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.strip_prefix("/s"))
        .and_then(|c| c.parse().ok())
        .unwrap_or(500);
    let body = "<html>nope</html>";
    let _ = s.write_all(
        format!(
            "HTTP/1.1 {code} X\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
}

#[test]
fn the_upgrade_fix_follows_the_status() {
    let stub = Stub::start(status_from_path);
    let ws = |c: u16| format!("ws://127.0.0.1:{}/s{c}", stub.port);
    let urls: Vec<String> = [400, 403, 404, 502, 200].iter().map(|c| ws(*c)).collect();
    let mut args = vec!["--quick"];
    args.extend(urls.iter().map(String::as_str));
    let (r, code, _) = probe_json(&args);
    let ctx = summary(&r);
    assert_eq!(code, 1, "{ctx}");
    let fix = |c: u16| {
        let f = finding(&r, "upgrade", &format!("/s{c}"));
        assert_eq!(f["status"], "fail", "{ctx}");
        assert_eq!(f["numbers"]["status"], c as f64, "{f}");
        format!("{} | {}", f["fix"]["summary"], f["observed"])
    };
    assert!(
        fix(400).contains("dropped Upgrade/Connection"),
        "{}",
        fix(400)
    );
    let f403 = fix(403);
    assert!(
        f403.contains("Origin") && f403.contains("sent Host: 127.0.0.1"),
        "{f403}"
    );
    assert!(!f403.contains("forward the Upgrade"), "{f403}");
    assert!(fix(404).contains("no route"), "{}", fix(404));
    assert!(fix(502).contains("backend"), "{}", fix(502));
    assert!(
        fix(200).contains("answered the upgrade itself"),
        "{}",
        fix(200)
    );
}

#[test]
fn urls_are_probed_at_once_and_direct_pairs_per_url_websocket_too() {
    let quiet = Serve::start(&["--wait-start", "--ping", "1s"]);
    let other = Serve::start(&["--rate", "5"]);
    let ws = format!("ws://{}/ws", quiet.addr);
    let sse = format!("http://{}/sse", other.addr);
    // Each URL its own direct endpoint: the WebSocket one by name, the SSE one by position.
    let ws_direct = format!("{ws}=ws://{}/ws", other.addr);
    let sse_direct = sse.clone();
    let (r, code, err) = probe_json(&[
        "--idle-for",
        "4s",
        "--public",
        "--direct",
        &ws_direct,
        "--direct",
        &sse_direct,
        &ws,
        &sse,
    ]);
    let ctx = summary(&r);
    assert_eq!(code, 0, "{ctx}\n{err}");
    // Both idle tests ran at once: each began before the other ended.
    let span = |url: &str| {
        let f = finding(&r, "idle-timeout", url);
        let start = f["numbers"]["started_s"].as_f64().unwrap();
        (start, start + f["numbers"]["held_s"].as_f64().unwrap())
    };
    let (a, b) = (span(&ws), span(&sse));
    assert!(
        a.0 < b.1 && b.0 < a.1,
        "not overlapping: {a:?} {b:?}\n{ctx}"
    );
    // The SSE URL was compared with its own direct endpoint, not the WebSocket's.
    let f = finding(&r, "sse-buffering", &sse);
    assert!(
        f["observed"]
            .as_str()
            .unwrap()
            .contains("direct: first event after"),
        "{f}"
    );
    // Too many bare --direct values: a usage error.
    let out = rtcheck()
        .args([
            "probe",
            "--quick",
            "--direct",
            &sse_direct,
            "--direct",
            &sse_direct,
        ])
        .arg(&sse)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("more direct endpoints than URLs"));
}

#[test]
fn a_websocket_refused_through_the_path_but_accepted_directly_blames_the_path() {
    let stub = Stub::start(status_from_path);
    let s = Serve::start(&["--rate", "5"]);
    let url = format!("ws://127.0.0.1:{}/s403", stub.port);
    let direct = format!("ws://{}/ws", s.addr);
    let (r, _, _) = probe_json(&["--quick", "--direct", &direct, &url]);
    let f = finding(&r, "upgrade", "/s403");
    assert_eq!(f["status"], "fail", "{}", summary(&r));
    let fix = f["fix"].to_string();
    assert!(
        fix.contains("accepts the request directly (direct: 101)"),
        "{fix}"
    );
    assert!(fix.contains("Host"), "{fix}");
    assert!(
        f["observed"].as_str().unwrap().contains("direct: 101"),
        "{f}"
    );
}

#[test]
fn a_threshold_on_a_skipped_check_fails_and_an_unknown_check_is_exit_2() {
    // Probed as polling, idle-timeout is skipped: a threshold on it is not measured, a fail.
    let s = Serve::start(&["--rate", "5"]);
    let poll = format!("http://{}/poll?since=0", s.addr);
    let (r, code, err) = probe_json(&[
        "--quick",
        "--threshold",
        "idle-timeout.numbers.idle < 1s",
        &poll,
    ]);
    assert_eq!(code, 1, "{err}");
    let t = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "threshold:idle-timeout.numbers.idle<1s")
        .unwrap_or_else(|| panic!("no threshold finding: {}", summary(&r)));
    assert_eq!(t["status"], "fail", "{t}");
    assert!(
        t["observed"].as_str().unwrap().contains("not measured"),
        "{t}"
    );
    let out = rtcheck()
        .args([
            "probe",
            "--quick",
            "--threshold",
            "nope.numbers.x < 1",
            &poll,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("--threshold 'nope.numbers.x < 1'") && e.contains("findings"),
        "{e}"
    );
}
