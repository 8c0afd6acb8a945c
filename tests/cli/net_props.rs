//! Property tests for the protocol code that reads what peers send: the WebSocket frame
//! decoder, the HTTP request-head parser, the SSE parser (bench clients) and the payload
//! decoders. Arbitrary bytes never panic; valid inputs round-trip however TCP splits them.
//! Case counts are bounded so CI stays fast.
use proptest::prelude::*;
use rtcheck_wire::ws::{self, client_frame, Decoder, Inbound};
use rtcheck_wire::{http, payload, sse};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Decode `wire` fed in pieces cut at `cuts` (positions, any order).
fn decode_in_pieces(
    wire: &[u8],
    cuts: &[usize],
    max: usize,
) -> Result<Vec<Inbound>, ws::FrameError> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    cuts.push(wire.len());
    cuts.sort_unstable();
    let (mut dec, mut out, mut buf, mut fed) = (Decoder::default(), Vec::new(), Vec::new(), 0);
    for c in cuts {
        buf.extend_from_slice(&wire[fed..c]);
        fed = c;
        let n = dec.decode(&buf, max, &mut out)?;
        buf.drain(..n);
    }
    Ok(out)
}

#[derive(Debug, Clone)]
enum Msg {
    Text(String),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
}

fn msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        ".{0,300}".prop_map(Msg::Text),
        proptest::collection::vec(any::<u8>(), 0..600).prop_map(Msg::Binary),
        proptest::collection::vec(any::<u8>(), 0..=125).prop_map(Msg::Ping),
    ]
}

/// A message as client frames: data split into `parts` fragments, each with its mask.
fn frames_of(m: &Msg, parts: usize, mask: [u8; 4]) -> Vec<u8> {
    let (op, data) = match m {
        Msg::Ping(p) => return client_frame(ws::OP_PING, true, p, mask),
        Msg::Text(t) => (ws::OP_TEXT, t.as_bytes()),
        Msg::Binary(b) => (ws::OP_BINARY, &b[..]),
    };
    let size = data.len().div_ceil(parts.max(1)).max(1);
    let chunks: Vec<&[u8]> = if data.is_empty() {
        vec![&[]]
    } else {
        data.chunks(size).collect()
    };
    let mut v = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        let opcode = if i == 0 { op } else { ws::OP_CONT };
        v.extend(client_frame(opcode, i + 1 == chunks.len(), c, mask));
    }
    v
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn frame_decoder_never_panics(
        wire in proptest::collection::vec(any::<u8>(), 0..2048),
        cuts in proptest::collection::vec(any::<usize>(), 0..4),
        max in 0usize..4096,
    ) {
        let whole = decode_in_pieces(&wire, &[], max);
        let split = decode_in_pieces(&wire, &cuts, max);
        // However the bytes arrive, the verdict is the same.
        prop_assert_eq!(whole.is_ok(), split.is_ok());
        if let (Ok(a), Ok(b)) = (whole, split) {
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn valid_frames_round_trip(
        msgs in proptest::collection::vec((msg(), 1usize..4, any::<[u8; 4]>()), 0..8),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let mut wire = Vec::new();
        for (m, parts, mask) in &msgs {
            wire.extend(frames_of(m, *parts, *mask));
        }
        wire.extend(client_frame(ws::OP_CLOSE, true, &1000u16.to_be_bytes(), [9; 4]));
        let got = decode_in_pieces(&wire, &cuts, 4096).unwrap();
        let mut want: Vec<Inbound> = msgs
            .iter()
            .map(|(m, _, _)| match m {
                Msg::Text(t) => Inbound::Text(t.as_bytes().to_vec()),
                Msg::Binary(b) => Inbound::Binary(b.clone()),
                Msg::Ping(p) => Inbound::Ping(p.clone()),
            })
            .collect();
        want.push(Inbound::Close(Some(1000)));
        prop_assert_eq!(got, want);
    }

    #[test]
    fn http_head_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..10_000)) {
        if let Ok(Some((req, n))) = http::parse_head(&bytes) {
            prop_assert!(n <= bytes.len());
            let _ = req.content_length();
            let _ = req.query_param("since");
            let _ = req.keep_alive();
            let _ = req.host_ok();
        }
    }

    #[test]
    fn http_heads_round_trip(
        path in "/[a-z0-9/_.-]{0,40}",
        value in "\\PC{0,20}",
        headers in proptest::collection::vec(("x-[a-z]{1,10}", "[!-~]([ -~]{0,30}[!-~])?"), 0..10),
        absolute in any::<bool>(),
    ) {
        let target = if absolute { format!("http://h.example:80{path}") } else { path.clone() };
        let mut raw = format!("GET {target}?k={} HTTP/1.1\r\nHost: h\r\n", encode(&value));
        for (k, v) in &headers {
            raw.push_str(&format!("{k}: {v}\r\n"));
        }
        raw.push_str("\r\n");
        let (req, n) = http::parse_head(raw.as_bytes()).unwrap().unwrap();
        prop_assert_eq!(n, raw.len());
        prop_assert_eq!(&req.path, &path);
        prop_assert_eq!(req.query_param("k"), Some(value));
        prop_assert!(req.host_ok());
        for (k, v) in &headers {
            prop_assert!(req.headers.iter().any(|(n, hv)| n == k && hv == v));
        }
    }

    #[test]
    fn percent_decode_never_panics(s in "\\PC{0,64}") {
        let _ = http::percent_decode(&s);
    }

    #[test]
    fn sse_parser_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..4096),
        cuts in proptest::collection::vec(any::<usize>(), 0..4),
    ) {
        let mut p = sse::Parser::new(512);
        let mut out = Vec::new();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.push(bytes.len());
        cuts.sort_unstable();
        let mut fed = 0;
        for c in cuts {
            if p.feed(&bytes[fed..c], &mut out).is_err() {
                break;
            }
            fed = c;
        }
    }

    #[test]
    fn sse_events_round_trip(
        events in proptest::collection::vec((any::<u64>(), "[^\r\n]{0,100}"), 0..10),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let wire: String = events.iter().map(|(id, d)| sse::encode_event(*id, d)).collect();
        let bytes = wire.as_bytes();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.push(bytes.len());
        cuts.sort_unstable();
        let (mut p, mut out, mut fed) = (sse::Parser::new(4096), Vec::new(), 0);
        for c in cuts {
            p.feed(&bytes[fed..c], &mut out).unwrap();
            fed = c;
        }
        prop_assert_eq!(out.len(), events.len());
        for (e, (id, d)) in out.iter().zip(&events) {
            prop_assert_eq!(e.id.clone(), Some(id.to_string()));
            // A data value's one leading space is the field separator's (SSE rule).
            prop_assert_eq!(&e.data, d);
        }
    }

    #[test]
    fn payload_decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), s in "\\PC{0,80}") {
        let _ = payload::decode(&bytes);
        let _ = payload::decode_text(&s);
        let _ = payload::decode_text(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn payloads_round_trip(size in 0usize..2048, seq in any::<u64>(), ts in any::<u64>()) {
        prop_assert_eq!(payload::decode(&payload::encode(size, seq, ts)), Some((seq, ts)));
        prop_assert_eq!(payload::decode_text(&payload::encode_text(size, seq, ts)), Some((seq, ts)));
        let raw = payload::encode_raw_frame(size, seq, ts);
        prop_assert_eq!(payload::decode(&raw[payload::RAW_PREFIX..]), Some((seq, ts)));
    }
}

/// Percent-encode everything but unreserved characters.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
