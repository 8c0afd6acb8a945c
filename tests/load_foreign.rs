//! `rtcheck load` against a server it did not write: the Node docs' hello-world HTTP server
//! (tests/fixtures/foreign/node_http.js), one process and one event loop, busy 2 ms per
//! request. Its truth by construction: at most ~500 answers a second at any concurrency,
//! so throughput is flat from C = 1 and every added user only queues. The knee is there,
//! each level carries its measured spread (slices), and the advice says what was
//! measured, never a worker count rtcheck cannot know.
mod common;
mod foreign_common;
use serde_json::Value;

#[test]
fn a_single_threaded_node_server_is_read_from_what_was_measured() {
    let app = foreign_common::node_http(&[("WORK_MS", "2")]);
    let out = common::rtcheck()
        .args(["load", &app.url("http", "/")])
        .args([
            "--concurrency",
            "1,2,4,8,16",
            "--step",
            "1s",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let r: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {err}"));
    let levels = r["levels"].as_array().unwrap();
    let valid: Vec<&Value> = levels.iter().filter(|l| l["valid"] == true).collect();
    assert!(valid.len() >= 4, "{r:#}");
    for l in &valid {
        let rps = l["throughput_rps"].as_f64().unwrap();
        // 2 ms of busy work per answer on one thread: <= 500/s (a loaded CI machine may
        // give the loop less).
        assert!(rps <= 560.0, "above the server's capacity: {l}");
        let slices = l["slices"].as_array().unwrap();
        assert_eq!(slices.len(), 4, "each level's spread is measured: {l}");
    }
    let knee = &r["knee"];
    assert_eq!(
        knee["concurrency"], 1,
        "one event loop: flat from C = 1: {r:#}"
    );
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "knee")
        .unwrap();
    assert_eq!(f["status"], "warn");
    let fix = f["fix"]["summary"].as_str().unwrap();
    assert!(fix.contains("C = 1"), "advice from the measurement: {fix}");
    assert!(
        !fix.contains("8 workers") && !fix.contains("6 of 8"),
        "no worker count the server never reported: {fix}"
    );
    assert!(fix.contains("worker count is not known"), "{fix}");
}
