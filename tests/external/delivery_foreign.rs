//! `verify delivery --server URL --publish ws|'POST URL'` against servers rtcheck did not
//! write (tests/fixtures/foreign/, from Debian's node-express and node-ws): rtcheck
//! publishes through the app's own path, its clients leave the four ways and come back
//! with the app's resume mechanism (or none), and what rtcheck counts as lost silently is
//! checked against the fixture's own count of what reconnecting clients were never sent
//! (GET /stats `missed`, from its publish counter and the position each client asked
//! for). Counts are read back from the JSON.
use crate::common;
use crate::foreign_common;
use foreign_common::*;
use serde_json::Value;
use std::time::Duration;

const KINDS: [&str; 4] = ["clean", "reset", "silent", "storm"];

/// `verify delivery --server URL ARGS --format json` at a small scale: (exit, report,
/// stdout + stderr).
fn delivery(url: &str, args: &[&str]) -> (Option<i32>, Value, String) {
    let out = common::rtcheck()
        .args(["verify", "delivery", "--server", url, "--format", "json"])
        .args([
            "--rate",
            "20",
            "--size",
            "256",
            "--max-disconnect",
            "1500ms",
        ])
        .args(["--connections", "4"])
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // Exit 2 is one line on stderr and no report.
    let v: Value = match out.status.code() {
        Some(2) => Value::Null,
        _ => {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}\n{err}"))
        }
    };
    (out.status.code(), v, text + &err)
}

fn run<'a>(r: &'a Value, delivery: &str, disconnect: &str) -> &'a Value {
    r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["delivery"] == delivery && x["disconnect"] == disconnect)
        .unwrap_or_else(|| panic!("no run {delivery} {disconnect}: {r:#}"))
}

fn n(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key} in {v:#}"))
}

/// Lost silently over the four foreign runs (the control is not counted by fixtures).
fn silent_in_runs(r: &Value) -> u64 {
    KINDS
        .iter()
        .map(|k| n(run(r, "foreign", k), "lost_silently"))
        .sum()
}

fn post(app: &Foreign) -> String {
    format!("POST {}", app.url("http", "/publish"))
}

#[test]
fn express_sse_that_honours_last_event_id_loses_nothing() {
    let _timed = common::timed();
    let app = express_sse(&[]);
    let (code, r, out) = delivery(
        &app.url("http", "/live-resume"),
        &["--publish", &post(&app)],
    );
    assert_eq!(code, Some(0), "{out}");
    for k in KINDS {
        let x = run(&r, "foreign", k);
        assert_eq!(x["case"], "last-event-id");
        assert_eq!((n(x, "lost"), n(x, "lost_silently")), (0, 0), "{x:#}");
        assert_eq!(x["status"], "pass", "{x:#}");
        assert!(n(x, "received") > 0);
    }
    // The control, back without Last-Event-ID, shows what the resume kept.
    let c = run(&r, "no-resume", "clean");
    assert!(n(c, "lost_silently") > 0, "{c:#}");
    let s = fixture_stats(&app);
    assert_eq!(n(&s, "missed"), 0, "{s}");
    // Every client of the four runs came back with its Last-Event-ID and was replayed to.
    assert_eq!(n(&s, "resumed"), 4 * 4, "{s}");
    assert!(n(&s, "replayed") > 0, "{s}");
    assert_eq!(n(&s, "published"), n(&r["publisher"], "sent"), "{s}");
    assert_eq!(r["publisher"]["failed"], 0);
    // The server's own process, found by its port and sampled through the runs.
    let sp = &r["server_process"];
    assert!(
        sp["found_by"]
            .as_str()
            .unwrap()
            .starts_with("node, the listener on 127.0.0.1:"),
        "{sp:#}"
    );
    assert!(
        n(sp, "samples") >= 3 && sp["rss_peak_mb"].as_f64().unwrap() > 1.0,
        "{sp:#}"
    );
    assert!(r["server_unmeasured"].is_null(), "{r:#}");
}

#[test]
fn express_sse_that_ignores_last_event_id_is_counted_lost_silently() {
    let _timed = common::timed();
    let app = express_sse(&[]);
    let (code, r, out) = delivery(&app.url("http", "/live"), &["--publish", &post(&app)]);
    assert_eq!(code, Some(1), "{out}");
    for k in KINDS {
        let x = run(&r, "foreign", k);
        assert!(n(x, "lost_silently") > 0, "{x:#}");
        assert_eq!(n(x, "lost"), n(x, "lost_silently"), "no marker: all silent");
        assert_eq!(x["status"], "fail");
        assert!(
            x["verdict"].as_str().unwrap().contains("lost silently"),
            "{x:#}"
        );
    }
    // The server's own count of what the reconnecting clients were never sent.
    let s = fixture_stats(&app);
    assert_eq!(n(&s, "resumed"), 4 * 4, "{s}");
    assert_eq!(silent_in_runs(&r), n(&s, "missed"), "{s}");
    assert_eq!(r["summary"]["fail"], 4);
}

