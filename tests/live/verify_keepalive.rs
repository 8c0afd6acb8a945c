use crate::common;
use common::*;

#[test]
fn dead_peer_detected_within_pong_wait_and_read_deadline_closes_at_its_deadline() {
    let out = verify_json(&[
        "tcp-keepalive",
        "--ping",
        "400ms",
        "--pong-wait",
        "800ms",
        "--read-deadline",
        "1s",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = verification(&out.json, "tcp-keepalive");
    assert_valid(v);
    // The window the verdict uses is the one printed, slack included.
    let details = v["details"].to_string();
    assert!(details.contains("± 0.25 s"), "{details}");
    assert!(v["verdict"].as_str().unwrap().contains("± 0.25 s"), "{v}");
    // Silent 0.6 x ping after the last pong: pong-wait minus that, at most one ping later.
    let low = 0.8 - 0.6 * 0.4;
    let high = low + 0.4;
    let s = measured(v);
    assert!(
        s >= low - 0.2 && s <= high + 0.3,
        "{s} outside {low}..{high}"
    );

    let r = verification(&out.json, "read-deadline");
    assert_valid(r);
    let s = measured(r);
    assert!(
        (s - 1.0).abs() <= 0.3,
        "read deadline 1 s, closed after {s}"
    );
    assert!(r["verdict"].as_str().unwrap().starts_with("confirms"));
}
