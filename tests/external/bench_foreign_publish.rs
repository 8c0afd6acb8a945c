//! `bench fanout --server URL --publish ws|'POST URL'` against hubs rtcheck did not write
//! (tests/fixtures/foreign/, built from Debian packages): the shape rtcheck reports for
//! each is checked against what each was built to do, and what rtcheck counts against
//! the fixture's own count of frames it sent (GET /stats).
//! - gorilla_shards.go without a write deadline (the seed's C1 hub): stops (C1 shape);
//! - the same with a 300 ms deadline: gaps, then recovery (C2 shape);
//! - gorilla's chat example (write pump, per-client channel): healthy clients stay
//!   within a bound; too little sent to show the queue's bound: not called C3;
//! - node `ws` broadcast with POST /publish and a secret header: every frame counted,
//!   the header's value never printed.
use crate::common;
use crate::foreign_common;
use foreign_common::*;
use serde_json::Value;
use std::time::Duration;

const CHAT: &str = r#"{"type":"msg","text":"{seq} {ts} {pad}"}"#;

/// `bench fanout --server URL ARGS --format json`: (exit code, report, stdout, stderr).
fn bench(url: &str, args: &[&str]) -> (Option<i32>, Value, String) {
    let out = common::rtcheck()
        .args(["bench", "fanout", "--server", url, "--format", "json"])
        .args(["--drain", "2s", "--connections", "60", "--rate", "20"])
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}); stderr: {err}"));
    (out.status.code(), v, text + &err)
}

fn run<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no run {name}: {report:#}"))
}

