//! ingress-nginx rules on `Ingress` objects. An Ingress is one route (its annotations hold
//! for all its paths), classified by `classify`: a snippet that sets Upgrade, buffering
//! turned off, a well-known path, then words; the declared transports go to the one on `/`.
use super::classify::{at, block, classify, report, Route};
use super::ingress::PREFIX;
use super::rules::{above, finding, no_heartbeat, resets, Applied, Hit, RuleId};
use super::{Config, Node, Sink, Stream, Workload};
use crate::findings::{Finding, Status};
use std::time::Duration;

/// An Ingress as a route: its name and paths, a snippet that sets Upgrade (ingress-nginx
/// forwards Upgrade by itself, so only a snippet says it), buffering turned off.
fn route(ing: &Node) -> Route<'_> {
    let ann = |k: &str| ing.children().iter().find(|d| d.name == k);
    let paths: Vec<&Node> = ing.children().iter().filter(|c| c.name == "path").collect();
    let mut text = ing.args.join(" ");
    for p in &paths {
        text.push(' ');
        text.push_str(&p.args.join(" "));
    }
    let upgrade = ["configuration-snippet", "server-snippet"]
        .iter()
        .filter_map(|k| ann(k))
        .find(|d| d.args.join(" ").to_ascii_lowercase().contains("upgrade"))
        .map(|d| format!("its {} sets Upgrade at {}", d.name, at(d)));
    let stream = ann("proxy-buffering")
        .filter(|d| d.arg(0) == Some("off"))
        .map(|d| format!("proxy-buffering: off at {}", at(d)));
    Route {
        at: ing,
        label: ing.label(),
        path: text,
        upgrade,
        stream,
        catch_all: paths.is_empty() || paths.iter().any(|p| p.arg(0) == Some("/")),
    }
}

pub fn check(c: &Config, w: &Workload, s: &mut Sink) {
    let routes: Vec<Route> = c.nodes.iter().map(route).collect();
    let classes = classify(&routes, w);
    for (r, carried) in routes.iter().zip(&classes) {
        s.routes.push(report(r, carried));
        let ing = r.at;
        let (out, applied) = (&mut s.out, &mut s.applied);
        // The timeouts once per Ingress: an event stream's when it carries one.
        let timed = carried
            .iter()
            .find(|c| c.transport == Stream::Sse)
            .or_else(|| carried.iter().find(|c| c.transport == Stream::Websocket));
        if let Some(c) = timed {
            timeouts(ing, (c.transport, &r.path), &block(r, c), w, out, applied);
        }
        snippet(ing, w, out, applied);
        for c in carried {
            let kind = c.transport;
            let block = block(r, c);
            let ann = |k: &str| ing.children().iter().find(|d| d.name == k);
            if kind == Stream::Sse {
                applied.mark(RuleId::IngressProxyBuffering);
                if let Some(d) = ann("proxy-buffering").filter(|d| d.arg(0) == Some("on")) {
                    out.push(finding(Hit {
                        id: RuleId::IngressProxyBuffering,
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
                applied.mark(RuleId::IngressAffinity);
                if ann("affinity").and_then(|d| d.arg(0)) != Some("cookie") {
                    out.push(finding(Hit {
                        id: RuleId::IngressAffinity,
                        status: Status::Warn,
                        at: ann("affinity").unwrap_or(ing),
                        block: block.clone(),
                        observed: "no affinity: each poll may land on another pod".into(),
                        expected: "affinity: cookie when the poll's session lives on one pod"
                            .into(),
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
}

/// proxy-read-timeout against the heartbeat; proxy-send-timeout only when unreadable (it
/// bounds a write the upstream does not take, not silence: `check_nginx`).
fn timeouts(
    ing: &Node,
    (kind, path): (Stream, &str),
    block: &str,
    w: &Workload,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    let ann = |k: &str| ing.children().iter().find(|d| d.name == k);
    applied.mark(RuleId::IngressSendTimeout);
    if let Some(d) = ann("proxy-send-timeout")
        .filter(|d| d.arg(0).is_some_and(|v| v.trim().parse::<u64>().is_err()))
    {
        out.push(finding(Hit {
            id: RuleId::IngressSendTimeout,
            status: Status::Fail,
            at: d,
            block: block.into(),
            observed: format!(
                "proxy-send-timeout: {} is not a number of seconds",
                d.args.join("")
            ),
            expected: "a number of seconds, such as \"60\"".into(),
            fix: "write the timeout in seconds",
            lines: vec![format!("{PREFIX}proxy-send-timeout: \"60\"")],
        }));
    }
    let (id, k) = (RuleId::IngressReadTimeout, "proxy-read-timeout");
    applied.mark(id);
    let d = ann(k);
    let secs: Option<u64> = d.and_then(|d| d.arg(0)).and_then(|v| v.trim().parse().ok());
    let t = Duration::from_secs(secs.unwrap_or(60));
    let on_path = super::path::timeout(t, w, "ingress-nginx", kind);
    let (status, expected, want) = match (on_path, w.ping) {
        (Some(n), _) if n.status == Status::Pass => return,
        (Some(n), _) => (n.status, n.expected, n.want),
        (None, Some(p)) if t <= p => (
            Status::Fail,
            format!("above the heartbeat ({} s; {})", p.as_secs(), resets(kind)),
            above(p),
        ),
        (None, Some(_)) => return,
        // A library's route (Socket.IO's path, or --app-protocol): its own heartbeat.
        (None, None) => match super::rules::library_need(t, path, w.app) {
            Some(None) => return,
            Some(Some(need)) => need,
            None => (
                Status::Warn,
                no_heartbeat(t, kind),
                t.max(Duration::from_secs(3600)),
            ),
        },
    };
    out.push(finding(Hit {
        id,
        status,
        at: d.unwrap_or(ing),
        block: block.into(),
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

/// A snippet annotation: the controller refuses the Ingress unless snippets are allowed
/// (`allow-snippet-annotations: true`, false by default since controller v1.9.0), so the
/// Upgrade lines or timeouts it carries never reach nginx.
fn snippet(ing: &Node, w: &Workload, out: &mut Vec<Finding>, applied: &mut Applied) {
    applied.mark(RuleId::IngressSnippet);
    let v = super::version::of(w, "ingress-nginx");
    if v.is_some_and(|v| !super::version::at_least(&v.parts, &[1, 9])) {
        return;
    }
    let Some(d) = ing
        .children()
        .iter()
        .find(|d| d.name == "configuration-snippet" || d.name == "server-snippet")
    else {
        return;
    };
    out.push(finding(Hit {
        id: RuleId::IngressSnippet,
        status: Status::Warn,
        at: d,
        block: ing.label(),
        observed: format!(
            "{} annotation: refused by ingress-nginx >= 1.9.0 unless the controller allows snippets ({})",
            d.name,
            super::version::assumed(v, "ingress-nginx", "none: assumed 1.9.0 or later").replace("assumed before none: ", "")
        ),
        expected: "the setting as its own annotation (proxy-read-timeout, ...), or snippets allowed on purpose".into(),
        fix: "replace the snippet by annotations, or set allow-snippet-annotations: \"true\" in the controller's ConfigMap",
        lines: vec![format!("{PREFIX}proxy-read-timeout: \"3600\"")],
    }));
}
