//! probe with a declared path against real proxies (issue 24): nginx (SSE) and HAProxy
//! (WebSocket) started on 127.0.0.1 with their idle timeouts scaled down to 4 s (nginx's
//! documented 60 s `proxy_read_timeout`; HAProxy has no default, so 4 s is its configured
//! `timeout tunnel`), the same rule as tests/external/hops_live.rs, declared to probe with
//! `--override HOP.idle=4s`. Behind each proxy two quiet `rtcheck serve`s: one whose
//! heartbeat is below the chain's maximum (2 s: half the 4 s limit) is held open for the
//! whole idle test and passes `path-idle`; one whose heartbeat (6 s) is above the limit is
//! cut near 4 s, and `path-idle` names the hop and its setting. The JSON report is read back.
use crate::probe_common;
use probe_common::*;
use serde_json::Value;

const IDLE_S: u64 = 4;

fn backends() -> (Serve, Serve) {
    // The chain's maximum for a 4 s idle limit is 2 s: 1 s is below it, 6 s above the limit.
    (
        Serve::start(&["--wait-start", "--ping", "1s"]),
        Serve::start(&["--wait-start", "--ping", &format!("{}s", IDLE_S + 2)]),
    )
}

fn find<'a>(r: &'a Value, id: &str, url_part: &str) -> &'a Value {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id && f["title"].as_str().unwrap().contains(url_part))
        .unwrap_or_else(|| panic!("no {id} for {url_part}:\n{}", summary(r)))
}

/// The run over both URLs, and the checks every proxy must pass the same way.
fn probe_both(hop: &str, below: &str, above: &str) -> Value {
    let over = format!("{hop}.idle={IDLE_S}s");
    // 3 x the idle limit: the held connection outlives the limit by far.
    let idle_for = format!("{}s", IDLE_S * 3);
    let args = [
        "--path",
        hop,
        "--override",
        &over,
        "--idle-for",
        &idle_for,
        below,
        above,
    ];
    let (r, code, stderr) = probe_json(&args);
    assert_eq!(
        code,
        1,
        "the cut URL fails the run: {stderr}\n{}",
        summary(&r)
    );
    let s = summary(&r);
    // Below the maximum: open for the whole test, within the chain's maximum.
    assert_eq!(status(&r, "idle-timeout", "/below/"), "pass", "{s}");
    let ok = find(&r, "path-idle", "/below/");
    assert_eq!(ok["status"], "pass", "{s}");
    assert_eq!(ok["numbers"]["heartbeat_max_s"], 2.0, "{ok:#}");
    assert!(
        ok["numbers"]["interval_s"].as_f64().unwrap() <= 2.0,
        "{ok:#}"
    );
    // Above it: cut near the 4 s limit, and the cut names the hop.
    assert_eq!(status(&r, "idle-timeout", "/above/"), "fail", "{s}");
    let cut = find(&r, "path-idle", "/above/");
    assert_eq!(cut["status"], "fail", "{s}");
    let silence = cut["numbers"]["silence_s"].as_f64().unwrap();
    assert!(
        (IDLE_S as f64 - 0.5..IDLE_S as f64 * 2.0).contains(&silence),
        "cut after {silence} s of silence, expected near {IDLE_S} s: {cut:#}"
    );
    let observed = cut["observed"].as_str().unwrap();
    assert!(
        observed.contains(&format!("declared {IDLE_S} s")),
        "{observed}"
    );
    assert_eq!(find(&r, "path-hops", "/below/")["status"], "pass", "{s}");
    r
}

fn fix_lines(f: &Value) -> String {
    f["fix"]["persistent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn nginx_sse_cut_names_proxy_read_timeout_and_a_fast_heartbeat_passes() {
    let (below, above) = backends();
    let cfg = "daemon off;
master_process off;
worker_processes 1;
pid {DIR}/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path {DIR}/body; proxy_temp_path {DIR}/proxy;
  fastcgi_temp_path {DIR}/fcgi; uwsgi_temp_path {DIR}/uwsgi; scgi_temp_path {DIR}/scgi;
  server {
    listen 127.0.0.1:{PORT};
    proxy_http_version 1.1;
    proxy_buffering off;
    proxy_read_timeout 4s;
    location /below/ { proxy_pass http://{BELOW}/; }
    location /above/ { proxy_pass http://{ABOVE}/; }
  }
}
"
    .replace("{BELOW}", &below.addr.to_string())
    .replace("{ABOVE}", &above.addr.to_string());
    let p = Proxy::start(Kind::Nginx, &cfg);
    let r = probe_both(
        "nginx",
        &p.url("http", "/below/sse"),
        &p.url("http", "/above/sse"),
    );
    let cut = find(&r, "path-idle", "/above/");
    let observed = cut["observed"].as_str().unwrap();
    assert!(
        observed.contains("NGINX (reverse proxy) idle limit"),
        "{observed}"
    );
    // The cut is blamed on a hop the headers showed, and says so.
    assert!(
        observed.contains("nginx seen on the path (Server / Via: nginx)"),
        "{observed}"
    );
    let lines = fix_lines(cut);
    assert!(lines.contains("nginx: proxy_read_timeout"), "{lines}");
    assert!(lines.contains("every 2 s or less"), "{lines}");
    // nginx names itself (Server): seen and declared.
    let hops = find(&r, "path-hops", "/below/");
    assert!(
        hops["observed"].as_str().unwrap().contains("seen nginx"),
        "{hops:#}"
    );
}

#[test]
fn haproxy_websocket_cut_names_timeout_tunnel_and_a_fast_heartbeat_passes() {
    let (below, above) = backends();
    let cfg = "global
  maxconn 64
defaults
  mode http
  timeout connect 5s
  timeout client 4s
  timeout server 4s
  timeout tunnel 4s
frontend fe
  bind 127.0.0.1:{PORT}
  use_backend below if { path_beg /below/ }
  default_backend above
backend below
  http-request replace-path /below(/.*) \\1
  server s1 {BELOW}
backend above
  http-request replace-path /above(/.*) \\1
  server s1 {ABOVE}
"
    .replace("{BELOW}", &below.addr.to_string())
    .replace("{ABOVE}", &above.addr.to_string());
    let p = Proxy::start(Kind::Haproxy, &cfg);
    let r = probe_both(
        "haproxy",
        &p.url("ws", "/below/ws"),
        &p.url("ws", "/above/ws"),
    );
    let cut = find(&r, "path-idle", "/above/");
    let observed = cut["observed"].as_str().unwrap();
    assert!(observed.contains("HAProxy idle limit"), "{observed}");
    assert!(observed.contains("no documented default"), "{observed}");
    let lines = fix_lines(cut);
    assert!(lines.contains("haproxy: timeout tunnel"), "{lines}");
    // HAProxy names itself nowhere: the declared path gives idle-timeout HAProxy's fix,
    // not the lines for every proxy.
    let idle = find(&r, "idle-timeout", "/above/");
    let first = idle["fix"]["persistent"][0].as_str().unwrap();
    assert!(first.starts_with("haproxy"), "{idle:#}");
    // HAProxy adds no header of its own: declared, not visible, not a contradiction.
    let hops = find(&r, "path-hops", "/below/");
    assert!(
        hops["observed"]
            .as_str()
            .unwrap()
            .contains("not visible in headers"),
        "{hops:#}"
    );
}
