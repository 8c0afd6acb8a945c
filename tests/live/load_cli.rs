//! `rtcheck load` against `rtcheck serve` /work on loopback: the knee near capacity,
//! Little's law holding, the Nagle stall with --split-writes and not without, the open
//! loop, formats, and bad input. Shapes with generous tolerances: the host is shared.
use crate::common;
use common::Server;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn load(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .arg("load")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

fn finding<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no finding {id}: {v}"))
}

fn f(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

#[test]
fn knee_near_capacity_and_littles_law_holds() {
    let _timed = common::timed();
    // 4 workers x 20 ms: capacity 200 req/s.
    let s = Server::start(&["--workers", "4"]);
    let url = format!("http://{}/work?ms=20", s.addr);
    let metrics = format!("http://{}/metrics", s.addr);
    let (code, v) = load(&[
        &url,
        "--concurrency",
        "1,2,4,8,16",
        "--step",
        "1500ms",
        "--metrics",
        &metrics,
        "--littles-tolerance",
        "10",
    ]);
    let levels = v["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 5, "{v}");
    for l in levels {
        for k in [
            "concurrency",
            "throughput_rps",
            "p50_ms",
            "p99_ms",
            "max_ms",
            "errors",
            "error_rate",
            "littles_law_w_ms",
            "mean_ms",
            "valid",
        ] {
            assert!(!l[k].is_null(), "{k} missing: {l}");
        }
        assert!(l["valid"].as_bool().unwrap(), "{l}");
        // Little's law: W = C / X agrees with the measured mean (stated tolerance 10%).
        let (w, mean) = (f(l, "littles_law_w_ms"), f(l, "mean_ms"));
        assert!(((mean - w) / w).abs() <= 0.10, "{l}");
        // Never above the physical ceiling of the pool (plus rounding slack).
        assert!(f(l, "throughput_rps") <= 200.0 * 1.05, "{l}");
        assert!(f(l, "p50_ms") >= 19.0, "{l}");
    }
    assert_eq!(finding(&v, "littles-law")["status"], "pass");
    let knee = finding(&v, "knee");
    assert_eq!(knee["status"], "warn", "{knee}");
    let kc = v["knee"]["concurrency"].as_u64().unwrap();
    assert!((4..=8).contains(&kc), "knee at {kc}: {v}");
    // Past the knee: throughput flat, p99 multiplied, the pool saturated.
    let (first, last) = (&levels[0], &levels[4]);
    // Against C = 1's median, not its p99: at a 1.5 s step C = 1 has ~70 answers, so its
    // p99 is one sample, which a scheduling hiccup on a loaded host moves by 20 ms or more.
    assert!(f(last, "p99_ms") >= 2.0 * f(first, "p50_ms"), "{v}");
    assert!(
        f(last, "throughput_rps") >= 2.0 * f(first, "throughput_rps"),
        "{v}"
    );
    let sat = &last["saturation"];
    assert!(sat["saturation_pct"].as_f64().unwrap() >= 80.0, "{sat}");
    assert!(sat["queue_max"].as_f64().unwrap() >= 4.0, "{sat}");
    assert_eq!(finding(&v, "nagle")["status"], "pass");
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["mode"], "closed");
    assert_eq!(v["latency_from"], "request start");
}

#[test]
fn nagle_detected_with_split_writes_and_absent_without() {
    let _timed = common::timed();
    let split = Server::start(&["--workers", "8", "--split-writes"]);
    let url = format!("http://{}/work?ms=20", split.addr);
    let (code, v) = load(&[&url, "--concurrency", "1,2", "--step", "2500ms"]);
    let n = finding(&v, "nagle");
    assert_eq!(n["status"], "fail", "{v}");
    assert!(
        n["fix"]["summary"].as_str().unwrap().contains("SERVER"),
        "{n}"
    );
    let gap = n["numbers"]["body_gap_p50_ms"].as_f64().unwrap();
    assert!((30.0..=250.0).contains(&gap), "{n}");
    assert_eq!(code, Some(1));

    let plain = Server::start(&["--workers", "8"]);
    let url = format!("http://{}/work?ms=20", plain.addr);
    let (_, v2) = load(&[&url, "--concurrency", "1,2", "--step", "2500ms"]);
    assert_eq!(finding(&v2, "nagle")["status"], "pass", "{v2}");
    // The stall costs tens of ms at the median (seed: 70.9 vs 26.9 ms).
    let p50 = |v: &serde_json::Value| f(&v["levels"][1], "p50_ms");
    assert!(p50(&v) >= p50(&v2) + 20.0, "{} vs {}", p50(&v), p50(&v2));
}

#[test]
fn open_loop_latency_from_schedule() {
    let _timed = common::timed();
    let s = Server::start(&["--workers", "8"]);
    let url = format!("http://{}/work?ms=5", s.addr);
    let (_, v) = load(&[
        &url,
        "--rate",
        "100",
        "--concurrency",
        "4",
        "--step",
        "1500ms",
    ]);
    assert_eq!(v["mode"], "open");
    assert_eq!(v["latency_from"], "scheduled start");
    let l = &v["levels"][0];
    assert_eq!(f(l, "offered_rps"), 100.0);
    assert!(l["littles_law_w_ms"].is_null());
    let x = f(l, "throughput_rps");
    assert!((50.0..=130.0).contains(&x), "{l}");
    assert_eq!(finding(&v, "littles-law")["status"], "skip");
}

#[test]
fn formats_and_output_file() {
    let _timed = common::timed();
    let s = Server::start(&["--workers", "8"]);
    let url = format!("http://{}/work?ms=2", s.addr);
    let run = |fmt: &str| {
        assert_cmd::Command::cargo_bin("rtcheck")
            .unwrap()
            .args([
                "load",
                &url,
                "--concurrency",
                "2",
                "--step",
                "300ms",
                "--format",
                fmt,
            ])
            .output()
            .unwrap()
    };
    let xml = String::from_utf8(run("junit").stdout).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let ids: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| n.attribute("name").unwrap().to_string())
        .collect();
    // Each level's validity first (as bench's scenarios), then the findings.
    assert_eq!(ids, ["validity:C=2", "littles-law", "knee", "nagle"]);
    let md = String::from_utf8(run("markdown").stdout).unwrap();
    assert!(md.contains("| C | throughput (req/s) |"), "{md}");
    let y: serde_yaml::Value = serde_yaml::from_slice(&run("yaml").stdout).unwrap();
    assert_eq!(y["levels"][0]["concurrency"].as_u64(), Some(2));
    let text = String::from_utf8(run("text").stdout).unwrap();
    assert!(
        text.lines()
            .all(|l| l.chars().count() <= 80 || l.contains(&url)),
        "{text}"
    );
    assert!(
        text.contains("littles-law") && text.contains("timeout 500 ms"),
        "{text}"
    );
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("load.json");
    assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .args([
            "load",
            &url,
            "--concurrency",
            "1",
            "--step",
            "300ms",
            "--format",
            "json",
            "-o",
        ])
        .arg(&o)
        .assert()
        .code(predicates::ord::lt(2));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(o).unwrap()).unwrap();
    assert_eq!(v["levels"][0]["concurrency"], 1);
}

