//! ingress-nginx rules on `Ingress` objects: an Ingress carries a stream when its name or
//! one of its paths says so, or (none saying anything) when the profile declares it.
use super::ingress::PREFIX;
use super::rules::{above, finding, Applied, Hit};
use super::{classify, declared, Config, Node, Stream, Workload};
use crate::findings::{Finding, Status};
use std::time::Duration;

fn stream_of(ing: &Node, w: &Workload) -> Option<Stream> {
    let mut text = ing.args.join(" ");
    for p in ing.children().iter().filter(|c| c.name == "path") {
        text.push(' ');
        text.push_str(&p.args.join(" "));
    }
    // socket.io's path is both: its polling needs affinity, its upgrade the timeouts.
    classify(&text, w)
}

pub fn check(c: &Config, w: &Workload, out: &mut Vec<Finding>, applied: &mut Applied) {
    let any_named = c.nodes.iter().any(|i| stream_of(i, w).is_some());
    for ing in &c.nodes {
        let Some(kind) = stream_of(ing, w).or(if any_named { None } else { declared(w) }) else {
            continue;
        };
        let block = format!("{} ({})", ing.label(), kind.as_str());
        let ann = |k: &str| ing.children().iter().find(|d| d.name == k);
        if kind != Stream::Polling {
            for (id, k) in [
                ("ingress-read-timeout", "proxy-read-timeout"),
                ("ingress-send-timeout", "proxy-send-timeout"),
            ] {
                applied.mark(id);
                let d = ann(k);
                let secs: Option<u64> =
                    d.and_then(|d| d.arg(0)).and_then(|v| v.trim().parse().ok());
                let t = Duration::from_secs(secs.unwrap_or(60));
                let on_path = super::path::timeout(t, w, "ingress-nginx", kind);
                let (status, expected, want) = match (on_path, w.ping) {
                    (Some(n), _) if n.status == Status::Pass => continue,
                    (Some(n), _) => (n.status, n.expected, n.want),
                    (None, Some(p)) if t <= p => (Status::Fail, format!("above the heartbeat ({} s)", p.as_secs()), above(p)),
                    (None, None) if secs.is_none_or(|s| s == 60) => (
                        Status::Warn,
                        "a heartbeat below the timeout (no --ping or profile ping declared): a stream quiet for 60 s is cut".into(),
                        Duration::from_secs(3600),
                    ),
                    _ => continue,
                };
                out.push(finding(Hit {
                    id,
                    status,
                    at: d.unwrap_or(ing),
                    block: block.clone(),
                    observed: d.map_or(format!("{k} not set (default 60)"), |d| {
                        format!("{k}: {}", d.args.join(""))
                    }),
                    expected,
                    fix: "raise the timeout above the heartbeat",
                    lines: vec![format!(
                        "{PREFIX}{k}: \"{}\"",
                        want.as_secs_f64().ceil() as u64
                    )],
                }));
            }
        }
        if kind == Stream::Sse {
            applied.mark("ingress-proxy-buffering");
            if let Some(d) = ann("proxy-buffering").filter(|d| d.arg(0) == Some("on")) {
                out.push(finding(Hit {
                    id: "ingress-proxy-buffering",
                    status: Status::Fail,
                    at: d,
                    block: block.clone(),
                    observed: "proxy-buffering: on".into(),
                    expected: "off (the ingress-nginx default)".into(),
                    fix: "turn buffering off for the event stream",
                    lines: vec![format!("{PREFIX}proxy-buffering: \"off\"")],
                }));
            }
        }
        if kind == Stream::Polling {
            applied.mark("ingress-affinity");
            if ann("affinity").and_then(|d| d.arg(0)) != Some("cookie") {
                out.push(finding(Hit {
                    id: "ingress-affinity",
                    status: Status::Warn,
                    at: ann("affinity").unwrap_or(ing),
                    block: block.clone(),
                    observed: "no affinity: each poll may land on another pod".into(),
                    expected: "affinity: cookie when the poll's session lives on one pod".into(),
                    fix: "stick a client's polls to one pod",
                    lines: vec![
                        format!("{PREFIX}affinity: \"cookie\""),
                        format!("{PREFIX}session-cookie-name: \"route\""),
                    ],
                }));
            }
        }
    }
}
