//! `rtcheck serve --redis` against a real redis-server (Debian package `redis-server`),
//! started on a free loopback port in a temp dir (issue 21 items 4 and 8): two clusters on
//! one Redis stay apart under their `--redis-prefix`, `bench cluster` refuses a Redis that
//! already holds its prefix, and a Redis asking for a password is one line at start (exit
//! 2) and never reported as back before a command succeeds.
use crate::common;
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

const PASSWORD: &str = "s3cret-pw-4711";

#[test]
fn a_redis_wanting_a_password_is_one_line_and_exit_2_at_start() {
    let d = tempfile::tempdir().unwrap();
    let r = redis(d.path());
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg(PASSWORD)
        .query(&mut con(&r))
        .unwrap();
    let t0 = Instant::now();
    let out = rtcheck()
        .args(["serve", "--listen", "127.0.0.1:0", "--redis", &r.url()])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(30), "bounded");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("--redis {}", r.url())),
        "names the peer: {err}"
    );
    assert!(err.contains("NOAUTH") && err.contains("password"), "{err}");
    // With the password: serves, and never prints it.
    let url = format!("redis://:{PASSWORD}@127.0.0.1:{}/", r.port());
    let node = Server::start(&["--redis", &url, "--node", "a", "--no-publish"]);
    let (st, body) = http_get(node.addr, "/healthz");
    assert_eq!(st, 200);
    assert!(!node.stderr().contains(PASSWORD) && !body.contains(PASSWORD));
}

