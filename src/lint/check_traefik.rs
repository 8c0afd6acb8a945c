//! Traefik rules on the file provider's dynamic configuration. A router carries a stream
//! when its name or rule says so (`PathPrefix(`/events`)`), or (none saying anything) when
//! the profile declares the transport. Its middlewares are resolved by name in the same
//! file, chains expanded by the parser.
use super::rules::{finding, Applied, Hit};
use super::{classify, declared, Config, Node, Stream, Workload};
use crate::findings::{Finding, Status};

const SSE_TYPE: &str = "text/event-stream";

fn stream_of(r: &Node, w: &Workload) -> Option<Stream> {
    let rule = r
        .children()
        .iter()
        .find(|c| c.name == "rule")
        .map(|c| c.args.join(" "))
        .unwrap_or_default();
    classify(&format!("{} {rule}", r.args.join(" ")), w)
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

pub fn check(c: &Config, w: &Workload, out: &mut Vec<Finding>, applied: &mut Applied) {
    let routers: Vec<&Node> = c.nodes.iter().filter(|n| n.name == "router").collect();
    let any_named = routers.iter().any(|r| stream_of(r, w).is_some());
    for r in routers {
        let Some(kind) = stream_of(r, w).or(if any_named { None } else { declared(w) }) else {
            continue;
        };
        let block = format!("{} ({})", r.label(), kind.as_str());
        let used: Vec<&Node> = r
            .children()
            .iter()
            .filter(|m| m.name == "middleware")
            .collect();
        if kind == Stream::Sse {
            sse_rules(c, r, &used, &block, out, applied);
        }
        if kind == Stream::Polling {
            sticky(c, r, &block, out, applied);
        }
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
    applied.mark("traefik-compress-stream");
    applied.mark("traefik-buffering-stream");
    let router = r.arg(0).unwrap_or("");
    for m in used {
        let name = m.arg(0).unwrap_or("");
        if let Some(def) = definition(c, name, "compress").filter(|d| compresses_sse(d)) {
            out.push(finding(Hit {
                id: "traefik-compress-stream",
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
                id: "traefik-buffering-stream",
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
    applied.mark("traefik-sticky-polling");
    if svc.children().iter().any(|k| k.name == "sticky") {
        return;
    }
    out.push(finding(Hit {
        id: "traefik-sticky-polling",
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
