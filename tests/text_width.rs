//! Every `--help` and the catalog/choose text outputs, piped, fit the width: 80 columns
//! without COLUMNS, else COLUMNS; and no table cell ends in "…" over an id or a number.
use clap::CommandFactory;
use std::process::{Command, Output};

fn run(args: &[&str], columns: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.args(args).env("NO_COLOR", "1").env_remove("COLUMNS");
    if let Some(c) = columns {
        cmd.env("COLUMNS", c);
    }
    cmd.output().expect("run rtcheck")
}

/// Lines of `text` wider than `width`, with their widths, for the failure message.
fn too_wide(text: &str, width: usize) -> Vec<String> {
    text.lines()
        .filter(|l| l.chars().count() > width)
        .map(|l| format!("{:>3} | {l}", l.chars().count()))
        .collect()
}

/// Every visible (sub)command path: `[]`, `["choose"]`, `["bench", "fanout"]`...
fn command_paths(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(prefix.clone());
    for sc in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sc.get_name() == "help" {
            continue;
        }
        let mut p = prefix.clone();
        p.push(sc.get_name().to_string());
        command_paths(sc, p, out);
    }
}

#[test]
fn every_help_fits_80_columns_piped_and_columns_when_given() {
    let mut paths = Vec::new();
    let mut root = rtcheck::cmd::Cli::command();
    root.build();
    command_paths(&root, Vec::new(), &mut paths);
    assert!(paths.len() > 15, "the command tree: {paths:?}");
    let mut bad = Vec::new();
    for path in &paths {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        for (columns, width) in [(None, 80), (Some("120"), 120)] {
            let out = run(&args, columns);
            assert!(out.status.success(), "{args:?}: {out:?}");
            let text = String::from_utf8(out.stdout).unwrap();
            assert!(text.lines().count() > 3, "{args:?}: {text}");
            let wide = too_wide(&text, width);
            if !wide.is_empty() {
                bad.push(format!(
                    "{args:?} COLUMNS={columns:?}:\n{}",
                    wide.join("\n")
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

/// A cell cut short ("delivery-snapshot-cle…", "1,02…"): a word of an id (letters, digits,
/// `-_./:`) or a number right before the ellipsis.
fn cut_cells(text: &str) -> Vec<&str> {
    let clipped = |l: &str| {
        l.strip_suffix("...")
            .and_then(|h| h.chars().next_back())
            .is_some_and(|c| c.is_ascii_alphanumeric())
    };
    text.lines()
        .filter(|l| {
            clipped(l)
                || l.match_indices('…').any(|(i, _)| {
                    l[..i]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || "-_./:".contains(c))
                })
        })
        .collect()
}

fn check_text(args: &[&str]) {
    let out = run(args, None);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{args:?}: {out:?}"
    );
    assert!(text.lines().count() > 3, "{args:?} printed: {text}");
    let wide = too_wide(&text, 80);
    assert!(wide.is_empty(), "{args:?} over 80:\n{}", wide.join("\n"));
    let cut = cut_cells(&text);
    assert!(cut.is_empty(), "{args:?} cut cells:\n{}", cut.join("\n"));
}

#[test]
fn evidence_list_fits_80_piped() {
    check_text(&["evidence"]);
}

#[test]
fn evidence_sources_and_one_entry_fit_80_piped() {
    check_text(&["evidence", "--sources"]);
    check_text(&["evidence", "hub-gap"]);
}

#[test]
fn checklist_realtime_ops_fits_80_piped() {
    check_text(&["checklist", "realtime-ops"]);
}

#[test]
fn explain_proxy_config_fits_80_piped() {
    check_text(&["explain", "proxy-config"]);
}

#[test]
fn choose_full_reasoning_fits_80_piped() {
    let dir = tempfile::tempdir().unwrap();
    // Push with a ring, then polling for one user's own stream (other sections print).
    let profiles = [
        "loss: shared\nrate: 1000\nsize: 1000\nvisible_within: 1s\nconnections: 50000\nupstream: sparse\n",
        "loss: per-user\nvisible_within: 30s\nconnections: 200000\nmachines: 3\nupstream: none\n",
    ];
    for (n, text) in profiles.iter().enumerate() {
        let answers = dir.path().join(format!("answers{n}.yaml"));
        std::fs::write(&answers, text).unwrap();
        check_text(&["choose", "--answers", answers.to_str().unwrap()]);
    }
}

/// An indented after-help line (an example, a YAML sample) that clap must wrap continues at
/// column 0, where it reads like prose or a command: every one must fit 80 as written.
/// (Prose at column 0 wraps cleanly and is measured by the test above.)
#[test]
fn every_indented_after_help_line_fits_80_as_written() {
    fn walk(cmd: &clap::Command, path: &str, bad: &mut Vec<String>) {
        if let Some(h) = cmd.get_after_help() {
            for l in h.to_string().lines() {
                if l.starts_with(' ') && l.chars().count() > 80 {
                    bad.push(format!("{path}: {l}"));
                }
            }
        }
        for sc in cmd.get_subcommands() {
            walk(sc, &format!("{path} {}", sc.get_name()), bad);
        }
    }
    let mut bad = Vec::new();
    walk(&rtcheck::cmd::Cli::command(), "rtcheck", &mut bad);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `rtcheck` with no subcommand and no terminal: one line, exit 2 (not 44 lines of help).
#[test]
fn no_subcommand_without_a_terminal_is_one_line() {
    let out = run(&[], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("rtcheck: error: no subcommand"), "{err}");
}

#[test]
fn review_text_fits_80_piped() {
    check_text(&[
        "review",
        "--answers",
        "tests/fixtures/docs/review.yaml",
        "--profile",
        "tests/fixtures/docs/review-profile.yaml",
    ]);
}
