//! Socket.IO over Engine.IO's WebSocket transport (`/socket.io/?EIO=4&transport=websocket`).
//! Engine.IO packets are one digit then data: 0 open (JSON with pingInterval and
//! pingTimeout), 1 close, 2 ping, 3 pong, 4 message, 6 noop. In v4 the server pings and
//! the client answers; in v3 the client pings. A Socket.IO packet rides in a message:
//! 0 connect, 1 disconnect, 2 event (`42["name",arg]`, an optional `/ns,` and ack id
//! before the array), 3 ack, 4 connect error, 5/6 binary event/ack.
use super::{payload_of, reason, Event, Out, Subscribe};

pub fn on_text(t: &str, eio: u8, sub: &Subscribe) -> Vec<Event> {
    let (kind, data) = match t.chars().next() {
        Some(c) => (c, &t[c.len_utf8()..]),
        None => return vec![Event::Unknown],
    };
    match kind {
        '0' => open(data, eio),
        '1' => vec![Event::Closed(
            "Engine.IO close packet from the server".into(),
        )],
        // v4: the server's ping, answered with the same data; v3: never sent by servers.
        '2' => vec![
            Event::Heartbeat,
            Event::Reply(Out::Text(format!("3{data}"))),
        ],
        // v3: the server's answer to the client's ping.
        '3' => vec![Event::Heartbeat],
        '4' => message(data, sub),
        '6' => vec![Event::Control("noop")],
        _ => vec![Event::Unknown],
    }
}

fn open(data: &str, eio: u8) -> Vec<Event> {
    let v: serde_json::Value = serde_json::from_str(data).unwrap_or_default();
    // A server's numbers, so bounded: positive and finite, at least 100 ms.
    let ms = |k: &str| {
        v.get(k)
            .and_then(|x| x.as_f64())
            .filter(|x| x.is_finite() && *x >= 100.0)
            .map(|x| x / 1000.0)
    };
    let (interval, timeout) = (ms("pingInterval"), ms("pingTimeout"));
    let mut out = vec![
        Event::Control("open"),
        Event::Negotiated {
            interval_s: interval,
            drop_after_s: interval.zip(timeout).map(|(i, t)| i + t),
            client_s: if eio == 3 { interval } else { None },
        },
    ];
    // v4 connects to the main namespace explicitly; v3 servers connect it on open.
    if eio >= 4 {
        out.push(Event::Reply(Out::Text("40".into())));
    }
    out
}

fn message(data: &str, sub: &Subscribe) -> Vec<Event> {
    let (kind, rest) = match data.chars().next() {
        Some(c) => (c, &data[c.len_utf8()..]),
        None => return vec![Event::Unknown],
    };
    // `/chat,` namespace prefix, then an ack id (digits), then the JSON.
    let rest = match rest.strip_prefix('/') {
        Some(r) => r.split_once(',').map_or("", |(_, j)| j),
        None => rest,
    };
    let json = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    match kind {
        '0' => vec![Event::Control("connected")],
        '1' => vec![Event::Closed(
            "Socket.IO disconnect packet from the server".into(),
        )],
        '2' => event(json, sub),
        '3' => vec![Event::Control("ack")],
        '4' => {
            let v: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
            let msg = v.get("message").and_then(|m| m.as_str()).unwrap_or(json);
            vec![Event::Closed(format!(
                "Socket.IO connect error: {}",
                reason(msg)
            ))]
        }
        '5' | '6' => vec![Event::Control("binary event")],
        _ => vec![Event::Unknown],
    }
}

fn event(json: &str, sub: &Subscribe) -> Vec<Event> {
    let v: serde_json::Value = match serde_json::from_str(json) {
        Ok(v) => v,
        Err(_) => return vec![Event::Unknown],
    };
    let Some(arr) = v.as_array() else {
        return vec![Event::Unknown];
    };
    let name = arr.first().and_then(|n| n.as_str()).unwrap_or("");
    if sub.event.as_deref().is_some_and(|e| e != name) {
        return vec![Event::Control("other event")];
    }
    let arg = arr.get(1).map(payload_of).unwrap_or_default();
    vec![Event::Payload(arg)]
}

/// `42["name",payload]`: the payload embedded as JSON when it is JSON, else a string.
pub fn event_text(name: &str, payload: &str) -> String {
    let arg = match serde_json::from_str::<serde_json::Value>(payload) {
        Ok(v) => v,
        Err(_) => serde_json::Value::String(payload.into()),
    };
    format!("42{}", serde_json::json!([name, arg]))
}
