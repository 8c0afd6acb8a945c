//! Rails ActionCable (`/cable`, subprotocol `actioncable-v1-json`). The server opens with
//! `{"type":"welcome"}` and sends `{"type":"ping","message":<unix time>}` every 3 s; the
//! browser client calls a connection stale after 6 s without one and reconnects. The
//! client subscribes with a command whose identifier is a JSON string naming the channel;
//! data arrives as `{"identifier":...,"message":...}`; the server may say
//! `{"type":"disconnect","reason":...,"reconnect":...}`.
use super::{payload_of, reason, Event, Out};

/// The identifier for `channel`: given whole when it is JSON (`{"channel":"Chat","room":1}`).
fn identifier(channel: &str) -> String {
    if channel.trim_start().starts_with('{') {
        channel.to_string()
    } else {
        serde_json::json!({ "channel": channel }).to_string()
    }
}

pub fn subscribe(channel: &str) -> Out {
    let v = serde_json::json!({"command": "subscribe", "identifier": identifier(channel)});
    Out::Text(v.to_string())
}

pub fn message(channel: &str, payload: &str) -> Out {
    let v = serde_json::json!({
        "command": "message",
        "identifier": identifier(channel),
        "data": payload,
    });
    Out::Text(v.to_string())
}

/// `channel`: subscribed to after the welcome when given.
pub fn on_text(t: &str, channel: Option<&str>) -> Vec<Event> {
    let v: serde_json::Value = match serde_json::from_str(t) {
        Ok(v) => v,
        Err(_) => return vec![Event::Unknown],
    };
    let text = |k: &str| v.get(k).and_then(|x| x.as_str());
    match text("type") {
        Some("welcome") => {
            let mut out = vec![Event::Control("welcome")];
            out.extend(channel.map(|c| Event::Reply(subscribe(c))));
            out
        }
        Some("ping") => vec![Event::Heartbeat],
        Some("confirm_subscription") => vec![Event::Control("subscribed")],
        Some("reject_subscription") => vec![Event::Closed(format!(
            "ActionCable rejected the subscription to {}",
            reason(channel.unwrap_or("?"))
        ))],
        Some("disconnect") => vec![Event::Closed(format!(
            "ActionCable disconnect: {} (reconnect: {})",
            reason(text("reason").unwrap_or("no reason")),
            v.get("reconnect")
                .and_then(|r| r.as_bool())
                .unwrap_or(false)
        ))],
        _ => match v.get("message") {
            Some(m) => vec![Event::Payload(payload_of(m))],
            None => vec![Event::Unknown],
        },
    }
}
