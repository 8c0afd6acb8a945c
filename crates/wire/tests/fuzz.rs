//! Fuzz targets for every parser of what a peer sends (issue 41): arbitrary bytes, split
//! anywhere, never panic, and what a parser holds between reads stays within its bound
//! whatever the input (a hostile server must not grow a client's memory). proptest, a
//! few seconds each, run with `cargo test -p rtcheck-wire`.
use proptest::prelude::*;
use rtcheck_wire::epoch::{self, Epoch, Position};
use rtcheck_wire::http::response::{self, Framing, Limits, Reader, MAX_CHUNK_LINE, MAX_TRAILERS};
use rtcheck_wire::{http, sse, ws};

fn cfg(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// `data` cut at the given offsets (taken modulo its length), in order.
fn splits(data: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    at.sort_unstable();
    let mut parts = Vec::new();
    let mut prev = 0;
    for c in at.into_iter().chain([data.len()]) {
        parts.push(data[prev..c].to_vec());
        prev = c;
    }
    parts
}

/// Bytes that look like what the parser reads often enough to go deep: fragments of
/// its own syntax mixed with noise.
fn shaped(alphabet: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        proptest::sample::select(alphabet).prop_map(|p| p.to_vec()),
        proptest::collection::vec(any::<u8>(), 0..16),
    ];
    proptest::collection::vec(piece, 0..200).prop_map(|v| v.concat())
}

const SSE_BITS: &[&[u8]] = &[
    b"data: ",
    b"id: ",
    b"event: ",
    b"retry: ",
    b": ",
    b"\n",
    b"\r\n",
    b"\r",
    b"\n\n",
    b"x",
    b"7@e1",
    b"{\"seq\":1}",
];
const HTTP_BITS: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"Content-Length: 5\r\n",
    b"\r\n",
    b"0\r\n",
    b"ffff\r\n",
    b"5;ext=1\r\n",
    b"hello",
    b"X-T: v\r\n",
];

proptest! {
    #![proptest_config(cfg(256))]

    /// The SSE parser: never a panic, and between reads it holds at most one line and
    /// one event of `max` bytes each, lossy or strict.
    #[test]
    fn sse_parser_is_bounded(data in shaped(SSE_BITS),
                             cuts in proptest::collection::vec(any::<usize>(), 0..8),
                             lossy in any::<bool>()) {
        const MAX: usize = 64;
        let mut p = sse::Parser::new(MAX);
        if lossy {
            p = p.lossy();
        }
        for part in splits(&data, &cuts) {
            let mut items = Vec::new();
            if p.feed_items(&part, &mut items).is_err() {
                break;
            }
            prop_assert!(p.held_bytes() <= 2 * MAX + 1, "held {}", p.held_bytes());
        }
    }

    /// An event stream inside a chunked or length-framed body: never a panic.
    #[test]
    fn sse_stream_never_panics(data in shaped(SSE_BITS),
                               cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        for f in [Framing::Chunked, Framing::Length(300), Framing::Close] {
            let mut s = sse::Stream::new(f, sse::Parser::new(128));
            for part in splits(&data, &cuts) {
                if s.feed(&part, &mut Vec::new()).is_err() {
                    break;
                }
            }
        }
    }

    /// Response heads and body framing: never a panic; a body reader holds at most a
    /// chunk-size line or the trailers between reads.
    #[test]
    fn http_response_framing_is_bounded(data in shaped(HTTP_BITS),
                                        cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let _ = response::parse_head(&data, Limits::DEFAULT);
        let _ = response::parse_framed(&data, Limits::head(512), false);
        let _ = http::parse_head(&data);
        for f in [Framing::Chunked, Framing::Length(1000), Framing::Close] {
            let mut r = Reader::new(f);
            for part in splits(&data, &cuts) {
                let mut out = Vec::new();
                if r.feed_into(&part, &mut out).is_err() {
                    break;
                }
                prop_assert!(r.held_bytes() <= MAX_CHUNK_LINE.max(MAX_TRAILERS) + part.len());
            }
        }
    }

    /// The WebSocket decoder, either end: never a panic; the caller's unconsumed bytes
    /// are at most one frame header plus `max`, and a fragmented message at most `max`.
    #[test]
    fn ws_decoder_is_bounded(data in proptest::collection::vec(any::<u8>(), 0..4096),
                             cuts in proptest::collection::vec(any::<usize>(), 0..8),
                             client in any::<bool>(), ext in any::<bool>()) {
        const MAX: usize = 1024;
        let mut d = if client { ws::Decoder::client(ext) } else { ws::Decoder::default() };
        let mut buf = Vec::new();
        for part in splits(&data, &cuts) {
            buf.extend_from_slice(&part);
            match d.decode_messages(&buf, MAX, &mut Vec::new()) {
                Ok(used) => {
                    buf.drain(..used);
                }
                Err(_) => break,
            }
            prop_assert!(buf.len() <= MAX + 14, "caller holds {}", buf.len());
            prop_assert!(d.held_bytes() <= MAX, "decoder holds {}", d.held_bytes());
        }
    }

    /// Resume positions, epochs, markers, gap ranges and event ids: any text, never a
    /// panic; a marker the server writes reads back as itself.
    #[test]
    fn epoch_markers_never_panic(text in "\\PC{0,80}", seq in any::<u64>(), e in any::<u64>(),
                                 latest in any::<u64>()) {
        let _ = Position::parse(&text);
        let _ = Position::with_epoch(&text, Some(&text));
        let _ = Epoch::parse(&text);
        let _ = epoch::parse_marker(&text);
        let _ = epoch::parse_gap(&text);
        let _ = sse::seq_id(&text);
        let _ = epoch::parse_marker(&format!("{{\"epoch\"{text}"));
        let hello = epoch::ws_hello(Epoch(e), latest);
        let mut msgs = Vec::new();
        ws::Decoder::client(false).decode_messages(&hello, 1 << 16, &mut msgs).unwrap();
        let ws::Inbound::Text(t) = &msgs[0].inbound else { panic!("{msgs:?}") };
        let m = epoch::parse_marker(std::str::from_utf8(t).unwrap());
        prop_assert_eq!(m, Some(epoch::Marker::Hello { epoch: Epoch(e), latest }));
        let p = Position::parse(&format!("{seq}"));
        prop_assert_eq!(p.seq, seq);
    }
}

/// A ping flood (issue 41 item 6): ten thousand pings decode to ten thousand pings and
/// the decoder holds nothing after them.
#[test]
fn a_ping_flood_decodes_without_holding_anything() {
    let ping = ws::frame(ws::OP_PING, &[b'p'; 125]);
    let flood = ping.repeat(10_000);
    let mut d = ws::Decoder::client(false);
    let mut msgs = Vec::new();
    let used = d.decode_messages(&flood, 1024, &mut msgs).unwrap();
    assert_eq!(used, flood.len());
    assert_eq!(msgs.len(), 10_000);
    assert_eq!(d.held_bytes(), 0);
}

/// `data:` lines for ever without the blank line that ends an event: an error at the
/// bound, not memory without end (issue 41).
#[test]
fn endless_data_lines_stop_at_the_event_bound() {
    let mut p = sse::Parser::new(1024);
    let line = b"data: 0123456789012345678901234567890123456789\n";
    let mut err = None;
    for _ in 0..1000 {
        if let Err(e) = p.feed(line, &mut Vec::new()) {
            err = Some(e);
            break;
        }
        assert!(p.held_bytes() <= 1024 + line.len());
    }
    assert_eq!(err, Some(sse::ParseError::EventTooLong(1024)));
}
