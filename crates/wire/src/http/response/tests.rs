use super::*;
use proptest::prelude::*;

fn framed(s: &str) -> Framed {
    parse_framed(s.as_bytes(), Limits::DEFAULT, false)
        .unwrap()
        .unwrap()
}

fn body(f: Framing, wire: &[u8]) -> (Result<usize, Error>, Body) {
    let mut b = Body::new(f);
    (b.feed(wire), b)
}

#[test]
fn content_length_head_and_body() {
    let h = framed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(h.status, 200);
    assert_eq!(h.framing, Framing::Length(5));
    assert!(!h.close);
    assert_eq!(h.len, 38);
    let (used, b) = body(h.framing, b"helloEXTRA");
    assert_eq!(used, Ok(5));
    assert!(b.done());
    assert_eq!(b.bytes, 5);
}

#[test]
fn head_fields_partial_and_garbage() {
    let raw = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-A:  b \r\n\r\nXX";
    let (h, n) = parse_head(raw, Limits::DEFAULT).unwrap().unwrap();
    assert_eq!((h.status, h.reason.as_str()), (101, "Switching Protocols"));
    assert_eq!(&raw[n..], b"XX");
    assert!(h.has_token("connection", "upgrade"));
    assert_eq!(h.header("x-a"), Some("b"));
    assert_eq!(h.framing(false), Ok(Framing::None), "101 has no HTTP body");
    assert_eq!(
        parse_framed(raw, Limits::DEFAULT, false),
        Err(Error::Upgrade)
    );
    assert_eq!(
        parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", Limits::DEFAULT),
        Ok(None)
    );
    let e = parse_head(b"SSH-2.0-OpenSSH_9.2\r\n\r\n", Limits::DEFAULT).unwrap_err();
    assert!(e.to_string().starts_with("not an HTTP response ("), "{e}");
    let e = parse_head(b"HTTP/1.1 xx\r\n\r\n", Limits::DEFAULT).unwrap_err();
    assert!(matches!(e, Error::NotHttp(_)), "{e}");
}

