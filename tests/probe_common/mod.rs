//! Real proxies in front of `rtcheck serve` for the probe tests: each started in the
//! foreground on 127.0.0.1 with a config generated in a temp dir, awaited until it
//! answers, and killed on drop. A missing binary fails the test naming its Debian package.
#![allow(dead_code)]
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A child process killed (and reaped) on drop.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub struct Serve {
    pub addr: SocketAddr,
    _child: Guard,
    _dir: tempfile::TempDir,
}

impl Serve {
    pub fn start(args: &[&str]) -> Serve {
        let dir = tempfile::tempdir().unwrap();
        let addr_file = dir.path().join("addr");
        let child = Command::new(assert_cmd::cargo::cargo_bin("rtcheck"))
            .args(["serve", "--listen", "127.0.0.1:0", "--exit-with-parent"])
            .arg("--addr-file")
            .arg(&addr_file)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let child = Guard(child);
        let t0 = Instant::now();
        let addr = loop {
            if let Ok(t) = std::fs::read_to_string(&addr_file) {
                if let Some(l) = t.lines().next().filter(|_| t.ends_with('\n')) {
                    break l.parse().unwrap();
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "serve did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        Serve {
            addr,
            _child: child,
            _dir: dir,
        }
    }
}

/// Which proxy binary, and the Debian package that provides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Nginx,
    Haproxy,
    Caddy,
}

impl Kind {
    fn binary(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Kind::Nginx => ("nginx", "/usr/sbin/nginx", "nginx-light"),
            Kind::Haproxy => ("haproxy", "/usr/sbin/haproxy", "haproxy"),
            Kind::Caddy => ("caddy", "/usr/bin/caddy", "caddy"),
        }
    }

    /// The binary's path; panics naming the package when it is missing.
    pub fn find(self) -> PathBuf {
        let (name, usual, package) = self.binary();
        if Path::new(usual).exists() {
            return usual.into();
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.exists())
            .unwrap_or_else(|| {
                panic!("{name} not found: install the Debian package `{package}` (apt-get install -y {package})")
            })
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Proxy {
    pub port: u16,
    pub dir: tempfile::TempDir,
    _child: Guard,
}

impl Proxy {
    /// Start `kind` with `config` (where `{DIR}` and `{PORT}` are replaced); wait until
    /// the port accepts.
    pub fn start(kind: Kind, config: &str) -> Proxy {
        let bin = kind.find();
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let d = dir.path().to_str().unwrap().to_string();
        let text = config
            .replace("{DIR}", &d)
            .replace("{PORT}", &port.to_string());
        let (file, args): (&str, Vec<String>) = match kind {
            Kind::Nginx => (
                "nginx.conf",
                vec![
                    "-p".into(),
                    d.clone(),
                    "-c".into(),
                    format!("{d}/nginx.conf"),
                    "-e".into(),
                    format!("{d}/error.log"),
                ],
            ),
            Kind::Haproxy => (
                "haproxy.cfg",
                vec!["-db".into(), "-f".into(), format!("{d}/haproxy.cfg")],
            ),
            Kind::Caddy => (
                "Caddyfile",
                vec![
                    "run".into(),
                    "--config".into(),
                    format!("{d}/Caddyfile"),
                    "--adapter".into(),
                    "caddyfile".into(),
                ],
            ),
        };
        std::fs::write(dir.path().join(file), &text).unwrap();
        let log = std::fs::File::create(dir.path().join("proxy.log")).unwrap();
        let child = Command::new(&bin)
            .args(&args)
            .env("HOME", &d)
            .env("XDG_DATA_HOME", &d)
            .env("XDG_CONFIG_HOME", &d)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let mut child = Guard(child);
        let t0 = Instant::now();
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            if let Ok(Some(st)) = child.0.try_wait() {
                let log = std::fs::read_to_string(dir.path().join("proxy.log")).unwrap_or_default();
                panic!("{kind:?} exited ({st}) before answering:\n{log}\nconfig:\n{text}");
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{kind:?} did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Proxy {
            port,
            dir,
            _child: child,
        }
    }

    pub fn url(&self, scheme: &str, path: &str) -> String {
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }
}

/// Run `rtcheck probe ARGS --format json`; the parsed report and the exit code.
pub fn probe_json(args: &[&str]) -> (serde_json::Value, i32, String) {
    let out: Output = Command::new(assert_cmd::cargo::cargo_bin("rtcheck"))
        .arg("probe")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let v = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("probe output is not JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
    (v, out.status.code().unwrap_or(-1), stderr)
}

/// Status of check `id` on the URL whose title contains `url_part`.
pub fn status(report: &serde_json::Value, id: &str, url_part: &str) -> String {
    let f = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id && f["title"].as_str().unwrap().contains(url_part))
        .unwrap_or_else(|| panic!("no finding {id} for {url_part} in {report:#}"));
    f["status"].as_str().unwrap().to_string()
}

/// Every finding's (id, status, observed) for failure messages.
pub fn summary(report: &serde_json::Value) -> String {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {} {}: {}",
                f["status"], f["id"], f["title"], f["observed"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
