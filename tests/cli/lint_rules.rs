//! Every lint rule with a config that trips it and its fixed twin: lint (JSON read back)
//! reports the rule on the tripping one, at the expected line, and not on the twin; both are
//! loaded by the real binary (`nginx -t`, `haproxy -c`, `caddy adapt`), so no rule teaches
//! a config that does not load. Ingress YAML has no local validator (no kubectl/cluster),
//! nor Traefik's dynamic configuration (no traefik binary: Debian does not package it):
//! both are checked as YAML by lint's own parser only.
use crate::common;
use common::{require_binary, rtcheck};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

struct Case {
    id: &'static str,
    file: &'static str,
    trip: String,
    fixed: String,
    /// The line the finding must point at in `trip`.
    line: usize,
    args: &'static [&'static str],
    /// The installed binary loads both twins (false: Caddy 2.6 lacks a 2.7 directive
    /// one of them uses, stream_close_delay or stream_timeout).
    fixed_loads: bool,
}

fn ng(main: &str, events: &str, http: &str, loc: &str, body: &str) -> String {
    // Lines: 1 main, 2 pid, 3 error_log, 4 events, 5 http {, 6 access_log, 7 http, 8 server {,
    // 9 listen, 10 location, 11 proxy_pass, 12 body.
    format!(
        "{main}\npid @DIR@/nginx.pid;\nerror_log stderr;\nevents {{ {events} }}\nhttp {{\n  access_log off;\n  {http}\n  server {{\n    listen 127.0.0.1:18080;\n    location {loc} {{\n      proxy_pass http://127.0.0.1:19000;\n      {body}\n    }}\n  }}\n}}\n"
    )
}

const WS_OK: &str = "proxy_http_version 1.1; proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection \"upgrade\";";

fn ha(global: &str, defaults: &str, ws: &str, events: &str) -> String {
    // Lines: 1 global, 2 global line, 3 defaults, 4-7 defaults, 8 defaults line, 9 frontend,
    // 10 bind, 11 acl, 12 use_backend, 13 default_backend, 14 backend be_ws, 15 ws line.
    format!(
        "global\n  {global}\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n  {defaults}\nfrontend fe\n  bind 127.0.0.1:18081\n  acl is_ws hdr(Upgrade) -i websocket\n  use_backend be_ws if is_ws\n  default_backend be_app\nbackend be_ws\n  {ws}\n  server s1 127.0.0.1:19000\nbackend be_app\n  server s1 127.0.0.1:19001\nbackend be_events\n  {events}\n  server s1 127.0.0.1:19002\n"
    )
}

fn cy(site: &str) -> String {
    // Lines: 1-4 global options, 5 site, 6 first site line.
    format!("{{\n  admin off\n  auto_https off\n}}\nhttp://127.0.0.1:18082 {{\n{site}\n}}\n")
}

fn ing(ann: &str, path: &str) -> String {
    // Lines: 1 apiVersion, 2 kind, 3 metadata, 4 name, 5 annotations, 6 first annotation.
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: app\n  annotations:\n    {ann}\nspec:\n  rules:\n  - http:\n      paths:\n      - path: {path}\n        pathType: Prefix\n        backend:\n          service: {{name: app, port: {{number: 80}}}}\n"
    )
}

fn cm(data: &str) -> String {
    // Lines: 1 apiVersion, 2 kind, 3 metadata, 4 name, 5 namespace, 6 data, 7 first key.
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ingress-nginx-controller\n  namespace: ingress-nginx\ndata:\n  {data}\n"
    )
}

/// Traefik dynamic configuration: a router on `path` with `middlewares`, the middleware
/// definitions `mws` (indented under `middlewares:`), and the service's extra lines.
fn helm(read: &str) -> String {
    // Lines: 1-7 the tcp map, 9-15 the udp map, 17-23 the controller's, 23 its timeout.
    let map = |name: &str, data: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: ingress-nginx\ndata:\n  {data}\n")
    };
    [
        map("rel-ingress-nginx-tcp", "\"9000\": \"default/app:9000\""),
        map("rel-ingress-nginx-udp", "\"5353\": \"default/dns:5353\""),
        map(
            "rel-ingress-nginx-controller",
            &format!("proxy-read-timeout: \"{read}\""),
        ),
    ]
    .join("---\n")
}

