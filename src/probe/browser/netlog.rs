//! The page's network log over a second DevTools session of its own: raw JSON events
//! (`Network.requestWillBeSent`, `…ExtraInfo`, `responseReceived`). The ExtraInfo event
//! carries the headers as sent, Last-Event-ID included (the renderer's view in
//! requestWillBeSent and the Fetch domain lack it); the CDP types of the driving crate
//! are of an older protocol revision and fail on this event from a current Chromium,
//! so it is read here as plain JSON.
use super::obs::NetRec;
use anyhow::anyhow;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

pub type NetLog = Arc<Mutex<Vec<NetRec>>>;

/// Attach to page `target` of the browser at `devtools` (its browser WebSocket URL) and
/// log its requests into `net` until the page closes. Returns once Network is enabled.
pub async fn attach(
    devtools: &str,
    target: &str,
    net: NetLog,
    limit: Duration,
) -> anyhow::Result<()> {
    let base = devtools
        .split("/devtools/")
        .next()
        .ok_or_else(|| anyhow!("chromium: unexpected DevTools URL"))?;
    let url = format!("{base}/devtools/page/{target}");
    let (mut ws, _) = tokio::time::timeout(limit, tokio_tungstenite::connect_async(url))
        .await
        .map_err(|_| anyhow!("chromium: page DevTools session: no answer within {limit:?}"))?
        .map_err(|e| anyhow!("chromium: page DevTools session: {e}"))?;
    ws.send(Message::text(
        r#"{"id":1,"method":"Network.enable","params":{}}"#,
    ))
    .await
    .map_err(|e| anyhow!("chromium: Network.enable: {e}"))?;
    let enabled = async {
        while let Some(Ok(m)) = ws.next().await {
            if let Message::Text(t) = m {
                let v: Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                if v["id"] == 1 {
                    return Ok(());
                }
            }
        }
        Err(anyhow!("chromium: the page's DevTools session closed"))
    };
    tokio::time::timeout(limit, enabled)
        .await
        .map_err(|_| anyhow!("chromium: Network.enable: no answer within {limit:?}"))??;
    tokio::spawn(async move {
        while let Some(Ok(m)) = ws.next().await {
            if let Message::Text(t) = m {
                record(&net, t.as_str());
            }
        }
    });
    Ok(())
}

/// The record of request `id`, added in arrival order when new (ExtraInfo may come
/// before or after requestWillBeSent).
fn entry<'a>(log: &'a mut Vec<NetRec>, id: &str) -> &'a mut NetRec {
    match log.iter().position(|r| r.request_id == id) {
        Some(i) => &mut log[i],
        None => {
            log.push(NetRec {
                request_id: id.to_string(),
                ..NetRec::default()
            });
            log.last_mut().expect("just pushed")
        }
    }
}

fn header(headers: &Value, name: &str) -> Option<String> {
    let h = headers.as_object()?;
    let (_, v) = h.iter().find(|(k, _)| k.eq_ignore_ascii_case(name))?;
    v.as_str().map(str::to_string)
}

/// One DevTools message into the log (other messages are ignored).
pub fn record(net: &NetLog, text: &str) {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let p = &v["params"];
    let Some(id) = p["requestId"].as_str() else {
        return;
    };
    let mut log = net.lock().unwrap_or_else(|e| e.into_inner());
    match v["method"].as_str() {
        Some("Network.requestWillBeSent") => {
            let r = entry(&mut log, id);
            r.url = p["request"]["url"].as_str().unwrap_or_default().to_string();
        }
        Some("Network.requestWillBeSentExtraInfo") => {
            if let Some(last) = header(&p["headers"], "last-event-id") {
                entry(&mut log, id).last_event_id = Some(last);
            }
        }
        Some("Network.webSocketCreated") => {
            let r = entry(&mut log, id);
            r.url = p["url"].as_str().unwrap_or_default().to_string();
            r.websocket = true;
        }
        Some("Network.webSocketHandshakeResponseReceived") => {
            let r = entry(&mut log, id);
            r.websocket = true;
            r.status = p["response"]["status"].as_i64();
        }
        Some("Network.responseReceived") => {
            let resp = &p["response"];
            let r = entry(&mut log, id);
            r.protocol = resp["protocol"].as_str().map(str::to_string);
            r.connection_id = resp["connectionId"].as_f64().map(|c| c as u64);
            r.status = resp["status"].as_i64();
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_info_before_or_after_the_request() {
        let net = NetLog::default();
        record(
            &net,
            r#"{"method":"Network.requestWillBeSentExtraInfo","params":{"requestId":"2","headers":{"last-event-id":"41"}}}"#,
        );
        record(
            &net,
            r#"{"method":"Network.requestWillBeSent","params":{"requestId":"1","request":{"url":"http://h/sse"}}}"#,
        );
        record(
            &net,
            r#"{"method":"Network.requestWillBeSent","params":{"requestId":"2","request":{"url":"http://h/sse"}}}"#,
        );
        record(
            &net,
            r#"{"method":"Network.responseReceived","params":{"requestId":"2","response":{"protocol":"h2","connectionId":7,"status":200}}}"#,
        );
        record(&net, "not json");
        record(&net, r#"{"id":3,"result":{}}"#);
        let log = net.lock().unwrap();
        assert_eq!(log.len(), 2);
        assert_eq!(log[0].last_event_id.as_deref(), Some("41"));
        assert_eq!(log[0].url, "http://h/sse");
        assert_eq!(log[0].protocol.as_deref(), Some("h2"));
        assert_eq!((log[0].connection_id, log[0].status), (Some(7), Some(200)));
        assert_eq!(log[1].last_event_id, None);
    }

    #[test]
    fn a_websocket_handshake_keeps_its_status() {
        let net = NetLog::default();
        record(
            &net,
            r#"{"method":"Network.webSocketCreated","params":{"requestId":"9","url":"wss://h/ws"}}"#,
        );
        record(
            &net,
            r#"{"method":"Network.webSocketHandshakeResponseReceived","params":{"requestId":"9","response":{"status":200,"headers":{}}}}"#,
        );
        let log = net.lock().unwrap();
        assert_eq!(log[0].url, "wss://h/ws");
        assert!(log[0].websocket);
        assert_eq!(log[0].status, Some(200));
    }
}
