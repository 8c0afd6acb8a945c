//! `rtcheck serve --workers N`: /work?ms=N on a fixed pool with a queue, saturation in
//! /metrics, and bad parameters answered 400.
use crate::common;
use common::{http_get, Server};
use std::time::{Duration, Instant};

fn gauge(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing in {metrics}"))
}

#[test]
fn pool_saturates_and_queues_visible_in_metrics() {
    let s = Server::start(&["--workers", "2"]);
    let addr = s.addr;
    let (st, m) = http_get(addr, "/metrics");
    assert_eq!(st, 200);
    assert_eq!(gauge(&m, "rtcheck_work_workers"), 2.0);
    // 5 requests of 5 s: 2 busy, 3 queued, for long enough to see it on a loaded host
    // (six tests at once beside two CPU hogs: seen within 4 s, before the first ends).
    let clients: Vec<_> = (0..5)
        .map(|_| std::thread::spawn(move || http_get(addr, "/work?ms=5000")))
        .collect();
    let t0 = Instant::now();
    loop {
        let (_, m) = http_get(addr, "/metrics");
        if gauge(&m, "rtcheck_work_busy_workers") == 2.0
            && gauge(&m, "rtcheck_work_queue_length") == 3.0
        {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(4),
            "never 2 busy + 3 queued: {m}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for c in clients {
        assert_eq!(c.join().unwrap(), (200, "ok\n".to_string()));
    }
    let (_, m) = http_get(addr, "/metrics");
    assert_eq!(gauge(&m, "rtcheck_work_requests_total"), 5.0);
    assert_eq!(gauge(&m, "rtcheck_work_busy_workers"), 0.0);
    assert_eq!(gauge(&m, "rtcheck_work_queue_length"), 0.0);
    // Two waves of 3 s on 2 workers: the last one ended at least 6 s after the start.
    assert!(
        t0.elapsed() >= Duration::from_millis(5500),
        "{:?}",
        t0.elapsed()
    );
}

#[test]
fn bad_work_parameters_are_400() {
    let s = Server::start(&["--split-writes"]);
    let (st, body) = http_get(s.addr, "/work?ms=abc");
    assert_eq!(st, 400);
    assert!(body.contains("0..=10000"), "{body}");
    assert_eq!(http_get(s.addr, "/work?ms=99999").0, 400);
    let (st, body) = http_get(s.addr, "/work?ms=0");
    assert_eq!((st, body.as_str()), (200, "ok\n"));
    assert!(s.stderr().contains("two writes"), "{}", s.stderr());
}

#[test]
fn workers_flag_is_validated() {
    let out = std::process::Command::new(common::binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--workers", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--workers"));
}
