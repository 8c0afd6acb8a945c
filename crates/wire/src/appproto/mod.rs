//! Realtime library protocols spoken on top of a WebSocket (issue 42): Socket.IO
//! (Engine.IO v3/v4), SignalR (JSON hub protocol), Phoenix channels (V1 and V2 JSON),
//! Rails ActionCable, graphql-ws (`graphql-transport-ws`), STOMP 1.0-1.2, SockJS and
//! MQTT 3.1.1. Each is pure framing plus a small state machine: what to send after the
//! upgrade, what a message from the server is (the library's heartbeat, a control
//! packet, a close with its reason, or application data unwrapped to its payload), the
//! replies the protocol owes, and the heartbeats the client must send itself. No I/O:
//! probe, bench and verify feed it the messages their WebSocket decoder produced.
//!
//! The documented defaults (who pings, how often, how long the other side waits) are data:
//! `data/protocols.yaml`, embedded and read by [`AppProtocol::defaults`], each value with
//! its source and the date it was read.
mod actioncable;
mod graphql_ws;
mod mqtt;
mod phoenix;
mod signalr;
mod socketio;
mod sockjs;
mod stomp;

mod data;

use serde::{Deserialize, Serialize};

/// The protocols `--app-protocol` names (stable names: flags, JSON keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AppProtocol {
    Raw,
    #[serde(rename = "socketio")]
    SocketIo,
    #[serde(rename = "signalr")]
    SignalR,
    Phoenix,
    #[serde(rename = "actioncable")]
    ActionCable,
    GraphqlWs,
    Stomp,
    #[serde(rename = "sockjs")]
    SockJs,
    Mqtt,
}

impl AppProtocol {
    pub const ALL: [AppProtocol; 9] = [
        AppProtocol::Raw,
        AppProtocol::SocketIo,
        AppProtocol::SignalR,
        AppProtocol::Phoenix,
        AppProtocol::ActionCable,
        AppProtocol::GraphqlWs,
        AppProtocol::Stomp,
        AppProtocol::SockJs,
        AppProtocol::Mqtt,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AppProtocol::Raw => "raw",
            AppProtocol::SocketIo => "socketio",
            AppProtocol::SignalR => "signalr",
            AppProtocol::Phoenix => "phoenix",
            AppProtocol::ActionCable => "actioncable",
            AppProtocol::GraphqlWs => "graphql-ws",
            AppProtocol::Stomp => "stomp",
            AppProtocol::SockJs => "sockjs",
            AppProtocol::Mqtt => "mqtt",
        }
    }

    pub fn parse(s: &str) -> Option<AppProtocol> {
        let s = s.trim().to_ascii_lowercase().replace(['_', '.'], "-");
        let s = match s.as_str() {
            "socket-io" => "socketio",
            "action-cable" => "actioncable",
            "graphql-transport-ws" | "graphqlws" => "graphql-ws",
            "sock-js" => "sockjs",
            other => other,
        };
        Self::ALL.into_iter().find(|p| p.name() == s)
    }

    /// The WebSocket subprotocol the library's clients offer (`Sec-WebSocket-Protocol`).
    pub fn subprotocol(self) -> Option<&'static str> {
        match self {
            AppProtocol::ActionCable => Some("actioncable-v1-json"),
            AppProtocol::GraphqlWs => Some("graphql-transport-ws"),
            AppProtocol::Stomp => Some("v12.stomp, v11.stomp, v10.stomp"),
            AppProtocol::Mqtt => Some("mqtt"),
            _ => None,
        }
    }

    /// What a WebSocket close code means in this protocol, beyond RFC 6455's.
    pub fn close_reason(self, code: u16) -> Option<&'static str> {
        match self {
            AppProtocol::GraphqlWs => graphql_ws::close_reason(code),
            _ => None,
        }
    }

    /// The library's documented heartbeat and timeouts (data/protocols.yaml; raw, or a
    /// protocol the data lacks, which its test forbids: none).
    pub fn defaults(self) -> Defaults {
        data::table()
            .iter()
            .find(|(p, _)| *p == self)
            .map_or(Defaults::NONE, |(_, d)| *d)
    }
}

/// Which end sends the library's heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pinger {
    Server,
    Client,
    Both,
    Nobody,
}