fn tf(path: &str, middlewares: &str, mws: &str, servers: &str, lb: &str) -> String {
    // Lines: 1 http, 2 routers, 3 app, 4 rule, 5 service, 6 middlewares (+ items), then
    // the middlewares section and the services.
    format!(
        "http:\n  routers:\n    app:\n      rule: PathPrefix(`{path}`)\n      service: app\n      middlewares:\n{middlewares}  middlewares:\n    noop:\n      headers: {{}}\n{mws}  services:\n    app:\n      loadBalancer:\n        servers:\n{servers}{lb}"
    )
}

const TF_ONE: &str = "          - url: http://127.0.0.1:19000\n";
const TF_TWO: &str =
    "          - url: http://127.0.0.1:19000\n          - url: http://127.0.0.1:19001\n";

const HA_TUNNEL: &str = "timeout tunnel 1h";

/// HAProxy with no timeouts but connect (`@T@`: the defaults' timeout lines). Lines: 1
/// global, 3 defaults, 5 frontend (with `@T@` empty).
const HA_BARE: &str = "global\n  maxconn 20000\ndefaults\n  mode http\n@T@frontend fe\n  bind 127.0.0.1:18081\n  default_backend be_ws\nbackend be_ws\n  server s1 127.0.0.1:19000\n";

