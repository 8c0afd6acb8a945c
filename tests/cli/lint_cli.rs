//! `rtcheck lint` as a command: a config that does not parse is exit 2 with file:line
//! (never a pass), stdin needs --kind, includes outside the paths are a skip, realistic
//! documented setups lint clean, SARIF (lint and audit) carries the 2.1.0 required fields,
//! and no parser panics or runs unbounded on random bytes.
use crate::common;
use common::rtcheck;
use proptest::prelude::*;
use serde_json::Value;

#[test]
fn a_config_that_does_not_parse_is_exit_2_with_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text, line) in [
        ("nginx.conf", "http {\n  server {\n    location /ws {\n", 3),
        ("haproxy.cfg", "global\n  maxconn \"50\n", 2),
        ("Caddyfile", ":80 {\n  reverse_proxy /ws* 127.0.0.1:9\n", 1),
        ("caddy.json", "{\"apps\": {\n  \"http\": [}\n", 2),
    ] {
        let f = tmp.path().join(name);
        std::fs::write(&f, text).unwrap();
        let out = rtcheck()
            .arg("lint")
            .arg(&f)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(
            out.stdout.is_empty(),
            "{name}: no report on a parse failure"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{}:{line}:", f.display())),
            "{name}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn stdin_needs_a_kind_and_reads_an_nginx_dump() {
    let out = rtcheck()
        .args(["lint", "-"])
        .write_stdin("http {}")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--kind"));
    let dump = "# configuration file /etc/nginx/nginx.conf:\nhttp {\n  include /etc/nginx/sites/*.conf;\n}\n\n# configuration file /etc/nginx/sites/app.conf:\nserver {\n  location /ws {\n    proxy_pass http://127.0.0.1:9;\n  }\n}\n";
    let out = rtcheck()
        .args(["lint", "--kind", "nginx", "-", "--format", "json"])
        .write_stdin(dump)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "nginx-ws-upgrade")
        .unwrap();
    assert_eq!(f["location"]["file"], "/etc/nginx/sites/app.conf");
    assert_eq!(f["location"]["line"], 2);
}

