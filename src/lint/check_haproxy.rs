//! HAProxy rules. A proxy section (backend, listen, frontend) takes a setting from itself,
//! else from the last `defaults` section above it. A backend carries a stream when its name
//! says so, when a frontend routes to it on an ACL about Upgrade/websocket or a stream path,
//! or (no name saying anything) when the profile declares the transport.
use super::rules::{above, finding, haproxy_time, secs, Applied, Hit};
use super::{classify, declared, Config, Node, Stream, Workload};
use crate::findings::{Finding, Status};
use std::collections::BTreeMap;

/// The keyword line starting with `words` in the section, else in its defaults.
fn setting<'a>(sec: &'a Node, defaults: Option<&'a Node>, words: &[&str]) -> Option<&'a Node> {
    let m = |d: &&Node| {
        d.name == words[0]
            && d.args.len() + 1 >= words.len()
            && d.args.iter().zip(&words[1..]).all(|(a, w)| a == w)
    };
    sec.children()
        .iter()
        .rev()
        .find(m)
        .or_else(|| defaults.and_then(|d| d.children().iter().rev().find(m)))
}

/// Each proxy section with the `defaults` in force for it.
fn proxies(c: &Config) -> Vec<(&Node, Option<&Node>)> {
    let mut defaults = None;
    let mut out = vec![];
    for s in &c.nodes {
        match s.name.as_str() {
            "defaults" => defaults = Some(s),
            "frontend" | "backend" | "listen" => out.push((s, defaults)),
            _ => {}
        }
    }
    out
}

/// Backends a frontend routes to on an ACL that names the upgrade or a stream path.
fn routed(c: &Config, w: &Workload) -> BTreeMap<String, Stream> {
    let mut out = BTreeMap::new();
    for f in c
        .nodes
        .iter()
        .filter(|s| s.name == "frontend" || s.name == "listen")
    {
        let acls: BTreeMap<&str, String> = f
            .children()
            .iter()
            .filter(|d| d.name == "acl")
            .filter_map(|d| Some((d.arg(0)?, d.args[1..].join(" "))))
            .collect();
        for u in f.children().iter().filter(|d| d.name == "use_backend") {
            let (Some(be), rest) = (u.arg(0), u.args.iter().skip(1)) else {
                continue;
            };
            let cond: String = rest
                .map(|a| {
                    acls.get(a.trim_start_matches('!'))
                        .cloned()
                        .unwrap_or_else(|| a.clone())
                })
                .collect::<Vec<_>>()
                .join(" ");
            let lower = cond.to_ascii_lowercase();
            let kind = if lower.contains("upgrade") || lower.contains("websocket") {
                Some(Stream::Websocket)
            } else {
                classify(&cond, w)
            };
            if let Some(k) = kind {
                out.insert(be.to_string(), k);
            }
        }
    }
    out
}

pub fn check(c: &Config, w: &Workload, out: &mut Vec<Finding>, applied: &mut Applied) {
    let routes = routed(c, w);
    let px = proxies(c);
    let named = |s: &Node| {
        routes
            .get(s.arg(0).unwrap_or(""))
            .copied()
            .or_else(|| classify(&s.args.join(" "), w))
    };
    let any_named = px
        .iter()
        .any(|(s, _)| s.name != "frontend" && named(s).is_some());
    let mut has_ws = false;
    for (sec, defs) in px.iter().filter(|(s, _)| s.name != "frontend") {
        let Some(kind) = named(sec).or(if any_named { None } else { declared(w) }) else {
            continue;
        };
        let block = format!("{} ({})", sec.label(), kind.as_str());
        if kind == Stream::Websocket {
            has_ws = true;
            tunnel(sec, *defs, &block, w, out, applied);
        }
        applied.mark("haproxy-http-close");
        for opt in ["httpclose", "http-server-close"] {
            if let Some(d) = setting(sec, *defs, &["option", opt]) {
                out.push(finding(Hit {
                    id: "haproxy-http-close",
                    status: Status::Warn,
                    at: d,
                    block: block.clone(),
                    observed: format!("option {opt}: the connection closes after each response"),
                    expected: "keep-alive (the default): a poll or reconnect reuses its connection"
                        .into(),
                    fix: "remove the option (or override it in this section)",
                    lines: vec![format!("no option {opt}")],
                }));
            }
        }
        if kind == Stream::Sse {
            compression(sec, *defs, &block, out, applied);
            server_timeout(sec, *defs, &block, w, out, applied);
        }
    }
    if has_ws {
        client_fin(&px, out, applied);
    }
    maxconn(c, &px, w, out, applied);
}