fn cases() -> Vec<Case> {
    let tunnel_fin = |d: &str| ha("maxconn 20000", d, HA_TUNNEL, "");
    vec![
        Case { id: "nginx-ws-http-version", file: "nginx.conf", line: 10, args: &["--ping", "30s"], fixed_loads: true,
            trip: ng("", "", "", "/ws", "proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection \"upgrade\";"),
            fixed: ng("", "", "", "/ws", WS_OK) },
        Case { id: "nginx-ws-upgrade", file: "nginx.conf", line: 10, args: &["--ping", "30s"], fixed_loads: true,
            trip: ng("", "", "proxy_set_header Upgrade $http_upgrade;", "/ws", "proxy_http_version 1.1; proxy_set_header Host $host;"),
            fixed: ng("", "", "map $http_upgrade $connection_upgrade { default upgrade; '' close; }", "/ws",
                "proxy_http_version 1.1; proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection $connection_upgrade;") },
        Case { id: "nginx-read-timeout", file: "nginx.conf", line: 12, args: &["--ping", "30s"], fixed_loads: true,
            trip: ng("", "", "", "/ws", &format!("{WS_OK} proxy_read_timeout 30s;")),
            fixed: ng("", "", "", "/ws", &format!("{WS_OK} proxy_read_timeout 75s;")) },
        Case { id: "nginx-sse-buffering", file: "nginx.conf", line: 10, args: &["--ping", "15s"], fixed_loads: true,
            trip: ng("", "", "", "/events", ""),
            fixed: ng("", "", "", "/events", "proxy_buffering off;") },
        Case { id: "nginx-sse-buffering", file: "nginx.conf", line: 10, args: &["--ping", "15s", "--x-accel-buffering"], fixed_loads: true,
            trip: ng("", "", "proxy_ignore_headers X-Accel-Buffering;", "/events", ""),
            fixed: ng("", "", "", "/events", "") },
        Case { id: "nginx-worker-connections", file: "nginx.conf", line: 4, args: &["--connections", "10000"], fixed_loads: true,
            trip: ng("worker_processes 2; worker_rlimit_nofile 20000;", "worker_connections 1024;", "", "/ws", WS_OK),
            fixed: ng("worker_processes 2; worker_rlimit_nofile 20000;", "worker_connections 10240;", "", "/ws", WS_OK) },
        Case { id: "nginx-rlimit-nofile", file: "nginx.conf", line: 1, args: &["--connections", "10000"], fixed_loads: true,
            trip: ng("worker_processes 2; worker_rlimit_nofile 4096;", "worker_connections 10240;", "", "/ws", WS_OK),
            fixed: ng("worker_processes 2; worker_rlimit_nofile 12000;", "worker_connections 10240;", "", "/ws", WS_OK) },
        Case { id: "nginx-next-upstream", file: "nginx.conf", line: 12, args: &[], fixed_loads: true,
            trip: ng("", "", "", "/events", "proxy_buffering off; proxy_next_upstream error timeout non_idempotent;"),
            fixed: ng("", "", "", "/events", "proxy_buffering off; proxy_next_upstream off;") },
        Case { id: "nginx-upstream-keepalive", file: "nginx.conf", line: 11, args: &[], fixed_loads: true,
            trip: ng("", "", "", "/poll", ""),
            fixed: ng("", "", "upstream app { server 127.0.0.1:19000; keepalive 32; }", "/poll",
                "proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection \"\";").replacen("      proxy_pass http://127.0.0.1:19000;\n", "", 1) },
        Case { id: "haproxy-timeout-tunnel", file: "haproxy.cfg", line: 14, args: &["--connections", "10000", "--ping", "30s"], fixed_loads: true,
            trip: ha("maxconn 20000", "timeout client-fin 30s", "", ""),
            fixed: ha("maxconn 20000", "timeout client-fin 30s", HA_TUNNEL, "") },
        Case { id: "haproxy-timeout-server", file: "haproxy.cfg", line: 20, args: &["--ping", "15s"], fixed_loads: true,
            trip: ha("maxconn 20000", "", HA_TUNNEL, "timeout server 10s"),
            fixed: ha("maxconn 20000", "", HA_TUNNEL, "timeout server 60s") },
        Case { id: "haproxy-timeouts-unset", file: "haproxy.cfg", line: 5, args: &["--transport", "websocket"], fixed_loads: true,
            trip: HA_BARE.replace("@T@", ""),
            fixed: HA_BARE.replace("@T@", "  timeout client 60s\n  timeout server 60s\n  timeout tunnel 1h\n  timeout client-fin 30s\n") },
        Case { id: "haproxy-tcp-mode-http", file: "haproxy.cfg", line: 11, args: &["--connections", "10000", "--ping", "30s"], fixed_loads: true,
            trip: tunnel_fin("timeout client-fin 30s").replace("  mode http\n", "  mode tcp\n"),
            fixed: tunnel_fin("timeout client-fin 30s") },
        Case { id: "haproxy-http-close", file: "haproxy.cfg", line: 8, args: &["--connections", "10000"], fixed_loads: true,
            trip: tunnel_fin("option httpclose"), fixed: tunnel_fin("option http-keep-alive") },
        Case { id: "haproxy-maxconn", file: "haproxy.cfg", line: 2, args: &["--connections", "10000"], fixed_loads: true,
            trip: ha("maxconn 1000", "", HA_TUNNEL, ""), fixed: ha("maxconn 12000", "", HA_TUNNEL, "") },
        Case { id: "caddy-encode-stream", file: "Caddyfile", line: 6, args: &["--proxy-version", "caddy=2.7.6"], fixed_loads: true,
            trip: cy("  encode gzip\n  reverse_proxy /events* 127.0.0.1:19000"),
            fixed: cy("  @compressible not path /events*\n  encode @compressible gzip\n  reverse_proxy /events* 127.0.0.1:19000") },
        Case { id: "caddy-stream-close-delay", file: "Caddyfile", line: 6, args: &[], fixed_loads: false,
            trip: cy("  reverse_proxy /ws* 127.0.0.1:19000"),
            fixed: cy("  reverse_proxy /ws* 127.0.0.1:19000 {\n    stream_close_delay 5m\n  }") },
        // Socket.IO's route (its 25 s ping) closed at 20 s whatever its traffic.
        Case { id: "caddy-stream-timeout", file: "Caddyfile", line: 7, args: &["--proxy-version", "caddy=2.7.6"], fixed_loads: false,
            trip: cy("  reverse_proxy /socket.io* 127.0.0.1:19000 {\n    stream_timeout 20s\n  }"),
            fixed: cy("  reverse_proxy /socket.io* 127.0.0.1:19000 {\n    stream_timeout 24h\n    stream_close_delay 5m\n  }") },
        Case { id: "ingress-read-timeout", file: "ingress.yaml", line: 6, args: &["--ping", "30s"], fixed_loads: true,
            trip: ing("nginx.ingress.kubernetes.io/proxy-read-timeout: \"30\"", "/ws"),
            fixed: ing("nginx.ingress.kubernetes.io/proxy-read-timeout: \"75\"", "/ws") },
        Case { id: "ingress-send-timeout", file: "ingress.yaml", line: 6, args: &["--ping", "30s"], fixed_loads: true,
            trip: ing("nginx.ingress.kubernetes.io/proxy-send-timeout: \"30s\"", "/ws"),
            fixed: ing("nginx.ingress.kubernetes.io/proxy-send-timeout: \"3600\"", "/ws") },
        Case { id: "ingress-proxy-buffering", file: "ingress.yaml", line: 6, args: &["--ping", "15s"], fixed_loads: true,
            trip: ing("nginx.ingress.kubernetes.io/proxy-buffering: \"on\"", "/events"),
            fixed: ing("nginx.ingress.kubernetes.io/proxy-buffering: \"off\"", "/events") },
        Case { id: "traefik-compress-stream", file: "dynamic.yaml", line: 7, args: &[], fixed_loads: true,
            trip: tf("/events", "        - gz\n", "    gz:\n      compress: {}\n", TF_ONE, ""),
            fixed: tf("/events", "        - gz\n", "    gz:\n      compress:\n        excludedContentTypes:\n          - text/event-stream\n", TF_ONE, "") },
        Case { id: "traefik-buffering-stream", file: "dynamic.yaml", line: 8, args: &[], fixed_loads: true,
            trip: tf("/events", "        - noop\n        - limit\n", "    limit:\n      buffering:\n        maxRequestBodyBytes: 2000000\n        maxResponseBodyBytes: 10000000\n", TF_ONE, ""),
            fixed: tf("/events", "        - noop\n        - limit\n", "    limit:\n      buffering:\n        maxRequestBodyBytes: 2000000\n", TF_ONE, "") },
        Case { id: "traefik-sticky-polling", file: "dynamic.yaml", line: 12, args: &[], fixed_loads: true,
            trip: tf("/poll", "        - noop\n", "", TF_TWO, ""),
            fixed: tf("/poll", "        - noop\n", "", TF_TWO, "        sticky:\n          cookie:\n            name: route\n") },
        Case { id: "traefik-unrouted-service", file: "dynamic.yaml", line: 4, args: &[], fixed_loads: true,
            trip: "http:\n  services:\n    app:\n      rule: PathPrefix(`/events`)\n      loadBalancer:\n        servers:\n          - url: http://127.0.0.1:19000\n".into(),
            fixed: "http:\n  routers:\n    app:\n      rule: PathPrefix(`/events`)\n      service: app\n  services:\n    app:\n      loadBalancer:\n        servers:\n          - url: http://127.0.0.1:19000\n".into() },
        Case { id: "ingress-snippet", file: "ingress.yaml", line: 6, args: &["--ping", "30s"], fixed_loads: true,
            trip: ing("nginx.ingress.kubernetes.io/configuration-snippet: \"proxy_read_timeout 3600s;\"", "/ws"),
            fixed: ing("nginx.ingress.kubernetes.io/proxy-read-timeout: \"3600\"", "/ws") },
        Case { id: "ingress-configmap-seconds", file: "ingress.yaml", line: 7, args: &["--ping", "30s"], fixed_loads: true,
            trip: cm("proxy-read-timeout: \"3600s\""),
            fixed: cm("proxy-read-timeout: \"3600\"") },
        Case { id: "ingress-configmap-read-timeout", file: "ingress.yaml", line: 7, args: &["--ping", "30s"], fixed_loads: true,
            trip: cm("proxy-read-timeout: \"30\""),
            fixed: cm("proxy-read-timeout: \"75\"") },
        // Helm's shape: the chart's TCP and UDP service maps (ports, not settings) before the
        // controller's map; the timeout is the controller map's, judged on it alone.
        Case { id: "ingress-configmap-read-timeout", file: "ingress.yaml", line: 23, args: &["--ping", "30s"], fixed_loads: true,
            trip: helm("30"),
            fixed: helm("75") },
        Case { id: "ingress-affinity", file: "ingress.yaml", line: 2, args: &[], fixed_loads: true,
            trip: ing("nginx.ingress.kubernetes.io/ssl-redirect: \"false\"", "/poll"),
            fixed: ing("nginx.ingress.kubernetes.io/affinity: \"cookie\"", "/poll") },
    ]
}

