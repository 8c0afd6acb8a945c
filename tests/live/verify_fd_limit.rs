use crate::common;
use common::*;

#[test]
fn child_at_limit_256_fills_the_limit_and_goes_blind_to_proc() {
    let out = verify_json(&["fd-limit", "--limit", "256"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = verification(&out.json, "fd-limit");
    assert_valid(v);
    let n = measured(v);
    assert!(
        (240.0..=256.0).contains(&n),
        "count {n} not within 240..=256"
    );
    assert_eq!(v["unit"], "connections");
    // verify's own report: the experiment run, its option, the summary.
    assert_eq!(out.json["kind"], "verify");
    assert_eq!(out.json["experiments"], serde_json::json!(["fd-limit"]));
    assert_eq!(out.json["options"]["limit"], 256);
    assert_eq!(out.json["summary"]["valid"], 1);
    // Host facts in the details: the child could not read /proc at the limit.
    let details: Vec<&str> = v["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(
        details
            .iter()
            .any(|d| d.starts_with("at the limit: read /proc/self/status: failed (EMFILE")),
        "{details:?}"
    );
    assert!(v["reference"].as_str().unwrap().contains("1,018"));
}

#[test]
fn limit_above_the_hard_limit_is_a_usage_error() {
    let hard = nofile_hard();
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .args(["verify", "fd-limit", "--limit", &(hard + 1).to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("--limit {}", hard + 1)), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn children_refuse_targets_that_are_not_loopback() {
    for (child, extra) in [("fd-limit", "--limit"), ("open-hold", "--count")] {
        let out = assert_cmd::Command::cargo_bin("rtcheck")
            .unwrap()
            .args([
                "verify",
                "--child",
                child,
                extra,
                "64",
                "--target",
                "10.1.2.3:80",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{child}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("10.1.2.3:80: not a loopback address"), "{err}");
    }
}

#[test]
fn child_spreads_connections_over_several_destinations() {
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let mut addrs = Vec::new();
    let mut counters = Vec::new();
    let mut threads = Vec::new();
    for _ in 0..2 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        addrs.push(l.local_addr().unwrap().to_string());
        let n = Arc::new(AtomicUsize::new(0));
        counters.push(n.clone());
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((s, _)) => {
                        n.fetch_add(1, Ordering::SeqCst);
                        held.push(s);
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
                }
            }
        }));
    }
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .args([
            "verify", "--child", "fd-limit", "--limit", "300", "--target",
        ])
        .arg(addrs.join(","))
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rep: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let conns = rep["connections"].as_u64().unwrap();
    assert_eq!(rep["error"], "EMFILE");
    assert_eq!(conns + rep["fds_before"].as_u64().unwrap(), 300);
    // Round robin: each destination got half (one more on the first when odd).
    let a = counters[0].load(Ordering::SeqCst) as u64;
    let b = counters[1].load(Ordering::SeqCst) as u64;
    assert_eq!(a + b, conns);
    assert!(a.abs_diff(b) <= 1, "{a} vs {b}");
}