#[test]
fn node_ws_with_post_publish_and_no_resume_loses_silently() {
    let _timed = common::timed();
    let app = node_ws(&[]);
    let secret = "Bearer s3cr3t-t0ken-value";
    let auth = format!("Authorization: {secret}");
    let (code, r, out) = delivery(
        &app.url("ws", "/ws"),
        &[
            "--publish",
            &post(&app),
            "-H",
            &auth,
            "--message",
            "news {marker} {pad}",
            "--resume",
            "query since={seq}",
        ],
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(!out.contains("s3cr3t"), "a header's value was printed");
    for k in KINDS {
        let x = run(&r, "foreign", k);
        assert_eq!(x["case"], "since-query");
        assert!(n(x, "lost_silently") > 0, "{x:#}");
        assert_eq!(x["status"], "fail");
    }
    let s = fixture_stats(&app);
    assert_eq!(n(&s, "resumed"), 4 * 4, "{s}");
    assert_eq!(silent_in_runs(&r), n(&s, "missed"), "{s}");
    assert_eq!(n(&s, "published"), n(&r["publisher"], "sent"));
    // rtcheck never counts more than the hub wrote.
    let received: u64 = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| n(x, "received"))
        .sum();
    assert!(received <= n(&s, "sent"), "{received} > {s}");
}

#[test]
fn node_ws_that_resumes_by_message_loses_nothing() {
    let _timed = common::timed();
    let app = node_ws(&[("RESUME", "1")]);
    let (code, r, out) = delivery(
        &app.url("ws", "/ws"),
        &[
            "--publish",
            "ws",
            "--message",
            r#"{"type":"msg","text":"{seq} {ts} {pad}"}"#,
            "--seq-path",
            "text",
            "--ts-path",
            "text",
            "--resume",
            r#"message {"resume":{seq}}"#,
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    for k in KINDS {
        let x = run(&r, "foreign", k);
        assert_eq!((n(x, "lost"), n(x, "lost_silently")), (0, 0), "{x:#}");
    }
    let s = fixture_stats(&app);
    assert_eq!((n(&s, "resumed"), n(&s, "missed")), (16, 0), "{s}");
    assert!(n(&s, "replayed") > 0);
    assert_eq!(r["options"]["foreign"]["resume"], "resume-message");
}

#[test]
fn node_ws_that_resumes_by_since_query_loses_nothing() {
    let _timed = common::timed();
    let app = node_ws(&[("RESUME", "1")]);
    let (code, r, out) = delivery(
        &app.url("ws", "/ws"),
        &["--publish", &post(&app), "--resume", "query since={seq}"],
    );
    assert_eq!(code, Some(0), "{out}");
    for k in KINDS {
        let x = run(&r, "foreign", k);
        assert_eq!((n(x, "lost"), n(x, "lost_silently")), (0, 0), "{x:#}");
        assert_eq!(x["case"], "since-query");
    }
    let s = fixture_stats(&app);
    assert_eq!((n(&s, "resumed"), n(&s, "missed")), (16, 0), "{s}");
    assert!(n(&s, "replayed") > 0);
}

#[test]
fn a_refused_publish_makes_every_run_invalid() {
    let _timed = common::timed();
    let app = express_sse(&[]);
    let publish = format!("POST {}", app.url("http", "/nope"));
    let (code, r, out) = delivery(&app.url("http", "/live"), &["--publish", &publish]);
    // Refused from the first message, nothing reaches any client: one line naming the
    // publisher's answer, exit 2 (or, had some got through, every run invalid).
    match code {
        Some(2) => assert!(out.contains("POST /nope answered HTTP 404"), "{out}"),
        _ => {
            assert_eq!(code, Some(1), "{out}");
            for x in r["runs"].as_array().unwrap() {
                assert!(
                    x["verdict"].as_str().unwrap().starts_with("invalid"),
                    "{x:#}"
                );
            }
        }
    }
}

#[test]
fn bad_foreign_flags_are_one_line_exit_2() {
    let _timed = common::timed();
    let cases: [&[&str]; 6] = [
        &[
            "--server",
            "ws://127.0.0.1:9/ws",
            "--publish",
            "ws",
            "--delivery",
            "seq-ring",
        ],
        &["--server", "http://127.0.0.1:9/live", "--publish", "ws"],
        &[
            "--server",
            "ws://127.0.0.1:9/ws",
            "--publish",
            "ws",
            "--resume",
            "last-event-id",
        ],
        &["--message", "{seq} {ts}"],
        &[
            "--server",
            "ws://127.0.0.1:9/ws",
            "--publish",
            "ws",
            "--resume",
            "query since=1",
        ],
        &[
            "--server",
            "ws://127.0.0.1:9/ws",
            "--publish",
            "ws",
            "--message",
            "no seq",
        ],
    ];
    for args in cases {
        let out = common::rtcheck()
            .args(["verify", "delivery"])
            .args(args)
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
