//! A library's HTTP fallback through the path (issue 42): when the WebSocket upgrade
//! fails, the library's clients fall back to HTTP. Socket.IO's to Engine.IO long-polling
//! (`transport=polling`, one GET: the open packet), SignalR's to Server-Sent Events or
//! long polling after its negotiation (`POST <hub>/negotiate?negotiateVersion=1`: the
//! transports offered), Phoenix's to its LongPoll transport (`GET <socket>/longpoll`: a
//! new session's token). One request tells whether the fallback works through this path.
use super::client::{self, ClientOpts};
use super::target::Target;
use rtcheck_wire::appproto::AppProtocol;
use rtcheck_wire::http::response::{Framing, Reader};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// Which library's fallback handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    EngineIo,
    SignalR,
    Phoenix,
}

impl Via {
    /// The library whose clients fall back to HTTP, if `p` is one.
    pub fn of(p: AppProtocol) -> Option<Via> {
        match p {
            AppProtocol::SocketIo => Some(Via::EngineIo),
            AppProtocol::SignalR => Some(Via::SignalR),
            AppProtocol::Phoenix => Some(Via::Phoenix),
            _ => None,
        }
    }

    fn library(self) -> &'static str {
        match self {
            Via::EngineIo => "Socket.IO's long-polling transport",
            Via::SignalR => "SignalR's negotiation",
            Via::Phoenix => "Phoenix's long-poll transport",
        }
    }

    /// The request's target and whether it is a POST.
    fn target(self, t: &Target) -> (Target, bool) {
        match self {
            Via::EngineIo => (polling_target(t), false),
            Via::SignalR => (negotiate_target(t), true),
            Via::Phoenix => (longpoll_target(t), false),
        }
    }

    fn parse(self, status: u16, body: &[u8]) -> PollingOpen {
        match self {
            Via::EngineIo => parse_open(status, body),
            Via::SignalR => parse_negotiate(status, body),
            Via::Phoenix => parse_longpoll(status, body),
        }
    }
}

/// The fallback asked, and what it answered (or why it could not be asked).
#[derive(Debug, Clone, PartialEq)]
pub struct Fallback {
    pub via: Via,
    pub result: Result<PollingOpen, String>,
}

/// What the polling handshake answered.
#[derive(Debug, Clone, PartialEq)]
pub struct PollingOpen {
    pub status: u16,
    /// The Engine.IO open packet was in the body.
    pub open: bool,
    /// Its `upgrades` (the transports the server would upgrade to).
    pub upgrades: Vec<String>,
    /// Its `pingInterval` (s).
    pub ping_interval_s: Option<f64>,
}

/// `t` over plain HTTP(S) with `path` in place of its path, its query kept and `extra`
/// added to it.
fn http_target(t: &Target, path: &str, extra: Option<&str>) -> Target {
    let mut p = t.with_scheme(if t.scheme.tls() {
        super::target::Scheme::Https
    } else {
        super::target::Scheme::Http
    });
    let query = t.path_and_query.split_once('?').map(|(_, q)| q);
    let query: Vec<&str> = query
        .into_iter()
        .chain(extra)
        .filter(|q| !q.is_empty())
        .collect();
    p.path_and_query = if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", query.join("&"))
    };
    p
}

/// SignalR's negotiation: `<hub path>/negotiate?negotiateVersion=1`, the hub's query kept
/// (an `access_token` goes along, as the clients send it).
pub fn negotiate_target(t: &Target) -> Target {
    let path = t.path_and_query.split('?').next().unwrap_or("/");
    let path = format!("{}/negotiate", path.trim_end_matches('/'));
    http_target(t, &path, Some("negotiateVersion=1"))
}

/// Phoenix's long-poll transport: the socket's `/websocket` replaced by `/longpoll`.
pub fn longpoll_target(t: &Target) -> Target {
    let path = t.path_and_query.split('?').next().unwrap_or("/");
    let base = path.trim_end_matches('/');
    let base = base.strip_suffix("/websocket").unwrap_or(base);
    http_target(t, &format!("{base}/longpoll"), None)
}

/// SignalR's negotiate answer: a connection id (or token) and the transports offered;
/// Azure SignalR's redirect (`url` + `accessToken`) counts as answered.
pub fn parse_negotiate(status: u16, body: &[u8]) -> PollingOpen {
    let v: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let has = |k: &str| {
        v.as_ref()
            .is_some_and(|v| v.get(k).is_some_and(|x| x.is_string()))
    };
    let transports = v
        .as_ref()
        .and_then(|v| v.get("availableTransports")?.as_array().cloned())
        .unwrap_or_default();
    PollingOpen {
        status,
        open: status == 200 && (has("connectionId") || has("connectionToken") || has("url")),
        upgrades: transports
            .iter()
            .filter_map(|t| t.get("transport")?.as_str().map(String::from))
            .take(8)
            .collect(),
        ping_interval_s: None,
    }
}

