//! Phoenix channels over `/socket/websocket?vsn=2.0.0`. V2 messages are arrays
//! `[join_ref, ref, topic, event, payload]`; V1 (no `vsn` or 1.0.0) objects with the same
//! fields. The client joins a topic (`phx_join`) and sends `heartbeat` on topic `phoenix`
//! every 30 s (phoenix.js); the server answers with `phx_reply` and drops a socket that
//! sent nothing for 60 s (the WebSocket transport's timeout). The server never pings.
use super::{payload_of, Event, Out, Subscribe};

fn msg(
    v2: bool,
    join_ref: Option<u64>,
    r: u64,
    topic: &str,
    event: &str,
    p: serde_json::Value,
) -> Out {
    let r = r.to_string();
    let j = join_ref.map(|j| j.to_string());
    Out::Text(if v2 {
        serde_json::json!([j, r, topic, event, p]).to_string()
    } else {
        serde_json::json!({"topic": topic, "event": event, "payload": p, "ref": r}).to_string()
    })
}

pub fn join(topic: &str, r: u64, v2: bool) -> Out {
    msg(v2, Some(r), r, topic, "phx_join", serde_json::json!({}))
}

pub fn heartbeat(r: u64, v2: bool) -> Out {
    msg(v2, None, r, "phoenix", "heartbeat", serde_json::json!({}))
}

pub fn push(topic: &str, event: &str, payload: &str, r: u64, v2: bool) -> Out {
    let p = serde_json::from_str(payload).unwrap_or_else(|_| serde_json::json!({"body": payload}));
    msg(v2, Some(1), r, topic, event, p)
}

pub fn on_text(t: &str, sub: &Subscribe) -> Vec<Event> {
    let v: serde_json::Value = match serde_json::from_str(t) {
        Ok(v) => v,
        Err(_) => return vec![Event::Unknown],
    };
    let (topic, event, payload) = match &v {
        serde_json::Value::Array(a) if a.len() == 5 => (&a[2], &a[3], &a[4]),
        serde_json::Value::Object(o) => (
            o.get("topic").unwrap_or(&serde_json::Value::Null),
            o.get("event").unwrap_or(&serde_json::Value::Null),
            o.get("payload").unwrap_or(&serde_json::Value::Null),
        ),
        _ => return vec![Event::Unknown],
    };
    let (topic, event) = (topic.as_str().unwrap_or(""), event.as_str().unwrap_or(""));
    let shown = super::reason(topic);
    let status = payload.get("status").and_then(|s| s.as_str());
    vec![match (topic, event) {
        ("phoenix", "phx_reply") => Event::Heartbeat,
        (_, "phx_reply") if status == Some("ok") => Event::Control("joined"),
        (_, "phx_reply") => Event::Closed(format!(
            "Phoenix join of {shown} refused: {}",
            payload
                .get("response")
                .map_or(String::new(), |r| super::reason(&r.to_string()))
        )),
        (_, "phx_error") => Event::Closed(format!("Phoenix channel {shown} crashed (phx_error)")),
        (_, "phx_close") => Event::Closed(format!("Phoenix channel {shown} closed (phx_close)")),
        (_, e) if sub.event.as_deref().is_some_and(|w| w != e) => Event::Control("other event"),
        _ => Event::Payload(payload_of(payload)),
    }]
}
