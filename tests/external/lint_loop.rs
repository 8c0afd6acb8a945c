//! The loop closed for the main nginx rules: nginx with the mistaken WebSocket location in
//! front of `rtcheck serve` makes `rtcheck probe` fail; lint names the location's line and
//! the lines to add; with exactly those lines added, nginx starts, lint is clean for the
//! rules and probe passes.
use crate::common;
use crate::probe_common;
use probe_common::*;
use serde_json::Value;

const HEAD: &str = "daemon off;
master_process off;
worker_processes 1;
pid {DIR}/nginx.pid;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path {DIR}/body; proxy_temp_path {DIR}/proxy;
  fastcgi_temp_path {DIR}/fcgi; uwsgi_temp_path {DIR}/uwsgi; scgi_temp_path {DIR}/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
  server {
    listen 127.0.0.1:{PORT};
    location /live/ {
      proxy_pass http://{BUSY}/;
    }
  }
}
";

const RULES: &[&str] = &["nginx-ws-http-version", "nginx-ws-upgrade"];

fn lint(cfg: &std::path::Path) -> Value {
    let out = common::rtcheck()
        .arg("lint")
        .arg(cfg)
        .args([
            "--ws-location",
            "/live/",
            "--ping",
            "2s",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

fn probe(p: &Proxy) -> Value {
    let (v, _, err) = probe_json(&["--quick", "--public", &p.url("ws", "/live/ws")]);
    assert!(!err.contains("error"), "{err}");
    v
}

#[test]
fn lints_fix_applied_turns_a_failing_probe_into_a_passing_one() {
    let serve = Serve::start(&["--rate", "5", "--size", "256", "--ping", "2s"]);
    let cfg = HEAD.replace("{BUSY}", &serve.addr.to_string());
    let bad = Proxy::start(Kind::Nginx, &cfg);
    let before = probe(&bad);
    assert!(
        before["summary"]["fail"].as_u64().unwrap() > 0,
        "mistaken nginx: probe should fail\n{}",
        summary(&before)
    );

    let file = bad.dir().join("nginx.conf");
    let v = lint(&file);
    let mut add: Vec<String> = vec![];
    let mut at = 0;
    for id in RULES {
        let f = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == *id && f["status"] == "fail");
        let f = f.unwrap_or_else(|| panic!("{id} not reported: {v:#}"));
        assert_eq!(
            f["location"]["block"],
            "location /live/ (WebSocket: --ws-location /live/)"
        );
        at = f["location"]["line"].as_u64().unwrap() as usize;
        for l in f["fix"]["persistent"].as_array().unwrap() {
            let l = l.as_str().unwrap().to_string();
            if !add.contains(&l) {
                add.push(l);
            }
        }
    }
    assert_eq!(at, 13, "the location's line");
    // Apply the fix: lint's lines inside the location it names, nothing else.
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for (i, l) in add.iter().enumerate() {
        lines.insert(at + i, format!("      {l}"));
    }
    let fixed_text = lines.join("\n") + "\n";
    let port = bad.port;
    drop(bad);
    // The same config, on a fresh port (the fixed text has the old one written in).
    let fixed_cfg = fixed_text
        .replace(&format!("127.0.0.1:{port};"), "127.0.0.1:{PORT};")
        .replace(file.parent().unwrap().to_str().unwrap(), "{DIR}");
    let good = Proxy::start(Kind::Nginx, &fixed_cfg);
    let v = lint(&good.dir().join("nginx.conf"));
    for id in RULES {
        let f = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == *id)
            .unwrap();
        assert_eq!(f["status"], "pass", "{id} after the fix: {f:#}");
    }
    let after = probe(&good);
    assert_eq!(
        after["summary"]["fail"],
        0,
        "fixed nginx: probe should pass\n{}",
        summary(&after)
    );
    assert!(after["summary"]["pass"].as_u64().unwrap() > 0);
}
