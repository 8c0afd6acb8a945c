//! A fleet collecting rtcheck's gauges (issue 28): `audit --watch` rewriting its
//! Prometheus file atomically until SIGTERM/SIGINT, `--listen` serving /metrics itself
//! (loopback unless --listen-public), and Debian's prometheus-node-exporter reading the
//! file through its textfile collector, scraped and parsed back.
use crate::common;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small-container")
}

/// `rtcheck audit` of the fixture host with `args`, as a child (stderr to a file in `dir`).
fn audit_child(dir: &Path, args: &[&str]) -> Child {
    let err = std::fs::File::create(dir.join("stderr.log")).unwrap();
    Command::new(common::binary())
        .current_dir(dir)
        .args(["audit", "--no-proxy-config", "--procfs"])
        .arg(fixture().join("proc"))
        .arg("--sysfs")
        .arg(fixture().join("sys"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .unwrap()
}

/// Kills the child on drop (a failing test leaves no watcher behind).
struct Guard(Child);
impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn scrape(text: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap()
}

fn gauge(s: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    s.samples
        .iter()
        .find(|x| x.metric == name && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .and_then(|x| match x.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => Some(v),
            _ => None,
        })
}

/// Wait (generously: a loaded 2-core host) for `cond`, panicking with `what` after 60 s.
fn wait_for<T>(what: &str, mut cond: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn wait_exit(c: &mut Child, what: &str) -> std::process::ExitStatus {
    wait_for(what, || c.try_wait().unwrap())
}

#[test]
fn watch_rewrites_the_file_atomically_and_sigterm_or_sigint_ends_it_with_exit_0() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let prom = dir.path().join("rtcheck.prom");
        let mut g = Guard(audit_child(
            dir.path(),
            &[
                "--watch",
                "1s",
                "--report",
                "prometheus=rtcheck.prom",
                "--fail-on",
                "never",
            ],
        ));
        // Every read sees a whole file (the last gauge is always there), and the run's
        // timestamp moves on: at least three different runs seen.
        let mut stamps: Vec<f64> = Vec::new();
        wait_for("three runs of the watch", || {
            let text = std::fs::read_to_string(&prom).ok()?;
            let last = text.lines().last().unwrap_or("");
            assert!(
                last.starts_with("rtcheck_last_run_timestamp_seconds "),
                "a half-written file was read:\n{text}"
            );
            let ts = gauge(&scrape(&text), "rtcheck_last_run_timestamp_seconds", &[])?;
            if stamps.last() != Some(&ts) {
                stamps.push(ts);
            }
            (stamps.len() >= 3).then_some(())
        });
        unsafe { libc::kill(g.0.id() as i32, sig) };
        let st = wait_exit(&mut g.0, "the watch to stop");
        let err = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap();
        assert_eq!(st.code(), Some(0), "signal {sig}: {err}");
        assert!(err.contains("audit --watch: stopped after"), "{err}");
        // Nothing left over but the report (no temp files of the atomic writes).
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["rtcheck.prom", "stderr.log"]);
        let s = scrape(&std::fs::read_to_string(&prom).unwrap());
        let mem = [("check", "memory"), ("status", "fail")];
        assert_eq!(gauge(&s, "rtcheck_check_status", &mem), Some(1.0));
    }
}

/// GET `path` on `addr`: (status, body), or None while nothing answers.
fn get(addr: std::net::SocketAddr, path: &str) -> Option<(u16, String)> {
    std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    Some(common::http_get(addr, path))
}

