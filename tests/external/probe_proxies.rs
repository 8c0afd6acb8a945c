//! `rtcheck probe` against real nginx, HAProxy and Caddy in front of `rtcheck serve`:
//! each mistaken config is told from its correct one check by check, and the correct
//! ones pass. Two backends behind every proxy: a busy one (events at 5/s, for delivery
//! and resume) under /busy/ and a quiet one (no events, a heartbeat every 4 s, for the
//! idle test) under /quiet/. Mistaken timeouts are 3 s, so a 6 s idle test shows them
//! and still sees the 4 s heartbeat with 2 s to spare.
use crate::probe_common;
use probe_common::*;

/// The two backends every proxy forwards to.
struct Backends {
    busy: Serve,
    quiet: Serve,
}

fn backends() -> Backends {
    Backends {
        busy: Serve::start(&["--rate", "5", "--size", "256", "--ping", "2s"]),
        quiet: Serve::start(&["--wait-start", "--ping", "4s"]),
    }
}

fn fill(cfg: &str, b: &Backends) -> String {
    cfg.replace("{BUSY}", &b.busy.addr.to_string())
        .replace("{QUIET}", &b.quiet.addr.to_string())
}

const NGINX_HEAD: &str = "daemon off;
master_process off;
worker_processes 1;
pid {DIR}/nginx.pid;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path {DIR}/body; proxy_temp_path {DIR}/proxy;
  fastcgi_temp_path {DIR}/fcgi; uwsgi_temp_path {DIR}/uwsgi; scgi_temp_path {DIR}/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
";

/// The common mistakes: no Upgrade headers (HTTP/1.0 upstream), buffering on for a
/// backend whose X-Accel-Buffering is ignored, a 3 s read timeout.
pub const NGINX_MISTAKEN: &str = "  server {
    listen 127.0.0.1:{PORT};
    location /busy/ {
      proxy_pass http://{BUSY}/;
      proxy_ignore_headers X-Accel-Buffering;
      proxy_read_timeout 3s;
    }
    location /quiet/ {
      proxy_pass http://{QUIET}/;
      proxy_ignore_headers X-Accel-Buffering;
      proxy_read_timeout 3s;
    }
  }
}
";

pub const NGINX_CORRECT: &str = "  server {
    listen 127.0.0.1:{PORT};
    location /busy/ {
      proxy_pass http://{BUSY}/;
      proxy_ignore_headers X-Accel-Buffering;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_buffering off;
      proxy_read_timeout 3600s;
    }
    location /quiet/ {
      proxy_pass http://{QUIET}/;
      proxy_ignore_headers X-Accel-Buffering;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_buffering off;
      proxy_read_timeout 3600s;
    }
  }
}
";

const HAPROXY_HEAD: &str = "global
  maxconn 256
defaults
  mode http
  timeout connect 5s
  timeout client 30s
";

/// The common mistakes: a short `timeout server`, no `timeout tunnel`.
pub const HAPROXY_MISTAKEN: &str = "  timeout server 3s
";

pub const HAPROXY_CORRECT: &str = "  timeout server 30s
  timeout tunnel 1h
";

const HAPROXY_TAIL: &str = "frontend fe
  bind 127.0.0.1:{PORT}
  use_backend quiet if { path_beg /quiet/ }
  default_backend busy
backend busy
  http-request replace-path /busy(/.*) \\1
  server s1 {BUSY}
backend quiet
  http-request replace-path /quiet(/.*) \\1
  server s1 {QUIET}
";

