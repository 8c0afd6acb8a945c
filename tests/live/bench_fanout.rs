//! `rtcheck bench fanout` end to end at small scale (a few hundred connections, a few
//! rounds): JSON parsed back, every scenario's shape checked by value. No timing asserts
//! beyond the shapes themselves (a 1 s write deadline is a shape, not a benchmark).
use crate::common;
use assert_cmd::Command;
use serde_json::Value;

fn fanout(args: &[&str]) -> (i32, Value, String) {
    let out = Command::cargo_bin("rtcheck")
        .unwrap()
        .args(["bench", "fanout", "--format", "json", "--drain", "2s"])
        .args(args)
        .timeout(std::time::Duration::from_secs(120))
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
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

fn check<'a>(s: &'a Value, name: &str) -> &'a str {
    s["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .and_then(|c| c["status"].as_str())
        .unwrap_or_else(|| panic!("no check {name}"))
}

fn f(s: &Value, k: &str) -> f64 {
    s[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {s}"))
}

fn u(s: &Value, k: &str) -> u64 {
    s[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {s}"))
}

const KEYS: [&str; 20] = [
    "name",
    "p50_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "over_100ms",
    "over_1s",
    "rounds_completed",
    "rounds_total",
    "last_client_median_ms",
    "last_client_max_ms",
    "hub_median_ms",
    "hub_max_ms",
    "drops",
    "removed",
    "server_rss_mb",
    "server_cpu_s",
    "client_cpu_s",
    "valid",
    "notes",
];

#[test]
fn floor_baseline_and_isolated_slow_clients() {
    let _timed = common::timed();
    // 4 KB messages so 20 slow clients fill their buffers within a dozen rounds.
    // 80 rounds at 40/s: the 1 s write deadline removes the slow clients, and should a busy
    // host delay that, their queues of 64 overflow (drops) before the run ends.
    let (code, v, err) = fanout(&[
        "--connections",
        "200",
        "--rounds",
        "80",
        "--rate",
        "40",
        "--size",
        "4096",
        "--slow",
        "20",
        "--scenario",
        "A,F,C3",
    ]);
    assert_eq!(code, 0, "{err}\n{v:#}");
    assert_eq!(v["valid"], true);
    let names: Vec<&str> = v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["F", "A", "C3"], "F runs first");
    for s in v["scenarios"].as_array().unwrap() {
        for k in KEYS {
            assert!(s.get(k).is_some(), "{k} missing in {}", s["name"]);
        }
        assert_eq!(s["valid"], true, "{s:#}");
        assert_eq!(check(s, "seq order"), "pass");
        assert_eq!(check(s, "TCP_NODELAY"), "pass");
        assert_eq!(check(s, "cleanup"), "pass");
        let (p50, p99, p999, max) = (
            f(s, "p50_ms"),
            f(s, "p99_ms"),
            f(s, "p999_ms"),
            f(s, "max_ms"),
        );
        assert!(
            0.0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= max,
            "{s:#}"
        );
        assert_eq!(u(s, "rounds_completed"), 80);
        assert_eq!(u(s, "rounds_total"), 80);
        assert!(f(s, "server_rss_mb") > 1.0);
    }
    // A: no sample lost: every healthy client got every round.
    let a = scenario(&v, "A");
    assert_eq!(u(&a["accounting"], "expected"), 200 * 80);
    assert_eq!(u(&a["accounting"], "received"), 200 * 80);
    assert_eq!(u(a, "samples"), 200 * 80);
    assert_eq!(u(a, "drops"), 0);
    assert_eq!(u(a, "removed"), 0);
    assert!(a["p99_vs_floor"].as_f64().unwrap() > 0.0);
    // C3: the slow clients cost the others nothing: every healthy sample arrived, none
    // waited a deadline, and the slow ones were dropped or removed, not waited for.
    let c3 = scenario(&v, "C3");
    assert_eq!(u(&c3["accounting"], "received"), 180 * 80);
    assert_eq!(u(c3, "over_1s"), 0);
    assert!(f(c3, "max_ms") < 1000.0, "{c3:#}");
    assert!(u(c3, "removed") + u(c3, "drops") > 0, "{c3:#}");
    assert!(f(c3, "hub_max_ms") < 1000.0);
    assert!(c3["p999_vs_floor"].as_f64().is_some());
}

#[test]
fn shard_writers_stall_without_deadline_and_are_bounded_with_one() {
    let _timed = common::timed();
    let (code, v, err) = fanout(&[
        "--connections",
        "200",
        "--rounds",
        "12",
        "--rate",
        "20",
        "--size",
        "4096",
        "--slow",
        "20",
        "--scenario",
        "C1,C2",
        "--no-floor",
    ]);
    assert_eq!(code, 0, "{err}\n{v:#}");
    // C1: the hub stalls behind slow clients; the run still ends at its bound and cleans up.
    let c1 = scenario(&v, "C1");
    assert_eq!(c1["valid"], true, "{c1:#}");
    assert!(u(c1, "rounds_published_at_bound") < 12, "{c1:#}");
    assert!(f(c1, "hub_max_ms") >= 1000.0, "{c1:#}");
    assert!(u(c1, "over_1s") > 0, "{c1:#}");
    assert_eq!(u(c1, "removed"), 0, "no deadline: nobody is removed");
    assert!(u(c1, "rounds_completed") < 12, "{c1:#}");
    // The stall lives in the tail: rounds before it were delivered normally.
    assert!(f(c1, "p50_ms") < 1000.0, "{c1:#}");
    assert!(f(c1, "duration_s") <= f(c1, "time_bound_s") + 2.0, "{c1:#}");
    assert_eq!(check(c1, "cleanup"), "pass");
    assert!(c1["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().starts_with("stall shown")));
    // C2: the 1 s deadline removes slow clients one after another (about 1 s each per
    // shard), so rounds wait seconds, never forever.
    let c2 = scenario(&v, "C2");
    assert_eq!(c2["valid"], true, "{c2:#}");
    assert!(u(c2, "removed") >= 1, "{c2:#}");
    assert!(f(c2, "hub_max_ms") >= 900.0, "{c2:#}");
    assert!(
        f(c2, "hub_max_ms") < 20_500.0,
        "at most 20 slow clients x 1 s in one shard"
    );
    assert!(u(c2, "over_1s") > 0, "{c2:#}");
}

#[test]
fn allocation_and_one_worker_scenarios_run_clean() {
    let _timed = common::timed();
    let (code, v, err) = fanout(&[
        "--connections",
        "100",
        "--rounds",
        "6",
        "--rate",
        "20",
        "--scenario",
        "G1,G3,P1",
        "--no-floor",
    ]);
    assert_eq!(code, 0, "{err}\n{v:#}");
    for name in ["G1", "G3", "P1"] {
        let s = scenario(&v, name);
        assert_eq!(s["valid"], true, "{s:#}");
        assert_eq!(u(&s["accounting"], "received"), 600);
        assert!(s["p99_vs_floor"].is_null(), "no F in this run");
        assert!(s["reference"]["id"]
            .as_str()
            .unwrap()
            .starts_with("scenario-"));
    }
    assert!(scenario(&v, "G1")["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("no GC")));
}

#[test]
fn measures_another_server_given_by_url() {
    let _timed = common::timed();
    let dir = tempfile::tempdir().unwrap();
    let addr_file = dir.path().join("addr");
    let mut srv = std::process::Command::new(assert_cmd::cargo::cargo_bin("rtcheck"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--wait-start",
            "--rounds",
            "5",
            "--rate",
            "20",
            "--exit-with-parent",
            "--addr-file",
        ])
        .arg(&addr_file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut addr = String::new();
    for _ in 0..200 {
        if let Ok(s) = std::fs::read_to_string(&addr_file) {
            if s.ends_with('\n') {
                addr = s.trim().to_string();
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(!addr.is_empty(), "server did not start");
    let url = format!("ws://{addr}/ws");
    let (code, v, err) = fanout(&[
        "--server",
        &url,
        "--connections",
        "50",
        "--rounds",
        "5",
        "--rate",
        "20",
    ]);
    let _ = srv.kill();
    let _ = srv.wait();
    assert_eq!(code, 0, "{err}\n{v:#}");
    assert_eq!(v["server"], url.as_str());
    let s = scenario(&v, "external");
    assert_eq!(s["valid"], true, "{s:#}");
    assert_eq!(u(&s["accounting"], "received"), 250);
    assert_eq!(u(s, "rounds_completed"), 5);
}

fn usage_error(args: &[&str], needle: &str) {
    let out = Command::cargo_bin("rtcheck")
        .unwrap()
        .args(["bench", "fanout"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(out.stdout.is_empty(), "no partial output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(needle), "{args:?}: {err}");
}

#[test]
fn bad_input_is_one_clear_line_and_exit_2() {
    let _timed = common::timed();
    usage_error(
        &["--server", "ws://10.1.2.3:80/ws"],
        "not a loopback address",
    );
    usage_error(&["--server", "ws://example.com:80/ws"], "loopback IP");
    usage_error(&["--scenario", "A,G2"], "unknown scenario `G2`");
    usage_error(&["--connections", "30000"], "RLIMIT_NOFILE");
    usage_error(
        &["--size", "8"],
        "--size: must be between 16 and 1048576 bytes, got 8",
    );
    usage_error(&["--rate", "0"], "--rate: must be between");
    usage_error(&["--rate", "0.000001"], "the bound is 3600 s");
    usage_error(
        &["--rate", "1e-300", "--rounds", "2"],
        "the bound is 3600 s",
    );
    usage_error(&["--format", "yaml"], "invalid value 'yaml'");
    usage_error(
        &["--slow", "300", "--connections", "300", "--scenario", "C3"],
        "--slow 300",
    );
}

/// A short run of scenario A (20 clients, 4 rounds) in `format` with `thresholds`: the exit
/// code and stdout.
fn gated(format: &str, thresholds: &[&str]) -> (i32, String) {
    let mut cmd = Command::cargo_bin("rtcheck").unwrap();
    cmd.args(["bench", "fanout", "--drain", "2s", "--format", format]);
    cmd.args(["--connections", "20", "--rounds", "4", "--rate", "20"]);
    cmd.args(["--scenario", "A", "--no-floor"]);
    for t in thresholds {
        cmd.args(["--threshold", t]);
    }
    let out = cmd
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.is_empty(), "{stderr}");
    (out.status.code().unwrap_or(-1), stdout)
}

/// The failure message of testcase `name` (None: it passed); panics when there is none.
fn junit_case(xml: &str, name: &str) -> Option<String> {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("{e}: {xml}"));
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
        .unwrap_or_else(|| panic!("no testcase {name}: {xml}"));
    case.children()
        .find(|c| c.has_tag_name("failure"))
        .map(|f| f.attribute("message").unwrap_or_default().to_string())
}

#[test]
fn a_crossed_threshold_is_a_failing_junit_testcase_and_a_github_error() {
    let _timed = common::timed();
    // 20 clients x 4 rounds: 80 samples, so `samples < 1` is crossed whatever the host
    // (an invalid run fails it too); `p99 < 1h` holds on any valid run.
    let crossed = "A.samples < 1";
    let (code, xml) = gated("junit", &[crossed, "A.p99 < 1h"]);
    assert_eq!(code, 1, "{xml}");
    let why = junit_case(&xml, "threshold:A.samples<1").unwrap_or_else(|| panic!("{xml}"));
    let valid = junit_case(&xml, "validity:A").is_none();
    if valid {
        // A valid run may account for a few samples as dropped or unpublished: the value
        // is whatever arrived, at least one.
        let n: u64 = why
            .strip_prefix("fail: scenarios[0].samples = ")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{why}: {xml}"));
        assert!((1..=80).contains(&n), "{why}");
        assert_eq!(junit_case(&xml, "threshold:A.p99<1h"), None, "{xml}");
    }
    // The expression is in the failure's text too (as its limit).
    assert!(xml.contains("expected: A.samples &lt; 1"), "{xml}");

    let (code, gh) = gated("github", &[crossed]);
    assert_eq!(code, 1, "{gh}");
    let error = gh
        .lines()
        .find(|l| l.contains("threshold%3AA.samples<1"))
        .unwrap_or_else(|| panic!("no annotation for the threshold: {gh}"));
    assert!(
        error.starts_with("::error title=rtcheck bench fanout threshold%3AA.samples<1 (fail)::"),
        "{error}"
    );
    assert!(error.contains("expected: A.samples < 1"), "{error}");
    assert!(gh
        .lines()
        .last()
        .unwrap()
        .starts_with("::notice title=rtcheck bench fanout::"));
}

#[test]
fn a_threshold_that_holds_is_a_passing_testcase_and_exit_0() {
    let _timed = common::timed();
    let (code, xml) = gated("junit", &["A.samples >= 1"]);
    if let Some(why) = junit_case(&xml, "validity:A") {
        // A starved host can fail the run's validity (its CPU, its drift): then the
        // threshold must not pass either, and the exit says so.
        assert_eq!(code, 1, "{why}\n{xml}");
        assert!(
            junit_case(&xml, "threshold:A.samples>=1").is_some(),
            "{xml}"
        );
        return;
    }
    assert_eq!(code, 0, "{xml}");
    assert_eq!(junit_case(&xml, "threshold:A.samples>=1"), None, "{xml}");
    assert!(xml.contains("failures=\"0\""), "{xml}");
    let (code, gh) = gated("github", &["A.samples >= 1"]);
    if gh.contains("validity%3AA") {
        assert_eq!(code, 1, "{gh}");
        return;
    }
    assert_eq!(code, 0, "{gh}");
    assert!(!gh.contains("::error"), "{gh}");
    assert!(gh.contains("0 fail, 0 warn, 2 pass"), "{gh}");
}
