mod verify_common;
use verify_common::*;

#[test]
fn child_at_limit_256_fills_the_limit_and_goes_blind_to_proc() {
    let out = verify_json(&["fd-limit", "--limit", "256"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = verification(&out.json, "fd-limit");
    assert_valid(v);
    let n = measured(v);
    assert!(
        (240.0..=256.0).contains(&n),
        "count {n} not within 240..=256"
    );
    assert_eq!(v["unit"], "connections");
    // The same count sits in the finding's machine numbers and as a pass status.
    let f = &out.json["findings"][0];
    assert_eq!(f["status"], "pass");
    assert_eq!(f["numbers"]["measured"].as_f64(), Some(n));
    assert_eq!(out.json["kind"], "verify");
    // Host facts in the details: the child could not read /proc at the limit.
    let details: Vec<&str> = v["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(
        details
            .iter()
            .any(|d| d.starts_with("at the limit: read /proc/self/status: failed (EMFILE")),
        "{details:?}"
    );
    assert!(v["reference"].as_str().unwrap().contains("1,018"));
}

#[test]
fn limit_above_the_hard_limit_is_a_usage_error() {
    let hard = nofile_hard();
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .args(["verify", "fd-limit", "--limit", &(hard + 1).to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("--limit {}", hard + 1)), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn children_refuse_targets_that_are_not_loopback() {
    for (child, extra) in [("fd-limit", "--limit"), ("open-hold", "--count")] {
        let out = assert_cmd::Command::cargo_bin("rtcheck")
            .unwrap()
            .args([
                "verify",
                "--child",
                child,
                extra,
                "64",
                "--target",
                "10.1.2.3:80",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{child}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("10.1.2.3:80: not a loopback address"), "{err}");
    }
}
