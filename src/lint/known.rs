//! The realtime paths of common stacks: a route whose path names one carries what that
//! stack speaks there. Each entry cites the project's own documentation for the path, so a
//! user who sees "path matches Socket.IO" can check it. Fragments match the route's path
//! text (a prefix, an exact path or a regex location) lowercased, at a segment boundary.
use super::Stream;
use Stream::{Polling as P, Sse as S, Websocket as W};

#[derive(Debug)]
pub struct Known {
    pub stack: &'static str,
    /// Path fragments, lowercase; one is enough.
    pub fragments: &'static [&'static str],
    pub streams: &'static [Stream],
    /// The project's documentation of the path.
    pub source: &'static str,
}

macro_rules! known {
    ($($stack:literal, [$($f:literal),+], [$($s:ident),+], $src:literal;)*) => {
        pub const KNOWN: &[Known] = &[$(Known { stack: $stack, fragments: &[$($f),+], streams: &[$($s),+], source: $src }),*];
    };
}

known! {
    "Socket.IO", ["/socket.io"], [W, P], "https://socket.io/docs/v4/reverse-proxy/";
    "SockJS", ["/sockjs"], [W, P], "https://github.com/sockjs/sockjs-client#supported-transports-by-browser-html-served-from-http-or-https";
    "Rails Action Cable", ["/cable", "/-/cable"], [W], "https://guides.rubyonrails.org/action_cable_overview.html#configuration";
    "ASP.NET SignalR", ["/signalr", "/hubs"], [W, S, P], "https://learn.microsoft.com/aspnet/core/signalr/scale";
    "Phoenix channels", ["/socket/websocket", "/live/websocket", "/socket/longpoll"], [W, P], "https://hexdocs.pm/phoenix/Phoenix.Endpoint.html#socket/3";
    "GraphQL subscriptions", ["/subscriptions", "/graphql-ws"], [W], "https://www.apollographql.com/docs/apollo-server/data/subscriptions/";
    "Centrifugo", ["/connection/websocket", "/connection/uni_websocket"], [W], "https://centrifugal.dev/docs/transports/overview";
    "Centrifugo streams", ["/connection/http_stream", "/connection/sse", "/connection/uni_sse", "/connection/uni_http_stream"], [S], "https://centrifugal.dev/docs/transports/overview";
    "Mercure", ["/.well-known/mercure"], [S], "https://mercure.rocks/spec";
    "Grafana Live", ["/api/live"], [W], "https://grafana.com/tutorials/run-grafana-behind-a-proxy/";
    "Grafana Loki tail", ["/loki/api/v1/tail"], [W], "https://grafana.com/docs/loki/latest/reference/loki-http-api/";
    "Home Assistant", ["/api/websocket"], [W], "https://developers.home-assistant.io/docs/api/websocket/";
    "Jupyter kernels", ["/api/kernels", "/terminals/websocket", "/api/events/subscribe"], [W], "https://jupyter-server.readthedocs.io/en/latest/developers/websocket-protocols.html";
    "Mastodon streaming", ["/api/v1/streaming"], [W, S], "https://docs.joinmastodon.org/methods/streaming/";
    "Discourse message-bus", ["/message-bus"], [P], "https://github.com/discourse/message_bus#long-polling";
    "XMPP over WebSocket", ["/xmpp-websocket"], [W], "https://prosody.im/doc/websocket";
    "XMPP BOSH", ["/http-bind"], [P], "https://prosody.im/doc/setting_up_bosh";
    "Jitsi Colibri", ["/colibri-ws"], [W], "https://github.com/jitsi/jitsi-videobridge/blob/master/doc/web-sockets.md";
    "Mattermost", ["/api/v4/websocket"], [W], "https://docs.mattermost.com/deploy/server/setup-nginx-proxy.html";
    "Nextcloud notify_push", ["/push/ws"], [W], "https://github.com/nextcloud/notify_push#reverse-proxy";
    "Matrix sync", ["/_matrix/client/v3/sync", "/_matrix/client/r0/sync"], [P], "https://spec.matrix.org/latest/client-server-api/#get_matrixclientv3sync";
}

