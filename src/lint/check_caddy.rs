//! Caddy rules, on the Caddyfile's tree and the JSON config's alike. Each `reverse_proxy`
//! is a route classified by `classify`: its matcher (a path, or a named `@matcher` whose
//! definition names the path or the Upgrade header) and enclosing `handle`/`route` blocks,
//! `flush_interval -1`; a matcher-less one is the catch-all.
use super::classify::{at, block, classify, report, Route};
use super::rules::{caddy_time, finding, Hit, RuleId};
use super::Workload;
use super::{Config, Kind, Node, Sink, Stream};
use crate::findings::Status;
use std::collections::BTreeMap;

/// Every `reverse_proxy` with its chain of enclosing blocks (outermost first).
fn proxies<'a>(
    nodes: &'a [Node],
    chain: &mut Vec<&'a Node>,
    out: &mut Vec<(Vec<&'a Node>, &'a Node)>,
) {
    for n in nodes {
        if n.name == "reverse_proxy" {
            out.push((chain.clone(), n));
        }
        if n.block.is_some() {
            chain.push(n);
            proxies(n.children(), chain, out);
            chain.pop();
        }
    }
}

/// Named matchers of a site: `@name ...` (one line or a block) -> its definition text.
fn matchers(site: &Node) -> BTreeMap<String, String> {
    site.children()
        .iter()
        .filter(|d| d.name.starts_with('@'))
        .map(|d| {
            let mut t = d.args.join(" ");
            for c in d.children() {
                t.push(' ');
                t.push_str(&c.label());
            }
            (d.name.clone(), t)
        })
        .collect()
}

/// A `reverse_proxy` as a route: its path text (named matchers expanded), a matcher on
/// the Upgrade header, `flush_interval -1`, and whether it takes every request.
fn route<'a>(chain: &[&'a Node], rp: &'a Node) -> Route<'a> {
    let defs = chain.first().map(|s| matchers(s)).unwrap_or_default();
    let mut text = String::new();
    for b in chain
        .iter()
        .skip(1)
        .map(|b| b.args.join(" "))
        .chain([rp.args.join(" ")])
    {
        for a in b.split(' ') {
            text.push(' ');
            text.push_str(defs.get(a).map_or(a, String::as_str));
        }
    }
    let lower = text.to_ascii_lowercase();
    let upgrade = (lower.contains("upgrade") || lower.contains("websocket"))
        .then(|| format!("matched on the Upgrade header at {}", at(rp)));
    let stream = rp
        .children()
        .iter()
        .find(|d| d.name == "flush_interval")
        .filter(|f| f.arg(0).and_then(caddy_time).is_some_and(|t| t.is_zero()))
        .map(|f| format!("flush_interval -1 at {}", at(f)));
    let matcher = |a: &str| a.starts_with('/') || a.starts_with('@');
    let catch_all = !rp.arg(0).is_some_and(matcher)
        && chain
            .iter()
            .skip(1)
            .all(|b| b.args.is_empty() || b.args.iter().all(|a| a == "*"));
    let label = chain
        .iter()
        .skip(1)
        .map(|b| b.label())
        .chain([rp.label()])
        .collect::<Vec<_>>()
        .join(" > ");
    Route {
        at: rp,
        label,
        path: text,
        upgrade,
        stream,
        catch_all,
    }
}

/// `stream_timeout` on a WebSocket route: a lifetime, not an idle limit (Caddy closes the
/// stream that long after it opened, traffic or not), so no heartbeat keeps a connection
/// past it. At or under the heartbeat (`--ping`, or the library's: its path or
/// `--app-protocol`) every connection is closed before its first heartbeat: Fail; under
/// an hour every client reconnects that often: Warn; longer is a deliberate cap.
fn stream_timeout(
    d: &Node,
    (block, path): (&str, &str),
    w: &Workload,
    json: bool,
    out: &mut Vec<crate::findings::Finding>,
) {
    let Some(t) = d.arg(0).and_then(caddy_time).filter(|t| !t.is_zero()) else {
        return;
    };
    let hour = std::time::Duration::from_secs(3600);
    let beat = w
        .ping
        .map(|p| (p, format!("the heartbeat ({})", super::rules::secs(p))))
        .or_else(|| super::known::library_heartbeat(path, w.app));
    let (status, expected) = match &beat {
        Some((b, why)) if t <= *b => (
            Status::Fail,
            format!("hours, or unset (no limit): at or under {why}, every connection is closed before its first heartbeat and every client reconnects that often"),
        ),
        _ if t < hour => (
            Status::Warn,
            "hours, or unset (no limit): a heartbeat does not reset it, so every client reconnects at that age".into(),
        ),
        _ => return,
    };
    out.push(finding(Hit {
        id: RuleId::CaddyStreamTimeout,
        status,
        at: d,
        block: block.into(),
        observed: format!(
            "stream_timeout {}: every WebSocket is closed that long after it opened, traffic or not",
            d.args.join(" ")
        ),
        expected,
        fix: "remove stream_timeout, or set it to hours with stream_close_delay to spread the reconnects",
        lines: vec![if json {
            "\"stream_timeout\": \"24h\"".into()
        } else {
            "stream_timeout 24h".into()
        }],
    }));
}

