//! `rtcheck review` in CI mode: answers file, exit codes per --fail-on, one-line errors
//! for bad answers files, --save round trip, --evidence, and every format parsed back.
use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

const ANSWERS: &str = "\
answers:
  - id: ping-interval
    answer: yes
    value: {ping: 25s, pong_wait: 30s, idle_timeout: 60s}
  - id: bounded-queue
    answer: yes
    value: {queue: 64, tolerance: 1s}
  - id: one-retry-layer
    answer: yes
    value: {layers: 3, tries: 3}
  - id: write-deadline
    answer: no
  - id: seq-numbers
    answer: na
    reason: prices only, newer replaces older
  - id: hot-path-alloc
    answer: later
";

/// 1,000 msg/s of 1 KB to each client: the article's queue example.
const PROFILE: &str = "visible_within: 200ms\nupstream: dense\nloss: shared\nconnections: 20000\nmachines: 2\nrate: 1000\nsize: 1000\nmax_disconnect: 3s\ntransport: websocket\n";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn review(args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("rtcheck")
        .unwrap()
        .arg("review")
        .args(args)
        .env("NO_COLOR", "1")
        .assert()
}

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out).expect("stdout is JSON")
}

fn finding<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no finding {id}"))
}

#[test]
fn answers_file_gives_findings_with_consequences_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", ANSWERS);
    let p = write(dir.path(), "p.yaml", PROFILE);
    let out = review(&["--answers", &a, "--profile", &p, "--format", "json"])
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    assert_eq!(v["kind"], "review");
    let q = finding(&v, "bounded-queue");
    assert_eq!(q["status"], "fail");
    assert!(
        q["observed"]
            .as_str()
            .unwrap()
            .starts_with("queue 64 x 1.0 KB at 1,000 msg/s tolerates 64 ms of slowness"),
        "{q}"
    );
    assert!((q["numbers"]["tolerance_s"].as_f64().unwrap() - 0.064).abs() < 1e-9);
    assert_eq!(
        finding(&v, "one-retry-layer")["numbers"]["downstream_hits"],
        27.0
    );
    assert_eq!(finding(&v, "write-deadline")["status"], "fail");
    assert_eq!(finding(&v, "seq-numbers")["status"], "skip");
    assert_eq!(finding(&v, "hot-path-alloc")["status"], "warn");
    assert_eq!(finding(&v, "ping-interval")["status"], "pass");
    // The profile (seq-ring over pub/sub) asks the ring and presence, not sessions.
    let ids: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"replay-window") && ids.contains(&"presence-ttl"));
    assert!(!ids.contains(&"session-ttl") && !ids.contains(&"open-files"));
    let s = &v["summary"];
    let total: u64 = ["pass", "warn", "fail", "skip"]
        .iter()
        .map(|k| s[k].as_u64().unwrap())
        .sum();
    assert_eq!(total as usize, ids.len());
    let notes = v["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].as_str().unwrap().contains("not measured"));

    // Only settled, passing items: exit 0 under --fail-on fail, 1 under warn when one is later.
    let only = [
        "--answers",
        &a,
        "--profile",
        &p,
        "--only",
        "ping-interval,seq-numbers",
    ];
    review(&only).code(0);
    let later = [
        "--answers",
        &a,
        "--only",
        "ping-interval,hot-path-alloc",
        "--fail-on",
        "warn",
    ];
    review(&later).code(1);
    let never = ["--answers", &a, "--fail-on", "never"];
    review(&never).code(0);
}

#[test]
fn bad_answers_files_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let unknown = write(
        dir.path(),
        "u.yaml",
        "answers:\n  - id: ping-interval\n    answer: yes\n  - id: no-such-item\n    answer: yes\n",
    );
    let out = review(&["--answers", &unknown])
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("u.yaml:4: answers[1].id: unknown item `no-such-item`"),
        "{err}"
    );

    let typed = write(
        dir.path(),
        "t.yaml",
        "answers:\n  - id: bounded-queue\n    answer: yes\n    value:\n      queue: lots\n",
    );
    let out = review(&["--answers", &typed])
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("t.yaml:5: answers[0].value.queue: expected a whole number"),
        "{err}"
    );

    let answer = write(
        dir.path(),
        "x.yaml",
        "answers:\n  - id: bounded-queue\n    answer: sure\n",
    );
    let err = String::from_utf8(
        review(&["--answers", &answer])
            .code(2)
            .get_output()
            .stderr
            .clone(),
    )
    .unwrap();
    assert!(err.contains("x.yaml:3"), "{err}");
    review(&["--only", "nope", "--answers", &answer]).code(2);
}

