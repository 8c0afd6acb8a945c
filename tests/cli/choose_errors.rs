//! Bad input to `rtcheck choose`: one line naming file, line and field; exit 2; no panic;
//! no --save file; never a prompt without a terminal.
use crate::common;
use common::rtcheck;
use std::path::{Path, PathBuf};

/// Run `choose --answers FILE --save OUT`, expect exit 2 and one stderr line; return it.
fn fails_with_answers(dir: &Path, yaml: &str) -> String {
    let answers = dir.join("answers.yaml");
    std::fs::write(&answers, yaml).unwrap();
    let save = dir.join("saved.yaml");
    let out = rtcheck()
        .current_dir(dir)
        .args(["choose", "--answers", "answers.yaml", "--save"])
        .arg(&save)
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty());
    assert!(!save.exists(), "no --save file after an error");
    assert_no_temp_files(dir);
    err.trim_end().to_string()
}

fn assert_no_temp_files(dir: &Path) {
    let tmp: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(tmp.is_empty(), "{tmp:?}");
}

const GOOD: &str = "visible_within: 200ms\nupstream: sparse\nloss: shared\n";

#[test]
fn unknown_key_names_file_line_and_key() {
    let d = tempfile::tempdir().unwrap();
    let err = fails_with_answers(d.path(), &format!("{GOOD}conections: 5\n"));
    assert!(
        err.starts_with("rtcheck: error: answers.yaml:4:1: unknown field `conections`"),
        "{err}"
    );
}

#[test]
fn yaml_errors_carry_no_rust_type_names() {
    let d = tempfile::tempdir().unwrap();
    for (yaml, want) in [
        (
            "rate: fast\n",
            "answers.yaml:1:7: rate: expected a number, got `fast`",
        ),
        ("upstream: [none\n", "upstream: unclosed `[`"),
        (
            "visible_within: 5s\nupstream: [none\nloss: shared\n",
            "unclosed `[`",
        ),
    ] {
        let err = fails_with_answers(d.path(), yaml);
        assert!(err.contains(want), "{yaml:?}: {err}");
        for internal in ["u64", "f64", "YAML tag", "struct Profile"] {
            assert!(!err.contains(internal), "{yaml:?}: {err}");
        }
    }
}

#[test]
fn wrong_type_names_file_line_and_field() {
    let d = tempfile::tempdir().unwrap();
    let err = fails_with_answers(d.path(), &format!("{GOOD}connections: lots\n"));
    assert!(
        err.starts_with(
            "rtcheck: error: answers.yaml:4: connections: expected a whole number (20000, 20k, 1.5M), got `lots`"
        ),
        "{err}"
    );
    let err = fails_with_answers(d.path(), &format!("{GOOD}binary: maybe\n"));
    assert!(
        err.starts_with("rtcheck: error: answers.yaml:4:9: binary:"),
        "{err}"
    );
    let err = fails_with_answers(d.path(), "loss: sometimes\n");
    assert!(err.starts_with("rtcheck: error: answers.yaml:1"), "{err}");
    assert!(err.contains("sometimes"), "{err}");
}

#[test]
fn bad_duration_names_file_line_and_field() {
    let d = tempfile::tempdir().unwrap();
    let err = fails_with_answers(
        d.path(),
        "upstream: sparse\nloss: shared\nvisible_within: soon\n",
    );
    assert!(
        err.starts_with("rtcheck: error: answers.yaml:3: visible_within: invalid duration `soon`"),
        "{err}"
    );
    let err = fails_with_answers(d.path(), &format!("{GOOD}max_disconnect: 5\n"));
    assert!(
        err.starts_with("rtcheck: error: answers.yaml:4: max_disconnect: invalid duration `5`"),
        "{err}"
    );

    // The same through a flag: clap names the flag, exit 2.
    let out = rtcheck()
        .args([
            "choose",
            "--visible-within",
            "soon",
            "--upstream",
            "none",
            "--loss",
            "shared",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with(
            "rtcheck: error: invalid value 'soon' for '--visible-within <DUR>': invalid duration `soon`"
        ),
        "{err}"
    );
}

#[test]
fn zero_or_negative_connections_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let err = fails_with_answers(d.path(), &format!("{GOOD}connections: 0\n"));
    assert_eq!(
        err,
        "rtcheck: error: answers.yaml:4: connections: must be between 1 and 100000000, got 0"
    );
    let err = fails_with_answers(d.path(), &format!("{GOOD}connections: -5\n"));
    assert!(
        err.starts_with(
            "rtcheck: error: answers.yaml:4: connections: expected a whole number (20000, 20k, 1.5M), got `-5`"
        ),
        "{err}"
    );
    let err = fails_with_answers(d.path(), &format!("{GOOD}machines: 0\n"));
    assert_eq!(
        err,
        "rtcheck: error: answers.yaml:4: machines: must be between 1 and 10000 (the connections), got 0"
    );
    let err = fails_with_answers(d.path(), &format!("{GOOD}rate: -1\n"));
    assert!(
        err.starts_with("rtcheck: error: answers.yaml:4: rate: must be between 0.001 and 1000000 messages/s, got -1"),
        "{err}"
    );

    for (flag, value) in [
        ("--connections", "0"),
        ("--connections", "-5"),
        ("--machines", "0"),
        ("--size", "0"),
    ] {
        let save = d.path().join("flag-save.yaml");
        let out = rtcheck()
            .args([
                "choose",
                "--visible-within",
                "1s",
                "--upstream",
                "none",
                "--loss",
                "shared",
                flag,
                value,
                "--save",
            ])
            .arg(&save)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.starts_with(&format!(
                "rtcheck: error: invalid value '{value}' for '{flag} <"
            )),
            "{err}"
        );
        assert!(err.contains("must be at least 1"), "{err}");
        assert!(!save.exists());
    }
}

