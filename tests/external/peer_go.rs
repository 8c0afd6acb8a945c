//! The Go + gorilla/websocket peer of benches/peers/go-gorilla: it builds offline from the
//! Debian packages, and `bench fanout --server` measures it as a valid run with every
//! sample accounted for, its /control/stats read (so the server columns are filled).
use crate::common;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PACKAGES: &str = "golang-go golang-github-gorilla-websocket-dev";
const GORILLA: &str = "/usr/share/gocode/src/github.com/gorilla/websocket";
const CLIENTS: u64 = 20;
const ROUNDS: u64 = 10;

fn peer_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/go-gorilla")
}

/// Build the peer into `out`; a missing toolchain or library fails naming the packages.
fn build_peer(out: &Path) -> PathBuf {
    assert!(
        Path::new(GORILLA).join("conn.go").is_file(),
        "{GORILLA} missing: install the Debian packages {PACKAGES} (apt-get install -y {PACKAGES})"
    );
    let bin = out.join("go-gorilla-peer");
    // The Go build cache lives under target/ so repeated runs are quick; nothing is
    // downloaded (GOPROXY=off; go.mod replaces gorilla with the Debian copy).
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-build-cache");
    let res = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(peer_dir())
        .env("GOCACHE", &cache)
        .env("GOPATH", out.join("gopath"))
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("GOSUMDB", "off")
        .env("GO111MODULE", "on")
        .output();
    let o = match res {
        Ok(o) => o,
        Err(e) => panic!("cannot run `go` ({e}): install the Debian packages {PACKAGES}"),
    };
    assert!(
        o.status.success(),
        "go build of {} failed (needs {PACKAGES}): {}",
        peer_dir().display(),
        String::from_utf8_lossy(&o.stderr)
    );
    bin
}

/// The peer process, killed and reaped on drop (also when an assertion fails).
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_peer(bin: &Path, dir: &Path) -> (Peer, String) {
    let addr_file = dir.join("peer.addr");
    let child = Command::new(bin)
        .args(["-listen", "127.0.0.1:0", "-rate", "20", "-size", "256"])
        .args(["-max-time", "120s", "-exit-with-parent", "-addr-file"])
        .arg(&addr_file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the peer");
    let mut peer = Peer(child);
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(s) = std::fs::read_to_string(&addr_file) {
            if s.ends_with('\n') {
                return (peer, s.trim().to_string());
            }
        }
        if let Ok(Some(st)) = peer.0.try_wait() {
            panic!("peer exited ({st}) before writing {}", addr_file.display());
        }
        assert!(Instant::now() < until, "peer did not listen within 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_go_peer_is_measured_with_every_sample_accounted_for() {
    let _timed = common::timed();
    let dir = tempfile::tempdir().unwrap();
    let bin = build_peer(dir.path());
    let (_peer, addr) = start_peer(&bin, dir.path());
    let url = format!("ws://{addr}/ws");
    let out = assert_cmd::Command::cargo_bin("rtcheck")
        .unwrap()
        .args(["bench", "fanout", "--server", &url, "--format", "json"])
        .args(["--connections", &CLIENTS.to_string()])
        .args(["--rounds", &ROUNDS.to_string()])
        .args(["--rate", "20", "--size", "256", "--drain", "2s"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}); stderr: {err}"));
    let s = &v["scenarios"][0];
    assert_eq!(out.status.code(), Some(0), "{err}\n{s:#}");
    assert_eq!(s["name"], "external");
    assert_eq!(s["valid"], true, "{s:#}");
    let acc = &s["accounting"];
    assert_eq!(acc["expected"], CLIENTS * ROUNDS, "{acc}");
    assert_eq!(acc["received"], CLIENTS * ROUNDS, "{acc}");
    for k in ["dropped", "after_removal", "unpublished", "never_connected"] {
        assert_eq!(acc[k], 0, "{k}: {acc}");
    }
    assert_eq!(acc["unexplained"], 0, "{acc}");
    assert_eq!(s["samples"], CLIENTS * ROUNDS);
    assert_eq!(s["rounds_completed"], ROUNDS);
    // The peer's /control/stats was read: its own counters and process figures are there.
    assert_eq!(s["drops"], 0);
    assert_eq!(s["removed"], 0);
    let rss = s["server_rss_mb"]
        .as_f64()
        .expect("server RSS from the peer");
    assert!(rss > 1.0 && rss < 1000.0, "server_rss_mb {rss}");
    assert!(s["server_cpu_s"].as_f64().is_some(), "{s:#}");
    assert!(s["hub_max_ms"].as_f64().is_some(), "{s:#}");
    let checks = s["checks"].as_array().unwrap();
    let status = |name: &str| {
        checks
            .iter()
            .find(|c| c["name"] == name)
            .and_then(|c| c["status"].as_str())
            .unwrap_or("absent")
            .to_string()
    };
    // Both ends report TCP_NODELAY on: the peer read it back from its sockets.
    assert_eq!(status("TCP_NODELAY"), "pass", "{s:#}");
    for c in ["samples accounted", "accounting identity", "seq order"] {
        assert_eq!(status(c), "pass", "{c}: {s:#}");
    }
    assert!(checks.iter().all(|c| c["status"] != "fail"), "{s:#}");
    let (p50, max) = (s["p50_ms"].as_f64().unwrap(), s["max_ms"].as_f64().unwrap());
    assert!(p50 > 0.0 && p50 <= max, "p50 {p50} max {max}");
}

#[test]
fn the_go_peer_refuses_a_second_start_and_a_non_loopback_listen() {
    let _timed = common::timed();
    let dir = tempfile::tempdir().unwrap();
    let bin = build_peer(dir.path());
    let o = Command::new(&bin)
        .args(["-listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("only loopback"), "{e}");
    let (_peer, addr) = start_peer(&bin, dir.path());
    let addr: std::net::SocketAddr = addr.parse().unwrap();
    let (st, body) = rtcheck::sys::control::request(addr, "POST", "/control/start?rounds=2")
        .expect("first start");
    assert_eq!(st, 200, "{body}");
    let (st, _) = rtcheck::sys::control::request(addr, "POST", "/control/start").unwrap();
    assert_eq!(st, 409);
    // With no client the rounds still run on schedule: stats reach rounds_sent 2, finished.
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let s = rtcheck::sys::control::stats(addr).unwrap();
        assert_eq!(s.rounds_total, Some(2));
        if s.finished {
            assert_eq!(s.rounds_sent, 2);
            assert_eq!(s.hub_round_ms.len(), 2);
            assert!(s.publish_start_ns > 0 && s.rss_bytes > 0);
            break;
        }
        assert!(
            Instant::now() < until,
            "peer did not finish 2 rounds: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
