//! What a newcomer meets first, kept consistent: every flag in `--help` is described,
//! completions offer only what `--help` shows, sizes take units.
use clap::CommandFactory;
use std::process::Command;

fn rtcheck(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rtcheck"))
        .args(args)
        .output()
        .unwrap()
}

fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
    for a in cmd.get_arguments() {
        let builtin = matches!(a.get_id().as_str(), "help" | "version");
        if !a.is_hide_set() && !builtin && a.get_help().is_none() && a.get_long_help().is_none() {
            out.push(format!(
                "{path} --{}",
                a.get_long().unwrap_or(a.get_id().as_str())
            ));
        }
    }
    for s in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        walk(s, &format!("{path} {}", s.get_name()), out);
    }
}

#[test]
fn every_visible_flag_has_a_description() {
    let mut missing = Vec::new();
    walk(&rtcheck::cmd::Cli::command(), "rtcheck", &mut missing);
    assert!(
        missing.is_empty(),
        "flags without a description: {missing:?}"
    );
}

#[test]
fn completions_offer_no_hidden_flag_or_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let out = rtcheck(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0));
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(
            script.contains("fanout") && script.contains("connections"),
            "{shell}"
        );
        for hidden in ["__loadgen", "loadgen'", "--child", "--addr-file-hidden"] {
            assert!(
                !script.contains(hidden),
                "{shell} completion offers `{hidden}`"
            );
        }
        // The hidden flags themselves, by name, taken from the command tree.
        let mut names = Vec::new();
        hidden_flags(&rtcheck::cmd::Cli::command(), &mut names);
        assert!(names.contains(&"child".to_string()), "{names:?}");
        for n in names {
            assert!(
                !script.contains(&format!("--{n} ")) && !script.contains(&format!("--{n}\"")),
                "{shell} completion offers hidden --{n}"
            );
        }
    }
}

fn longs(cmd: &clap::Command, hidden: bool, out: &mut Vec<String>) {
    for a in cmd.get_arguments().filter(|a| a.is_hide_set() == hidden) {
        if let Some(l) = a.get_long() {
            out.push(l.to_string());
        }
    }
    for s in cmd.get_subcommands() {
        longs(s, hidden, out);
    }
}

/// Long names only hidden flags use (a name a visible flag also has is not a leak).
fn hidden_flags(cmd: &clap::Command, out: &mut Vec<String>) {
    let (mut hidden, mut visible) = (Vec::new(), Vec::new());
    longs(cmd, true, &mut hidden);
    longs(cmd, false, &mut visible);
    out.extend(hidden.into_iter().filter(|h| !visible.contains(h)));
}

#[test]
fn sizes_take_units_in_choose() {
    let out = rtcheck(&[
        "choose",
        "--visible-within",
        "2m",
        "--upstream",
        "none",
        "--loss",
        "replaceable",
        "--size",
        "64KiB",
        "--format",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["profile"]["size"], 65536);
    let out = rtcheck(&[
        "choose",
        "--visible-within",
        "2m",
        "--upstream",
        "none",
        "--loss",
        "replaceable",
        "--size",
        "128MiB",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("size: must be between 1 and 67108864 bytes (64 MiB), got 134217728"),
        "{err}"
    );
}

#[test]
fn sizes_take_units_in_a_profile_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("p.yaml");
    std::fs::write(&p, "size: 64KiB\n").unwrap();
    let out = rtcheck(&[
        "audit",
        "--format",
        "json",
        "--profile",
        p.to_str().unwrap(),
    ]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["profile"]["size"], 65536);
}

#[test]
fn readme_is_short_and_every_command_page_exists_with_every_check_id() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.lines().count() <= 200,
        "README has {} lines",
        readme.lines().count()
    );
    for page in [
        "choose",
        "audit",
        "verify",
        "serve",
        "bench",
        "evidence",
        "checklist",
        "probe",
        "load",
        "budget",
        "delivery",
        "review",
        "lint",
    ] {
        assert!(
            readme.contains(&format!("(docs/{page}.md)")),
            "README does not link {page}"
        );
        let text = std::fs::read_to_string(root.join(format!("docs/{page}.md")))
            .unwrap_or_else(|e| panic!("docs/{page}.md: {e}"));
        assert!(
            text.contains("<!-- regen: rtcheck "),
            "docs/{page}.md has no regenerated output"
        );
    }
    let audit = std::fs::read_to_string(root.join("docs/audit.md")).unwrap();
    for id in rtcheck::audit::check_ids() {
        assert!(
            audit.contains(&format!("| `{id}` |")),
            "docs/audit.md: no row for {id}"
        );
    }
}