/// A `timeout` HAProxy would not load (over 2^31-1 ms, or not its syntax) is a Fail:
/// `haproxy -c` rejects the file, so the reload keeps the old config (or nothing starts).
fn refused(d: &Node, id: &'static str, block: &str, out: &mut Vec<Finding>) -> bool {
    let v = d.arg(1).unwrap_or("");
    let Err(e) = super::time::haproxy(v) else {
        return false;
    };
    out.push(finding(Hit {
        id,
        status: Status::Fail,
        at: d,
        block: block.into(),
        observed: format!(
            "timeout {} `{v}`: {}",
            d.arg(0).unwrap_or(""),
            e.why("haproxy")
        ),
        expected: "a time haproxy -c accepts (one number and unit, at most 24d)".into(),
        fix: "write the timeout as one HAProxy time",
        lines: vec![format!("timeout {} 3600s", d.arg(0).unwrap_or(""))],
    }));
    true
}

fn tunnel(
    sec: &Node,
    defs: Option<&Node>,
    block: &str,
    w: &Workload,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    applied.mark("haproxy-timeout-tunnel");
    let beat = super::path::heartbeat(w, "haproxy", Stream::Websocket);
    let want = match &beat {
        Some((b, _)) => above(*b),
        None => w.ping.map_or(std::time::Duration::from_secs(3600), above),
    };
    let line = vec![format!("timeout tunnel {}", secs(want))];
    match setting(sec, defs, &["timeout", "tunnel"]) {
        None => {
            let cut = ["client", "server"]
                .iter()
                .filter_map(|k| {
                    setting(sec, defs, &["timeout", k])
                        .map(|d| format!("timeout {k} {}", d.arg(1).unwrap_or("")))
                })
                .collect::<Vec<_>>();
            let cut = if cut.is_empty() {
                "timeout client/server (unset: no bound, HAProxy warns)".to_string()
            } else {
                cut.join(", ")
            };
            out.push(finding(Hit {
                id: "haproxy-timeout-tunnel",
                status: Status::Fail,
                at: sec,
                block: block.into(),
                observed: format!("no timeout tunnel: {cut} cut the upgraded connection"),
                expected: "timeout tunnel above the heartbeat".into(),
                fix: "set timeout tunnel for upgraded connections",
                lines: line,
            }));
        }
        Some(d) => {
            if refused(d, "haproxy-timeout-tunnel", block, out) {
                return;
            }
            let t = d.arg(1).and_then(haproxy_time);
            let need = t.and_then(|t| super::path::timeout(t, w, "haproxy", Stream::Websocket));
            if let Some(n) = need.filter(|n| n.status != Status::Pass) {
                out.push(finding(Hit {
                    id: "haproxy-timeout-tunnel",
                    status: n.status,
                    at: d,
                    block: block.into(),
                    observed: format!(
                        "timeout tunnel {} (a bare number is milliseconds)",
                        d.arg(1).unwrap_or("")
                    ),
                    expected: n.expected,
                    fix: "raise timeout tunnel to carry the path's heartbeat",
                    lines: line,
                }));
                return;
            }
            if let (Some(t), Some(p), None) = (t, w.ping, &beat) {
                if t <= p {
                    out.push(finding(Hit {
                        id: "haproxy-timeout-tunnel",
                        status: Status::Fail,
                        at: d,
                        block: block.into(),
                        observed: format!(
                            "timeout tunnel {} (a bare number is milliseconds)",
                            d.arg(1).unwrap_or("")
                        ),
                        expected: format!("above the heartbeat ({})", secs(p)),
                        fix: "raise timeout tunnel above the heartbeat",
                        lines: line,
                    }));
                }
            }
        }
    }
}

fn client_fin(px: &[(&Node, Option<&Node>)], out: &mut Vec<Finding>, applied: &mut Applied) {
    applied.mark("haproxy-client-fin");
    for (f, defs) in px
        .iter()
        .filter(|(s, _)| s.name == "frontend" || s.name == "listen")
    {
        if setting(f, *defs, &["timeout", "client-fin"]).is_none() {
            out.push(finding(Hit {
                id: "haproxy-client-fin", status: Status::Warn, at: f, block: f.label(),
                observed: "no timeout client-fin: a vanished client's half-closed tunnel lives for the whole timeout tunnel".into(),
                expected: "timeout client-fin (the manual's companion of timeout tunnel)".into(),
                fix: "bound half-closed client connections", lines: vec!["timeout client-fin 30s".into()],
            }));
        }
    }
}

