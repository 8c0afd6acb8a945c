//! `bench fanout --server` against servers rtcheck did not write (tests/fixtures/foreign/):
//! a refusal names what was wrong (frames that arrived but are not the payload, with the
//! first one's shape; `/control/start` refused; already publishing before the run), and a
//! real server's JSON, whose size varies by a byte or two, is measured within the stated
//! tolerance of --size. The independent client counts what the server really sent.
use crate::common;
use crate::foreign_common;
use foreign_common::*;
use serde_json::Value;
use std::time::Duration;

/// `bench fanout --server URL ARGS --format json`: (exit code, the scenario, stderr).
fn bench(url: &str, args: &[&str]) -> (Option<i32>, Value, String) {
    let out = common::rtcheck()
        .args(["bench", "fanout", "--server", url, "--format", "json"])
        .args(["--drain", "1s"])
        .args(args)
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}); stderr: {err}"));
    (out.status.code(), v["scenarios"][0].clone(), err)
}

fn check<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check `{name}`: {s:#}"))
}

/// gorilla's chat hub broadcasting its own JSON ticks (the truth: the independent client
/// receives them) has no /control routes (404): the run is invalid and says that frames
/// arrived undecodable, the first one's keys, and the 404; never "sent nothing".
#[test]
fn a_foreign_hub_is_refused_for_what_it_sent_not_for_silence() {
    let _timed = common::timed();
    let hub = gorilla_hub(&[("TICK_MS", "50")]);
    let url = hub.url("ws", "/ws");
    let truth = observe_ws(&url, 1.0, None);
    assert!(
        ms_list(&truth["messages_ms"]).len() >= 10,
        "fixture truth: {truth}"
    );
    let (code, s, err) = bench(
        &url,
        &[
            "--connections",
            "5",
            "--rounds",
            "10",
            "--rate",
            "20",
            "--size",
            "64",
        ],
    );
    assert_eq!(code, Some(1), "{err}\n{s:#}");
    assert_eq!(s["valid"], false, "{s:#}");
    let d = check(&s, "samples received")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(d.contains("frames arrived but none"), "{d}");
    assert!(
        d.contains("JSON {n: number, time: number, type: string}"),
        "{d}"
    );
    assert!(d.contains("/control/start answered HTTP 404"), "{d}");
    assert!(!d.contains("sent nothing"), "{d}");
    let c = check(&s, "control plane");
    assert_eq!(c["status"], "warn", "{c}");
    let note = s["notes"][0].as_str().unwrap();
    assert!(
        note.starts_with("INVALID") && note.contains("HTTP 404"),
        "{note}"
    );
}

/// A `ws` server publishing bench's public payload once every client is in: its JSON is
/// 49-50 B (the seq's digits), the run asks --size 50: within the tolerance, measured
/// and valid, the range stated. /control/start is answered 426 by `ws` (not an upgrade):
/// a warning, not a refusal.
#[test]
fn natural_json_size_variation_is_within_the_tolerance() {
    let _timed = common::timed();
    let app = node_ws(&[
        ("SEQ_ROUNDS", "20"),
        ("SEQ_AFTER", "5"),
        ("BROADCAST_MS", "50"),
    ]);
    let (code, s, err) = bench(
        &app.url("ws", "/"),
        &[
            "--connections",
            "5",
            "--rounds",
            "20",
            "--rate",
            "20",
            "--size",
            "50",
        ],
    );
    assert_eq!(code, Some(0), "{err}\n{s:#}");
    assert_eq!(s["valid"], true, "{s:#}");
    assert_eq!(s["accounting"]["received"], 100, "{s:#}");
    let sched = check(&s, "server schedule");
    assert_eq!(sched["status"], "pass", "{sched}");
    let d = sched["detail"].as_str().unwrap();
    assert!(d.contains("payloads 49-50 bytes"), "{d}");
    assert!(d.contains("accepted 34-80"), "{d}");
    let c = check(&s, "control plane");
    assert_eq!(c["status"], "warn", "{c}");
    assert!(c["detail"].as_str().unwrap().contains("HTTP 426"), "{c}");
}

/// A server that started publishing before the clients connected: the first round the
/// run sees is far past 1, and the report says it was already publishing.
#[test]
fn a_server_already_publishing_is_named() {
    let _timed = common::timed();
    let app = node_ws(&[
        ("SEQ_ROUNDS", "100000"),
        ("SEQ_AFTER", "0"),
        ("BROADCAST_MS", "50"),
    ]);
    // The truth: rounds are going out before bench connects.
    let before = observe_ws(&app.url("ws", "/"), 1.0, None);
    assert!(ms_list(&before["messages_ms"]).len() >= 5, "{before}");
    let (_, s, err) = bench(
        &app.url("ws", "/"),
        &[
            "--connections",
            "5",
            "--rounds",
            "10",
            "--rate",
            "20",
            "--size",
            "50",
        ],
    );
    assert_eq!(s["valid"], false, "{err}\n{s:#}");
    let d = check(&s, "samples received")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(d.contains("already publishing before the run"), "{d}");
    assert!(!d.contains("sent nothing"), "{d}");
}
