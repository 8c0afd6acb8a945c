//! The idle test's progress: on a terminal it shows the elapsed part of --idle-for and
//! what has been seen; piped, stderr stays quiet.

use crate::probe_common;
use expectrl::{Eof, Session};
use probe_common::*;
use std::process::Command;
use std::time::Duration;

#[test]
fn idle_progress_on_a_terminal_quiet_when_piped() {
    let s = Serve::start(&["--rate", "5", "--ping", "1s"]);
    let url = format!("http://{}/sse", s.addr);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.args(["probe", "--idle-for", "3s", &url])
        .env("NO_COLOR", "1")
        .env("TERM", "xterm");
    let mut p = Session::spawn(cmd).expect("spawn rtcheck in a pty");
    p.set_expect_timeout(Some(Duration::from_secs(30)));
    p.expect("holding")
        .expect("progress of the idle test shown");
    p.expect("heartbeat(s)").expect("what was seen so far");
    p.expect("rtcheck probe PASS").expect("then the report");
    p.expect(Eof).unwrap();

    let (_, code, stderr) = probe_json(&["--idle-for", "2s", &url]);
    assert_eq!(code, 0);
    assert!(stderr.is_empty(), "quiet when not a terminal: {stderr}");
}
