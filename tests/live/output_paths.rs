//! `-o PATH` through the binary: devices, FIFOs and symlinks are written, never replaced;
//! `-o -` is stdout. (The unit tests in src/outfile.rs cover every kind of path.)
use assert_cmd::Command;
use std::os::unix::fs::FileTypeExt;

fn rtcheck() -> Command {
    let mut c = Command::cargo_bin("rtcheck").unwrap();
    c.env_remove("NO_COLOR");
    c.timeout(std::time::Duration::from_secs(60));
    c
}

#[test]
fn audit_to_a_character_device_leaves_it_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let n = dir.path().join("n");
    nix::sys::stat::mknod(
        &n,
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(1, 3),
    )
    .expect("mknod needs root (CI runs as root)");
    for path in [n.as_path(), std::path::Path::new("/dev/null")] {
        let out = rtcheck()
            .args(["audit", "--format", "json", "--fail-on", "never", "-o"])
            .arg(path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ft = std::fs::symlink_metadata(path).unwrap().file_type();
        assert!(
            ft.is_char_device(),
            "{} is no longer a device",
            path.display()
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn dash_means_stdout_and_no_file_named_dash() {
    let dir = tempfile::tempdir().unwrap();
    let out = rtcheck()
        .current_dir(dir.path())
        .args(["evidence", "ulimit-n", "--format", "json", "-o", "-"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["id"], "ulimit-n");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_symlinked_output_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("report.json");
    let link = dir.path().join("latest.json");
    std::os::unix::fs::symlink("report.json", &link).unwrap();
    let out = rtcheck()
        .args(["evidence", "ulimit-n", "--format", "json", "-o"])
        .arg(&link)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(v["id"], "ulimit-n");
}

#[test]
fn a_missing_directory_is_one_line_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = rtcheck()
        .args(["checklist", "-o"])
        .arg(dir.path().join("nope").join("x.txt"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("nope/x.txt: cannot write"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Run `args` on a pseudo-terminal (stdout is a tty), NO_COLOR unset; returns what the
/// terminal showed once rtcheck exited.
fn on_a_terminal(args: &[&str]) -> String {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.args(args).env_remove("NO_COLOR").env("TERM", "xterm");
    let mut s = expectrl::Session::spawn(cmd).expect("spawn rtcheck in a pty");
    s.set_expect_timeout(Some(std::time::Duration::from_secs(30)));
    let shown = s.expect(expectrl::Eof).expect("rtcheck exits");
    String::from_utf8_lossy(shown.as_bytes()).into_owned()
}

#[test]
fn auto_colour_goes_to_a_terminal_never_into_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("choice.txt");
    let answers = [
        "choose",
        "--visible-within",
        "200ms",
        "--upstream",
        "sparse",
        "--loss",
        "shared",
    ];
    // The control: the same command on the terminal is coloured.
    let screen = on_a_terminal(&answers);
    assert!(
        screen.contains("\x1b["),
        "no colour on a terminal: {screen}"
    );
    let mut to_file = answers.to_vec();
    let path = file.to_str().unwrap();
    to_file.extend(["-o", path]);
    on_a_terminal(&to_file);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("websocket") || text.contains("sse"), "{text}");
    assert!(!text.contains('\x1b'), "escape codes in the file: {text:?}");
    // `-o -` is the terminal again: coloured.
    to_file.truncate(answers.len());
    to_file.extend(["-o", "-"]);
    assert!(on_a_terminal(&to_file).contains("\x1b["));
}

#[test]
fn every_command_with_a_report_has_dash_o_and_lists_only_its_formats() {
    let cases: [(&[&str], &str); 13] = [
        (
            &["lint"],
            "text, json, yaml, markdown, junit, github, html, sarif]",
        ),
        (&["choose"], "text, json, yaml, markdown, html]"),
        (
            &["audit"],
            "text, json, yaml, markdown, junit, github, html, sarif, prometheus]",
        ),
        (
            &["verify"],
            "text, json, yaml, markdown, junit, github, html, sarif]",
        ),
        (
            &["review"],
            "text, json, yaml, markdown, junit, github, html, sarif, prometheus]",
        ),
        (
            &["probe"],
            "text, json, yaml, markdown, junit, github, html, sarif, prometheus]",
        ),
        (&["evidence"], "text, json, yaml, markdown]"),
        (&["checklist"], "text, json, yaml, markdown]"),
        (
            &["bench", "fanout"],
            "text, json, markdown, junit, github, html]",
        ),
        (
            &["bench", "idle"],
            "text, json, markdown, junit, github, html]",
        ),
        (
            &["bench", "cluster"],
            "text, json, yaml, markdown, junit, github, html]",
        ),
        (
            &["load"],
            "text, json, yaml, markdown, junit, github, html]",
        ),
        (
            &["budget"],
            "text, json, yaml, markdown, junit, github, html]",
        ),
    ];
    for (cmd, formats) in cases {
        let out = rtcheck().args(cmd).arg("--help").output().unwrap();
        // Joined, since clap wraps long lines.
        let help = String::from_utf8(out.stdout).unwrap();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(help.contains("-o, --output <FILE>"), "{cmd:?}: {help}");
        assert!(help.contains("--report <FORMAT=PATH>"), "{cmd:?}: {help}");
        assert!(
            help.contains(&format!("[possible values: {formats}")),
            "{cmd:?}: {help}"
        );
    }
}
