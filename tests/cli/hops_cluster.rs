//! Issue 40: the cutters inside the cluster and at the NAT in `hops --path` and `choose
//! --path` (JSON parsed back), and the server-side links to Redis or a database
//! (`redis:ID`, `backend:ID`): their hops, idle limit and keepalive, kept out of the users'
//! chain. Bad sides are one line, exit 2.
use serde_json::Value;
use std::process::{Command, Output};

fn rtcheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtcheck"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run rtcheck")
}

fn json(args: &[&str]) -> Value {
    let o = rtcheck(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON")
}

const K8S_PATH: &str =
    "cloudflare,aws-alb,ingress-nginx,kube-proxy-ipvs,istio-sidecar,redis:aws-nat-gateway";

#[test]
fn a_kubernetes_path_behind_a_nat_names_every_cut_and_the_redis_link() {
    let v = json(&["hops", "--path", K8S_PATH, "--format", "json"]);
    assert_eq!(
        v["path"],
        serde_json::json!([
            "cloudflare",
            "aws-alb",
            "ingress-nginx",
            "kube-proxy-ipvs",
            "istio-sidecar"
        ]),
        "the NAT on the Redis link is not between the users and the server"
    );
    assert_eq!(v["tightest_idle_s"], 60);
    let ws = v["transports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["transport"] == "websocket")
        .unwrap();
    let unknown: Vec<&str> = ws["unknown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    assert!(
        unknown.iter().any(|u| u.starts_with("istio-sidecar: idle")),
        "{unknown:?}"
    );
    let links = v["backend_links"].as_array().unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0]["side"], "redis");
    assert_eq!(links[0]["hops"], serde_json::json!(["aws-nat-gateway"]));
    assert_eq!(links[0]["tightest_idle_s"], 350);
    assert_eq!(links[0]["keepalive_max_s"], 175);
    assert_eq!(links[0]["idle"]["hop"], "aws-nat-gateway");
    assert!(v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("redis link")));
}

#[test]
fn the_text_chain_has_a_server_side_section_within_80_columns() {
    let o = rtcheck(&["hops", "--path", K8S_PATH]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("Server side"), "{text}");
    assert!(text.contains("redis link: aws-nat-gateway"), "{text}");
    assert!(text.contains("every 175 s or less"), "{text}");
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "too wide: {l:?}");
    }
}

#[test]
fn a_tunnel_cut_binds_and_keepalive_does_not_help_it() {
    let v = json(&[
        "hops",
        "--path",
        "cloudflare-tunnel,nginx",
        "--format",
        "json",
    ]);
    assert_eq!(v["tightest_idle_s"], 60, "nginx's 60 s is tighter");
    let v = json(&[
        "hops",
        "--path",
        "cloudflare-tunnel,nginx",
        "--override",
        "nginx.idle=1h",
        "--format",
        "json",
    ]);
    assert_eq!(v["tightest_idle_s"], 270);
    assert_eq!(v["heartbeat_max_s"], 135);
    let resets: Vec<&str> = v["reset_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(!resets.contains(&"tcp-keepalive"), "{resets:?}");
}

#[test]
fn choose_carries_the_cluster_chain_and_its_backend_links() {
    let v = json(&[
        "choose",
        "--format",
        "json",
        "--visible-within",
        "200ms",
        "--upstream",
        "sparse",
        "--loss",
        "per-user",
        "--path",
        "aws-nlb,kube-proxy-iptables,linkerd,backend:gcp-cloud-nat",
    ]);
    let c = &v["chain"];
    assert_eq!(
        c["path"],
        serde_json::json!(["aws-nlb", "kube-proxy-iptables", "linkerd"])
    );
    assert_eq!(c["tightest_idle_s"], 350, "the NLB binds");
    assert_eq!(c["backend_links"][0]["side"], "backend");
    assert_eq!(c["backend_links"][0]["tightest_idle_s"], 1200);
}

#[test]
fn an_unknown_side_or_hop_is_one_line_and_exit_2() {
    for (path, needle) in [
        ("nginx,db:aws-nat-gateway", "unknown link `db:`"),
        ("nginx,redis:aws-nat", "unknown hop `aws-nat`"),
    ] {
        let o = rtcheck(&["hops", "--path", path]);
        assert_eq!(o.status.code(), Some(2), "{path}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
}