pub const CADDY_DEFAULT: &str = "{
  admin off
  auto_https off
  storage file_system {DIR}/caddy
}
http://127.0.0.1:{PORT} {
  bind 127.0.0.1
  handle_path /busy/* {
    reverse_proxy {BUSY}
  }
  handle_path /quiet/* {
    reverse_proxy {QUIET}
  }
}
";

/// Delivery checks (quick) on /busy/ and the idle test on /quiet/.
struct Run {
    busy: serde_json::Value,
    quiet: serde_json::Value,
}

fn probe(args: &[&str]) -> serde_json::Value {
    let (r, _, err) = probe_json(args);
    assert!(!err.contains("error"), "{err}");
    r
}

/// The idle test on /quiet/ (6 s, mostly waiting).
fn probe_quiet(p: &Proxy) -> serde_json::Value {
    let (ws, sse) = (p.url("ws", "/quiet/ws"), p.url("http", "/quiet/sse"));
    probe(&["--idle-for", "6s", "--public", &ws, &sse])
}

/// The delivery checks (quick) on /busy/, sse-buffering among them: its verdict is
/// judged on timing (how soon each event arrives), so no two of these run at once.
fn probe_busy(p: &Proxy) -> serde_json::Value {
    let (ws, sse) = (p.url("ws", "/busy/ws"), p.url("http", "/busy/sse"));
    probe(&["--quick", "--public", &ws, &sse])
}

/// Both probes of one proxy: the idle test (it only waits) beside the busy checks.
fn probe_both(p: &Proxy) -> Run {
    std::thread::scope(|sc| {
        let quiet = sc.spawn(|| probe_quiet(p));
        let busy = probe_busy(p);
        Run {
            busy,
            quiet: quiet.join().unwrap(),
        }
    })
}

/// The mistaken and the correct proxy. The two idle tests wait beside the rest; the two
/// busy probes (sse-buffering is timed, and the correct proxy must pass it) go one after
/// the other, never at once, so a loaded host does not turn their timing into a verdict.
fn probe_pair(bad: &Proxy, good: &Proxy) -> (Run, Run) {
    std::thread::scope(|sc| {
        let bq = sc.spawn(|| probe_quiet(bad));
        let gq = sc.spawn(|| probe_quiet(good));
        let busy_bad = probe_busy(bad);
        let busy_good = probe_busy(good);
        (
            Run {
                busy: busy_bad,
                quiet: bq.join().unwrap(),
            },
            Run {
                busy: busy_good,
                quiet: gq.join().unwrap(),
            },
        )
    })
}

fn all_pass_or_skip(r: &serde_json::Value) -> bool {
    r["summary"]["fail"] == 0 && r["summary"]["warn"] == 0
}

#[test]
fn nginx_mistaken_and_correct_differ_check_by_check() {
    let b = backends();
    let bad = Proxy::start(
        Kind::Nginx,
        &fill(&format!("{NGINX_HEAD}{NGINX_MISTAKEN}"), &b),
    );
    let good = Proxy::start(
        Kind::Nginx,
        &fill(&format!("{NGINX_HEAD}{NGINX_CORRECT}"), &b),
    );
    let ports = [bad.port, good.port];
    let (bad, good) = {
        let r = probe_pair(&bad, &good);
        drop((bad, good));
        r
    };
    // Stopped means stopped: nothing of theirs still listens (a master-process nginx
    // killed by SIGKILL would leave its workers listening).
    for p in ports {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", p)).is_err(),
            "nginx on {p} still answers after being stopped"
        );
    }
    let ctx = format!(
        "mistaken busy:\n{}\nmistaken quiet:\n{}\ncorrect busy:\n{}\ncorrect quiet:\n{}",
        summary(&bad.busy),
        summary(&bad.quiet),
        summary(&good.busy),
        summary(&good.quiet)
    );
    // Mistaken: each mistake shows in its own check.
    assert_eq!(status(&bad.busy, "upgrade", "/busy/ws"), "fail", "{ctx}");
    assert_eq!(
        status(&bad.busy, "sse-buffering", "/busy/sse"),
        "fail",
        "{ctx}"
    );
    assert_eq!(
        status(&bad.quiet, "idle-timeout", "/quiet/sse"),
        "fail",
        "{ctx}"
    );
    assert_eq!(
        status(&bad.quiet, "heartbeat", "/quiet/sse"),
        "fail",
        "{ctx}"
    );
    // Correct: the same checks pass.
    assert_eq!(status(&good.busy, "upgrade", "/busy/ws"), "pass", "{ctx}");
    assert_eq!(
        status(&good.busy, "sse-buffering", "/busy/sse"),
        "pass",
        "{ctx}"
    );
    for url in ["/quiet/ws", "/quiet/sse"] {
        assert_eq!(status(&good.quiet, "idle-timeout", url), "pass", "{ctx}");
        assert_eq!(status(&good.quiet, "heartbeat", url), "pass", "{ctx}");
    }
    assert!(
        all_pass_or_skip(&good.busy) && all_pass_or_skip(&good.quiet),
        "{ctx}"
    );
    // The fix is nginx's own language, and the report says which proxy it found.
    let fixes = bad.busy.to_string();
    assert!(fixes.contains("proxy_set_header Upgrade"), "{fixes}");
    assert!(fixes.contains("proxy_buffering off"), "{fixes}");
    assert!(bad.quiet.to_string().contains("proxy_read_timeout"));
    let rule = bad.busy["findings"][0]["rule"].as_str().unwrap();
    assert!(rule.contains("(path: nginx)"), "{rule}");
}

#[test]
fn haproxy_mistaken_and_correct_differ_check_by_check() {
    let b = backends();
    let bad = Proxy::start(
        Kind::Haproxy,
        &fill(
            &format!("{HAPROXY_HEAD}{HAPROXY_MISTAKEN}{HAPROXY_TAIL}"),
            &b,
        ),
    );
    let good = Proxy::start(
        Kind::Haproxy,
        &fill(
            &format!("{HAPROXY_HEAD}{HAPROXY_CORRECT}{HAPROXY_TAIL}"),
            &b,
        ),
    );
    let (bad, good) = probe_pair(&bad, &good);
    let ctx = format!(
        "mistaken quiet:\n{}\ncorrect busy:\n{}\ncorrect quiet:\n{}",
        summary(&bad.quiet),
        summary(&good.busy),
        summary(&good.quiet)
    );
    for url in ["/quiet/ws", "/quiet/sse"] {
        assert_eq!(status(&bad.quiet, "idle-timeout", url), "fail", "{ctx}");
        assert_eq!(status(&bad.quiet, "heartbeat", url), "fail", "{ctx}");
        assert_eq!(status(&good.quiet, "idle-timeout", url), "pass", "{ctx}");
        assert_eq!(status(&good.quiet, "heartbeat", url), "pass", "{ctx}");
    }
    // HAProxy sends no Server/Via: the fix lists every proxy's lines, HAProxy's included.
    let fixes = bad.quiet.to_string();
    assert!(
        fixes.contains("timeout tunnel 1h") && fixes.contains("proxy_read_timeout"),
        "{fixes}"
    );
    // HAProxy upgrades and streams by itself: those pass in both.
    for r in [&bad.busy, &good.busy] {
        assert_eq!(status(r, "upgrade", "/busy/ws"), "pass", "{ctx}");
        assert_eq!(status(r, "sse-buffering", "/busy/sse"), "pass", "{ctx}");
    }
    assert!(
        all_pass_or_skip(&good.busy) && all_pass_or_skip(&good.quiet),
        "{ctx}"
    );
}

#[test]
fn caddy_default_reverse_proxy_passes() {
    let b = backends();
    let caddy = Proxy::start(Kind::Caddy, &fill(CADDY_DEFAULT, &b));
    let r = probe_both(&caddy);
    let ctx = format!("busy:\n{}\nquiet:\n{}", summary(&r.busy), summary(&r.quiet));
    assert_eq!(status(&r.busy, "upgrade", "/busy/ws"), "pass", "{ctx}");
    assert_eq!(
        status(&r.busy, "sse-buffering", "/busy/sse"),
        "pass",
        "{ctx}"
    );
    assert_eq!(status(&r.busy, "resume", "/busy/sse"), "pass", "{ctx}");
    assert_eq!(
        status(&r.quiet, "idle-timeout", "/quiet/sse"),
        "pass",
        "{ctx}"
    );
    assert!(
        all_pass_or_skip(&r.busy) && all_pass_or_skip(&r.quiet),
        "{ctx}"
    );
    // Caddy names itself (Server: Caddy), and the report says which proxy it found.
    let rule = r.busy["findings"][0]["rule"].as_str().unwrap();
    assert!(rule.contains("(path: Caddy)"), "{rule}");
}

/// `encode gzip` on the stream's route: Caddy compresses text/event-stream and holds the
/// events in its compressor; the probe decodes the stream and blames the compression.
pub const CADDY_ENCODE: &str = "{
  admin off
  auto_https off
  storage file_system {DIR}/caddy
}
http://127.0.0.1:{PORT} {
  bind 127.0.0.1
  encode gzip
  handle_path /busy/* {
    reverse_proxy {BUSY}
  }
}
";

#[test]
fn caddy_encode_gzip_on_the_stream_is_blamed_on_compression() {
    let b = backends();
    let caddy = Proxy::start(Kind::Caddy, &fill(CADDY_ENCODE, &b));
    let (r, code, _) = probe_json(&[
        "--quick",
        "--timeout",
        "4s",
        &caddy.url("http", "/busy/sse"),
    ]);
    let ctx = summary(&r);
    assert_eq!(code, 1, "{ctx}");
    assert_eq!(status(&r, "compression", "/busy/sse"), "fail", "{ctx}");
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "compression")
        .unwrap();
    assert!(
        f["observed"]
            .as_str()
            .unwrap()
            .contains("Content-Encoding gzip"),
        "{f}"
    );
    let fix = f["fix"].to_string();
    assert!(fix.contains("encode") && !fix.contains("nginx"), "{fix}");
    // Caddy compresses what starts with a large write (the replay after a reconnect):
    // the stuck replay is the compressor's, never the server's resume.
    assert_ne!(status(&r, "resume", "/busy/sse"), "fail", "{ctx}");
    if f["observed"]
        .as_str()
        .unwrap()
        .contains("reconnect: Content-Encoding gzip, no event")
    {
        let resume = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "resume")
            .unwrap();
        assert!(
            resume["reason"].as_str().unwrap().contains("compression"),
            "{ctx}"
        );
    }
}

/// `gzip on` for the event stream with buffering off: nginx compresses and flushes each
/// event (events keep their cadence): a compression warning with it, not buffering.
pub const NGINX_GZIP_FLUSHED: &str = "  server {
    listen 127.0.0.1:{PORT};
    location /busy/ {
      proxy_pass http://{BUSY}/;
      proxy_http_version 1.1;
      proxy_buffering off;
      gzip on;
      gzip_min_length 1;
      gzip_types text/event-stream;
    }
  }
}
";

#[test]
fn nginx_gzip_flushed_is_a_compression_warning_with_its_cadence() {
    let b = backends();
    let nginx = Proxy::start(
        Kind::Nginx,
        &fill(&format!("{NGINX_HEAD}{NGINX_GZIP_FLUSHED}"), &b),
    );
    let (r, _, _) = probe_json(&["--quick", &nginx.url("http", "/busy/sse")]);
    let ctx = summary(&r);
    assert_eq!(status(&r, "sse-buffering", "/busy/sse"), "pass", "{ctx}");
    assert_eq!(status(&r, "resume", "/busy/sse"), "pass", "{ctx}");
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "compression")
        .unwrap();
    assert_eq!(f["status"], "warn", "{ctx}");
    // serve --rate 5: an event every 0.2 s, decoded as it came.
    let cadence = f["numbers"]["cadence_s"].as_f64().unwrap();
    assert!((0.1..=0.5).contains(&cadence), "{cadence}\n{ctx}");
    assert!(f["fix"].to_string().contains("gzip off"), "{f}");
}

/// nginx's defaults in front of a slow stream (an event of ~100 B a second): it holds the
/// response head with the body until its output fills (the issue measured ~100 s).
pub const NGINX_DEFAULT_SLOW: &str = "  server {
    listen 127.0.0.1:{PORT};
    location /slow/ {
      proxy_pass http://{SLOW}/;
      proxy_ignore_headers X-Accel-Buffering;
    }
  }
}
";

#[test]
fn nginx_defaults_hold_a_slow_streams_head_and_that_is_buffering() {
    let slow = Serve::start(&["--rate", "1", "--size", "32"]);
    let cfg = format!("{NGINX_HEAD}{NGINX_DEFAULT_SLOW}").replace("{SLOW}", &slow.addr.to_string());
    let nginx = Proxy::start(Kind::Nginx, &cfg);
    let direct = format!("http://{}/sse", slow.addr);
    let (r, code, err) = probe_json(&[
        "--quick",
        "--head-timeout",
        "3s",
        "--direct",
        &direct,
        &nginx.url("http", "/slow/sse"),
    ]);
    let ctx = summary(&r);
    assert_eq!(code, 1, "{ctx}\n{err}");
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "sse-buffering")
        .unwrap();
    assert_eq!(f["status"], "fail", "{ctx}");
    let o = f["observed"].as_str().unwrap();
    assert!(o.contains("head held more than 3.0 s by the path"), "{o}");
    // The server itself answers at once: the path is to blame.
    assert!(o.contains("direct: head after 0.0 s"), "{o}");
    assert!(f["fix"].to_string().contains("proxy_buffering off"), "{f}");
}
