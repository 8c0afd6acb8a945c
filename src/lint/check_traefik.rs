//! Traefik rules on the file provider's dynamic configuration. Each router is a route
//! classified by `classify` from its name and rule (`PathPrefix(`/events`)`); one whose
//! rule names no path is the catch-all. Its middlewares are resolved by name in the same
//! file, chains expanded by the parser.
use super::classify::{block, classify, report, Route};
use super::rules::{finding, Applied, Hit, RuleId};
use super::{Config, Node, Sink, Stream, Workload};
use crate::findings::{Finding, Status};

const SSE_TYPE: &str = "text/event-stream";

/// A router as a route: its name and rule; it takes every request when its rule names no
/// path (a `Host` only) or the root prefix.
fn route(r: &Node) -> Route<'_> {
    let rule = r
        .children()
        .iter()
        .find(|c| c.name == "rule")
        .map(|c| c.args.join(" "))
        .unwrap_or_default();
    let catch_all = !rule.contains("Path") || rule.contains("PathPrefix(`/`)");
    Route {
        at: r,
        label: r.label(),
        path: format!("{} {rule}", r.args.join(" ")),
        upgrade: None,
        stream: None,
        catch_all,
    }
}

/// The definition `kind` (`compress`, `buffering`) of middleware `name`, if this file has it.
fn definition<'a>(c: &'a Config, name: &str, kind: &str) -> Option<&'a Node> {
    c.nodes
        .iter()
        .find(|n| n.name == "middleware" && n.arg(0) == Some(name) && n.block.is_some())?
        .children()
        .iter()
        .find(|k| k.name == kind)
}

fn option<'a>(def: &'a Node, key: &str) -> Option<&'a Node> {
    def.children()
        .iter()
        .find(|o| o.name.eq_ignore_ascii_case(key))
}

fn lists_sse(o: Option<&Node>) -> bool {
    o.is_some_and(|o| {
        o.args.iter().any(|a| {
            let t: String = a
                .split(';')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            t.eq_ignore_ascii_case(SSE_TYPE)
        })
    })
}

/// A compress middleware compresses an event stream unless the type is excluded (or an
/// include list leaves it out); it waits for its minimum body size (1024 bytes) first.
fn compresses_sse(def: &Node) -> bool {
    let included = option(def, "includedContentTypes");
    if included.is_some() {
        return lists_sse(included);
    }
    !lists_sse(option(def, "excludedContentTypes"))
}

/// A buffering middleware holds the response only with a response limit or a retry
/// expression; an event stream never ends, so it is held until it exceeds the limit.
fn buffers_response(def: &Node) -> Option<&Node> {
    [
        "maxResponseBodyBytes",
        "memResponseBodyBytes",
        "retryExpression",
    ]
    .iter()
    .filter_map(|k| option(def, k))
    .find(|o| o.arg(0).is_some_and(|v| !v.is_empty() && v != "0"))
}

pub fn check(c: &Config, w: &Workload, s: &mut Sink) {
    let routers: Vec<&Node> = c.nodes.iter().filter(|n| n.name == "router").collect();
    let routes: Vec<Route> = routers.iter().map(|r| route(r)).collect();
    let classes = classify(&routes, w);
    for (r, carried) in routes.iter().zip(&classes) {
        s.routes.push(report(r, carried));
        let used: Vec<&Node> =
            r.at.children()
                .iter()
                .filter(|m| m.name == "middleware")
                .collect();
        for k in carried {
            let block = block(r, k);
            match k.transport {
                Stream::Sse => sse_rules(c, r.at, &used, &block, &mut s.out, &mut s.applied),
                Stream::Polling => sticky(c, r.at, &block, &mut s.out, &mut s.applied),
                Stream::Websocket => {}
            }
        }
    }
    unrouted(c, &routers, &mut s.out, &mut s.applied);
}