#[test]
fn unreadable_answers_file_is_named() {
    let d = tempfile::tempdir().unwrap();
    let save = d.path().join("saved.yaml");
    let out = rtcheck()
        .current_dir(d.path())
        .args(["choose", "--answers", "missing.yaml", "--save"])
        .arg(&save)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1);
    assert!(
        err.starts_with("rtcheck: error: --answers missing.yaml: cannot read: "),
        "{err}"
    );
    assert!(!save.exists());

    // A directory is not a file either.
    let out = rtcheck()
        .current_dir(d.path())
        .args(["choose", "--answers", "."])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .starts_with("rtcheck: error: --answers .: a directory, not a regular file"));

    // Not a mapping.
    let err = fails_with_answers(d.path(), "- visible_within\n");
    assert!(
        err.starts_with(
            "rtcheck: error: answers.yaml:1:1: expected `key: value` lines, got a list"
        ),
        "{err}"
    );
}

#[test]
fn without_a_terminal_missing_answers_are_named_and_nothing_hangs() {
    let d = tempfile::tempdir().unwrap();
    let save = d.path().join("saved.yaml");
    // No stdin terminal (assert_cmd gives an empty stdin): must not wait for input.
    let out = rtcheck()
        .args(["choose", "--loss", "shared", "--save"])
        .arg(&save)
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err.trim_end(),
        "rtcheck: error: missing answers: visible_within (--visible-within DUR), upstream (--upstream none|sparse|dense, or --binary); give them as flags or in --answers FILE (no terminal to ask on)"
    );
    assert!(!save.exists());

    // --binary answers Q2 without --upstream.
    let out = rtcheck()
        .args(["choose", "--binary", "--loss", "shared"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("missing answers: visible_within (--visible-within DUR);"),
        "{err}"
    );
}

#[test]
fn save_into_a_missing_directory_fails_cleanly() {
    let d = tempfile::tempdir().unwrap();
    let save = d.path().join("no-such-dir").join("p.yaml");
    let out = rtcheck()
        .args([
            "choose",
            "--visible-within",
            "1s",
            "--upstream",
            "none",
            "--loss",
            "shared",
            "--save",
        ])
        .arg(&save)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("no-such-dir/p.yaml: cannot write"), "{err}");
    assert!(
        out.stdout.is_empty(),
        "no result printed when the save failed"
    );
}

#[test]
fn a_failed_output_leaves_no_saved_profile_behind() {
    let d = tempfile::tempdir().unwrap();
    let save = d.path().join("p.yaml");
    let output = d.path().join("no-such-dir").join("out.json");
    let out = rtcheck()
        .args([
            "choose",
            "--visible-within",
            "1s",
            "--upstream",
            "none",
            "--loss",
            "shared",
        ])
        .arg("--save")
        .arg(&save)
        .arg("--output")
        .arg(&output)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!save.exists(), "--save written although --output failed");
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "temp files left"
    );
    // Both succeed together.
    let output = d.path().join("out.json");
    let out = rtcheck()
        .args([
            "choose",
            "--visible-within",
            "1s",
            "--upstream",
            "none",
            "--loss",
            "shared",
        ])
        .args(["--format", "json", "--save"])
        .arg(&save)
        .arg("--output")
        .arg(&output)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
    assert_eq!(v["transport"], "sse");
    let p = rtcheck::profile::Profile::load("--answers", &save).unwrap();
    assert_eq!(p.transport, Some(rtcheck_wire::transport::Transport::Sse));
}

#[test]
fn unsupported_format_is_a_usage_error() {
    let out = rtcheck()
        .args([
            "choose",
            "--visible-within",
            "1s",
            "--upstream",
            "none",
            "--loss",
            "shared",
            "--format",
            "junit",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("rtcheck: error: invalid value 'junit' for '--format <FORMAT>'"),
        "{err}"
    );
    assert!(
        err.contains("[possible values: text, json, yaml, markdown, html]"),
        "{err}"
    );
}

/// Issue 21: an --answers file without the required keys is named in the error (it is
/// where the answers were looked for).
#[test]
fn answers_file_missing_keys_names_the_file() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("partial.yaml");
    std::fs::write(&f, "connections: 100\n").unwrap();
    let out = rtcheck()
        .args(["choose", "--no-input", "--answers"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "rtcheck: error: --answers {}: missing answers: visible_within",
            f.display()
        )),
        "{err}"
    );
}
