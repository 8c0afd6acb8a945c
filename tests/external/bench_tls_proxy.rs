//! Measuring a server through its TLS proxy (issue 26): nginx with `listen ... ssl` on
//! 127.0.0.1, a certificate for the made-up name `hub.test` from a throwaway CA (the
//! openssl CLI, in a temp dir), proxying to the node `ws` broadcast hub and the express
//! SSE app (tests/fixtures/foreign/). rtcheck is pointed at `wss://hub.test:PORT/ws` /
//! `https://hub.test:PORT/...` with `--connect-to 127.0.0.1:PORT`: the URL's name goes in
//! SNI, the certificate check and the Host header (nginx logs what it got), the socket to
//! loopback. Counts are read back from the JSON and from the fixtures' own /stats.
use crate::common;
use crate::foreign_common;
// (Its re-export of the serve helper is for the probe tests.)
#[allow(unused_imports)]
use crate::probe_common;
use foreign_common::*;
use probe_common::{make_certs_for, Kind, Proxy};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

const NAME: &str = "hub.test";
const CHAT: &str = r#"{"type":"msg","text":"{seq} {ts} {pad}"}"#;

/// nginx on TLS for `hub.test` in front of `backend`: WebSocket upgrade headers, no
/// buffering (SSE), and an access log of the Host header each request came with.
fn tls_proxy(certs: &Path, backend: SocketAddr) -> Proxy {
    let c = certs.display();
    let cfg = format!(
        "{NGINX_HEAD}  log_format hosts '$http_host $status';\n  server {{\n    \
         listen 127.0.0.1:{{PORT}} ssl;\n    ssl_certificate {c}/leaf.pem;\n    \
         ssl_certificate_key {c}/leaf.key;\n    access_log {{DIR}}/hosts.log hosts;\n    \
         location / {{\n      proxy_pass http://{backend};\n{NGINX_WS}      \
         proxy_buffering off;\n    }}\n  }}\n}}\n"
    );
    Proxy::start(Kind::Nginx, &cfg)
}

/// nginx's access log once it has `n` lines that `want` (or what it has after 30 s):
/// nginx writes a line when a request ends, and a WebSocket's or a stream's ends with
/// the connection, asynchronously.
fn log_with(proxy: &Proxy, n: usize, want: impl Fn(&str) -> bool) -> String {
    let path = proxy.dir().join("hosts.log");
    let read = || std::fs::read_to_string(&path).unwrap_or_default();
    let t0 = std::time::Instant::now();
    while read().lines().filter(|l| want(l)).count() < n && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    read()
}

fn certs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    make_certs_for(dir.path(), NAME, &format!("DNS:{NAME}"));
    dir
}

/// `rtcheck ARGS`: (exit code, stdout, stderr).
fn rtcheck(args: &[&str]) -> (Option<i32>, String, String) {
    let out = common::rtcheck()
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fanout_args<'a>(url: &'a str, to: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["bench", "fanout", "--server", url, "--connect-to", to];
    v.extend(["--format", "json", "--drain", "2s", "--connections", "50"]);
    v.extend(["--rate", "20", "--rounds", "20", "--scenario", "A"]);
    v.extend(["--publish", "ws", "--message", CHAT]);
    v.extend(["--seq-path", "text", "--ts-path", "text", "--size", "256"]);
    v.extend(extra);
    v
}

/// `verify delivery` against a foreign server through the proxy, small: `extra` adds the
/// publisher, --ca and the rest.
fn delivery_args<'a>(server: &'a str, to: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["verify", "delivery", "--server", server, "--connect-to", to];
    v.extend(["--rate", "20", "--size", "256", "--connections", "4"]);
    v.extend(["--max-disconnect", "1500ms"]);
    v.extend(extra);
    v
}