/// What the version says of `stream_close_delay` (it appeared in Caddy 2.7).
fn caddy_note(w: &Workload) -> String {
    match super::version::of(w, "caddy") {
        Some(v) if !super::version::at_least(&v.parts, &[2, 7]) => format!(
            "; Caddy {} ({}) lacks the directive: it needs 2.7, so upgrade first",
            v.text, v.from
        ),
        Some(v) => format!(" (Caddy {}, {})", v.text, v.from),
        None => String::new(),
    }
}

/// An `encode` that wraps this proxy: in an enclosing block, or (JSON) in a route without
/// a matcher among an enclosing block's routes.
fn encode_in_scope<'a>(chain: &[&'a Node]) -> Option<&'a Node> {
    let defs = chain.first().map(|s| matchers(s)).unwrap_or_default();
    // `encode @m ...` with `@m not path ...`: the stream was left out on purpose.
    let excluded = |e: &Node| {
        e.arg(0)
            .and_then(|m| defs.get(m))
            .is_some_and(|d| d.starts_with("not "))
    };
    let found = chain.iter().rev().find_map(|b| {
        b.children().iter().find_map(|c| match c.name.as_str() {
            "encode" => Some(c),
            "route" if c.args.is_empty() => c.children().iter().find(|h| h.name == "encode"),
            _ => None,
        })
    });
    found.filter(|e| !excluded(e))
}

pub fn check(c: &Config, w: &Workload, s: &mut Sink) {
    let mut all = vec![];
    for site in c
        .nodes
        .iter()
        .filter(|s| s.block.is_some() && s.name != "{global}" && !s.name.starts_with('('))
    {
        let mut chain = vec![site];
        proxies(site.children(), &mut chain, &mut all);
    }
    let json = c.kind == Kind::CaddyJson;
    let routes: Vec<Route> = all.iter().map(|(ch, rp)| route(ch, rp)).collect();
    let classes = classify(&routes, w);
    let (out, applied) = (&mut s.out, &mut s.applied);
    for (((ch, rp), r), carried) in all.iter().zip(&routes).zip(&classes) {
        s.routes.push(report(r, carried));
        for c in carried {
            let kind = c.transport;
            let block = block(r, c);
            let opt = |name: &str| rp.children().iter().find(|d| d.name == name);
            if kind == Stream::Sse {
                applied.mark(RuleId::CaddyEncodeStream);
                let v = super::version::of(w, "caddy");
                let holds = v.is_none_or(|v| super::version::at_least(&v.parts, &[2, 7]));
                if let Some(e) = encode_in_scope(ch).filter(|_| holds) {
                    out.push(finding(Hit {
                    id: RuleId::CaddyEncodeStream, status: Status::Warn, at: e, block: block.clone(),
                    observed: format!(
                        "encode {} wraps the event-stream route ({})",
                        e.args.join(" "),
                        super::version::assumed(v, "caddy", "2.7").replace("assumed before 2.7", "assumed 2.7 or later")
                    ),
                    expected: "the event stream is sent uncompressed".into(),
                    fix: "keep encode off the stream: give it a matcher that leaves the stream path out",
                    lines: if json { vec!["move the \"encode\" handler out of the event-stream route's chain".into()] } else {
                        vec!["@compressible not path /events*".into(), "encode @compressible gzip".into()]
                    },
                }));
                }
            }
            if kind == Stream::Websocket {
                if let Some(d) = opt("stream_timeout") {
                    stream_timeout(d, (&block, &r.path), w, json, out);
                }
                applied.mark(RuleId::CaddyStreamTimeout);
                applied.mark(RuleId::CaddyStreamCloseDelay);
                if opt("stream_close_delay").is_none() {
                    out.push(finding(Hit {
                        id: RuleId::CaddyStreamCloseDelay,
                        status: Status::Warn,
                        at: rp,
                        block: block.clone(),
                        observed: format!(
                            "no stream_close_delay: a config reload closes every WebSocket at once{}",
                            caddy_note(w)
                        ),
                        expected:
                            "stream_close_delay long enough to spread the reconnects (Caddy >= 2.7)"
                                .into(),
                        fix: "keep WebSockets open across a reload",
                        lines: vec![if json {
                            "\"stream_close_delay\": \"5m\"".into()
                        } else {
                            "stream_close_delay 5m".into()
                        }],
                    }));
                }
            }
        }
    }
}