#[test]
fn an_include_outside_the_paths_is_a_skip_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("ws.conf"),
        "location /ws { proxy_pass http://x; }",
    )
    .unwrap();
    let main = tmp.path().join("nginx.conf");
    std::fs::write(
        &main,
        format!("http {{ server {{ include {}/ws.conf; location /events {{ proxy_pass http://x; proxy_buffering off; }} }} }}\n", outside.path().display()),
    )
    .unwrap();
    let out = rtcheck()
        .arg("lint")
        .arg(&main)
        .args(["--format", "json", "--ping", "10s"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fs = v["findings"].as_array().unwrap();
    let inc = fs
        .iter()
        .find(|f| f["id"] == "lint-include")
        .expect("the include is named");
    assert_eq!(inc["status"], "skip");
    assert!(inc["reason"]
        .as_str()
        .unwrap()
        .contains("--follow-includes"));
    assert!(
        !fs.iter().any(|f| f["id"] == "nginx-ws-upgrade"),
        "the outside file was not read"
    );
    let out = rtcheck()
        .arg("lint")
        .arg(&main)
        .args(["--format", "json", "--ping", "10s", "--follow-includes"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["id"] == "nginx-ws-upgrade" && f["status"] == "fail"));
}

/// nginx -t, haproxy -c, caddy adapt accept the file (a missing binary fails the test).
fn real_binary_loads(f: &std::path::Path) {
    use common::require_binary;
    let dir = f.parent().unwrap();
    let mut cmd = match f.file_name().unwrap().to_str().unwrap() {
        "nginx.conf" => {
            let mut c = std::process::Command::new(require_binary("nginx", "nginx-light"));
            c.arg("-t")
                .arg("-p")
                .arg(dir)
                .args(["-e", "stderr", "-c"])
                .arg(f);
            c
        }
        "haproxy.cfg" => {
            let mut c = std::process::Command::new(require_binary("haproxy", "haproxy"));
            c.arg("-c").arg("-f").arg(f);
            c
        }
        _ => {
            let mut c = std::process::Command::new(require_binary("caddy", "caddy"));
            c.args(["adapt", "--adapter", "caddyfile", "--config"])
                .arg(f);
            c
        }
    };
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        f.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The nginx documentation's WebSocket proxying example (nginx.org/en/docs/http/websocket.html)
/// and the usual SSE location, with a heartbeat under the timeouts: clean.
#[test]
fn realistic_documented_setups_lint_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let nginx = "pid @DIR@/nginx.pid;\nerror_log stderr;\nworker_processes 4;\nworker_rlimit_nofile 65536;\nevents { worker_connections 16384; }\nhttp {\n  map $http_upgrade $connection_upgrade {\n    default upgrade;\n    ''      close;\n  }\n  upstream app { server 127.0.0.1:9000; }\n  server {\n    listen 127.0.0.1:18090;\n    location /chat/ {\n      proxy_pass http://app;\n      proxy_http_version 1.1;\n      proxy_set_header Upgrade $http_upgrade;\n      proxy_set_header Connection $connection_upgrade;\n      proxy_read_timeout 3600s;\n      proxy_send_timeout 3600s;\n    }\n    location /events {\n      proxy_pass http://app;\n      proxy_http_version 1.1;\n      proxy_set_header Connection '';\n      proxy_buffering off;\n      proxy_cache off;\n      proxy_read_timeout 1h;\n    }\n  }\n}\n";
    let haproxy = "global\n  maxconn 20000\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n  timeout tunnel 1h\n  timeout client-fin 30s\nfrontend fe\n  bind 127.0.0.1:18091\n  acl is_websocket hdr(Upgrade) -i WebSocket\n  use_backend ws if is_websocket\n  default_backend app\nbackend ws\n  server s1 127.0.0.1:9000\nbackend app\n  server s1 127.0.0.1:9001\n";
    let caddy = "http://127.0.0.1:18092 {\n  @websockets {\n    header Connection *Upgrade*\n    header Upgrade websocket\n  }\n  reverse_proxy @websockets 127.0.0.1:9000\n  reverse_proxy /events* 127.0.0.1:9001 {\n    flush_interval -1\n  }\n}\n";
    // And the deployment-guide shapes in tests/fixtures/lint/guides: socket.io behind an
    // ip_hash upstream with mime.types included, a HAProxy listen section routing /ws, a
    // Caddyfile with encode on the site and handle blocks.
    let guides = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/lint/guides/");
    let read = |n: &str| std::fs::read_to_string(format!("{guides}{n}")).unwrap();
    let (g_nginx, g_haproxy, g_caddy) =
        (read("nginx.conf"), read("haproxy.cfg"), read("Caddyfile"));
    for (i, (name, text)) in [
        ("nginx.conf", nginx),
        ("haproxy.cfg", haproxy),
        ("Caddyfile", caddy),
        ("nginx.conf", g_nginx.as_str()),
        ("haproxy.cfg", g_haproxy.as_str()),
        ("Caddyfile", g_caddy.as_str()),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = tmp.path().join(i.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join(name);
        std::fs::write(&f, text.replace("@DIR@", dir.to_str().unwrap())).unwrap();
        real_binary_loads(&f);
        let out = rtcheck()
            .arg("lint")
            .arg(&f)
            .args([
                "--format",
                "json",
                "--ping",
                "25s",
                "--connections",
                "10000",
            ])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let bad: Vec<&Value> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["status"] == "fail")
            .collect();
        assert!(bad.is_empty(), "{name}: {bad:#?}");
        let applied =
            v["summary"]["pass"].as_u64().unwrap() + v["summary"]["warn"].as_u64().unwrap();
        assert!(applied >= 1, "{name}: no rule applied: {v:#}");
        // Only Caddy's stream_close_delay (absent on purpose: Caddy 2.6 lacks it) may warn.
        let warns: Vec<&str> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["status"] == "warn")
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        assert!(
            warns.iter().all(|w| *w == "caddy-stream-close-delay"),
            "{name}: {warns:?}"
        );
    }
}

