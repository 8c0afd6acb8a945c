//! Hostile input on lint's parsers and loader, and on the duration flags (issue 41, the
//! input half): durations have a range (a flag past ten years is exit 2, a config value the
//! proxy itself refuses is a Fail saying so), input files are regular files inside the
//! given paths, an error never quotes a file that is not a config, YAML depth is refused
//! before parsing, and the total input is bounded.
use crate::common;
use common::rtcheck;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// `lint PATH --format json --ping 25s`: (exit code, report or Null, stderr).
fn lint_json(path: &Path, extra: &[&str]) -> (Option<i32>, Value, String) {
    let out = rtcheck()
        .arg("lint")
        .arg(path)
        .args(["--format", "json", "--ping", "25s"])
        .args(extra)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code(),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn finding<'a>(v: &'a Value, id: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings in {v}"))
        .iter()
        .filter(|f| f["id"] == id)
        .collect()
}

#[test]
fn a_duration_flag_past_ten_years_is_exit_2_not_a_panic() {
    let huge = "9223372036854775807s";
    for args in [
        vec!["audit", "--watch", huge],
        vec!["audit", "--verify", "--verify-timeout", huge],
        vec!["verify", "delivery", "--timeout", huge],
        vec!["choose", "--no-input", "--visible-within", huge],
        vec!["lint", "-", "--kind", "nginx", "--ping", huge],
        vec!["serve", "--listen", "127.0.0.1:0", "--ping", huge],
    ] {
        let out = rtcheck().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("too large"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn timeouts_the_proxy_refuses_are_a_fail_saying_so() {
    let tmp = tempfile::tempdir().unwrap();
    let nginx = tmp.path().join("nginx.conf");
    std::fs::write(
        &nginx,
        "http {\n server {\n  location /ws {\n   proxy_pass http://b;\n   proxy_http_version 1.1;\n   proxy_set_header Upgrade $http_upgrade;\n   proxy_set_header Connection \"upgrade\";\n   proxy_read_timeout 9223372036854776s;\n   proxy_send_timeout 18446744073709551616s;\n  }\n }\n}\n",
    )
    .unwrap();
    let (code, v, err) = lint_json(&nginx, &[]);
    assert_eq!(code, Some(1), "{err}");
    for id in ["nginx-read-timeout", "nginx-send-timeout"] {
        let f = finding(&v, id);
        assert_eq!(f.len(), 1, "{id}: {v}");
        assert_eq!(f[0]["status"], "fail", "{id}");
        let obs = f[0]["observed"].as_str().unwrap();
        assert!(obs.contains("refuses to load"), "{id}: {obs}");
    }
    // Accepted by nginx -t (9223372036854775 s): a long timeout, no finding for it.
    std::fs::write(
        &nginx,
        std::fs::read_to_string(&nginx)
            .unwrap()
            .replace("9223372036854776s", "9223372036854775s"),
    )
    .unwrap();
    let (_, v, _) = lint_json(&nginx, &[]);
    let f = finding(&v, "nginx-read-timeout");
    assert!(f.iter().all(|f| f["status"] == "pass"), "{v}");

    let haproxy = tmp.path().join("haproxy.cfg");
    for (value, refused) in [("30d", true), ("1e9s", true), ("25d", true), ("24d", false)] {
        std::fs::write(
            &haproxy,
            format!("defaults\n  mode http\n  timeout client 30s\n  timeout server 30s\nbackend be_ws\n  timeout tunnel {value}\n  timeout client-fin 30s\n  server s1 127.0.0.1:9\n"),
        )
        .unwrap();
        let (_, v, err) = lint_json(&haproxy, &[]);
        let f = finding(&v, "haproxy-timeout-tunnel");
        let fail = f
            .iter()
            .any(|f| f["status"] == "fail" && f["observed"].as_str().unwrap().contains("refuses"));
        assert_eq!(fail, refused, "{value}: {v} {err}");
    }
}

const SECRET: &str = "root:$y$j9T$s3cr3tHASHvalue:19000:0:99999:7:::";

/// Stdout and stderr of a run hold no piece of the secret.
fn no_secret(out: &std::process::Output, ctx: &str) {
    for text in [&out.stdout, &out.stderr] {
        let t = String::from_utf8_lossy(text);
        assert!(!t.contains("s3cr3tHASH"), "{ctx}: {t}");
        assert!(!t.contains("A1_SECRET_TOKEN_VALUE"), "{ctx}: {t}");
    }
}

const WS_NGINX: &str = "http {\n server {\n  location /ws {\n   proxy_pass http://b;\n  }\n }\n}\n";

#[test]
fn a_symlink_out_of_a_linted_directory_is_skipped_never_printed() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("shadow");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("nginx.conf"), WS_NGINX).unwrap();
    std::os::unix::fs::symlink(&secret, dir.path().join("haproxy.cfg")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", dir.path().join("env.conf")).unwrap();
    let out = rtcheck()
        .arg("lint")
        .arg(dir.path())
        .args(["--format", "json"])
        .env("A1_SECRET", "A1_SECRET_TOKEN_VALUE")
        .output()
        .unwrap();
    no_secret(&out, "dir");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped = finding(&v, "lint-input");
    assert_eq!(skipped.len(), 2, "{v}");
    assert!(skipped.iter().all(|f| f["status"] == "skip"));
    let reasons: Vec<&str> = skipped
        .iter()
        .map(|f| f["reason"].as_str().unwrap())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("under /proc")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("symlink leaving")),
        "{reasons:?}"
    );
    // The nginx file was linted all the same.
    assert!(!finding(&v, "nginx-ws-http-version").is_empty(), "{v}");
    // Only the symlinks left: nothing read is exit 2 saying why, never a pass.
    std::fs::remove_file(dir.path().join("nginx.conf")).unwrap();
    let out = rtcheck().arg("lint").arg(dir.path()).output().unwrap();
    no_secret(&out, "only links");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no config file found") && err.contains("not read"),
        "{err}"
    );
}

