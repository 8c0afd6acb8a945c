//! `rtcheck audit` end to end: every format parsed back, exit codes, --skip, colours,
//! --output, errors, and the guarantee that an audit writes nothing under its roots.
use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn tree(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn audit(name: &str) -> Command {
    let mut c = Command::cargo_bin("rtcheck").unwrap();
    c.arg("audit")
        .arg("--procfs")
        .arg(tree(name).join("proc"))
        .arg("--sysfs")
        .arg(tree(name).join("sys"))
        .env_remove("NO_COLOR");
    c
}

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out).expect("stdout is JSON")
}

fn status_of(v: &Value, id: &str) -> String {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id}"))["status"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn json_has_the_canonical_keys_and_values() {
    let out = audit("stock-distro")
        .args(["--format", "json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    for key in ["profile", "findings", "summary", "duration_ms"] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["kind"], "audit");
    assert_eq!(v["profile"]["connections"], 10000);
    assert_eq!(v["profile"]["transport"], "websocket");
    assert_eq!(v["profile"]["role"], "server");
    let s = &v["summary"];
    assert_eq!(
        (
            s["pass"].as_u64(),
            s["warn"].as_u64(),
            s["fail"].as_u64(),
            s["skip"].as_u64()
        ),
        (Some(6), Some(3), Some(1), Some(0))
    );
    assert!(v["duration_ms"].as_f64().unwrap() >= 0.0);
    let fd = &v["findings"][0];
    assert_eq!(fd["id"], "fd-limit");
    assert_eq!(fd["status"], "fail");
    assert_eq!(fd["verify"], "fd-limit");
    assert_eq!(fd["numbers"]["soft"], 1024.0);
    for key in ["title", "observed", "expected", "rule", "evidence", "fix"] {
        assert!(fd.get(key).is_some(), "finding lacks {key}");
    }
    assert_eq!(fd["evidence"][0]["id"], "ulimit-n");
    assert_eq!(
        fd["evidence"][0]["value"],
        "limit 1,024 fds; connections_reached 1,018 connections"
    );
    assert_eq!(
        fd["evidence"][0]["source"],
        "\"Polling, SSE or WebSocket: four questions and an ops checklist\", part 6"
    );
    assert_eq!(fd["evidence"][0]["source_file"], "002_62b3c7fd33ca2a37.txt");
    assert_eq!(fd["evidence"][0]["part"], "part 6");
    assert!(fd["evidence"][0]["source_title"].is_string());
    assert!(fd["fix"]["runtime"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c.as_str().unwrap().starts_with("ulimit -n 12064")));
}

#[test]
fn flags_override_the_profile_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("profile.yaml");
    std::fs::write(
        &p,
        "connections: 5000\ntransport: sse\nrole: proxy\nrate: 2\n",
    )
    .unwrap();
    let out = audit("proxy")
        .args(["--format", "json", "--profile"])
        .arg(&p)
        .args(["--connections", "6000"])
        .assert()
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    assert_eq!(v["profile"]["connections"], 6000);
    assert_eq!(v["profile"]["transport"], "sse");
    assert_eq!(v["profile"]["role"], "proxy");
    assert_eq!(v["profile"]["rate"], 2.0);
    assert_eq!(status_of(&v, "ephemeral-ports"), "warn");
}

#[test]
fn junit_has_one_testcase_per_check_and_maps_statuses() {
    let parse = |fail_on: &str| -> BTreeMap<String, &'static str> {
        let out = audit("no-conntrack")
            .args([
                "--format",
                "junit",
                "--fail-on",
                fail_on,
                "--skip",
                "memory",
            ])
            .assert()
            .get_output()
            .stdout
            .clone();
        let xml = String::from_utf8(out).unwrap();
        let doc = roxmltree::Document::parse(&xml).expect("valid XML");
        let mut m = BTreeMap::new();
        for tc in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
            let kind = if tc.children().any(|c| c.has_tag_name("failure")) {
                "failure"
            } else if tc.children().any(|c| c.has_tag_name("skipped")) {
                "skipped"
            } else {
                "ok"
            };
            if kind == "ok" {
                // Passing cases (and warns below --fail-on warn) carry their details.
                let out = tc
                    .children()
                    .find(|c| c.has_tag_name("system-out"))
                    .expect("system-out");
                assert!(out.text().unwrap().contains("observed: "));
            }
            m.insert(tc.attribute("name").unwrap().to_string(), kind);
        }
        m
    };
    let m = parse("fail");
    assert_eq!(m.len(), 10);
    assert_eq!(m["fd-limit"], "ok");
    assert_eq!(m["tcp-wmem"], "ok"); // warn, but --fail-on fail
    assert_eq!(m["conntrack"], "skipped");
    assert_eq!(m["memory"], "skipped");
    let m = parse("warn");
    assert_eq!(m["tcp-wmem"], "failure");
    // Role server: inbound TIME_WAIT holds no ephemeral port (as ephemeral-ports says).
    assert_eq!(m["time-wait"], "ok");
    assert_eq!(m["tcp-keepalive"], "failure");
    assert_eq!(m["fd-limit"], "ok");
    // A fail is a failure whatever --fail-on (even never, which only sets the exit code).
    for (fail_on, code) in [("fail", 1), ("never", 0)] {
        let out = audit("small-container")
            .args(["--format", "junit", "--fail-on", fail_on])
            .assert()
            .code(code)
            .get_output()
            .stdout
            .clone();
        let xml = String::from_utf8(out).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let failing: Vec<&str> = doc
            .descendants()
            .filter(|n| {
                n.has_tag_name("testcase") && n.children().any(|c| c.has_tag_name("failure"))
            })
            .map(|n| n.attribute("name").unwrap())
            .collect();
        assert_eq!(failing, ["memory", "cpu"]);
        let suite = doc
            .descendants()
            .find(|n| n.has_tag_name("testsuite"))
            .unwrap();
        assert_eq!(suite.attribute("tests"), Some("10"));
        assert_eq!(suite.attribute("failures"), Some("2"));
    }
}

