//! SignalR's JSON hub protocol: records end with 0x1e. The client opens with
//! `{"protocol":"json","version":1}`, the server answers `{}` (or `{"error":...}`).
//! Types: 1 invocation, 2 stream item, 3 completion, 6 ping, 7 close. Both ends send
//! pings: the server every KeepAliveInterval (15 s), the client likewise; each drops a
//! peer silent for 30 s (ClientTimeoutInterval, ServerTimeout).
use super::{payload_of, reason, Event, Out, Subscribe};

const RS: char = '\u{1e}';

pub fn handshake() -> Out {
    Out::Text(format!("{{\"protocol\":\"json\",\"version\":1}}{RS}"))
}

pub fn ping() -> Out {
    Out::Text(format!("{{\"type\":6}}{RS}"))
}

pub fn invocation(target: &str, payload: &str) -> Out {
    let arg = serde_json::from_str::<serde_json::Value>(payload)
        .unwrap_or_else(|_| serde_json::Value::String(payload.into()));
    let v = serde_json::json!({"type": 1, "target": target, "arguments": [arg]});
    Out::Text(format!("{v}{RS}"))
}

pub fn on_text(t: &str, sub: &Subscribe) -> Vec<Event> {
    t.split(RS)
        .filter(|r| !r.trim().is_empty())
        .map(|r| record(r, sub))
        .collect()
}

fn record(r: &str, sub: &Subscribe) -> Event {
    let v: serde_json::Value = match serde_json::from_str(r) {
        Ok(v) => v,
        Err(_) => return Event::Unknown,
    };
    let text = |k: &str| v.get(k).and_then(|x| x.as_str());
    match v.get("type").and_then(|x| x.as_u64()) {
        None => match text("error") {
            Some(e) => Event::Closed(format!("SignalR handshake refused: {}", reason(e))),
            None => Event::Control("handshake"),
        },
        Some(1) => {
            let target = text("target").unwrap_or("");
            if sub
                .event
                .as_deref()
                .is_some_and(|e| !e.eq_ignore_ascii_case(target))
            {
                return Event::Control("other invocation");
            }
            let arg = v.get("arguments").and_then(|a| a.get(0));
            Event::Payload(arg.map(payload_of).unwrap_or_default())
        }
        Some(2) => Event::Payload(v.get("item").map(payload_of).unwrap_or_default()),
        Some(3) => Event::Control("completion"),
        Some(6) => Event::Heartbeat,
        Some(7) => Event::Closed(match text("error") {
            Some(e) => format!("SignalR close: {}", reason(e)),
            None => "SignalR close from the server".into(),
        }),
        Some(_) => Event::Unknown,
    }
}
