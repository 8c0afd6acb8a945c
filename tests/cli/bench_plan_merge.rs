//! `bench plan` and `bench merge` inputs (issue 37): a plan comes only from measured
//! figures and its arithmetic is checked from its JSON; files `merge` cannot read are one
//! line naming the file, exit 2, nothing on stdout. (Merging real shards:
//! tests/live/bench_shards.rs.)
use crate::common;
use serde_json::Value;

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = common::rtcheck().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_plan_sizes_from_the_figures_and_the_tightest_resource() {
    let (code, out, err) = run(&[
        "bench",
        "plan",
        "--connections",
        "1000000",
        "--rate",
        "5",
        "--cpu-us-per-message",
        "4",
        "--rss-per-connection",
        "2KiB",
        "--cores",
        "8",
        "--memory",
        "16GiB",
        "--ports",
        "28232",
        "--format",
        "json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    // 5 M msg/s x 4 us = 20 cores: 5 machines at half of 8; ports: 36.
    assert_eq!(v["machines_for_cpu"], 5, "{v:#}");
    assert_eq!(v["machines_for_memory"], 1, "{v:#}");
    assert_eq!(v["machines_for_ports"], 36, "{v:#}");
    assert_eq!(
        (v["machines"].as_u64(), v["bound_by"].as_str()),
        (Some(36), Some("ports"))
    );
    let (code, out, _) = run(&[
        "bench",
        "plan",
        "--connections",
        "1000000",
        "--cpu-us-per-message",
        "4",
        "--rss-per-connection",
        "2048",
        "--cores",
        "8",
        "--memory",
        "16GiB",
        "--ports",
        "28232",
        "--source-addresses",
        "8",
    ]);
    assert_eq!(code, Some(0));
    assert!(
        out.starts_with("5 load machine(s) for 1,000,000 connections"),
        "{out}"
    );
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
}

#[test]
fn no_figures_no_plan_and_unreadable_shards_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "not json").unwrap();
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "{}").unwrap();
    let missing = dir.path().join("missing.json");
    // An invalid run's load generator cost is no measurement to plan from.
    let invalid = dir.path().join("invalid.json");
    std::fs::write(
        &invalid,
        r#"{"scenarios": [{"valid": false, "loadgen_cost":
            {"cpu_us_per_message": 4.0, "rss_bytes_per_connection": 2048.0}}]}"#,
    )
    .unwrap();
    let (g, e, m, i) = (
        garbage.to_str().unwrap(),
        empty.to_str().unwrap(),
        missing.to_str().unwrap(),
        invalid.to_str().unwrap(),
    );
    let flags = ["--cpu-us-per-message", "4", "--rss-per-connection", "2048"];
    for (args, want) in [
        (
            vec!["bench", "plan", "--connections", "10"],
            "measured figures",
        ),
        (
            vec!["bench", "plan", "--connections", "10", "--from", e],
            "loadgen_cost",
        ),
        (
            vec!["bench", "plan", "--connections", "10", "--from", i],
            "no valid run",
        ),
        (
            [
                &["bench", "plan", "--connections", "10", "--memory", "0"],
                &flags[..],
            ]
            .concat(),
            "--memory",
        ),
        (
            [
                &[
                    "bench",
                    "plan",
                    "--connections",
                    "10",
                    "--ports",
                    "18446744073709551615",
                ],
                &["--source-addresses", "2"][..],
                &flags[..],
            ]
            .concat(),
            "too many",
        ),
        (vec!["bench", "merge", g], g),
        (vec!["bench", "merge", e], "not a shard's result"),
        (vec!["bench", "merge", m], m),
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
