//! `rtcheck budget`: the seed's numbers through the CLI, formats, and bad input.
use assert_cmd::Command;
use std::time::{Duration, Instant};

fn rtcheck() -> Command {
    Command::cargo_bin("rtcheck").unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = rtcheck()
        .arg("budget")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn near(v: &serde_json::Value, seed: f64, pct: f64) -> bool {
    let got = v.as_f64().unwrap();
    ((got - seed) / seed).abs() * 100.0 <= pct
}

#[test]
fn seed_four_hops_and_one_slow_hop() {
    let fast = ["a:24ms:18ms", "b:24ms:18ms", "c:24ms:18ms"];
    let mut args: Vec<&str> = fast.iter().flat_map(|h| ["--hop", h]).collect();
    args.extend(["--hop", "d:24ms:18ms"]);
    let v = json(&args);
    assert!(near(&v["sequential_ms"], 261.0, 5.0), "{v}");
    assert!(near(&v["parallel_ms"], 63.0, 5.0), "{v}");
    assert!(near(&v["sequential_reused_ms"], 163.0, 5.0), "{v}");
    assert!(v["parallel_reused_ms"].as_f64().unwrap() < v["parallel_ms"].as_f64().unwrap());
    assert!((v["tail_amplification"].as_f64().unwrap() - 0.0394).abs() < 1e-3);

    let mut args: Vec<&str> = fast.iter().flat_map(|h| ["--hop", h]).collect();
    args.extend(["--hop", "slow:24ms:118ms"]);
    let v = json(&args);
    assert!(near(&v["sequential_ms"], 368.0, 5.0), "{v}");
    assert!(near(&v["parallel_ms"], 172.0, 5.0), "{v}");
    assert_eq!(v["slowest_hop"]["name"], "slow");
    assert_eq!(v["slowest_hop"]["ms"], v["parallel_ms"]);
}

#[test]
fn yaml_hops_budget_finding_and_fail_on() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("hops.yaml");
    std::fs::write(
        &f,
        "hops:\n  - {name: db, rtt: 24ms, server_time: 18ms, p99: 120ms, reuse: true}\n  - {name: api, rtt: 24, server_time: 18}\n",
    )
    .unwrap();
    let path = f.to_str().unwrap();
    let v = json(&["--hops", path, "--budget", "100ms", "--deadline", "90ms"]);
    assert_eq!(v["as_configured"]["sequential_ms"], 108.0);
    assert_eq!(v["as_configured"]["parallel_ms"], 66.0);
    assert_eq!(v["findings"][0]["id"], "latency-budget");
    assert_eq!(v["findings"][0]["status"], "warn");
    assert_eq!(v["tail"]["hop"], "db");
    assert_eq!(v["deadline"]["tail_cut"][0], "db");
    // Within the budget in sequence (108 ms), but db at its p99 takes 144 ms: warn.
    let v = json(&["--hops", path, "--budget", "120ms"]);
    assert_eq!(v["findings"][0]["status"], "warn", "{v}");
    let obs = v["findings"][0]["observed"].as_str().unwrap();
    assert!(
        obs.contains("p99 of db the request takes 144.0 ms"),
        "{obs}"
    );
    // warn trips --fail-on warn only
    rtcheck()
        .args(["budget", "--hops", path, "--budget", "100ms"])
        .assert()
        .code(0);
    rtcheck()
        .args([
            "budget",
            "--hops",
            path,
            "--budget",
            "100ms",
            "--fail-on",
            "warn",
        ])
        .assert()
        .code(1);
    let out = rtcheck()
        .args([
            "budget", "--hops", path, "--budget", "50ms", "--format", "junit",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8(out.stdout).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase"))
        .unwrap();
    assert_eq!(case.attribute("name"), Some("latency-budget"));
    assert!(case.children().any(|n| n.has_tag_name("failure")));
}

#[test]
fn text_yaml_markdown_and_output_file() {
    let out = rtcheck()
        .args(["budget", "--hop", "a:24ms:18ms", "--hop", "b:24ms:118ms"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("2 hops: sequential 232.0 ms, parallel 166.0 ms"),
        "{text}"
    );
    assert!(
        text.lines()
            .all(|l| l.chars().count() <= 80 || l.starts_with("model:")),
        "{text}"
    );
    let y = rtcheck()
        .args(["budget", "--hop", "a:24", "--format", "yaml"])
        .output()
        .unwrap();
    let v: serde_yaml::Value = serde_yaml::from_slice(&y.stdout).unwrap();
    assert_eq!(v["sequential_ms"].as_f64(), Some(48.0));
    let md = rtcheck()
        .args(["budget", "--hop", "a:24", "--format", "markdown"])
        .output()
        .unwrap();
    assert!(String::from_utf8(md.stdout)
        .unwrap()
        .contains("| sequential | 48.0 |"));
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("b.json");
    rtcheck()
        .args(["budget", "--hop", "a:24", "--format", "json", "-o"])
        .arg(&o)
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&o).unwrap()).unwrap();
    assert_eq!(v["parallel_ms"], 48.0);
}

fn one_line_exit_2(args: &[&str], needle: &str) {
    let t0 = Instant::now();
    let out = rtcheck().arg("budget").args(args).output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("hops.yaml");
    std::fs::write(
        &f,
        "hops:\n  - {name: a, rtt: 1}\n  - {name: b, rtt: soon}\n",
    )
    .unwrap();
    let p = f.to_str().unwrap();
    one_line_exit_2(&["--hops", p], "hops.yaml:3: hops[1].rtt");
    one_line_exit_2(&["--hops", "/nonexistent/h.yaml"], "/nonexistent/h.yaml");
    one_line_exit_2(&[], "no hops");
    one_line_exit_2(&["--hop", "db"], "NAME:RTT");
    one_line_exit_2(
        &["--hop", "a:1", "--format", "sarif"],
        "[possible values: text, json, yaml, markdown, junit, github, html]",
    );
    one_line_exit_2(&["--live", "http://192.0.2.1/"], "--allow-remote");
    one_line_exit_2(&["--live", "ftp://127.0.0.1/"], "scheme");
    one_line_exit_2(&["--live", "http://127.0.0.1:1/"], "refused");
}

/// "1 hop" (not "1 hops"), and each column header ends where its figures end.
#[test]
fn one_hop_is_singular_and_the_headers_align_with_the_figures() {
    let out = rtcheck()
        .args(["budget", "--hop", "db:24ms:18ms"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("1 hop: sequential 66.0 ms"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.contains("computed (ms)"))
        .unwrap();
    // A rule under the header, then the rows: numbers right-aligned under their header.
    let (h, row) = (lines[head], lines[head + 2]);
    assert!(row.trim_start().starts_with("sequential"), "{text}");
    let end = |l: &str, needle: &str| l.find(needle).map(|i| i + needle.len());
    assert_eq!(end(h, "computed (ms)"), end(row, "66.0"), "{text}");
    assert_eq!(h.trim_end().len(), row.trim_end().len(), "{text}");
}
