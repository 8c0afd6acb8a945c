//! HAProxy rules. A proxy section (backend, listen, frontend) takes a setting from itself,
//! else from the last `defaults` section above it. Each backend and listen section is a
//! route classified by `classify`: routed on an Upgrade ACL, a path ACL naming a well-known
//! realtime path, a long `timeout server`; the default backend is the catch-all.
use super::classify::{at, block, classify, report, Route};
use super::rules::{above, finding, haproxy_time, no_heartbeat, secs, Applied, Hit, RuleId};
use super::{Config, Node, Sink, Stream, Workload};
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

/// What the frontends say of each backend: the conditions they route to it on (ACLs
/// expanded), the first routing on Upgrade, and whether it is a default backend.
#[derive(Default)]
struct Routing {
    conds: String,
    upgrade: Option<String>,
    default: bool,
}

fn routing(c: &Config) -> BTreeMap<&str, Routing> {
    let mut out: BTreeMap<&str, Routing> = BTreeMap::new();
    for f in c
        .nodes
        .iter()
        .filter(|s| s.name == "frontend" || s.name == "listen")
    {
        // An ACL named on several lines is their OR: every definition counts.
        let mut acls: BTreeMap<&str, String> = BTreeMap::new();
        for d in f.children().iter().filter(|d| d.name == "acl") {
            let Some(name) = d.arg(0) else { continue };
            let e = acls.entry(name).or_default();
            e.push(' ');
            e.push_str(&d.args[1..].join(" "));
        }
        for d in f.children() {
            let Some(be) = d.arg(0) else { continue };
            let r = out.entry(be).or_default();
            if d.name == "default_backend" {
                r.default = true;
                continue;
            }
            if d.name != "use_backend" {
                continue;
            }
            let cond: Vec<String> = d.args[1..]
                .iter()
                .map(|a| {
                    acls.get(a.trim_start_matches('!'))
                        .cloned()
                        .unwrap_or_else(|| a.clone())
                })
                .collect();
            let cond = cond.join(" ");
            // `use_backend be` with no condition routes everything there.
            r.default |= d.args.len() == 1;
            let lower = cond.to_ascii_lowercase();
            if r.upgrade.is_none() && (lower.contains("upgrade") || lower.contains("websocket")) {
                r.upgrade = Some(format!("routed on an Upgrade ACL at {}", at(d)));
            }
            r.conds.push(' ');
            r.conds.push_str(&cond);
        }
    }
    out
}

/// Each backend and listen section as a route.
fn routes<'a>(
    px: &[(&'a Node, Option<&'a Node>)],
    routing: &BTreeMap<&str, Routing>,
) -> Vec<Route<'a>> {
    px.iter()
        .filter(|(s, _)| s.name != "frontend")
        .map(|(sec, _)| {
            let r = routing.get(sec.arg(0).unwrap_or(""));
            let upgrade = r.and_then(|r| r.upgrade.clone());
            // A backend of its own holding responses far past 60 s carries a stream.
            let stream = sec
                .children()
                .iter()
                .rev()
                .find(|d| d.name == "timeout" && d.arg(0) == Some("server"))
                .filter(|_| upgrade.is_none())
                .filter(|d| d.arg(1).and_then(haproxy_time).is_some_and(|t| t >= LONG))
                .map(|d| format!("timeout server {} at {}", d.arg(1).unwrap_or(""), at(d)));
            Route {
                at: sec,
                label: sec.label(),
                path: format!(
                    "{} {}",
                    sec.args.join(" "),
                    r.map_or("", |r| r.conds.as_str())
                ),
                upgrade,
                stream,
                catch_all: sec.name == "listen" || r.is_some_and(|r| r.default),
            }
        })
        .collect()
}

/// "Well above" a minute: a stream's timeout, not a slow page's.
const LONG: std::time::Duration = std::time::Duration::from_secs(300);

pub fn check(c: &Config, w: &Workload, s: &mut Sink) {
    let px = proxies(c);
    let routing = routing(c);
    let routes = routes(&px, &routing);
    let classes = classify(&routes, w);
    let defaults: BTreeMap<*const Node, Option<&Node>> =
        px.iter().map(|(s, d)| (*s as *const Node, *d)).collect();
    let (out, applied) = (&mut s.out, &mut s.applied);
    for (r, carried) in routes.iter().zip(&classes) {
        s.routes.push(report(r, carried));
        let sec = r.at;
        let defs = defaults.get(&(sec as *const Node)).copied().flatten();
        for c in carried {
            let block = block(r, c);
            let kind = c.transport;
            if kind == Stream::Websocket {
                tunnel(sec, defs, (&block, &r.path), w, out, applied);
            }
            if kind == Stream::Sse {
                server_timeout(sec, defs, &block, w, out, applied);
            }
        }
        if let Some(c) = carried.first() {
            http_close(sec, defs, &block(r, c), out, applied);
        }
    }
    tcp_mode(&px, out, applied);
    nbproc(c, w, out, applied);
    if !routes.is_empty() {
        unset_timeouts(&px, out, applied);
    }
    maxconn(c, &px, w, out, applied);
}

