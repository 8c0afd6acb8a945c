//! `rtcheck probe` against servers the project did not write (tests/fixtures/foreign/:
//! Node `ws` and `express`, python3-websockets, starlette + uvicorn, a gorilla/websocket
//! hub), directly and behind nginx, HAProxy and Caddy in their common mistaken and
//! correct configs. Each fixture is built to a known truth (events every N ms, a
//! heartbeat every N ms, ids per connection or global), and the independent client
//! (observe.py) measures what really arrived through the path in the same run: every
//! test first checks that truth, then probe's verdict, and the layer its fix names.
//! Mistaken timeouts are 3 s and idle tests 5-6 s, so each test stays short.
use crate::common;
use crate::foreign_common;
use crate::probe_common;
use foreign_common::*;
use probe_common::{probe_json, summary, Kind, Proxy};
use serde_json::Value;

fn status_of(r: &Value, id: &str, url: &str) -> String {
    finding(r, id, url)["status"].as_str().unwrap().to_string()
}

fn observed_of(r: &Value, id: &str, url: &str) -> String {
    finding(r, id, url)["observed"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn nginx_proxy(locations: &str) -> Proxy {
    Proxy::start(Kind::Nginx, &nginx(locations))
}

// ---- the response head held by nginx's defaults ----

/// The nginx docs' minimal reverse proxy (`proxy_pass` alone: HTTP/1.0 upstream,
/// buffering on) in front of an express stream of one ~45 B event a second: the truth is
/// that no response head reaches a client for as long as we watch. That is buffering (a
/// fail naming nginx's proxy_buffering), not a runtime error, and the other URL of the
/// same run is reported in full.
#[test]
fn nginx_defaults_hold_the_head_of_a_slow_stream() {
    let app = express_sse(&[("EVENT_MS", "1000")]);
    let p = nginx_proxy(&format!(
        "    location /held/ {{\n      proxy_pass http://{a}/;\n    }}\n    location /ok/ {{\n      proxy_pass http://{a}/;\n{NGINX_WS}      proxy_buffering off;\n    }}\n",
        a = app.addr()
    ));
    let held = p.url("http", "/held/events");
    let ok = p.url("http", "/ok/events");
    let ((r, code, err), truth) = both(
        || probe_json(&["--quick", "--timeout", "5s", &held, &ok]),
        || observe_sse(&held, 5.0, None),
    );
    assert!(
        truth["head"].is_null(),
        "fixture truth: nginx was to hold the head: {truth}"
    );
    let ctx = format!("exit {code}, stderr {err}\n{}", summary(&r));
    assert_eq!(
        code, 1,
        "a held head is a finding (exit 1), not exit 2: {ctx}"
    );
    assert_eq!(status_of(&r, "sse-buffering", "/held/"), "fail", "{ctx}");
    let f = finding(&r, "sse-buffering", "/held/");
    assert!(
        f["observed"].as_str().unwrap().contains("head"),
        "says the head was held: {ctx}"
    );
    assert!(fix_text(f).contains("proxy_buffering off"), "{ctx}");
    // The other URL of the run: measured and reported.
    assert_eq!(status_of(&r, "sse-buffering", "/ok/"), "pass", "{ctx}");
}

// ---- compression ----

/// nginx `gzip on` for text/event-stream with `proxy_buffering off`: the truth (gzip
/// decoded by the independent client) is one event a second, flushed. That is a
/// compression warn with the measured cadence, not buffering, and resume still runs.
#[test]
fn nginx_gzip_on_a_flushed_stream_is_compression_not_buffering() {
    let app = express_sse(&[("EVENT_MS", "500")]);
    let p = nginx_proxy(&format!(
        "    gzip on;\n    gzip_types text/event-stream;\n    location / {{\n      proxy_pass http://{};\n{NGINX_WS}      proxy_buffering off;\n    }}\n",
        app.addr()
    ));
    let url = p.url("http", "/events-resume");
    let ((r, _, err), truth) = both(
        || probe_json(&["--quick", "--timeout", "5s", &url]),
        || observe_sse(&url, 4.0, None),
    );
    assert_eq!(
        truth["head"]["headers"]["content-encoding"], "gzip",
        "{truth}"
    );
    let at: Vec<f64> = truth["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["at_ms"].as_f64())
        .collect();
    assert!(at.len() >= 5, "fixture truth: events flushed: {truth}");
    assert!(
        max_gap(&at).unwrap() < 1500.0,
        "flushed every 0.5 s: {truth}"
    );
    let ctx = format!("stderr {err}\n{}", summary(&r));
    assert_eq!(status_of(&r, "compression", "/events"), "warn", "{ctx}");
    assert_ne!(status_of(&r, "sse-buffering", "/events"), "fail", "{ctx}");
    let fix = fix_text(finding(&r, "sse-buffering", "/events"));
    assert!(
        !fix.contains("proxy_buffering off") || status_of(&r, "sse-buffering", "/events") == "pass",
        "does not repeat proxy_buffering off, already set: {ctx}"
    );
    assert_eq!(status_of(&r, "resume", "/events"), "pass", "{ctx}");
}

/// Caddy `encode gzip` on the stream: the first connection's small flushes stay under
/// encode's minimum length and pass uncompressed, but the replay after a reconnect is
/// larger, gets gzipped and sticks (the truth, measured). Compression is checked on the
/// reconnect too, and the fix names Caddy's `encode`, not the server's resume.
#[test]
fn caddy_encode_gzip_stalls_the_replay_not_the_server() {
    let app = express_sse(&[("EVENT_MS", "500"), ("PAD", "200")]);
    let p = Proxy::start(
        Kind::Caddy,
        &caddy(&format!("  encode gzip\n  reverse_proxy {}\n", app.addr())),
    );
    let url = p.url("http", "/events-resume");
    let first = observe_sse(&url, 2.5, None);
    assert!(
        first["head"]["headers"]["content-encoding"].is_null(),
        "fixture truth: the first connection is not compressed: {first}"
    );
    let sent = first["events"][0]["id"].as_str().unwrap().to_string();
    let replay = observe_sse(&url, 3.0, Some(&sent));
    assert_eq!(
        replay["head"]["headers"]["content-encoding"], "gzip",
        "fixture truth: the replay is gzipped: {replay}"
    );
    assert!(
        replay["events"].as_array().unwrap().is_empty(),
        "fixture truth: the gzipped replay sticks: {replay}"
    );
    let (r, _, err) = probe_json(&["--quick", "--timeout", "4s", &url]);
    let ctx = format!("stderr {err}\n{}", summary(&r));
    assert_ne!(status_of(&r, "compression", "/events"), "pass", "{ctx}");
    assert!(
        fix_text(finding(&r, "compression", "/events")).contains("encode"),
        "{ctx}"
    );
    let resume = finding(&r, "resume", "/events");
    // Skipped ("held by compression on the path") blames nothing; a warn or fail must not
    // blame the server's ring.
    if resume["status"] != "pass" && resume["status"] != "skip" {
        assert!(
            !fix_text(resume).contains("ring"),
            "the stuck replay is Caddy's encode, not the server's resume: {ctx}"
        );
    }
}

// ---- WebSocket upgrades ----

/// nginx without the Upgrade lines in front of a `ws` server: the handshake reaches it
/// as plain HTTP (the truth: not 101), upgrade fails and its fix is nginx's Upgrade lines.
#[test]
fn nginx_without_upgrade_headers_fails_upgrade_naming_them() {
    let app = node_ws(&[("BROADCAST_MS", "500")]);
    let p = nginx_proxy(&format!(
        "    location /bad/ {{\n      proxy_pass http://{a}/;\n    }}\n    location /good/ {{\n      proxy_pass http://{a}/;\n{NGINX_WS}    }}\n",
        a = app.addr()
    ));
    let (bad, good) = (p.url("ws", "/bad/"), p.url("ws", "/good/"));
    let truth = observe_ws(&bad, 1.0, None);
    assert_ne!(truth["head"]["status"], 101, "fixture truth: {truth}");
    let good_truth = observe_ws(&good, 1.5, None);
    assert_eq!(good_truth["head"]["status"], 101, "{good_truth}");
    let (r, code, err) = probe_json(&["--quick", "--timeout", "3s", "--public", &bad, &good]);
    let ctx = format!("exit {code} stderr {err}\n{}", summary(&r));
    assert_eq!(status_of(&r, "upgrade", "/bad/"), "fail", "{ctx}");
    let fix = fix_text(finding(&r, "upgrade", "/bad/"));
    assert!(fix.contains("proxy_set_header Upgrade"), "{ctx}");
    assert!(fix.contains("proxy_http_version 1.1"), "{ctx}");
    assert_eq!(status_of(&r, "upgrade", "/good/"), "pass", "{ctx}");
}

/// nginx forwards Upgrade but not Host (its default `Host: $proxy_host`): gorilla's
/// default CheckOrigin refuses the browser's Origin with 403 (the truth, through the
/// proxy; 101 direct). Upgrade fails naming Host/Origin, not the Upgrade headers; with
/// --direct the report shows what differs. With `proxy_set_header Host $host`: 101.
#[test]
fn nginx_host_not_forwarded_is_blamed_on_host_not_upgrade() {
    let hub = gorilla_hub(&[("TICK_MS", "500")]);
    let p = nginx_proxy(&format!(
        "    location /nohost/ {{\n      proxy_pass http://{a}/;\n{NGINX_WS}    }}\n    location /host/ {{\n      proxy_pass http://{a}/;\n{NGINX_WS}      proxy_set_header Host $http_host;\n    }}\n",
        a = hub.addr()
    ));
    let (nohost, host) = (p.url("ws", "/nohost/ws"), p.url("ws", "/host/ws"));
    let truth = observe_ws(&nohost, 1.0, None);
    assert_eq!(truth["head"]["status"], 403, "fixture truth: {truth}");
    assert_eq!(observe_ws(&host, 1.0, None)["head"]["status"], 101);
    let direct = hub.url("ws", "/ws");
    let (r, _, err) = probe_json(&[
        "--quick",
        "--timeout",
        "3s",
        "--direct",
        &direct,
        &nohost,
        &host,
    ]);
    let ctx = format!("stderr {err}\n{}", summary(&r));
    assert_eq!(status_of(&r, "upgrade", "/host/"), "pass", "{ctx}");
    assert_eq!(status_of(&r, "upgrade", "/nohost/"), "fail", "{ctx}");
    let fix = fix_text(finding(&r, "upgrade", "/nohost/"));
    assert!(fix.contains("Host"), "names the Host header: {ctx}");
    assert!(
        !fix.contains("proxy_set_header Upgrade"),
        "Upgrade was forwarded; 403 is not its fix: {ctx}"
    );
}

// ---- idle cuts ----

/// nginx `proxy_read_timeout 3s` in front of a quiet `ws` server, a quiet express stream,
/// and a `ws` server with the README's isAlive heartbeat at 1 s: the truth (independent
/// client) is a cut ~3 s into the quiet ones; probe times it to 0.5 s, says the path
/// closed it, and its fix is nginx's read timeout; the heartbeat one is held.
#[test]
fn nginx_short_read_timeout_cuts_quiet_streams_at_the_path() {
    let quiet_ws = node_ws(&[]);
    let beating = node_ws(&[("HEARTBEAT_MS", "1000")]);
    let quiet_sse = express_sse(&[("EVENT_MS", "600000")]);
    let loc = |path: &str, a: std::net::SocketAddr| {
        format!("    location /{path}/ {{\n      proxy_pass http://{a}/;\n{NGINX_WS}      proxy_buffering off;\n      proxy_read_timeout 3s;\n    }}\n")
    };
    let p = nginx_proxy(&format!(
        "{}{}{}",
        loc("qws", quiet_ws.addr()),
        loc("hb", beating.addr()),
        loc("qsse", quiet_sse.addr())
    ));
    let (qws, hb, qsse) = (
        p.url("ws", "/qws/"),
        p.url("ws", "/hb/"),
        p.url("http", "/qsse/events-noid"),
    );
    let ((r, _, err), (t_ws, t_sse)) = both(
        || probe_json(&["--idle-for", "5s", "--public", &qws, &hb, &qsse]),
        || {
            both(
                || observe_ws(&qws, 6.0, None),
                || observe_sse(&qsse, 6.0, None),
            )
        },
    );
    let ctx = format!("stderr {err}\n{}", summary(&r));
    for (t, part) in [(&t_ws, "/qws/"), (&t_sse, "/qsse/")] {
        assert_ne!(t["ending"], "open", "fixture truth: cut by nginx: {t}");
        let cut = t["ended_ms"].as_f64().unwrap() / 1000.0;
        assert!((2.5..4.5).contains(&cut), "truth: cut at ~3 s: {t}");
        assert_eq!(status_of(&r, "idle-timeout", part), "fail", "{ctx}");
        let f = finding(&r, "idle-timeout", part);
        let measured = f["numbers"]["closed_after_s"].as_f64().unwrap();
        assert!(
            (measured - cut).abs() < 0.5,
            "probe {measured} s vs independent {cut} s: {ctx}"
        );
        assert!(fix_text(f).contains("proxy_read_timeout"), "{ctx}");
        assert!(
            f["observed"].as_str().unwrap().contains("by the path"),
            "the closer is not known: `closed by the path`: {ctx}"
        );
    }
    assert_eq!(status_of(&r, "idle-timeout", "/hb/"), "pass", "{ctx}");
    assert_eq!(status_of(&r, "heartbeat", "/hb/"), "pass", "{ctx}");
}

/// HAProxy with `timeout server 3s` and no `timeout tunnel` cuts a quiet WebSocket at
/// 3 s (the truth); its fix is `timeout tunnel`. With `timeout tunnel 1h` it is held.
#[test]
fn haproxy_without_timeout_tunnel_cuts_the_websocket() {
    let app = node_ws(&[]);
    let bad = Proxy::start(Kind::Haproxy, &haproxy("  timeout server 3s\n", app.addr()));
    let good = Proxy::start(
        Kind::Haproxy,
        &haproxy("  timeout server 3s\n  timeout tunnel 1h\n", app.addr()),
    );
    let (b, g) = (bad.url("ws", "/"), good.url("ws", "/"));
    let ((r, _, err), truth) = both(
        || probe_json(&["--idle-for", "5s", "--public", "--proxy", "haproxy", &b, &g]),
        || observe_ws(&b, 6.0, None),
    );
    assert_ne!(truth["ending"], "open", "fixture truth: cut: {truth}");
    let ctx = format!("stderr {err}\n{}", summary(&r));
    let port = |p: &Proxy| format!(":{}/", p.port);
    assert_eq!(status_of(&r, "idle-timeout", &port(&bad)), "fail", "{ctx}");
    assert!(
        fix_text(finding(&r, "idle-timeout", &port(&bad))).contains("timeout tunnel"),
        "{ctx}"
    );
    assert_eq!(status_of(&r, "idle-timeout", &port(&good)), "pass", "{ctx}");
}

// ---- foreign ids and resume ----

/// SSE `id:` is the sequence when the payload is not rtcheck's. The truth of each
/// endpoint, measured with a Last-Event-ID reconnect: express /events and starlette
/// /sse count per connection (id 1 again: a restart, fail), /events-resume replays
/// (pass), /events-noid has no ids (warn: EventSource cannot resume).
#[test]
fn foreign_sse_ids_decide_resume() {
    let app = express_sse(&[("EVENT_MS", "300")]);
    let star = starlette(&[("EVENT_MS", "300")]);
    let per_conn = app.url("http", "/events");
    let global = app.url("http", "/events-resume");
    let noid = app.url("http", "/events-noid");
    let star_sse = star.url("http", "/sse");
    for u in [&per_conn, &star_sse] {
        let t = observe_sse(u, 1.0, Some("3"));
        assert_eq!(
            t["events"][0]["id"], "1",
            "fixture truth: restarts at 1: {t}"
        );
    }
    let t = observe_sse(&global, 1.0, Some("2"));
    assert_eq!(t["events"][0]["id"], "3", "fixture truth: replays: {t}");
    let (r, _, err) = probe_json(&[
        "--quick",
        "--timeout",
        "3s",
        &per_conn,
        &global,
        &noid,
        &star_sse,
    ]);
    let ctx = format!("stderr {err}\n{}", summary(&r));
    let resume = |u: &str| finding_url(&r, "resume", u)["status"].clone();
    assert_eq!(resume(&global), "pass", "{ctx}");
    assert_eq!(resume(&noid), "warn", "{ctx}");
    for u in [&per_conn, &star_sse] {
        assert_eq!(
            resume(u),
            "fail",
            "an id at or below Last-Event-ID is a restart: {ctx}"
        );
    }
}

// ---- never pass on nothing ----

/// A typo'd route (404 from the app through nginx), a backend that is down (502 from
/// nginx), a port nothing listens on, a health check (200 text/plain) and one good
/// stream in one run: each bad URL is a finding of its own, the good one is reported in
/// full, the run exits 1 (not 2), and each fix names the layer of its status.
#[test]
fn non_2xx_and_unreachable_urls_are_findings_not_pass() {
    let app = express_sse(&[("EVENT_MS", "300")]);
    let dead = common::free_port();
    let p = nginx_proxy(&format!(
        "    location /down/ {{\n      proxy_pass http://127.0.0.1:{dead}/;\n    }}\n    location / {{\n      proxy_pass http://{};\n{NGINX_WS}      proxy_buffering off;\n    }}\n",
        app.addr()
    ));
    let typo = p.url("http", "/evnts");
    let down = p.url("http", "/down/events");
    let good = p.url("http", "/events-resume");
    let nothing = format!("http://127.0.0.1:{dead}/events");
    let health = app.url("http", "/healthz");
    assert_eq!(observe_http(&typo)["head"]["status"], 404);
    assert_eq!(observe_http(&down)["head"]["status"], 502);
    let (r, code, err) = probe_json(&[
        "--quick",
        "--timeout",
        "3s",
        &typo,
        &down,
        &good,
        &nothing,
        &health,
    ]);
    let ctx = format!("exit {code} stderr {err}\n{}", summary(&r));
    assert_eq!(code, 1, "{ctx}");
    assert_ne!(r["summary"]["fail"], 0, "{ctx}");
    assert_eq!(
        status_of(&r, "sse-buffering", "/events-resume"),
        "pass",
        "{ctx}"
    );
    for (u, layer) in [("/evnts", "route"), ("/down/", "backend")] {
        let fs = findings_for(&r, u);
        let bad: Vec<_> = fs.iter().filter(|f| f["status"] == "fail").collect();
        assert!(!bad.is_empty(), "{u}: a fail finding: {ctx}");
        assert!(
            bad.iter().any(|f| fix_text(f).contains(layer)),
            "{u}: the fix names the {layer}: {ctx}"
        );
        assert!(fs.iter().all(|f| f["status"] != "pass"), "{u}: {ctx}");
    }
    let unreachable = findings_for(&r, &format!(":{dead}/events"));
    assert!(
        unreachable.iter().any(|f| f["status"] == "fail"),
        "the unreachable URL is a fail finding of its own: {ctx}"
    );
    let h = findings_for(&r, "/healthz");
    assert!(
        h.iter()
            .any(|f| f["status"] == "fail" || f["status"] == "warn"),
        "a health check is no stream and no poll body: {ctx}"
    );
}

// ---- heartbeats at the libraries' defaults ----

/// The ws README's isAlive heartbeat at its canonical 30 s and python3-websockets'
/// default keepalive (a ping every 20 s), each measured by the independent client. The
/// README's interval is one timer for the whole server, so the first ping after a connect
/// comes early; the idle test watches 62 s to see a whole interval between two pings
/// (30.0x s: setInterval runs late, never early). Both keep the 20-30 s rule within the
/// stated tolerance, and probe's interval matches the truth to 0.5 s. The longest test
/// here (~63 s): both servers at once.
#[test]
fn library_default_heartbeats_pass_the_20_30_s_rule() {
    let node = node_ws(&[("HEARTBEAT_MS", "30000")]);
    let py = py_websockets(&[]);
    let (n, p) = (node.url("ws", "/"), py.url("ws", "/"));
    let one = |url: String| {
        move || {
            both(
                || probe_json(&["--idle-for", "62s", "--public", &url]),
                || observe_ws(&url, 62.0, None),
            )
        }
    };
    let (((rn, _, en), tn), ((rp, _, ep), tp)) = both(one(n), one(p));
    for (r, t, err, truth_s, port) in [
        (&rn, &tn, &en, 30.0, node.port),
        (&rp, &tp, &ep, 20.0, py.port),
    ] {
        let pings = ms_list(&t["pings_ms"]);
        assert!(pings.len() >= 2, "fixture truth: two pings at least: {t}");
        let gap = max_gap(&pings).unwrap() / 1000.0;
        assert!(
            (gap - truth_s).abs() < 0.5,
            "fixture truth: a ping every {truth_s} s: {t}"
        );
        // What probe reports is the longest wait for a heartbeat, the first included.
        let worst = gap.max(pings[0] / 1000.0);
        let ctx = format!("stderr {err}\n{}", summary(r));
        let part = format!(":{port}/");
        assert_eq!(status_of(r, "heartbeat", &part), "pass", "{ctx}");
        let f = finding(r, "heartbeat", &part);
        let measured = f["numbers"]["interval_s"].as_f64().unwrap();
        assert!(
            (measured - worst).abs() < 0.5,
            "probe {measured} s vs independent {worst} s: {ctx}"
        );
        assert_eq!(status_of(r, "idle-timeout", &part), "pass", "{ctx}");
    }
}

// ---- a busy WebSocket through Caddy ----

/// gorilla's chat hub (a tick every 0.5 s, the example's 54 s ping) behind Caddy's
/// default reverse_proxy: upgrade passes, the idle test is held, and probe reports the
/// messages that arrived (the truth counts them too) and that data, not a heartbeat,
/// kept the path open.
#[test]
fn gorilla_hub_behind_caddy_reports_its_messages() {
    let hub = gorilla_hub(&[("TICK_MS", "500")]);
    let p = Proxy::start(
        Kind::Caddy,
        &caddy(&format!("  reverse_proxy {}\n", hub.addr())),
    );
    let url = p.url("ws", "/ws");
    let ((r, _, err), truth) = both(
        || probe_json(&["--idle-for", "5s", &url]),
        || observe_ws(&url, 5.0, None),
    );
    let n = ms_list(&truth["messages_ms"]).len();
    assert!(n >= 7, "fixture truth: ~10 messages in 5 s: {truth}");
    let ctx = format!("stderr {err}\n{}", summary(&r));
    assert_eq!(status_of(&r, "upgrade", "/ws"), "pass", "{ctx}");
    assert_eq!(status_of(&r, "idle-timeout", "/ws"), "pass", "{ctx}");
    let texts: String = findings_for(&r, "/ws")
        .iter()
        .map(|f| f["observed"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("\n");
    // "N message(s)" somewhere in what probe observed, N close to the truth's count.
    let words: Vec<&str> = texts.split_whitespace().collect();
    let said = words
        .windows(2)
        .find(|w| w[1].starts_with("message"))
        .and_then(|w| w[0].replace(',', "").parse::<usize>().ok());
    assert!(
        said.is_some_and(|m| m.abs_diff(n) <= 3),
        "a WebSocket probe says how many messages arrived ({n} by the independent client): {ctx}"
    );
    let hb = observed_of(&r, "heartbeat", "/ws");
    assert!(
        hb.contains("data") || hb.contains("message"),
        "a busy stream: data, not a heartbeat, kept the path open: {ctx}"
    );
}

// ---- polling ----

/// Starlette JSON endpoints as a poll client meets them: no caching headers (the
/// tutorial default), `public, max-age=60`, an ETag answered 304, a slow handler; and
/// a health check. The truth of each (headers, sizes, the handler's delay) is read by
/// the independent client; probe's five polling checks follow it.
#[test]
fn starlette_json_endpoints_get_polling_checks() {
    let app = starlette(&[("DELAY_MS", "700")]);
    let urls = [
        "/api/messages",
        "/api/cached",
        "/api/etag",
        "/api/slow",
        "/healthz",
    ]
    .map(|p| app.url("http", p));
    let truth: Vec<Value> = urls.iter().map(|u| observe_http(u)).collect();
    assert_eq!(
        truth[1]["head"]["headers"]["cache-control"],
        "public, max-age=60"
    );
    assert!(
        truth[2]["head"]["headers"]["etag"].is_string(),
        "{}",
        truth[2]
    );
    assert!(
        truth[3]["ended_ms"].as_f64().unwrap() >= 700.0,
        "{}",
        truth[3]
    );
    let mut args = vec!["--quick", "--timeout", "5s"];
    args.extend(urls.iter().map(String::as_str));
    let (r, code, err) = probe_json(&args);
    let ctx = format!("exit {code} stderr {err}\n{}", summary(&r));
    let st = |id: &str, u: &str| finding_url(&r, id, u)["status"].clone();
    let (plain, cached, etag, slow, health) = (&urls[0], &urls[1], &urls[2], &urls[3], &urls[4]);
    for u in [plain, cached, etag, slow] {
        assert_eq!(st("poll-status", u), "pass", "{u}: {ctx}");
    }
    assert_eq!(
        st("poll-status", health),
        "warn",
        "text/plain is no poll body: {ctx}"
    );
    assert_eq!(st("poll-cache", plain), "warn", "{ctx}");
    assert_eq!(st("poll-cache", cached), "fail", "{ctx}");
    assert!(
        finding_url(&r, "poll-cache", cached)["observed"]
            .as_str()
            .unwrap()
            .contains("60 s"),
        "{ctx}"
    );
    assert_eq!(st("poll-cache", etag), "pass", "{ctx}");
    assert_eq!(st("poll-conditional", etag), "pass", "{ctx}");
    assert_eq!(st("poll-conditional", plain), "warn", "{ctx}");
    assert_eq!(st("poll-latency", plain), "pass", "{ctx}");
    assert_eq!(st("poll-latency", slow), "warn", "{ctx}");
    let p50 = finding_url(&r, "poll-latency", slow)["numbers"]["p50_ms"]
        .as_f64()
        .unwrap();
    let t = truth[3]["ended_ms"].as_f64().unwrap();
    assert!(
        (p50 - t).abs() < 300.0,
        "probe {p50} ms vs independent {t} ms: {ctx}"
    );
    // Bytes: the answer's own size (independent) is inside probe's per-poll count, and
    // the idle ETag client is cheaper than the full answer.
    let per_poll = |u: &str| {
        finding_url(&r, "poll-overhead", u)["numbers"]["bytes_per_poll"]
            .as_f64()
            .unwrap()
    };
    let body = truth[0]["body_bytes"].as_f64().unwrap();
    assert!(per_poll(plain) > body, "{ctx}");
    assert!(per_poll(etag) < per_poll(plain) + 20.0, "{ctx}");
    assert_eq!(
        finding_url(&r, "poll-overhead", plain)["numbers"]["bytes_per_min"],
        per_poll(plain) * 60.0,
        "{ctx}"
    );
}

/// rtcheck serve's /poll with a `since` cursor at the head (an idle client): JSON,
/// `Cache-Control: no-store`, the cursor as its conditional; the overhead is stated in
/// bytes per minute against the seed's 8.4 KB.
#[test]
fn rtcheck_serve_poll_gets_polling_checks() {
    let s = probe_common::Serve::start(&["--rate", "5"]);
    let url = format!("http://{}/poll?since=18446744073709551615", s.addr);
    let (r, _, err) = probe_json(&["--quick", &url]);
    let ctx = format!("stderr {err}\n{}", summary(&r));
    for id in [
        "poll-status",
        "poll-cache",
        "poll-conditional",
        "poll-latency",
    ] {
        assert_eq!(status_of(&r, id, "/poll"), "pass", "{id}: {ctx}");
    }
    let f = finding(&r, "poll-overhead", "/poll");
    assert!(
        f["numbers"]["bytes_per_min"].as_f64().unwrap() > 0.0,
        "{ctx}"
    );
    assert!(f["observed"].as_str().unwrap().contains("8.4 KB"), "{ctx}");
    assert!(!f["observed"]
        .as_str()
        .unwrap()
        .contains("18446744073709551615"));
}

// ---- a library protocol: Socket.IO (issue 42) ----

/// python-socketio's hub (aiohttp, Engine.IO v4, a ping every 2 s, a client that does not
/// answer within 2 s dropped), no proxy. probe detects Socket.IO from the URL, answers
/// the library's pings and connects to the namespace: the connection holds for the whole
/// idle test, the heartbeat is the library's (every 2 s, announced in the open packet),
/// the ticks are unwrapped to their seq, and the URL shows EIO=4. The hub's own log is
/// the independent count: it saw the probe connect and kept it past the window. With
/// `--app-protocol raw` (the library not spoken) the hub drops the client after
/// interval + timeout, as its log also shows: the close the protocol explains.
#[test]
fn socketio_hub_heartbeat_is_recognised_and_answered() {
    let hub = SocketioHub::start(&[
        ("PING_INTERVAL", "2"),
        ("PING_TIMEOUT", "2"),
        ("TICK_MS", "500"),
    ]);
    let url = hub.url("ws", "/socket.io/?EIO=4&transport=websocket");
    let (spoken, raw) = both(
        || probe_json(&["--idle-for", "9s", "--public", &url]),
        || {
            probe_json(&[
                "--idle-for",
                "9s",
                "--public",
                "--app-protocol",
                "raw",
                &url,
            ])
        },
    );
    let (r, _, err) = spoken;
    let ctx = format!(
        "stderr {err}\n{}\nhub log:\n{}",
        summary(&r),
        hub.log_text()
    );
    let part = "EIO=4&transport=websocket";
    assert_eq!(status_of(&r, "idle-timeout", part), "pass", "{ctx}");
    assert!(
        observed_of(&r, "idle-timeout", part)
            .contains("spoken: socketio (the query names Engine.IO (EIO=4))"),
        "{ctx}"
    );
    assert_eq!(status_of(&r, "heartbeat", part), "pass", "{ctx}");
    let hb = finding(&r, "heartbeat", part);
    assert_eq!(hb["numbers"]["app_interval_s"].as_f64(), Some(2.0), "{ctx}");
    assert_eq!(
        hb["numbers"]["app_drop_after_s"].as_f64(),
        Some(4.0),
        "{ctx}"
    );
    assert!(
        hb["numbers"]["heartbeats"].as_f64().unwrap() >= 3.0,
        "{ctx}"
    );
    assert!(
        hb["numbers"]["interval_s"].as_f64().unwrap() <= 3.0,
        "{ctx}"
    );
    assert!(
        observed_of(&r, "compression", part).contains("not offered: socketio spoken"),
        "{ctx}"
    );
    // The hub's truth: one Socket.IO session (the raw run never connects to the
    // namespace), held for the whole window.
    let sessions = hub.sessions();
    assert_eq!(sessions.len(), 1, "{ctx}");
    let (c, d) = sessions[0];
    assert!(
        d.is_none_or(|d| d - c >= 8.5),
        "held the window: {sessions:?}\n{ctx}"
    );
    // Not spoken: the hub drops the silent client after interval + timeout (4 s).
    let (raw, _, _) = raw;
    assert_eq!(
        status_of(&raw, "idle-timeout", part),
        "fail",
        "{}",
        summary(&raw)
    );
    let cut = finding(&raw, "idle-timeout", part)["numbers"]["closed_after_s"].as_f64();
    assert!(
        cut.is_some_and(|c| (3.0..6.5).contains(&c)),
        "{}",
        summary(&raw)
    );
}

/// The same hub behind nginx without the Upgrade lines (its docs' minimal proxy_pass):
/// the WebSocket handshake reaches the hub as plain HTTP (the truth: not 101), so Socket.IO
/// clients fall back to long-polling, which works through this nginx: upgrade fails, and
/// says the polling transport answered (the Engine.IO open packet, the independent
/// client's GET too). With the Upgrade lines and the Host forwarded (python-socketio
/// accepts only an Origin matching the Host, port included, by default: `$http_host`,
/// not `$host`): 101, no fallback note.
#[test]
fn socketio_behind_nginx_without_upgrade_falls_back_to_polling() {
    let hub = py_socketio(&[("PING_INTERVAL", "2"), ("PING_TIMEOUT", "2")]);
    let p = nginx_proxy(&format!(
        "    location /bad/ {{\n      proxy_pass http://{a}/;\n    }}\n    location /good/ {{\n      proxy_pass http://{a}/;\n      proxy_set_header Host $http_host;\n{NGINX_WS}    }}\n    location /nohost/ {{\n      proxy_pass http://{a}/;\n{NGINX_WS}    }}\n",
        a = hub.addr()
    ));
    let q = "socket.io/?EIO=4&transport=websocket";
    let nohost = p.url("ws", &format!("/nohost/{q}"));
    let (bad, good) = (
        p.url("ws", &format!("/bad/{q}")),
        p.url("ws", &format!("/good/{q}")),
    );
    let truth = observe_ws(&bad, 1.0, None);
    assert_ne!(truth["head"]["status"], 101, "fixture truth: {truth}");
    let poll = observe_http(&p.url("http", "/bad/socket.io/?EIO=4&transport=polling"));
    assert_eq!(
        poll["head"]["status"], 200,
        "fixture truth: polling opens: {poll}"
    );
    let (r, code, err) = probe_json(&[
        "--quick",
        "--timeout",
        "3s",
        "--public",
        &bad,
        &good,
        &nohost,
    ]);
    let ctx = format!("exit {code} stderr {err}\n{}", summary(&r));
    assert_eq!(status_of(&r, "upgrade", "/bad/"), "fail", "{ctx}");
    let seen = observed_of(&r, "upgrade", "/bad/");
    assert!(
        seen.contains("long-polling transport answered through the path"),
        "{ctx}"
    );
    assert!(seen.contains("pingInterval 2 s"), "{ctx}");
    assert_eq!(status_of(&r, "upgrade", "/good/"), "pass", "{ctx}");
    assert!(
        !observed_of(&r, "upgrade", "/good/").contains("long-polling"),
        "{ctx}"
    );
    // Upgrade forwarded, Host not (nginx's default $proxy_host): python-engineio refuses
    // the Origin with a 400 whose body says so. Probe quotes it rather than blaming the
    // Upgrade headers, and its fix names the Host.
    assert_eq!(status_of(&r, "upgrade", "/nohost/"), "fail", "{ctx}");
    let seen = observed_of(&r, "upgrade", "/nohost/");
    assert!(seen.contains("HTTP 400"), "{ctx}");
    // python-engineio's asyncio server: `"ORIGIN is not an accepted origin."` (4.3).
    assert!(seen.contains("is not an accepted origin"), "{ctx}");
    assert!(!seen.contains("Upgrade headers did not reach"), "{ctx}");
    let fix = fix_text(finding(&r, "upgrade", "/nohost/"));
    assert!(fix.contains("$http_host"), "{ctx}");
}