/// The real binary loads the config (its stderr on failure).
fn loads(file: &Path) -> Result<(), String> {
    let dir = file.parent().unwrap();
    let name = file.file_name().unwrap().to_str().unwrap();
    let mut cmd = match name {
        "nginx.conf" => {
            let mut c = Command::new(require_binary("nginx", "nginx-light"));
            c.arg("-t")
                .arg("-p")
                .arg(dir)
                .arg("-e")
                .arg("stderr")
                .arg("-c")
                .arg(file);
            c
        }
        "haproxy.cfg" => {
            let mut c = Command::new(require_binary("haproxy", "haproxy"));
            c.arg("-c").arg("-f").arg(file);
            c
        }
        "Caddyfile" => {
            let mut c = Command::new(require_binary("caddy", "caddy"));
            c.args(["adapt", "--adapter", "caddyfile", "--config"])
                .arg(file);
            c
        }
        _ => return Ok(()),
    };
    let out = cmd.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn lint_json(file: &Path, args: &[&str]) -> (Value, i32) {
    let out = rtcheck()
        .arg("lint")
        .arg(file)
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text} {}", String::from_utf8_lossy(&out.stderr)));
    (v, out.status.code().unwrap_or(-1))
}

fn actionable<'a>(v: &'a Value, id: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == id && (f["status"] == "fail" || f["status"] == "warn"))
        .collect()
}

