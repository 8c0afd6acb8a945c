//! `bench fanout` against a server that is not there, and Ctrl-C in the middle of a run:
//! one line and exit 2 at once; "interrupted", children gone and exit 130.
use crate::common;
use common::procs;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_refused_server_is_one_line_and_exit_2_at_once() {
    let _timed = common::timed();
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
    let _timed = common::timed();
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
        assert!(
            procs::gone_within(k, Duration::from_secs(10)),
            "child {k} still running"
        );
    }
}

/// SIGTERM (a service manager, `timeout`, a CI runner) exits 143 = 128 + 15, the
/// convention, after the same cleanup as Ctrl-C (it was 130).
#[test]
fn sigterm_during_fanout_cleans_up_and_exits_143() {
    let _timed = common::timed();
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

/// A run killed with SIGKILL cannot remove its scratch dir; the next run removes the
/// stale ones (owner pid gone) and leaves a live process's alone.
#[test]
fn the_next_run_removes_scratch_dirs_a_sigkill_left() {
    let _timed = common::timed();
    let tmp = tempfile::tempdir().unwrap();
    let bench = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
        c.args(["bench", "fanout", "--scenario", "A", "--connections", "5"])
            .args(["--rounds", "3000", "--rate", "10"])
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let mut child = bench().spawn().unwrap();
    procs::wait_children(&mut child, 2, Duration::from_secs(60));
    child.kill().unwrap();
    child.wait().unwrap();
    let left = |prefix: &str| -> Vec<String> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with(prefix))
            .collect()
    };
    // The baseline scenario F runs first: its dir is the one left.
    let killed = format!("rtcheck-bench-F-{}-", child.id());
    assert_eq!(
        left(&killed).len(),
        1,
        "SIGKILL leaves its dir: {:?}",
        left("")
    );
    // A browser profile and a cluster dir of dead runs, and one of a live process (ours).
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    for name in [
        format!("rtcheck-browser-{dead}-123456"),
        format!("rtcheck-cluster-{dead}-0"),
        format!("rtcheck-cluster-{}-0", std::process::id()),
    ] {
        std::fs::create_dir(tmp.path().join(name)).unwrap();
    }
    let mut next = bench().spawn().unwrap();
    procs::wait_children(&mut next, 2, Duration::from_secs(60));
    let stale = [
        killed,
        format!("rtcheck-browser-{dead}-"),
        format!("rtcheck-cluster-{dead}-"),
    ];
    for s in &stale {
        assert!(left(s).is_empty(), "{s} still there: {:?}", left(""));
    }
    assert_eq!(
        left(&format!("rtcheck-cluster-{}-", std::process::id())).len(),
        1
    );
    let _ = procs::sigint(next, false, Duration::from_secs(30));
}
