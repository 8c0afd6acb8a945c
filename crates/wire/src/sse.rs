//! Server-Sent Events wire format: event encoding (server) and an incremental parser
//! (clients: bench load generator, verify delivery, probe, tests).
//!
//! Our events are `id: <seq>@<epoch>\ndata: <JSON {"seq":..,"ts":..,"pad":".."}>\n\n`
//! (see [`crate::epoch`]); decode the data with [`crate::payload::decode_text`].

/// One SSE event with a plain numeric id.
pub fn encode_event(seq: u64, data: &str) -> String {
    format!("id: {seq}\ndata: {data}\n\n")
}

/// One SSE event as written by the server: its id is `SEQ@EPOCH`.
pub fn encode_event_in(epoch: crate::epoch::Epoch, seq: u64, data: &str) -> String {
    format!("id: {seq}@{epoch}\ndata: {data}\n\n")
}

/// A parsed event: the last `id:` seen (SSE semantics: it persists) and the joined data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

/// What a stream carries, for a client that also watches its comments (servers send
/// `:` lines as heartbeats).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Event(Event),
    Comment,
}

/// Incremental SSE parser: feed bytes as they arrive, take complete events.
/// Handles `\n`, `\r\n` and `\r` line ends, comments (`:`), multi-line data, `retry:`, and
/// lines split across reads. A line longer than `max_line` is an error (hostile peer), so
/// is a line that is not UTF-8 unless the parser is [`Parser::lossy`].
#[derive(Debug)]
pub struct Parser {
    buf: Vec<u8>,
    last_id: Option<String>,
    event: Option<String>,
    data: String,
    has_data: bool,
    retry: Option<u64>,
    /// Lines that were `data` or a valid `retry` field, counted.
    fields: u64,
    max_line: usize,
    skip_lf: bool,
    lossy: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("SSE line longer than {0} bytes")]
    LineTooLong(usize),
    /// `data:` lines without the blank line that ends an event: the event is bounded like
    /// a line (a server sending `data:` for ever must not grow a client's memory).
    #[error("SSE event longer than {0} bytes (data: lines without a blank line)")]
    EventTooLong(usize),
    #[error("SSE stream is not UTF-8")]
    NotUtf8,
}

impl Parser {
    pub fn new(max_line: usize) -> Self {
        Parser {
            buf: Vec::new(),
            last_id: None,
            event: None,
            data: String::new(),
            has_data: false,
            retry: None,
            fields: 0,
            max_line,
            skip_lf: false,
            lossy: false,
        }
    }

    /// Decode bytes that are not UTF-8 as U+FFFD, as a browser's EventSource does (a
    /// probe reports what a browser would see), instead of failing.
    pub fn lossy(mut self) -> Self {
        self.lossy = true;
        self
    }

    /// The last event id received (what a reconnecting client sends as Last-Event-ID).
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Bytes held between feeds: a partial line and an event's data so far (each at
    /// most `max_line`).
    pub fn held_bytes(&self) -> usize {
        self.buf.len() + self.data.len()
    }

    /// How many lines were `data` or a valid `retry` field: a body with none is not an
    /// event stream (garbage, or ids and event names alone), one with some but no event
    /// yet is a quiet one (`retry: 3000` at connect, then nothing).
    pub fn fields(&self) -> u64 {
        self.fields
    }

    /// The last `retry:` the server sent (its reconnection time, ms).
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry
    }

    /// Feed bytes; complete events are appended to `out` (comments are skipped).
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), ParseError> {
        self.feed_with(bytes, &mut |it| {
            if let Item::Event(e) = it {
                out.push(e)
            }
        })
    }

    /// Feed bytes; complete events and comments are appended to `out` in stream order.
    pub fn feed_items(&mut self, bytes: &[u8], out: &mut Vec<Item>) -> Result<(), ParseError> {
        self.feed_with(bytes, &mut |it| out.push(it))
    }

    fn feed_with(
        &mut self,
        mut bytes: &[u8],
        emit: &mut impl FnMut(Item),
    ) -> Result<(), ParseError> {
        if self.skip_lf && !bytes.is_empty() {
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
            self.skip_lf = false;
        }
        while let Some(pos) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            let line_end = bytes[pos];
            let line: Vec<u8> = if self.buf.is_empty() {
                bytes[..pos].to_vec()
            } else {
                let mut l = std::mem::take(&mut self.buf);
                l.extend_from_slice(&bytes[..pos]);
                l
            };
            if line.len() > self.max_line {
                return Err(ParseError::LineTooLong(self.max_line));
            }
            bytes = &bytes[pos + 1..];
            if line_end == b'\r' {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    None => self.skip_lf = true,
                    _ => {}
                }
            }
            let line = match String::from_utf8(line) {
                Ok(l) => l,
                Err(e) if self.lossy => String::from_utf8_lossy(e.as_bytes()).into_owned(),
                Err(_) => return Err(ParseError::NotUtf8),
            };
            self.line(&line, emit);
            if self.data.len() > self.max_line {
                return Err(ParseError::EventTooLong(self.max_line));
            }
        }
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > self.max_line {
            return Err(ParseError::LineTooLong(self.max_line));
        }
        Ok(())
    }

    fn line(&mut self, line: &str, emit: &mut impl FnMut(Item)) {
        if line.is_empty() {
            if self.has_data {
                emit(Item::Event(Event {
                    id: self.last_id.clone(),
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data),
                }));
            }
            self.has_data = false;
            self.event = None;
            self.data.clear();
            return;
        }
        if line.starts_with(':') {
            emit(Item::Comment);
            return;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => {
                // Not counted either: ids alone dispatch nothing.
                self.last_id = Some(value.to_string());
                return;
            }
            "event" => {
                // Not counted: an event name without data dispatches nothing.
                self.event = Some(value.to_string());
                return;
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok().or(self.retry);
            }
            _ => return,
        }
        self.fields = self.fields.saturating_add(1);
    }
}

