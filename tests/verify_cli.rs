mod common;
use common::rtcheck;
use std::time::{Duration, Instant};

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
    assert_eq!(cells[4], "yes");

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
    let n = v["measured"].as_f64().unwrap();
    assert!((48.0..=50.0).contains(&n), "{n}");
}

fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            // Field 4 (after the parenthesised command) is the parent pid.
            let after = &stat[stat.rfind(')').unwrap() + 2..];
            let ppid: u32 = after.split_whitespace().nth(1).unwrap().parse().unwrap();
            if ppid == pid {
                out.push(p);
            }
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let after = &stat[stat.rfind(')').unwrap() + 2..];
            !after.starts_with('Z')
        }
        Err(_) => false,
    }
}

#[test]
fn ctrl_c_stops_the_run_and_leaves_no_server_behind() {
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
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait for the embedded server child to be up.
    let until = Instant::now() + Duration::from_secs(30);
    let servers = loop {
        let c = children_of(pid);
        if !c.is_empty() {
            break c;
        }
        assert!(Instant::now() < until, "no server child started");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < until, "verify did not stop after Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("interrupted"), "{err}");
    assert!(out.stdout.is_empty(), "no partial report");
    for s in servers {
        assert!(!alive(s), "server child {s} still running");
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
fn attach_as_a_library_call_uses_the_audited_soft_limit() {
    use rtcheck::report::{Finding, Fix, Status};
    std::env::set_var("RTCHECK_BIN", assert_cmd::cargo::cargo_bin("rtcheck"));
    let finding = |id: &str, status: Status, verify: Option<&str>| Finding {
        id: id.into(),
        title: id.into(),
        status,
        observed: String::new(),
        expected: String::new(),
        rule: String::new(),
        reason: None,
        evidence: vec![],
        fix: Fix::default(),
        verify: verify.map(str::to_string),
        verification: None,
        numbers: Default::default(),
    };
    let mut fd = finding("fd-limit", Status::Fail, Some("fd-limit"));
    fd.numbers.insert("soft".into(), 128.0);
    let mut findings = vec![
        fd,
        finding("tcp-wmem", Status::Warn, Some("tcp-wmem")),
        finding("somaxconn", Status::Pass, None),
        finding("memory", Status::Skip, Some("memory")),
    ];
    let opts = rtcheck::verify::VerifyOptions {
        progress: false,
        timeout: Duration::from_secs(60),
        ..rtcheck::cmd::verify::default_options()
    };
    rtcheck::verify::attach(&mut findings, &opts).unwrap();
    let fd = findings[0].verification.as_ref().unwrap();
    assert!(fd.valid, "{fd:?}");
    let n = fd.measured.unwrap();
    assert!(
        (112.0..=128.0).contains(&n),
        "fd-limit at the audited 128: {n}"
    );
    let w = findings[1].verification.as_ref().unwrap();
    assert_eq!(w.name, "tcp-wmem");
    assert!(w.valid);
    assert!(findings[2].verification.is_none());
    assert!(
        findings[3].verification.is_none(),
        "skipped findings are not run"
    );
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