#[test]
fn exit_codes_follow_fail_on() {
    // tuned-server as its service: all pass.
    let tuned = |fail_on: &str| {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.yaml");
        std::fs::write(&p, "connections: 50000\nrate: 2\n").unwrap();
        audit("tuned-server")
            .args([
                "--pid",
                "4242",
                "--format",
                "json",
                "--fail-on",
                fail_on,
                "--profile",
            ])
            .arg(&p)
            .assert()
            .get_output()
            .status
            .code()
    };
    assert_eq!(tuned("warn"), Some(0));
    // proxy has warnings and no fail.
    let code = |name: &str, fail_on: &str| {
        audit(name)
            .args(["--format", "json", "--fail-on", fail_on])
            .assert()
            .get_output()
            .status
            .code()
    };
    assert_eq!(code("proxy", "fail"), Some(0));
    assert_eq!(code("proxy", "warn"), Some(1));
    assert_eq!(code("small-container", "fail"), Some(1));
    assert_eq!(code("small-container", "never"), Some(0));
}

#[test]
fn skip_shows_the_check_as_skipped_and_unknown_ids_exit_2() {
    let out = audit("small-container")
        .args(["--format", "json", "--skip", "memory,cpu"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    assert_eq!(v["findings"].as_array().unwrap().len(), 10);
    assert_eq!(status_of(&v, "memory"), "skip");
    assert_eq!(status_of(&v, "cpu"), "skip");
    assert_eq!(v["summary"]["skip"], 2);
    assert_eq!(v["summary"]["fail"], 0);
    let a = audit("small-container")
        .args(["--skip", "memory", "fd-limits"])
        .assert()
        .code(2);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(err.contains("unknown check id `fd-limits`"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(a.get_output().stdout.is_empty());
}

#[test]
fn text_honours_no_color_and_color_flag() {
    let plain = audit("stock-distro")
        .env("NO_COLOR", "1")
        .args(["--color", "auto"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let plain = String::from_utf8(plain).unwrap();
    assert!(!plain.contains('\u{1b}'), "escape codes despite NO_COLOR");
    assert!(
        plain.contains("fd-limit") && plain.contains("1 fail"),
        "{plain}"
    );
    let coloured = audit("stock-distro")
        .env("NO_COLOR", "1")
        .args(["--color", "always"])
        .assert()
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8(coloured).unwrap().contains("\u{1b}["));
    let never = audit("stock-distro")
        .args(["--color", "never"])
        .assert()
        .get_output()
        .stdout
        .clone();
    assert!(!String::from_utf8(never).unwrap().contains('\u{1b}'));
}

#[test]
fn markdown_and_github_formats() {
    let md = audit("small-container")
        .args(["--format", "markdown"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8(md).unwrap();
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(" | `"))
        .collect();
    assert_eq!(rows.len(), 10, "{md}");
    assert!(rows
        .iter()
        .any(|r| r.contains("`memory`") && r.contains("fail")));
    assert!(md.contains("- **fail** `memory`: "), "{md}");
    let gh = audit("small-container")
        .args(["--format", "github"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let gh = String::from_utf8(gh).unwrap();
    let errors: Vec<&str> = gh.lines().filter(|l| l.starts_with("::error ")).collect();
    let warnings: Vec<&str> = gh.lines().filter(|l| l.starts_with("::warning ")).collect();
    assert_eq!(errors.len(), 2, "{gh}");
    assert_eq!(warnings.len(), 3, "{gh}");
    assert!(
        errors[0].starts_with("::error title=rtcheck audit memory (fail)::"),
        "{}",
        errors[0]
    );
    // One line per annotation: newlines are escaped.
    assert!(gh.lines().all(|l| l.starts_with("::")));
}

#[test]
fn output_file_is_written_whole() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.json");
    audit("proxy")
        .args(["--format", "json", "--output"])
        .arg(&p)
        .assert()
        .code(0)
        .stdout("");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(v["summary"]["warn"], 3);
    // An unwritable destination is an error (exit 2) and leaves nothing behind.
    let bad = dir.path().join("missing").join("x.json");
    audit("proxy")
        .args(["--format", "json", "--output"])
        .arg(&bad)
        .assert()
        .code(2);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    let one_line = |a: assert_cmd::assert::Assert, needle: &str| {
        let a = a.code(2);
        let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
        assert!(err.contains(needle), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    };
    let mut c = Command::cargo_bin("rtcheck").unwrap();
    one_line(
        c.args(["audit", "--procfs", "/nonexistent/proc"]).assert(),
        "--procfs /nonexistent/proc: not a directory",
    );
    one_line(
        audit("stock-distro").args(["--pid", "999999"]).assert(),
        "--pid 999999: no such process",
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.yaml");
    std::fs::write(&p, "connections: 10\nconections: 5\n").unwrap();
    one_line(
        audit("stock-distro").arg("--profile").arg(&p).assert(),
        "bad.yaml:2",
    );
    // A tree where nothing can be measured is not a report: one line, exit 2, no stdout,
    // whatever --fail-on (a wrong container mount must not be green in CI).
    for fail_on in ["warn", "never"] {
        let a = audit("broken")
            .args(["--format", "json", "--fail-on", fail_on])
            .assert();
        assert!(a.get_output().stdout.is_empty(), "no report of nothing");
        one_line(a, "nothing could be measured: all 10 checks skipped");
    }
    let empty = tempfile::tempdir().unwrap();
    let mut c = Command::cargo_bin("rtcheck").unwrap();
    one_line(
        c.args(["audit", "--format", "junit", "--procfs"])
            .arg(empty.path())
            .arg("--sysfs")
            .arg(empty.path())
            .assert(),
        "(first: fd-limit: ",
    );
}

/// Copy a fixture tree so a test can remove one file from it.
fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

#[test]
fn a_required_check_not_measured_fails_ci_and_skips_are_counted() {
    // proxy passes at --fail-on fail; without /proc/meminfo, memory cannot be measured.
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&tree("proxy"), dir.path());
    std::fs::remove_file(dir.path().join("proc/meminfo")).unwrap();
    let run = |extra: &[&str]| {
        let mut c = Command::cargo_bin("rtcheck").unwrap();
        c.arg("audit")
            .arg("--procfs")
            .arg(dir.path().join("proc"))
            .arg("--sysfs")
            .arg(dir.path().join("sys"))
            .args(["--format", "junit"])
            .args(extra);
        c.assert()
    };
    let a = run(&[]).code(1);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("required check not measured: memory (memory: ") && err.contains("meminfo"),
        "{err}"
    );
    let xml = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("skipped"), Some("1"), "{xml}");
    let memory = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("memory"))
        .unwrap();
    assert!(memory.children().any(|c| c.has_tag_name("skipped")));
    // Skipped on purpose: not a CI failure, still reported as skipped.
    run(&["--skip", "memory"]).code(0);
    run(&["--fail-on", "never"]).code(0);
}

#[test]
fn fail_on_skip_trips_on_a_check_not_measured_but_not_on_a_requested_skip() {
    // no-conntrack: conntrack skips (module not loaded); 5 warns.
    audit("no-conntrack")
        .args(["--fail-on", "skip", "--format", "json"])
        .assert()
        .code(1);
    audit("no-conntrack")
        .args(["--fail-on", "fail"])
        .assert()
        .code(0);
    // proxy: nothing skipped, warns trip --fail-on skip as they trip warn.
    audit("proxy").args(["--fail-on", "skip"]).assert().code(1);
    let out = audit("no-conntrack")
        .args(["--format", "junit", "--fail-on", "skip"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let xml = String::from_utf8(out).unwrap();
    assert!(xml.contains("<testsuite skipped=\"1\""), "{xml}");
}

/// Every file under `dir` with its bytes and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut m = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                let meta = e.metadata().unwrap();
                m.insert(
                    p.clone(),
                    (std::fs::read(&p).unwrap(), meta.modified().unwrap()),
                );
            }
        }
    }
    m
}

#[test]
fn audit_never_writes_under_its_roots() {
    for name in [
        "stock-distro",
        "tuned-server",
        "small-container",
        "proxy",
        "no-conntrack",
        "broken",
    ] {
        let before = snapshot(&tree(name));
        // broken: nothing measurable, exit 2 (no report) whatever --fail-on.
        let code = if name == "broken" { 2 } else { 0 };
        for format in ["text", "json", "junit", "markdown", "github", "yaml"] {
            audit(name)
                .args(["--format", format, "--fail-on", "never"])
                .assert()
                .code(code);
        }
        assert_eq!(snapshot(&tree(name)), before, "{name} changed");
    }
}