fn compression(
    sec: &Node,
    defs: Option<&Node>,
    block: &str,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    applied.mark("haproxy-compression");
    let Some(algo) = setting(sec, defs, &["compression", "algo"]) else {
        return;
    };
    let types = setting(sec, defs, &["compression", "type"]);
    let hits = types.is_none_or(|t| t.args.iter().any(|a| a == "text/event-stream"));
    if hits {
        out.push(finding(Hit {
            id: "haproxy-compression",
            status: Status::Fail,
            at: types.unwrap_or(algo),
            block: block.into(),
            observed: types.map_or(
                format!(
                    "compression {} with no compression type (every type)",
                    algo.args.join(" ")
                ),
                |t| format!("compression {}", t.args.join(" ")),
            ),
            expected: "text/event-stream not compressed".into(),
            fix: "list only the types to compress, without text/event-stream",
            lines: vec!["compression type text/html text/plain application/json".into()],
        }));
    }
}

fn maxconn(
    c: &Config,
    px: &[(&Node, Option<&Node>)],
    w: &Workload,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    let Some(global) = c.nodes.iter().find(|s| s.name == "global") else {
        return;
    };
    // A config that proxies nothing (a stock install) holds no connections to judge.
    if !px
        .iter()
        .any(|(s, _)| s.name == "frontend" || s.name == "listen")
    {
        return;
    }
    applied.mark("haproxy-maxconn");
    let need = w.connections;
    let fix = vec![format!("maxconn {}", need + need / 10)];
    let g = global.children().iter().find(|d| d.name == "maxconn");
    match g.and_then(|d| d.arg(0)).and_then(|v| v.parse::<u64>().ok()) {
        None => out.push(finding(Hit {
            id: "haproxy-maxconn",
            status: Status::Warn,
            at: global,
            block: "global".into(),
            observed: "global maxconn not set: derived from ulimit -n at start".into(),
            expected: format!(">= {need} connections (HAProxy then sets 2 fds each)"),
            fix: "set maxconn in global",
            lines: fix.clone(),
        })),
        Some(m) if m < need => out.push(finding(Hit {
            id: "haproxy-maxconn",
            status: Status::Fail,
            at: g.unwrap_or(global),
            block: "global".into(),
            observed: format!("global maxconn {m}"),
            expected: format!(">= {need} connections"),
            fix: "raise maxconn in global",
            lines: fix.clone(),
        })),
        Some(_) => {}
    }
    for (f, defs) in px
        .iter()
        .filter(|(s, _)| s.name == "frontend" || s.name == "listen")
    {
        let Some(d) = setting(f, *defs, &["maxconn"]) else {
            continue;
        };
        if let Some(m) = d
            .arg(0)
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|m| *m < need)
        {
            out.push(finding(Hit {
                id: "haproxy-maxconn",
                status: Status::Fail,
                at: d,
                block: f.label(),
                observed: format!("maxconn {m} for {}", f.label()),
                expected: format!(">= {need} connections"),
                fix: "raise this frontend's maxconn",
                lines: fix.clone(),
            }));
        }
    }
}

/// An event stream is a response that never ends: `timeout server` is the longest silence
/// between its events, so it must exceed the heartbeat.
fn server_timeout(
    sec: &Node,
    defs: Option<&Node>,
    block: &str,
    w: &Workload,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    let beat = super::path::heartbeat(w, "haproxy", Stream::Sse);
    if w.ping.is_none() && beat.is_none() {
        return;
    }
    applied.mark("haproxy-timeout-server");
    let Some(d) = setting(sec, defs, &["timeout", "server"]) else {
        return;
    };
    if refused(d, "haproxy-timeout-server", block, out) {
        return;
    }
    let Some(t) = d.arg(1).and_then(haproxy_time) else {
        return;
    };
    if let Some(n) = super::path::timeout(t, w, "haproxy", Stream::Sse) {
        if n.status != Status::Pass {
            out.push(finding(Hit {
                id: "haproxy-timeout-server",
                status: n.status,
                at: d,
                block: block.into(),
                observed: format!(
                    "timeout server {} (a bare number is milliseconds)",
                    d.arg(1).unwrap_or("")
                ),
                expected: n.expected,
                fix: "raise timeout server for the event-stream backend to carry the path's heartbeat",
                lines: vec![format!("timeout server {}", secs(n.want))],
            }));
        }
        return;
    }
    let Some(p) = w.ping else { return };
    if t <= p {
        out.push(finding(Hit {
            id: "haproxy-timeout-server",
            status: Status::Fail,
            at: d,
            block: block.into(),
            observed: format!(
                "timeout server {} (a bare number is milliseconds)",
                d.arg(1).unwrap_or("")
            ),
            expected: format!(
                "above the heartbeat ({}): a quiet event stream is cut before its ping",
                secs(p)
            ),
            fix: "raise timeout server for the event-stream backend",
            lines: vec![format!("timeout server {}", secs(above(p)))],
        }));
    }
}
