//! Secrets are never printed (issue 21, item 5): every command that takes a URL, a header
//! or a token is run with secret-bearing ones, and every format's output (text, json,
//! yaml, markdown, junit, github, html) and stderr are searched for the secrets. The
//! redacted form must be there (the URL is reported), the secret must not.
use crate::common;
use common::{free_port, http, rtcheck, Server};
#[cfg(feature = "redis")]
use common::{http_get, require_binary, Service};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const PASSWORD: &str = "pw-SECRET-7q1";
const QUERY: &str = "qv-SECRET-7q2";
const SESSION: &str = "sid-SECRET-7q3";
const HEADER: &str = "hdr-SECRET-7q4";
const TOKEN: &str = "tok-SECRET-7q5-0123456789";
const ALL: [&str; 5] = [PASSWORD, QUERY, SESSION, HEADER, TOKEN];

fn clean(what: &str, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for s in ALL {
        assert!(!stdout.contains(s), "{what}: `{s}` on stdout:\n{stdout}");
        assert!(!stderr.contains(s), "{what}: `{s}` on stderr:\n{stderr}");
    }
    stdout.into_owned()
}

fn url_with_secrets(scheme: &str, addr: std::net::SocketAddr, path: &str) -> String {
    format!("{scheme}://user:{PASSWORD}@{addr}{path};jsessionid={SESSION}?token={QUERY}&{QUERY}")
}