/// Services no router sends requests to: with no router at all the file routes nothing
/// (a `rule` written under `services` is the usual slip); Traefik only routes through
/// `http.routers`.
fn unrouted(c: &Config, routers: &[&Node], out: &mut Vec<Finding>, applied: &mut Applied) {
    let services: Vec<&Node> = c.nodes.iter().filter(|n| n.name == "service").collect();
    if services.is_empty() {
        return;
    }
    applied.mark(RuleId::TraefikUnroutedService);
    let targets: Vec<&str> = routers
        .iter()
        .flat_map(|r| r.children().iter().filter(|k| k.name == "service"))
        .filter_map(|k| k.arg(0))
        .map(|n| n.split('@').next().unwrap_or(n))
        .collect();
    for svc in services {
        let name = svc.arg(0).unwrap_or("");
        if targets.contains(&name) {
            continue;
        }
        let rule = svc.children().iter().find(|k| k.name == "rule");
        let why = match rule {
            Some(r) => format!(
                "its rule `{}` (line {}) is under services, where Traefik ignores it",
                r.args.join(" "),
                r.line
            ),
            None => "no router names it".into(),
        };
        out.push(finding(Hit {
            id: RuleId::TraefikUnroutedService,
            status: if routers.is_empty() {
                Status::Fail
            } else {
                Status::Warn
            },
            at: rule.unwrap_or(svc),
            block: format!("service {name}"),
            observed: format!("service {name} receives no request: {why}"),
            expected: "a router (http.routers) with the rule and `service: NAME`".into(),
            fix: "route to the service from a router",
            lines: vec![
                format!(
                    "http.routers.{name}.rule: {}",
                    rule.map_or("PathPrefix(`/`)".to_string(), |r| r.args.join(" "))
                ),
                format!("http.routers.{name}.service: {name}"),
            ],
        }));
    }
}

fn sse_rules(
    c: &Config,
    r: &Node,
    used: &[&Node],
    block: &str,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    applied.mark(RuleId::TraefikCompressStream);
    applied.mark(RuleId::TraefikBufferingStream);
    let router = r.arg(0).unwrap_or("");
    for m in used {
        let name = m.arg(0).unwrap_or("");
        if let Some(def) = definition(c, name, "compress").filter(|d| compresses_sse(d)) {
            out.push(finding(Hit {
                id: RuleId::TraefikCompressStream,
                status: Status::Fail,
                at: m,
                block: block.into(),
                observed: format!(
                    "middleware {name} (compress, {}:{}) compresses text/event-stream",
                    def.file, def.line
                ),
                expected: "text/event-stream excluded from compression on the event-stream router"
                    .into(),
                fix: "exclude the event stream from the compress middleware",
                lines: vec![format!(
                    "http.middlewares.{name}.compress.excludedContentTypes: [{SSE_TYPE}]"
                )],
            }));
        }
        if let Some(o) = definition(c, name, "buffering").and_then(buffers_response) {
            out.push(finding(Hit {
                id: RuleId::TraefikBufferingStream,
                status: Status::Fail,
                at: m,
                block: block.into(),
                observed: format!(
                    "middleware {name} (buffering, {}:{}) sets {} {}: the response is held, and an event stream never ends",
                    o.file,
                    o.line,
                    o.name,
                    o.args.join(" ")
                ),
                expected: "no response buffering on the event-stream router".into(),
                fix: "take the buffering middleware off the event-stream router (or drop its response limit and retryExpression)",
                lines: vec![format!(
                    "http.routers.{router}.middlewares: remove {name}"
                )],
            }));
        }
    }
}

fn sticky(c: &Config, r: &Node, block: &str, out: &mut Vec<Finding>, applied: &mut Applied) {
    let Some(svc_name) = r
        .children()
        .iter()
        .find(|k| k.name == "service")
        .and_then(|s| s.arg(0))
    else {
        return;
    };
    let local = svc_name.split('@').next().unwrap_or(svc_name);
    let Some(svc) = c
        .nodes
        .iter()
        .find(|n| n.name == "service" && n.arg(0) == Some(local))
    else {
        return;
    };
    let servers = svc.children().iter().filter(|k| k.name == "server").count();
    // One server: every poll lands on it; nothing to stick to.
    if servers < 2 {
        return;
    }
    applied.mark(RuleId::TraefikStickyPolling);
    if svc.children().iter().any(|k| k.name == "sticky") {
        return;
    }
    out.push(finding(Hit {
        id: RuleId::TraefikStickyPolling,
        status: Status::Warn,
        at: svc,
        block: block.into(),
        observed: format!("service {local}: {servers} servers, no sticky cookie: each poll may land on another server"),
        expected: "a sticky cookie when the poll's session lives on one server".into(),
        fix: "stick a client's polls to one server",
        lines: vec![format!(
            "http.services.{local}.loadBalancer.sticky.cookie.name: route"
        )],
    }));
}