#[test]
fn no_terminal_and_no_answers_is_a_usage_error() {
    let err = review(&["--format", "json"])
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8(err).unwrap().contains("--answers FILE"));
}

#[test]
fn save_writes_answers_that_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", ANSWERS);
    let saved = dir.path().join("saved.yaml");
    let out = dir.path().join("report.json");
    review(&[
        "--answers",
        &a,
        "--save",
        saved.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--format",
        "json",
        "--fail-on",
        "never",
    ])
    .code(0)
    .stdout("");
    let text = std::fs::read_to_string(&saved).unwrap();
    let ids = rtcheck::review::known_ids();
    let back = rtcheck::review::answers::parse(&text, "saved.yaml", &ids).unwrap();
    let orig = rtcheck::review::answers::parse(ANSWERS, "a", &ids).unwrap();
    assert_eq!(back.answers.len(), orig.answers.len());
    for (x, y) in back.answers.iter().zip(&orig.answers) {
        assert_eq!((&x.id, x.answer), (&y.id, y.answer));
        assert_eq!(
            rtcheck::review::answers::values_of(x).unwrap(),
            rtcheck::review::answers::values_of(y).unwrap()
        );
    }
    // A second run reads the saved file: everything saved is settled the same way.
    let v = json(&std::fs::read(&out).unwrap());
    let again = review(&[
        "--answers",
        saved.to_str().unwrap(),
        "--format",
        "json",
        "--fail-on",
        "never",
    ])
    .get_output()
    .stdout
    .clone();
    assert_eq!(json(&again)["summary"], v["summary"]);
}

#[test]
fn save_and_output_land_together_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", ANSWERS);
    let saved = dir.path().join("saved.yaml");
    let run = |out: &Path| {
        review(&[
            "--answers",
            &a,
            "--save",
            saved.to_str().unwrap(),
            "--fail-on",
            "never",
            "-o",
            out.to_str().unwrap(),
        ])
    };
    // The report cannot be written: the answers file is not written either.
    let err = run(&dir.path().join("nope").join("r.txt"))
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(err).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("nope/r.txt: cannot write"), "{err}");
    assert!(!saved.exists());
    // A symlinked report keeps its link; its target gets the report, beside the answers.
    let link = dir.path().join("latest.txt");
    std::os::unix::fs::symlink("report.txt", &link).unwrap();
    run(&link).code(0).stdout("");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let text = std::fs::read_to_string(dir.path().join("report.txt")).unwrap();
    assert!(text.starts_with("rtcheck review:"), "{text}");
    assert!(!text.contains('\x1b'), "{text:?}");
    assert!(std::fs::read_to_string(&saved)
        .unwrap()
        .contains("id: ping-interval"));
}

/// A findings report as `verify` writes it, with one verified finding (the shape
/// `verify delivery` and `probe` plug into by finding id).
fn delivery_report() -> rtcheck::report::FindingsReport {
    use rtcheck::findings::{Finding, Fix, Status, Verification};
    use rtcheck::report::FindingsReport;
    let f = Finding {
        location: None,
        id: "delivery-seq-ring-reset-within-ring".into(),
        title: "Loss across a reconnect".into(),
        status: Status::Pass,
        observed: "0 lost of 1,000".into(),
        expected: "0 lost".into(),
        rule: "seq in the payload".into(),
        reason: None,
        evidence: vec![],
        fix: Fix::default(),
        verify: None,
        verification: Some(Verification {
            name: "delivery".into(),
            measured: Some(0.0),
            unit: "events".into(),
            reference: "615 lost without seq".into(),
            verdict: "0 lost after 3 s away".into(),
            details: vec![],
            valid: true,
            duration_ms: 10,
        }),
        numbers: Default::default(),
    };
    FindingsReport::new("verify", Default::default(), None, vec![f], 1.0)
}

