//! Hostile input files (issue 21, item 6): every file flag refuses a device, a FIFO and a
//! file over 1 MiB in one line naming the flag and the file, exit 2, in bounded time; YAML
//! nested past the bound is refused before the parser's quadratic time; text from an
//! answers file is escaped in every human format (no raw control characters, no line
//! that starts a GitHub workflow command).
use crate::common;
use common::rtcheck;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Every flag that reads a file, as `(args before the path, flag)`.
const FILE_FLAGS: &[(&[&str], &str)] = &[
    (&["choose", "--no-input", "--answers"], "--answers"),
    (&["audit", "--profile"], "--profile"),
    (&["review", "--answers"], "--answers"),
    (&["review", "--profile"], "--profile"),
    (&["review", "--evidence"], "--evidence"),
    (&["verify", "delivery", "--profile"], "--profile"),
    (&["explain", "fd-limit", "--profile"], "--profile"),
    (&["probe", "http://127.0.0.1:9/", "--profile"], "--profile"),
    (&["probe", "https://127.0.0.1:9/", "--ca"], "--ca"),
    (&["budget", "--hops"], "--hops"),
    (
        &["serve", "--listen", "127.0.0.1:0", "--control-token-file"],
        "--control-token-file",
    ),
];

/// Run with `path` after each flag: exit 2 within 20 s, one stderr line naming flag and path
/// and containing `why`.
fn refused_everywhere(path: &Path, why: &str) {
    refused_by(FILE_FLAGS, path, why)
}

fn refused_by(flags: &[(&[&str], &str)], path: &Path, why: &str) {
    for (args, flag) in flags {
        let t0 = Instant::now();
        let out = rtcheck()
            .args(*args)
            .arg(path)
            .timeout(Duration::from_secs(20))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let ctx = format!("{args:?} {}: {err}", path.display());
        assert_eq!(out.status.code(), Some(2), "{ctx}");
        assert_eq!(err.lines().count(), 1, "{ctx}");
        assert!(err.contains(&format!("{flag} {}", path.display())), "{ctx}");
        assert!(err.contains(why), "{ctx}");
        assert!(t0.elapsed() < Duration::from_secs(20), "{ctx}");
    }
}

#[test]
fn every_file_flag_refuses_a_device() {
    refused_everywhere(Path::new("/dev/zero"), "a device, not a regular file");
}

#[test]
fn every_file_flag_refuses_a_fifo_without_blocking() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    refused_everywhere(&fifo, "a FIFO");
}

#[test]
fn every_file_flag_refuses_a_file_over_1_mib() {
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big.yaml");
    let line = "# padding padding padding padding padding padding padding\n";
    std::fs::write(&big, line.repeat((2 << 20) / line.len())).unwrap();
    let small: Vec<_> = FILE_FLAGS
        .iter()
        .copied()
        .filter(|(_, f)| *f != "--evidence")
        .collect();
    refused_by(&small, &big, "over the 1 MiB limit");
    // An rtcheck report read back may be larger (a long bench): 16 MiB.
    std::fs::write(&big, line.repeat((17 << 20) / line.len())).unwrap();
    refused_by(
        &[(&["review", "--evidence"], "--evidence")],
        &big,
        "over the 16 MiB limit",
    );
}

#[test]
fn deep_yaml_is_refused_fast_and_names_the_file() {
    let d = tempfile::tempdir().unwrap();
    let depth = 100_000;
    let flow = d.path().join("flow.yaml");
    let text = format!("answers: {}{}\n", "[".repeat(depth), "]".repeat(depth));
    std::fs::write(&flow, text).unwrap();
    let block = d.path().join("block.yaml");
    let text: String = (0..1000)
        .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
        .collect();
    std::fs::write(&block, text).unwrap();
    for f in [&flow, &block] {
        for args in [
            &["choose", "--no-input", "--answers"][..],
            &["audit", "--profile"],
            &["review", "--answers"],
            &["budget", "--hops"],
        ] {
            let t0 = Instant::now();
            let out = rtcheck().args(args).arg(f).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(&f.display().to_string()), "{err}");
            assert!(err.contains("nested deeper than 64 levels"), "{err}");
            // Was 19.8 s for the flow file before the pre-scan.
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{args:?} took {:?}",
                t0.elapsed()
            );
        }
    }
}

#[test]
fn review_escapes_control_characters_in_every_human_format() {
    let d = tempfile::tempdir().unwrap();
    let answers = d.path().join("a.yaml");
    std::fs::write(
        &answers,
        "answers:\n  - id: logging-config\n    answer: na\n    reason: \"ok\\n::error title=x::pwned \\u001b]0;TITLE\\u0007 \\r\"\n  - id: hot-path-alloc\n    answer: later\n    reason: \"x\\n::error title=x::later\"\n",
    )
    .unwrap();
    for format in ["text", "markdown", "html", "github"] {
        let out = rtcheck()
            .args(["review", "--format", format, "--answers"])
            .arg(&answers)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        // GitHub annotations carry fail and warn only; the skip reason shows elsewhere.
        if format != "github" {
            assert!(
                text.contains("pwned"),
                "{format}: the reason is shown:\n{text}"
            );
        }
        for l in text.lines() {
            assert!(
                !l.trim_start().starts_with("::error title=x"),
                "{format}: {l}"
            );
        }
        let raw = text
            .chars()
            .find(|c| c.is_control() && *c != '\n' && (format != "html" || *c != '\t'));
        assert_eq!(raw, None, "{format}: a raw control character:\n{text}");
    }
    // JSON keeps the reason exactly (it is data, escaped by JSON itself).
    let out = rtcheck()
        .args(["review", "--format", "json", "--answers"])
        .arg(&answers)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "logging-config")
        .unwrap();
    assert!(f["reason"].as_str().unwrap().contains("\n::error"));
}

/// `audit --procfs`: a FIFO or device in the tree is a skip naming the file, in bounded
/// time (a FIFO held the read forever).
#[test]
fn audit_procfs_tree_with_a_fifo_skips_the_check_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tuned-server");
    let ok = Command::new("cp")
        .arg("-r")
        .arg(src.join("proc"))
        .arg(src.join("sys"))
        .arg(d.path())
        .status()
        .unwrap();
    assert!(ok.success());
    let somax = d.path().join("proc/sys/net/core/somaxconn");
    std::fs::remove_file(&somax).unwrap();
    nix::unistd::mkfifo(&somax, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let out = rtcheck()
        .args([
            "audit",
            "--format",
            "json",
            "--fail-on",
            "never",
            "--procfs",
        ])
        .arg(d.path().join("proc"))
        .arg("--sysfs")
        .arg(d.path().join("sys"))
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "somaxconn")
        .unwrap();
    assert_eq!(f["status"], "skip", "{f}");
    let reason = f["reason"].as_str().unwrap();
    assert!(
        reason.contains("somaxconn: a FIFO, not a regular file"),
        "{reason}"
    );
}