/// The library protocol a known stack speaks, whose documented heartbeat
/// (`AppProtocol::defaults`) a route of that stack carries without any declared ping.
pub fn library(k: &Known) -> Option<rtcheck_wire::appproto::AppProtocol> {
    use rtcheck_wire::appproto::AppProtocol as A;
    match k.stack {
        "Socket.IO" => Some(A::SocketIo),
        "SockJS" => Some(A::SockJs),
        "Rails Action Cable" => Some(A::ActionCable),
        "ASP.NET SignalR" => Some(A::SignalR),
        "Phoenix channels" => Some(A::Phoenix),
        _ => None,
    }
}

/// The documented heartbeat of the library `--app-protocol` names, else of the one a
/// route's path names, if any: its interval, and the sentence naming it with its source.
pub fn library_heartbeat(
    path: &str,
    given: Option<rtcheck_wire::appproto::AppProtocol>,
) -> Option<(std::time::Duration, String)> {
    use rtcheck_wire::appproto::AppProtocol;
    match given {
        Some(AppProtocol::Raw) => return None,
        Some(p) => return heartbeat_of(p, &format!("{} (--app-protocol)", p.name())),
        None => {}
    }
    matching(path)
        .into_iter()
        .find_map(|k| heartbeat_of(library(k)?, k.stack))
}

fn heartbeat_of(
    p: rtcheck_wire::appproto::AppProtocol,
    name: &str,
) -> Option<(std::time::Duration, String)> {
    let d = p.defaults();
    let every = d.interval_s.filter(|s| *s > 0.0)?;
    let who = match d.pinger {
        rtcheck_wire::appproto::Pinger::Client => "its clients ping",
        _ => "the server pings",
    };
    let why = format!(
        "{name}'s heartbeat, {who} every {every} s by default ({}, read {})",
        d.source, d.read
    );
    Some((std::time::Duration::from_secs_f64(every), why))
}

/// Does `frag` occur in `text` ending at a segment boundary (end, `/`, or any character
/// that is not a letter, digit, `-` or `_`)?
fn occurs(text: &str, frag: &str) -> bool {
    let mut from = 0;
    while let Some(i) = text[from..].find(frag) {
        let end = from + i + frag.len();
        let next = text[end..].chars().next();
        if next.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
            return true;
        }
        from += i + 1;
    }
    false
}

/// The entries whose path the route's text names (lowercased first).
pub fn matching(text: &str) -> Vec<&'static Known> {
    let lower = text.to_ascii_lowercase();
    // A regex location escapes its dots (`/socket\.io/`) and groups its alternatives
    // (`/(api/kernels/[^/]+/channels|terminals/websocket)`): read as plain paths.
    let lower = lower
        .replace("\\.", ".")
        .replace("(?:", "")
        .replace(['(', '^'], "")
        .replace('|', " /");
    KNOWN
        .iter()
        .filter(|k| k.fragments.iter().any(|f| occurs(&lower, f)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_has_a_source_and_lowercase_fragments() {
        for k in KNOWN {
            assert!(k.source.starts_with("https://"), "{}", k.stack);
            for f in k.fragments {
                assert!(f.starts_with('/'), "{}: {f}", k.stack);
                assert_eq!(*f, f.to_ascii_lowercase(), "{}", k.stack);
            }
        }
    }

    #[test]
    fn paths_match_at_a_segment_boundary() {
        let names = |t: &str| matching(t).iter().map(|k| k.stack).collect::<Vec<_>>();
        assert_eq!(names("/socket.io/"), ["Socket.IO"]);
        assert_eq!(names("~ ^/socket\\.io/"), ["Socket.IO"]);
        assert_eq!(names("/api/v1/streaming"), ["Mastodon streaming"]);
        assert_eq!(
            names("~* /(api/kernels/[^/]+/channels|terminals/websocket)/?"),
            ["Jupyter kernels"]
        );
        assert_eq!(names("/.well-known/mercure"), ["Mercure"]);
        assert_eq!(names("/-/cable"), ["Rails Action Cable"]);
        assert!(names("/cables-shop").is_empty());
        assert!(names("/api/livestock").is_empty());
        assert!(names("/").is_empty());
        assert_eq!(names("/api/live/ws"), ["Grafana Live"]);
    }
}
