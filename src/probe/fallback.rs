//! Socket.IO's long-polling transport through the path (issue 42): when the WebSocket
//! upgrade of a Socket.IO URL fails, browsers' Socket.IO clients fall back to Engine.IO's
//! HTTP long-polling (`transport=polling`). One GET of that transport tells whether the
//! fallback works through this path (the Engine.IO open packet came back) or not.
use super::client::{self, ClientOpts};
use super::target::Target;
use rtcheck_wire::http::response::{Framing, Reader};
use std::time::Duration;
use tokio::io::AsyncReadExt;

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

/// One polling handshake through the path, bounded by `o.timeout` in all.
pub async fn engineio_polling(t: &Target, o: &ClientOpts) -> Result<PollingOpen, String> {
    let p = polling_target(t);
    let run = async {
        let mut conn = client::connect(&p, o, &["http/1.1"]).await?;
        let req = client::request(&p, o, &[("Accept", "*/*".to_string())]);
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
            if reader.done() || body.len() >= BODY_CAP || parse_open(head.status, &body).open {
                break;
            }
            let mut buf = [0u8; 8192];
            let n = conn.io.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            chunk = buf[..n].to_vec();
        }
        Ok::<_, anyhow::Error>(parse_open(head.status, &body))
    };
    match tokio::time::timeout(o.timeout + Duration::from_millis(100), run).await {
        Ok(Ok(open)) => Ok(open),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(_) => Err(format!("no answer within {:?}", o.timeout)),
    }
}

/// The sentence the upgrade finding adds.
pub fn note(r: &Result<PollingOpen, String>) -> String {
    match r {
        Ok(p) if p.open => format!(
            "Socket.IO's long-polling transport answered through the path (Engine.IO open{}{}): its clients fall back to polling here, a request per message",
            if p.upgrades.is_empty() { String::new() } else { format!(", upgrades: {}", p.upgrades.join(",")) },
            p.ping_interval_s.map_or(String::new(), |i| format!(", pingInterval {i} s"))
        ),
        Ok(p) => format!(
            "Socket.IO's long-polling transport did not open either (HTTP {}): its clients cannot connect through this path",
            p.status
        ),
        Err(e) => format!("Socket.IO's long-polling transport failed too: {e}"),
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
        assert!(note(&Ok(v4)).contains("fall back to polling"));
    }
}
