//! Real proxies in front of `rtcheck serve` for the probe tests: each started in the
//! foreground on 127.0.0.1 with a config generated in a temp dir (nginx with
//! `master_process off`, HAProxy with `-db`, Caddy with `run`), awaited until it answers,
//! and killed on drop (`common::Service`). A missing binary fails the test naming its
//! Debian package (`common::require_binary`). Test files declare `mod common;` too.
#![allow(dead_code)]
pub mod stub;
pub use crate::common::{free_port, Server as Serve};
use crate::common::{require_binary, Service};
use std::net::SocketAddr;
use std::process::{Command, Output};
use std::time::Duration;

/// Which proxy binary, and the Debian package that provides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Nginx,
    Haproxy,
    Caddy,
}

impl Kind {
    /// (binary, Debian package)
    fn binary(self) -> (&'static str, &'static str) {
        match self {
            Kind::Nginx => ("nginx", "nginx-light"),
            Kind::Haproxy => ("haproxy", "haproxy"),
            Kind::Caddy => ("caddy", "caddy"),
        }
    }
}

pub struct Proxy {
    pub port: u16,
    service: Service,
}

impl Proxy {
    /// Start `kind` with `config` (where `{DIR}` and `{PORT}` are replaced); wait until
    /// the port accepts.
    pub fn start(kind: Kind, config: &str) -> Proxy {
        let (name, package) = kind.binary();
        let bin = require_binary(name, package);
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
        let mut cmd = Command::new(&bin);
        cmd.args(&args)
            .env("HOME", &d)
            .env("XDG_DATA_HOME", &d)
            .env("XDG_CONFIG_HOME", &d);
        let mut service = Service::start(cmd, name, dir);
        service.wait_listening(
            SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_secs(30),
        );
        Proxy { port, service }
    }

    /// The proxy's config dir (its config file, logs).
    pub fn dir(&self) -> &std::path::Path {
        self.service.dir.path()
    }

    pub fn url(&self, scheme: &str, path: &str) -> String {
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }
}

/// Run `rtcheck probe ARGS --format json`; the parsed report and the exit code.
pub fn probe_json(args: &[&str]) -> (serde_json::Value, i32, String) {
    // Bounded: a probe that hangs fails the test after common::RUN_LIMIT.
    let out: Output = crate::common::rtcheck()
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

/// A CA and a leaf for 127.0.0.1 made with the openssl CLI (rustls refuses a CA
/// certificate used as the server's own).
pub fn make_certs(dir: &std::path::Path) {
    make_certs_for(dir, "127.0.0.1", "IP:127.0.0.1,DNS:localhost");
}

/// A CA (ca.pem) and a leaf (leaf.pem, leaf.key) for `cn` with these subjectAltNames.
pub fn make_certs_for(dir: &std::path::Path, cn: &str, san: &str) {
    let run = |args: &[&str]| {
        let out = Command::new(crate::common::require_binary("openssl", "openssl"))
            .args(args)
            .current_dir(dir)
            .output()
            .expect("running openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=rtcheck test CA",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "leaf.key",
        "-out",
        "leaf.csr",
        "-subj",
        &format!("/CN={cn}"),
    ]);
    std::fs::write(
        dir.join("leaf.ext"),
        format!("subjectAltName={san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"),
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]);
}

/// nginx with TLS (the leaf of [`make_certs`] in `certs`) and http2 in front of `backend`:
/// Upgrade headers forwarded, buffering off.
pub fn nginx_tls_h2(certs: &std::path::Path, backend: SocketAddr) -> String {
    let c = certs.display();
    format!(
"daemon off;\nmaster_process off;\nworker_processes 1;\npid {{DIR}}/nginx.pid;\nevents {{ worker_connections 64; }}\n\
http {{\n  access_log off;\n  client_body_temp_path {{DIR}}/body; proxy_temp_path {{DIR}}/proxy;\n\
  fastcgi_temp_path {{DIR}}/fcgi; uwsgi_temp_path {{DIR}}/uwsgi; scgi_temp_path {{DIR}}/scgi;\n\
  server {{\n    listen 127.0.0.1:{{PORT}} ssl http2;\n    ssl_certificate {c}/leaf.pem;\n    ssl_certificate_key {c}/leaf.key;\n\
    location / {{\n      proxy_pass http://{addr};\n      proxy_http_version 1.1;\n      proxy_set_header Upgrade $http_upgrade;\n\
      proxy_set_header Connection \"upgrade\";\n      proxy_buffering off;\n    }}\n  }}\n}}\n",
        addr = backend
    )
}
