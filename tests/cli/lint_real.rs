//! lint on the shapes real projects and vendors publish for their realtime routes
//! (issue 34). Each fixture in tests/fixtures/lint/real/ is our own text in one of those
//! shapes, with the verdict a careful SRE gives it in its comment and the expectation in
//! `# args:`, `# route: LABEL = transports`, `# fail:`, `# warn:` (or `# exit: 2`) lines
//! (a JSON config keeps them in `FILE.expect`). The test runs the binary on every
//! fixture and checks, from its JSON, what each route carries (and that each says why),
//! the exact sets of failing and warning rules, and the exit code.
//!
//! Shapes studied (their projects' docs and repositories, public gists and pastes):
//! Socket.IO docs "behind a reverse proxy" (v3, v4: catch-all, /socket.io/, custom
//! path); Socket.IO gists (/socket.io/ plus socket.io.js); Mastodon dist/nginx.conf;
//! Mastodon 1.4-era site (@proxy, /api/v1/streaming) and a server-level Upgrade variant;
//! Grafana "behind proxy" docs (v4.3) and the run-behind-a-proxy tutorial shape
//! (/api/live/); a Grafana Live gateway (/dashboard/api/live/ws); Loki tail through
//! Grafana (regex location); Home Assistant: NixOS wiki, the community guide (server
//! proxy_buffering off), /api/websocket pastes, linuxserver reverse-proxy-confs;
//! Jupyter: /api/kernels/ + /terminals/ with a literal Upgrade, the
//! channels|iopub|shell|stdin regex, JupyterLab with buffering off; Centrifugo's
//! load-balancing docs and /connection gists; Jitsi Meet (BOSH /http-bind,
//! /xmpp-websocket, /colibri-ws/); Discourse nginx.sample.conf (/message-bus/); Rails
//! Action Cable with Passenger, GoRails' deploy guide (/cable), GitLab's /-/cable;
//! Mattermost: the regex websocket location, a paste without proxy_http_version, the
//! omnibus issue (map in `/`); HAProxy gists: node-websocket-server (hdr(Upgrade),
//! http-server-close), Host ACLs with nbproc, a Chef template with timeout tunnel,
//! mode tcp with inspect-delay, socket.io path_beg with 50 s timeouts; ingress-nginx:
//! the / + /ws/ answer with 3600 s timeouts, Alibaba ACK's WebSocket Ingress docs, a
//! server-snippets Ingress; Caddy: a path_regexp SSE route with flush_interval -1 and
//! encode, issues 4247 and 6293 (SSE behind reverse_proxy and encode), the Mercure
//! hub Caddyfile; Traefik: file provider docs, the WebSocket user guide, a gist with
//! PathPrefix routers (websockify, websocket); Nextcloud notify_push and NextPush
//! (long timeouts, buffering off); an exact SSE location (buffering, cache and gzip
//! off); an SSE gist with chunked_transfer_encoding off.
use crate::common;
use common::rtcheck;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Debug, Default)]
struct Expect {
    args: Vec<String>,
    routes: BTreeMap<String, BTreeSet<String>>,
    fail: BTreeSet<String>,
    warn: BTreeSet<String>,
    exit: Option<i32>,
    verdict: bool,
}

fn ids(s: &str) -> BTreeSet<String> {
    s.split_whitespace()
        .filter(|w| *w != "-")
        .map(String::from)
        .collect()
}

fn expectation(text: &str) -> Expect {
    let mut e = Expect::default();
    for l in text.lines() {
        let Some(l) = l.strip_prefix("# ") else {
            continue;
        };
        let (key, rest) = l.split_once(':').unwrap_or((l, ""));
        let rest = rest.trim();
        match key {
            "args" => e.args = rest.split_whitespace().map(String::from).collect(),
            "route" => {
                let (label, kinds) = rest.rsplit_once(" = ").expect("route: LABEL = kinds");
                let kinds = kinds.split(',').filter(|k| *k != "none").map(String::from);
                e.routes.insert(label.trim().to_string(), kinds.collect());
            }
            "fail" => e.fail = ids(rest),
            "warn" => e.warn = ids(rest),
            "exit" => e.exit = rest.parse().ok(),
            "SRE verdict" => e.verdict = true,
            _ => {}
        }
    }
    e
}

fn fixtures() -> Vec<(PathBuf, Expect)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/real");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name.ends_with(".expect") {
            continue;
        }
        let side = dir.join(format!("{name}.expect"));
        let text = std::fs::read_to_string(if side.exists() { &side } else { &path }).unwrap();
        out.push((path, expectation(&text)));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn set(v: &Value, status: &str) -> BTreeSet<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == status)
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn real_shapes_get_the_classification_and_verdict_an_sre_gives_them() {
    let all = fixtures();
    assert!(all.len() >= 20, "{} fixtures", all.len());
    let mut kinds = BTreeSet::new();
    for (path, e) in &all {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(e.verdict, "{name}: no `SRE verdict:` comment");
        let out = rtcheck()
            .arg("lint")
            .arg(path)
            .args(&e.args)
            .args(["--format", "json"])
            .output()
            .unwrap();
        let code = out.status.code().unwrap_or(-1);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if let Some(want) = e.exit {
            assert_eq!(code, want, "{name}: {stderr}");
            assert_eq!(stderr.trim_end().lines().count(), 1, "{name}: {stderr}");
            assert!(stderr.contains("serves"), "{name}: {stderr}");
            assert!(out.stdout.is_empty(), "{name}: a report on exit 2");
            continue;
        }
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|err| panic!("{name}: {err}: {stderr}"));
        kinds.insert(
            v["target"]
                .as_str()
                .unwrap()
                .split(" (")
                .nth(1)
                .map(|k| k.split([',', ')']).next().unwrap().to_string()),
        );
        let routes: BTreeMap<String, BTreeSet<String>> = v["routes"]
            .as_array()
            .map(|a| a.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|r| {
                let carries = r["carries"].as_array().unwrap();
                for c in carries {
                    assert!(!c["why"].as_str().unwrap().is_empty(), "{name}: {r}");
                }
                let k = carries
                    .iter()
                    .map(|c| c["transport"].as_str().unwrap().to_string());
                (r["route"].as_str().unwrap().to_string(), k.collect())
            })
            .collect();
        if !e.routes.is_empty() {
            assert_eq!(routes, e.routes, "{name}: routes");
        }
        assert_eq!(set(&v, "fail"), e.fail, "{name}: fails\n{v:#}");
        assert_eq!(set(&v, "warn"), e.warn, "{name}: warns\n{v:#}");
        assert_eq!(code, i32::from(!e.fail.is_empty()), "{name}: exit code");
        // Every actionable finding names its file and line and says why its route was
        // classified (its block).
        for f in v["findings"].as_array().unwrap() {
            if f["status"] == "fail" || f["status"] == "warn" {
                assert!(f["location"]["line"].as_u64().unwrap() >= 1, "{name}: {f}");
                assert!(f["location"]["block"].as_str().is_some(), "{name}: {f}");
            }
        }
    }
    // Every config kind lint reads is among the shapes.
    for k in [
        "nginx",
        "haproxy",
        "caddy",
        "caddy-json",
        "ingress",
        "traefik",
    ] {
        assert!(
            kinds.contains(&Some(k.to_string())),
            "no {k} fixture: {kinds:?}"
        );
    }
}
