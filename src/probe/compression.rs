//! `compression`: permessage-deflate negotiated or not (informational), and gzip on an
//! event stream (a compressor holds events until its buffer fills: evidence proxy-config).
use super::{finding, proxy, Kind, UrlObs};
use crate::findings::{Finding, Status};

pub const ID: &str = "compression";

pub fn check(u: &UrlObs) -> Option<Finding> {
    let (status, observed, expected) = match u.kind {
        Kind::WebSocket => {
            let ws = u.ws.as_ref().filter(|w| w.head.status == 101)?;
            let ext = ws.head.header("sec-websocket-extensions").unwrap_or("");
            let observed = if ext.contains("permessage-deflate") {
                format!("permessage-deflate negotiated ({ext}): CPU and memory per connection")
            } else {
                "permessage-deflate offered, not negotiated".to_string()
            };
            (Status::Pass, observed, "either: a deliberate choice")
        }
        Kind::Sse => {
            let sse = u.sse.as_ref().filter(|s| s.is_event_stream())?;
            match sse.head.header("content-encoding") {
                Some(e) if !e.eq_ignore_ascii_case("identity") => (
                    Status::Fail,
                    format!("event stream sent with Content-Encoding: {e}"),
                    "no Content-Encoding on text/event-stream",
                ),
                _ => (
                    Status::Pass,
                    "event stream not compressed (Accept-Encoding: gzip, deflate, br sent)".into(),
                    "no Content-Encoding on text/event-stream",
                ),
            }
        }
        Kind::Poll => return None,
    };
    Some(finding(
        ID,
        u,
        "Compression on the realtime stream",
        status,
        observed,
        expected,
        "a compressor on the path holds small events until its buffer fills, like a buffering proxy",
        &["proxy-config"],
        proxy::compression(u.proxy),
    ))
}