/// Phoenix's long-poll answer to a GET without a token: HTTP 200 whose JSON `status` is
/// 410 with a new session's `token` (403: the socket refused the connection).
pub fn parse_longpoll(status: u16, body: &[u8]) -> PollingOpen {
    let v: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let inner = v.as_ref().and_then(|v| v.get("status")?.as_u64());
    let token = v
        .as_ref()
        .is_some_and(|v| v.get("token").is_some_and(|t| t.is_string()));
    PollingOpen {
        status,
        open: status == 200 && inner == Some(410) && token,
        upgrades: Vec::new(),
        ping_interval_s: None,
    }
}

/// The same URL with `transport=polling` (added when absent).
pub fn polling_target(t: &Target) -> Target {
    let mut p = t.with_scheme(if t.scheme.tls() {
        super::target::Scheme::Https
    } else {
        super::target::Scheme::Http
    });
    let mut pq = t.path_and_query.clone();
    // `--app-protocol socketio` on a URL without EIO: the v4 handshake, as clients send.
    if !pq.split(['?', '&']).any(|q| q.starts_with("EIO=")) {
        pq.push(if pq.contains('?') { '&' } else { '?' });
        pq.push_str("EIO=4");
    }
    p.path_and_query = if pq.contains("transport=websocket") {
        pq.replace("transport=websocket", "transport=polling")
    } else if pq.contains('?') {
        format!("{pq}&transport=polling")
    } else {
        format!("{pq}?transport=polling")
    };
    p
}

/// Read an Engine.IO open packet from a polling body (v4 `0{...}`, v3 `96:0{...}`).
pub fn parse_open(status: u16, body: &[u8]) -> PollingOpen {
    let text = String::from_utf8_lossy(body);
    let start = text.find("0{");
    let v: Option<serde_json::Value> = start.and_then(|i| {
        let mut de = serde_json::Deserializer::from_str(&text[i + 1..]).into_iter();
        de.next().and_then(Result::ok)
    });
    let open = status == 200 && v.as_ref().is_some_and(|v| v.get("sid").is_some());
    PollingOpen {
        status,
        open,
        upgrades: v
            .as_ref()
            .and_then(|v| v.get("upgrades")?.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|u| u.as_str().map(String::from))
            .collect(),
        ping_interval_s: v
            .as_ref()
            .and_then(|v| v.get("pingInterval")?.as_f64())
            .map(|ms| ms / 1000.0),
    }
}

/// Bytes of a polling answer probe reads at most: an open packet is ~100 B.
const BODY_CAP: usize = 64 * 1024;

/// One fallback handshake through the path, bounded by `o.timeout` in all.
pub async fn polling(t: &Target, o: &ClientOpts, via: Via) -> Fallback {
    Fallback {
        via,
        result: ask(t, o, via).await,
    }
}

async fn ask(t: &Target, o: &ClientOpts, via: Via) -> Result<PollingOpen, String> {
    let (p, post) = via.target(t);
    let run = async {
        let mut conn = client::connect(&p, o, &["http/1.1"]).await?;
        let mut extra = vec![("Accept", "*/*".to_string())];
        if post {
            extra.push(("Content-Length", "0".to_string()));
        }
        let mut req = client::request(&p, o, &extra);
        if post {
            // The one request builder writes GET; the negotiation is a POST.
            req.splice(..3, b"POST".iter().copied());
        }
        let (head, rest) = client::exchange(&mut conn, &p, o, &req, o.timeout).await?;
        let framing = head.framing(false).unwrap_or(Framing::Close);
        let mut reader = Reader::new(framing);
        let mut body = Vec::new();
        let mut chunk = rest;
        loop {
            reader
                .feed_into(&chunk, &mut body)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            // Until the open packet parses whole (it may span reads), the body ends, or
            // the cap: a partial packet is never judged.
            if reader.done() || body.len() >= BODY_CAP || via.parse(head.status, &body).open {
                break;
            }
            let mut buf = [0u8; 8192];
            let n = conn.io.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            chunk = buf[..n].to_vec();
        }
        Ok::<_, anyhow::Error>(via.parse(head.status, &body))
    };
    match tokio::time::timeout(o.timeout + Duration::from_millis(100), run).await {
        Ok(Ok(open)) => Ok(open),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(_) => Err(format!("no answer within {:?}", o.timeout)),
    }
}

