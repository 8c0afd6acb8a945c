//! data/hops.yaml validated like evidence.yaml (issue 24): every entry has a source URL
//! and the date it was read, ids are unique and include the contract ids, every value
//! parses, ranges hold their defaults, an unknown value says why, and every value the
//! chain rules read exists. The chain's JSON keys are the issue's contract.
use rtcheck::hops::{self, chain, LimitKind, Value};
use std::collections::BTreeSet;

const CONTRACT_IDS: &[&str] = &[
    "nginx",
    "ingress-nginx",
    "haproxy",
    "caddy",
    "traefik",
    "envoy",
    "aws-alb",
    "aws-clb",
    "aws-nlb",
    "aws-apigw-websocket",
    "gcp-alb",
    "azure-front-door",
    "azure-lb",
    "azure-appgw",
    "cloudflare",
    "heroku",
    // Added where vendors document figures (issue 24, "more where you find them"):
    // ids in profiles too, so renaming one breaks saved paths.
    "fly",
    "render",
    "cloud-run",
    "fastly",
    "akamai",
    // Inside the cluster and at the NAT (issue 40).
    "kube-proxy-ipvs",
    "kube-proxy-iptables",
    "istio-sidecar",
    "linkerd",
    "dapr-sidecar",
    "cloudflare-tunnel",
    "aws-nat-gateway",
    "gcp-cloud-nat",
    "azure-nat-gateway",
    "cgnat",
];

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && s.chars()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[test]
fn the_embedded_file_parses_with_unique_ids_including_the_contract_ones() {
    let all = hops::parse(hops::HOPS_YAML).expect("data/hops.yaml parses");
    let ids: Vec<&str> = all.iter().map(|h| h.id.as_str()).collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate ids in {ids:?}");
    for id in CONTRACT_IDS {
        assert!(unique.contains(id), "contract hop id `{id}` missing");
    }
}

#[test]
fn every_entry_has_a_source_url_and_the_date_it_was_read() {
    for h in hops::catalog() {
        assert!(!h.sources.is_empty(), "{}: no source", h.id);
        for s in &h.sources {
            assert!(
                s.url.starts_with("https://"),
                "{}: source `{}`",
                h.id,
                s.url
            );
            assert!(is_date(&s.read), "{}: read date `{}`", h.id, s.read);
        }
        assert!(!h.reload.trim().is_empty(), "{}: reload behaviour", h.id);
        assert!(["l4", "l7"].contains(&h.layer.as_str()), "{}: layer", h.id);
    }
}

#[test]
fn every_limit_is_complete_and_its_range_holds_the_default() {
    for h in hops::catalog() {
        for kind in [LimitKind::Idle, LimitKind::Lifetime] {
            assert!(
                h.limits.iter().any(|l| l.kind == kind),
                "{}: no {kind:?} entry (write `default: none` when there is none)",
                h.id
            );
        }
        for l in &h.limits {
            let at = format!("{}: {:?}", h.id, l.kind);
            assert!(!l.applies_to.is_empty(), "{at}: applies_to");
            assert!(!l.setting.trim().is_empty(), "{at}: setting");
            if l.kind == LimitKind::Idle {
                assert!(!l.reset_by.is_empty(), "{at}: what resets it");
            }
            if l.default == Value::Unknown {
                assert!(l.note.is_some(), "{at}: an unknown value must say why");
            }
            let secs = |v: Option<Value>| v.and_then(|v| v.secs());
            if let (Some(d), Some(lo)) = (l.default.secs(), secs(l.min)) {
                assert!(lo <= d, "{at}: min above default");
            }
            if let (Some(d), Some(hi)) = (l.default.secs(), secs(l.max)) {
                assert!(d <= hi, "{at}: default above max");
            }
            if l.min.is_some() || l.max.is_some() {
                assert!(l.adjustable, "{at}: a range on a fixed value");
            }
        }
    }
}

#[test]
fn the_issue_figures_are_in_the_data() {
    let secs = |id: &str, kind: LimitKind, t| {
        hops::get(id)
            .unwrap()
            .limits(kind, t)
            .find_map(|l| l.default.secs())
    };
    use rtcheck_wire::transport::Transport::*;
    assert_eq!(secs("aws-alb", LimitKind::Idle, Websocket), Some(60));
    assert_eq!(secs("heroku", LimitKind::Idle, Websocket), Some(55));
    assert_eq!(secs("gcp-alb", LimitKind::Lifetime, Websocket), Some(30));
    assert_eq!(
        hops::get("azure-front-door").unwrap().sse,
        hops::Support::No
    );
    assert!(hops::get("caddy").unwrap().reload.contains("closes every"));
}

