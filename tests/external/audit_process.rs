//! `audit --pid LIST` / `--process NAME` on real servers (Debian packages): nginx with a
//! master and two workers is judged on its workers, with nginx's own directive as the
//! fix (not prlimit on the master); a python3-websockets server listening with backlog
//! 100 has that backlog read (sock_diag) and judged against the reconnect burst.
use crate::common;
use crate::foreign_common;
use serde_json::Value;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// nginx as a master with two workers (its default shape), on loopback; on drop the
/// master is told to stop (it stops its workers), and any worker left is killed.
struct Nginx {
    master: Child,
    workers: Vec<u32>,
    _dir: tempfile::TempDir,
}

impl Nginx {
    fn start() -> Nginx {
        let bin = common::require_binary("nginx", "nginx-light");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        let port = common::free_port();
        let conf = format!(
            "daemon off;\nmaster_process on;\nworker_processes 2;\npid {d}/nginx.pid;\nevents {{ worker_connections 64; }}\nhttp {{\n  access_log off;\n  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n  server {{ listen 127.0.0.1:{port}; return 204; }}\n}}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let master = Command::new(bin)
            .args(["-p", &d, "-c", &format!("{d}/nginx.conf"), "-e"])
            .arg(format!("{d}/error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut n = Nginx {
            master,
            workers: vec![],
            _dir: dir,
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let until = Instant::now() + Duration::from_secs(30);
        // Both workers forked and the port answering.
        loop {
            n.workers = common::procs::children_of(n.master.id());
            if n.workers.len() == 2 && std::net::TcpStream::connect(addr).is_ok() {
                break;
            }
            assert!(n.master.try_wait().unwrap().is_none(), "nginx exited");
            assert!(
                Instant::now() < until,
                "nginx workers not up: {:?}",
                n.workers
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        n.workers.sort_unstable();
        n
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        let _ = kill(Pid::from_raw(self.master.id() as i32), Signal::SIGTERM);
        let until = Instant::now() + Duration::from_secs(10);
        while self.master.try_wait().ok().flatten().is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.master.kill();
        let _ = self.master.wait();
        for &w in &self.workers {
            if common::procs::alive(w) {
                let _ = kill(Pid::from_raw(w as i32), Signal::SIGKILL);
            }
        }
    }
}

fn audit(args: &[&str]) -> (Option<i32>, Value, String) {
    let out = common::rtcheck()
        .args(["audit", "--format", "json", "--no-proxy-config"])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {err}"));
    (out.status.code(), v, err)
}

fn finding<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id}: {v:#}"))
}

fn fix_text(f: &Value) -> String {
    foreign_common::fix_text(f)
}

#[test]
fn nginx_is_judged_on_its_workers_with_its_own_directive() {
    let n = Nginx::start();
    let m = n.master.id();
    // `pidof nginx` prints the workers and the master, space-separated.
    let pidof = format!("{} {} {m}", n.workers[1], n.workers[0]);
    let (code, v, err) = audit(&["--pid", &pidof]);
    assert!(matches!(code, Some(0 | 1)), "{err}");
    let target = v["target"].as_str().unwrap();
    let want = format!(
        "process {} (a worker of nginx master {m}; workers {}, {})",
        n.workers[0], n.workers[0], n.workers[1]
    );
    assert!(target.contains(&want), "{target}");
    let f = finding(&v, "fd-limit");
    let obs = f["observed"].as_str().unwrap();
    assert!(obs.contains(&format!("process {}", n.workers[0])), "{obs}");
    let fix = fix_text(f);
    if f["status"] != "pass" {
        assert!(fix.contains("worker_rlimit_nofile"), "{fix}");
        assert!(
            fix.contains(&format!("master ({m}) does not reach")),
            "{fix}"
        );
    }
    assert!(!fix.contains("prlimit --pid"), "{fix}");
    assert!(fix.contains("LimitNOFILE="), "{fix}");
    // The listener nginx holds, read with its backlog (nginx's default 511, capped by
    // somaxconn).
    let s = finding(&v, "somaxconn");
    assert!(
        s["observed"]
            .as_str()
            .unwrap()
            .contains("listening: 127.0.0.1:"),
        "{s:#}"
    );
    let smc: f64 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        s["numbers"]["listen_backlog"].as_f64(),
        Some(smc.min(511.0)),
        "{s:#}"
    );

    // By name: a worker of an nginx master (another nginx may run on a shared host).
    let (_, v, err) = audit(&["--process", "nginx"]);
    let target = v["target"].as_str().unwrap_or_else(|| panic!("{err}"));
    assert!(target.contains("a worker of nginx master"), "{target}");
}

#[test]
fn a_websockets_server_with_backlog_100_has_it_read() {
    let app = foreign_common::py_websockets(&[("BACKLOG", "100")]);
    let pid = holder(app.addr());
    let (_, v, err) = audit(&["--pid", &pid.to_string(), "--connections", "10000"]);
    let s = finding(&v, "somaxconn");
    assert_eq!(
        s["numbers"]["listen_backlog"].as_f64(),
        Some(100.0),
        "{err}\n{s:#}"
    );
    let obs = s["observed"].as_str().unwrap();
    assert!(
        obs.contains(&format!("{} backlog 100", app.addr())),
        "{obs}"
    );
    assert_eq!(s["status"], "warn", "100 < a 10,000 reconnect burst: {s:#}");
    let fix = fix_text(s);
    assert!(
        fix.contains("websockets.serve(..., backlog=10000)"),
        "{fix}"
    );
    // Two unrelated processes given: the first audited, the other named, not dropped.
    let me = std::process::id();
    let (_, v, err) = audit(&["--pid", &format!("{pid},{me}")]);
    let target = v["target"].as_str().unwrap_or_else(|| panic!("{err}"));
    assert!(target.contains(&format!("process {pid}")), "{target}");
    assert!(
        target.contains(&format!("also given, not audited: {me}")),
        "{target}"
    );
}

/// --verify on the user's process: what rtcheck measured on its own server is labelled
/// a reference, never the process's figure.
#[test]
fn verify_with_pid_labels_rtchecks_own_figures_as_reference() {
    let app = foreign_common::py_websockets(&[]);
    let pid = holder(app.addr());
    let (_, v, err) = audit(&[
        "--pid",
        &pid.to_string(),
        "--connections",
        "200",
        "--verify",
        "--verify-timeout",
        "90s",
    ]);
    let verified: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("{err}"))
        .iter()
        .filter_map(|f| f.get("verification").filter(|x| !x.is_null()))
        .collect();
    assert!(!verified.is_empty(), "{v:#}");
    for x in verified {
        let verdict = x["verdict"].as_str().unwrap();
        assert!(
            verdict.starts_with(&format!(
                "reference, measured on rtcheck's own server (not process {pid})"
            )),
            "{verdict}"
        );
    }
}

#[test]
fn bad_pid_lists_and_names_are_one_line_and_exit_2() {
    for (args, want) in [
        (vec!["--pid", "12 x"], "`x` is not a process id"),
        (vec!["--pid", ""], "no process id"),
        (
            vec!["--pid", "999999999"],
            "--pid 999999999: no such process",
        ),
        (
            vec!["--process", "no-such-server-zz"],
            "--process no-such-server-zz: no running process",
        ),
    ] {
        let out = common::rtcheck().arg("audit").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// The pid listening on `addr` (the fixture's python process), read from /proc.
fn holder(addr: SocketAddr) -> u32 {
    let proc = std::path::Path::new("/proc");
    let l = rtcheck_base::os::process::listeners(proc).unwrap();
    let inode = l.iter().find(|x| x.local == addr).unwrap().inode;
    let (pids, _) = rtcheck_base::os::process::holders(proc, &[inode]);
    assert_eq!(pids.len(), 1, "{pids:?}");
    pids[0]
}
