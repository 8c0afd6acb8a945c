//! A NAT that forgets a flow, for real (issue 40): three network namespaces the test
//! makes, client -> router -> server, joined by veth pairs. The router masquerades with
//! nftables and keeps an established TCP flow in conntrack for 5 s only
//! (`nf_conntrack_tcp_timeout_established`, per namespace); with `nf_conntrack_tcp_loose=0`
//! and `ct state invalid drop`, a packet of a forgotten flow is dropped: neither end hears
//! of the cut (the shape of a cloud NAT gateway or kube-proxy's conntrack entry expiring).
//!
//! An independent client (python, raw socket) shows the silence first: a ping after 8 s
//! idle gets nothing back, no FIN, no RST, while one after 1 s is answered. Then probe,
//! held 8 s idle through the router: `idle-timeout` fails as a silent cut, with a declared
//! path `path-idle` names the conntrack hop by its declared 5 s; without one it names an
//! unnamed silent cutter; and with the server's 1 s heartbeat the same path holds.
//! Skips only when not root or when namespaces cannot be made; the namespaces and every
//! process in them go on drop, also when a check fails.
use crate::common;

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The router's established-flow timeout, and how long the clients stay idle.
const FORGET_S: u64 = 5;
const IDLE_S: u64 = 8;

/// Client, router and server namespaces; the serve children and the namespaces go on drop.
struct NatLab {
    tag: String,
    children: Vec<Child>,
    dir: tempfile::TempDir,
}

impl NatLab {
    fn ns(&self, role: &str) -> String {
        format!("{}{role}", self.tag)
    }

    /// None: not root, or this kernel or container cannot make namespaces (a skip).
    fn new() -> Option<NatLab> {
        let uid = Command::new("id").arg("-u").output().ok()?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            eprintln!("skipped: needs root for network namespaces");
            return None;
        }
        let lab = NatLab {
            tag: format!("rtnat{}", std::process::id()),
            children: Vec::new(),
            dir: tempfile::tempdir().unwrap(),
        };
        let made = Command::new("ip")
            .args(["netns", "add", &lab.ns("c")])
            .stderr(Stdio::null())
            .status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("skipped: `ip netns add` failed (network namespaces unavailable)");
            return None;
        }
        common::require_binary("nft", "nftables");
        lab.sh(&format!(
            r#"
ip netns add {n}; ip netns add {s}
ip -n {c} link add c0 type veth peer name n0 netns {n}
ip -n {n} link add n1 type veth peer name s1 netns {s}
ip -n {c} addr add 10.40.1.2/24 dev c0; ip -n {c} link set c0 up; ip -n {c} link set lo up
ip -n {n} addr add 10.40.1.1/24 dev n0; ip -n {n} link set n0 up
ip -n {n} addr add 10.40.2.1/24 dev n1; ip -n {n} link set n1 up; ip -n {n} link set lo up
ip -n {s} addr add 10.40.2.2/24 dev s1; ip -n {s} link set s1 up; ip -n {s} link set lo up
ip -n {c} route add default via 10.40.1.1
ip netns exec {n} sysctl -qw net.ipv4.ip_forward=1
ip netns exec {n} nft -f - <<'NFT'
table ip rtnat {{
  chain filt {{ type filter hook forward priority 0; policy accept; ct state invalid drop; }}
  chain natpost {{ type nat hook postrouting priority 100; oifname "n1" masquerade; }}
}}
NFT
# conntrack's sysctls exist in the namespace once the ruleset loaded nf_conntrack.
ip netns exec {n} sysctl -qw net.netfilter.nf_conntrack_tcp_loose=0 \
  net.netfilter.nf_conntrack_tcp_timeout_established={FORGET_S}
"#,
            c = lab.ns("c"),
            n = lab.ns("n"),
            s = lab.ns("s"),
        ));
        Some(lab)
    }

    fn sh(&self, script: &str) -> String {
        let o = Command::new("bash")
            .args(["-euo", "pipefail", "-c", script])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{script}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// `rtcheck serve` in the server namespace, quiet (no events); its address.
    fn serve(&mut self, name: &str, ping: &str) -> String {
        let addr_file: PathBuf = self.dir.path().join(format!("{name}.addr"));
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns("s")])
            .arg(common::binary())
            .args(["serve", "--listen", "10.40.2.2:0", "--exit-with-parent"])
            .args(["--wait-start", "--ping", ping, "--pong-wait", "0"])
            .arg("--addr-file")
            .arg(&addr_file)
            .env_remove("RTCHECK_CONTROL_TOKEN")
            .env_remove("RTCHECK_REDIS_URL")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.children.push(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(t) = std::fs::read_to_string(&addr_file) {
                if t.ends_with('\n') {
                    return t.lines().next().unwrap().trim().to_string();
                }
            }
            assert!(Instant::now() < deadline, "serve {name} never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A command in the client namespace (bounded by `timeout`).
    fn in_client(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns("c"), "timeout", "120"])
            .args(args);
        c
    }
}

impl Drop for NatLab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for role in ["c", "n", "s"] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(role)])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The independent client: a WebSocket handshake on a raw socket, `idle` seconds of
/// silence (what came before it drained), one masked ping, then up to 5 s for anything
/// back. Prints JSON.
const RAW_CLIENT: &str = r#"
import base64, json, os, socket, sys, time
host, port, idle = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.create_connection((host, port), timeout=10)
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET /ws HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (host, port, key)).encode())
head = b""
while b"\r\n\r\n" not in head:
    d = s.recv(4096)
    if not d:
        break
    head += d
