//! graphql-ws (subprotocol `graphql-transport-ws`): `connection_init` within 3 s or the
//! server closes with 4408; `connection_ack`; `subscribe` (id + query), then `next`
//! messages, `error`, `complete`; `ping`/`pong` from either end. The reference server
//! keeps the socket alive with WebSocket pings every 12 s (`useServer`'s keepAlive).
//! The older `subscriptions-transport-ws` messages (`ka`, `data`) are read too.
use super::{reason, Event, Out};

pub fn init() -> Out {
    Out::Text(r#"{"type":"connection_init","payload":{}}"#.into())
}

fn subscribe(query: &str) -> Out {
    let v = serde_json::json!({"id": "1", "type": "subscribe", "payload": {"query": query}});
    Out::Text(v.to_string())
}

/// `query`: the subscription to start after the ack (`--channel`), if any.
pub fn on_text(t: &str, query: Option<&str>) -> Vec<Event> {
    let v: serde_json::Value = match serde_json::from_str(t) {
        Ok(v) => v,
        Err(_) => return vec![Event::Unknown],
    };
    match v.get("type").and_then(|x| x.as_str()) {
        Some("connection_ack") => {
            let mut out = vec![Event::Control("connection_ack")];
            out.extend(query.map(|q| Event::Reply(subscribe(q))));
            out
        }
        Some("ping") => vec![
            Event::Heartbeat,
            Event::Reply(Out::Text(r#"{"type":"pong"}"#.into())),
        ],
        Some("pong") | Some("ka") => vec![Event::Heartbeat],
        Some("next") | Some("data") => {
            let p = v.get("payload").map(|p| p.to_string()).unwrap_or_default();
            vec![Event::Payload(p.into_bytes())]
        }
        Some("error") | Some("connection_error") => vec![Event::Closed(format!(
            "graphql-ws error: {}",
            reason(&v.get("payload").map(|p| p.to_string()).unwrap_or_default())
        ))],
        Some("complete") => vec![Event::Control("complete")],
        _ => vec![Event::Unknown],
    }
}

/// What the protocol's close codes mean.
pub fn close_reason(code: u16) -> Option<&'static str> {
    Some(match code {
        4400 => "bad request (graphql-ws 4400)",
        4401 => "unauthorized (graphql-ws 4401)",
        4403 => "forbidden (graphql-ws 4403)",
        4406 => "subprotocol not acceptable (graphql-ws 4406)",
        4408 => "connection_init not sent within the server's wait (graphql-ws 4408)",
        4409 => "subscriber for that id already exists (graphql-ws 4409)",
        4429 => "too many initialisation requests (graphql-ws 4429)",
        4500 => "internal server error (graphql-ws 4500)",
        _ => return None,
    })
}