/// Connections Redis has accepted so far (each reconnect attempt is one).
fn connections(c: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn count(text: &str, what: &str) -> usize {
    text.lines().filter(|l| l.contains(what)).count()
}

#[test]
fn a_failing_link_is_logged_rate_limited_and_back_only_once_a_command_answers() {
    let d = tempfile::tempdir().unwrap();
    let r = redis(d.path());
    let node = Server::start(&["--redis", &r.url(), "--node", "a", "--no-publish"]);
    let wait_health = |prefix: &str| {
        let t0 = Instant::now();
        loop {
            let (_, b) = http_get(node.addr, "/healthz");
            if b.starts_with(prefix) {
                return;
            }
            assert!(t0.elapsed() < LIMIT, "healthz never `{prefix}`: {b}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_health("ok (node a, redis up, epoch ");
    // This connection stays authenticated when Redis starts asking for a password; the
    // node's subscription is killed and every reconnect of it meets NOAUTH.
    let mut admin = con(&r);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg(PASSWORD)
        .query(&mut admin)
        .unwrap();
    let before = connections(&mut admin);
    let _: u64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "pubsub"])
        .query(&mut admin)
        .unwrap();
    let t0 = Instant::now();
    while connections(&mut admin) < before + 5 {
        assert!(
            t0.elapsed() < LIMIT,
            "the node stopped reconnecting: {}",
            node.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_health("degraded: redis down");
    let log = node.stderr();
    assert_eq!(count(&log, "redis link back"), 0, "not back: {log}");
    assert!(count(&log, "redis link lost") <= 2, "rate-limited: {log}");
    assert_eq!(node.stats()["redis_up"], false);
    // Redis answers again: back, said once.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("")
        .query(&mut admin)
        .unwrap();
    wait_health("ok (node a, redis up, epoch ");
    let log = node.stderr();
    assert_eq!(count(&log, "redis link back"), 1, "{log}");
}

#[test]
fn accept_at_the_fd_limit_is_counted_and_logged_once_per_interval() {
    use std::process::{Command, Stdio};
    let d = tempfile::tempdir().unwrap();
    let addr_file = d.path().join("addr");
    let log = d.path().join("stderr");
    let mut child = Command::new("bash")
        .args([
            "-c",
            "ulimit -n 40 && exec \"$0\" serve --listen 127.0.0.1:0 --exit-with-parent --addr-file \"$1\"",
        ])
        .arg(common::binary())
        .arg(&addr_file)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _kill = scopeguard(child.id());
    let t0 = Instant::now();
    let addr: std::net::SocketAddr = loop {
        if let Ok(t) = std::fs::read_to_string(&addr_file) {
            if t.ends_with('\n') {
                break t.lines().next().unwrap().parse().unwrap();
            }
        }
        assert!(t0.elapsed() < LIMIT, "serve did not start");
        std::thread::sleep(Duration::from_millis(20));
    };
    // More idle connections than the limit: accept fails with EMFILE 20 times a second.
    let flood: Vec<_> = (0..60)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    let stderr = || std::fs::read_to_string(&log).unwrap_or_default();
    let t0 = Instant::now();
    while !stderr().contains("accept:") {
        assert!(t0.elapsed() < LIMIT, "no accept error: {}", stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    // A window of 3 s of EMFILE: one line (the next is due after 10 s).
    std::thread::sleep(Duration::from_secs(3));
    let text = stderr();
    assert_eq!(count(&text, "accept:"), 1, "{text}");
    assert!(text.contains("Too many open files"), "{text}");
    drop(flood);
    let t0 = Instant::now();
    let body = loop {
        let got = std::panic::catch_unwind(|| http_get(addr, "/metrics"));
        if let Ok((200, b)) = got {
            break b;
        }
        assert!(t0.elapsed() < LIMIT, "no /metrics after the flood left");
        std::thread::sleep(Duration::from_millis(100));
    };
    let n: u64 = body
        .lines()
        .find_map(|l| l.strip_prefix("rtcheck_accept_errors_total{kind=\"emfile\"} "))
        .unwrap_or_else(|| panic!("{body}"))
        .parse()
        .unwrap();
    assert!(n >= 5, "3 s at 20 a second, counted: {n}");
    let _ = child.kill();
    let _ = child.wait();
}

/// Kill the pid when the test ends, even by a panic.
fn scopeguard(pid: u32) -> impl Drop {
    struct K(u32);
    impl Drop for K {
        fn drop(&mut self) {
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(self.0 as i32, libc::SIGKILL);
            }
        }
    }
    K(pid)
}

#[test]
fn a_resume_flood_on_a_node_replaying_from_the_stream_stays_bounded() {
    let d = tempfile::tempdir().unwrap();
    let r = redis(d.path());
    let url = r.url();
    let a = Server::start(&[
        "--redis", &url, "--node", "a", "--size", "1KiB", "--rate", "2000", "--rounds", "1024",
    ]);
    a.wait_stats(LIMIT, |s| s["rounds_sent"] == 1024);
    // Node b joins afterwards: its own ring is empty, a resume from 0 reads the Stream.
    let b = Server::start(&[
        "--redis",
        &url,
        "--node",
        "b",
        "--no-publish",
        "--size",
        "1KiB",
        "--sndbuf",
        "4096",
        "--replay-budget",
        "8MiB",
    ]);
    let base = rtcheck_base::os::proc::rss_of(b.child.id()).unwrap();
    let mut peak = base;
    let mut flood = Vec::new();
    for i in 0..300 {
        let sock =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        sock.set_recv_buffer_size(4096).unwrap();
        sock.connect(&b.addr.into()).unwrap();
        let mut s: std::net::TcpStream = sock.into();
        use std::io::Write;
        s.write_all(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 0\r\n\r\n")
            .unwrap();
        flood.push(s);
        if i % 20 == 0 {
            peak = peak.max(rtcheck_base::os::proc::rss_of(b.child.id()).unwrap());
        }
    }
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        peak = peak.max(rtcheck_base::os::proc::rss_of(b.child.id()).unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "300 resumes from the Stream: RSS {} -> {} MiB",
        base >> 20,
        peak >> 20
    );
    // Each resume used to build 1024 rounds in every encoding (about 4.5 MB).
    assert!(
        peak <= base + (8 << 20) + (64 << 20),
        "RSS {} -> {} MiB",
        base >> 20,
        peak >> 20
    );
    assert!(
        b.stats()["replay"]["peak_in_flight_bytes"]
            .as_u64()
            .unwrap()
            <= 8 << 20
    );
    // And a reader still gets all of it, from the Stream, in order (once the flood has
    // left and the node reaches Redis again: 300 Stream reads at once slow it down, and a
    // resume while Redis does not answer is decided by the node's own ring, empty here).
    drop(flood);
    b.wait_stats(LIMIT, |s| s["clients"]["sse"] == 0 && s["redis_up"] == true);
    let mut s = std::net::TcpStream::connect(b.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    use std::io::{Read, Write};
    s.write_all(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 1000\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 65536];
    let t0 = Instant::now();
    while !text.contains("id: 1024@") {
        assert!(t0.elapsed() < LIMIT, "no id 1024 yet: {text}");
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed early: {text}");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let ids: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(|v| v.split_once('@').expect("SEQ@EPOCH").0.parse().unwrap())
        .collect();
    assert_eq!(ids, (1001..=1024).collect::<Vec<_>>());
    assert!(
        !text.contains("event: reset"),
        "a resume the Stream holds: {text}"
    );
}