status = head.split(b" ")[1].decode() if head else "none"
time.sleep(idle)
# What the server sent after its head (a first frame) came before the silence: drain it.
s.setblocking(False)
try:
    while s.recv(4096):
        pass
except BlockingIOError:
    pass
s.setblocking(True)
mask = b"\x01\x02\x03\x04"
s.sendall(b"\x89\x84" + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(b"ping")))
s.settimeout(5)
t = time.time()
try:
    after = "answered" if s.recv(4096) else "eof"
except socket.timeout:
    after = "silent"
except ConnectionResetError:
    after = "reset"
print(json.dumps({"status": status, "after": after, "waited_s": round(time.time() - t, 2)}))
"#;

/// A client or probe of the test, run under `timeout` in the client namespace. On drop
/// (a panic before its output was read, the lab's namespaces about to go) its `timeout`
/// gets SIGTERM, which it passes to the command it runs, and is reaped: SIGKILL if it
/// is still there after 5 s.
struct Reaped(Option<Child>);

impl Reaped {
    fn output(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let Some(mut c) = self.0.take() else { return };
        if let Ok(pid) = i32::try_from(c.id()) {
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let t0 = Instant::now();
        while matches!(c.try_wait(), Ok(None)) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

fn raw_client(lab: &NatLab, addr: &str, idle_s: u64) -> Reaped {
    let (host, port) = addr.rsplit_once(':').unwrap();
    let c = lab
        .in_client(&["python3", "-c", RAW_CLIENT, host, port, &idle_s.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Reaped(Some(c))
}

fn json_of(o: Output, what: &str) -> Value {
    let stdout = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: not JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn probe(lab: &NatLab, url: &str, extra: &[&str]) -> Reaped {
    let idle = format!("{IDLE_S}s");
    let bin = common::binary();
    let mut args = vec![bin.to_str().unwrap(), "probe", "--format", "json"];
    args.extend(["--idle-for", &idle, "--timeout", "5s"]);
    args.extend(extra);
    args.push(url);
    let c = lab
        .in_client(&args)
        .env_remove("RTCHECK_CONTROL_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Reaped(Some(c))
}

fn finding<'a>(r: &'a Value, id: &str) -> &'a Value {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {r:#}"))
}

#[test]
fn a_nat_that_forgets_a_flow_is_a_silent_cut_and_a_heartbeat_keeps_it() {
    let Some(mut lab) = NatLab::new() else {
        return;
    };
    let quiet = lab.serve("quiet", "0");
    let beating = lab.serve("beating", "1s");
    let ws = |a: &str| format!("ws://{a}/ws");
    // All at once: each is ~15 s of waiting, and they share nothing but the router.
    let raw_late = raw_client(&lab, &quiet, IDLE_S);
    let raw_soon = raw_client(&lab, &quiet, 1);
    let over = format!("kube-proxy-iptables.idle={FORGET_S}s");
    let named = probe(
        &lab,
        &ws(&quiet),
        &["--path", "kube-proxy-iptables", "--override", &over],
    );
    let unnamed = probe(&lab, &ws(&quiet), &[]);
    let kept = probe(
        &lab,
        &ws(&beating),
        &["--path", "kube-proxy-iptables", "--override", &over],
    );

    // The independent client: silence after the router forgot, an answer before.
    let late = json_of(raw_late.output(), "raw client, late");
    let soon = json_of(raw_soon.output(), "raw client, soon");
    assert_eq!(late["status"], "101", "{late}");
    assert_eq!(late["after"], "silent", "no FIN, no RST: {late}");
    assert_eq!(soon["after"], "answered", "the path works before: {soon}");

    let r = json_of(named.output(), "probe --path");
    let idle = finding(&r, "idle-timeout");
    assert_eq!(idle["status"], "fail", "{idle:#}");
    let observed = idle["observed"].as_str().unwrap();
    assert!(observed.starts_with("silent cut"), "{observed}");
    assert!(observed.contains("unacknowledged"), "{observed}");
    let within = idle["numbers"]["silent_cut_within_s"].as_f64().unwrap();
    assert!(within >= IDLE_S as f64 - 0.5, "{idle:#}");
    let path = finding(&r, "path-idle");
    assert_eq!(path["status"], "fail", "{path:#}");
    let observed = path["observed"].as_str().unwrap();
    assert!(
        observed.contains("kube-proxy-iptables") && observed.contains("declared 5 s"),
        "the cut is the declared conntrack hop's: {observed}"
    );
    let fix = path["fix"]["summary"].as_str().unwrap();
    assert!(fix.contains("every 2 s or less"), "{fix}");

    let r = json_of(unnamed.output(), "probe");
    let idle = finding(&r, "idle-timeout");
    assert_eq!(idle["status"], "fail", "{idle:#}");
    let observed = idle["observed"].as_str().unwrap();
    assert!(observed.contains("unnamed silent cutter"), "{observed}");

    // The fix shown to work: a 1 s heartbeat keeps the router's entry alive.
    let r = json_of(kept.output(), "probe, heartbeat");
    let idle = finding(&r, "idle-timeout");
    assert_eq!(idle["status"], "pass", "{idle:#}");
    let observed = idle["observed"].as_str().unwrap();
    assert!(observed.contains("was answered"), "{observed}");
    assert_eq!(finding(&r, "path-idle")["status"], "pass", "{r:#}");
}