/// A library's documented heartbeat: who sends it, how often, and how long the other side
/// waits before it drops the connection (seconds). Read from the library's docs or code.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Defaults {
    pub pinger: Pinger,
    pub interval_s: Option<f64>,
    /// After a missed heartbeat: the time the waiting side allows beyond the interval
    /// (Engine.IO's pingTimeout) or in all (SignalR's 30 s), see `drop_after_s`.
    pub timeout_s: Option<f64>,
    /// A silent peer is dropped this long after the last heartbeat.
    pub drop_after_s: Option<f64>,
    pub source: &'static str,
    pub read: &'static str,
}

impl Defaults {
    pub const NONE: Defaults = Defaults {
        pinger: Pinger::Nobody,
        interval_s: None,
        timeout_s: None,
        drop_after_s: None,
        source: "",
        read: "",
    };
}

/// Why a URL (or a subprotocol) names a protocol: the report says it.
#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    pub protocol: AppProtocol,
    pub why: String,
}

/// The value of query parameter `name` (exactly that name), if present.
fn query_param<'a>(path_and_query: &'a str, name: &str) -> Option<&'a str> {
    let query = path_and_query.split_once('?')?.1;
    query
        .split('&')
        .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
}

/// The protocol a WebSocket URL's path and query name unambiguously, if any.
pub fn detect(path_and_query: &str) -> Option<Detected> {
    let path = path_and_query.split('?').next().unwrap_or("");
    let q = |name: &str| query_param(path_and_query, name);
    let hit = |p, why: String| Some(Detected { protocol: p, why });
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if let Some(v) = q("EIO") {
        return hit(
            AppProtocol::SocketIo,
            format!("the query names Engine.IO (EIO={v})"),
        );
    }
    if segs.last() == Some(&"websocket") && q("vsn").is_some() {
        return hit(
            AppProtocol::Phoenix,
            "a Phoenix socket path (/.../websocket?vsn=)".into(),
        );
    }
    // SockJS: /prefix/<server>/<session>/websocket, server a number up to 3 digits.
    if segs.len() >= 3 && segs[segs.len() - 1] == "websocket" {
        let server = segs[segs.len() - 3];
        if (1..=3).contains(&server.len()) && server.bytes().all(|b| b.is_ascii_digit()) {
            return hit(
                AppProtocol::SockJs,
                "a SockJS session path (/<server>/<session>/websocket)".into(),
            );
        }
    }
    if segs.last() == Some(&"cable") {
        return hit(
            AppProtocol::ActionCable,
            "the ActionCable mount path /cable".into(),
        );
    }
    None
}

/// A message as the WebSocket decoder delivered it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Msg<'a> {
    Text(&'a str),
    Binary(&'a [u8]),
}

/// A message to send (text or binary frame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    Text(String),
    Binary(Vec<u8>),
}

/// What one message from the server was.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The library's heartbeat from the server (answered, when it asks, by a `Reply`).
    Heartbeat,
    /// Send this back now (a pong, an ack the protocol requires).
    Reply(Out),
    /// Application data, unwrapped to what the application sent (the JSON of an event's
    /// argument, a STOMP body...): what `--seq-path` and the payload format read.
    Payload(Vec<u8>),
    /// The server's own heartbeat settings, announced on the wire (Engine.IO's open
    /// packet, STOMP's CONNECTED heart-beat): they override the documented defaults.
    Negotiated {
        interval_s: Option<f64>,
        drop_after_s: Option<f64>,
        /// How often the client must send its own heartbeat, when the server says.
        client_s: Option<f64>,
    },
    /// A protocol control message (connect ack, welcome, subscription confirmed).
    Control(&'static str),
    /// The server refused or ended the session at the protocol level, with its reason.
    Closed(String),
    /// A message the protocol does not define (kept as a count, never a payload).
    Unknown,
}

/// What to subscribe to where the protocol has channels, topics or events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Subscribe {
    /// Phoenix topic, ActionCable channel, STOMP destination, MQTT topic, graphql query.
    pub channel: Option<String>,
    /// Socket.IO event name, SignalR hub method: only these carry payloads.
    pub event: Option<String>,
}

/// One client session of a protocol: feed it the server's messages, send what it returns.
#[derive(Debug, Clone)]
pub struct Client {
    pub protocol: AppProtocol,
    sub: Subscribe,
    /// Engine.IO major version (3 or 4) from the URL's `EIO=`.
    eio: u8,
    /// Phoenix's V2 array serializer (`vsn=2.0.0`), else V1 objects.
    v2: bool,
    /// Client heartbeat interval in force (s), when the client must send one.
    client_every_s: Option<f64>,
    /// The server's heartbeat interval it announced (Engine.IO's open packet).
    server_every_s: Option<f64>,
    last_client_beat_s: f64,
    next_ref: u64,
}