#[test]
fn includes_of_secret_or_kernel_files_are_never_quoted() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("shadow");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nginx.conf");
    // /proc is never read, even with --follow-includes: a Skip naming why.
    std::fs::write(
        &conf,
        WS_NGINX.replace("http {\n", "http {\n include /proc/self/environ;\n"),
    )
    .unwrap();
    let out = rtcheck()
        .arg("lint")
        .arg(&conf)
        .args(["--follow-includes", "--format", "json"])
        .env("A1_SECRET", "A1_SECRET_TOKEN_VALUE")
        .output()
        .unwrap();
    no_secret(&out, "environ");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let inc = finding(&v, "lint-include");
    assert!(
        inc[0]["reason"].as_str().unwrap().contains("under /proc"),
        "{v}"
    );
    // A followed include that is no config: exit 2, said without quoting it.
    std::fs::write(
        &conf,
        WS_NGINX.replace(
            "http {\n",
            &format!("http {{\n include {};\n", secret.display()),
        ),
    )
    .unwrap();
    let out = rtcheck()
        .arg("lint")
        .arg(&conf)
        .arg("--follow-includes")
        .output()
        .unwrap();
    no_secret(&out, "include");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not look like an nginx config"), "{err}");
    // Named on the command line with a kind: the same.
    let out = rtcheck()
        .arg("lint")
        .arg(&secret)
        .args(["--kind", "haproxy"])
        .output()
        .unwrap();
    no_secret(&out, "--kind haproxy");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn yaml_file_flags_never_print_a_file_that_is_not_yaml() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("shadow");
    std::fs::write(&secret, format!("{SECRET}\nbin:*:19000:0:99999:7:::\n")).unwrap();
    let env = tmp.path().join("app.env");
    std::fs::write(&env, "API_KEY=A1_SECRET_TOKEN_VALUE\n").unwrap();
    for file in [&secret, &env] {
        for args in [
            vec!["audit", "--profile"],
            vec!["choose", "--no-input", "--answers"],
            vec!["review", "--answers"],
            vec!["budget", "--hops"],
            vec!["lint", "-", "--kind", "nginx", "--baseline"],
        ] {
            let out = rtcheck()
                .args(&args)
                .arg(file)
                .write_stdin(WS_NGINX)
                .output()
                .unwrap();
            let ctx = format!("{args:?} {}", file.display());
            no_secret(&out, &ctx);
            assert_eq!(out.status.code(), Some(2), "{ctx}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("content not shown"), "{ctx}: {err}");
        }
    }
    // /proc/self/environ through a flag: refused before reading.
    let out = rtcheck()
        .args(["audit", "--profile", "/proc/self/environ"])
        .env("A1_SECRET", "A1_SECRET_TOKEN_VALUE")
        .output()
        .unwrap();
    no_secret(&out, "environ");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("under /proc"));
}

