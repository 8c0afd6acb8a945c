//! Pure: a foreign server's message format, written once for the publisher and the
//! receivers. `--message` templates are rendered with `{seq}`, `{ts}` (the scheduled
//! publish time, ns since the epoch), `{pad}` (filler up to `--size`) and `{marker}`;
//! a received frame is read back to (seq, scheduled ns) by JSON path (`--seq-path`,
//! `--ts-path`), by the latency marker anywhere in the frame (after tcpkali's
//! `--latency-marker`: a fixed string the receiver searches for, so any text protocol
//! works, whatever the server wraps around it), or as rtcheck's own payload. Decoding a
//! frame never panics and never allocates more than the frame's JSON.

/// What `{marker}` expands to: `MARKER_OPEN` seq `:` ts `MARKER_CLOSE`.
pub const MARKER_OPEN: &str = "~rtck:";
pub const MARKER_CLOSE: char = '~';

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Lit(String),
    Seq,
    Ts,
    Pad,
    Marker,
}

/// A parsed `--message` (or `--subscribe`) template. Only the four exact placeholders
/// are special: a JSON template's own braces stay literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

/// rtcheck's own text payload as a template (`net::payload::decode_text` reads it).
pub const DEFAULT_MESSAGE: &str = r#"{"seq":{seq},"ts":{ts},"pad":"{pad}"}"#;

impl Template {
    pub fn parse(s: &str) -> Template {
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let mut rest = s;
        while !rest.is_empty() {
            let found = [
                ("{seq}", Piece::Seq),
                ("{ts}", Piece::Ts),
                ("{pad}", Piece::Pad),
                ("{marker}", Piece::Marker),
            ]
            .into_iter()
            .find(|(tok, _)| rest.starts_with(tok));
            if let Some((tok, p)) = found {
                if !lit.is_empty() {
                    pieces.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                pieces.push(p);
                rest = &rest[tok.len()..];
            } else {
                let c = rest.chars().next().unwrap_or_default();
                lit.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
        if !lit.is_empty() {
            pieces.push(Piece::Lit(lit));
        }
        Template { pieces }
    }

    pub fn has_seq_and_ts(&self) -> bool {
        self.pieces.contains(&Piece::Marker)
            || (self.pieces.contains(&Piece::Seq) && self.pieces.contains(&Piece::Ts))
    }

    pub fn has_ts(&self) -> bool {
        self.pieces.contains(&Piece::Ts) || self.has_marker()
    }

    pub fn has_marker(&self) -> bool {
        self.pieces.contains(&Piece::Marker)
    }

    /// The message for `seq` scheduled at `ts_ns`, `{pad}` filled with `x` so the whole
    /// message is `size` bytes when the rest is shorter (else no padding).
    pub fn render(&self, seq: u64, ts_ns: u64, size: usize) -> String {
        let unpadded = self.render_pad(seq, ts_ns, 0);
        let pads = self.pieces.iter().filter(|p| **p == Piece::Pad).count();
        if pads == 0 || unpadded.len() >= size {
            return unpadded;
        }
        // Spread over several {pad}s; the first takes the remainder.
        let total = size - unpadded.len();
        let mut out = String::with_capacity(size);
        let mut first = true;
        for p in &self.pieces {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Seq => out.push_str(&seq.to_string()),
                Piece::Ts => out.push_str(&ts_ns.to_string()),
                Piece::Marker => out.push_str(&marker(seq, ts_ns)),
                Piece::Pad => {
                    let n = total / pads + if first { total % pads } else { 0 };
                    first = false;
                    out.extend(std::iter::repeat_n('x', n));
                }
            }
        }
        out
    }

    fn render_pad(&self, seq: u64, ts_ns: u64, pad: usize) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Seq => out.push_str(&seq.to_string()),
                Piece::Ts => out.push_str(&ts_ns.to_string()),
                Piece::Marker => out.push_str(&marker(seq, ts_ns)),
                Piece::Pad => out.extend(std::iter::repeat_n('x', pad)),
            }
        }
        out
    }

    /// Length without padding at the widest seq and ts (20 digits each): a `--size`
    /// below it cannot be honoured.
    pub fn min_len(&self) -> usize {
        self.render_pad(u64::MAX, u64::MAX, 0).len()
    }
}

