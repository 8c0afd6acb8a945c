//! A library protocol (issue 42: Socket.IO, SignalR, Phoenix...) on one of bench's or
//! verify delivery's tungstenite WebSockets: which protocol is spoken and why, the
//! session set up before the client counts as connected, the server's messages unwrapped
//! to the application's payload (what templates and `--seq-path` read), the heartbeat
//! answered or sent. The framing itself is `rtcheck_wire::appproto`'s; this is the glue.
use rtcheck_wire::appproto::{self, AppProtocol, Client, Event, Msg, Out, Subscribe};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

/// The protocol a run spoke, and why (`--app-protocol`, or what the URL names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spoken {
    pub protocol: String,
    pub why: String,
}

/// The URL's path and query (`/socket.io/?EIO=4&...`), what detection and versions read.
pub fn path_and_query(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("/", |i| &rest[i..])
}

/// The protocol to speak on `url`: the one given (raw: none), else the one its path
/// names unambiguously.
pub fn resolve(given: Option<AppProtocol>, url: &str) -> Option<(AppProtocol, Spoken)> {
    let (p, why) = match given {
        Some(AppProtocol::Raw) => return None,
        Some(p) => (p, "--app-protocol".to_string()),
        None => {
            let d = appproto::detect(path_and_query(url))?;
            (d.protocol, d.why)
        }
    };
    let spoken = Spoken {
        protocol: p.name().into(),
        why,
    };
    Some((p, spoken))
}

/// Where the library keeps what a slow client has not read yet, when it keeps it in the
/// server's own memory (a queue per client in userland, without a bound by default): its
/// growth is the server process's RSS, which bench samples.
pub fn userland_queue(p: AppProtocol) -> Option<&'static str> {
    match p {
        AppProtocol::SocketIo => Some(
            "Socket.IO queues each client's packets in the server process (engine.io's \
             per-socket queue, unbounded by default): the slow clients' backlog is the \
             server's RSS growth, not kernel buffers",
        ),
        AppProtocol::SignalR => Some(
            "SignalR buffers each client's messages in the server process, a pipe per \
             connection held to ApplicationMaxBufferSize (64 KB by default in ASP.NET \
             Core, then the send waits): the backlog is bounded unless raised or 0",
        ),
        _ => None,
    }
}

/// A library message as a tungstenite message.
pub fn to_msg(o: Out) -> Message {
    match o {
        Out::Text(t) => Message::text(t),
        Out::Binary(b) => Message::binary(b),
    }
}

/// What one server message carried.
#[derive(Debug, Default)]
pub struct Handled {
    /// The application's payloads, unwrapped.
    pub payloads: Vec<Vec<u8>>,
    /// Owed to the server now (pongs, acks).
    pub replies: Vec<Message>,
    pub ready: bool,
    /// The server ended the session at the protocol level, with its reason.
    pub closed: Option<String>,
    pub heartbeats: u64,
}

/// One client's session of the protocol, its clock from the upgrade.
pub struct Session {
    client: Client,
    t0: Instant,
}

impl Session {
    pub fn new(p: AppProtocol, url: &str, sub: Subscribe) -> Session {
        Session {
            client: Client::new(p, path_and_query(url), sub),
            t0: Instant::now(),
        }
    }

    pub fn protocol(&self) -> AppProtocol {
        self.client.protocol
    }