#[test]
fn every_rule_trips_on_its_config_and_not_on_the_fixed_twin() {
    let mut covered = std::collections::BTreeSet::new();
    for c in cases() {
        let tmp = tempfile::tempdir().unwrap();
        for (which, text) in [("trip", &c.trip), ("fixed", &c.fixed)] {
            let dir = tmp.path().join(which);
            std::fs::create_dir_all(dir.join("logs")).unwrap();
            let file = dir.join(c.file);
            std::fs::write(&file, text.replace("@DIR@", dir.to_str().unwrap())).unwrap();
            match loads(&file) {
                Ok(()) => {}
                Err(e) if !c.fixed_loads => assert!(
                    e.contains("stream_close_delay") || e.contains("stream_timeout"),
                    "{}: {e}",
                    c.id
                ),
                Err(e) => panic!("{} {which}: the real binary refuses it: {e}\n{text}", c.id),
            }
            let (v, code) = lint_json(&file, c.args);
            let hits = actionable(&v, c.id);
            if which == "trip" {
                assert!(!hits.is_empty(), "{} not reported on:\n{text}\n{v:#}", c.id);
                let loc = &hits[0]["location"];
                assert_eq!(loc["line"], c.line, "{}: {loc}", c.id);
                assert!(loc["file"].as_str().unwrap().ends_with(c.file));
                assert!(!hits[0]["fix"]["persistent"].as_array().unwrap().is_empty());
                if hits.iter().any(|h| h["status"] == "fail") {
                    assert_eq!(code, 1, "{}", c.id);
                }
            } else {
                assert!(
                    hits.is_empty(),
                    "{} still reported on the fixed twin:\n{text}\n{hits:#?}",
                    c.id
                );
            }
        }
        covered.insert(c.id);
    }
    // Every rule of the table has its twins here.
    let out = rtcheck().args(["lint", "--help"]).output().unwrap();
    assert!(out.status.success());
    for r in ["nginx-", "haproxy-", "caddy-", "ingress-", "traefik-"] {
        assert!(covered.iter().any(|c| c.starts_with(r)));
    }
    // nginx-send-timeout has no trip a real nginx loads (only an unreadable value trips
    // it): its claim, that a quiet stream is not cut, is shown live in lint_live.rs.
    assert_eq!(covered.len(), 28, "{covered:?}");
}