/// A `timeout` HAProxy would not load (over 2^31-1 ms, or not its syntax) is a Fail:
/// `haproxy -c` rejects the file, so the reload keeps the old config (or nothing starts).
fn refused(d: &Node, id: RuleId, block: &str, out: &mut Vec<Finding>) -> bool {
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

fn http_close(
    sec: &Node,
    defs: Option<&Node>,
    block: &str,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    applied.mark(RuleId::HaproxyHttpClose);
    for opt in ["httpclose", "http-server-close"] {
        if let Some(d) = setting(sec, defs, &["option", opt]) {
            out.push(finding(Hit {
                id: RuleId::HaproxyHttpClose,
                status: Status::Warn,
                at: d,
                block: block.into(),
                observed: format!("option {opt}: the connection closes after each response"),
                expected: "keep-alive (the default): a poll or reconnect reuses its connection"
                    .into(),
                fix: "remove the option (or override it in this section)",
                lines: vec![format!("no option {opt}")],
            }));
        }
    }
}

/// Fetches that read the HTTP request: in TCP mode they see only what the first packet
/// carried.
const HTTP_FETCHES: &[&str] = &[
    "hdr(",
    "hdr_beg(",
    "hdr_end(",
    "hdr_sub(",
    "hdr_dom(",
    "hdr_reg(",
    "hdr_cnt(",
    "req.hdr(",
    "req.fhdr(",
    "path",
    "path_beg",
    "path_end",
    "path_sub",
    "path_reg",
    "path_dir",
    "url",
    "url_beg",
    "url_sub",
    "url_param(",
    "method",
    "base",
    "base_beg",
];

/// A frontend in TCP mode (HAProxy's default without `mode http`) that routes on HTTP:
/// its `http-request` rules are ignored (HAProxy warns), and its HTTP fetches read only
/// the first bytes (no `tcp-request inspect-delay`): a request head split across packets
/// misses them (seen on HAProxy 2.6: the Upgrade header in a second packet went to the
/// default backend).
fn tcp_mode(px: &[(&Node, Option<&Node>)], out: &mut Vec<Finding>, applied: &mut Applied) {
    for (f, defs) in px
        .iter()
        .filter(|(s, _)| s.name == "frontend" || s.name == "listen")
    {
        applied.mark(RuleId::HaproxyTcpModeHttp);
        let mode = setting(f, *defs, &["mode"])
            .and_then(|d| d.arg(0))
            .unwrap_or("tcp");
        if mode == "http" {
            continue;
        }
        let http = |a: &String| {
            HTTP_FETCHES.iter().any(|h| {
                a.starts_with(h)
                    && (h.ends_with('(') || a.len() == h.len() || a.as_bytes()[h.len()] == b'(')
            })
        };
        let hit = f.children().iter().find(|d| {
            d.name.starts_with("http-request")
                || d.name.starts_with("http-response")
                || (matches!(d.name.as_str(), "acl" | "use_backend") && d.args.iter().any(http))
        });
        let Some(d) = hit else { continue };
        out.push(finding(Hit {
            id: RuleId::HaproxyTcpModeHttp,
            status: Status::Fail,
            at: d,
            block: f.label(),
            observed: format!(
                "mode {mode}{} with `{}`: http-request rules are ignored and HTTP fetches read only the first packet",
                if setting(f, *defs, &["mode"]).is_none() { " (the default: no `mode http`)" } else { "" },
                d.label()
            ),
            expected: "mode http where the frontend routes on headers or paths".into(),
            fix: "proxy HTTP in HTTP mode",
            lines: vec!["mode http".into()],
        }));
    }
}

/// `nbproc` in global: HAProxy 2.5 and later refuse to start with it (seen: 2.6.12's
/// `haproxy -c` is a fatal error); threads replace it.
fn nbproc(c: &Config, w: &Workload, out: &mut Vec<Finding>, applied: &mut Applied) {
    let Some(global) = c.nodes.iter().find(|s| s.name == "global") else {
        return;
    };
    applied.mark(RuleId::HaproxyNbproc);
    let Some(d) = global.children().iter().find(|d| d.name == "nbproc") else {
        return;
    };
    let v = super::version::of(w, "haproxy");
    let status = match v {
        Some(v) if !super::version::at_least(&v.parts, &[2, 5]) => return,
        Some(_) => Status::Fail,
        None => Status::Warn,
    };
    out.push(finding(Hit {
        id: RuleId::HaproxyNbproc,
        status,
        at: d,
        block: "global".into(),
        observed: format!(
            "nbproc {}: HAProxy 2.5 and later refuse to start ({})",
            d.args.join(" "),
            super::version::assumed(v, "haproxy", "2.5")
        ),
        expected: "no nbproc (threads: nbthread, automatic on multi-core machines)".into(),
        fix: "remove nbproc",
        lines: vec!["# nbproc removed; threads are used automatically".into()],
    }));
}

/// No `timeout client` or `timeout server` at all: not a cut but no bound. A peer that
/// vanished without a FIN (a phone leaving coverage, a crashed host) holds its connection
/// and its slot of maxconn forever; HAProxy warns about it at start.
fn unset_timeouts(px: &[(&Node, Option<&Node>)], out: &mut Vec<Finding>, applied: &mut Applied) {
    applied.mark(RuleId::HaproxyTimeoutsUnset);
    for (sec, defs) in px {
        let sides: &[&str] = match sec.name.as_str() {
            "frontend" => &["client"],
            "backend" => &["server"],
            _ => &["client", "server"],
        };
        let unset: Vec<&str> = sides
            .iter()
            .copied()
            .filter(|k| setting(sec, *defs, &["timeout", k]).is_none())
            .collect();
        if unset.is_empty() {
            continue;
        }
        let names: Vec<String> = unset.iter().map(|k| format!("timeout {k}")).collect();
        out.push(finding(Hit {
            id: RuleId::HaproxyTimeoutsUnset,
            status: Status::Warn,
            at: sec,
            block: sec.label(),
            observed: format!(
                "{} not set (here or in defaults): no bound, so a peer that vanished without closing is never reaped",
                names.join(", ")
            ),
            expected: "client and server timeouts set (HAProxy warns at start without them); timeout tunnel for upgraded connections".into(),
            fix: "set the timeouts in defaults",
            lines: unset.iter().map(|k| format!("timeout {k} 60s")).collect(),
        }));
    }
}

/// Without `timeout tunnel` the client and server timeouts that are set apply to the
/// upgraded connection and cut it when quiet that long; with none set nothing bounds it
/// (`haproxy-timeouts-unset` says what that costs). The tunnel's timer restarts on
/// traffic either way, so client pings keep it open too. A library's route (its path
/// names one, or `--app-protocol`) with no declared ping carries the library's own
/// heartbeat: the timeout in force is judged against it.
fn tunnel(
    sec: &Node,
    defs: Option<&Node>,
    (block, path): (&str, &str),
    w: &Workload,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    const ID: RuleId = RuleId::HaproxyTimeoutTunnel;
    applied.mark(ID);
    let beat = super::path::heartbeat(w, "haproxy", Stream::Websocket);
    let want = match &beat {
        Some((b, _)) => above(*b),
        None => w.ping.map_or(std::time::Duration::from_secs(3600), above),
    };
    let found = match setting(sec, defs, &["timeout", "tunnel"]) {
        None => tunnel_missing(sec, defs, path, w, beat.is_some()),
        Some(d) => tunnel_set(d, path, w),
    };
    if let Some(t) = found {
        out.push(finding(Hit {
            id: ID,
            status: t.status,
            at: t.at,
            block: block.into(),
            observed: t.observed,
            expected: t.expected,
            fix: t.fix,
            lines: vec![format!("timeout tunnel {}", secs(t.want.unwrap_or(want)))],
        }));
    }
}

/// What the `timeout tunnel` rule found at one line, before it is a finding.
struct TunnelHit<'a> {
    status: Status,
    at: &'a Node,
    observed: String,
    expected: String,
    fix: &'static str,
    /// The timeout to set when a library's heartbeat, not the workload's, asks for it.
    want: Option<std::time::Duration>,
}