#[test]
fn probe_prints_no_secret_in_any_format() {
    let srv = Server::start(&[]);
    let sse = url_with_secrets("http", srv.addr, "/sse");
    let ws = format!("ws://user:{PASSWORD}@{}/ws?token={QUERY}", srv.addr);
    let (sse, ws) = (&sse, &ws);
    let probe = |format: &str| {
        rtcheck()
            .args(["probe", "--quick", "--format", format])
            .args(["-H", &format!("Authorization: Bearer {HEADER}")])
            .args(["-H", &format!("X-Api-Key: {HEADER}")])
            .args([sse, ws])
            .output()
            .unwrap()
    };
    let probe = &probe;
    // The seven runs at once: each probes the same server and mostly waits on its own
    // sockets (one after another they took ~14 s).
    let formats = [
        "text", "json", "yaml", "markdown", "junit", "github", "html",
    ];
    let outs: Vec<Output> = std::thread::scope(|s| {
        let runs: Vec<_> = formats.iter().map(|&f| s.spawn(move || probe(f))).collect();
        runs.into_iter()
            .map(|r| r.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    for (format, out) in formats.into_iter().zip(outs) {
        let stdout = clean(&format!("probe --format {format}"), &out);
        assert!(
            out.status.code().is_some_and(|c| c < 2),
            "{format}: {stdout}"
        );
        if format != "github" {
            assert!(
                stdout.contains("jsessionid=***"),
                "{format}: URL not shown:\n{stdout}"
            );
        }
        if format == "json" {
            let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert!(
                v["target"].as_str().unwrap().contains("jsessionid=***"),
                "{v}"
            );
        }
    }
}

#[test]
fn load_and_budget_live_print_no_secret_in_any_format() {
    let srv = Server::start(&["--workers", "2"]);
    let url = format!("http://user:{PASSWORD}@{}/work?ms=1&k={QUERY}", srv.addr);
    for format in ["text", "json", "yaml", "markdown", "junit", "html"] {
        let out = rtcheck()
            .args([
                "load",
                "--concurrency",
                "1",
                "--step",
                "300ms",
                "--format",
                format,
            ])
            .args(["--header", &format!("Authorization: Bearer {HEADER}")])
            .arg(&url)
            .output()
            .unwrap();
        let stdout = clean(&format!("load --format {format}"), &out);
        assert!(
            out.status.code().is_some_and(|c| c < 2),
            "{format}: {stdout}"
        );
        if format == "json" {
            let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(
                v["url"],
                format!("http://user:***@{}/work?ms=1&k=***", srv.addr)
            );
        }
        let out = rtcheck()
            .args(["budget", "--rounds", "1", "--format", format, "--live"])
            .arg(&url)
            .output()
            .unwrap();
        let stdout = clean(&format!("budget --live --format {format}"), &out);
        assert!(
            out.status.code().is_some_and(|c| c < 2),
            "{format}: {stdout}"
        );
        if format == "json" {
            let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert!(
                v["live"]["urls"][0].as_str().unwrap().contains("user:***@"),
                "{v}"
            );
        }
    }
}

#[test]
fn errors_name_flags_and_urls_without_their_secrets() {
    let bad_url = format!("http://user:{PASSWORD}@10.255.1.2/x;jsessionid={SESSION}?k={QUERY}");
    let runs: Vec<Vec<String>> = vec![
        // A header without a colon: clap used to echo the value.
        vec![
            "probe".into(),
            "-H".into(),
            HEADER.into(),
            "http://127.0.0.1:9/".into(),
        ],
        vec![
            "load".into(),
            "--header".into(),
            HEADER.into(),
            "http://127.0.0.1:9/".into(),
        ],
        vec![
            "serve".into(),
            "--control-token".into(),
            format!("{TOKEN} x"),
        ],
        vec!["load".into(), bad_url.clone()],
        vec!["budget".into(), "--live".into(), bad_url.clone()],
        vec![
            "verify".into(),
            "delivery".into(),
            "--server".into(),
            bad_url.clone(),
        ],
        vec![
            "bench".into(),
            "fanout".into(),
            "--server".into(),
            bad_url.clone(),
        ],
        vec![
            "bench".into(),
            "fanout".into(),
            "--server".into(),
            format!("ws://user:{PASSWORD}@127.0.0.1:1/ws?k={QUERY}"),
        ],
        vec![
            "probe".into(),
            format!("ftp://user:{PASSWORD}@h/?k={QUERY}"),
        ],
        vec![
            "bench".into(),
            "cluster".into(),
            "--redis".into(),
            format!("redis://user:{PASSWORD}@10.255.1.2/?password={QUERY}"),
        ],
        vec![
            "bench".into(),
            "cluster".into(),
            "--redis".into(),
            format!("http://user:{PASSWORD}@h/"),
        ],
        vec![
            "serve".into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--redis".into(),
            format!(
                "redis://:{PASSWORD}@127.0.0.1:{}/?password={QUERY}",
                free_port()
            ),
        ],
    ];
    for args in runs {
        let out = rtcheck()
            .args(&args)
            .env_remove("RTCHECK_CONTROL_TOKEN")
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        clean(&format!("{args:?}"), &out);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).lines().count(),
            1,
            "{args:?}"
        );
    }
}

/// redis-server on a free loopback port with `requirepass PASSWORD` (killed on drop).
#[cfg(feature = "redis")]
fn redis_with_password() -> (Service, u16) {
    let bin = require_binary("redis-server", "redis-server");
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let conf = dir.path().join("redis.conf");
    std::fs::write(
        &conf,
        format!("port {port}\nbind 127.0.0.1\nsave \"\"\nappendonly no\nrequirepass {PASSWORD}\ndir {}\n", dir.path().display()),
    )
    .unwrap();
    let mut cmd = Command::new(bin);
    cmd.arg(&conf);
    let mut redis = Service::start(cmd, "redis", dir);
    redis.wait_listening(([127, 0, 0, 1], port).into(), Duration::from_secs(20));
    (redis, port)
}

/// serve --redis with a password in the URL: not in the banner, /healthz (up and down)
/// nor /metrics.
#[cfg(feature = "redis")]
#[test]
fn serve_redis_password_is_not_in_banner_or_healthz() {
    let (redis, port) = redis_with_password();
    let url = format!("redis://:{PASSWORD}@127.0.0.1:{port}/?password={QUERY}");
    let srv = Server::start(&["--redis", &url]);
    let (_, up) = http_get(srv.addr, "/healthz");
    let (_, metrics) = http_get(srv.addr, "/metrics");
    drop(redis);
    let t0 = Instant::now();
    let down = loop {
        let (_, h) = http_get(srv.addr, "/healthz");
        if h.contains("degraded") {
            break h;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "never degraded: {h}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let banner = srv.stderr();
    for s in ALL {
        for (what, text) in [
            ("up", &up),
            ("metrics", &metrics),
            ("down", &down),
            ("banner", &banner),
        ] {
            assert!(!text.contains(s), "{what} shows `{s}`:\n{text}");
        }
    }
    assert!(banner.contains(":***@127.0.0.1"), "{banner}");
    assert!(
        banner.contains("give the URL in RTCHECK_REDIS_URL"),
        "{banner}"
    );
    assert!(down.contains("password=***"), "{down}");
}

/// `serve --control-token-file` and RTCHECK_CONTROL_TOKEN keep the token off the command
/// line; `--control-token` still works but warns, and never prints the token.
#[test]
fn control_token_from_a_file_or_the_environment_stays_off_argv() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let ways: [(&[&str], Option<&str>); 3] = [
        (&["--control-token-file", file.to_str().unwrap()], None),
        (&[], Some(TOKEN)),
        (&["--control-token", TOKEN], None),
    ];
    for (i, (args, env)) in ways.iter().enumerate() {
        let addr_file = dir.path().join(format!("addr{i}"));
        let err_file = dir.path().join(format!("err{i}"));
        let mut cmd = Command::new(common::binary());
        cmd.args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--exit-with-parent",
            "--addr-file",
        ])
        .arg(&addr_file)
        .args(*args)
        .env_remove("RTCHECK_CONTROL_TOKEN")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_file).unwrap());
        if let Some(t) = env {
            cmd.env("RTCHECK_CONTROL_TOKEN", t);
        }
        let mut child = cmd.spawn().unwrap();
        let t0 = Instant::now();
        let addr: std::net::SocketAddr = loop {
            if let Some(a) = std::fs::read_to_string(&addr_file)
                .ok()
                .and_then(|t| t.lines().next().and_then(|l| l.parse().ok()))
            {
                break a;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "serve did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let req = |auth: &str| {
            http(
                addr,
                &format!(
                    "GET /control/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n"
                ),
            )
            .0
        };
        assert_eq!(req(""), 401, "way {i}: the token is in force");
        assert_eq!(
            req(&format!("Authorization: Bearer {TOKEN}\r\n")),
            200,
            "way {i}"
        );
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap();
        let on_argv = String::from_utf8_lossy(&cmdline).contains(TOKEN);
        assert_eq!(on_argv, i == 2, "way {i}: token on the command line");
        let _ = child.kill();
        let _ = child.wait();
        let err = std::fs::read_to_string(&err_file).unwrap();
        assert!(!err.contains(TOKEN), "way {i}: {err}");
        assert_eq!(
            err.contains("WARNING: --control-token"),
            i == 2,
            "way {i}: {err}"
        );
    }
    // A token file that is not one: one line naming it, never its content.
    std::fs::write(&file, format!("{TOKEN} with spaces\n")).unwrap();
    let out = rtcheck()
        .args(["serve", "--listen", "127.0.0.1:0", "--control-token-file"])
        .arg(&file)
        .output()
        .unwrap();
    clean("bad token file", &out);
    assert_eq!(out.status.code(), Some(2));
}