#[test]
fn listen_serves_metrics_on_loopback_and_refuses_other_addresses_without_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let listen = format!("127.0.0.1:{port}");
    let addr: std::net::SocketAddr = listen.parse().unwrap();
    let mut g = Guard(audit_child(
        dir.path(),
        &["--listen", &listen, "--watch", "1s"],
    ));
    let body = wait_for("/metrics with the audit's gauges", || {
        match get(addr, "/metrics") {
            Some((200, b)) if b.contains("rtcheck_check_status") => Some(b),
            _ => None,
        }
    });
    let s = scrape(&body);
    assert_eq!(
        gauge(
            &s,
            "rtcheck_check_status",
            &[("check", "cpu"), ("status", "fail")]
        ),
        Some(1.0)
    );
    assert_eq!(
        gauge(&s, "rtcheck_checks", &[("status", "fail")]),
        Some(2.0)
    );
    assert_eq!(get(addr, "/").map(|r| r.0), Some(404));
    unsafe { libc::kill(g.0.id() as i32, libc::SIGTERM) };
    assert_eq!(wait_exit(&mut g.0, "the listener to stop").code(), Some(0));
    // Off loopback: refused at once, naming the flag that allows it.
    let out = common::rtcheck()
        .args(["audit", "--listen", "0.0.0.0:0", "--no-proxy-config"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--listen 0.0.0.0:0: not a loopback address")
            && err.contains("--listen-public"),
        "{err}"
    );
    let out = common::rtcheck()
        .args(["audit", "--watch", "10ms", "--no-proxy-config"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = common::rtcheck()
        .args(["audit", "--watch", "5s", "--verify"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--verify"));
}

#[test]
fn node_exporter_textfile_collector_serves_the_gauges() {
    let exporter = common::require_binary("prometheus-node-exporter", "prometheus-node-exporter");
    let dir = tempfile::tempdir().unwrap();
    let textfile = dir.path().join("textfile");
    std::fs::create_dir(&textfile).unwrap();
    let port = common::free_port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut cmd = Command::new(exporter);
    cmd.arg(format!(
        "--collector.textfile.directory={}",
        textfile.display()
    ))
    .arg(format!("--web.listen-address={addr}"))
    // Only the textfile collector: nothing else of this host is read.
    .args(["--collector.disable-defaults", "--collector.textfile"]);
    let svc_dir = tempfile::tempdir().unwrap();
    let mut exp = common::Service::start(cmd, "node-exporter", svc_dir);
    exp.wait_listening(addr, Duration::from_secs(60));
    // One audit writes the file (atomically) where the collector reads; a baseline entry
    // shows as its own state.
    std::fs::write(
        dir.path().join("b.yaml"),
        "accepted:\n  - check: memory\n    reason: staging\n    expiry: 2099-01-01\n",
    )
    .unwrap();
    let mut a = audit_child(
        dir.path(),
        &[
            "--report",
            "prometheus=textfile/rtcheck.prom",
            "--baseline",
            "b.yaml",
            "-o",
            "/dev/null",
        ],
    );
    let st = wait_exit(&mut a, "the audit");
    assert_eq!(st.code(), Some(1), "cpu fails on the fixture");
    let body = wait_for("node_exporter serving rtcheck_* gauges", || {
        match get(addr, "/metrics") {
            Some((200, b)) if b.contains("rtcheck_check_status{") => Some(b),
            _ => None,
        }
    });
    let s = scrape(&body);
    let st = "rtcheck_check_status";
    assert_eq!(
        gauge(&s, st, &[("check", "cpu"), ("status", "fail")]),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        gauge(&s, st, &[("check", "memory"), ("status", "suppressed")]),
        Some(1.0)
    );
    assert_eq!(
        gauge(&s, st, &[("check", "memory"), ("status", "fail")]),
        Some(0.0)
    );
    assert!(gauge(&s, "rtcheck_last_run_timestamp_seconds", &[]).unwrap() > 1.7e9);
    // The collector read it without an error (a half or malformed file sets this to 1).
    assert_eq!(
        gauge(&s, "node_textfile_scrape_error", &[]),
        Some(0.0),
        "{body}"
    );
    assert!(
        s.samples
            .iter()
            .any(|x| x.metric == "node_textfile_mtime_seconds"),
        "{body}"
    );
    drop(exp);
}