#[test]
fn limits_are_the_callers() {
    let big = format!(
        "HTTP/1.1 200 OK\r\nX: {}",
        "a".repeat(Limits::DEFAULT.max_head)
    );
    assert_eq!(
        parse_framed(big.as_bytes(), Limits::DEFAULT, false),
        Err(Error::HeadTooLarge(64 * 1024))
    );
    // A complete head over the limit is refused too, however it arrived.
    let head = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "a".repeat(100));
    assert_eq!(
        parse_head(head.as_bytes(), Limits::head(64)),
        Err(Error::HeadTooLarge(64))
    );
    let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..65 {
        many.extend_from_slice(format!("X-{i}: 1\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let small = Limits {
        max_head: 16 << 10,
        max_headers: 64,
    };
    assert_eq!(parse_head(&many, small), Err(Error::TooManyHeaders(64)));
    assert!(parse_head(&many, Limits::DEFAULT).unwrap().is_some());
    // More fields asked for than the parser holds: capped, not a panic.
    let huge = Limits {
        max_head: 1 << 20,
        max_headers: 10_000,
    };
    assert!(parse_head(&many, huge).unwrap().is_some());
}

#[test]
fn framing_rules() {
    let f = |s: &str| framed(s).framing;
    assert_eq!(
        f("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n"),
        Framing::None
    );
    assert_eq!(f("HTTP/1.1 304 Not Modified\r\n\r\n"), Framing::None);
    assert_eq!(f("HTTP/1.1 100 Continue\r\n\r\n"), Framing::None);
    assert_eq!(
        f("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n"),
        Framing::Chunked
    );
    assert_eq!(
        f("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
        Framing::Close
    );
    assert_eq!(f("HTTP/1.1 200 OK\r\n\r\n"), Framing::Close);
    let h = parse_framed(
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n",
        Limits::DEFAULT,
        true,
    );
    assert_eq!(h.unwrap().unwrap().framing, Framing::None, "HEAD");
    let pf = |b: &[u8]| parse_framed(b, Limits::DEFAULT, false);
    let bad = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n";
    assert_eq!(pf(bad), Err(Error::ConflictingLength));
    assert_eq!(
        pf(b"HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\n"),
        Err(Error::ConflictingLength)
    );
    let neg = b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n";
    assert_eq!(pf(neg), Err(Error::BadLength("-1".into())));
    for same in [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\n",
    ] {
        assert_eq!(pf(same).unwrap().unwrap().framing, Framing::Length(3));
    }
    assert!(pf(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n").is_err());
    // The full head decides the same way.
    let (h, _) = parse_head(bad, Limits::DEFAULT).unwrap().unwrap();
    assert_eq!(h.framing(false), Err(Error::ConflictingLength));
    let (h, _) = parse_head(
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n",
        Limits::DEFAULT,
    )
    .unwrap()
    .unwrap();
    assert_eq!(h.framing(false), Ok(Framing::Chunked));
}

#[test]
fn connection_reuse_rules() {
    assert!(framed("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").close);
    assert!(
        framed("HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n")
            .close
    );
    assert!(framed("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").close);
    assert!(
        !framed("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").close
    );
    assert!(framed("HTTP/1.1 200 OK\r\n\r\n").close, "close-delimited");
    assert!(!framed("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").close);
}

#[test]
fn chunked_body_in_pieces() {
    let wire = b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\nNEXT";
    // Fed one byte at a time, as a slow peer would send it.
    let mut b = Body::new(Framing::Chunked);
    let (mut pending, mut total, mut out) = (Vec::new(), 0, Vec::new());
    for &c in wire.iter() {
        if b.done() {
            break;
        }
        pending.push(c);
        let used = b.feed_into(&pending, &mut out).unwrap();
        pending.drain(..used);
        total += used;
    }
    assert!(b.done());
    assert_eq!(b.bytes, 11);
    assert_eq!(out, b"hello world");
    assert_eq!(total, wire.len() - 4, "stops before the next answer");
}

#[test]
fn broken_bodies_name_what_broke() {
    assert_eq!(
        body(Framing::Chunked, b"zz\r\n").0,
        Err(Error::BadChunkSize("zz".into()))
    );
    assert_eq!(body(Framing::Chunked, b"2\r\nabXY").0, Err(Error::ChunkEnd));
    let long_ext = format!("1;x={}", "a".repeat(2000));
    assert_eq!(
        body(Framing::Chunked, long_ext.as_bytes()).0,
        Err(Error::ChunkLineTooLong)
    );
    let mut b = Body::new(Framing::Length(10));
    assert_eq!(b.feed(b"abc"), Ok(3));
    let e = b.eof().unwrap_err();
    assert_eq!(e.to_string(), "truncated body: 3 of 10 bytes");
    for (wire, want) in [
        (&b"5\r\nab"[..], Error::TruncatedChunk),
        (b"2\r\nab", Error::TruncatedChunk),
        (b"2\r\nab\r\n", Error::TruncatedChunkSize),
        (b"ffffffffffffffff\r\nab", Error::TruncatedChunk),
        (b"0\r\nX: 1\r\n", Error::TruncatedTrailers),
    ] {
        let (r, mut b) = body(Framing::Chunked, wire);
        assert!(r.is_ok() && !b.done(), "{wire:?}");
        assert_eq!(b.eof(), Err(want), "{wire:?}");
    }
    let mut trailers = b"0\r\n".to_vec();
    trailers.extend(std::iter::repeat_n(b"X: 1\r\n", 3000).flatten());
    assert_eq!(
        body(Framing::Chunked, &trailers).0,
        Err(Error::TrailersTooLarge)
    );
    let mut c = Body::new(Framing::Close);
    assert_eq!(c.feed(b"abc"), Ok(3));
    assert_eq!(c.eof(), Ok(()));
    assert_eq!(c.bytes, 3);
}

#[test]
fn a_reader_keeps_partial_lines_and_ignores_what_follows() {
    let raw = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\nHTTP/1.1";
    for split in 0..raw.len() {
        let mut r = Reader::new(Framing::Chunked);
        let mut out = Vec::new();
        r.feed_into(&raw[..split], &mut out).unwrap();
        r.feed_into(&raw[split..], &mut out).unwrap();
        assert_eq!(out, b"hello world", "split {split}");
        assert!(r.done());
        assert_eq!(r.bytes(), 11);
    }
    let mut r = Reader::new(Framing::Close);
    let mut out = Vec::new();
    r.feed_into(b"abc", &mut out).unwrap();
    assert!(!r.done());
    assert_eq!(r.eof(), Ok(()));
    assert_eq!(out, b"abc");
    assert!(Reader::new(Framing::Chunked)
        .feed_into(b"zz\r\n", &mut Vec::new())
        .is_err());
}

/// `data` cut at `cuts` (positions taken modulo its length, any order).
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

/// A whole answer read through [`Answer`], fed in `parts`: (status, body) or the first
/// error.
fn read_answer(parts: &[Vec<u8>]) -> Result<(u16, Vec<u8>), Error> {
    let mut a = Answer::new(Limits::DEFAULT, false);
    for p in parts {
        if a.feed(p)? {
            break;
        }
    }
    if !a.complete() {
        a.eof()?;
    }
    Ok((a.head().unwrap().status, a.body().to_vec()))
}

#[test]
fn an_answer_is_read_whole_or_named_broken() {
    let ok =
        read_answer(&[b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\n\r\nnope".to_vec()]);
    assert_eq!(ok, Ok((404, b"nope".to_vec())));
    let ok = read_answer(&[b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}junk".to_vec()]);
    assert_eq!(ok, Ok((200, b"{}".to_vec())));
    let e = read_answer(&[b"HTTP/1.1 200 OK\r\nX: 1".to_vec()]);
    assert_eq!(e, Err(Error::NoHead));
    let e = read_answer(&[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}".to_vec()]);
    assert_eq!(e.unwrap_err().to_string(), "truncated body: 2 of 10 bytes");
    // A HEAD answer has no body, whatever its Content-Length says.
    let mut a = Answer::new(Limits::DEFAULT, true);
    assert_eq!(
        a.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"),
        Ok(true)
    );
    // 101 ends the HTTP answer: what follows is another protocol.
    let mut a = Answer::new(Limits::DEFAULT, false);
    assert_eq!(
        a.feed(b"HTTP/1.1 101 Switching Protocols\r\n\r\n\x81\x00"),
        Ok(true)
    );
    assert_eq!(a.head().unwrap().status, 101);
}

fn chunked_wire(body: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut enc = Vec::new();
    let (mut rest, mut i) = (body, 0);
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].min(rest.len());
        enc.extend_from_slice(format!("{n:x};x=y\r\n").as_bytes());
        enc.extend_from_slice(&rest[..n]);
        enc.extend_from_slice(b"\r\n");
        rest = &rest[n..];
        i += 1;
    }
    enc.extend_from_slice(b"0\r\nT: 1\r\n\r\n");
    enc
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever a peer sends, split anywhere: an answer or an error, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..4096),
                                   cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let _ = parse_head(&data, Limits::DEFAULT);
        let _ = parse_framed(&data, Limits::head(512), true);
        let _ = read_answer(&splits(&data, &cuts));
        let _ = read_answer(std::slice::from_ref(&data));
        for f in [Framing::Chunked, Framing::Length(100), Framing::Close] {
            let mut r = Reader::new(f);
            for p in splits(&data, &cuts) {
                if r.feed_into(&p, &mut Vec::new()).is_err() { break; }
            }
        }
    }

    #[test]
    fn http_like_heads_never_panic(status in 0u16..1000, name in "[A-Za-z-]{0,20}",
                                   value in "[ -~]{0,40}",
                                   tail in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut raw = format!("HTTP/1.1 {status} X\r\n{name}: {value}\r\n\r\n").into_bytes();
        raw.extend_from_slice(&tail);
        let _ = parse_head(&raw, Limits::DEFAULT).map(|h| h.map(|(h, _)| h.framing(false)));
        let _ = parse_framed(&raw, Limits::DEFAULT, false);
    }

    /// A well-formed answer (an interim 103 first; chunked with extensions and trailers,
    /// Content-Length, or until close) reads the same however TCP split it.
    #[test]
    fn answers_read_alike_at_any_split(
        body in proptest::collection::vec(any::<u8>(), 0..2048),
        sizes in proptest::collection::vec(1usize..300, 1..20),
        how in 0u8..3,
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut raw = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\n".to_vec();
        match how {
            0 => {
                raw.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                raw.extend_from_slice(&chunked_wire(&body, &sizes));
            }
            1 => {
                raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                raw.extend_from_slice(&body);
            }
            _ => {
                raw.extend_from_slice(b"Connection: close\r\n\r\n");
                raw.extend_from_slice(&body);
            }
        }
        let whole = read_answer(std::slice::from_ref(&raw)).unwrap();
        prop_assert_eq!(&whole, &(200, body.clone()));
        prop_assert_eq!(read_answer(&splits(&raw, &cuts)).unwrap(), whole);
    }

    /// Any body, chunked any way and delivered in any pieces, is counted exactly and the
    /// reader stops where the next answer begins.
    #[test]
    fn chunked_any_split(
        chunks in proptest::collection::vec(proptest::collection::vec(0u8..=255, 1..300), 0..8),
        cuts in proptest::collection::vec(1usize..64, 1..40),
    ) {
        let mut wire = Vec::new();
        for c in &chunks {
            wire.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
            wire.extend_from_slice(c);
            wire.extend_from_slice(b"\r\n");
        }
        wire.extend_from_slice(b"0\r\n\r\n");
        let end = wire.len();
        wire.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        let mut b = Body::new(Framing::Chunked);
        let (mut pending, mut at, mut used_all) = (Vec::new(), 0, 0);
        for cut in cuts.iter().cycle() {
            if b.done() || at >= wire.len() {
                break;
            }
            let to = (at + cut).min(wire.len());
            pending.extend_from_slice(&wire[at..to]);
            at = to;
            let used = b.feed(&pending).unwrap();
            pending.drain(..used);
            used_all += used;
        }
        prop_assert!(b.done());
        prop_assert_eq!(used_all, end);
        prop_assert_eq!(b.bytes, chunks.iter().map(|c| c.len() as u64).sum::<u64>());
    }

    /// A Content-Length body fed in pieces is counted exactly, whatever follows it.
    #[test]
    fn length_any_split(n in 0u64..5000, cut in 1usize..700) {
        let wire = vec![b'x'; n as usize + 100];
        let mut b = Body::new(Framing::Length(n));
        let mut used_all = 0;
        for piece in wire.chunks(cut) {
            used_all += b.feed(piece).unwrap();
            if b.done() { break; }
        }
        prop_assert!(b.done());
        prop_assert_eq!(used_all as u64, n);
        prop_assert_eq!(b.bytes, n);
    }
}
