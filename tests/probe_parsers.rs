//! The probe's response parsers take anything a peer sends: arbitrary bytes in arbitrary
//! splits never panic, and well-formed input round-trips whatever the split.
use proptest::prelude::*;
use rtcheck::probe::wire::{parse_head, take_frame, Chunked, SseItem, SseScanner};

fn splits(data: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut pts: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    pts.sort_unstable();
    let mut out = Vec::new();
    let mut prev = 0;
    for p in pts.into_iter().chain([data.len()]) {
        out.push(data[prev..p].to_vec());
        prev = p;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..4096),
                                   cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let _ = parse_head(&data);
        let mut c = Chunked::default();
        let mut s = SseScanner::default();
        let mut frames = Vec::new();
        for part in splits(&data, &cuts) {
            let _ = c.feed(&part, &mut Vec::new());
            let _ = s.feed(&part, &mut Vec::new());
            frames.extend_from_slice(&part);
            while let Ok(Some(_)) = take_frame(&mut frames) {}
        }
    }

    #[test]
    fn http_like_heads_never_panic(status in 0u16..1000, name in "[A-Za-z-]{0,20}",
                                   value in "[ -~]{0,40}", tail in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut raw = format!("HTTP/1.1 {status} X\r\n{name}: {value}\r\n\r\n").into_bytes();
        raw.extend_from_slice(&tail);
        let _ = parse_head(&raw);
    }

    #[test]
    fn chunked_round_trips(body in proptest::collection::vec(any::<u8>(), 0..2048),
                           sizes in proptest::collection::vec(1usize..300, 1..20),
                           cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let mut enc = Vec::new();
        let mut rest = &body[..];
        let mut i = 0;
        while !rest.is_empty() {
            let n = sizes[i % sizes.len()].min(rest.len());
            enc.extend_from_slice(format!("{n:x}\r\n").as_bytes());
            enc.extend_from_slice(&rest[..n]);
            enc.extend_from_slice(b"\r\n");
            rest = &rest[n..];
            i += 1;
        }
        enc.extend_from_slice(b"0\r\n\r\n");
        let mut c = Chunked::default();
        let mut out = Vec::new();
        for part in splits(&enc, &cuts) {
            c.feed(&part, &mut out).unwrap();
        }
        prop_assert!(c.done);
        prop_assert_eq!(out, body);
    }

    #[test]
    fn sse_events_survive_any_split(seqs in proptest::collection::vec(any::<u64>(), 1..20),
                                    crlf in any::<bool>(),
                                    cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let nl = if crlf { "\r\n" } else { "\n" };
        let mut raw = String::new();
        for s in &seqs {
            raw.push_str(&format!(": ping{nl}id: {s}{nl}data: {{\"seq\":{s}}}{nl}{nl}"));
        }
        let mut sc = SseScanner::default();
        let mut items = Vec::new();
        for part in splits(raw.as_bytes(), &cuts) {
            sc.feed(&part, &mut items).unwrap();
        }
        let ids: Vec<u64> = items.iter().filter_map(|i| match i {
            SseItem::Event { id, .. } => id.as_ref().and_then(|v| v.parse().ok()),
            SseItem::Comment => None,
        }).collect();
        prop_assert_eq!(ids, seqs.clone());
        prop_assert_eq!(items.iter().filter(|i| **i == SseItem::Comment).count(), seqs.len());
    }

}

proptest! {
    // Large frames (16- and 64-bit lengths) cost more per case.
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn server_frames_round_trip(payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..70_000), 1..3),
                                cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let mut raw = Vec::new();
        for p in &payloads {
            raw.extend_from_slice(&rtcheck_wire::ws::frame(rtcheck_wire::ws::OP_BINARY, p));
        }
        let mut buf = Vec::new();
        let mut got = Vec::new();
        for part in splits(&raw, &cuts) {
            buf.extend_from_slice(&part);
            while let Some(f) = take_frame(&mut buf).unwrap() {
                got.push(f.payload);
            }
        }
        prop_assert_eq!(got, payloads);
    }
}