/// A valid bench scenario as `bench fanout --format json` writes it.
fn scenario(name: &str, p999: f64) -> rtcheck::bench::model::ScenarioResult {
    use rtcheck::bench::model::{Check, ScenarioResult};
    ScenarioResult {
        name: name.into(),
        description: String::new(),
        connections: 1000,
        slow_clients: 50,
        p50_ms: Some(20.0),
        p99_ms: Some(45.0),
        p999_ms: Some(p999),
        max_ms: Some(p999 + 3.0),
        over_100ms: Some(0),
        over_1s: Some(0),
        samples: 95_000,
        rounds_completed: 100,
        rounds_total: 100,
        rounds_published_at_bound: None,
        last_client_median_ms: None,
        last_client_max_ms: None,
        hub_median_ms: None,
        hub_max_ms: None,
        drops: Some(0),
        removed: Some(50),
        server_rss_mb: None,
        server_cpu_s: None,
        per_round: vec![],
        percentiles: vec![],
        shape: None,
        publisher: None,
        loadgen_cost: None,
        server_process: None,
        server_unmeasured: None,
        client_cpu_s: 1.0,
        p99_vs_floor: None,
        p999_vs_floor: None,
        round_start_drift_median_ms: None,
        round_start_drift_max_ms: None,
        duration_s: 20.0,
        time_bound_s: 60.0,
        valid: true,
        notes: vec![],
        checks: vec![Check {
            name: "samples".into(),
            status: rtcheck::findings::Status::Pass,
            detail: String::new(),
        }],
        accounting: Default::default(),
        reference: None,
    }
}

#[test]
fn evidence_json_marks_items_measured() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", ANSWERS);
    let probe = write(
        dir.path(),
        "probe.json",
        r#"{"kind":"probe","findings":[
        {"id":"sse-buffering","status":"fail","observed":"SSE first byte after 6.6 s through nginx"}]}"#,
    );
    // `verify delivery` will write the common findings report: build it from the real types.
    let delivery_json = serde_json::to_string(&delivery_report()).unwrap();
    let delivery = write(dir.path(), "delivery.json", &delivery_json);
    let bench_json =
        serde_json::json!({"command": "bench fanout", "scenarios": [scenario("C3", 50.5)]});
    let bench = write(dir.path(), "bench.json", &bench_json.to_string());
    let out = review(&[
        "--answers",
        &a,
        "--evidence",
        &probe,
        "--evidence",
        &delivery,
        "--evidence",
        &bench,
        "--format",
        "json",
        "--fail-on",
        "never",
    ])
    .code(0)
    .get_output()
    .stdout
    .clone();
    let v = json(&out);
    let item = |id: &str| {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(item("proxy-config")["source"], "measured");
    assert_eq!(finding(&v, "proxy-config")["status"], "fail");
    assert_eq!(item("loss-dup-order")["source"], "measured");
    assert_eq!(finding(&v, "loss-dup-order")["numbers"]["measured"], 0.0);
    assert_eq!(item("writer-isolation")["measured"]["value"], 50.5);
    assert_eq!(item("ping-interval")["source"], "declared");
    let bad = write(dir.path(), "bad.json", "{\"hello\": 1}");
    review(&["--answers", &a, "--evidence", &bad]).code(2);
}

/// `rtcheck verify --format json` as verify writes it: its own report (verifications[],
/// experiments, options), serialized from the real types.
fn verify_report(valid: bool) -> String {
    use rtcheck::findings::Verification;
    use rtcheck::report::VerifyReport;
    let v = Verification {
        name: "tcp-keepalive".into(),
        measured: valid.then_some(12.1),
        unit: "s".into(),
        reference: "dead peer detected in 13 s".into(),
        verdict: if valid {
            "confirms: the server noticed the silent peer after 12.10 s".into()
        } else {
            "invalid: the server did not count a removal".into()
        },
        details: vec![],
        valid,
        duration_ms: 12_100,
    };
    let r = VerifyReport::new(
        vec!["tcp-keepalive".into()],
        vec![v],
        rtcheck::cmd::verify::default_options(),
        std::time::Instant::now(),
    );
    serde_json::to_string(&r).unwrap()
}