/// Required properties of SARIF 2.1.0 (OASIS spec sections 3.13-3.27): log version and
/// runs; run tool.driver.name; each result message.text and a ruleId the driver lists; a
/// physicalLocation's artifactLocation.uri and region.startLine >= 1; level in the enum.
fn check_sarif(v: &Value) {
    assert_eq!(v["version"], "2.1.0");
    let run = &v["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "rtcheck");
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    for r in run["results"].as_array().unwrap() {
        assert!(r["message"]["text"].as_str().is_some_and(|t| !t.is_empty()));
        let id = r["ruleId"].as_str().unwrap();
        assert_eq!(rules[r["ruleIndex"].as_u64().unwrap() as usize], id);
        assert!(["none", "note", "warning", "error"].contains(&r["level"].as_str().unwrap()));
        assert!([
            "pass",
            "open",
            "fail",
            "review",
            "notApplicable",
            "informational"
        ]
        .contains(&r["kind"].as_str().unwrap()));
        if r["kind"] != "fail" {
            assert_eq!(
                r["level"], "none",
                "SARIF: a non-fail result has level none"
            );
        }
        for l in r["locations"].as_array().unwrap() {
            if let Some(p) = l.get("physicalLocation") {
                assert!(!p["artifactLocation"]["uri"].as_str().unwrap().is_empty());
                assert!(p["region"]["startLine"].as_u64().unwrap() >= 1);
            } else {
                assert!(l["logicalLocations"][0]["name"].is_string());
            }
        }
    }
}

/// The log read back into serde-sarif's types, which are generated from the SARIF 2.1.0
/// JSON schema (the crate ships it): required properties and enum values must fit it.
fn schema_typed(bytes: &[u8]) {
    let log: serde_sarif::sarif::Sarif =
        serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("not SARIF 2.1.0: {e}"));
    assert_eq!(log.runs.len(), 1);
    let run = &log.runs[0];
    assert_eq!(run.tool.driver.name, "rtcheck");
    assert!(run.results.as_ref().is_some_and(|r| !r.is_empty()));
    // The types can refuse: no runs, or a result without its message.
    let refused = |t: &str| serde_json::from_str::<serde_sarif::sarif::Sarif>(t).is_err();
    assert!(refused(r#"{"version":"2.1.0"}"#));
    assert!(refused(
        r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"ruleId":"a"}]}]}"#
    ));
}

