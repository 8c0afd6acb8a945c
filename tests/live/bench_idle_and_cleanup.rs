//! `rtcheck bench idle` values, markdown/text output parsed back, and Ctrl-C cleanup.
use crate::common;
use assert_cmd::Command;
use common::procs;
use serde_json::Value;
use std::time::Duration;

#[test]
fn idle_rss_per_connection_for_ws_and_sse() {
    let _timed = common::timed();
    let out = Command::cargo_bin("rtcheck")
        .unwrap()
        .args([
            "bench",
            "idle",
            "--connections",
            "150",
            "--settle",
            "500ms",
            "--format",
            "json",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["target_bytes_per_connection"], 6000);
    assert_eq!(v["reference"]["id"], "conn-ram");
    let rs = v["results"].as_array().unwrap();
    assert_eq!(
        rs.iter()
            .map(|r| r["protocol"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["ws", "sse"]
    );
    for r in rs {
        assert_eq!(r["valid"], true, "{r:#}");
        assert_eq!(r["connected"], 150);
        assert_eq!(r["server_clients_seen"], 150, "the server saw every client");
        let before = r["rss_before_bytes"].as_u64().unwrap();
        let after = r["rss_after_bytes"].as_u64().unwrap();
        let per = r["bytes_per_connection"].as_f64().unwrap();
        assert!(before > 0 && after >= before);
        // A relative tolerance: the value went through a float -> JSON text -> float trip.
        let want = (after - before) as f64 / 150.0;
        assert!(
            (per - want).abs() <= 1e-9 * want.abs().max(1.0),
            "bytes_per_connection {per} vs (after - before) / 150 = {want}"
        );
    }
}

#[test]
fn markdown_table_row_parses_back() {
    let _timed = common::timed();
    let out = Command::cargo_bin("rtcheck")
        .unwrap()
        .args([
            "bench",
            "fanout",
            "--connections",
            "50",
            "--rounds",
            "4",
            "--rate",
            "20",
            "--scenario",
            "A",
            "--no-floor",
            "--format",
            "markdown",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let md = String::from_utf8(out.stdout).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| A |"))
        .expect("a row for scenario A");
    let cols: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
    // The header names each column: the row has as many, each read by its name.
    let header = md
        .lines()
        .find(|l| l.starts_with("| scenario |"))
        .expect("a header");
    let names: Vec<&str> = header.trim_matches('|').split('|').map(str::trim).collect();
    assert_eq!(cols.len(), names.len(), "{header}\n{row}");
    let col = |name: &str| cols[names.iter().position(|n| *n == name).unwrap()];
    let p50: f64 = col("p50 (ms)").parse().unwrap();
    let p999: f64 = col("p99.9 (ms)").parse().unwrap();
    assert!(p50 > 0.0 && p999 >= p50, "{row}");
    assert_eq!(col("rounds"), "4/4");
    // A valid run: the verdict says so and the row withholds nothing.
    assert!(
        md.contains("**rtcheck bench fanout: every result valid (1 scenarios)**"),
        "{md}"
    );
    assert!(!row.contains("INVALID"), "{row}");
}

#[test]
fn ctrl_c_stops_server_and_load_generator() {
    let _timed = common::timed();
    // A 40 s scenario, interrupted once both children run.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rtcheck"))
        .args([
            "bench",
            "fanout",
            "--connections",
            "50",
            "--rounds",
            "200",
            "--rate",
            "5",
            "--scenario",
            "A",
            "--no-floor",
            "--format",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let kids = procs::wait_children(&mut child, 2, Duration::from_secs(20));
    assert_eq!(kids.len(), 2, "server and load generator processes");
    // To rtcheck alone: its guards must stop both children, within 30 s.
    let out = procs::sigint(child, false, Duration::from_secs(30));
    // 130 = 128 + SIGINT, as a shell reports a command stopped by Ctrl-C.
    assert_eq!(out.status.code(), Some(130));
    assert!(out.stdout.is_empty(), "no partial report");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("interrupted"), "{err}");
    for k in kids {
        assert!(
            procs::gone_within(k, Duration::from_secs(10)),
            "child {k} left running"
        );
    }
}
