//! Helpers shared by the integration tests (`mod common;`): the rtcheck command, the
//! embedded server as a child (`rtcheck serve` on an ephemeral loopback port, always
//! killed), raw HTTP to it, and `verify --format json` read back.
#![allow(dead_code)]
pub mod procs;
pub mod pty;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Sets this test binary's default concurrency, from its `main.rs` before libtest
/// starts (a constructor: libtest reads `RUST_TEST_THREADS` once, at start): `per_core`
/// tests at once per core. `live` and `external` spend most of their time waiting on
/// what the facts need (a proxy's idle timeout, a library's default heartbeat, a
/// reconnect wave, a service starting), `cli` on the rtcheck processes it starts, not
/// on the CPU, so they run more tests than cores; `rehearse` keeps libtest's one per
/// core (its runs are CPU-bound: no faster at three per core; BENCHMARKS.md, "Third
/// pass"). `--test-threads N` or `RUST_TEST_THREADS` given by the caller still decide.
pub fn default_test_threads(per_core: usize) {
    let set = match std::env::var_os("RUST_TEST_THREADS") {
        Some(given) => TestThreads::Caller(given),
        None => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            std::env::set_var("RUST_TEST_THREADS", (per_core * cores).to_string());
            TestThreads::Defaulted { per_core, cores }
        }
    };
    let _ = TEST_THREADS.set(set);
}

/// What [`default_test_threads`] did, for a test to check it (None: it never ran).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestThreads {
    /// The caller had set `RUST_TEST_THREADS` (this value): left as it was.
    Caller(std::ffi::OsString),
    /// Unset by the caller: set to `per_core` x `cores`.
    Defaulted { per_core: usize, cores: usize },
}

static TEST_THREADS: std::sync::OnceLock<TestThreads> = std::sync::OnceLock::new();

pub fn test_threads_set() -> Option<&'static TestThreads> {
    TEST_THREADS.get()
}

/// A slot for a test whose verdict rests on the host keeping a schedule (a publisher's
/// rounds, a load generator's rate, a library's 1 s heartbeat): at most two such tests
/// per core at once in this binary, however many waiting-bound tests run beside them
/// ([`default_test_threads`]: three per core). Six at once beside two CPU hogs is what
/// broke a single-threaded node server's `load` levels (timeouts); libtest's default had
/// one per core. Taken first in every test of the modules `tests/cli/test_classes.rs`
/// lists; released on drop (also when the test panics).
pub fn timed() -> TimedSlot {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut held = TIMED.0.lock().unwrap_or_else(|e| e.into_inner());
    while *held >= 2 * cores {
        held = TIMED.1.wait(held).unwrap_or_else(|e| e.into_inner());
    }
    *held += 1;
    TimedSlot(())
}

static TIMED: (std::sync::Mutex<usize>, std::sync::Condvar) =
    (std::sync::Mutex::new(0), std::sync::Condvar::new());

/// Held while a timed test runs ([`timed`]).
pub struct TimedSlot(());

impl Drop for TimedSlot {
    fn drop(&mut self) {
        let mut held = TIMED.0.lock().unwrap_or_else(|e| e.into_inner());
        *held -= 1;
        TIMED.1.notify_one();
    }
}

/// How long any one rtcheck run may take before the test fails (a hang is a failure).
pub const RUN_LIMIT: Duration = Duration::from_secs(120);

/// The rtcheck binary under test, bounded by [`RUN_LIMIT`].
pub fn rtcheck() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("rtcheck").unwrap();
    c.timeout(RUN_LIMIT);
    c
}

/// [`rtcheck`] run from the temp dir (embedded data, not files in the working directory)
/// with `NO_COLOR` unset (colour decided by the flags alone).
pub fn rtcheck_isolated() -> assert_cmd::Command {
    let mut c = rtcheck();
    c.current_dir(std::env::temp_dir());
    c.env_remove("NO_COLOR");
    c
}

// ---- the embedded server as a child process ----

pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub control: Option<SocketAddr>,
    pub dir: tempfile::TempDir,
}

impl Server {
    pub fn start(args: &[&str]) -> Server {
        Server::start_at("127.0.0.1:0", args)
    }