/// No `timeout tunnel`: `timeout client`/`server` then cut the upgraded connection, which
/// a library's documented heartbeat may still cross (`beat`: the path declares one).
fn tunnel_missing<'a>(
    sec: &'a Node,
    defs: Option<&Node>,
    path: &str,
    w: &Workload,
    beat: bool,
) -> Option<TunnelHit<'a>> {
    let cuts: Vec<(&str, &Node)> = ["client", "server"]
        .iter()
        .filter_map(|k| Some((*k, setting(sec, defs, &["timeout", k])?)))
        .collect();
    let cut: Vec<String> = cuts
        .iter()
        .map(|(k, d)| format!("timeout {k} {}", d.arg(1).unwrap_or("")))
        .collect();
    // The shorter of the two cuts first; a library's heartbeat crosses both ways.
    let shortest = cuts
        .iter()
        .filter_map(|(_, d)| d.arg(1).and_then(haproxy_time))
        .min();
    let lib = shortest
        .filter(|_| w.ping.is_none() && !beat)
        .and_then(|t| super::rules::library_need(t, path, w.app));
    if let Some(need) = lib {
        let (status, expected, want) = need?;
        return Some(TunnelHit {
            status,
            at: sec,
            observed: format!(
                "no timeout tunnel: {} apply to the upgraded connection",
                cut.join(", ")
            ),
            expected,
            fix: "set timeout tunnel above the library's heartbeat",
            want: Some(want),
        });
    }
    (!cut.is_empty()).then(|| TunnelHit {
        status: Status::Fail,
        at: sec,
        observed: format!(
            "no timeout tunnel: {} cut the upgraded connection when quiet that long",
            cut.join(", ")
        ),
        expected: "timeout tunnel above the heartbeat".into(),
        fix: "set timeout tunnel for upgraded connections",
        want: None,
    })
}