#[test]
fn an_unterminated_8_mib_token_is_not_echoed_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("nginx.conf");
    let token = "A".repeat(8 << 20);
    std::fs::write(
        &conf,
        format!("http {{\n server {{\n  location /ws {{\n   proxy_pass {token}\n"),
    )
    .unwrap();
    let out = rtcheck().arg("lint").arg(&conf).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{}", err.len());
    assert!(err.len() < 400, "{} bytes of error", err.len());
}

#[test]
fn a_directory_over_the_total_input_budget_is_one_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    // Ten files of 7 MB: each under the per-file bound, 70 MB together.
    let body = format!("events {{}}\n#{}\n", "x".repeat(7_000_000));
    for i in 0..10 {
        std::fs::write(tmp.path().join(format!("n{i}.conf")), &body).unwrap();
    }
    let out = rtcheck().arg("lint").arg(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("input budget"), "{err}");
}

#[test]
fn an_output_that_is_an_input_or_kernel_state_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("x.conf");
    std::fs::write(&conf, WS_NGINX).unwrap();
    let base = tmp.path().join("baseline.yaml");
    std::fs::write(&base, "accepted: []\n").unwrap();
    let prof = tmp.path().join("profile.yaml");
    std::fs::write(&prof, "connections: 100\n").unwrap();
    let c = conf.to_str().unwrap();
    let b = base.to_str().unwrap();
    let p = prof.to_str().unwrap();
    let json_b = format!("json={b}");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["lint", c, "-o", c], "is also an input (lint)"),
        (
            vec!["lint", c, "--baseline", b, "--report", &json_b],
            "is also an input (--baseline)",
        ),
        (
            vec!["audit", "--profile", p, "--write-baseline", p],
            "is also an input (--profile)",
        ),
        (
            vec![
                "choose",
                "--no-input",
                "--visible-within",
                "5s",
                "--upstream",
                "none",
                "--loss",
                "shared",
                "--answers",
                p,
                "--save",
                p,
            ],
            "is also an input (--answers)",
        ),
        (
            vec!["lint", c, "--report", "json=-", "--report", "yaml=-"],
            "reports to stdout",
        ),
        (
            vec!["lint", c, "-o", "/proc/self/comm"],
            "not a file for a report",
        ),
    ];
    for (args, why) in cases {
        let out = rtcheck().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // Every input is as it was.
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), WS_NGINX);
    assert_eq!(std::fs::read_to_string(&base).unwrap(), "accepted: []\n");
    assert_eq!(
        std::fs::read_to_string(&prof).unwrap(),
        "connections: 100\n"
    );
    // /dev/stdout is still an output.
    let out = rtcheck()
        .args(["lint", c, "--format", "json", "-o", "/dev/stdout"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "lint");
}

