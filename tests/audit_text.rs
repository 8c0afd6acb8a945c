//! The default audit text read as a user would at 80 columns: the verdict first, one table
//! line per check, details only for fail and warn; `--explain` and `rtcheck explain ID`
//! give the full rule, evidence and fix. Values are checked against the JSON of the same run.
use assert_cmd::Command;
use serde_json::Value;
use std::path::PathBuf;

fn tree(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn audit(name: &str, extra: &[&str]) -> (String, i32) {
    let out = Command::cargo_bin("rtcheck")
        .unwrap()
        .arg("audit")
        .arg("--procfs")
        .arg(tree(name).join("proc"))
        .arg("--sysfs")
        .arg(tree(name).join("sys"))
        .args(extra)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        out.status.code().unwrap(),
    )
}

fn statuses(json: &Value) -> Vec<(String, String)> {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn default_text_fits_80_columns_with_one_line_per_check() {
    // "broken" measures nothing: one line and exit 2 (tests/audit_cli.rs), no table.
    for fixture in ["stock-distro", "tuned-server", "small-container"] {
        let (text, code) = audit(fixture, &[]);
        let (json, jcode) = audit(fixture, &["--format", "json"]);
        assert_eq!(code, jcode, "{fixture}: text and json exit codes differ");
        let json: Value = serde_json::from_str(&json).unwrap();
        for l in text.lines() {
            assert!(
                l.chars().count() <= 80,
                "{fixture}: {} cols: {l}",
                l.chars().count()
            );
        }
        // The verdict comes before the table, in the order every format uses.
        let s = &json["summary"];
        let verdict = format!(
            "{} fail, {} warn, {} pass, {} skip in ",
            s["fail"], s["warn"], s["pass"], s["skip"]
        );
        let pos = text
            .find(&verdict)
            .unwrap_or_else(|| panic!("{fixture}: {text}"));
        assert!(pos < text.find(" status ").unwrap(), "{text}");
        // One table line per check, with the status the JSON has.
        let expected = statuses(&json);
        let rows: Vec<(String, String)> = text
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let (st, id) = (w.next()?, w.next()?);
                let st = st.to_string();
                (l.starts_with(' ') && ["pass", "warn", "fail", "skip"].contains(&st.as_str()))
                    .then(|| (id.to_string(), st))
            })
            .collect();
        assert_eq!(rows, expected, "{fixture}: {text}");
        // Details only for fail and warn: a block header `STATUS ID: title` for each.
        let detailed: Vec<(String, String)> = text
            .lines()
            .filter(|l| l.starts_with("warn ") || l.starts_with("fail "))
            .map(|l| {
                let (st, rest) = l.split_once(' ').unwrap();
                (rest.split(':').next().unwrap().to_string(), st.to_string())
            })
            .collect();
        let needs_action: Vec<_> = expected
            .iter()
            .filter(|(_, st)| st == "warn" || st == "fail")
            .cloned()
            .collect();
        assert_eq!(detailed, needs_action, "{fixture}: {text}");
        assert!(
            !text.contains("  rule:"),
            "{fixture}: rules belong to --explain"
        );
    }
}

#[test]
fn explain_shows_every_check_with_its_rule_and_evidence() {
    let (text, _) = audit("stock-distro", &["--explain"]);
    let (json, _) = audit("stock-distro", &["--format", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    for f in json["findings"].as_array().unwrap() {
        let id = f["id"].as_str().unwrap();
        let header = format!("{} {id}: ", f["status"].as_str().unwrap());
        let block = text
            .split("\n\n")
            .find(|b| b.starts_with(&header))
            .unwrap_or_else(|| panic!("no block for {id}: {text}"));
        if f["status"] == "skip" {
            continue;
        }
        assert!(block.contains("\n  rule:     "), "{block}");
        for e in f["evidence"].as_array().unwrap() {
            assert!(
                block.contains(&format!("[{}]", e["id"].as_str().unwrap())),
                "{id}: evidence {} missing: {block}",
                e["id"]
            );
        }
    }
}

#[test]
fn explain_command_takes_check_and_evidence_ids() {
    let run = |args: &[&str]| {
        Command::cargo_bin("rtcheck")
            .unwrap()
            .arg("explain")
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let fixture = tree("stock-distro");
    let procfs = fixture.join("proc");
    let sysfs = fixture.join("sys");
    let out = run(&[
        "fd-limit",
        "--procfs",
        procfs.to_str().unwrap(),
        "--sysfs",
        sysfs.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("fail fd-limit: "), "{text}");
    assert!(
        text.contains("  rule:     ") && text.contains("[ulimit-n]"),
        "{text}"
    );
    let out = run(&["ulimit-n"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8(out.stdout).unwrap().contains("1,018"));
    let out = run(&["fd-limt"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("closest: fd-limit"), "{err}");
}