pub fn marker(seq: u64, ts_ns: u64) -> String {
    format!("{MARKER_OPEN}{seq}:{ts_ns}{MARKER_CLOSE}")
}

/// How receivers find (seq, scheduled ns) in a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoder {
    /// rtcheck's payload (binary or JSON `seq`/`ts`), else the marker.
    Auto,
    /// The marker anywhere in the frame.
    Marker,
    /// JSON paths (`data.seq`, `items.0.ts`); a string value gives the integers inside it
    /// (seq and ts at one path: the first and second of them). No seq path: the SSE
    /// event's `id:` is the seq.
    Paths { seq: Option<String>, ts: String },
}

impl Decoder {
    /// From `--seq-path` / `--ts-path` and the message template: both paths, `--ts-path`
    /// alone (seq from SSE `id:`), or neither.
    pub fn from_flags(
        seq_path: Option<&str>,
        ts_path: Option<&str>,
        message: Option<&Template>,
    ) -> Result<Decoder, String> {
        match (seq_path, ts_path) {
            (s, Some(t)) => {
                for (flag, p) in [("--seq-path", s.unwrap_or(t)), ("--ts-path", t)] {
                    if p.is_empty() || p.split('.').any(str::is_empty) {
                        return Err(format!(
                            "{flag} `{p}`: expected a dotted JSON path, e.g. data.seq or text"
                        ));
                    }
                }
                Ok(Decoder::Paths {
                    seq: s.map(str::to_string),
                    ts: t.into(),
                })
            }
            (None, None) => Ok(if message.is_some_and(Template::has_marker) {
                Decoder::Marker
            } else {
                Decoder::Auto
            }),
            (Some(_), None) => Err(
                "--seq-path goes together with --ts-path (one JSON path each; --ts-path alone takes the seq from SSE `id:`)".into(),
            ),
        }
    }

    /// A binary frame: rtcheck's binary payload when `Auto`, else as `decode`.
    pub fn decode_binary(&self, frame: &[u8]) -> Option<(u64, u64)> {
        self.decode_binary_at(frame, rtcheck_base::os::clock::now_ns())
    }

    /// [`Self::decode_binary`] at wall clock `now_ns` (pure). Any 16 bytes decode as the
    /// binary payload, so a server's own binary frames would read as garbage seqs ("seq
    /// above --rounds", issue 41 item 16): only a scheduled time within a day of now is
    /// rtcheck's; anything else is a frame that is not the payload.
    pub fn decode_binary_at(&self, frame: &[u8], now_ns: u64) -> Option<(u64, u64)> {
        const DAY_NS: u64 = 86_400 * 1_000_000_000;
        match self {
            Decoder::Auto => rtcheck_wire::payload::decode(frame)
                .filter(|&(seq, ts)| seq > 0 && ts.abs_diff(now_ns) < DAY_NS),
            d => d.decode(frame, None),
        }
    }

    /// (seq, scheduled ns) of a text frame or event; `sse_id` (an SSE event's `id:`) is the seq when
    /// the payload carries none. None when the frame does not carry them.
    pub fn decode(&self, frame: &[u8], sse_id: Option<&str>) -> Option<(u64, u64)> {
        let id = || sse_id.and_then(|s| s.trim().parse::<u64>().ok());
        match self {
            Decoder::Auto => std::str::from_utf8(frame)
                .ok()
                .and_then(rtcheck_wire::payload::decode_text)
                .or_else(|| find_marker(frame)),
            Decoder::Marker => find_marker(frame),
            Decoder::Paths { seq, ts } => {
                let v: serde_json::Value = serde_json::from_slice(frame).ok()?;
                let Some(seq) = seq else {
                    let t = integers(at_path(&v, ts)?, 1).first().copied()?;
                    return Some((id()?, t));
                };
                let (s, t) = (at_path(&v, seq), at_path(&v, ts));
                if seq == ts {
                    let nums = t.map(|t| integers(t, 2)).unwrap_or_default();
                    return match nums[..] {
                        [s, t] => Some((s, t)),
                        [t] => Some((id()?, t)),
                        _ => None,
                    };
                }
                let t = integers(t?, 1).first().copied()?;
                let s = s
                    .and_then(|s| integers(s, 1).first().copied())
                    .or_else(id)?;
                Some((s, t))
            }
        }
    }
}

