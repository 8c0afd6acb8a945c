//! MQTT 3.1.1 over WebSocket (subprotocol `mqtt`, binary frames). CONNECT carries the
//! client's keep-alive; the client must send a control packet (PINGREQ when idle) within
//! it, and the broker drops a client silent for 1.5 times the keep-alive (spec 3.1.2.10).
//! mqtt.js's default keep-alive is 60 s.
use super::{Event, Out};

pub const KEEPALIVE_S: u16 = 60;

fn remaining_length(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let mut b = (n % 128) as u8;
        n /= 128;
        if n > 0 {
            b |= 0x80;
        }
        out.push(b);
        if n == 0 {
            break;
        }
    }
}

fn packet(first: u8, body: &[u8]) -> Out {
    let mut out = vec![first];
    remaining_length(body.len(), &mut out);
    out.extend_from_slice(body);
    Out::Binary(out)
}

fn string(s: &[u8], out: &mut Vec<u8>) {
    let n = s.len().min(u16::MAX as usize);
    out.extend_from_slice(&(n as u16).to_be_bytes());
    out.extend_from_slice(&s[..n]);
}

pub fn connect(keepalive: u16) -> Out {
    let mut b = Vec::new();
    string(b"MQTT", &mut b);
    b.push(4); // protocol level 3.1.1
    b.push(0x02); // clean session
    b.extend_from_slice(&keepalive.to_be_bytes());
    string(b"rtcheck", &mut b);
    packet(0x10, &b)
}

fn subscribe(topic: &str) -> Out {
    let mut b = vec![0, 1]; // packet id 1
    string(topic.as_bytes(), &mut b);
    b.push(0); // QoS 0
    packet(0x82, &b)
}

pub fn publish(topic: &str, payload: &[u8]) -> Out {
    let mut b = Vec::new();
    string(topic.as_bytes(), &mut b);
    b.extend_from_slice(payload);
    packet(0x30, &b)
}

pub fn pingreq() -> Out {
    Out::Binary(vec![0xC0, 0x00])
}

/// Each packet in one WebSocket message (a broker may batch several).
/// `topic`: subscribed to after CONNACK when given.
pub fn on_binary(mut b: &[u8], topic: Option<&str>) -> Vec<Event> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let Some((len, used)) = read_length(&b[1..]) else {
            out.push(Event::Unknown);
            break;
        };
        let start = 1 + used;
        let Some(body) = b.get(start..start + len) else {
            out.push(Event::Unknown);
            break;
        };
        out.extend(one(b[0], body, topic));
        b = &b[start + len..];
    }
    out
}

fn read_length(b: &[u8]) -> Option<(usize, usize)> {
    let mut n = 0usize;
    for (i, &x) in b.iter().take(4).enumerate() {
        n |= ((x & 0x7f) as usize) << (7 * i);
        if x & 0x80 == 0 {
            return Some((n, i + 1));
        }
    }
    None
}

fn one(first: u8, body: &[u8], topic: Option<&str>) -> Vec<Event> {
    match first >> 4 {
        2 => match body.get(1) {
            Some(0) => {
                let mut out = vec![Event::Control("connack")];
                out.extend(topic.map(|t| Event::Reply(subscribe(t))));
                out
            }
            Some(&rc) => vec![Event::Closed(format!(
                "MQTT CONNACK refused: return code {rc} ({})",
                match rc {
                    1 => "unacceptable protocol version",
                    2 => "identifier rejected",
                    3 => "server unavailable",
                    4 => "bad user name or password",
                    5 => "not authorized",
                    _ => "unknown",
                }
            ))],
            None => vec![Event::Unknown],
        },
        3 => {
            let qos = (first >> 1) & 3;
            let tlen = body
                .get(..2)
                .map_or(0, |l| u16::from_be_bytes([l[0], l[1]]) as usize);
            let mut at = 2 + tlen;
            let mut out = Vec::new();
            if qos > 0 {
                if let Some(id) = body.get(at..at + 2) {
                    out.push(Event::Reply(packet(0x40, id)));
                }
                at += 2;
            }
            out.insert(0, Event::Payload(body.get(at..).unwrap_or(&[]).to_vec()));
            out
        }
        9 if body.get(2) == Some(&0x80) => {
            vec![Event::Closed("MQTT SUBACK refused the subscription".into())]
        }
        9 => vec![Event::Control("subscribed")],
        13 => vec![Event::Heartbeat],
        14 => vec![Event::Closed("MQTT DISCONNECT from the broker".into())],
        _ => vec![Event::Unknown],
    }
}