#[test]
fn caddy_json_from_caddy_adapt_trips_the_same_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let cf = tmp.path().join("Caddyfile");
    std::fs::write(
        &cf,
        cy("  encode gzip\n  reverse_proxy /events* 127.0.0.1:19000 {\n    flush_interval 1s\n  }"),
    )
    .unwrap();
    let out = Command::new(require_binary("caddy", "caddy"))
        .args(["adapt", "--adapter", "caddyfile", "--pretty", "--config"])
        .arg(&cf)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = tmp.path().join("caddy.json");
    std::fs::write(&json, &out.stdout).unwrap();
    let (v, code) = lint_json(&json, &["--proxy-version", "caddy=2.7.6"]);
    assert_eq!(code, 0, "warnings only: {v:#}");
    let id = "caddy-encode-stream";
    let h = actionable(&v, id);
    assert_eq!(h.len(), 1, "{id}: {v:#}");
    let line = h[0]["location"]["line"].as_u64().unwrap() as usize;
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text.lines().nth(line - 1).unwrap();
    assert!(at.contains("\"encode\""), "{id}: line {line} is `{at}`");
}

/// A timeout rule under a declared path (issue 24): the trip config, the severity, the line;
/// `set` is the directive the fix line replaces to make the fixed twin.
struct PathCase {
    id: &'static str,
    file: &'static str,
    trip: String,
    line: usize,
    args: Vec<String>,
    status: &'static str,
    set: &'static str,
    /// The heartbeat the path needs, declared for the fixed twin: without a declared
    /// heartbeat no timeout passes (it warns with the heartbeat it needs).
    ping: &'static str,
}

