//! `--report FORMAT=PATH`: one run, several report files, each parsed back; a bad FORMAT
//! is a usage error naming the flag; a file that cannot be written leaves none behind.
use crate::common;
use common::rtcheck_isolated as rtcheck;
use serde_json::Value;

#[test]
fn one_audit_run_writes_junit_markdown_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let (junit, md, json) = (
        dir.path().join("audit.xml"),
        dir.path().join("summary.md"),
        dir.path().join("audit.json"),
    );
    let out = rtcheck()
        .args(["audit", "--format", "json", "--fail-on", "never"])
        .arg("--report")
        .arg(format!("junit={}", junit.display()))
        .arg("--report")
        .arg(format!("markdown={}", md.display()))
        .arg("--report")
        .arg(format!("json={}", json.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // stdout (--format json) and the json file are the same run.
    let stdout: Value = serde_json::from_slice(&out.stdout).unwrap();
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(stdout["findings"], file["findings"]);
    let ids: Vec<&str> = file["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"fd-limit"), "{ids:?}");
    // junit: one testcase per finding, named by its check id.
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| n.attribute("name").unwrap_or_default().to_string())
        .collect();
    assert_eq!(cases.len(), ids.len(), "{xml}");
    for id in &ids {
        assert!(
            cases.iter().any(|c| c.contains(id)),
            "{id} not in {cases:?}"
        );
    }
    // markdown: every check id in the summary, and no colour codes in a file.
    let md = std::fs::read_to_string(&md).unwrap();
    for id in &ids {
        assert!(md.contains(id), "{id} not in the markdown");
    }
    assert!(!md.contains('\u{1b}'));
}

#[test]
fn a_format_outside_the_commands_set_is_a_usage_error_naming_the_flag() {
    let out = rtcheck()
        .args(["bench", "idle", "--report", "yaml=x.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--report"), "{e}");
    assert!(
        e.contains("text, json, markdown, junit, github, html"),
        "{e}"
    );
}

#[test]
fn one_unwritable_report_leaves_no_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let ok = dir.path().join("ok.json");
    let out = rtcheck()
        .args(["audit", "--fail-on", "never", "-o"])
        .arg(dir.path().join("audit.txt"))
        .arg("--report")
        .arg(format!("json={}", ok.display()))
        .arg("--report")
        .arg(format!("junit={}/no/such/dir/a.xml", dir.path().display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("a.xml"), "{e}");
    assert!(
        !ok.exists(),
        "ok.json written although the junit file failed"
    );
    assert!(!dir.path().join("audit.txt").exists());
    // The same path twice is refused before the run.
    let out = rtcheck()
        .args(["audit", "-o"])
        .arg(&ok)
        .arg("--report")
        .arg(format!("json={}", ok.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("given twice"));
}

#[test]
fn audit_prometheus_gauges_parse_back_one_status_per_check() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("rtcheck.prom");
    let out = rtcheck()
        .args([
            "audit",
            "--format",
            "json",
            "--fail-on",
            "never",
            "--report",
        ])
        .arg(format!("prometheus={}", prom.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = std::fs::read_to_string(&prom).unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let gauge = |s: &prometheus_parse::Sample| match s.value {
        prometheus_parse::Value::Gauge(v) => v,
        ref other => panic!("{} is not a gauge: {other:?}", s.metric),
    };
    for f in json["findings"].as_array().unwrap() {
        let id = f["id"].as_str().unwrap();
        let on: Vec<&str> = scrape
            .samples
            .iter()
            .filter(|s| s.metric == "rtcheck_check_status" && s.labels.get("check") == Some(id))
            .filter(|s| gauge(s) == 1.0)
            .map(|s| s.labels.get("status").unwrap())
            .collect();
        assert_eq!(on, [f["status"].as_str().unwrap()], "{id}: {text}");
    }
    let ts = scrape
        .samples
        .iter()
        .find(|s| s.metric == "rtcheck_last_run_timestamp_seconds")
        .map(gauge)
        .unwrap_or_else(|| panic!("no timestamp: {text}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((now - ts).abs() < 300.0, "{ts} vs {now}");
}