#[test]
fn deep_flow_yaml_is_refused_before_parsing_and_many_routers_stay_linear() {
    let tmp = tempfile::tempdir().unwrap();
    let deep = tmp.path().join("dynamic.yml");
    let n = 1_500_000;
    std::fs::write(
        &deep,
        format!("http:\n  routers: {}{}\n", "[".repeat(n), "]".repeat(n)),
    )
    .unwrap();
    let (code, _, err) = lint_json(&deep, &["--kind", "traefik"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("nested deeper than 64"), "{err}");
    assert!(err.contains("dynamic.yml:2:"), "{err}");
    // 40,000 routers (a scan of the text per key was quadratic: 48 s): within the run bound.
    let mut t = String::from("http:\n  routers:\n");
    for i in 0..40_000 {
        t.push_str(&format!(
            "    r{i}:\n      rule: PathPrefix(`/api{i}`)\n      service: app\n"
        ));
    }
    t.push_str("    events:\n      rule: PathPrefix(`/events`)\n      service: app\n      middlewares: [gz]\n  middlewares:\n    gz:\n      compress: {}\n  services:\n    app:\n      loadBalancer:\n        servers:\n          - url: http://127.0.0.1:9\n");
    let many = tmp.path().join("many.yml");
    std::fs::write(&many, t).unwrap();
    let (code, v, err) = lint_json(&many, &[]);
    assert_eq!(code, Some(1), "{err}");
    // The last router is found, at its middlewares line (the lookup is by key path, not a scan).
    let f = finding(&v, "traefik-compress-stream");
    assert_eq!(f[0]["status"], "fail", "{v}");
    assert_eq!(f[0]["location"]["line"], 3 + 3 * 40_000 + 3, "{v}");
}

#[test]
fn an_ingress_document_on_the_marker_line_is_linted() {
    let tmp = tempfile::tempdir().unwrap();
    let good = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: api\nspec:\n  rules:\n  - http:\n      paths:\n      - path: /api\n        pathType: Prefix\n";
    let bad = "{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: ws, annotations: {nginx.ingress.kubernetes.io/proxy-read-timeout: \"5\", nginx.ingress.kubernetes.io/proxy-send-timeout: \"5\"}}, spec: {rules: [{http: {paths: [{path: /ws, pathType: Prefix}]}}]}}\n";
    let mut fails = vec![];
    for sep in ["--- ", "---\n"] {
        let f = tmp.path().join("ing.yaml");
        std::fs::write(&f, format!("{good}{sep}{bad}")).unwrap();
        let (code, v, err) = lint_json(&f, &[]);
        assert_eq!(code, Some(1), "{sep:?}: {err}");
        fails.push(v["summary"]["fail"].as_u64().unwrap());
    }
    // The same verdict either way: the second document's 5 s read timeout is judged.
    assert_eq!(fails[0], fails[1]);
    assert!(fails[0] >= 1, "{fails:?}");
}

/// No control character but newline (and tab) in a CI format's output.
fn inert(text: &str, ctx: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect();
    assert!(bad.is_empty(), "{ctx}: {bad:?} in {text}");
}

#[test]
fn control_characters_from_a_config_are_escaped_in_every_format_and_on_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("a,b:c.conf");
    std::fs::write(
        &conf,
        "http {\n server {\n  location /ws\x1b]0,pwned\x07\x1b[2J\x00 {\n   proxy_pass http://b;\n  }\n }\n}\n",
    )
    .unwrap();
    for format in ["text", "markdown", "github", "junit"] {
        let out = rtcheck()
            .arg("lint")
            .arg(&conf)
            .args(["--ping", "25s", "--color", "always", "--format", format])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        if format == "text" {
            // The palette's colours stay; nothing else from the config reaches the terminal.
            let no_sgr = regex_lite_strip_sgr(&text);
            inert(&no_sgr, format);
            assert!(text.contains("\\x1b]0,pwned\\x07"), "{text}");
        } else {
            inert(&text, format);
        }
        if format == "github" {
            // Every line is one of our commands; the file property escapes `,` and `:`.
            for l in text.lines() {
                assert!(
                    l.starts_with("::error ")
                        || l.starts_with("::warning ")
                        || l.starts_with("::notice "),
                    "{l}"
                );
            }
            assert!(text.contains("a%2Cb%3Ac.conf"), "{text}");
        }
    }
    // stderr: a file name with ESC and a newline stays one inert line.
    let odd = tmp.path().join("x\x1b[2J\ny.conf");
    std::fs::write(&odd, "http {\n").unwrap();
    let out = rtcheck().arg("lint").arg(&odd).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    inert(&err, "stderr");
    assert!(err.contains("x\\x1b[2J\\ny.conf"), "{err}");
}

