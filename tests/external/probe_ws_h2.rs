//! `ws-over-h2` (issue 40, RFC 8441) against real servers: Debian's Caddy (2.6) and
//! nginx (1.22) with TLS and h2 in front of `rtcheck serve`, and a Node http2 server
//! (nghttp2) that advertises extended CONNECT and then answers it with 200, a stream reset
//! or 400 (tests/fixtures/foreign/h2_connect.js). Each verdict comes from what was
//! measured, read back from the JSON report: the SETTINGS flag, the CONNECT's answer, and
//! Alt-Svc h3 reported as not measured. With `--browser`, Chromium's own WebSocket: over
//! HTTP/2 to the Node server (which logs the way each WebSocket came), over HTTP/1.1
//! through Debian's nginx, which does not advertise extended CONNECT.
use crate::common;
use crate::probe_common;

use common::{free_port, require_binary, Service};
use probe_common::*;
use serde_json::Value;
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

fn finding<'a>(r: &'a Value, id: &str) -> &'a Value {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {}", summary(r)))
}

fn probe_ws_h2(url: &str, ca: &str) -> Value {
    let (r, _, err) = probe_json(&["--quick", "--ca", ca, url]);
    assert!(
        r["findings"].as_array().is_some_and(|f| !f.is_empty()),
        "{err}"
    );
    r
}

const CADDY_TLS: &str = "{\n  admin off\n  storage file_system {DIR}/caddy\n}\n\
https://127.0.0.1:{PORT} {\n  tls {CERTS}/leaf.pem {CERTS}/leaf.key\n  reverse_proxy {BACKEND}\n}\n";

#[test]
fn debian_caddy_and_nginx_do_not_advertise_it_and_that_is_fine() {
    let s = Serve::start(&["--rate", "5", "--size", "64"]);
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    let c = certs.path().display().to_string();
    let ca = format!("{c}/ca.pem");
    let caddy_conf = CADDY_TLS
        .replace("{CERTS}", &c)
        .replace("{BACKEND}", &s.addr.to_string());
    let caddy = Proxy::start(Kind::Caddy, &caddy_conf);
    let nginx = Proxy::start(Kind::Nginx, &nginx_tls_h2(certs.path(), s.addr));
    for (name, p) in [("caddy", &caddy), ("nginx", &nginx)] {
        let r = probe_ws_h2(&p.url("wss", "/ws"), &ca);
        let f = finding(&r, "ws-over-h2");
        let observed = f["observed"].as_str().unwrap();
        assert_eq!(f["status"], "pass", "{name}: {}", summary(&r));
        assert!(observed.contains("not advertised"), "{name}: {observed}");
        assert_eq!(
            f["numbers"]["h2_extended_connect_advertised"], 0.0,
            "{name}"
        );
        // The WebSocket itself works over HTTP/1.1 through both.
        assert_eq!(finding(&r, "upgrade")["status"], "pass", "{name}");
        if name == "caddy" {
            // Caddy advertises HTTP/3 in Alt-Svc: said, not judged.
            assert!(
                observed.contains("HTTP/3") && observed.contains("not measured"),
                "{observed}"
            );
        }
    }
}

/// The Node fixture in MODE on a free port, until drop.
fn node_h2(mode: &str, certs: &std::path::Path) -> (Service, u16) {
    let node = require_binary("node", "nodejs");
    let port = free_port();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/foreign/h2_connect.js");
    let mut cmd = Command::new(node);
    cmd.arg(script)
        .arg(port.to_string())
        .arg(certs.join("leaf.pem"))
        .arg(certs.join("leaf.key"))
        .arg(mode);
    let mut svc = Service::start(cmd, "node", tempfile::tempdir().unwrap());
    svc.wait_listening(
        SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(30),
    );
    (svc, port)
}

#[test]
fn advertised_and_working_passes_advertised_and_reset_or_refused_fails() {
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    let ca = certs.path().join("ca.pem").display().to_string();
    let modes = [
        ("ok", "pass", "answered 200"),
        ("reset", "fail", "PROTOCOL_ERROR"),
        ("refuse", "fail", "answered 400"),
    ];
    // Three independent servers, one probe each: at once (each probe mostly waits).
    let reports: Vec<Value> = std::thread::scope(|sc| {
        let runs: Vec<_> = modes
            .iter()
            .map(|&(mode, _, _)| {
                let (certs, ca) = (certs.path(), &ca);
                sc.spawn(move || {
                    let (_node, port) = node_h2(mode, certs);
                    probe_ws_h2(&format!("wss://127.0.0.1:{port}/ws"), ca)
                })
            })
            .collect();
        runs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for ((mode, status, needle), r) in modes.into_iter().zip(&reports) {
        let f = finding(r, "ws-over-h2");
        let observed = f["observed"].as_str().unwrap();
        assert_eq!(f["status"], status, "{mode}: {}", summary(r));
        assert!(observed.contains(needle), "{mode}: {observed}");
        assert_eq!(
            f["numbers"]["h2_extended_connect_advertised"], 1.0,
            "{mode}"
        );
        if mode == "ok" {
            assert!(observed.contains("first bytes arrived"), "{observed}");
            assert_eq!(f["numbers"]["h2_connect_status"], 200.0);
        } else {
            assert!(f["reason"].as_str().unwrap().contains("1006"), "{f}");
        }
    }
}

/// `probe --browser` on a wss URL: the browser-websocket finding.
#[cfg(feature = "browser")]
fn browser_ws(url: &str, ca: &str) -> Value {
    let (r, _, err) = probe_json(&["--quick", "--public", "--browser", "--ca", ca, url]);
    let f = r["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["id"] == "browser-websocket"))
        .cloned();
    f.unwrap_or_else(|| panic!("no browser-websocket: {}\nstderr: {err}", summary(&r)))
}

#[cfg(feature = "browser")]
#[test]
fn chromium_uses_h2_where_extended_connect_is_advertised_and_http1_where_not() {
    require_binary("chromium", "chromium");
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    let ca = certs.path().join("ca.pem").display().to_string();
    let (node, port) = node_h2("ok", certs.path());
    let f = browser_ws(&format!("wss://127.0.0.1:{port}/ws"), &ca);
    let observed = f["observed"].as_str().unwrap();
    assert!(observed.contains("over HTTP/2 (RFC 8441"), "{f:#}");
    assert_eq!(f["numbers"]["handshake_status"], 200.0, "{f:#}");
    // The server's own word: the browser's WebSocket came as an extended CONNECT (probe's
    // own client comes both ways, under its own User-Agent).
    let log = node.log();
    let chrome = |how: &str| {
        log.lines()
            .any(|l| l.contains(how) && l.contains("HeadlessChrome"))
    };
    assert!(chrome("over h2 extended connect"), "{log}");
    assert!(!chrome("over http/1.1 upgrade"), "{log}");

    // nginx does not advertise it: Chromium upgrades over HTTP/1.1 (fine, and said).
    let s = Serve::start(&["--rate", "5", "--size", "64"]);
    let nginx = Proxy::start(Kind::Nginx, &nginx_tls_h2(certs.path(), s.addr));
    let f = browser_ws(&nginx.url("wss", "/ws"), &ca);
    let observed = f["observed"].as_str().unwrap();
    assert!(observed.contains("over HTTP/1.1 (Upgrade, 101)"), "{f:#}");
    assert_eq!(f["numbers"]["handshake_status"], 101.0, "{f:#}");
    assert_eq!(f["status"], "pass", "{f:#}");
}