    /// [`Server::start`] on a given listen address (a restart on the same port).
    pub fn start_at(listen: &str, args: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let addr_file = dir.path().join("addr");
        let stderr = std::fs::File::create(dir.path().join("stderr")).unwrap();
        let child = Command::new(assert_cmd::cargo::cargo_bin("rtcheck"))
            .args(["serve", "--listen", listen, "--exit-with-parent"])
            .env_remove("RTCHECK_CONTROL_TOKEN")
            .env_remove("RTCHECK_REDIS_URL")
            .arg("--addr-file")
            .arg(&addr_file)
            .args(args)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        let text = loop {
            if let Ok(t) = std::fs::read_to_string(&addr_file) {
                if t.ends_with('\n') {
                    break t;
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut lines = text.lines().map(|l| l.parse::<SocketAddr>().unwrap());
        let addr = lines.next().unwrap();
        let control = lines.next();
        Server {
            child,
            addr,
            control,
            dir,
        }
    }

    /// Where control endpoints live (the main port unless --protocol raw).
    pub fn control_addr(&self) -> SocketAddr {
        self.control.unwrap_or(self.addr)
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr")).unwrap_or_default()
    }

    pub fn stats(&self) -> serde_json::Value {
        let (status, body) = http_get(self.control_addr(), "/control/stats");
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    }

    pub fn start_publishing(&self, rounds: u64) {
        let (status, body) = http(
            self.control_addr(),
            &format!("POST /control/start?rounds={rounds} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(status, 200, "{body}");
    }

    /// Poll /control/stats until `pred` holds (or panic after `limit`).
    pub fn wait_stats(
        &self,
        limit: Duration,
        pred: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let t0 = Instant::now();
        loop {
            let s = self.stats();
            if pred(&s) {
                return s;
            }
            assert!(
                t0.elapsed() < limit,
                "condition not reached; last stats: {s}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
    }

    /// Wait for exit; None if it did not exit within `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn binary() -> PathBuf {
    assert_cmd::cargo::cargo_bin("rtcheck")
}

/// One raw HTTP exchange on a fresh connection (Connection: close): (status, body).
pub fn http(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, body.to_string())
}

pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    http(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    )
}

// ---- `rtcheck verify --format json` ----

pub struct Out {
    pub code: i32,
    pub json: Value,
    pub stderr: String,
}

pub fn verify_json(args: &[&str]) -> Out {
    let out = rtcheck()
        .arg("verify")
        .args(args)
        .args(["--format", "json", "--quiet", "--color", "never"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\nstderr: {stderr}"));
    Out {
        code: out.status.code().unwrap_or(-1),
        json,
        stderr,
    }
}

/// The verification of experiment `name` from verify's own report (panics with the whole report if absent).
pub fn verification<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["verifications"]
        .as_array()
        .expect("verifications array")
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` in {json:#}"))
}

pub fn measured(v: &Value) -> f64 {
    v["measured"]
        .as_f64()
        .unwrap_or_else(|| panic!("no number: {v:#}"))
}

pub fn assert_valid(v: &Value) {
    assert_eq!(v["valid"], true, "invalid measurement: {v:#}");
}

pub fn sysctl(path: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/{path}")).unwrap()
}

pub fn nofile_hard() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    line.split_whitespace().nth(4).unwrap().parse().unwrap()
}

// ---- external services (nginx, HAProxy, Redis, ...) on loopback ----

/// The path of an external program, or a panic naming the Debian package that has it:
/// a missing binary fails the test, never skips it.
pub fn require_binary(name: &str, debian_package: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("`{name}` not found: install the Debian package {debian_package} (apt-get install {debian_package})")
        })
}

/// A loopback port for a service a test starts with its config: below the kernel's
/// ephemeral range, where bind(0) (every `serve --listen 127.0.0.1:0` of a parallel test)
/// and outgoing connections never land, so nothing takes it between this check and the
/// service's own bind; unique within this test process, and free when checked.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const BASE: u32 = 10_000;
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    let span = low.saturating_sub(BASE);
    if span >= 1_000 {
        // Each test binary starts elsewhere in the span: another's TIME_WAIT is not ours.
        let start = std::process::id().wrapping_mul(7_919) % span;
        for _ in 0..span {
            let port = BASE + (start + NEXT.fetch_add(1, Ordering::SeqCst)) % span;
            // Chromium refuses to connect to 10080 (its restricted-port list: "unsafe
            // port", the page's WebSocket closes 1006); the browser tests use these ports.
            if port == 10_080 {
                continue;
            }
            if std::net::TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
                return port as u16;
            }
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

/// An external service with its config dir: killed and reaped on drop (also when the test
/// panics), the dir removed after.
pub struct Service {
    pub child: Child,
    pub name: String,
    pub dir: tempfile::TempDir,
}

impl Service {
    /// Spawn `cmd` (stdout and stderr to `dir`/NAME.log).
    pub fn start(mut cmd: Command, name: &str, dir: tempfile::TempDir) -> Service {
        let log = std::fs::File::create(dir.path().join(format!("{name}.log"))).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Service {
            child,
            name: name.to_string(),
            dir,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{}.log", self.name)))
            .unwrap_or_default()
    }

    /// Wait until `addr` accepts connections (panics with the log after `limit`).
    pub fn wait_listening(&mut self, addr: SocketAddr, limit: Duration) {
        let t0 = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Some(st) = self.child.try_wait().unwrap() {
                panic!(
                    "{} exited ({st}) before listening: {}",
                    self.name,
                    self.log()
                );
            }
            assert!(
                t0.elapsed() < limit,
                "{} not listening on {addr} within {limit:?}: {}",
                self.name,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- raw WebSocket and HTTP clients, network namespaces (serve conformance tests) ----

/// A blocking raw WebSocket client (handshake by hand) for misbehaving-client tests.
pub fn raw_ws(addr: SocketAddr, rcvbuf: Option<usize>) -> std::net::TcpStream {
    raw_ws_at(addr, "/ws", rcvbuf)
}

/// [`raw_ws`] on another WebSocket path (`/echo`).
pub fn raw_ws_at(addr: SocketAddr, path: &str, rcvbuf: Option<usize>) -> std::net::TcpStream {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    if let Some(n) = rcvbuf {
        sock.set_recv_buffer_size(n).unwrap();
    }
    sock.connect(&addr.into()).unwrap();
    let mut s: std::net::TcpStream = sock.into();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
    s
}

/// Read until the server's close frame; returns its status code.
pub fn read_close_code(s: &mut std::net::TcpStream) -> u16 {
    let mut all = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = s.read(&mut buf).unwrap_or(0);
        assert!(n > 0, "connection ended without a close frame");
        all.extend_from_slice(&buf[..n]);
        // Walk server frames (unmasked) looking for a close.
        let mut pos = 0;
        while all.len() >= pos + 2 {
            let op = all[pos] & 0x0F;
            let (hdr, len) = match all[pos + 1] & 0x7F {
                126 if all.len() >= pos + 4 => {
                    (4, u16::from_be_bytes([all[pos + 2], all[pos + 3]]) as usize)
                }
                127 if all.len() >= pos + 10 => (
                    10,
                    u64::from_be_bytes(all[pos + 2..pos + 10].try_into().unwrap()) as usize,
                ),
                126 | 127 => break,
                n => (2, n as usize),
            };
            if all.len() < pos + hdr + len {
                break;
            }
            if op == rtcheck_wire::ws::OP_CLOSE {
                return u16::from_be_bytes([all[pos + hdr], all[pos + hdr + 1]]);
            }
            pos += hdr + len;
        }
    }
}

/// Server frames (unmasked) read until the server closes the connection or `limit`
/// passes: (opcode, payload) each.
pub fn read_frames_until_eof(s: &mut std::net::TcpStream, limit: Duration) -> Vec<(u8, Vec<u8>)> {
    let t0 = Instant::now();
    let mut all = Vec::new();
    let mut buf = [0u8; 65536];
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    while t0.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
    }
    parse_server_frames(&all)
}

/// Complete unmasked server frames in `all`.
pub fn parse_server_frames(all: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while all.len() >= pos + 2 {
        let op = all[pos] & 0x0F;
        let (hdr, len) = match all[pos + 1] & 0x7F {
            126 if all.len() >= pos + 4 => {
                (4, u16::from_be_bytes([all[pos + 2], all[pos + 3]]) as usize)
            }
            127 if all.len() >= pos + 10 => (
                10,
                u64::from_be_bytes(all[pos + 2..pos + 10].try_into().unwrap()) as usize,
            ),
            126 | 127 => break,
            n => (2, n as usize),
        };
        if all.len() < pos + hdr + len {
            break;
        }
        out.push((op, all[pos + hdr..pos + hdr + len].to_vec()));
        pos += hdr + len;
    }
    out
}

/// One raw HTTP exchange: (status, head, body); the head keeps its header lines.
pub fn http_full(addr: SocketAddr, request: &[u8]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

/// The value of header `name` (case-insensitive) in a response head.
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Run a bash script as root in a private network namespace (`unshare -n`): nothing it
/// binds is reachable from outside. Fails with the package to install when a tool is
/// missing. Returns stdout.
pub fn in_netns(script: &str, args: &[&str]) -> String {
    for (tool, pkg) in [
        ("unshare", "util-linux"),
        ("ip", "iproute2"),
        ("ss", "iproute2"),
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            found,
            "`{tool}` not found: install the Debian package {pkg}"
        );
    }
    let out = Command::new("unshare")
        .args(["-n", "bash", "-c", script, "netns"])
        .arg(binary())
        .args(args)
        .env_remove("RTCHECK_CONTROL_TOKEN")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "needs root for `unshare -n` (a private network namespace): {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// An invalid run whose failed checks are all the load side's schedule (publisher timer,
/// round start, load generator CPU): the host was busy, the hub was not measured wrong.
/// Not "server schedule": it reads the payload sizes and the scheduled times inside the
/// hub's frames (validity.rs `server_schedule`), and rtcheck's publisher writes the
/// planned time, not the send time (publisher.rs), so a busy host does not move it; it
/// fails for a hub that resizes payloads or rewrites seqs or times: the hub's fault.
pub fn late_only(run: &Value) -> bool {
    const LATE: [&str; 3] = [
        "publisher schedule",
        "round start drift",
        "load generator CPU",
    ];
    let failed: Vec<&str> = run["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|k| k["status"] == "fail" || k["status"] == "invalid")
        .filter_map(|k| k["name"].as_str())
        .collect();
    run["valid"] == false && !failed.is_empty() && failed.iter().all(|n| LATE.contains(n))
}
