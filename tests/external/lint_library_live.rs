//! lint's library heartbeat shown live (issue 42): python-socketio's hub as its docs
//! write one, with the library's default heartbeat (Engine.IO v4: a server ping every
//! 25 s), behind HAProxy 2.6 with `timeout tunnel 20s` (lint: fail, under the ping) and
//! `timeout tunnel 60s` (lint: no finding, twice the ping and more). An independent
//! python-socketio client sits quietly behind each for 35 s; the hub's own connect and
//! disconnect log says when each session ended: the short tunnel cuts it at 20 s,
//! before the first ping, and the fixed one holds it past that ping.
use crate::common;
use crate::foreign_common;
use crate::probe_common;
use foreign_common::*;
use probe_common::{Kind, Proxy};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The Socket.IO frontend as its users publish it: /socket.io routed to the app.
const CFG: &str = "global
  maxconn 256
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend fe
  bind 127.0.0.1:{PORT}
  acl is_sio path_beg /socket.io
  use_backend sio if is_sio
  default_backend sio
backend sio
  timeout tunnel @TUNNEL@
  server s1 127.0.0.1:@HUB@
";

fn lint_ids(p: &Proxy) -> Vec<(String, String)> {
    let out = common::rtcheck()
        .arg("lint")
        .arg(p.dir().join("haproxy.cfg"))
        .args(["--connections", "100", "--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "fail" || f["status"] == "warn")
        .map(|f| {
            let id = f["id"].as_str().unwrap().to_string();
            (id, f["expected"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

/// Seconds each session the hub logged lasted (None: not ended).
fn lifetimes(hub: &SocketioHub) -> Vec<Option<f64>> {
    let s = hub.sessions();
    s.into_iter().map(|(c, d)| d.map(|d| d - c)).collect()
}

/// The independent client, quiet for `secs` s; killed on drop.
struct Client(std::process::Child);

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn client(url: &str, secs: u32) -> Client {
    let c = Command::new(python())
        .arg(fixture("socketio_client.py"))
        .args([url, &secs.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Client(c)
}

#[test]
fn a_tunnel_under_socketios_ping_cuts_between_heartbeats_and_the_fix_holds() {
    let (cut_hub, ok_hub) = (SocketioHub::start(&[]), SocketioHub::start(&[]));
    let proxy = |tunnel: &str, hub: &Foreign| {
        let cfg = CFG
            .replace("@TUNNEL@", tunnel)
            .replace("@HUB@", &hub.port.to_string());
        Proxy::start(Kind::Haproxy, &cfg)
    };
    let (short, long) = (proxy("20s", &cut_hub), proxy("60s", &ok_hub));
    // lint's verdicts, from the /socket.io path and Socket.IO's documented 25 s ping.
    let trip = lint_ids(&short);
    let tunnel: Vec<&(String, String)> = trip
        .iter()
        .filter(|f| f.0 == "haproxy-timeout-tunnel")
        .collect();
    assert_eq!(tunnel.len(), 1, "{trip:?}");
    assert!(tunnel[0].1.contains("Socket.IO's heartbeat"), "{trip:?}");
    let fixed = lint_ids(&long);
    assert!(
        fixed.iter().all(|f| f.0 != "haproxy-timeout-tunnel"),
        "{fixed:?}"
    );
    // Both clients quiet for 35 s, past the first ping at 25 s.
    let a = client(&short.url("http", ""), 35);
    let b = client(&long.url("http", ""), 35);
    let until = Instant::now() + Duration::from_secs(90);
    let done = |hub: &SocketioHub| {
        let l = lifetimes(hub);
        !l.is_empty() && l.iter().all(Option::is_some)
    };
    while !(done(&cut_hub) && done(&ok_hub)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(500));
    }
    drop((a, b));
    let (cut, ok) = (lifetimes(&cut_hub), lifetimes(&ok_hub));
    let ctx = format!("through 20s: {cut:?}; through 60s: {ok:?}");
    assert_eq!(cut.len(), 1, "{ctx}");
    let t = cut[0].expect("the session through the 20 s tunnel never ended");
    assert!((18.0..24.0).contains(&t), "{ctx}");
    assert_eq!(ok.len(), 1, "{ctx}");
    let t = ok[0].expect("the session through the 60 s tunnel never ended");
    assert!(t >= 33.0, "{ctx}");
}
