//! Caddy rules, on the Caddyfile's tree and the JSON config's alike. A `reverse_proxy`
//! carries a stream when its matcher (a path, or a named `@matcher` whose definition
//! names the path or the Upgrade header), an enclosing `handle`/`route` or JSON route, says
//! so; or, no route saying anything, when the profile declares the transport.
use super::rules::{caddy_time, finding, Applied, Hit};
use super::{classify, declared, Config, Kind, Node, Stream, Workload};
use crate::findings::{Finding, Status};
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

fn stream_of(chain: &[&Node], rp: &Node, w: &Workload) -> Option<Stream> {
    let site = chain.first()?;
    let defs = matchers(site);
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
    if lower.contains("upgrade") || lower.contains("websocket") {
        return Some(Stream::Websocket);
    }
    classify(&text, w)
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

pub fn check(c: &Config, w: &Workload, out: &mut Vec<Finding>, applied: &mut Applied) {
    let mut all = vec![];
    for site in c
        .nodes
        .iter()
        .filter(|s| s.block.is_some() && s.name != "{global}" && !s.name.starts_with('('))
    {
        let mut chain = vec![site];
        proxies(site.children(), &mut chain, &mut all);
    }
    let any_named = all.iter().any(|(ch, rp)| stream_of(ch, rp, w).is_some());
    let json = c.kind == Kind::CaddyJson;
    for (ch, rp) in &all {
        let Some(kind) = stream_of(ch, rp, w).or(if any_named { None } else { declared(w) }) else {
            continue;
        };
        let route = ch
            .iter()
            .skip(1)
            .map(|b| b.label())
            .chain([rp.label()])
            .collect::<Vec<_>>()
            .join(" > ");
        let block = format!("{} ({})", route, kind.as_str());
        let opt = |name: &str| rp.children().iter().find(|d| d.name == name);
        if kind == Stream::Sse {
            applied.mark("caddy-encode-stream");
            if let Some(e) = encode_in_scope(ch) {
                out.push(finding(Hit {
                    id: "caddy-encode-stream", status: Status::Warn, at: e, block: block.clone(),
                    observed: format!("encode {} wraps the event-stream route", e.args.join(" ")),
                    expected: "the event stream is sent uncompressed".into(),
                    fix: "keep encode off the stream: give it a matcher that leaves the stream path out",
                    lines: if json { vec!["move the \"encode\" handler out of the event-stream route's chain".into()] } else {
                        vec!["@compressible not path /events*".into(), "encode @compressible gzip".into()]
                    },
                }));
            }
            applied.mark("caddy-flush-interval");
            if let Some(f) = opt("flush_interval")
                .filter(|f| f.arg(0).and_then(caddy_time).is_none_or(|t| !t.is_zero()))
            {
                out.push(finding(Hit {
                    id: "caddy-flush-interval", status: Status::Warn, at: f, block: block.clone(),
                    observed: format!("flush_interval {}: writes are held that long unless the response is text/event-stream", f.args.join(" ")),
                    expected: "flush_interval -1 (flush every write)".into(),
                    fix: "flush the stream at once",
                    lines: vec![if json { "\"flush_interval\": -1".into() } else { "flush_interval -1".into() }],
                }));
            }
        }
        if kind == Stream::Websocket {
            applied.mark("caddy-stream-close-delay");
            if opt("stream_close_delay").is_none() {
                out.push(finding(Hit {
                    id: "caddy-stream-close-delay",
                    status: Status::Warn,
                    at: rp,
                    block: block.clone(),
                    observed:
                        "no stream_close_delay: a config reload closes every WebSocket at once"
                            .into(),
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
