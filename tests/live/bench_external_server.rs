//! `bench fanout --server` against a minimal WebSocket server written here (not rtcheck's):
//! no /control endpoints, publishes the public payload once every client is connected.
use crate::common;
use futures_util::SinkExt;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

const CLIENTS: usize = 40;
const ROUNDS: u64 = 5;

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Accept WebSocket clients; once CLIENTS are in, publish ROUNDS at 20/s, each stamped with
/// its scheduled time. Anything that is not a WebSocket upgrade (bench's /control probes)
/// fails the handshake and is dropped.
async fn serve(listener: tokio::net::TcpListener) {
    let (tx, _) = tokio::sync::broadcast::channel::<Vec<u8>>(64);
    let joined = Arc::new(AtomicUsize::new(0));
    let ready = Arc::new(tokio::sync::Notify::new());
    {
        let (tx, ready) = (tx.clone(), ready.clone());
        tokio::spawn(async move {
            ready.notified().await;
            let start = now_ns() + 50_000_000;
            for seq in 1..=ROUNDS {
                let sched = start + (seq - 1) * 50_000_000;
                while now_ns() < sched {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                let _ = tx.send(rtcheck_wire::payload::encode(1024, seq, sched));
            }
        });
    }
    loop {
        let Ok((sock, _)) = listener.accept().await else {
            return;
        };
        let (mut rx, joined, ready) = (tx.subscribe(), joined.clone(), ready.clone());
        tokio::spawn(async move {
            let _ = sock.set_nodelay(true);
            let Ok(mut ws) = tokio_tungstenite::accept_async(sock).await else {
                return;
            };
            if joined.fetch_add(1, Ordering::SeqCst) + 1 == CLIENTS {
                ready.notify_one();
            }
            while let Ok(b) = rx.recv().await {
                if ws.send(Message::Binary(b.into())).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// `bench fanout --server` against the server above at the given --rate: (exit code, JSON).
fn bench_at(rate: &str) -> (Option<i32>, Value, String) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(serve(listener));
    let url = format!("ws://{addr}/ws");
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .args([
            "bench", "fanout", "--server", &url, "--format", "json", "--drain", "2s",
        ])
        .args([
            "--connections",
            &CLIENTS.to_string(),
            "--rounds",
            &ROUNDS.to_string(),
        ])
        .args(["--rate", rate])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    (out.status.code(), v, err)
}

#[test]
fn a_server_publishing_at_another_rate_is_invalid_not_a_number() {
    let _timed = common::timed();
    // The server publishes every 50 ms (20/s); the run says 10/s.
    let (_, v, err) = bench_at("10");
    let s = &v["scenarios"][0];
    assert_eq!(s["valid"], false, "{s:#}\n{err}");
    assert!(
        s["p50_ms"].is_null(),
        "an invalid run prints no latency: {s:#}"
    );
    let c = s["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "server schedule")
        .unwrap_or_else(|| panic!("no server schedule check: {s:#}"));
    assert_eq!(c["status"], "fail", "{c}");
    assert!(
        c["detail"].as_str().unwrap().contains("every 50.0 ms"),
        "{c}"
    );
}

#[test]
fn measures_a_server_without_control_endpoints() {
    let _timed = common::timed();
    let (code, v, err) = bench_at("20");
    assert_eq!(code, Some(0), "{err}");
    let s = &v["scenarios"][0];
    assert_eq!(s["name"], "external");
    assert_eq!(s["valid"], true, "{s:#}");
    assert_eq!(s["accounting"]["received"], CLIENTS as u64 * ROUNDS);
    assert_eq!(s["rounds_completed"], ROUNDS);
    assert_eq!(s["slow_clients"], 0);
    // No /control/stats: the hub's own columns are empty, and NODELAY is only half known.
    for k in ["hub_max_ms", "drops", "removed"] {
        assert!(s[k].is_null(), "{k}: {}", s[k]);
    }
    // Its process is read from outside: this test process holds the listener.
    let p = &s["server_process"];
    assert_eq!(p["pids"], serde_json::json!([std::process::id()]), "{p:#}");
    assert_eq!(s["server_rss_mb"], p["rss_peak_mb"], "{s:#}");
    assert!(s["server_rss_mb"].as_f64().unwrap() > 1.0, "{s:#}");
    assert_eq!(s["server_cpu_s"], p["cpu_s"], "{s:#}");
    let nd = s["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "TCP_NODELAY")
        .unwrap();
    assert_eq!(nd["status"], "warn");
    let p50 = s["p50_ms"].as_f64().unwrap();
    assert!(p50 > 0.0 && p50 <= s["max_ms"].as_f64().unwrap());
}

/// Completes the WebSocket handshake, then never sends a frame (holds the socket open).
async fn serve_silent(listener: tokio::net::TcpListener) {
    use futures_util::StreamExt;
    loop {
        let Ok((sock, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(async move {
            let _ = sock.set_nodelay(true);
            let Ok(mut ws) = tokio_tungstenite::accept_async(sock).await else {
                return;
            };
            // Read (and discard) until the client goes away; write nothing.
            while let Some(Ok(_)) = ws.next().await {}
        });
    }
}

#[test]
fn a_silent_server_is_invalid_with_no_latency() {
    let _timed = common::timed();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(serve_silent(listener));
    let url = format!("ws://{addr}/ws");
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .args([
            "bench", "fanout", "--server", &url, "--format", "json", "--drain", "1s",
        ])
        .args(["--connections", "10", "--rounds", "3", "--rate", "20"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["valid"], false);
    let s = &v["scenarios"][0];
    assert_eq!(s["valid"], false, "{s:#}");
    assert_eq!(s["samples"], 0);
    assert_eq!(s["accounting"]["received"], 0);
    assert_eq!(s["accounting"]["expected"], 30);
    for k in ["p50_ms", "p99_ms", "p999_ms", "max_ms"] {
        assert!(s[k].is_null(), "{k}: {}", s[k]);
    }
    let checks = s["checks"].as_array().unwrap();
    let status = |name: &str| {
        checks
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["status"].as_str().unwrap().to_string())
    };
    assert_eq!(status("samples received").as_deref(), Some("fail"));
    assert_eq!(status("accounting identity").as_deref(), Some("pass"));
    // Nothing of ours to stop: the cleanup line says so instead of claiming a SIGTERM.
    let cleanup = checks.iter().find(|c| c["name"] == "cleanup").unwrap();
    let detail = cleanup["detail"].as_str().unwrap();
    assert!(
        detail.contains("external server: not ours to stop") && !detail.contains("SIGTERM"),
        "{detail}"
    );
}
