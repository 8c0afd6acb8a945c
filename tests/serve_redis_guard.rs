//! `rtcheck serve --redis` against a real redis-server (Debian package `redis-server`),
//! started on a free loopback port in a temp dir (issue 21 items 4 and 8): two clusters on
//! one Redis stay apart under their `--redis-prefix`, `bench cluster` refuses a Redis that
//! already holds its prefix, and a Redis asking for a password is one line at start (exit
//! 2) and never reported as back before a command succeeds.
mod common;
use common::{http_get, require_binary, rtcheck, Server};
use rtcheck::sys::redis::RedisServer;
use std::time::{Duration, Instant};

/// Generous bound for anything to happen on a loaded 2-core machine.
const LIMIT: Duration = Duration::from_secs(60);

fn redis(dir: &std::path::Path) -> RedisServer {
    require_binary("redis-server", "redis-server");
    RedisServer::start(dir).unwrap_or_else(|e| panic!("{e}"))
}

fn con(r: &RedisServer) -> redis::Connection {
    redis::Client::open(r.url())
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(5))
        .unwrap()
}

fn keys(r: &RedisServer, pattern: &str) -> Vec<String> {
    let mut k: Vec<String> = redis::cmd("KEYS").arg(pattern).query(&mut con(r)).unwrap();
    k.sort();
    k
}

fn rounds(s: &Server) -> u64 {
    s.stats()["rounds_sent"].as_u64().unwrap()
}

#[test]
fn two_clusters_on_one_redis_stay_apart_under_their_prefixes() {
    let d = tempfile::tempdir().unwrap();
    let r = redis(d.path());
    let url = r.url();
    let node = |name: &str, prefix: &str, extra: &[&str]| {
        let mut a = vec!["--redis", &url, "--node", name, "--size", "64"];
        a.extend_from_slice(&["--redis-prefix", prefix]);
        a.extend_from_slice(extra);
        Server::start(&a)
    };
    let blue_relay = node("b2", "blue:", &["--no-publish"]);
    let green_relay = node("g1", "green:", &["--no-publish"]);
    let blue = node("b1", "blue:", &["--rate", "20"]);
    assert!(blue.stderr().contains("prefix blue:"), "{}", blue.stderr());
    let t0 = Instant::now();
    while rounds(&blue_relay) < 10 {
        assert!(
            t0.elapsed() < LIMIT,
            "blue's relay got nothing: {}",
            blue_relay.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        rounds(&green_relay),
        0,
        "another cluster's rounds reached green"
    );
    assert!(keys(&r, "blue:*").contains(&"blue:seq".to_string()));
    assert!(!keys(&r, "green:*").contains(&"green:seq".to_string()));
    assert!(
        keys(&r, "rtcheck:*").is_empty(),
        "{:?}",
        keys(&r, "rtcheck:*")
    );
}

#[test]
fn bench_cluster_refuses_a_redis_holding_its_prefix_and_leaves_others_alone() {
    let d = tempfile::tempdir().unwrap();
    let r = redis(d.path());
    let url = r.url();
    let _: () = redis::cmd("SET")
        .arg("taken:seq")
        .arg(5)
        .query(&mut con(&r))
        .unwrap();
    let small = [
        "--nodes",
        "2",
        "--connections",
        "2",
        "--rounds",
        "20",
        "--rate",
        "20",
        "--drain",
        "3s",
        "--scenario",
        "one-path",
        "--format",
        "json",
    ];
    let out = rtcheck()
        .args([
            "bench",
            "cluster",
            "--redis",
            &url,
            "--redis-prefix",
            "taken:",
        ])
        .args(small)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "a report of nothing");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("already holds keys under `taken:`"), "{err}");
    // Another cluster (serve's default prefix) on the same Redis while a bench runs: the
    // bench's rounds never reach it, and the bench takes its own keys away at the end.
    let other = Server::start(&["--redis", &url, "--node", "x", "--no-publish"]);
    let out = rtcheck()
        .args(["bench", "cluster", "--redis", &url])
        .args(small)
        .timeout(Duration::from_secs(240))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {err}"));
    assert_eq!(v["valid"], true, "{v:#}");
    assert_eq!(
        rounds(&other),
        0,
        "the bench's rounds reached another cluster"
    );
    let (_, m) = http_get(other.addr, "/healthz");
    assert!(m.starts_with("ok"), "{m}");
    assert!(
        keys(&r, "rtcheck-bench-*").is_empty(),
        "{:?}",
        keys(&r, "*")
    );
    assert_eq!(keys(&r, "taken:*"), ["taken:seq"]);
}
