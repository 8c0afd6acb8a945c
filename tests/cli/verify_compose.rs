//! `audit --verify` and `choose --verify` with a profile also run `verify delivery` for the
//! delivery the profile implies; its findings join the report (issue 12).
use crate::common;
use common::rtcheck;
use serde_json::Value;

/// Every audit check that names a live experiment: skipped, so only delivery runs.
const LIVE: &str = "fd-limit,ephemeral-ports,time-wait,tcp-wmem,memory,tcp-keepalive";
const PROFILE: &str =
    "transport: sse\nloss: shared\nconnections: 200\nrate: 20\nsize: 256\nmax_disconnect: 500ms\n";

fn ids(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

fn finding<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {v:#}"))
}

fn audit_json(extra: &[&str]) -> Value {
    let out = rtcheck()
        .args(["audit", "--verify", "--skip", LIVE, "--format", "json"])
        .args(["--fail-on", "never"])
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"))
}

#[test]
fn audit_verify_with_a_profile_runs_the_profiles_delivery() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.yaml");
    std::fs::write(&p, PROFILE).unwrap();
    let v = audit_json(&["--profile", p.to_str().unwrap()]);
    let all = ids(&v);
    // loss: shared is seq-ring: every way of leaving within the ring, the overflow, the control.
    for d in ["clean", "reset", "silent", "storm"] {
        let f = finding(&v, &format!("delivery-seq-ring-{d}-within-ring"));
        assert_eq!(f["status"], "pass", "{f:#}");
        assert_eq!(f["numbers"]["lost_silently"], 0.0, "{f:#}");
    }
    let over = finding(&v, "delivery-seq-ring-clean-beyond-ring");
    assert!(over["numbers"]["gaps"].as_f64().unwrap() > 0.0, "{over:#}");
    finding(&v, "delivery-no-seq-clean-within-ring");
    // Only the profile's delivery: no session-ack or snapshot run or skip.
    assert!(
        !all.iter()
            .any(|i| i.contains("session-ack") || i.contains("snapshot")),
        "{all:?}"
    );
    // The host checks are still there, and the summary counts the merged findings.
    finding(&v, "somaxconn");
    let s = &v["summary"];
    let total: u64 = ["pass", "warn", "fail", "skip"]
        .iter()
        .map(|k| s[k].as_u64().unwrap())
        .sum();
    assert_eq!(total as usize, all.len(), "{s}");
}

#[test]
fn audit_verify_without_a_profile_runs_no_delivery() {
    let v = audit_json(&["--connections", "200"]);
    assert!(!ids(&v).iter().any(|i| i.starts_with("delivery-")), "{v:#}");
}

const CHOOSE: [&str; 12] = [
    "choose",
    "--visible-within",
    "200ms",
    "--upstream",
    "none",
    "--loss",
    "shared",
    "--rate",
    "20",
    "--size",
    "256",
    "--max-disconnect=500ms",
];

#[test]
fn choose_verify_measures_the_recommended_delivery() {
    let out = rtcheck()
        .args(CHOOSE)
        .args(["--verify", "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["delivery"], "seq-ring");
    let storm = finding(&v, "delivery-seq-ring-storm-within-ring");
    assert_eq!(storm["status"], "pass", "{storm:#}");
    assert_eq!(storm["numbers"]["lost"], 0.0, "{storm:#}");
    finding(&v, "delivery-no-seq-clean-within-ring");
    assert!(!ids(&v).iter().any(|i| i.contains("session-ack")));
    // Text shows the measured runs after the recommendation.
    let text = rtcheck()
        .args(CHOOSE)
        .args(["--verify", "--color", "never"])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(t.contains("Delivery measured on loopback"), "{t}");
    assert!(t.contains("delivery-seq-ring-clean-beyond-ring"), "{t}");
    // Without --verify nothing runs and the JSON has no findings key.
    let plain = rtcheck()
        .args(CHOOSE)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!(v.get("findings").is_none(), "{v:#}");
}