/// The `--message` template and the decoder of `--seq-path`/`--ts-path`, checked
/// together (bench fanout and verify delivery): the clients must find a seq and a time
/// in what is published. `sse`: the clients read SSE, where `--ts-path` alone takes the
/// seq from `id:`.
pub fn message_and_decoder(
    message: Option<&str>,
    seq_path: Option<&str>,
    ts_path: Option<&str>,
    sse: bool,
) -> Result<(Template, Decoder), String> {
    if !sse && ts_path.is_some() && seq_path.is_none() {
        return Err(
            "--ts-path without --seq-path takes the seq from SSE `id:`: it needs --transport sse"
                .into(),
        );
    }
    let t = Template::parse(message.unwrap_or(DEFAULT_MESSAGE));
    let d = Decoder::from_flags(seq_path, ts_path, Some(&t))?;
    // With the seq taken from SSE `id:`, the message carries only the time.
    let seq_from_id = sse && seq_path.is_none() && ts_path.is_some();
    if seq_from_id && !t.has_ts() {
        return Err("--message: the template needs {ts}, else no client can time it".into());
    }
    if message.is_some() && !seq_from_id && !t.has_seq_and_ts() {
        return Err("--message: the template needs {seq} and {ts} (or {marker}), else no client can time it".into());
    }
    Ok((t, d))
}

/// The value at a dotted path; a numeric segment also indexes an array.
fn at_path<'a>(v: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    path.split('.').try_fold(v, |v, seg| match v {
        serde_json::Value::Object(m) => m.get(seg),
        serde_json::Value::Array(a) => a.get(seg.parse::<usize>().ok()?),
        _ => None,
    })
}

/// Up to `n` unsigned integers in a JSON value: the number itself, or the digit runs of a
/// string (each fitting u64).
fn integers(v: &serde_json::Value, n: usize) -> Vec<u64> {
    match v {
        serde_json::Value::Number(x) => x.as_u64().into_iter().collect(),
        serde_json::Value::String(s) => s
            .split(|c: char| !c.is_ascii_digit())
            .filter(|d| !d.is_empty())
            .map_while(|d| d.parse::<u64>().ok())
            .take(n)
            .collect(),
        _ => Vec::new(),
    }
}

/// The first well-formed marker in the frame (bytes around it may be anything).
pub fn find_marker(frame: &[u8]) -> Option<(u64, u64)> {
    let open = MARKER_OPEN.as_bytes();
    let mut from = 0;
    while let Some(i) = frame
        .get(from..)?
        .windows(open.len())
        .position(|w| w == open)
    {
        let start = from + i + open.len();
        if let Some(v) = parse_marker_body(&frame[start..]) {
            return Some(v);
        }
        from = start;
    }
    None
}