#[test]
fn verify_json_marks_ping_pong_measured() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", ANSWERS);
    let run = |verify_json: &str| {
        let f = write(dir.path(), "verify.json", verify_json);
        let out = review(&[
            "--answers",
            &a,
            "--evidence",
            &f,
            "--only",
            "ping-pong",
            "--format",
            "json",
            "--fail-on",
            "never",
        ])
        .code(0)
        .get_output()
        .stdout
        .clone();
        json(&out)
    };
    let v = run(&verify_report(true));
    let item = &v["items"][0];
    assert_eq!(item["id"], "ping-pong");
    assert_eq!(item["source"], "measured", "{item}");
    assert_eq!(item["measured"]["value"], 12.1);
    assert_eq!(finding(&v, "ping-pong")["status"], "pass");
    // An invalid run marks the item measured without a number, and warns.
    let v = run(&verify_report(false));
    assert!(v["items"][0]["measured"].get("value").is_none(), "{v}");
    assert_eq!(finding(&v, "ping-pong")["status"], "warn");
}

#[test]
fn every_format_renders_and_parses_back() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", ANSWERS);
    let run = |f: &str| {
        String::from_utf8(
            review(&["--answers", &a, "--format", f, "--fail-on", "never"])
                .code(0)
                .get_output()
                .stdout
                .clone(),
        )
        .unwrap()
    };
    let y: serde_yaml::Value = serde_yaml::from_str(&run("yaml")).unwrap();
    assert_eq!(y["kind"].as_str(), Some("review"));
    // Without --profile the note says which defaults sized the rules.
    let note = y["notes"][0].as_str().unwrap();
    assert!(
        note.starts_with("No --profile") && note.contains("10 msg/s"),
        "{note}"
    );
    let junit = run("junit");
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let cases = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .count();
    let fails = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .count();
    assert!(cases > 20, "{cases}");
    assert_eq!(
        fails, 2,
        "write-deadline (no) and one-retry-layer (27 hits)"
    );
    let gh = run("github");
    assert_eq!(gh.lines().filter(|l| l.starts_with("::error")).count(), 2);
    let md = run("markdown");
    // The verdict first, then each failing item with its status and id.
    assert!(
        md.starts_with("# rtcheck review\n\n**rtcheck review: 2 fail,"),
        "{md}"
    );
    for id in ["one-retry-layer", "write-deadline"] {
        assert!(md.contains(&format!("- **fail** **{id}**: ")), "{id}: {md}");
    }
    let text = run("text");
    assert!(text.starts_with("rtcheck review: 2 fail,"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
}

#[test]
fn session_ack_profile_asks_the_session_ttl_and_computes_worst_case_memory() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "p.yaml",
        "loss: per-user\nconnections: 10000\nrate: 10\nsize: 1000\nmax_disconnect: 30s\ntransport: sse\n",
    );
    let a = write(
        dir.path(),
        "a.yaml",
        "answers:\n  - id: session-ttl\n    answer: yes\n    value: {ttl: 1m}\n",
    );
    let out = review(&[
        "--profile",
        &p,
        "--answers",
        &a,
        "--format",
        "json",
        "--fail-on",
        "never",
    ])
    .code(0)
    .get_output()
    .stdout
    .clone();
    let v = json(&out);
    let f = finding(&v, "session-ttl");
    // No cap: every one of the 10,000 connections may hold 10 x 1 KB x 60 s = 600 KB.
    assert_eq!(f["status"], "warn", "{f}");
    assert_eq!(f["numbers"]["worst_case_bytes"], 6_000_000_000.0);
    assert!(f["observed"].as_str().unwrap().contains("= 6.0 GB"), "{f}");
    let ids: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"sse-http2") && !ids.contains(&"replay-window"));
}