fn path_cases(profile: &str) -> Vec<PathCase> {
    let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let ws_events =
        |tunnel: &str, server: &str| ha("maxconn 20000", "timeout client-fin 30s", tunnel, server);
    vec![
        // Behind an ALB (60 s idle) nginx must carry its 30 s heartbeat: 45 s has no margin.
        PathCase {
            id: "nginx-read-timeout",
            file: "nginx.conf",
            line: 12,
            status: "warn",
            args: a(&["--path", "cloudflare,aws-alb,nginx"]),
            set: "proxy_read_timeout 45s;",
            ping: "30s",
            trip: ng(
                "",
                "",
                "",
                "/ws",
                &format!("{WS_OK} proxy_read_timeout 45s;"),
            ),
        },
        // Heroku's router (55 s) wants a 27 s heartbeat: the default 60 s would do, 25 s cuts it.
        PathCase {
            id: "nginx-read-timeout",
            file: "nginx.conf",
            line: 12,
            status: "fail",
            args: a(&["--profile", profile]),
            set: "proxy_read_timeout 25s;",
            ping: "27s",
            trip: ng(
                "",
                "",
                "",
                "/ws",
                &format!("{WS_OK} proxy_read_timeout 25s;"),
            ),
        },
        PathCase {
            id: "haproxy-timeout-tunnel",
            file: "haproxy.cfg",
            line: 15,
            status: "warn",
            args: a(&["--path", "aws-alb,haproxy"]),
            set: "timeout tunnel 45s",
            ping: "30s",
            trip: ws_events("timeout tunnel 45s", "timeout server 1h"),
        },
        // No ping declared: only the path (Cloudflare, 30 s heartbeat) makes the rule apply.
        PathCase {
            id: "haproxy-timeout-server",
            file: "haproxy.cfg",
            line: 20,
            status: "warn",
            args: a(&["--path", "cloudflare,haproxy"]),
            set: "timeout server 40s",
            ping: "30s",
            trip: ws_events(HA_TUNNEL, "timeout server 40s"),
        },
        PathCase {
            id: "ingress-read-timeout",
            file: "ingress.yaml",
            line: 6,
            status: "warn",
            args: a(&["--path", "aws-alb,ingress-nginx"]),
            set: "nginx.ingress.kubernetes.io/proxy-read-timeout: \"45\"",
            ping: "30s",
            trip: ing(
                "nginx.ingress.kubernetes.io/proxy-read-timeout: \"45\"",
                "/ws",
            ),
        },
    ]
}

/// With a declared path, the timeout rules ask for the heartbeat the chain needs: the trip
/// config (loaded by the real binary) is reported only with the path, at its line; lint's
/// own fix line, put in place of the directive, gives a twin the binary loads and lint
/// passes.
#[test]
fn timeouts_carry_the_heartbeat_the_declared_path_needs() {
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("profile.yaml");
    std::fs::write(&profile, "transport: websocket\npath: [heroku, nginx]\n").unwrap();
    for c in path_cases(profile.to_str().unwrap()) {
        let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
        let dir = tmp.path().join(c.id);
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        let file = dir.join(c.file);
        let write = |text: &str| {
            std::fs::write(&file, text.replace("@DIR@", dir.to_str().unwrap())).unwrap();
            if let Err(e) = loads(&file) {
                panic!("{}: the real binary refuses it: {e}\n{text}", c.id);
            }
        };
        write(&c.trip);
        // Without the path (and no ping) the value only warns with the heartbeat it
        // needs: the path is what makes it fall short.
        let (v, _) = lint_json(&file, &["--transport", "websocket"]);
        for h in actionable(&v, c.id) {
            let e = h["expected"].as_str().unwrap();
            assert_eq!(h["status"], "warn", "{}: {h:#}", c.id);
            assert!(
                e.starts_with("holds only with a heartbeat under"),
                "{}: {e}",
                c.id
            );
            assert!(!e.contains("the path"), "{}: {e}", c.id);
        }
        let (v, code) = lint_json(&file, &args);
        let hits = actionable(&v, c.id);
        assert_eq!(hits.len(), 1, "{} with {args:?}:\n{v:#}", c.id);
        let h = hits[0];
        assert_eq!(h["status"], c.status, "{}: {h:#}", c.id);
        assert_eq!(h["location"]["line"], c.line, "{}: {h:#}", c.id);
        let expected = h["expected"].as_str().unwrap();
        assert!(expected.contains("the path"), "{}: {expected}", c.id);
        if c.status == "fail" {
            assert_eq!(code, 1, "{}", c.id);
        }
        let fix = h["fix"]["persistent"][0].as_str().unwrap();
        let fixed = c.trip.replace(c.set, fix.trim_end());
        assert_ne!(
            fixed, c.trip,
            "{}: `{}` not in the trip config",
            c.id, c.set
        );
        write(&fixed);
        let with_ping = [&args[..], &["--ping", c.ping]].concat();
        let (v, _) = lint_json(&file, &with_ping);
        assert!(
            actionable(&v, c.id).is_empty(),
            "{}: lint's own fix `{fix}` still trips it:\n{fixed}\n{v:#}",
            c.id
        );
    }
}
