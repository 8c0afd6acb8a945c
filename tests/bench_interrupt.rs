//! `bench fanout` against a server that is not there, and Ctrl-C in the middle of a run:
//! one line and exit 2 at once; "interrupted", children gone and exit 130.
mod common;
use common::procs;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_refused_server_is_one_line_and_exit_2_at_once() {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_rtcheck"))
        .args(["bench", "fanout", "--server", "ws://localhost:1/ws"])
        .args(["--connections", "10", "--rounds", "2"])
        .output()
        .unwrap();
    // Generous for a loaded host; the refused connect itself takes microseconds.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("127.0.0.1:1") && err.contains("refused"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn ctrl_c_during_fanout_says_interrupted_cleans_up_and_exits_130() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtcheck"))
        .args(["bench", "fanout", "--scenario", "A", "--connections", "20"])
        .args(["--rounds", "3000", "--rate", "10"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so SIGINT goes to it and its children as a terminal's
        // Ctrl-C does, and not to the test harness.
        .process_group(0)
        .spawn()
        .unwrap();
    // Server and load generator.
    let kids = procs::wait_children(&mut child, 2, Duration::from_secs(60));
    let out = procs::sigint(child, true, Duration::from_secs(30));
    let status = out.status;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(!err.contains("load generator exited"), "{err}");
    assert!(out.stdout.is_empty(), "no partial report");
    for k in kids {
        assert!(!procs::alive(k), "child {k} still running");
    }
}

/// SIGTERM (a service manager, `timeout`, a CI runner) exits 143 = 128 + 15, the
/// convention, after the same cleanup as Ctrl-C (it was 130).
#[test]
fn sigterm_during_fanout_cleans_up_and_exits_143() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtcheck"))
        .args(["bench", "fanout", "--scenario", "A", "--connections", "20"])
        .args(["--rounds", "3000", "--rate", "10"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let kids = procs::wait_children(&mut child, 2, Duration::from_secs(60));
    let out = procs::stop_with(
        child,
        nix::sys::signal::Signal::SIGTERM,
        false,
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(out.stdout.is_empty(), "no partial report");
    for k in kids {
        let t0 = std::time::Instant::now();
        while procs::alive(k) && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!procs::alive(k), "child {k} still running");
    }
}
