//! STOMP 1.0-1.2 over WebSocket (subprotocols `v12.stomp`...). Frames: a command line,
//! `name:value` headers, a blank line, the body, NUL. A lone end-of-line is a heartbeat.
//! Heartbeats are negotiated in CONNECT/CONNECTED `heart-beat: cx,cy` / `sx,sy`: the
//! server sends every max(sx, cy) ms when both are non-zero, the client every max(cx, sy);
//! stomp.js offers 10000,10000.
use super::{reason, Event, Out};

/// What rtcheck offers: heart-beats both ways every 10 s, as stomp.js does.
const OFFER_MS: u64 = 10_000;

pub fn connect() -> Out {
    Out::Text(format!(
        "CONNECT\naccept-version:1.0,1.1,1.2\nhost:/\nheart-beat:{OFFER_MS},{OFFER_MS}\n\n\0"
    ))
}

pub fn send(dest: &str, payload: &str) -> Out {
    Out::Text(format!(
        "SEND\ndestination:{dest}\ncontent-type:application/json\n\n{payload}\0"
    ))
}

fn subscribe(dest: &str) -> Out {
    Out::Text(format!(
        "SUBSCRIBE\nid:sub-0\ndestination:{dest}\nack:auto\n\n\0"
    ))
}

/// `dest`: subscribed to after CONNECTED when given.
pub fn on_text(t: &str, dest: Option<&str>) -> Vec<Event> {
    let mut out = Vec::new();
    for frame in t.split('\0') {
        let f = frame.trim_start_matches(['\r', '\n']);
        if f.is_empty() {
            if !frame.is_empty() {
                out.push(Event::Heartbeat);
            }
            continue;
        }
        out.extend(one(f, dest));
    }
    out
}

fn one(f: &str, dest: Option<&str>) -> Vec<Event> {
    let (head, body) = f
        .split_once("\n\n")
        .or_else(|| f.split_once("\r\n\r\n"))
        .unwrap_or((f, ""));
    let mut lines = head.lines();
    let command = lines.next().unwrap_or("").trim();
    let header = |name: &str| {
        head.lines()
            .skip(1)
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    match command {
        "CONNECTED" => {
            let (sx, sy) = header("heart-beat")
                .and_then(|h| h.split_once(','))
                .map(|(a, b)| (a.trim().parse().unwrap_or(0), b.trim().parse().unwrap_or(0)))
                .unwrap_or((0u64, 0u64));
            let every = |mine: u64, theirs: u64| {
                (mine > 0 && theirs > 0).then(|| mine.max(theirs) as f64 / 1000.0)
            };
            let mut out = vec![
                Event::Control("connected"),
                Event::Negotiated {
                    interval_s: every(sx, OFFER_MS),
                    drop_after_s: None,
                    client_s: every(OFFER_MS, sy),
                },
            ];
            out.extend(dest.map(|d| Event::Reply(subscribe(d))));
            out
        }
        "MESSAGE" => vec![Event::Payload(body.as_bytes().to_vec())],
        "RECEIPT" => vec![Event::Control("receipt")],
        "ERROR" => vec![Event::Closed(format!(
            "STOMP ERROR: {}",
            reason(header("message").unwrap_or(body))
        ))],
        _ => vec![Event::Unknown],
    }
}