    fn now_s(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    /// The session's first messages, and whether it is set up with them alone.
    pub fn start(&mut self) -> (Vec<Message>, bool) {
        let first = self.client.start().into_iter().map(to_msg).collect();
        (first, self.client.ready_at_start())
    }

    /// A text or binary message from the server; other messages carry nothing here.
    pub fn on_message(&mut self, m: &Message) -> Handled {
        let events = match m {
            Message::Text(t) => self.client.on_message(Msg::Text(t.as_str())),
            Message::Binary(b) => self.client.on_message(Msg::Binary(b)),
            _ => return Handled::default(),
        };
        let mut h = Handled::default();
        for e in events {
            h.ready |= self.client.ready_on(&e);
            match e {
                Event::Payload(p) => h.payloads.push(p),
                Event::Reply(o) => h.replies.push(to_msg(o)),
                Event::Heartbeat => h.heartbeats += 1,
                Event::Closed(r) => h.closed = Some(r),
                _ => {}
            }
        }
        h
    }

    /// The client's own heartbeat, when due.
    pub fn due(&mut self) -> Option<Message> {
        let now = self.now_s();
        self.client.due(now).map(to_msg)
    }

    /// The heartbeat of a client that never reads (see `Client::blind_due`).
    pub fn blind_due(&mut self) -> Option<Message> {
        let now = self.now_s();
        self.client.blind_due(now).map(to_msg)
    }

    /// `payload` as the library's clients publish it.
    pub fn publish(&mut self, payload: &str) -> Message {
        to_msg(self.client.publish(payload))
    }
}

/// Set the session up on a fresh WebSocket: its first messages, then the server's
/// answers read (and replied to) until it is connected and subscribed, within `limit`.
/// Payloads that come before are dropped (nothing was measured yet).
pub async fn handshake<S>(
    ws: &mut tokio_tungstenite::WebSocketStream<S>,
    s: &mut Session,
    limit: Duration,
) -> Result<(), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures_util::{SinkExt, StreamExt};
    let name = s.protocol().name();
    let setup = async {
        let (first, ready) = s.start();
        for m in first {
            ws.send(m).await.map_err(|e| e.to_string())?;
        }
        if ready {
            return Ok(());
        }
        loop {
            let m = match ws.next().await {
                Some(Ok(m)) => m,
                Some(Err(e)) => return Err(e.to_string()),
                None => return Err("closed".into()),
            };
            if let Message::Close(c) = &m {
                let code = c.as_ref().map_or(1005, |c| u16::from(c.code));
                return Err(format!("closed with code {code}"));
            }
            let h = s.on_message(&m);
            for r in h.replies {
                ws.send(r).await.map_err(|e| e.to_string())?;
            }
            if let Some(why) = h.closed {
                return Err(why);
            }
            if h.ready {
                return Ok(());
            }
        }
    };
    match tokio::time::timeout(limit, setup).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("{name} session setup: {e}")),
        Err(_) => Err(format!(
            "{name} session setup: not connected within {} s",
            limit.as_secs()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_names_the_protocol_unless_one_is_given() {
        let url = "ws://127.0.0.1:1/socket.io/?EIO=4&transport=websocket";
        let (p, s) = resolve(None, url).expect("detected");
        assert_eq!(p, AppProtocol::SocketIo);
        assert!(s.why.contains("EIO=4"), "{}", s.why);
        assert_eq!(resolve(Some(AppProtocol::Raw), url), None);
        let (p, s) = resolve(Some(AppProtocol::SignalR), "ws://h:1/hub").expect("given");
        assert_eq!(
            (p, s.why.as_str()),
            (AppProtocol::SignalR, "--app-protocol")
        );
        assert_eq!(resolve(None, "ws://127.0.0.1:1/ws"), None);
        assert_eq!(path_and_query("ws://h:1"), "/");
    }

    #[test]
    fn a_socketio_event_is_unwrapped_and_its_ping_answered() {
        let url = "ws://127.0.0.1:1/socket.io/?EIO=4&transport=websocket";
        let mut s = Session::new(AppProtocol::SocketIo, url, Subscribe::default());
        let open = s.on_message(&Message::text(
            r#"0{"sid":"x","pingInterval":25000,"pingTimeout":20000}"#,
        ));
        assert_eq!(open.replies, vec![Message::text("40")]);
        assert!(s.on_message(&Message::text(r#"40{"sid":"y"}"#)).ready);
        let ping = s.on_message(&Message::text("2"));
        assert_eq!(
            (ping.heartbeats, ping.replies),
            (1, vec![Message::text("3")])
        );
        let ev = s.on_message(&Message::text(r#"42["message",{"seq":7,"ts":1}]"#));
        assert_eq!(ev.payloads, vec![br#"{"seq":7,"ts":1}"#.to_vec()]);
    }
}