/// Why an event stream read off an HTTP body stopped.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StreamError {
    #[error(transparent)]
    Framing(#[from] crate::http::response::Error),
    #[error(transparent)]
    Parse(#[from] ParseError),
}

/// An event stream inside an HTTP/1.1 response body: the transfer framing (chunked, a
/// length, until close) comes off, then the [`Parser`] reads what is left. For clients
/// that read the body as it is (no Content-Encoding).
#[derive(Debug)]
pub struct Stream {
    body: crate::http::response::Reader,
    /// Until close: the body is the bytes as they come, parsed without a copy.
    plain: bool,
    parser: Parser,
    scratch: Vec<u8>,
}

impl Stream {
    pub fn new(framing: crate::http::response::Framing, parser: Parser) -> Stream {
        Stream {
            body: crate::http::response::Reader::new(framing),
            plain: framing == crate::http::response::Framing::Close,
            parser,
            scratch: Vec::new(),
        }
    }

    /// Feed bytes read after the response head; complete events are appended to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), StreamError> {
        if self.plain {
            return Ok(self.parser.feed(bytes, out)?);
        }
        self.body.feed_into(bytes, &mut self.scratch)?;
        let r = self.parser.feed(&self.scratch, out);
        self.scratch.clear();
        Ok(r?)
    }

    /// The body ended (its last chunk or its length): no event follows.
    pub fn ended(&self) -> bool {
        !self.plain && self.body.done()
    }

    /// The last event id received.
    pub fn last_id(&self) -> Option<&str> {
        self.parser.last_id()
    }

    /// The last `retry:` the server sent (ms): EventSource's reconnection time.
    pub fn retry_ms(&self) -> Option<u64> {
        self.parser.retry_ms()
    }
}