/// Off loopback (a private network namespace): /metrics needs the token like
/// /control/stats, and the generated `<addr-file>.token` is gone once serve exits.
const OFF_LOOPBACK: &str = r#"
set -eu
BIN=$1
ip link set lo up
D=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$D"' EXIT
"$BIN" serve --listen 0.0.0.0:0 --addr-file "$D/addr" --exit-with-parent 2>"$D/err" &
PID=$!
for i in $(seq 400); do [ -s "$D/addr" ] && break; sleep 0.05; done
PORT=$(head -1 "$D/addr" | cut -d: -f2)
req() { # path extra-header
  exec 3<>"/dev/tcp/127.0.0.1/$PORT"
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%bConnection: close\r\n\r\n' "$1" "$2" >&3
  head -1 <&3 | tr -d '\r'
  exec 3<&-
}
echo "metrics-no-token $(req /metrics '')"
echo "metrics-token $(req /metrics "Authorization: Bearer $(cat "$D/addr.token")\r\n")"
echo "healthz $(req /healthz '')"
kill -TERM $PID
for i in $(seq 200); do kill -0 $PID 2>/dev/null || break; sleep 0.05; done
if [ -e "$D/addr.token" ]; then echo "token-file kept"; else echo "token-file removed"; fi
"#;

#[test]
fn off_loopback_metrics_need_the_token_and_the_token_file_goes_with_serve() {
    let out = common::in_netns(OFF_LOOPBACK, &[]);
    let line = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(k).map(str::trim))
            .unwrap_or_else(|| panic!("no `{k}` in {out}"))
            .to_string()
    };
    assert!(line("metrics-no-token").contains(" 401 "), "{out}");
    assert!(line("metrics-token").contains(" 200 "), "{out}");
    assert!(line("healthz").contains(" 200 "), "{out}");
    assert_eq!(line("token-file"), "removed", "{out}");
}

