//! Issue 28 in CI and on a fleet: the baseline file (suppressed findings shown with their
//! reason in every format, expired or reasonless entries failing the run, placeholders
//! from --write-baseline), SARIF checked against the SARIF 2.1.0 JSON schema for audit,
//! lint, review and probe, probe's Prometheus gauges with a url label, and --threshold on
//! bench fanout. Every machine format is parsed back.
use crate::common;
use crate::probe_common;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(tree: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(tree)
}

/// `audit` of the small-container fixture (memory and cpu fail, three warns), today fixed.
fn audit(dir: &Path, args: &[&str]) -> std::process::Output {
    let t = fixture("small-container");
    common::rtcheck()
        .current_dir(dir)
        .env("RTCHECK_TODAY", "2026-12-01")
        .env("NO_COLOR", "1")
        .arg("audit")
        .arg("--procfs")
        .arg(t.join("proc"))
        .arg("--sysfs")
        .arg(t.join("sys"))
        .arg("--no-proxy-config")
        .args(args)
        .output()
        .unwrap()
}

fn finding<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no finding {id} in {v:#}"))
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

const BASELINE: &str = "\
accepted:
  - check: memory
    reason: R-MEM-OK sized for 2,000 in staging
    expiry: 2027-01-31
  - check: cpu
    reason: R-CPU-OLD until the new nodes
    expiry: 2026-11-30
  - check: tcp-wmem
    expiry: 2027-01-31
";

const FORMATS: [(&str, &str); 9] = [
    ("text", "a.txt"),
    ("json", "a.json"),
    ("yaml", "a.yaml"),
    ("markdown", "a.md"),
    ("junit", "a.xml"),
    ("github", "a.gh"),
    ("html", "a.html"),
    ("sarif", "a.sarif"),
    ("prometheus", "a.prom"),
];

fn gauge(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let s = scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .unwrap_or_else(|| panic!("no {name} {labels:?}"));
    match s.value {
        prometheus_parse::Value::Gauge(v) => v,
        ref other => panic!("{name} is not a gauge: {other:?}"),
    }
}

fn scrape(text: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap()
}

#[test]
fn a_baseline_suppresses_with_its_reason_in_every_format_and_a_bad_entry_fails() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.yaml"), BASELINE).unwrap();
    let mut args = vec!["--baseline".to_string(), "b.yaml".to_string()];
    for (f, p) in FORMATS {
        args.extend(["--report".to_string(), format!("{f}={p}")]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = audit(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // cpu's entry expired: cpu still fails, and so do the two bad entries.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let v: Value = serde_json::from_str(&read(dir.path(), "a.json")).unwrap();
    let mem = finding(&v, "memory");
    assert_eq!(mem["status"], "suppressed");
    let why = mem["reason"].as_str().unwrap();
    assert!(
        why.starts_with("R-MEM-OK sized for 2,000 in staging"),
        "{why}"
    );
    assert!(why.contains("until 2027-01-31; was fail"), "{why}");
    assert_eq!(finding(&v, "cpu")["status"], "fail");
    assert_eq!(finding(&v, "tcp-wmem")["status"], "warn");
    let problems: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "baseline")
        .map(|f| {
            assert_eq!(f["status"], "fail");
            f["observed"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        problems,
        [
            "entry cpu expired on 2026-11-30 (reason: R-CPU-OLD until the new nodes)",
            "entry tcp-wmem has no reason"
        ]
    );
    assert_eq!(v["summary"]["suppressed"], 1);
    assert_eq!(v["summary"]["fail"], 3);
    // Every format shows the suppressed finding with its reason, and the expired entry's.
    for (f, p) in FORMATS {
        let text = read(dir.path(), p);
        let word = if f == "sarif" {
            "suppressions"
        } else {
            "suppressed"
        };
        assert!(text.contains(word), "{f}: no `{word}`:\n{text}");
        assert!(text.contains("R-MEM-OK"), "{f}: no reason:\n{text}");
        assert!(
            text.contains("R-CPU-OLD") || f == "prometheus",
            "{f}: the expired entry's reason is not shown:\n{text}"
        );
    }
    let y: Value = serde_yaml::from_str(&read(dir.path(), "a.yaml")).unwrap();
    assert_eq!(finding(&y, "memory")["status"], "suppressed");
    let sarif: Value = serde_json::from_str(&read(dir.path(), "a.sarif")).unwrap();
    let res = sarif["runs"][0]["results"].as_array().unwrap();
    let r = res.iter().find(|r| r["ruleId"] == "memory").unwrap();
    assert_eq!(r["suppressions"][0]["status"], "accepted");
    let j = r["suppressions"][0]["justification"].as_str().unwrap();
    assert!(j.starts_with("R-MEM-OK"), "{j}");
    assert!(res
        .iter()
        .filter(|r| r["ruleId"] != "memory")
        .all(|r| r.get("suppressions").is_none()));
    schema_valid("audit with a baseline", &sarif);
    let s = scrape(&read(dir.path(), "a.prom"));
    let st = "rtcheck_check_status";
    assert_eq!(
        gauge(&s, st, &[("check", "memory"), ("status", "suppressed")]),
        1.0
    );
    assert_eq!(
        gauge(&s, st, &[("check", "memory"), ("status", "fail")]),
        0.0
    );
    assert_eq!(
        gauge(&s, "rtcheck_checks", &[("status", "suppressed")]),
        1.0
    );
    // prometheus-parse splits labels on every `,` and `=`, so the reason is checked as
    // written (Prometheus itself reads quoted commas).
    let prom = read(dir.path(), "a.prom");
    let why = "R-MEM-OK sized for 2,000 in staging (baseline until 2027-01-31; was fail)";
    let line = format!("rtcheck_check_suppressed{{check=\"memory\",reason=\"{why}\"}} 1");
    assert!(prom.lines().any(|l| l == line), "{prom}");
    assert_eq!(
        gauge(&s, "rtcheck_check_suppressed", &[("check", "memory")]),
        1.0
    );
    let xml = read(dir.path(), "a.xml");
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("memory"))
        .unwrap();
    let skipped = case.children().find(|n| n.has_tag_name("skipped")).unwrap();
    assert!(skipped
        .attribute("message")
        .unwrap()
        .starts_with("suppressed: R-MEM-OK"));
    let gh = read(dir.path(), "a.gh");
    assert!(
        gh.lines()
            .any(|l| l.starts_with("::notice") && l.contains("R-MEM-OK")),
        "{gh}"
    );
    let html = read(dir.path(), "a.html");
    assert!(html.contains("s-suppressed"), "{html}");
}

#[test]
fn every_fail_accepted_is_exit_0_and_past_the_expiry_it_fails_again() {
    let dir = tempfile::tempdir().unwrap();
    let b = "accepted:\n  - check: memory\n    reason: staging\n    expiry: 2026-12-31\n  - check: cpu\n    reason: staging\n    expiry: 2026-12-31\n";
    std::fs::write(dir.path().join("b.yaml"), b).unwrap();
    let out = audit(dir.path(), &["--baseline", "b.yaml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("0 fail, 3 warn, 5 pass, 0 skip, 2 suppressed"),
        "{text}"
    );
    assert!(text.contains("suppressed memory: staging (baseline until 2026-12-31; was fail)"));
    // The same file a month later: both entries expired, the job fails with the reason.
    let t = fixture("small-container");
    let out = common::rtcheck()
        .current_dir(dir.path())
        .env("RTCHECK_TODAY", "2027-01-01")
        .args([
            "audit",
            "--no-proxy-config",
            "--baseline",
            "b.yaml",
            "--procfs",
        ])
        .arg(t.join("proc"))
        .arg("--sysfs")
        .arg(t.join("sys"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("entry memory expired on 2026-12-31 (reason: staging)"),
        "{text}"
    );
}

#[test]
fn write_baseline_starts_one_whose_placeholders_fail_until_filled_in() {
    let dir = tempfile::tempdir().unwrap();
    let out = audit(
        dir.path(),
        &["--write-baseline", "new.yaml", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let text = read(dir.path(), "new.yaml");
    let b: Value = serde_yaml::from_str(&text).unwrap();
    let checks: Vec<&str> = b["accepted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        checks,
        ["tcp-wmem", "tcp-keepalive", "somaxconn", "memory", "cpu"]
    );
    for e in b["accepted"].as_array().unwrap() {
        assert_eq!(e["expiry"], "2027-03-01", "{text}");
    }
    let out = audit(dir.path(), &["--baseline", "new.yaml", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let placeholders = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["id"] == "baseline" && f["observed"].as_str().unwrap().contains("placeholder")
        })
        .count();
    assert_eq!(placeholders, 5, "{v:#}");
    assert_eq!(v["summary"]["suppressed"], 0);
    // Reasons filled in: everything accepted, exit 0.
    let filled = text.replace("FILL IN: why this finding is accepted", "staging host");
    std::fs::write(dir.path().join("new.yaml"), filled).unwrap();
    let out = audit(dir.path(), &["--baseline", "new.yaml", "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v:#}");
    assert_eq!(v["summary"]["suppressed"], 5);
}

#[test]
fn a_bad_baseline_file_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("b.yaml"),
        "accepted:\n  - check: cpu\n    why: x\n",
    )
    .unwrap();
    for (file, want) in [
        (
            "b.yaml",
            "--baseline b.yaml: accepted[0]: unknown field `why`",
        ),
        ("/dev/zero", "--baseline /dev/zero: "),
        ("missing.yaml", "--baseline missing.yaml: "),
    ] {
        let out = audit(dir.path(), &["--baseline", file]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(want), "{file}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(out.stdout.is_empty());
    }
    let out = common::rtcheck()
        .env("RTCHECK_TODAY", "tomorrow")
        .args(["audit", "--baseline", "x.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("RTCHECK_TODAY: `tomorrow`"));
}

// ---- SARIF against the SARIF 2.1.0 JSON schema ----

/// The OASIS schema (tests/fixtures/sarif/sarif-schema-2.1.0.json, from the
/// oasis-tcs/sarif-spec repository's sarif-2.1/schema): `log` must validate.
fn schema_valid(what: &str, log: &Value) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("sarif/sarif-schema-2.1.0.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = v
        .iter_errors(log)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: SARIF invalid:\n{}",
        errors.join("\n")
    );
    assert_eq!(log["version"], "2.1.0");
}

#[test]
fn the_schema_check_can_fail() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("sarif/sarif-schema-2.1.0.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    // A level SARIF does not have, and a result without a message.
    let bad = serde_json::json!({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
        "results": [{"ruleId": "a", "level": "fatal", "message": {"text": "m"}}, {"ruleId": "b"}]}]});
    assert!(v.iter_errors(&bad).count() >= 2);
}

fn sarif_of(cmd: &mut assert_cmd::Command) -> Value {
    let out = cmd.output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn sarif_of_audit_lint_and_review_validates_against_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let out = audit(dir.path(), &["--format", "sarif"]);
    schema_valid("audit", &serde_json::from_slice(&out.stdout).unwrap());
    // A proxy host's audit: lint findings with a file and line inside.
    let log = sarif_of(
        common::rtcheck()
            .arg("lint")
            .arg(fixture("lint/guides/nginx.conf"))
            .args(["--format", "sarif", "--fail-on", "never"]),
    );
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert!(results.iter().any(
        |r| r["locations"][0]["physicalLocation"]["region"]["startLine"]
            .as_u64()
            .is_some()
    ));
    schema_valid("lint", &log);
    let answers = dir.path().join("answers.yaml");
    std::fs::write(
        &answers,
        "answers:\n  - id: write-deadline\n    answer: no\n  - id: seq-numbers\n    answer: na\n    reason: prices only\n",
    )
    .unwrap();
    let log = sarif_of(
        common::rtcheck()
            .arg("review")
            .arg("--answers")
            .arg(&answers)
            .args(["--format", "sarif", "--fail-on", "never"]),
    );
    assert!(!log["runs"][0]["results"].as_array().unwrap().is_empty());
    schema_valid("review", &log);
}

#[test]
fn probe_sarif_validates_and_its_gauges_carry_a_url_label() {
    let s = probe_common::Serve::start(&["--rate", "5", "--size", "256", "--ping", "2s"]);
    let ws = format!("ws://{}/ws?token=s3cret", s.addr);
    let sse = format!("http://{}/sse", s.addr);
    let dir = tempfile::tempdir().unwrap();
    let out = common::rtcheck()
        .current_dir(dir.path())
        .args([
            "probe",
            "--quick",
            "--format",
            "sarif",
            "--report",
            "prometheus=p.prom",
        ])
        .args([&ws, &sse])
        .output()
        .unwrap();
    let log: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    schema_valid("probe", &log);
    let prom = read(dir.path(), "p.prom");
    assert!(!prom.contains("s3cret"), "{prom}");
    let sc = scrape(&prom);
    let url_ws = format!("ws://{}/ws", s.addr);
    let url_sse = format!("http://{}/sse", s.addr);
    let st = "rtcheck_check_status";
    // One state set per check and URL: upgrade on /ws, resume on /sse.
    let up: f64 = ["pass", "warn", "fail", "skip", "suppressed"]
        .iter()
        .map(|x| {
            gauge(
                &sc,
                st,
                &[("check", "upgrade"), ("url", &url_ws), ("status", x)],
            )
        })
        .sum();
    assert_eq!(up, 1.0, "{prom}");
    let resume = ["pass", "warn", "fail", "skip", "suppressed"]
        .iter()
        .map(|x| {
            gauge(
                &sc,
                st,
                &[("check", "resume"), ("url", &url_sse), ("status", x)],
            )
        })
        .sum::<f64>();
    assert_eq!(resume, 1.0, "{prom}");
    assert!(gauge(&sc, "rtcheck_last_run_timestamp_seconds", &[]) > 1.7e9);
}

// ---- --threshold on bench fanout ----

fn fanout(dir: &Path, args: &[&str]) -> std::process::Output {
    common::rtcheck()
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .args(["bench", "fanout", "--connections", "20", "--rounds", "20"])
        .args(["--scenario", "A", "--no-floor"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn bench_fanout_thresholds_gate_the_job_with_their_own_line_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    // p99.9 under a microsecond cannot hold on loopback; drops == 0 does on 20 clients.
    let out = fanout(
        dir.path(),
        &[
            "--threshold",
            "A.p999 < 1us",
            "--threshold",
            "A.drops == 0",
            "--format",
            "json",
            "--report",
            "text=b.txt",
            "--report",
            "markdown=b.md",
            "--report",
            "html=b.html",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(v["valid"], true, "{v:#}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let t = v["thresholds"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t[0]["status"], "fail");
    assert!(t[0]["observed"]
        .as_str()
        .unwrap()
        .starts_with("scenarios[0].p999_ms = "));
    assert_eq!(t[1]["status"], "pass");
    let text = read(dir.path(), "b.txt");
    assert!(
        text.contains("fail threshold A.p999 < 1us: scenarios[0].p999_ms"),
        "{text}"
    );
    assert!(
        text.contains("pass threshold A.drops == 0: scenarios[0].drops = 0"),
        "{text}"
    );
    assert!(read(dir.path(), "b.md").contains("- fail threshold A.p999 < 1us"));
    assert!(read(dir.path(), "b.html").contains("data-status=\"fail\">fail threshold A.p999"));
    // Only thresholds that hold: exit 0.
    let out = fanout(dir.path(), &["--threshold", "A.drops == 0"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn an_unknown_threshold_name_is_exit_2_and_the_measured_report_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let out = fanout(dir.path(), &["--threshold", "A.p9999 < 1s", "-o", "r.txt"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no key `p9999`") && err.contains("p999_ms"),
        "{err}"
    );
    assert!(read(dir.path(), "r.txt").contains("A valid"));
}

// ---- the baseline on lint (by file), review (by id) and verify delivery ----

#[test]
fn lint_entries_match_by_file_and_review_entries_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nginx.conf");
    std::fs::copy(fixture("lint/guides/nginx.conf"), &conf).unwrap();
    let lint = |baseline: &str| {
        std::fs::write(dir.path().join("b.yaml"), baseline).unwrap();
        let out = common::rtcheck()
            .current_dir(dir.path())
            .args([
                "lint",
                "nginx.conf",
                "--fail-on",
                "warn",
                "--format",
                "json",
            ])
            .args(["--baseline", "b.yaml"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            out.status.code(),
            finding(&v, "nginx-read-timeout")["status"].clone(),
        )
    };
    let entry = |file: &str| {
        format!("accepted:\n  - check: nginx-read-timeout\n    file: {file}\n    reason: long polls\n    expiry: 2099-01-01\n")
    };
    assert_eq!(lint(&entry("nginx.conf")), (Some(0), "suppressed".into()));
    assert_eq!(lint(&entry("./nginx.conf")), (Some(0), "suppressed".into()));
    assert_eq!(lint(&entry("other/nginx.conf")), (Some(1), "warn".into()));
    let answers = dir.path().join("a.yaml");
    std::fs::write(
        &answers,
        "answers:\n  - id: write-deadline\n    answer: no\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("r.yaml"),
        "accepted:\n  - check: write-deadline\n    reason: R-WD the proxy cuts slow peers\n    expiry: 2099-01-01\n",
    )
    .unwrap();
    let out = common::rtcheck()
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .arg("review")
        .arg("--answers")
        .arg(&answers)
        .args(["--only", "write-deadline", "--baseline", "r.yaml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("suppressed write-deadline: R-WD the proxy cuts slow peers"),
        "{text}"
    );
}

#[test]
fn verify_delivery_shows_an_expired_entry_and_other_experiments_refuse_a_baseline() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("b.yaml"),
        "accepted:\n  - check: delivery-snapshot-storm-latest-first\n    reason: R-OLD\n    expiry: 2026-01-01\n",
    )
    .unwrap();
    let out = common::rtcheck()
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("RTCHECK_TODAY", "2026-12-01")
        .args([
            "verify",
            "delivery",
            "--delivery",
            "snapshot",
            "--connections",
            "5",
        ])
        .args(["--baseline", "b.yaml", "--report", "json=d.json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = "fail Baseline entry delivery-snapshot-storm-latest-first: entry \
                delivery-snapshot-storm-latest-first expired on 2026-01-01 (reason: R-OLD)";
    assert!(text.replace("\n    ", " ").contains(line), "{text}");
    let v: Value = serde_json::from_str(&read(dir.path(), "d.json")).unwrap();
    assert_eq!(finding(&v, "baseline")["status"], "fail");
    let out = common::rtcheck()
        .args(["verify", "fd-limit", "--baseline", "b.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("apply to `verify delivery` only"));
}

#[cfg(feature = "redis")]
#[test]
fn bench_cluster_thresholds_gate_and_an_unknown_name_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = |args: &[&str]| {
        common::rtcheck()
            .current_dir(dir.path())
            .args(["bench", "cluster", "--scenario", "single", "--rounds", "10"])
            .args(["--connections", "10"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = cluster(&[
        "--threshold",
        "single.p99 < 1us",
        "--threshold",
        "lost_silently == 0",
        "--format",
        "yaml",
        "--save-json",
        "c.json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let y: Value = serde_yaml::from_slice(&out.stdout).unwrap();
    let st: Vec<&str> = y["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(st, ["fail", "pass"]);
    let j: Value = serde_json::from_str(&read(dir.path(), "c.json")).unwrap();
    assert_eq!(
        j["thresholds"][1]["observed"],
        "scenarios[0].lost_silently = 0"
    );
    let out = cluster(&["--threshold", "lost_quietly == 0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no key `lost_quietly`") && err.contains("lost_silently"),
        "{err}"
    );
}

#[test]
fn probe_entries_match_by_url_and_the_suppression_shows_in_every_format() {
    let s = probe_common::Serve::start(&["--rate", "5", "--size", "256"]);
    let nope = format!("http://{}/nope", s.addr);
    let sse = format!("http://{}/sse", s.addr);
    let dir = tempfile::tempdir().unwrap();
    // The entry names the 404 URL (with a query and user info that must not matter).
    let entry_url = format!("http://user:pw@{}/nope/?k=v", s.addr);
    std::fs::write(
        dir.path().join("b.yaml"),
        format!("accepted:\n  - check: response\n    url: {entry_url}\n    reason: RESP-OK retired endpoint\n    expiry: 2099-01-01\n"),
    )
    .unwrap();
    let formats = [
        ("json", "p.json"),
        ("yaml", "p.yaml"),
        ("markdown", "p.md"),
        ("junit", "p.xml"),
        ("github", "p.gh"),
        ("html", "p.html"),
        ("sarif", "p.sarif"),
        ("prometheus", "p.prom"),
    ];
    let mut cmd = common::rtcheck();
    cmd.current_dir(dir.path())
        .env("NO_COLOR", "1")
        .args(["probe", "--quick", "--baseline", "b.yaml", "-o", "p.txt"])
        .args([&nope, &sse]);
    for (f, p) in formats {
        cmd.args(["--report", &format!("{f}={p}")]);
    }
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&read(dir.path(), "p.json")).unwrap();
    let resp: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "response")
        .collect();
    assert!(!resp.is_empty());
    for f in resp {
        let on_nope = f["title"].as_str().unwrap().ends_with("/nope");
        let want = if on_nope { "suppressed" } else { "pass" };
        assert_eq!(f["status"], want, "{f:#}");
    }
    for (f, p) in formats.iter().chain(&[("text", "p.txt")]) {
        let text = read(dir.path(), p);
        assert!(text.contains("RESP-OK"), "{f}: no reason:\n{text}");
    }
    assert!(!read(dir.path(), "p.prom").contains("pw"));
    let sc = scrape(&read(dir.path(), "p.prom"));
    let st = [
        ("check", "response"),
        ("url", nope.as_str()),
        ("status", "suppressed"),
    ];
    assert_eq!(gauge(&sc, "rtcheck_check_status", &st), 1.0);
    schema_valid(
        "probe with a suppression",
        &serde_json::from_str(&read(dir.path(), "p.sarif")).unwrap(),
    );
}
