//! Conventions every command shares: one-line usage errors with exit 2, help with examples,
//! version, and shell completions that the shells accept.
mod common;
use common::rtcheck;

#[test]
fn bad_flags_are_one_line_and_exit_2() {
    for args in [
        vec!["choose", "--connections", "abc"],
        vec!["audit", "--frob"],
        vec!["audit", "--format", "pdf"],
        vec!["choose", "--upstream", "sideways"],
        vec!["--color", "sometimes", "audit"],
    ] {
        let out = rtcheck().args(&args).env("NO_COLOR", "1").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("rtcheck: error: "), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn help_has_examples_and_exit_codes_and_version_matches_the_crate() {
    let out = rtcheck().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8(out.stdout).unwrap();
    for sub in [
        "choose",
        "audit",
        "evidence",
        "checklist",
        "serve",
        "bench",
        "verify",
        "completions",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(sub)),
            "{sub} missing from --help"
        );
    }
    assert!(help.contains("Exit codes:"));
    let out = rtcheck().arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("rtcheck {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn bash_completion_is_valid_bash() {
    let out = rtcheck().args(["completions", "bash"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("rtcheck.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(check.success(), "bash -n rejected the completion script");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("complete -F"), "no `complete` registration");
}