/// The sentence the upgrade finding adds.
pub fn note(f: &Fallback) -> String {
    let lib = f.via.library();
    match (&f.result, f.via) {
        (Ok(p), Via::SignalR) if p.open => format!(
            "{lib} answered through the path (transports: {}): its clients fall back to {} here",
            if p.upgrades.is_empty() { "not listed".to_string() } else { p.upgrades.join(", ") },
            if p.upgrades.iter().any(|t| t == "ServerSentEvents") { "Server-Sent Events or long polling" } else { "long polling" }
        ),
        (Ok(p), Via::Phoenix) if p.open => format!(
            "{lib} answered through the path (a new session's token): its clients fall back to long polling here, a request per message (HTTP {})",
            p.status
        ),
        (Ok(p), Via::EngineIo) if p.open => format!(
            "Socket.IO's long-polling transport answered through the path (Engine.IO open{}{}): its clients fall back to polling here, a request per message",
            if p.upgrades.is_empty() { String::new() } else { format!(", upgrades: {}", p.upgrades.join(",")) },
            p.ping_interval_s.map_or(String::new(), |i| format!(", pingInterval {i} s"))
        ),
        (Ok(p), _) => format!(
            "{lib} did not answer either (HTTP {}): its clients cannot connect through this path",
            p.status
        ),
        (Err(e), _) => format!("{lib} failed too: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_url_and_open_packets() {
        let t = Target::parse("wss://h/socket.io/?EIO=4&transport=websocket").unwrap();
        let p = polling_target(&t);
        assert_eq!(p.path_and_query, "/socket.io/?EIO=4&transport=polling");
        assert!(p.scheme.tls() && !p.scheme.websocket());
        let bare = Target::parse("ws://h/socket.io/").unwrap();
        assert_eq!(
            polling_target(&bare).path_and_query,
            "/socket.io/?EIO=4&transport=polling"
        );
        let v4 = parse_open(
            200,
            br#"0{"sid":"a","upgrades":["websocket"],"pingInterval":25000,"pingTimeout":20000}"#,
        );
        assert!(v4.open);
        assert_eq!(v4.upgrades, vec!["websocket"]);
        assert_eq!(v4.ping_interval_s, Some(25.0));
        let v3 = parse_open(
            200,
            br#"96:0{"sid":"b","upgrades":[],"pingInterval":5000}2:40"#,
        );
        assert!(v3.open && v3.upgrades.is_empty());
        assert!(!parse_open(404, b"not found").open);
        assert!(!parse_open(200, b"<html>").open);
        let fb = Fallback {
            via: Via::EngineIo,
            result: Ok(v4),
        };
        assert!(note(&fb).contains("fall back to polling"));
    }

    /// Answers written from SignalR's transport spec (negotiate v1) and Phoenix's
    /// LongPoll transport (a GET without a token opens a session).
    #[test]
    fn signalr_negotiate_and_phoenix_longpoll() {
        let t = Target::parse("wss://h/hubs/chat?access_token=abc").unwrap();
        let n = negotiate_target(&t);
        assert_eq!(
            n.path_and_query,
            "/hubs/chat/negotiate?access_token=abc&negotiateVersion=1"
        );
        assert!(n.scheme.tls() && !n.scheme.websocket());
        let ok = br#"{"negotiateVersion":1,"connectionId":"c1","connectionToken":"t1",
            "availableTransports":[{"transport":"WebSockets","transferFormats":["Text","Binary"]},
            {"transport":"ServerSentEvents","transferFormats":["Text"]},
            {"transport":"LongPolling","transferFormats":["Text","Binary"]}]}"#;
        let p = parse_negotiate(200, ok);
        assert!(p.open);
        assert_eq!(
            p.upgrades,
            ["WebSockets", "ServerSentEvents", "LongPolling"]
        );
        let fb = Fallback {
            via: Via::SignalR,
            result: Ok(p),
        };
        assert!(
            note(&fb).contains("fall back to Server-Sent Events"),
            "{}",
            note(&fb)
        );
        assert!(!parse_negotiate(404, b"").open);
        assert!(!parse_negotiate(200, br#"{"error":"Negotiate failed"}"#).open);
        let azure =
            br#"{"url":"https://x.service.signalr.net/client/?hub=chat","accessToken":"e"}"#;
        assert!(parse_negotiate(200, azure).open);

        let t = Target::parse("ws://h/socket/websocket?vsn=2.0.0&token=x").unwrap();
        assert_eq!(
            longpoll_target(&t).path_and_query,
            "/socket/longpoll?vsn=2.0.0&token=x"
        );
        let new = parse_longpoll(
            200,
            br#"{"status":410,"token":"SFMyNTY.g2g","messages":[]}"#,
        );
        assert!(new.open);
        assert!(!parse_longpoll(200, br#"{"status":403}"#).open);
        assert!(!parse_longpoll(404, b"Not Found").open);
        let refused = Fallback {
            via: Via::Phoenix,
            result: Ok(parse_longpoll(404, b"")),
        };
        assert!(note(&refused).contains("did not answer either (HTTP 404)"));
    }
}
