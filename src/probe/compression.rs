//! `compression`: permessage-deflate negotiated or not (informational), and gzip/deflate/br
//! on an event stream, on every connection the probe made (the first one and the
//! reconnect). The stream is decoded, so events are timed as they come out: compressed
//! but flushed per event costs CPU and is a warning with its measured cadence; compressed
//! and held (a compressor waiting for its buffer to fill: evidence proxy-config) fails.
use super::session::{timing, SseObs, StreamObs, DELAY_FAIL_MS};
use super::{finding, fmt_s, proxy, Kind, Meta, UrlObs};
use crate::findings::{Finding, Status};

pub const ID: &str = super::CheckId::Compression.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::Compression,
    title: "Compression on the realtime stream",
    evidence: &["proxy-config"],
    run: check,
};

/// One connection's encoding and what came out of the decoder. A replay (the reconnect)
/// comes as a burst of old events by nature: there only nothing decoded counts as held.
fn connection(label: &str, s: &StreamObs, replay: bool) -> Option<(Status, String)> {
    let e = s.encoding.as_deref()?;
    let t = timing(s);
    let held_by_delay = t.max_delay_ms.is_some_and(|d| d > DELAY_FAIL_MS);
    let held = s.events.is_empty() || (!replay && (t.bursts > 0 || held_by_delay));
    let text = if s.events.is_empty() {
        format!(
            "{label}: Content-Encoding {e}, no event decoded in {} ({} B arrived): the compressor holds them",
            fmt_s(s.ended_ms),
            s.wire_bytes
        )
    } else if held {
        format!(
            "{label}: Content-Encoding {e}, events released in bursts ({}): the compressor holds them",
            s.messages_text()
        )
    } else {
        let what = if replay {
            "the replay decoded"
        } else {
            "flushed per event"
        };
        format!(
            "{label}: Content-Encoding {e}, {what} ({})",
            s.messages_text()
        )
    };
    Some((if held { Status::Fail } else { Status::Warn }, text))
}

/// Every event-stream connection of the URL, labelled.
fn connections(u: &UrlObs) -> Vec<(&'static str, &StreamObs)> {
    let first = u.sse.as_ref().and_then(|s: &SseObs| s.stream.as_ref());
    let again = u
        .resume
        .as_ref()
        .and_then(|r| r.as_ref().ok())
        .and_then(|r| r.obs.stream.as_ref());
    [("first connection", first), ("reconnect", again)]
        .into_iter()
        .filter_map(|(l, s)| s.map(|s| (l, s)))
        .collect()
}

/// A verdict, its line, and the numbers behind it.
type Judged = (Status, String, Vec<(&'static str, f64)>);

fn sse(u: &UrlObs) -> Option<Judged> {
    let conns = connections(u);
    if conns.is_empty() {
        return None;
    }
    let judged: Vec<(Status, String)> = conns
        .iter()
        .enumerate()
        .filter_map(|(i, (l, s))| connection(l, s, i > 0))
        .collect();
    let mut numbers = vec![("compressed_connections", judged.len() as f64)];
    if let Some(c) = conns[0].1.cadence_ms() {
        numbers.push(("cadence_s", (c / 10.0).round() / 100.0));
    }
    if judged.is_empty() {
        let text = format!(
            "event stream not compressed on {} connection(s) (Accept-Encoding: gzip, deflate, br sent)",
            conns.len()
        );
        return Some((Status::Pass, text, numbers));
    }
    let status = judged.iter().map(|j| j.0).max().unwrap_or(Status::Warn);
    let text = judged
        .into_iter()
        .map(|j| j.1)
        .collect::<Vec<_>>()
        .join("; ");
    Some((status, text, numbers))
}

pub fn check(u: &UrlObs) -> Option<Finding> {
    let (status, observed, expected, numbers) = match u.kind {
        Kind::WebSocket => {
            let ws = u.ws.as_ref().filter(|w| w.head.status == 101)?;
            let ext = ws.head.header("sec-websocket-extensions").unwrap_or("");
            let spoken = ws.stream.as_ref().and_then(|s| s.app.as_ref());
            let observed = if ext.contains("permessage-deflate") {
                format!("permessage-deflate negotiated ({ext}): CPU and memory per connection")
            } else if let Some(a) = spoken {
                // The library's messages must be read, so probe does not offer it then.
                format!(
                    "permessage-deflate not offered: {} spoken, its messages read uncompressed",
                    a.protocol.name()
                )
            } else {
                "permessage-deflate offered, not negotiated".to_string()
            };
            (
                Status::Pass,
                observed,
                "either: a deliberate choice",
                vec![],
            )
        }
        Kind::Sse => {
            let (st, text, numbers) = sse(u)?;
            (
                st,
                text,
                "no Content-Encoding on text/event-stream",
                numbers,
            )
        }
        Kind::Poll => return None,
    };
    let mut f = finding(
        &META,
        u,
        status,
        observed,
        expected,
        "a compressor on the path holds small events until its buffer fills, like a buffering proxy; flushed per event it still costs CPU per connection",
        proxy::compression(u.proxy),
    );
    for (k, v) in numbers {
        f.numbers.insert(k.into(), v);
    }
    Some(f)
}