fn parse_marker_body(b: &[u8]) -> Option<(u64, u64)> {
    let digits = |b: &[u8]| b.iter().take_while(|c| c.is_ascii_digit()).count();
    let n = digits(b);
    let seq = std::str::from_utf8(&b[..n]).ok()?.parse().ok()?;
    let rest = b.get(n..)?.strip_prefix(b":")?;
    let m = digits(rest);
    let ts = std::str::from_utf8(&rest[..m]).ok()?.parse().ok()?;
    (rest.get(m) == Some(&(MARKER_CLOSE as u8))).then_some((seq, ts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn chat_template_round_trips_by_path_and_pads_to_size() {
        let t = Template::parse(r#"{"type":"msg","text":"{seq} {ts} {pad}"}"#);
        assert!(t.has_seq_and_ts() && !t.has_marker());
        let m = t.render(7, 1_700_000_000_123_456_789, 1024);
        assert_eq!(m.len(), 1024);
        let d = Decoder::from_flags(Some("text"), Some("text"), Some(&t)).unwrap();
        assert_eq!(
            d.decode(m.as_bytes(), None),
            Some((7, 1_700_000_000_123_456_789))
        );
        // Too long a template for the size: no padding, never truncated.
        assert_eq!(t.render(1, 2, 4), r#"{"type":"msg","text":"1 2 "}"#);
    }

    #[test]
    fn nested_paths_numbers_and_sse_id() {
        let d = Decoder::from_flags(Some("data.seq"), Some("data.ts"), None).unwrap();
        assert_eq!(
            d.decode(br#"{"data":{"seq":3,"ts":99}}"#, None),
            Some((3, 99))
        );
        assert_eq!(
            d.decode(br#"{"data":{"ts":99}}"#, Some("12")),
            Some((12, 99))
        );
        assert_eq!(d.decode(br#"{"data":{"ts":99}}"#, None), None);
        assert_eq!(d.decode(br#"{"data":{"seq":-1,"ts":9}}"#, None), None);
        let a = Decoder::from_flags(Some("0.s"), Some("0.t"), None).unwrap();
        assert_eq!(
            a.decode(br##"[{"s":"#5","t":"at 8"}]"##, None),
            Some((5, 8))
        );
        assert!(Decoder::from_flags(Some("a"), None, None).is_err());
        let by_id = Decoder::from_flags(None, Some("ts"), None).unwrap();
        assert_eq!(by_id.decode(br#"{"ts":"5"}"#, Some("7")), Some((7, 5)));
        assert_eq!(by_id.decode(br#"{"ts":5}"#, None), None);
        assert!(Decoder::from_flags(Some("a..b"), Some("t"), None).is_err());
    }

    #[test]
    fn marker_is_found_inside_anything() {
        let t = Template::parse("hello {marker} {pad}");
        let d = Decoder::from_flags(None, None, Some(&t)).unwrap();
        assert_eq!(d, Decoder::Marker);
        let m = t.render(42, 1234, 100);
        assert_eq!(m.len(), 100);
        let wrapped = format!(r#"{{"from":"bob","msg":"{m}"}}"#);
        assert_eq!(d.decode(wrapped.as_bytes(), None), Some((42, 1234)));
        assert_eq!(find_marker(b"~rtck:1:~rtck:5:6~"), Some((5, 6)));
        assert_eq!(find_marker(b"~rtck:1:2"), None);
        // Auto reads rtcheck's own payload and the marker.
        let own = Template::parse(DEFAULT_MESSAGE).render(9, 77, 200);
        assert_eq!(Decoder::Auto.decode(own.as_bytes(), None), Some((9, 77)));
        assert_eq!(Decoder::Auto.decode(m.as_bytes(), None), Some((42, 1234)));
        let now = 1_700_000_000_000_000_000;
        let bin = rtcheck_wire::payload::encode(64, 3, now - 5_000_000);
        assert_eq!(
            Decoder::Auto.decode_binary_at(&bin, now),
            Some((3, now - 5_000_000))
        );
        // A server's own binary frame (16+ bytes, no time of ours in it) is not a payload,
        // so it is counted as undecodable, not as a seq above --rounds.
        let theirs = b"\x08\x96\x01protobuf-ish frame bytes".to_vec();
        assert_eq!(Decoder::Auto.decode_binary_at(&theirs, now), None);
    }

    proptest! {
        #[test]
        fn no_frame_panics(frame in proptest::collection::vec(any::<u8>(), 0..256),
                           id in proptest::option::of("[0-9a-z]{0,22}")) {
            for d in [
                Decoder::Auto,
                Decoder::Marker,
                Decoder::Paths { seq: Some("text".into()), ts: "text".into() },
                Decoder::Paths { seq: Some("a.0".into()), ts: "b".into() },
                Decoder::Paths { seq: None, ts: "b".into() },
            ] {
                let _ = d.decode(&frame, id.as_deref());
                let _ = d.decode_binary(&frame);
            }
        }

        #[test]
        fn text_frames_never_panic(s in "[~rtck:0-9{}\"a-z,. ]{0,120}") {
            let _ = Decoder::Auto.decode(s.as_bytes(), None);
            let _ = Decoder::Paths { seq: Some("text".into()), ts: "text".into() }.decode(s.as_bytes(), Some(&s));
        }

        #[test]
        fn render_then_decode(seq in 1u64.., ts in any::<u64>(), size in 0usize..2048,
                              lit in "[a-z \"{}:,]{0,30}") {
            let t = Template::parse(&format!("{lit}{{marker}}{lit}{{pad}}"));
            let m = t.render(seq, ts, size);
            prop_assert!(m.len() >= size.min(t.min_len()));
            prop_assert_eq!(find_marker(m.as_bytes()), Some((seq, ts)));
        }
    }
}
