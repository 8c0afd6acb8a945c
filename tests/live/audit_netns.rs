//! `audit --netns PID` (issue 40) against a real network namespace: the test makes one
//! (`ip netns add`), sets a keepalive time there that differs from the host's, starts a
//! process inside it, and audit reads the namespace's value, not the host's. Needs root
//! (like `ip netns`); the namespace and the process go on drop, also when a check fails.
use crate::common;

use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A named network namespace with one process in it; removed on drop.
struct Netns {
    name: String,
    child: Option<Child>,
}

impl Netns {
    fn new(tag: &str) -> Netns {
        let name = format!("rtcheck-{tag}-{}", std::process::id());
        let st = Command::new("ip").args(["netns", "add", &name]).status();
        assert!(
            st.is_ok_and(|s| s.success()),
            "`ip netns add` failed: needs root and iproute2"
        );
        Netns { name, child: None }
    }

    fn exec(&self, args: &[&str]) {
        let o = Command::new("ip")
            .args(["netns", "exec", &self.name])
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// A process living in the namespace (`ip netns exec` execs it: its pid is ours).
    fn spawn_sleeper(&mut self) -> u32 {
        let c = Command::new("ip")
            .args(["netns", "exec", &self.name, "sleep", "300"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let pid = c.id();
        self.child = Some(c);
        // Wait until it has joined the namespace (its ns/net differs from ours).
        let own = std::fs::read_link("/proc/self/ns/net").unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let theirs = std::fs::read_link(format!("/proc/{pid}/ns/net")).ok();
            if theirs.is_some_and(|t| t != own) {
                return pid;
            }
            assert!(
                Instant::now() < deadline,
                "process {pid} never joined {}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

fn audit_json(args: &[&str]) -> Value {
    let o = common::rtcheck()
        .args(["audit", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    // Findings may fail (exit 1): the report is what is judged here.
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON")
}

#[test]
fn audit_reads_the_keepalive_of_the_namespace_not_the_hosts() {
    let host: u64 = common::sysctl("net/ipv4/tcp_keepalive_time")
        .trim()
        .parse()
        .unwrap();
    let inside = if host == 600 { 650 } else { 600 };
    let mut ns = Netns::new("ka");
    ns.exec(&[
        "sysctl",
        "-q",
        "-w",
        &format!("net.ipv4.tcp_keepalive_time={inside}"),
    ]);
    let pid = ns.spawn_sleeper();
    let v = audit_json(&["--netns", &pid.to_string()]);
    let n = &v["netns"];
    assert_eq!(n["pid"], pid);
    assert_eq!(n["same_as_host"], false);
    let diffs = n["differences"].as_array().unwrap();
    let ka = diffs
        .iter()
        .find(|d| d["sysctl"] == "net.ipv4.tcp_keepalive_time")
        .unwrap_or_else(|| panic!("keepalive not compared: {n}"));
    assert_eq!(ka["namespace"], inside.to_string());
    assert_eq!(ka["host"], host.to_string());
    assert!(n["values"]
        .as_array()
        .unwrap()
        .contains(&Value::from(format!(
            "net.ipv4.tcp_keepalive_time = {inside}"
        ))));
    assert!(v["target"]
        .as_str()
        .unwrap()
        .contains("namespace of process"));
}

#[test]
fn the_own_namespace_is_said_to_be_the_hosts() {
    let v = audit_json(&["--netns", &std::process::id().to_string()]);
    assert_eq!(v["netns"]["same_as_host"], true);
    assert_eq!(v["netns"]["differences"], serde_json::json!([]));
}

#[test]
fn a_missing_process_is_one_line_and_exit_2() {
    let o = common::rtcheck()
        .args(["audit", "--netns", "4194304"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--netns 4194304"), "{err}");
}