/// The foreign run of disconnect kind `kind` in a verify delivery JSON report.
fn foreign_run<'a>(r: &'a Value, kind: &str) -> &'a Value {
    let runs = r["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("no runs: {r:#}"));
    runs.iter()
        .find(|x| x["delivery"] == "foreign" && x["disconnect"] == kind)
        .unwrap_or_else(|| panic!("no run {kind}: {r:#}"))
}

#[test]
fn bench_fanout_through_a_tls_proxy_counts_every_round() {
    let _timed = common::timed();
    let hub = node_ws(&[]);
    let certs = certs();
    let proxy = tls_proxy(certs.path(), hub.addr());
    let url = format!("wss://{NAME}:{}/ws", proxy.port);
    let to = format!("127.0.0.1:{}", proxy.port);
    let ca = certs.path().join("ca.pem");
    let ca = ca.to_str().unwrap();
    let (code, out, err) = rtcheck(&fanout_args(&url, &to, &["--ca", ca]));
    let r: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}); stderr: {err}"));
    let a = r["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "A")
        .unwrap_or_else(|| panic!("no run A: {r:#}"));
    assert_eq!(code, Some(0), "{a:#}\n{err}");
    assert_eq!(a["valid"], true, "{a:#}");
    // Every client received every round, through TLS both ways.
    assert_eq!(a["accounting"]["received"].as_u64(), Some(50 * 20), "{a:#}");
    assert_eq!(a["publisher"]["sent"].as_u64(), Some(20), "{a:#}");
    // The handshakes carried the URL's name, not the address the sockets went to. nginx
    // logs an upgraded connection when it ends, after rtcheck may have exited: wait.
    let log = log_with(&proxy, 51, |l| l.ends_with(" 101"));
    let upgrades: Vec<&str> = log.lines().filter(|l| l.ends_with(" 101")).collect();
    assert!(upgrades.len() >= 51, "{log}");
    let want = format!("{NAME}:{} 101", proxy.port);
    assert!(upgrades.iter().all(|l| *l == want), "{log}");
}