impl Client {
    /// A session for `protocol`; `path_and_query` tells versions (`EIO=3`, `vsn=1.0.0`).
    pub fn new(protocol: AppProtocol, path_and_query: &str, sub: Subscribe) -> Client {
        let eio = if query_param(path_and_query, "EIO") == Some("3") {
            3
        } else {
            4
        };
        let client_every_s = match protocol {
            AppProtocol::Phoenix | AppProtocol::SignalR | AppProtocol::Mqtt => {
                protocol.defaults().interval_s
            }
            AppProtocol::SocketIo if eio == 3 => protocol.defaults().interval_s,
            _ => None,
        };
        Client {
            protocol,
            sub,
            eio,
            v2: query_param(path_and_query, "vsn").is_some_and(|v| v.starts_with("2.")),
            client_every_s,
            server_every_s: None,
            last_client_beat_s: 0.0,
            next_ref: 1,
        }
    }

    /// Messages to send right after the upgrade (some protocols wait for the server's
    /// open packet instead: then they come back as `Reply`s).
    pub fn start(&mut self) -> Vec<Out> {
        match self.protocol {
            AppProtocol::SignalR => vec![signalr::handshake()],
            // Without --channel there is nothing to join: the heartbeat alone is watched.
            AppProtocol::Phoenix => match self.sub.channel.clone() {
                Some(topic) => {
                    let r = self.take_ref();
                    vec![phoenix::join(&topic, r, self.v2)]
                }
                None => Vec::new(),
            },
            AppProtocol::GraphqlWs => vec![graphql_ws::init()],
            AppProtocol::Stomp => vec![stomp::connect()],
            AppProtocol::Mqtt => vec![mqtt::connect(mqtt::KEEPALIVE_S)],
            _ => Vec::new(),
        }
    }

    fn topic(&self) -> &str {
        self.sub.channel.as_deref().unwrap_or("rtcheck:probe")
    }

    fn take_ref(&mut self) -> u64 {
        self.next_ref += 1;
        self.next_ref - 1
    }

    /// What one server message was (in order), with the replies it asks for.
    pub fn on_message(&mut self, m: Msg) -> Vec<Event> {
        let mut ev = match (self.protocol, m) {
            (AppProtocol::Raw, Msg::Text(t)) => vec![Event::Payload(t.as_bytes().to_vec())],
            (AppProtocol::Raw, Msg::Binary(b)) => vec![Event::Payload(b.to_vec())],
            (AppProtocol::SocketIo, Msg::Text(t)) => socketio::on_text(t, self.eio, &self.sub),
            (AppProtocol::SignalR, Msg::Text(t)) => signalr::on_text(t, &self.sub),
            (AppProtocol::Phoenix, Msg::Text(t)) => phoenix::on_text(t, &self.sub),
            (AppProtocol::ActionCable, Msg::Text(t)) => {
                actioncable::on_text(t, self.sub.channel.as_deref())
            }
            (AppProtocol::GraphqlWs, Msg::Text(t)) => {
                graphql_ws::on_text(t, self.sub.channel.as_deref())
            }
            (AppProtocol::Stomp, Msg::Text(t)) => stomp::on_text(t, self.sub.channel.as_deref()),
            (AppProtocol::Stomp, Msg::Binary(b)) => match std::str::from_utf8(b) {
                Ok(t) => stomp::on_text(t, self.sub.channel.as_deref()),
                Err(_) => vec![Event::Unknown],
            },
            (AppProtocol::SockJs, Msg::Text(t)) => sockjs::on_text(t),
            (AppProtocol::Mqtt, Msg::Binary(b)) => mqtt::on_binary(b, self.sub.channel.as_deref()),
            // Engine.IO binary attachments and the like: data of the application.
            (_, Msg::Binary(b)) => vec![Event::Payload(b.to_vec())],
            (_, Msg::Text(_)) => vec![Event::Unknown],
        };
        for e in &mut ev {
            if let Event::Negotiated {
                client_s,
                interval_s,
                ..
            } = e
            {
                if let Some(c) = client_s {
                    // Never faster than once a second, whatever the server announced.
                    self.client_every_s = Some(c.max(1.0));
                }
                self.server_every_s = interval_s.or(self.server_every_s);
            }
        }
        ev
    }