fn one_line_exit_2(args: &[&str], needle: &str) {
    let t0 = Instant::now();
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .arg("load")
        .args(args)
        .output()
        .unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "{args:?} took {:?}",
        t0.elapsed()
    );
    assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let _timed = common::timed();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/", dead.local_addr().unwrap());
    drop(dead);
    one_line_exit_2(&[&dead_url], "connection refused");
    // A peer that answers something that is not HTTP.
    let garbage = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let g_url = format!("http://{}/", garbage.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in garbage.incoming().flatten() {
            let mut s = s;
            let mut b = [0u8; 512];
            let _ = s.read(&mut b);
            let _ = s.write_all(b"SSH-2.0-OpenSSH_9.2\r\n\r\n");
        }
    });
    one_line_exit_2(&[&g_url], "not HTTP");
    // A peer that accepts and never answers: bounded by the timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let s_url = format!("http://{}/", silent.local_addr().unwrap());
    one_line_exit_2(&[&s_url, "--timeout", "300ms"], "no answer within");
    drop(silent);
    let s = Server::start(&[]);
    one_line_exit_2(&[&format!("http://{}/nope", s.addr)], "answers 4xx");
    let ok = "http://127.0.0.1:9/";
    one_line_exit_2(&[ok, "--concurrency", "0"], "--concurrency");
    one_line_exit_2(&[ok, "--concurrency", "1,100000"], "--concurrency");
    one_line_exit_2(&[ok, "--concurrency", "4,8,4"], "level 4 given twice");
    one_line_exit_2(
        &[ok, "--step", "10m", "--concurrency", "1,2,4,8,16,32,64"],
        "over an hour",
    );
    one_line_exit_2(&["http://192.0.2.7/"], "--allow-remote");
    one_line_exit_2(&["https://127.0.0.1/"], "scheme");
    one_line_exit_2(&[ok, "--header", "nocolon"], "--header");
    one_line_exit_2(&[ok, "--rate", "0"], "--rate");
}

/// Both engines measure the same pool against its ceiling (4 workers x 10 ms = 400 req/s):
/// each level valid, Little's law within tolerance, throughput near and never above the
/// ceiling, and the report names the engine that ran (hyper with its feature only).
#[test]
fn both_engines_reach_the_pools_ceiling_and_say_which_ran() {
    let _timed = common::timed();
    let s = Server::start(&["--workers", "4"]);
    let url = format!("http://{}/work?ms=10", s.addr);
    let engines: &[&str] = if cfg!(feature = "hyper") {
        &["wire", "hyper"]
    } else {
        &["wire"]
    };
    for &engine in engines {
        let (code, v) = load(&[
            &url,
            "--concurrency",
            "8",
            "--step",
            "1500ms",
            "--littles-tolerance",
            "10",
            "--engine",
            engine,
        ]);
        assert_eq!(v["client_engine"], engine, "{v}");
        let l = &v["levels"][0];
        assert!(l["valid"].as_bool().unwrap(), "{engine}: {l}");
        assert_eq!(l["errors"], 0, "{engine}: {l}");
        let x = f(l, "throughput_rps");
        // The floor is loose: a loaded 2-core host sleeps past 10 ms.
        assert!((200.0..=400.0 * 1.05).contains(&x), "{engine}: {l}");
        assert!(code.is_some_and(|c| c < 2), "{engine}: {code:?}");
    }
}

