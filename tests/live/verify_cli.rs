use crate::common;
use common::{procs, rtcheck};
use std::time::Duration;

#[test]
fn unknown_experiment_is_one_line_and_exit_2() {
    let out = rtcheck()
        .args(["verify", "tcp-wmem,nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("unknown experiment `nope`"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_durations_and_sizes_are_usage_errors() {
    for args in [
        vec!["verify", "tcp-keepalive", "--ping", "fast"],
        vec!["verify", "tcp-wmem", "--message-size", "1"],
        vec!["verify", "memory", "--connections", "0"],
    ] {
        let out = rtcheck().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn junit_markdown_yaml_and_file_output_carry_the_same_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let xml_path = dir.path().join("verify.xml");
    let out = rtcheck()
        .args([
            "verify",
            "time-wait",
            "--closed",
            "100",
            "--format",
            "junit",
            "--quiet",
            "-o",
        ])
        .arg(&xml_path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let xml = std::fs::read_to_string(&xml_path).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].attribute("name"), Some("time-wait"));
    assert!(!cases[0].children().any(|c| c.has_tag_name("failure")));
    let sysout = cases[0]
        .children()
        .find(|c| c.has_tag_name("system-out"))
        .and_then(|c| c.text())
        .unwrap();
    assert!(sysout.contains(" sockets (valid)"), "{sysout}");

    let md = rtcheck()
        .args([
            "verify",
            "time-wait",
            "--closed",
            "100",
            "--format",
            "markdown",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(md.status.code(), Some(0));
    let md = String::from_utf8(md.stdout).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| time-wait |"))
        .unwrap_or_else(|| panic!("{md}"));
    let cells: Vec<&str> = row
        .split(" | ")
        .map(|c| c.trim_matches('|').trim())
        .collect();
    let n: f64 = cells[1].trim_end_matches(" sockets").parse().unwrap();
    assert!((98.0..=100.0).contains(&n), "{row}");
    assert_eq!(cells[2], "yes", "{row}");

    let y = rtcheck()
        .args([
            "verify",
            "time-wait",
            "--closed",
            "50",
            "--format",
            "yaml",
            "--quiet",
        ])
        .output()
        .unwrap();
    let y: serde_yaml::Value = serde_yaml::from_slice(&y.stdout).unwrap();
    assert_eq!(y["options"]["closed"].as_u64(), Some(50));
    let v = &y["verifications"][0];
    assert_eq!(v["name"].as_str(), Some("time-wait"));
    // An experiment that errored has no measurement: show its verdict (the reason).
    let n = v["measured"]
        .as_f64()
        .unwrap_or_else(|| panic!("no measurement: {:?}", v["verdict"]));
    assert!((48.0..=50.0).contains(&n), "{n}");
}

#[test]
fn ctrl_c_stops_the_run_exits_130_and_leaves_no_server_behind() {
    use std::os::unix::process::CommandExt;
    let bin = assert_cmd::cargo::cargo_bin("rtcheck");
    let mut child = std::process::Command::new(bin)
        .args([
            "verify",
            "read-deadline",
            "--read-deadline",
            "30s",
            "--quiet",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    // The handler is installed before the experiment starts its server child.
    let servers = procs::wait_children(&mut child, 1, Duration::from_secs(30));
    let out = procs::sigint(child, true, Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    // 130 = 128 + SIGINT, as README says for every command.
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(out.stdout.is_empty(), "no partial report");
    for s in servers {
        assert!(
            procs::gone_within(s, Duration::from_secs(10)),
            "server child {s} still running"
        );
    }
}

#[test]
fn ctrl_c_stops_verify_delivery_with_exit_130() {
    let bin = assert_cmd::cargo::cargo_bin("rtcheck");
    let mut child = std::process::Command::new(bin)
        .args([
            "verify",
            "delivery",
            "--max-disconnect",
            "20s",
            "--rate",
            "5",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let servers = procs::wait_children(&mut child, 1, Duration::from_secs(30));
    // To rtcheck alone: its own guards must stop the server.
    let out = procs::sigint(child, false, Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(out.stdout.is_empty(), "no partial report");
    for s in servers {
        assert!(
            procs::gone_within(s, Duration::from_secs(10)),
            "server child {s} still running"
        );
    }
}

#[test]
fn audit_verify_attaches_measurements_to_the_findings_that_name_them() {
    let out = rtcheck()
        .args([
            "audit",
            "--verify",
            "--connections",
            "200",
            "--skip",
            "fd-limit,ephemeral-ports,memory,tcp-keepalive",
            "--format",
            "json",
            "--fail-on",
            "never",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let find = |id: &str| {
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .unwrap()
            .clone()
    };
    let wmem = find("tcp-wmem");
    let v = &wmem["verification"];
    assert_eq!(v["name"], "tcp-wmem");
    assert_eq!(v["valid"], true);
    assert!(v["measured"].as_f64().unwrap() >= 1024.0);
    assert!(v["reference"].as_str().unwrap().contains("[kernel-sndbuf]"));
    let tw = find("time-wait");
    assert_eq!(tw["verification"]["name"], "time-wait");
    // One client-side TIME_WAIT per closed connection (the experiment's 1% tolerance).
    let n = tw["verification"]["measured"].as_f64().unwrap();
    assert!((1980.0..=2000.0).contains(&n), "{n}");
    // Skipped findings are not run.
    assert!(find("fd-limit").get("verification").is_none());
    assert!(find("memory").get("verification").is_none());
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    let out = rtcheck()
        .args(["verify", "time-wait", "--closed", "50", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["summary"]["valid"], 1);
    assert_eq!(json["experiments"], serde_json::json!(["ephemeral-ports"]));
    assert_eq!(json["options"]["closed"], 50);
}

#[test]
fn progress_bar_on_a_terminal() {
    let bin = assert_cmd::cargo::cargo_bin("rtcheck");
    let mut cmd = std::process::Command::new(bin);
    cmd.args([
        "verify",
        "time-wait",
        "--closed",
        "3000",
        "--color",
        "never",
    ]);
    let mut p = expectrl::Session::spawn(cmd).unwrap();
    p.set_expect_timeout(Some(Duration::from_secs(30)));
    // The bar shows steps done / total and the current experiment.
    p.expect("0/1").unwrap();
    // Then the report, and the bar is cleared.
    p.expect("1 measurement(s): 1 valid, 0 invalid").unwrap();
}

#[test]
fn a_run_that_cannot_measure_says_why_prints_no_number_and_exits_1() {
    // The children (embedded server, fd-limit child) are re-executed from RTCHECK_BIN:
    // /bin/false makes every one of them fail at once.
    let out = rtcheck()
        .env("RTCHECK_BIN", "/bin/false")
        .args([
            "verify",
            "memory-sse,fd-limit",
            "--connections",
            "10",
            "--format",
            "json",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["summary"]["invalid"], 2);
    for v in json["verifications"].as_array().unwrap() {
        assert_eq!(v["valid"], false);
        assert!(v["measured"].is_null(), "{v:#}");
        assert!(
            v["verdict"].as_str().unwrap().starts_with("invalid: "),
            "{v:#}"
        );
    }
    let sse = json["verifications"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "memory-sse")
        .unwrap();
    assert!(
        sse["verdict"]
            .as_str()
            .unwrap()
            .contains("the embedded server exited"),
        "{sse:#}"
    );
}
