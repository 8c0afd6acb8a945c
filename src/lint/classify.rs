//! Which proxied routes carry which stream, and why (issue 34). A route carries WebSocket
//! when the config forwards `Upgrade` for it (or routes it on an Upgrade ACL), a stream
//! when it turns response buffering off or holds responses far past 60 s, and whatever a
//! well-known realtime path (`known::KNOWN`) or `--ws-location`/`--sse-location` says.
//! Words in the path (`/ws`, `/events`, `/poll`) count only when nothing else does. The
//! declared transports (`--transport`, the profile) go to the catch-all route, and only
//! those no route carries by evidence: a config's own WebSocket location makes its `/` a
//! plain route. Every classification keeps its reason, shown in findings and the header.
use super::{known, Node, Stream, Workload};
use rtcheck_wire::transport::Transport;

/// One proxied route as a config kind's check sees it.
#[derive(Debug, Clone)]
pub struct Route<'a> {
    pub at: &'a Node,
    /// "location /ws", "backend be_ws".
    pub label: String,
    /// The path or name text the patterns, known paths and words are matched against.
    pub path: String,
    /// The Upgrade evidence, said as "forwards Upgrade at FILE:LINE".
    pub upgrade: Option<String>,
    /// The streaming evidence, said as "proxy_buffering off at FILE:LINE".
    pub stream: Option<String>,
    /// `location /`, a default backend, a matcher-less reverse_proxy: the app's route.
    pub catch_all: bool,
}

/// One stream a route carries and the reason it was classified so.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Carried {
    pub transport: Stream,
    pub why: String,
}

/// A proxied route in the report (JSON `routes`, the text header).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RouteReport {
    pub file: String,
    pub line: usize,
    pub route: String,
    /// Empty: proxied, but nothing says it carries a stream.
    pub carries: Vec<Carried>,
}

/// Words in a path or name that say what it carries (documented in docs/lint.md).
const WS_WORDS: &[&str] = &[
    "ws",
    "wss",
    "websocket",
    "websockets",
    "socket",
    "sockets",
    "cable",
];
const SSE_WORDS: &[&str] = &["sse", "events", "event", "eventsource", "stream", "streams"];
const POLL_WORDS: &[&str] = &["poll", "polling", "longpoll"];

/// The first word of the text that names a stream kind.
pub fn word(text: &str) -> Option<(Stream, String)> {
    let lower = text.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|s| !s.is_empty())
        .collect();
    for (set, s) in [
        (WS_WORDS, Stream::Websocket),
        (SSE_WORDS, Stream::Sse),
        (POLL_WORDS, Stream::Polling),
    ] {
        if let Some(w) = words.iter().find(|w| set.contains(w)) {
            return Some((s, w.to_string()));
        }
    }
    None
}

pub fn stream_of(t: Transport) -> Option<Stream> {
    match t {
        Transport::Websocket => Some(Stream::Websocket),
        Transport::Sse => Some(Stream::Sse),
        Transport::Polling => Some(Stream::Polling),
        // No proxy route carries the raw-TCP floor.
        Transport::Raw => None,
    }
}

fn add(out: &mut Vec<Carried>, transport: Stream, why: impl Into<String>) {
    if !out.iter().any(|c| c.transport == transport) {
        out.push(Carried {
            transport,
            why: why.into(),
        });
    }
}

/// What the route carries by the config's own evidence (declared transports aside).
pub fn evidence(r: &Route, w: &Workload) -> Vec<Carried> {
    let mut out = Vec::new();
    for p in w.ws_patterns.iter().filter(|p| r.path.contains(p.as_str())) {
        add(&mut out, Stream::Websocket, format!("--ws-location {p}"));
    }
    for p in w
        .sse_patterns
        .iter()
        .filter(|p| r.path.contains(p.as_str()))
    {
        add(&mut out, Stream::Sse, format!("--sse-location {p}"));
    }
    if let Some(u) = &r.upgrade {
        add(&mut out, Stream::Websocket, u.clone());
    }
    if let Some(s) = &r.stream {
        add(&mut out, Stream::Sse, s.clone());
    }
    for k in known::matching(&r.path) {
        for s in k.streams {
            add(
                &mut out,
                *s,
                format!("path matches {} ({})", k.stack, k.source),
            );
        }
    }
    if out.is_empty() {
        if let Some((s, word)) = word(&r.path) {
            add(&mut out, s, format!("path word `{word}`"));
        }
    }
    out
}