#[test]
fn threshold_gates_on_the_live_figure_and_an_unknown_name_is_exit_2() {
    let _timed = common::timed();
    // /work?ms=20: every answer takes at least 20 ms, so p99 < 5ms is crossed for certain
    // and p99 < 10s holds on any machine.
    let s = Server::start(&["--workers", "4"]);
    let url = format!("http://{}/work?ms=20", s.addr);
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("load.xml");
    let report = format!("junit={}", junit.display());
    let common = ["--concurrency", "1,2", "--step", "500ms"];
    let (code, v) = load(
        &[
            &url[..],
            "--threshold",
            "p99 < 5ms",
            "--threshold",
            "p99 < 10s",
            "--report",
            &report,
        ]
        .iter()
        .chain(&common)
        .copied()
        .collect::<Vec<_>>(),
    );
    assert_eq!(code, Some(1), "{v}");
    let crossed = finding(&v, "threshold:p99<5ms");
    assert_eq!(crossed["status"], "fail", "{crossed}");
    assert!(f(&crossed["numbers"], "observed") >= 20.0, "{crossed}");
    let valid = v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["valid"] == true);
    let held = finding(&v, "threshold:p99<10s");
    // An invalid level (a starved client on a loaded host) fails it: never a pass.
    assert_eq!(
        held["status"],
        if valid { "pass" } else { "fail" },
        "{held}"
    );
    // The same run's junit file has a failing testcase for the crossed threshold.
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("threshold:p99<5ms"))
        .unwrap_or_else(|| panic!("no testcase for the threshold: {xml}"));
    assert!(case.children().any(|c| c.has_tag_name("failure")), "{xml}");

    // A name the report does not have is a usage error naming the keys, not a pass.
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .args(["load", &url, "--threshold", "p98 < 50ms"])
        .args(common)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("--threshold 'p98 < 50ms'") && e.contains("p99_ms"),
        "{e}"
    );
    // A malformed one is refused by the parser before any traffic.
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .args(["load", &url, "--threshold", "p99 50ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--threshold"));
}

#[test]
fn format_github_annotates_a_crossed_threshold_as_an_error() {
    let _timed = common::timed();
    // /work?ms=20: every answer takes at least 20 ms, so p99 < 5ms is crossed for certain.
    let s = Server::start(&["--workers", "4"]);
    let url = format!("http://{}/work?ms=20", s.addr);
    let run = |threshold: &str| {
        let out = assert_cmd::Command::cargo_bin("rtcheck")
            .unwrap()
            .args(["load", &url, "--concurrency", "4", "--step", "500ms"])
            .args(["--format", "github", "--threshold", threshold])
            .output()
            .unwrap();
        let gh = String::from_utf8(out.stdout).unwrap();
        assert!(
            gh.lines().all(|l| l.starts_with("::")),
            "not annotations: {gh}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), gh)
    };
    let (code, gh) = run("p99 < 5ms");
    assert_eq!(code, Some(1), "{gh}");
    let error = gh
        .lines()
        .find(|l| l.contains("threshold%3Ap99<5ms"))
        .unwrap_or_else(|| panic!("no annotation for the threshold: {gh}"));
    let (head, message) = error.split_once("::").unwrap().1.split_once("::").unwrap();
    assert_eq!(head, "error title=rtcheck load threshold%3Ap99<5ms (fail)");
    // The value seen, or (a starved client on a loaded host) why there is none.
    assert!(
        message.starts_with("levels[0].p99_ms = ") || message.contains("the run is invalid"),
        "{error}"
    );
    assert!(error.contains("expected: p99 < 5 ms"), "{error}");
    assert!(gh
        .lines()
        .last()
        .unwrap()
        .starts_with("::notice title=rtcheck load::"));
    // One that holds is no error (an invalid level on a loaded host would fail it).
    let (code, gh) = run("p99 < 10s");
    if gh.contains("validity%3AC=4 (fail)") {
        // A starved host made the level invalid: then the threshold fails with it.
        assert_eq!(code, Some(1), "{gh}");
        assert!(gh.contains("threshold%3Ap99<10s"), "{gh}");
    } else {
        assert_eq!(code, Some(0), "{gh}");
        assert!(!gh.contains("threshold%3Ap99<10s"), "{gh}");
        assert!(!gh.contains("::error"), "{gh}");
    }
}