/// `timeout tunnel` set at `d`: a HAProxy time, above the path's, the declared or the
/// library's heartbeat.
fn tunnel_set<'a>(d: &'a Node, path: &str, w: &Workload) -> Option<TunnelHit<'a>> {
    let raw = d.arg(1).unwrap_or("");
    let hit = |status, observed, expected, fix, want| {
        Some(TunnelHit {
            status,
            at: d,
            observed,
            expected,
            fix,
            want,
        })
    };
    let Some(t) = haproxy_time(raw) else {
        let why = super::time::haproxy(raw)
            .err()
            .map_or_else(String::new, |e| e.why("haproxy"));
        return hit(
            Status::Fail,
            format!("timeout tunnel `{raw}`: {why}"),
            "a time haproxy -c accepts (one number and unit, at most 24d)".into(),
            "write the timeout as a HAProxy time",
            None,
        );
    };
    let observed = format!("timeout tunnel {raw} (a bare number is milliseconds)");
    if let Some(n) = super::path::timeout(t, w, "haproxy", Stream::Websocket) {
        let fix = "raise timeout tunnel to carry the path's heartbeat";
        return match n.status {
            Status::Pass => None,
            st => hit(st, observed, n.expected, fix, None),
        };
    }
    match (w.ping, super::rules::library_need(t, path, w.app)) {
        (Some(p), _) if t <= p => hit(
            Status::Fail,
            observed,
            format!("above the heartbeat ({})", secs(p)),
            "raise timeout tunnel above the heartbeat",
            None,
        ),
        (Some(_), _) | (None, Some(None)) => None,
        (None, Some(Some((status, expected, want)))) => hit(
            status,
            observed,
            expected,
            "raise timeout tunnel above the library's heartbeat",
            Some(want),
        ),
        (None, None) => hit(
            Status::Warn,
            observed,
            no_heartbeat(t, Stream::Websocket),
            "declare the heartbeat (--ping) or keep the tunnel timeout above it",
            None,
        ),
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
    applied.mark(RuleId::HaproxyMaxconn);
    let need = w.connections;
    let fix = vec![format!("maxconn {}", need + need / 10)];
    let g = global.children().iter().find(|d| d.name == "maxconn");
    match g.and_then(|d| d.arg(0)).and_then(|v| v.parse::<u64>().ok()) {
        None => out.push(finding(Hit {
            id: RuleId::HaproxyMaxconn,
            status: Status::Warn,
            at: global,
            block: "global".into(),
            observed: "global maxconn not set: derived from ulimit -n at start".into(),
            expected: format!(">= {need} connections (HAProxy then sets 2 fds each)"),
            fix: "set maxconn in global",
            lines: fix.clone(),
        })),
        Some(m) if m < need => out.push(finding(Hit {
            id: RuleId::HaproxyMaxconn,
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
                id: RuleId::HaproxyMaxconn,
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
    applied.mark(RuleId::HaproxyTimeoutServer);
    let Some(d) = setting(sec, defs, &["timeout", "server"]) else {
        return;
    };
    if refused(d, RuleId::HaproxyTimeoutServer, block, out) {
        return;
    }
    let Some(t) = d.arg(1).and_then(haproxy_time) else {
        return;
    };
    if w.ping.is_none() && beat.is_none() {
        out.push(finding(Hit {
            id: RuleId::HaproxyTimeoutServer,
            status: Status::Warn,
            at: d,
            block: block.into(),
            observed: format!(
                "timeout server {} (a bare number is milliseconds)",
                d.arg(1).unwrap_or("")
            ),
            expected: no_heartbeat(t, Stream::Sse),
            fix: "declare the heartbeat (--ping) or keep timeout server above it",
            lines: vec![format!(
                "timeout server {}",
                secs(t.max(std::time::Duration::from_secs(3600)))
            )],
        }));
        return;
    }
    if let Some(n) = super::path::timeout(t, w, "haproxy", Stream::Sse) {
        if n.status != Status::Pass {
            out.push(finding(Hit {
                id: RuleId::HaproxyTimeoutServer,
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
            id: RuleId::HaproxyTimeoutServer,
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