/// Every route's streams: its evidence, then the declared transports no route carries by
/// evidence, on the catch-all routes (or, without one, on every unclassified route).
pub fn classify(routes: &[Route], w: &Workload) -> Vec<Vec<Carried>> {
    let mut all: Vec<Vec<Carried>> = routes.iter().map(|r| evidence(r, w)).collect();
    let by = w.declared_by.as_deref().unwrap_or("--transport");
    for t in w.transports.iter().filter_map(|t| stream_of(*t)) {
        if all.iter().flatten().any(|c| c.transport == t) {
            continue;
        }
        let catch_all: Vec<usize> = (0..routes.len()).filter(|&i| routes[i].catch_all).collect();
        let targets = if catch_all.is_empty() {
            (0..routes.len()).filter(|&i| all[i].is_empty()).collect()
        } else {
            catch_all
        };
        for i in targets {
            let place = if routes[i].catch_all {
                "the catch-all route"
            } else {
                "a route nothing else classifies"
            };
            add(&mut all[i], t, format!("declared by {by}, on {place}"));
        }
    }
    all
}

/// The route as findings name it: "location / (SSE: declared by --transport, ...)".
pub fn block(r: &Route, c: &Carried) -> String {
    format!("{} ({}: {})", r.label, c.transport.as_str(), c.why)
}

pub fn report(r: &Route, carries: &[Carried]) -> RouteReport {
    RouteReport {
        file: r.at.file.to_string(),
        line: r.at.line,
        route: r.label.clone(),
        carries: carries.to_vec(),
    }
}

/// "FILE:LINE" of a node, for the reasons.
pub fn at(n: &Node) -> String {
    format!("{}:{}", n.file, n.line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn node(line: usize) -> Node {
        Node {
            name: "location".into(),
            args: vec![],
            file: Arc::from("n.conf"),
            line,
            block: Some(vec![]),
        }
    }

    fn route<'a>(n: &'a Node, path: &str, upgrade: bool, catch_all: bool) -> Route<'a> {
        Route {
            at: n,
            label: format!("location {path}"),
            path: path.into(),
            upgrade: upgrade.then(|| "forwards Upgrade at n.conf:3".to_string()),
            stream: None,
            catch_all,
        }
    }

    fn kinds(c: &[Carried]) -> Vec<Stream> {
        c.iter().map(|c| c.transport).collect()
    }

    #[test]
    fn a_declared_transport_goes_to_the_catch_all_only_when_no_route_carries_it() {
        let (a, b) = (node(2), node(5));
        let routes = [
            route(&a, "/", false, true),
            route(&b, "/api/live/", true, false),
        ];
        let w = Workload {
            transports: vec![Transport::Websocket],
            ..Workload::default()
        };
        let c = classify(&routes, &w);
        assert!(c[0].is_empty(), "{c:?}");
        assert_eq!(kinds(&c[1]), [Stream::Websocket]);
        assert!(c[1][0].why.contains("forwards Upgrade"), "{c:?}");
        // An SSE app behind one catch-all that forwards Upgrade: both, each with its reason.
        let routes = [route(&a, "/", true, true)];
        let w = Workload {
            transports: vec![Transport::Websocket, Transport::Sse],
            ..Workload::default()
        };
        let c = classify(&routes, &w);
        assert_eq!(kinds(&c[0]), [Stream::Websocket, Stream::Sse]);
        assert!(c[0][1].why.starts_with("declared by --transport"), "{c:?}");
    }

    #[test]
    fn known_paths_then_words_and_nothing_on_nothing() {
        let n = node(1);
        let w = Workload::default();
        let c = evidence(&route(&n, "/socket.io/", false, false), &w);
        assert_eq!(kinds(&c), [Stream::Websocket, Stream::Polling]);
        assert!(c[0].why.contains("Socket.IO"), "{c:?}");
        let c = evidence(&route(&n, "/events", false, false), &w);
        assert_eq!(c[0].why, "path word `events`");
        assert!(evidence(&route(&n, "/", false, true), &w).is_empty());
        assert!(classify(&[route(&n, "/", false, true)], &w)[0].is_empty());
    }
}
