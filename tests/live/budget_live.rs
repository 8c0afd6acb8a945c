//! `rtcheck budget --live` against two `rtcheck serve` instances standing in for hops.
use crate::common;
use common::Server;

#[test]
fn live_measures_the_four_ways_against_serve_work() {
    let a = Server::start(&["--workers", "4"]);
    let b = Server::start(&["--workers", "4"]);
    let urls: Vec<String> = [a.addr, b.addr]
        .iter()
        .map(|x| format!("http://{x}/work?ms=24"))
        .collect();
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .args(["budget", "--rounds", "3", "--format", "json", "--live"])
        .args(&urls)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let l = &v["live"];
    assert!(l["invalid"].is_null(), "{l}");
    let f = |k: &str| l[k].as_f64().unwrap();
    // Two hops of 24 ms of work each: in sequence at least 48 ms, in parallel at least 24
    // and clearly less than in sequence (shapes, not timings: the host is shared).
    assert!(f("sequential_reused_ms") >= 48.0, "{l}");
    assert!(f("parallel_reused_ms") >= 24.0, "{l}");
    assert!(
        f("parallel_reused_ms") < f("sequential_reused_ms") * 0.85,
        "{l}"
    );
    assert!(f("parallel_ms") < f("sequential_ms"), "{l}");
    // The computed side used the hops as measured.
    assert_eq!(l["hops"].as_array().unwrap().len(), 2);
    assert!(l["computed"]["sequential_reused_ms"].as_f64().unwrap() >= 48.0);
    assert!(l["tcp_nodelay"].as_bool().unwrap());
    // Without --hop, the budget itself comes from the measured hops.
    assert_eq!(v["hops"].as_array().unwrap().len(), 2);
    assert_eq!(v["findings"][0]["id"], "live-budget");
}

#[test]
fn a_dead_hop_makes_the_live_run_invalid_not_a_number() {
    let a = Server::start(&[]);
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .args([
            "budget", "--hop", "x:1", "--rounds", "1", "--format", "json", "--live",
        ])
        .arg(format!("http://{}/work?ms=1", a.addr))
        .arg(format!("http://{dead_addr}/"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["live"]["invalid"].as_str().unwrap().contains("refused"),
        "{v}"
    );
    assert_eq!(v["findings"][0]["status"], "fail");
}