/// Issue 21: a device that refuses the report (`/dev/full`) fails the run before the
/// answers are renamed into place: both or neither (S was written, exit 2).
#[test]
fn a_full_device_as_output_leaves_the_save_file_unwritten() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", ANSWERS);
    let saved = dir.path().join("saved.yaml");
    let out = review(&[
        "--answers",
        &a,
        "--save",
        saved.to_str().unwrap(),
        "--fail-on",
        "never",
        "-o",
        "/dev/full",
    ])
    .code(2)
    .get_output()
    .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/dev/full: cannot write"), "{err}");
    assert!(!saved.exists(), "--save written although -o failed");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "temp files left: {left:?}");
}

/// `-o FIFO` with no reader: one line and exit 2 after a bounded wait (it blocked forever).
#[test]
fn a_fifo_without_a_reader_fails_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", ANSWERS);
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let t0 = std::time::Instant::now();
    let out = Command::cargo_bin("rtcheck")
        .unwrap()
        .args(["review", "--answers", &a, "--fail-on", "never", "-o"])
        .arg(&fifo)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no reader on this FIFO within 10 s"), "{err}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(40));
}

/// A profile whose path caps every connection's lifetime (GCP's 30 s backend timeout) and
/// whose tightest idle limit is the ALB's 60 s: the read deadline and reconnect policy are
/// checked against that chain, from the answers file through to the JSON report.
#[test]
fn read_deadline_and_reconnect_policy_are_checked_against_the_declared_path() {
    let dir = tempfile::tempdir().unwrap();
    let answers = "\
answers:
  - id: read-deadline-with-ping
    answer: yes
    value: {read_deadline: 60s, ping: 54s}
  - id: reconnect-jitter
    answer: yes
    value: {reconnect: yes, resume: no, backoff_max: 10s}
";
    let a = write(dir.path(), "a.yaml", answers);
    let only = ["--only", "read-deadline-with-ping,reconnect-jitter"];
    let run = |profile: &str| {
        let p = write(dir.path(), "p.yaml", profile);
        let mut args = vec!["--answers", a.as_str(), "--profile", p.as_str()];
        args.extend(only);
        args.extend(["--format", "json"]);
        json(&review(&args).get_output().stdout.clone())
    };
    let base = "loss: shared\nconnections: 3000\nmax_disconnect: 30s\ntransport: websocket\n";
    // No path: the 54 s ping and 60 s deadline pass; no resume is a warning.
    let v = run(base);
    assert_eq!(finding(&v, "read-deadline-with-ping")["status"], "pass");
    assert_eq!(finding(&v, "reconnect-jitter")["status"], "warn");
    // Behind an ALB (60 s idle): the 54 s ping is above the 30 s the chain allows.
    let v = run(&format!("{base}path: [aws-alb]\n"));
    let rd = finding(&v, "read-deadline-with-ping");
    assert_eq!(rd["status"], "warn", "{rd:#}");
    assert!(
        rd["observed"].as_str().unwrap().contains("aws-alb"),
        "{rd:#}"
    );
    assert_eq!(rd["numbers"]["path_heartbeat_max_s"], 30.0);
    // Behind GCP's load balancer every WebSocket ends within 30 s: resume is mandatory.
    let v = run(&format!("{base}path: [gcp-alb]\n"));
    let rc = finding(&v, "reconnect-jitter");
    assert_eq!(rc["status"], "fail", "{rc:#}");
    assert!(
        rc["observed"].as_str().unwrap().contains("30 s at gcp-alb"),
        "{rc:#}"
    );
    assert_eq!(rc["numbers"]["lifetime_cap_s"], 30.0);
    assert_eq!(rc["numbers"]["reconnects_per_s"], 100.0);
    // A flag that is neither yes nor no is a one-line error naming the value.
    let bad = write(
        dir.path(),
        "bad.yaml",
        "answers:\n  - id: reconnect-jitter\n    answer: yes\n    value: {reconnect: maybe, resume: yes}\n",
    );
    let out = review(&["--answers", &bad])
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(
        err.contains("reconnect") && err.contains("yes or no"),
        "{err}"
    );
}
