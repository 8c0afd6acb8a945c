//! `rtcheck bench cluster` end to end at small scale over a real redis-server (Debian
//! package `redis-server`, started by rtcheck on a free loopback port in a temp dir): JSON
//! parsed back and the shapes checked by value (one path: 0 duplicates; naive: duplicates
//! on the publishing node only; a killed node: TTL ghosts clear, event ghosts stay). No
//! timing asserts beyond generous bounds.
use crate::common;
use serde_json::Value;
use std::time::Duration;

/// Small and quick: 2 nodes, 8 clients, 40 rounds at 20/s.
const SMALL: [&str; 10] = [
    "--nodes",
    "2",
    "--connections",
    "8",
    "--rounds",
    "40",
    "--rate",
    "20",
    "--drain",
    "5s",
];

fn cluster(args: &[&str]) -> (i32, Value, String) {
    common::require_binary("redis-server", "redis-server");
    let out = common::rtcheck()
        .args(["bench", "cluster", "--format", "json"])
        .args(SMALL)
        .args(args)
        .timeout(Duration::from_secs(240))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"));
    (out.status.code().unwrap_or(-1), v, stderr)
}

fn scenario<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name} in {v}"))
}

fn u(s: &Value, k: &str) -> u64 {
    s[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {s}"))
}

/// The keys issue 13 names, on every row.
const KEYS: [&str; 14] = [
    "name",
    "nodes",
    "p50_ms",
    "p99_ms",
    "p999_ms",
    "received",
    "lost",
    "lost_silently",
    "duplicates",
    "duplicates_by_node",
    "order_hash_agree",
    "ghosts",
    "valid",
    "notes",
];

fn assert_valid_row(s: &Value) {
    for k in KEYS {
        assert!(s.get(k).is_some(), "key {k} missing in {s}");
    }
    assert_eq!(s["valid"], true, "{s:#}");
    let (p50, p99, p999) = (
        s["p50_ms"].as_f64().unwrap(),
        s["p99_ms"].as_f64().unwrap(),
        s["p999_ms"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99 + 1e-9 && p99 <= p999 + 1e-9, "{s}");
    assert!(u(s, "received") >= u(s, "expected") - u(s, "lost"), "{s}");
}

#[test]
fn one_path_has_no_duplicates_and_naive_doubles_only_the_publishing_node() {
    let _timed = common::timed();
    let (code, v, err) = cluster(&["--scenario", "single,one-path,naive"]);
    assert_eq!(code, 0, "{err}\n{v:#}");
    let single = scenario(&v, "single");
    assert_valid_row(single);
    assert_eq!(u(single, "nodes"), 1);
    assert_eq!((u(single, "lost"), u(single, "duplicates")), (0, 0));

    let one = scenario(&v, "one-path");
    assert_valid_row(one);
    assert_eq!(u(one, "nodes"), 2);
    assert_eq!(u(one, "duplicates"), 0, "{one:#}");
    assert_eq!(u(one, "lost"), 0, "{one:#}");
    assert_eq!(u(one, "received"), 8 * 40);
    assert_eq!(one["order_hash_agree"], true);
    assert!(
        one["delta_p50_ms"].is_number(),
        "delta against single: {one}"
    );

    let naive = scenario(&v, "naive");
    assert_valid_row(naive);
    let by = naive["duplicates_by_node"].as_object().unwrap();
    assert_eq!(by.keys().collect::<Vec<_>>(), ["a"], "{naive:#}");
    // 4 of 8 clients sit on node a: each gets every message twice.
    assert_eq!(by["a"].as_u64(), Some(4 * 40), "{naive:#}");
    assert_eq!(u(naive, "duplicates"), 4 * 40);
    assert_eq!(u(naive, "lost"), 0);
    assert_eq!(naive["order_hash_agree"], true);
}

#[test]
fn a_killed_node_ttl_ghosts_clear_while_event_ghosts_stay() {
    let _timed = common::timed();
    let (code, v, err) = cluster(&["--scenario", "node-kill", "--presence-ttl", "2s"]);
    assert_eq!(code, 0, "{err}\n{v:#}");
    let s = scenario(&v, "node-kill");
    assert_valid_row(s);
    assert!(u(s, "reconnects") >= 4, "node b's 4 clients moved: {s:#}");
    assert_eq!(u(s, "lost_silently"), 0, "{s:#}");
    assert_eq!(u(s, "duplicates"), 0, "{s:#}");
    let ghosts = s["ghosts"].as_array().unwrap();
    let series = |mode: &str| {
        ghosts
            .iter()
            .find(|g| g["presence"] == mode)
            .unwrap_or_else(|| panic!("no {mode} series: {s:#}"))
    };
    let ttl = series("ttl");
    let cleared = ttl["cleared_after_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("TTL ghosts never cleared: {ttl:#}"));
    // TTL + one heartbeat, with room for a loaded 2-core host.
    assert!(cleared <= 2.0 + 1.0 + 3.0, "{ttl:#}");
    assert!(
        ttl["samples"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["ghosts"].as_u64() > Some(0)),
        "the kill left no ghost at all: {ttl:#}"
    );
    let events = series("events");
    assert!(events["cleared_after_s"].is_null(), "{events:#}");
    let last = events["samples"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["ghosts"].as_u64(),
        Some(4),
        "node b's 4 clients stay online: {events:#}"
    );
    assert!(last["t_s"].as_f64().unwrap() > 2.0, "{events:#}");
}

#[test]
fn a_redis_restart_is_survived_and_counted() {
    let _timed = common::timed();
    let (code, v, err) = cluster(&["--scenario", "redis-restart"]);
    let s = scenario(&v, "redis-restart");
    assert_eq!(code, 0, "{err}\n{v:#}");
    assert_valid_row(s);
    // Whatever was lost was said: a gap marker, never silence.
    assert_eq!(u(s, "lost_silently"), 0, "{s:#}");
    assert_eq!(u(s, "duplicates"), 0, "{s:#}");
    let notes = s["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("Redis started again")),
        "{s:#}"
    );
    // Rounds that got no seq while Redis was down reach every client as a gap marker.
    let unpublished = u(s, "unpublished");
    assert!(
        u(s, "gap_reported") >= unpublished * u(s, "clients"),
        "{s:#}"
    );
    assert_eq!(u(s, "lost"), u(s, "gap_reported"), "{s:#}");
}

/// Redis (no persistence) and the publishing node restarted together, as a deploy does:
/// the new publisher starts a new epoch at seq 1, and every client must get a reset
/// marker, no seq may carry two rounds, and nothing may be lost silently (a relay used to
/// take the new seqs as already delivered and drop them without a word).
#[test]
fn redis_and_the_publisher_restarted_together_reset_every_client() {
    let _timed = common::timed();
    let (code, v, err) = cluster(&["--scenario", "redis-publisher-restart"]);
    let s = scenario(&v, "redis-publisher-restart");
    assert_eq!(code, 0, "{err}\n{v:#}");
    assert_valid_row(s);
    assert_eq!(u(s, "lost_silently"), 0, "{s:#}");
    assert_eq!(u(s, "seq_conflicts"), 0, "{s:#}");
    assert_eq!(u(s, "resets"), u(s, "clients"), "every client told: {s:#}");
    assert_eq!(u(s, "lost"), u(s, "gap_reported"), "{s:#}");
    // The old epoch's rounds, then the run's 40 again in the new one, as one history.
    assert!(u(s, "last_seq") > 40, "{s:#}");
    assert_eq!(u(s, "published"), 40, "{s:#}");
    for name in [
        "every client told of the reset",
        "nothing lost silently",
        "one round per seq",
    ] {
        let c = s["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name}: {s:#}"));
        assert_eq!(c["status"], "pass", "{c}");
    }
    let notes = s["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("restarted together")),
        "{s:#}"
    );
}

#[test]
fn single_json_carries_the_issue_keys_and_counts_every_message() {
    let _timed = common::timed();
    let (code, v, err) = cluster(&["--scenario", "single"]);
    assert_eq!(code, 0, "{err}\n{v:#}");
    let s = scenario(&v, "single");
    assert_valid_row(s);
    assert_eq!(u(s, "nodes"), 1);
    assert_eq!(
        (u(s, "received"), u(s, "lost"), u(s, "duplicates")),
        (8 * 40, 0, 0)
    );
    assert_eq!(s["order_hash_agree"], true);
    assert_eq!(v["valid"], true);
}

fn usage_error(args: &[&str]) -> String {
    let out = common::rtcheck()
        .args(["bench", "cluster"])
        .args(args)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: a report of nothing");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    err
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let _timed = common::timed();
    assert!(usage_error(&["--nodes", "1"]).contains("--nodes"));
    assert!(usage_error(&["--nodes", "9"]).contains("between 2 and 4"));
    assert!(usage_error(&["--scenario", "split-brain"]).contains("unknown scenario"));
    let port = common::free_port();
    let url = format!("redis://127.0.0.1:{port}");
    let e = usage_error(&["--redis", &url, "--scenario", "one-path"]);
    assert!(e.contains(&url) && e.contains("cannot connect"), "{e}");
    let e = usage_error(&["--redis", "redis://192.0.2.1:6379"]);
    assert!(e.contains("not a loopback"), "{e}");
}

#[test]
fn single_renders_in_every_format() {
    let _timed = common::timed();
    for (fmt, needle) in [
        ("text", "every result valid (1 scenarios)"),
        ("markdown", "| single | 1 |"),
        ("yaml", "name: single"),
    ] {
        let out = common::rtcheck()
            .args(["bench", "cluster", "--scenario", "single", "--format", fmt])
            .args(SMALL)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{fmt}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains(needle), "{fmt}:\n{text}");
        if fmt == "text" {
            assert!(text.starts_with(needle), "verdict first:\n{text}");
            assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        }
    }
}

/// Child pids of `pid` (from every process's /proc/PID/stat parent field).
fn children(pid: u32) -> Vec<i32> {
    let parent_of = |p: i32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        stat.rsplit_once(") ")?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|&p| parent_of(p) == Some(pid))
        .collect()
}

#[test]
fn ctrl_c_stops_nodes_and_redis_and_removes_the_temp_dirs() {
    let _timed = common::timed();
    common::require_binary("redis-server", "redis-server");
    let mut child = std::process::Command::new(common::binary())
        .args([
            "bench",
            "cluster",
            "--scenario",
            "one-path",
            "--format",
            "json",
        ])
        .args(["--nodes", "2", "--connections", "8", "--rounds", "400"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Redis and both nodes running.
    let until = std::time::Instant::now() + Duration::from_secs(60);
    let kids = loop {
        let k = children(pid);
        if k.len() >= 3 {
            break k;
        }
        assert!(std::time::Instant::now() < until, "nodes never started");
        assert!(child.try_wait().unwrap().is_none(), "exited before Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(out.stdout.is_empty(), "no report after Ctrl-C");
    assert!(err.contains("interrupted"), "{err}");
    for k in kids {
        assert!(
            common::procs::gone_within(k as u32, Duration::from_secs(10)),
            "child {k} left running"
        );
    }
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("rtcheck-cluster-{pid}-"))
        })
        .collect();
    assert!(left.is_empty(), "temp dirs left: {left:?}");
}