#[test]
fn sarif_for_lint_and_audit_has_the_required_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("nginx.conf");
    std::fs::write(&f, "http {\n  server {\n    location /ws {\n      proxy_pass http://127.0.0.1:9;\n    }\n  }\n}\n").unwrap();
    let out = rtcheck()
        .current_dir(tmp.path())
        .args(["lint", "nginx.conf", "--format", "sarif"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    check_sarif(&v);
    schema_typed(&out.stdout);
    let r = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "nginx-ws-upgrade")
        .unwrap();
    assert_eq!(r["level"], "error");
    assert_eq!(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "nginx.conf"
    );
    assert_eq!(
        r["locations"][0]["physicalLocation"]["region"]["startLine"],
        3
    );
    let out = rtcheck()
        .args(["audit", "--format", "sarif", "--fail-on", "never"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    check_sarif(&v);
    schema_typed(&out.stdout);
    let first = &v["runs"][0]["results"][0]["locations"][0];
    assert!(first.get("physicalLocation").is_none());
    assert!(first["logicalLocations"][0]["name"]
        .as_str()
        .unwrap()
        .contains("procfs"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    /// Random bytes (and random config-ish text) never panic any parser, and each answers fast.
    #[test]
    fn parsers_never_panic_on_any_input(bytes in proptest::collection::vec(any::<u8>(), 0..2048),
                                         words in proptest::collection::vec(prop::sample::select(vec!["{", "}", ";", "\"", "'", "`", "#", "\n", " ", "location", "/ws", "server", "frontend", "backend", "@m", "---", "kind: Ingress", "http:", "  routers:", "middlewares:", "chain:", "- ", "$http_upgrade", "${x}", "\\", "include", "*"]), 0..200)) {
        use rtcheck::lint::{lint, parse, Config, Kind, Workload};
        let texts = [String::from_utf8_lossy(&bytes).into_owned(), words.concat()];
        for text in &texts {
            for kind in [Kind::Nginx, Kind::Haproxy, Kind::Caddy, Kind::CaddyJson, Kind::Ingress, Kind::Traefik] {
                let t = std::time::Instant::now();
                if let Ok(nodes) = parse(kind, "f", text) {
                    let _ = lint(&[Config { kind, file: "f".into(), nodes }], &Workload::default(), &[]);
                }
                prop_assert!(t.elapsed() < std::time::Duration::from_secs(2));
            }
        }
    }
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    use rtcheck::lint::{parse, Kind};
    let deep = "a {\n".repeat(100_000);
    for kind in [Kind::Nginx, Kind::Caddy] {
        let e = parse(kind, "f", &deep).unwrap_err();
        assert!(e.msg.contains("nested deeper"), "{e}");
    }
    let json = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse(Kind::CaddyJson, "f", &json).is_err());
}

#[test]
fn docs_lint_md_has_every_rule_with_an_example_and_fix() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/lint.md")).unwrap();
    for r in rtcheck::lint::rules::RULES {
        assert!(
            doc.contains(&format!("| `{}` |", r.id)),
            "docs/lint.md: no row for {}",
            r.id
        );
        assert!(
            doc.contains(&format!("`{}`", r.id)) && doc.contains("Fix"),
            "{}",
            r.id
        );
        for e in r.evidence {
            assert!(
                doc.contains(&format!("`{e}`")),
                "docs/lint.md: {} evidence {e}",
                r.id
            );
        }
    }
}

#[test]
fn every_format_renders_and_github_annotates_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("haproxy.cfg"),
        "global\n  maxconn 50000\ndefaults\n  mode http\n  timeout client 30s\n  timeout server 30s\n  timeout client-fin 30s\nfrontend fe\n  bind :80\n  default_backend be_ws\nbackend be_ws\n  server s1 127.0.0.1:9\n",
    )
    .unwrap();
    for fmt in [
        "text", "json", "yaml", "markdown", "junit", "github", "html", "sarif",
    ] {
        let out = rtcheck()
            .current_dir(tmp.path())
            .args(["lint", "haproxy.cfg", "--format", fmt])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{fmt}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("haproxy-timeout-tunnel"), "{fmt}: {text}");
        if fmt == "github" {
            assert!(
                text.lines().any(|l| l.starts_with(
                    "::error file=haproxy.cfg,line=11,title=rtcheck lint haproxy-timeout-tunnel"
                )),
                "{text}"
            );
            assert!(text.contains("change: timeout tunnel 3600s"), "{text}");
        }
    }
    // --skip names a rule; an unknown one is exit 2.
    let out = rtcheck()
        .current_dir(tmp.path())
        .args([
            "lint",
            "haproxy.cfg",
            "--skip",
            "haproxy-timeout-tunnel",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let out = rtcheck()
        .current_dir(tmp.path())
        .args(["lint", "haproxy.cfg", "--skip", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_directory_is_linted_file_by_file_by_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::create_dir_all(d.join("k8s")).unwrap();
    std::fs::write(d.join("README.md"), "# not a config\n").unwrap();
    std::fs::write(
        d.join("nginx.conf"),
        "http { server { location /ws { proxy_pass http://a; } } }\n",
    )
    .unwrap();
    std::fs::write(
        d.join("Caddyfile"),
        ":8080\nencode gzip\nreverse_proxy /events* 127.0.0.1:9\n",
    )
    .unwrap();
    std::fs::write(
        d.join("k8s/app.yaml"),
        "kind: Service\n---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: events\n  annotations:\n    nginx.ingress.kubernetes.io/proxy-buffering: \"on\"\nspec: {}\n",
    )
    .unwrap();
    let out = rtcheck()
        .arg("lint")
        .arg(d)
        .args(["--format", "json", "--proxy-version", "caddy=2.7.6"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let target = v["target"].as_str().unwrap();
    for k in ["(nginx", "(caddy", "(ingress)"] {
        assert!(target.contains(k), "{target}");
    }
    assert!(!target.contains("README"));
    let line = |id: &str| {
        let f = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id && f["status"] != "pass");
        f.unwrap_or_else(|| panic!("{id}: {v:#}"))["location"]["line"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(line("nginx-ws-upgrade"), 1);
    assert_eq!(line("caddy-encode-stream"), 2);
    assert_eq!(line("ingress-proxy-buffering"), 8);
}

/// `nginx -T | rtcheck lint --kind nginx -`: the real dump, split back into its files.
#[test]
fn a_real_nginx_dump_names_the_included_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::create_dir_all(d.join("conf.d")).unwrap();
    std::fs::write(
        d.join("nginx.conf"),
        format!("pid {0}/nginx.pid;\nerror_log stderr;\nevents {{}}\nhttp {{\n  include {0}/conf.d/*.conf;\n}}\n", d.display()),
    )
    .unwrap();
    std::fs::write(d.join("conf.d/app.conf"), "server {\n  listen 127.0.0.1:18098;\n  location /ws {\n    proxy_pass http://127.0.0.1:9;\n  }\n}\n").unwrap();
    let nginx = common::require_binary("nginx", "nginx-light");
    let dump = std::process::Command::new(nginx)
        .arg("-T")
        .arg("-p")
        .arg(d)
        .args(["-e", "stderr", "-c"])
        .arg(d.join("nginx.conf"))
        .output()
        .unwrap();
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let out = rtcheck()
        .args(["lint", "--kind", "nginx", "-", "--format", "json"])
        .write_stdin(dump.stdout)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "nginx-ws-upgrade")
        .unwrap();
    assert_eq!(
        f["location"]["file"],
        d.join("conf.d/app.conf").display().to_string()
    );
    assert_eq!(f["location"]["line"], 3);
}

#[test]
fn explain_knows_the_lint_rules() {
    let out = rtcheck()
        .args(["explain", "nginx-ws-upgrade"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.starts_with("nginx-ws-upgrade (nginx lint rule)"), "{t}");
    assert!(t.contains("[proxy-config]"), "{t}");
    let out = rtcheck()
        .args(["explain", "nginx-ws-upgrad"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("closest: nginx-ws-upgrade"));
}

/// Traefik's dynamic configuration the way its documentation shows WebSocket and SSE
/// behind the file provider (a compress middleware excluding text/event-stream, as the
/// compress page's example does; a chain; request-only buffering; sticky polling): lint
/// reads it as Traefik, checks the stream routers and finds nothing to fix. No traefik
/// binary validates it (Debian does not package Traefik).
#[test]
fn a_traefik_dynamic_config_as_the_docs_show_lints_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("dynamic.yml");
    std::fs::write(
        &f,
        "\
# Dynamic configuration (file provider)
http:
  routers:
    chat:
      rule: Host(`app.example.com`) && PathPrefix(`/ws`)
      service: chat
      middlewares:
        - secure
    events:
      rule: Host(`app.example.com`) && PathPrefix(`/events`)
      service: app
      middlewares:
        - secure
        - limit
    poll:
      rule: PathPrefix(`/poll`)
      service: app
  middlewares:
    secure:
      chain:
        middlewares:
          - headers
          - gz
    headers:
      headers:
        frameDeny: true
    gz:
      compress:
        excludedContentTypes:
          - text/event-stream
    limit:
      buffering:
        maxRequestBodyBytes: 2000000
  services:
    chat:
      loadBalancer:
        servers:
          - url: http://127.0.0.1:9000
    app:
      loadBalancer:
        sticky:
          cookie:
            name: route
        servers:
          - url: http://127.0.0.1:9001
          - url: http://127.0.0.1:9002
",
    )
    .unwrap();
    let out = rtcheck()
        .arg("lint")
        .arg(&f)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["target"].as_str().unwrap().contains("(traefik)"),
        "{}",
        v["target"]
    );
    let findings = v["findings"].as_array().unwrap();
    let bad: Vec<&Value> = findings
        .iter()
        .filter(|f| f["status"] == "fail" || f["status"] == "warn")
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    for id in [
        "traefik-compress-stream",
        "traefik-buffering-stream",
        "traefik-sticky-polling",
    ] {
        assert!(
            findings
                .iter()
                .any(|f| f["id"] == id && f["status"] == "pass"),
            "{id} was not checked: {v:#}"
        );
    }
    assert_eq!(out.status.code(), Some(0));
}

/// Proxied routes that nothing classifies: a warn listing each with the flags that name
/// it (never a pass, never exit 2); declaring the transport puts it on the catch-all.
#[test]
fn unclassified_routes_are_listed_with_the_flags_that_declare_them() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("site.conf");
    std::fs::write(
        &f,
        "server {\n  location / { proxy_pass http://a; }\n  location /api { proxy_pass http://b; }\n}\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let out = rtcheck()
            .arg("lint")
            .arg(&f)
            .args(["--format", "json", "--proxy-version", "nginx=1.22.1"])
            .args(extra)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (v, out.status.code())
    };
    let (v, code) = run(&[]);
    assert_eq!(code, Some(0), "{v:#}");
    let f0 = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == "lint-streams")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(f0["status"], "warn");
    let flags: Vec<&str> = f0["fix"]["persistent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(
        flags,
        [
            "location /: --ws-location / or --sse-location /",
            "location /api: --ws-location /api or --sse-location /api"
        ]
    );
    assert!(v["routes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["carries"].as_array().unwrap().is_empty()));
    assert_eq!(run(&["--fail-on", "warn"]).1, Some(1));
    // Declared: the catch-all carries it, said so; /api stays plain.
    let (v, _) = run(&["--transport", "sse", "--ping", "20s"]);
    let routes = v["routes"].as_array().unwrap();
    assert_eq!(routes[0]["route"], "location /");
    assert_eq!(routes[0]["carries"][0]["transport"], "sse");
    let why = routes[0]["carries"][0]["why"].as_str().unwrap();
    assert!(
        why.starts_with("declared by --transport, on the catch-all route"),
        "{why}"
    );
    assert!(routes[1]["carries"].as_array().unwrap().is_empty(), "{v:#}");
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x["id"] != "lint-streams"));
}

/// `nginx.conf` alone whose routes are in `include conf.d/*.conf`: nothing proxied in what
/// was read, so exit 2, and the line names the include not read and the two ways to read
/// it; the directory given instead is linted (its routes found).
#[test]
fn a_main_file_whose_routes_are_in_unread_includes_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("conf.d")).unwrap();
    std::fs::write(
        dir.path().join("nginx.conf"),
        "events {}\nhttp {\n  include conf.d/*.conf;\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("conf.d/app.conf"),
        "server {\n  listen 80;\n  location /ws/ {\n    proxy_pass http://127.0.0.1:9000;\n    proxy_http_version 1.1;\n    proxy_set_header Upgrade $http_upgrade;\n    proxy_set_header Connection upgrade;\n  }\n}\n",
    )
    .unwrap();
    let main = dir.path().join("nginx.conf");
    let out = rtcheck().arg("lint").arg(&main).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("not read:") && err.contains("include conf.d/*.conf"),
        "{err}"
    );
    assert!(err.contains("--follow-includes"), "{err}");
    let out = rtcheck()
        .args(["lint", "--format", "json", "--fail-on", "never"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let routes = v["routes"].as_array().unwrap();
    assert!(
        routes.iter().any(|r| r.to_string().contains("/ws/")),
        "{v:#}"
    );
}
