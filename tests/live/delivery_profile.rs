//! `verify delivery --profile`: the profile's transport and delivery design narrow the
//! run (said in the output), flags widen it; and the progress line: on a terminal for a
//! run over a second, never when piped (issue 27 item 8). Counts from the JSON.
use crate::common;
use expectrl::{Eof, Session};
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

const SMALL: [&str; 4] = ["--connections", "2", "--format", "json"];

fn profile(dir: &tempfile::TempDir) -> String {
    let p = dir.path().join("chat.yaml");
    std::fs::write(
        &p,
        "transport: websocket\nloss: shared\nrate: 50\nsize: 256\nmax_disconnect: 600ms\n",
    )
    .unwrap();
    p.to_string_lossy().into_owned()
}

/// (exit, report, stderr)
fn delivery(args: &[&str]) -> (Option<i32>, Value, String) {
    let out = common::rtcheck()
        .args(["verify", "delivery"])
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {err}"));
    (out.status.code(), v, err)
}

fn modes(r: &Value) -> Vec<String> {
    let mut v: Vec<String> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["delivery"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn a_profile_narrows_the_run_and_flags_widen_it() {
    let _timed = common::timed();
    let dir = tempfile::tempdir().unwrap();
    let p = profile(&dir);
    let text = dir.path().join("out.txt");
    let also = format!("text={}", text.display());
    let args = [
        &["--profile", p.as_str(), "--report", also.as_str()][..],
        &SMALL,
    ]
    .concat();
    let wide = [
        &[
            "--profile",
            p.as_str(),
            "--delivery",
            "all",
            "--transport",
            "sse",
        ][..],
        &SMALL,
    ]
    .concat();
    // One after the other, never at once: both must exit 0, and a verify delivery
    // verdict is judged on the timing of its schedule (disconnect, resume), which two
    // runs side by side on a loaded host would take from each other.
    let (code, r, err) = delivery(&args);
    assert_eq!(code, Some(0), "{err}");
    // Said in the output, second line after the verdict and the set-up.
    let shown = std::fs::read_to_string(&text).unwrap();
    assert!(
        shown.contains("narrowed to the profile's design seq-ring over"),
        "{shown}"
    );
    assert!(err.is_empty(), "quiet when not a terminal: {err}");
    assert_eq!(r["options"]["delivery"], serde_json::json!(["seq-ring"]));
    assert_eq!(r["options"]["transport"], "websocket");
    // The control runs on the first mode's server; nothing of snapshot or session-ack.
    assert_eq!(modes(&r), ["no-seq", "seq-ring"]);
    let scope = r["options"]["scope"].as_str().unwrap();
    assert!(scope.contains("seq-ring over websocket"), "{scope}");

    let (code, r, err) = delivery(&wide);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(modes(&r), ["no-seq", "seq-ring", "session-ack", "snapshot"]);
    assert_eq!(r["options"]["transport"], "sse");
    assert!(r["options"].get("scope").is_none(), "{:#}", r["options"]);
}

#[test]
fn progress_on_a_terminal_for_a_run_over_a_second() {
    let _timed = common::timed();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.args([
        "verify",
        "delivery",
        "--delivery",
        "seq-ring",
        "--connections",
        "2",
    ])
    .args(["--rate", "50", "--size", "256", "--max-disconnect", "2s"])
    .env("NO_COLOR", "1")
    .env("TERM", "xterm")
    .env_remove("CI");
    let mut s = Session::spawn(cmd).expect("spawn rtcheck in a pty");
    s.set_expect_timeout(Some(Duration::from_secs(60)));
    s.expect("verify delivery [").expect("the progress line");
    s.expect("runs at once, about").expect("what it waits for");
    s.expect("verify delivery (rtcheck serve)")
        .expect("then the report");
    s.expect(Eof).unwrap();
}
