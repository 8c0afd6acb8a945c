//! `bench fanout` against a server that is not there, and Ctrl-C in the middle of a run:
//! one line and exit 2 at once; "interrupted", children gone and exit 130.
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            let after = &stat[stat.rfind(')').unwrap() + 2..];
            let ppid: u32 = after.split_whitespace().nth(1).unwrap().parse().unwrap();
            if ppid == pid {
                out.push(p);
            }
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat[stat.rfind(')').unwrap() + 2..].starts_with('Z'),
        Err(_) => false,
    }
}

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
    let pid = child.id();
    let until = Instant::now() + Duration::from_secs(60);
    let kids = loop {
        let c = children_of(pid);
        if c.len() >= 2 {
            break c; // server and load generator
        }
        if let Some(st) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "exited early ({st}): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(
            Instant::now() < until,
            "server and load generator not started"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < until, "bench did not stop after Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(!err.contains("load generator exited"), "{err}");
    assert!(out.stdout.is_empty(), "no partial report");
    for k in kids {
        assert!(!alive(k), "child {k} still running");
    }
}
