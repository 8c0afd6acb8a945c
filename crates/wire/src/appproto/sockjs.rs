//! SockJS's WebSocket transport (`/prefix/<server>/<session>/websocket`): `o` open, `h`
//! heartbeat (sockjs-node: every 25 s), `a["m1","m2"]` messages as JSON strings, `c[code,
//! "reason"]` close. The client sends `["message"]`.
use super::{reason, Event, Out};

pub fn send(payload: &str) -> Out {
    Out::Text(serde_json::json!([payload]).to_string())
}

pub fn on_text(t: &str) -> Vec<Event> {
    let (kind, rest) = match t.chars().next() {
        Some(c) => (c, &t[c.len_utf8()..]),
        None => return vec![Event::Unknown],
    };
    match kind {
        'o' => vec![Event::Control("open")],
        'h' => vec![Event::Heartbeat],
        'a' => match serde_json::from_str::<Vec<String>>(rest) {
            Ok(msgs) => msgs
                .into_iter()
                .map(|m| Event::Payload(m.into_bytes()))
                .collect(),
            Err(_) => vec![Event::Unknown],
        },
        'm' => match serde_json::from_str::<String>(rest) {
            Ok(m) => vec![Event::Payload(m.into_bytes())],
            Err(_) => vec![Event::Unknown],
        },
        'c' => {
            let v: serde_json::Value = serde_json::from_str(rest).unwrap_or_default();
            let code = v.get(0).and_then(|c| c.as_u64()).unwrap_or(0);
            let why = v.get(1).and_then(|r| r.as_str()).unwrap_or("");
            vec![Event::Closed(format!(
                "SockJS close {code} {}",
                reason(why)
            ))]
        }
        _ => vec![Event::Unknown],
    }
}