/// The checks that failed, for an assertion's message.
fn failed(s: &Value) -> Vec<&Value> {
    s["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["status"] == "fail")
        .collect()
}

fn received(s: &Value) -> u64 {
    s["accounting"]["received"].as_u64().unwrap()
}

fn sent(f: &Foreign) -> u64 {
    fixture_stats(f)["sent"].as_u64().unwrap()
}

/// One scenario NAME of [`bench`] on `hub` at `url`: (exit code, the scenario, output, the hub's
/// count of frames sent just before that run). On a loaded host the publisher can fall
/// behind its schedule and the run is rightly INVALID (seen 2026-12-07 beside other
/// work): up to three runs, a new one only when every failed check is the load side's
/// schedule ([`common::late_only`]); the last is returned.
fn scenario(
    hub: &Foreign,
    url: &str,
    args: &[&str],
    name: &str,
) -> (Option<i32>, Value, String, u64) {
    let mut runs = 0;
    loop {
        runs += 1;
        let before = sent(hub);
        let (code, r, out) = bench(url, args);
        let s = run(&r, name).clone();
        if runs == 3 || !common::late_only(&s) {
            return (code, s, out, before);
        }
    }
}

/// `late_only` reruns a run failed only by the load side's schedule, not one whose hub
/// sent the wrong sizes or period ("server schedule"), alone or beside a late publisher.
#[test]
fn late_only_is_the_load_sides_schedule_not_the_hubs() {
    let _timed = common::timed();
    let run = |failed: &[&str]| {
        let checks: Vec<Value> = failed
            .iter()
            .map(|n| serde_json::json!({"name": n, "status": "fail"}))
            .chain([serde_json::json!({"name": "samples received", "status": "pass"})])
            .collect();
        serde_json::json!({"valid": false, "checks": checks})
    };
    assert!(common::late_only(&run(&["publisher schedule"])));
    assert!(common::late_only(&run(&[
        "round start drift",
        "load generator CPU"
    ])));
    assert!(!common::late_only(&run(&["server schedule"])));
    assert!(!common::late_only(&run(&[
        "publisher schedule",
        "server schedule"
    ])));
    assert!(!common::late_only(&run(&[])), "invalid for no failed check");
}

/// A (all healthy) then C (slow clients) on one hub through `--publish ws`: A must be
/// valid with every frame the hub wrote counted (`echo`: the hub also writes to the
/// publisher, one frame a round), then the C run's shape.
fn a_then_c(hub: &Foreign, echo: bool, size: &str, extra: &[&str]) -> (Value, Value) {
    let mut args = vec!["--publish", "ws", "--message", CHAT];
    args.extend(["--seq-path", "text", "--ts-path", "text", "--size", size]);
    args.extend(["--rounds", "40"]);
    args.extend(extra);
    let url = hub.url("ws", "/ws");
    let (code, a, out, before) =
        scenario(hub, &url, &[&args[..], &["--scenario", "A"]].concat(), "A");
    assert_eq!(code, Some(0), "{:#?}\n{out}", failed(&a));
    assert_eq!(a["valid"], true, "{a:#}");
    assert_eq!(received(&a), 60 * 40, "{a:#}");
    // A chat hub also writes each round back to the publisher's connection; the last
    // one may meet that connection already closed (rtcheck stops once every client has
    // the last round), so the hub's count is the clients' plus 39 or 40 then.
    let copies: u64 = if echo { 40 } else { 0 };
    let hub_sent = sent(hub) - before;
    assert!(
        (received(&a) + copies.saturating_sub(1)..=received(&a) + copies).contains(&hub_sent),
        "the hub's own count of frames written: {hub_sent}, rtcheck received {}",
        received(&a)
    );
    let (_, c, out, _) = scenario(
        hub,
        &url,
        &[&args[..], &["--scenario", "C", "--slow", "10"]].concat(),
        "C",
    );
    assert_eq!(c["valid"], true, "{:#?}\n{out}", failed(&c));
    assert_eq!(c["slow_clients"], 10);
    (a, c)
}

#[test]
fn a_hub_without_write_deadline_stops_c1_shape() {
    let _timed = common::timed();
    let hub = gorilla_shards(&[("SNDBUF", "4096")]);
    let (_, c) = a_then_c(&hub, true, "4096", &[]);
    assert_eq!(c["shape"]["shape"], "C1", "{c:#}");
    assert_eq!(c["shape"]["evidence"], "scenario-c1");
    let v = c["shape"]["verdict"].as_str().unwrap();
    assert!(v.starts_with("hub stopped at round "), "{v}");
    assert!(v.ends_with("(C1 shape: no write deadline)"), "{v}");
    assert!(c["notes"][0]
        .as_str()
        .unwrap()
        .contains("[evidence: scenario-c1]"));
    // Healthy clients really waited: rounds missed or over a second late.
    let stalled = c["accounting"]["stalled"].as_u64().unwrap();
    assert!(
        stalled > 0 || c["max_ms"].as_f64().unwrap() > 1000.0,
        "{c:#}"
    );
}

#[test]
fn a_deadline_bounds_the_stall_c2_shape() {
    let _timed = common::timed();
    let hub = gorilla_shards(&[("SNDBUF", "4096"), ("WRITE_DEADLINE_MS", "300")]);
    let (_, c) = a_then_c(&hub, true, "4096", &[]);
    assert_eq!(c["shape"]["shape"], "C2", "{c:#}");
    assert!(c["shape"]["verdict"]
        .as_str()
        .unwrap()
        .contains("(C2 shape: a deadline of "));
    // Bounded: the slow clients are dropped after the deadline, every round arrives.
    assert_eq!(c["accounting"]["stalled"], 0, "{c:#}");
    assert!(fixture_stats(&hub)["dropped"].as_u64().unwrap() >= 10);
}

/// The chat example bounds each client's queue (256 messages, then removal), but 40
/// rounds of 400 B sit in the socket buffers: nothing shows the bound yet, so the run
/// says it cannot tell C3 from unbounded buffering (never C3 on latency alone), measured
/// on the hub's own process (found by its port).
#[test]
fn the_chat_write_pump_keeps_healthy_clients_within_a_bound_not_c3_on_latency() {
    let _timed = common::timed();
    // The example's read limit is 512 bytes: the message fits it.
    let hub = gorilla_hub(&[]);
    let (_, c) = a_then_c(&hub, true, "400", &[]);
    assert_eq!(c["shape"]["shape"], "undetermined", "{c:#}");
    let v = c["shape"]["verdict"].as_str().unwrap();
    assert!(v.contains("socket buffers can hold"), "{v}");
    assert!(v.contains("Send them more"), "{v}");
    assert!(c["server_process"]["found_by"]
        .as_str()
        .unwrap()
        .contains("the listener on 127.0.0.1:"));
    assert_eq!(
        received(&c),
        50 * 40,
        "every healthy client got every round"
    );
    assert!(c["p999_ms"].as_f64().unwrap() < 500.0, "{c:#}");
}

#[test]
fn node_ws_with_a_post_publish_api_counts_every_frame_and_hides_the_header() {
    let _timed = common::timed();
    let app = node_ws(&[]);
    // An API key in the query, as some publish APIs take it.
    let publish = format!("POST {}", app.url("http", "/publish?key=querys3cr3t"));
    let secret = "Bearer s3cr3t-t0ken-value";
    let auth = format!("Authorization: {secret}");
    let (code, a, out, before) = scenario(
        &app,
        &app.url("ws", "/ws"),
        &[
            "--publish",
            &publish,
            "-H",
            &auth,
            "--message",
            "news {marker} {pad}",
            "--size",
            "256",
            "--rounds",
            "40",
            "--scenario",
            "A",
        ],
        "A",
    );
    let a = &a;
    assert_eq!(code, Some(0), "{:#?}", failed(a));
    assert_eq!(received(a), 60 * 40);
    assert_eq!(
        sent(&app) - before,
        received(a),
        "node's own count of frames sent"
    );
    let p = &a["publisher"];
    assert_eq!(
        (p["sent"].as_u64(), p["failed"].as_u64()),
        (Some(40), Some(0))
    );
    assert!(
        !out.contains("s3cr3t"),
        "the header's or the key's value was printed"
    );
    assert!(p["via"]
        .as_str()
        .unwrap()
        .starts_with("POST http://127.0.0.1:"));
}

#[test]
fn a_refused_publish_is_invalid_and_named() {
    let _timed = common::timed();
    let app = node_ws(&[]);
    let publish = format!("POST {}", app.url("http", "/nope"));
    let (code, r, _) = bench(
        &app.url("ws", "/ws"),
        &["--publish", &publish, "--rounds", "10", "--scenario", "A"],
    );
    let a = run(&r, "A");
    assert_eq!(code, Some(1));
    assert_eq!(a["valid"], false);
    assert!(a["p99_ms"].is_null(), "an invalid run prints no figure");
    let c = a["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "publisher schedule")
        .unwrap();
    assert_eq!(c["status"], "fail");
    assert!(c["detail"].as_str().unwrap().contains("HTTP 426"), "{c:#}");
}

#[test]
fn bad_publishing_flags_are_one_line_and_exit_2() {
    let _timed = common::timed();
    for (args, want) in [
        (
            vec!["--publish", "ws", "--message", "no numbers {pad}"],
            "needs {seq} and {ts}",
        ),
        (vec!["--publish", "ws", "-H", "X: y"], "-H goes with"),
        (vec!["--scenario", "C1"], "C1, C2 and C3 are the shapes"),
        (vec!["--publish", "PUT http://127.0.0.1:1/x"], "--publish"),
        (
            vec!["--publish", "ws", "--seq-path", "text"],
            "goes together",
        ),
    ] {
        let out = common::rtcheck()
            .args(["bench", "fanout", "--server", "ws://127.0.0.1:9/ws"])
            .args(&args)
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        if !want.starts_with("--publish") {
            // (clap's own errors add a usage line.)
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        }
    }
}

#[test]
fn sse_subscribers_take_the_seq_from_the_event_id() {
    let _timed = common::timed();
    // The seq is express's event id, which goes on counting across runs: a run made
    // late by the busy host ([`common::late_only`]) is run again on a fresh app (up to
    // three), never on the same one.
    let mut runs = 0;
    let (app, code, a, out, before) = loop {
        runs += 1;
        let app = express_sse(&[]);
        let publish = format!("POST {}", app.url("http", "/publish"));
        let before = sent(&app);
        let (code, r, out) = bench(
            &app.url("http", "/live"),
            &[
                "--transport",
                "sse",
                "--publish",
                &publish,
                "--message",
                r#"{"ts":"{ts}","pad":"{pad}"}"#,
                "--ts-path",
                "ts",
                "--size",
                "512",
                "--rounds",
                "40",
                "--scenario",
                "A",
            ],
        );
        let a = run(&r, "A").clone();
        if runs == 3 || !common::late_only(&a) {
            break (app, code, a, out, before);
        }
    };
    let a = &a;
    assert_eq!(code, Some(0), "{:#?}\n{out}", failed(a));
    assert_eq!(received(a), 60 * 40);
    assert_eq!(sent(&app) - before, received(a), "express's own count");
}