#[test]
fn the_added_hops_carry_their_documented_figures() {
    use rtcheck_wire::transport::Transport::*;
    let first = |id: &str, kind: LimitKind, t| {
        hops::get(id)
            .unwrap()
            .limits(kind, t)
            .map(|l| l.default)
            .next()
    };
    // Cloud Run: the request timeout (5 min, up to 60) caps a WebSocket's whole life.
    assert_eq!(
        first("cloud-run", LimitKind::Lifetime, Websocket),
        Some(Value::Secs(std::time::Duration::from_secs(300)))
    );
    let cap = hops::get("cloud-run")
        .unwrap()
        .limits(LimitKind::Lifetime, Websocket)
        .next()
        .unwrap();
    assert_eq!(cap.max.and_then(|m| m.secs()), Some(3600));
    // Fastly: 10 s between bytes from the backend ends an event stream.
    assert_eq!(
        first("fastly", LimitKind::Idle, Sse).and_then(|v| v.secs()),
        Some(10)
    );
    // Fly's 60 s idle close was removed from its documentation in 2023: no longer claimed.
    assert_eq!(
        first("fly", LimitKind::Idle, Websocket),
        Some(Value::Unknown)
    );
    // Render documents no time limit on a WebSocket.
    assert_eq!(
        first("render", LimitKind::Lifetime, Websocket),
        Some(Value::None)
    );
    // Akamai's sources disagree on the read timeout's default (120 s or 5 s): not picked.
    assert_eq!(first("akamai", LimitKind::Idle, Sse), Some(Value::Unknown));
    for id in ["fly", "render", "cloud-run", "fastly", "akamai"] {
        let h = hops::get(id).unwrap();
        assert!(
            h.sources.iter().all(|s| s.read == "2026-12-03"),
            "{id}: read date"
        );
    }
}

#[test]
fn every_value_a_rule_reads_exists() {
    // The heartbeat rule reads the seed's production ping.
    for name in ["production_min", "production_max"] {
        let e = rtcheck::evidence::store().get("ping-timing").unwrap();
        assert!(
            e.values.iter().any(|v| v.name == name),
            "ping-timing {name}"
        );
    }
    // Every hop alone computes (no rule meets a missing field).
    for h in hops::catalog() {
        let c = chain::compute(std::slice::from_ref(&h.id), &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", h.id));
        assert_eq!(c.transports.len(), 3, "{}", h.id);
    }
}

#[test]
fn the_chain_json_has_the_contract_keys() {
    let path: Vec<String> = ["cloudflare", "aws-alb", "nginx"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let c = chain::compute(&path, &Default::default()).unwrap();
    let v: serde_json::Value = serde_json::to_value(&c).unwrap();
    for key in [
        "path",
        "tightest_idle_s",
        "reset_by",
        "lifetime_cap_s",
        "heartbeat_max_s",
        "reconnect_required",
        "excluded_transports",
    ] {
        assert!(v.get(key).is_some(), "missing key {key}: {v}");
    }
    assert_eq!(v["tightest_idle_s"], 60);
    assert_eq!(v["heartbeat_max_s"], 30);
    assert_eq!(v["path"][1], "aws-alb");
}

/// Issue 35 item 3: every cloud command in the data is complete as printed: the resource it
/// changes is named (`--load-balancer-arn <ARN>`, `--resource-group <RG>`, ...), and every
/// `<PLACEHOLDER>` it holds comes with the command that finds it (`<ARN>: aws elbv2 ...`).
#[test]
fn every_cloud_command_names_its_resource_and_how_to_find_each_placeholder() {
    let text = include_str!("../../data/hops.yaml");
    let required: &[(&str, &[&str])] = &[
        (
            "aws elbv2 modify-load-balancer-attributes",
            &["--load-balancer-arn"],
        ),
        ("aws elbv2 modify-listener-attributes", &["--listener-arn"]),
        (
            "aws elb modify-load-balancer-attributes",
            &["--load-balancer-name"],
        ),
        ("gcloud compute backend-services update", &["--global"]),
        ("gcloud run services update", &["--region"]),
        (
            "az network lb rule update",
            &["--resource-group", "--lb-name", "--name"],
        ),
        (
            "az network application-gateway update",
            &["--resource-group", "--name"],
        ),
        ("heroku features:enable", &["--app"]),
    ];
    let mut checked = 0;
    for line in text.lines().filter(|l| l.contains("setting")) {
        let parts: Vec<&str> = line.split("; ").collect();
        for (cmd, flags) in required {
            let Some(part) = parts.iter().find(|p| p.contains(cmd)) else {
                continue;
            };
            checked += 1;
            for f in *flags {
                assert!(part.contains(f), "{cmd} without {f}: {line}");
            }
            // Each placeholder of the command: a later part says how to find it.
            for ph in part.split('<').skip(1).filter_map(|p| p.split_once('>')) {
                let name = format!("<{}>:", ph.0);
                assert!(
                    parts.iter().any(|p| p.trim_start().starts_with(&name))
                        || ["<NAME>", "<RG>", "<LB>", "<REGION>"]
                            .contains(&format!("<{}>", ph.0).as_str()),
                    "{cmd}: {name} not found in {line}"
                );
            }
        }
    }
    assert!(checked >= 9, "the commands are in the data: {checked}");
}