/// An event id read as a position: leading decimal digits are the seq, an optional
/// `@EPOCH` suffix names the server's run (rtcheck serve writes `SEQ@EPOCH`, see
/// [`crate::epoch`]). None: no digits, or something else after them (an opaque id such
/// as a UUID cannot be ordered).
pub fn seq_id(id: &str) -> Option<(u64, Option<&str>)> {
    let id = id.trim();
    let digits = id.bytes().take_while(u8::is_ascii_digit).count();
    let seq = id[..digits].parse().ok()?;
    match &id[digits..] {
        "" => Some((seq, None)),
        rest => rest.strip_prefix('@').map(|e| (seq, Some(e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload;

    #[test]
    fn parses_our_events_split_anywhere() {
        let mut wire = String::new();
        for seq in 1..=3 {
            wire.push_str(&encode_event(seq, &payload::encode_text(64, seq, seq * 10)));
        }
        wire.push_str(": keepalive\n\n");
        let bytes = wire.as_bytes();
        for split in 0..bytes.len() {
            let mut p = Parser::new(4096);
            let mut out = Vec::new();
            p.feed(&bytes[..split], &mut out).unwrap();
            p.feed(&bytes[split..], &mut out).unwrap();
            let got: Vec<_> = out
                .iter()
                .map(|e| payload::decode_text(&e.data).unwrap())
                .collect();
            assert_eq!(got, vec![(1, 10), (2, 20), (3, 30)], "split at {split}");
            assert_eq!(out[2].id.as_deref(), Some("3"));
            assert_eq!(p.last_id(), Some("3"));
        }
    }

    #[test]
    fn crlf_multiline_and_event_name() {
        let mut p = Parser::new(100);
        let mut out = Vec::new();
        p.feed(b"event: gap\r\ndata: a\r\ndata: b\r", &mut out)
            .unwrap();
        p.feed(b"\n\r\n", &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data, "a\nb");
        assert_eq!(out[0].event.as_deref(), Some("gap"));
        assert_eq!(out[0].id, None);
    }

    #[test]
    fn hostile_input_is_an_error_not_a_panic() {
        let mut p = Parser::new(16);
        let mut out = Vec::new();
        assert_eq!(
            p.feed(&[b'a'; 17], &mut out),
            Err(ParseError::LineTooLong(16))
        );
        let mut p = Parser::new(16);
        assert_eq!(p.feed(b"data: \xff\n", &mut out), Err(ParseError::NotUtf8));
    }

    #[test]
    fn items_keep_comments_in_order() {
        let mut p = Parser::new(100);
        let mut out = Vec::new();
        p.feed_items(b": ping\r\n\r\nid: 7\ndata: {\"seq\":7}\n\n:x\n", &mut out)
            .unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], Item::Comment);
        assert!(matches!(&out[1], Item::Event(Event { id: Some(i), .. }) if i == "7"));
        assert_eq!(out[2], Item::Comment);
    }

    #[test]
    fn retry_and_lossy_text() {
        let mut p = Parser::new(100).lossy();
        let mut out = Vec::new();
        p.feed(b"retry: 3000\nretry: x\ndata: a\xffb\n\n", &mut out)
            .unwrap();
        assert_eq!(p.retry_ms(), Some(3000));
        assert_eq!(out[0].data, "a\u{fffd}b");
        let mut p = Parser::new(100);
        p.feed(b"retry: 1\n", &mut out).unwrap();
        assert_eq!(p.retry_ms(), Some(1));
    }

    #[test]
    fn ids_are_seq_and_epoch() {
        assert_eq!(seq_id("42"), Some((42, None)));
        assert_eq!(seq_id("42@7f3a"), Some((42, Some("7f3a"))));
        assert_eq!(seq_id(" 9@"), Some((9, Some(""))));
        assert_eq!(seq_id("abc"), None);
        assert_eq!(seq_id("12-x"), None);
        assert_eq!(seq_id("99999999999999999999999"), None);
        let id = format!("5@{}", crate::epoch::Epoch(0xabc));
        assert_eq!(seq_id(&id), Some((5, Some("0000000000000abc"))));
    }

    /// `data` cut at `cuts` (positions taken modulo its length, any order).
    fn splits(data: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut pts: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
        pts.sort_unstable();
        let (mut out, mut prev) = (Vec::new(), 0);
        for p in pts.into_iter().chain([data.len()]) {
            out.push(data[prev..p].to_vec());
            prev = p;
        }
        out
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..4096),
                                       cuts in proptest::collection::vec(any::<usize>(), 0..8),
                                       lossy in any::<bool>()) {
            let mut p = Parser::new(256);
            if lossy {
                p = p.lossy();
            }
            for part in splits(&data, &cuts) {
                if p.feed_items(&part, &mut Vec::new()).is_err() {
                    break;
                }
            }
            let _ = seq_id(&String::from_utf8_lossy(&data));
        }

        /// Events and comments come out the same, in order, wherever the bytes are split
        /// and whichever line ends the server uses.
        #[test]
        fn items_survive_any_split(seqs in proptest::collection::vec(any::<u64>(), 1..20),
                                   nl in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
                                   cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
            let mut raw = String::new();
            for s in &seqs {
                raw.push_str(&format!(": ping{nl}id: {s}@e{nl}data: {{\"seq\":{s}}}{nl}{nl}"));
            }
            let parse = |parts: Vec<Vec<u8>>| {
                let mut p = Parser::new(1024);
                let mut items = Vec::new();
                for part in parts {
                    p.feed_items(&part, &mut items).unwrap();
                }
                items
            };
            let whole = parse(vec![raw.clone().into_bytes()]);
            let items = parse(splits(raw.as_bytes(), &cuts));
            prop_assert_eq!(&items, &whole);
            let ids: Vec<u64> = items.iter().filter_map(|i| match i {
                Item::Event(e) => e.id.as_deref().and_then(seq_id).map(|(s, _)| s),
                Item::Comment => None,
            }).collect();
            prop_assert_eq!(ids, seqs.clone());
            prop_assert_eq!(items.iter().filter(|i| **i == Item::Comment).count(), seqs.len());
        }
    }

    #[test]
    fn a_stream_takes_off_the_transfer_framing() {
        use crate::http::response::Framing;
        let body = encode_event(1, "a") + &encode_event(2, "b");
        // Chunks cut through the events, as a proxy may cut them.
        let (x, y) = body.split_at(7);
        let chunked = format!("{:x}\r\n{x}\r\n{:x}\r\n{y}\r\n0\r\n\r\n", x.len(), y.len());
        for (framing, wire) in [
            (Framing::Chunked, chunked.as_str()),
            (Framing::Close, body.as_str()),
            (Framing::Length(body.len() as u64), body.as_str()),
        ] {
            for split in 0..wire.len() {
                let mut st = Stream::new(framing, Parser::new(100));
                let mut out = Vec::new();
                st.feed(&wire.as_bytes()[..split], &mut out).unwrap();
                st.feed(&wire.as_bytes()[split..], &mut out).unwrap();
                let data: Vec<_> = out.iter().map(|e| e.data.as_str()).collect();
                assert_eq!(data, ["a", "b"], "{framing:?} split {split}");
                assert_eq!(st.last_id(), Some("2"));
                assert_eq!(st.ended(), framing != Framing::Close);
            }
        }
        let mut st = Stream::new(Framing::Chunked, Parser::new(100));
        let e = st.feed(b"zz\r\n", &mut Vec::new()).unwrap_err();
        assert!(matches!(e, StreamError::Framing(_)), "{e}");
    }
}