/// The text without the palette's colour sequences (ESC [ digits ; m).
fn regex_lite_strip_sgr(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 2..];
        let n = tail
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b';')
            .count();
        if tail.as_bytes().get(n) == Some(&b'm') {
            rest = &tail[n + 1..];
        } else {
            out.push('\x1b');
            rest = &rest[i + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn budget_hop_names_are_escaped_in_text_and_ci_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let hops = tmp.path().join("hops.yaml");
    std::fs::write(
        &hops,
        "hops:\n  - {name: \"auth\\e[2J\\a\\0\", rtt: 24ms, server_time: 18ms, reuse: true}\n  - {name: db, rtt: 24ms, server_time: 18ms, p99: 120ms}\n",
    )
    .unwrap();
    for format in ["text", "markdown", "github"] {
        let out = rtcheck()
            .args(["budget", "--hops"])
            .arg(&hops)
            .args(["--format", format])
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        inert(&text, format);
        if format == "text" {
            assert!(text.contains("auth\\x1b[2J\\x07\\x00"), "{text}");
        }
    }
}

/// lint's time syntaxes agree with the real binaries: every value is loaded by `nginx -t`
/// / `haproxy -c` exactly when lint takes it (nothing is started, no port is bound).
#[test]
fn time_limits_match_nginx_t_and_haproxy_c() {
    use rtcheck::lint::time;
    let tmp = tempfile::tempdir().unwrap();
    let nginx = common::require_binary("nginx", "nginx-light");
    for v in [
        "60",
        "1h30m",
        "\"1h 30m\"",
        "1w",
        "500ms",
        "9223372036854775s",
        "9223372036854776s",
        "9223372036854775807",
        "1.5s",
        "1y",
        "1M",
        "30s1h",
        "\" 60s\"",
        "1H",
    ] {
        let conf = tmp.path().join("nginx.conf");
        std::fs::write(
            &conf,
            format!("pid nginx.pid;\nevents {{}}\nhttp {{ access_log off; server {{ location /ws {{ proxy_pass http://127.0.0.1:9; proxy_read_timeout {v}; }} }} }}\n"),
        )
        .unwrap();
        let out = std::process::Command::new(&nginx)
            .arg("-t")
            .arg("-p")
            .arg(tmp.path())
            .args(["-e", "stderr", "-c"])
            .arg(&conf)
            .output()
            .unwrap();
        let loads = out.status.success();
        let ours = time::nginx(v.trim_matches('"')).is_ok();
        assert_eq!(
            ours,
            loads,
            "nginx {v}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let haproxy = common::require_binary("haproxy", "haproxy");
    for v in [
        "5000",
        "30s",
        "24d",
        "2147483647",
        "25d",
        "30d",
        "1e9s",
        "1.5s",
        "10s5ms",
        "5s5",
        "1S",
        "2147484s",
        "100us",
    ] {
        let cfg = tmp.path().join("haproxy.cfg");
        std::fs::write(
            &cfg,
            format!("defaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\nbackend b\n  timeout tunnel {v}\n  server s1 127.0.0.1:9\n"),
        )
        .unwrap();
        let out = std::process::Command::new(&haproxy)
            .arg("-c")
            .arg("-f")
            .arg(&cfg)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        // "no listener" is haproxy -c's verdict on a config without a frontend: it parsed.
        let loads = out.status.success() || text.contains("has no error");
        let warned = text.contains("will be reported as an error");
        match time::haproxy(v) {
            Ok(_) => assert!(loads && !warned, "haproxy {v}: {text}"),
            Err(time::TimeError::Trailing) => assert!(loads && warned, "haproxy {v}: {text}"),
            Err(_) => assert!(!loads, "haproxy {v}: {text}"),
        }
    }
}