/// bench hands RTCHECK_CONTROL_TOKEN to its serve child through the environment: the
/// token is on no child's command line (serve and the load generator).
#[test]
fn bench_passes_the_control_token_by_environment_only() {
    let mut child = Command::new(common::binary())
        .args(["bench", "fanout", "--scenario", "A", "--connections", "5"])
        .args(["--rounds", "3000", "--rate", "10"])
        .env("RTCHECK_CONTROL_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let kids = common::procs::wait_children(&mut child, 2, Duration::from_secs(60));
    for &k in &kids {
        // Waits for the exec: a read before it sees the parent's command line, or none.
        let cmdline = common::procs::exec_cmdline(k, child.id(), Duration::from_secs(60))
            .unwrap_or_else(|| panic!("child {k}: no command line after its exec"));
        assert!(
            cmdline.contains(" serve ") || cmdline.contains(" loadgen "),
            "{cmdline}"
        );
        assert!(!cmdline.contains(TOKEN), "token on argv: {cmdline}");
    }
    let out = common::procs::sigint(child, false, Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains(TOKEN), "{err}");
    assert!(!err.contains("401"), "the token reached the server: {err}");
}

/// Runs `child` to its end, reading the command line of each of its children meanwhile:
/// (its output, the command lines seen). stdout and stderr are read on threads (a full
/// pipe must not stall the run).
fn run_watching_children(mut child: std::process::Child, limit: Duration) -> (Output, Vec<String>) {
    let pipe = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out_t = pipe(child.stdout.take().map(|r| Box::new(r) as _));
    let err_t = pipe(child.stderr.take().map(|r| Box::new(r) as _));
    let mut seen = std::collections::BTreeSet::new();
    let parent = common::procs::cmdline(child.id());
    let t0 = Instant::now();
    let status = loop {
        for k in common::procs::children_of(child.id()) {
            // Before its exec is done a child shows the parent's command line (or none):
            // only what it shows after counts, and every distinct one is kept.
            match common::procs::cmdline(k) {
                Some(c) if Some(&c) != parent.as_ref() => {
                    seen.insert((k, c));
                }
                _ => {}
            }
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (stdout, stderr) = (out_t.join().unwrap(), err_t.join().unwrap());
    let out = Output {
        status,
        stdout,
        stderr,
    };
    (out, seen.into_iter().map(|(_, c)| c).collect())
}

/// bench cluster on a Redis with a password: its serve nodes get the URL through
/// RTCHECK_REDIS_URL, not argv (any local user reads /proc/PID/cmdline), and they do join
/// (the run measures), so the URL did reach them.
#[cfg(feature = "redis")]
#[test]
fn bench_cluster_passes_the_redis_password_by_environment_only() {
    let (_redis, port) = redis_with_password();
    let url = format!("redis://:{PASSWORD}@127.0.0.1:{port}/");
    let child = Command::new(common::binary())
        .args([
            "bench",
            "cluster",
            "--redis",
            &url,
            "--scenario",
            "one-path",
        ])
        .args(["--nodes", "2", "--connections", "4", "--rounds", "20"])
        .args(["--rate", "20", "--drain", "2s", "--format", "json"])
        .env_remove("RTCHECK_REDIS_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out, cmdlines) = run_watching_children(child, Duration::from_secs(180));
    let serves: Vec<_> = cmdlines.iter().filter(|c| c.contains(" serve ")).collect();
    assert!(serves.len() >= 2, "serve nodes not seen: {cmdlines:?}");
    for c in &serves {
        assert!(!c.contains(PASSWORD), "password on argv: {c}");
        assert!(!c.contains("--redis "), "URL on argv: {c}");
    }
    let stdout = clean("bench cluster", &out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}\n{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let row = &v["scenarios"][0];
    assert_eq!(row["name"], "one-path", "{v:#}");
    assert!(row["received"].as_u64().unwrap() > 0, "{row:#}");
}

/// bench fanout --server with a query secret: the load generator gets the URL through
/// RTCHECK_LOADGEN_URL, not argv, and still connects every client.
#[test]
fn bench_fanout_passes_the_server_url_by_environment_only() {
    let srv = Server::start(&["--wait-start", "--rounds", "5", "--rate", "20"]);
    let url = format!("ws://{}/ws?k={QUERY}", srv.addr);
    let child = Command::new(common::binary())
        .args(["bench", "fanout", "--server", &url, "--connections", "3"])
        .args(["--rounds", "5", "--rate", "20", "--drain", "1s"])
        .args(["--format", "json"])
        .env_remove("RTCHECK_LOADGEN_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out, cmdlines) = run_watching_children(child, Duration::from_secs(120));
    let loadgens: Vec<_> = cmdlines
        .iter()
        .filter(|c| c.contains(" loadgen "))
        .collect();
    assert_eq!(loadgens.len(), 1, "load generator not seen: {cmdlines:?}");
    for c in &loadgens {
        assert!(!c.contains(QUERY), "query secret on argv: {c}");
        assert!(!c.contains("--url"), "URL on argv: {c}");
    }
    let stdout = clean("bench fanout", &out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}\n{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let row = &v["scenarios"][0];
    assert_eq!(row["valid"], true, "{row:#}");
    assert_eq!(row["rounds_completed"], 5, "{row:#}");
    assert_eq!(row["accounting"]["received"], 15, "{row:#}");
}