#[test]
fn an_untrusted_certificate_is_one_line_and_exit_2() {
    let _timed = common::timed();
    let hub = node_ws(&[]);
    let certs = certs();
    let proxy = tls_proxy(certs.path(), hub.addr());
    let url = format!("wss://{NAME}:{}/ws", proxy.port);
    let to = format!("127.0.0.1:{}", proxy.port);
    let (code, out, err) = rtcheck(&fanout_args(&url, &to, &[]));
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("certificate") && err.contains("--ca"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The name must match the certificate too: the same CA, another name, refused.
    let ca = certs.path().join("ca.pem");
    let other = format!("wss://other.test:{}/ws", proxy.port);
    let (code, _, err) = rtcheck(&fanout_args(&other, &to, &["--ca", ca.to_str().unwrap()]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("certificate"), "{err}");
}

#[test]
fn bad_reach_flags_are_exit_2_naming_what_is_wrong() {
    let _timed = common::timed();
    let dir = tempfile::tempdir().unwrap();
    let not_pem = dir.path().join("ca.pem");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    let url = "wss://hub.test/ws";
    for (ca, want) in [
        (not_pem.to_str().unwrap(), "no PEM certificate"),
        ("/dev/zero", "/dev/zero"),
        ("/nonexistent/ca.pem", "/nonexistent/ca.pem"),
    ] {
        let (code, _, err) = rtcheck(&fanout_args(url, "127.0.0.1:9", &["--ca", ca]));
        assert_eq!(code, Some(2), "{ca}: {err}");
        assert!(err.contains(want) && err.contains("--ca"), "{ca}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{ca}: {err}");
    }
    // Loopback only, whatever the name: the connect-to address, or the URL's own host.
    let (code, _, err) = rtcheck(&fanout_args(url, "10.0.0.5:443", &[]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not a loopback address"), "{err}");
    let mut args = fanout_args(url, "127.0.0.1:9", &[]);
    args.drain(4..6);
    let (code, _, err) = rtcheck(&args);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--connect-to 127.0.0.1:"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // Only where they mean something: a foreign --server.
    for args in [
        &["bench", "fanout", "--connect-to", "127.0.0.1:9"][..],
        &["verify", "memory", "--connect-to", "127.0.0.1:9"],
        &["verify", "delivery", "--ca", "/dev/null"],
    ] {
        let (code, _, err) = rtcheck(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("--connect-to and --ca"), "{args:?}: {err}");
    }
}

#[test]
fn what_would_be_dropped_or_go_elsewhere_is_refused_in_one_line() {
    let _timed = common::timed();
    let post_far = "POST http://10.0.0.1:9/p?token=s3cretvalue";
    let ws = "ws://127.0.0.1:9/ws";
    let userinfo = "ws://u:s3cretvalue@127.0.0.1:9/ws";
    // A short password too: clap's own echo of a refused --publish value is left out.
    let post_userinfo = "POST http://u:pw@127.0.0.1:9/p";
    let ca = ["--ca", "/dev/null"];
    let both = |extra: &[&'static str], want: &'static str| {
        let mut v = Vec::new();
        for cmd in [["bench", "fanout"], ["verify", "delivery"]] {
            let mut args = cmd.to_vec();
            args.extend(extra);
            v.push((args, want));
        }
        v
    };
    let mut cases = Vec::new();
    // A POST target's socket goes to loopback too (no server needed: refused first).
    cases.extend(both(
        &["--server", ws, "--publish", post_far],
        "not a loopback",
    ));
    // Credentials in a URL would be dropped silently: refused, never printed.
    cases.extend(both(
        &["--server", userinfo, "--publish", "ws"],
        "user:password@",
    ));
    cases.extend(both(
        &["--server", ws, "--publish", post_userinfo],
        "user:password@",
    ));
    // --ca means nothing without TLS; with an https:// POST target it is read.
    let plain = ["--server", ws, "--publish", "ws", ca[0], ca[1]];
    cases.extend(both(&plain, "--ca applies to wss:// and https://"));
    let https_post = [
        "--server",
        ws,
        "--publish",
        "POST https://127.0.0.1:9/p",
        ca[0],
        ca[1],
    ];
    cases.extend(both(&https_post, "--ca /dev/null"));
    // rtcheck's /control plane is loopback and plain: not through --connect-to.
    let control = [
        "bench",
        "fanout",
        "--server",
        "ws://hub.test/ws",
        "--connect-to",
        "127.0.0.1:9",
    ];
    cases.push((control.to_vec(), "loopback-only and plain"));
    for (args, want) in cases {
        let (code, out, err) = rtcheck(&args);
        assert_eq!(code, Some(2), "{args:?}: {out}\n{err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            !err.contains("s3cretvalue") && !err.contains(":pw@"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn an_untrusted_post_target_stops_the_run_before_it_starts() {
    let _timed = common::timed();
    let hub = node_ws(&[]);
    let certs = certs();
    let proxy = tls_proxy(certs.path(), hub.addr());
    let to = format!("127.0.0.1:{}", proxy.port);
    // The clients' server is trusted (--ca); the POST target on another name is not.
    let url = format!("wss://{NAME}:{}/ws", proxy.port);
    let ca = certs.path().join("ca.pem");
    let publish = format!("POST https://other.test:{}/publish", proxy.port);
    let mut args = fanout_args(&url, &to, &["--ca", ca.to_str().unwrap()]);
    let at = args.iter().position(|a| *a == "ws").unwrap();
    args[at] = &publish;
    let (code, out, err) = rtcheck(&args);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--publish POST") && err.contains("not for other.test"),
        "{err}"
    );
    // verify delivery checks it before the run too.
    let app = express_sse(&[]);
    let proxy = tls_proxy(certs.path(), app.addr());
    let to = format!("127.0.0.1:{}", proxy.port);
    let server = format!("https://{NAME}:{}/live-resume", proxy.port);
    let publish = format!("POST https://other.test:{}/publish", proxy.port);
    let extra = ["--publish", &publish, "--ca", ca.to_str().unwrap()];
    let (code, out, err) = rtcheck(&delivery_args(&server, &to, &extra));
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--publish POST") && err.contains("not for other.test"),
        "{err}"
    );
}

#[test]
fn verify_delivery_over_https_through_the_proxy_loses_nothing_silently() {
    let _timed = common::timed();
    let app = express_sse(&[]);
    let certs = certs();
    let proxy = tls_proxy(certs.path(), app.addr());
    let base = format!("https://{NAME}:{}", proxy.port);
    let to = format!("127.0.0.1:{}", proxy.port);
    let ca = certs.path().join("ca.pem");
    let (server, publish) = (
        format!("{base}/live-resume"),
        format!("POST {base}/publish"),
    );
    let extra = [
        "--publish",
        &publish,
        "--ca",
        ca.to_str().unwrap(),
        "--format",
        "json",
    ];
    let (code, out, err) = rtcheck(&delivery_args(&server, &to, &extra));
    assert_eq!(code, Some(0), "{out}\n{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    for k in ["clean", "reset", "silent", "storm"] {
        let x = foreign_run(&r, k);
        assert_eq!(x["lost_silently"].as_u64(), Some(0), "{x:#}");
        assert!(x["received"].as_u64().unwrap() > 0, "{x:#}");
    }
    assert_eq!(r["publisher"]["failed"], 0, "{r:#}");
    let s = fixture_stats(&app);
    assert_eq!(s["missed"].as_u64(), Some(0), "{s}");
    assert_eq!(s["resumed"].as_u64(), Some(16), "{s}");
    // Every request (the clients' GETs and the POSTs) carried the URL's name. A
    // streamed GET is logged when it ends, maybe after rtcheck exited: wait for them.
    let log = log_with(&proxy, 17, |_| true);
    let want = format!("{NAME}:{} ", proxy.port);
    assert!(log.lines().count() > 16, "{log}");
    assert!(log.lines().all(|l| l.starts_with(&want)), "{log}");
}

#[test]
fn verify_delivery_refuses_an_untrusted_certificate_in_one_line() {
    let _timed = common::timed();
    let app = express_sse(&[]);
    let certs = certs();
    let proxy = tls_proxy(certs.path(), app.addr());
    let base = format!("https://{NAME}:{}", proxy.port);
    let to = format!("127.0.0.1:{}", proxy.port);
    let (server, publish) = (
        format!("{base}/live-resume"),
        format!("POST {base}/publish"),
    );
    let (code, out, err) = rtcheck(&delivery_args(&server, &to, &["--publish", &publish]));
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("certificate") && err.contains("--ca"), "{err}");
}

#[test]
fn bench_fanout_sse_over_https_with_slow_clients_and_a_post_publisher() {
    let _timed = common::timed();
    let app = express_sse(&[]);
    let certs = certs();
    let proxy = tls_proxy(certs.path(), app.addr());
    let base = format!("https://{NAME}:{}", proxy.port);
    let to = format!("127.0.0.1:{}", proxy.port);
    let ca = certs.path().join("ca.pem");
    let (url, publish) = (format!("{base}/live"), format!("POST {base}/publish"));
    let mut args = vec!["bench", "fanout", "--server", &url, "--connect-to", &to];
    args.extend(["--ca", ca.to_str().unwrap(), "--transport", "sse"]);
    args.extend([
        "--publish",
        &publish,
        "--message",
        r#"{"ts":"{ts}","pad":"{pad}"}"#,
    ]);
    args.extend(["--ts-path", "ts", "--size", "256", "--format", "json"]);
    args.extend(["--drain", "2s", "--connections", "40", "--rate", "20"]);
    args.extend(["--rounds", "20", "--scenario", "C", "--slow", "5"]);
    let (code, out, err) = rtcheck(&args);
    let r: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}); stderr: {err}"));
    let by = |name: &str| {
        r["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no run {name}: {r:#}"))
            .clone()
    };
    let c = by("C");
    assert_eq!(
        (code, &c["valid"]),
        (Some(0), &Value::Bool(true)),
        "{c:#}\n{err}"
    );
    // The healthy clients (35) received every round.
    assert_eq!(c["accounting"]["received"].as_u64(), Some(35 * 20), "{c:#}");
    assert_eq!(c["publisher"]["failed"].as_u64(), Some(0), "{c:#}");
    // The slow clients too completed the TLS handshake (their small SO_RCVBUF set on
    // the TCP socket before connect), then never read.
    assert_eq!(c["slow_clients"].as_u64(), Some(5), "{c:#}");
    assert!(
        c["checks"].to_string().contains("40 of 40 connected"),
        "{c:#}"
    );
}

#[test]
fn verify_delivery_over_wss_resumes_by_message_through_the_proxy() {
    let _timed = common::timed();
    let app = node_ws(&[("RESUME", "1")]);
    let certs = certs();
    let proxy = tls_proxy(certs.path(), app.addr());
    let url = format!("wss://{NAME}:{}/ws", proxy.port);
    let to = format!("127.0.0.1:{}", proxy.port);
    let ca = certs.path().join("ca.pem");
    let extra = [
        "--ca",
        ca.to_str().unwrap(),
        "--publish",
        "ws",
        "--message",
        CHAT,
        "--seq-path",
        "text",
        "--ts-path",
        "text",
        "--resume",
        r#"message {"resume":{seq}}"#,
        "--format",
        "json",
    ];
    let (code, out, err) = rtcheck(&delivery_args(&url, &to, &extra));
    assert_eq!(code, Some(0), "{out}\n{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    // Every leave (close + close_notify + FIN, RST, silent, storm) over TLS, then back
    // with the resume message: nothing lost, and the hub replayed to each client.
    for k in ["clean", "reset", "silent", "storm"] {
        let x = foreign_run(&r, k);
        assert_eq!(x["lost"].as_u64(), Some(0), "{x:#}");
        assert!(x["received"].as_u64().unwrap() > 0, "{x:#}");
    }
    let s = fixture_stats(&app);
    assert_eq!(
        (s["resumed"].as_u64(), s["missed"].as_u64()),
        (Some(16), Some(0)),
        "{s}"
    );
}