    /// The heartbeat the client owes at `now_s` (seconds since the upgrade), if any.
    pub fn due(&mut self, now_s: f64) -> Option<Out> {
        let every = self.client_every_s?;
        if now_s - self.last_client_beat_s < every {
            return None;
        }
        self.last_client_beat_s = now_s;
        Some(match self.protocol {
            AppProtocol::Phoenix => {
                let r = self.take_ref();
                phoenix::heartbeat(r, self.v2)
            }
            AppProtocol::SignalR => signalr::ping(),
            AppProtocol::Mqtt => mqtt::pingreq(),
            AppProtocol::SocketIo => Out::Text("2".into()),
            AppProtocol::Stomp => Out::Text("\n".into()),
            _ => return None,
        })
    }

    /// Whether the session is set up before any server message (nothing to wait for).
    pub fn ready_at_start(&self) -> bool {
        match self.protocol {
            AppProtocol::Raw => true,
            AppProtocol::Phoenix => self.sub.channel.is_none(),
            _ => false,
        }
    }

    /// Whether `e` completes the session's setup: connected, and subscribed where a
    /// channel was given (bench and verify count a client only from then on).
    pub fn ready_on(&self, e: &Event) -> bool {
        let has_channel = self.sub.channel.is_some();
        let Event::Control(name) = e else {
            return false;
        };
        let want = match self.protocol {
            AppProtocol::Raw => return true,
            AppProtocol::SocketIo => "connected",
            AppProtocol::SignalR => "handshake",
            AppProtocol::Phoenix => "joined",
            AppProtocol::ActionCable if has_channel => "subscribed",
            AppProtocol::ActionCable => "welcome",
            AppProtocol::GraphqlWs => "connection_ack",
            AppProtocol::Stomp => "connected",
            AppProtocol::SockJs => "open",
            AppProtocol::Mqtt if has_channel => "subscribed",
            AppProtocol::Mqtt => "connack",
        };
        *name == want
    }

    /// The heartbeat owed at `now_s` by a client that never reads (bench's slow clients:
    /// slow at the socket, never at the library's heartbeat). Where the client pings, its
    /// own ping; where the server pings and drops a silent client (Engine.IO v4,
    /// graphql-ws), an unsolicited pong every half interval, which both reset the
    /// server's timer without a ping having been read.
    pub fn blind_due(&mut self, now_s: f64) -> Option<Out> {
        if self.client_every_s.is_some() {
            return self.due(now_s);
        }
        let interval = self
            .server_every_s
            .or(self.protocol.defaults().interval_s)?;
        // Never more often than twice a second, whatever the server announced.
        let every = (interval / 2.0).max(0.5);
        if now_s - self.last_client_beat_s < every {
            return None;
        }
        self.last_client_beat_s = now_s;
        match self.protocol {
            AppProtocol::SocketIo => Some(Out::Text("3".into())),
            AppProtocol::GraphqlWs => Some(Out::Text(r#"{"type":"pong"}"#.into())),
            _ => None,
        }
    }

    /// A message carrying `payload` the way this library's clients publish it.
    pub fn publish(&mut self, payload: &str) -> Out {
        let event = self.sub.event.clone().unwrap_or_else(|| "message".into());
        match self.protocol {
            AppProtocol::SocketIo => Out::Text(socketio::event_text(&event, payload)),
            AppProtocol::SignalR => signalr::invocation(&event, payload),
            AppProtocol::Phoenix => {
                let r = self.take_ref();
                phoenix::push(self.topic(), &event, payload, r, self.v2)
            }
            AppProtocol::ActionCable => actioncable::message(self.topic(), payload),
            AppProtocol::Stomp => stomp::send(self.topic(), payload),
            AppProtocol::SockJs => sockjs::send(payload),
            AppProtocol::Mqtt => mqtt::publish(self.topic(), payload.as_bytes()),
            AppProtocol::GraphqlWs | AppProtocol::Raw => Out::Text(payload.to_string()),
        }
    }
}

/// The JSON text of a value, or the string itself when the value is a JSON string (an
/// event's argument as the application handed it over).
fn payload_of(v: &serde_json::Value) -> Vec<u8> {
    match v {
        serde_json::Value::String(s) => s.as_bytes().to_vec(),
        other => other.to_string().into_bytes(),
    }
}

/// A server close reason kept short and printable (it reaches reports).
fn reason(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(120)
        .collect();
    s.trim().to_string()
}

#[cfg(test)]
mod tests;
