//! Pure parsers for what a server (or a proxy) answers: the HTTP/1.1 response head, a
//! chunked body, an SSE stream (events and comments), WebSocket server frames. Every one
//! takes arbitrary bytes and returns an error instead of panicking (fuzzed in tests).

/// Largest response head we accept.
pub const MAX_HEAD: usize = 64 * 1024;
/// Largest SSE line or WebSocket frame we keep.
pub const MAX_ITEM: usize = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Head {
    pub status: u16,
    pub reason: String,
    /// Names lowercased, in order.
    pub headers: Vec<(String, String)>,
}

impl Head {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }
    pub fn chunked(&self) -> bool {
        self.has_token("transfer-encoding", "chunked")
    }
}

/// `Ok(None)`: need more bytes. `Ok(Some((head, used)))`: head parsed from `buf[..used]`.
pub fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let mut hdrs = [httparse::EMPTY_HEADER; 128];
    let mut r = httparse::Response::new(&mut hdrs);
    match r.parse(buf) {
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
            Err(format!("response head larger than {MAX_HEAD} bytes"))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Ok(httparse::Status::Complete(n)) => {
            let headers = r
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_ascii_lowercase(),
                        String::from_utf8_lossy(h.value).trim().to_string(),
                    )
                })
                .collect();
            Ok(Some((
                Head {
                    status: r.code.unwrap_or(0),
                    reason: r.reason.unwrap_or("").to_string(),
                    headers,
                },
                n,
            )))
        }
        Err(e) => Err(format!("not an HTTP response ({e})")),
    }
}

/// Incremental `Transfer-Encoding: chunked` decoder.
#[derive(Debug, Default)]
pub struct Chunked {
    buf: Vec<u8>,
    /// Bytes left in the current chunk's data, then its CRLF.
    left: usize,
    in_data: bool,
    pub done: bool,
}

impl Chunked {
    /// Feed raw bytes; decoded body bytes are appended to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        self.buf.extend_from_slice(bytes);
        let mut pos = 0;
        loop {
            if self.done {
                self.buf.clear();
                return Ok(());
            }
            if self.in_data {
                let avail = self.buf.len() - pos;
                if self.left > 0 {
                    let n = avail.min(self.left);
                    out.extend_from_slice(&self.buf[pos..pos + n]);
                    pos += n;
                    self.left -= n;
                    if self.left > 0 {
                        break;
                    }
                }
                if self.buf.len() - pos < 2 {
                    break;
                }
                if &self.buf[pos..pos + 2] != b"\r\n" {
                    return Err("chunked body: missing CRLF after chunk data".into());
                }
                pos += 2;
                self.in_data = false;
                continue;
            }
            let Some(eol) = self.buf[pos..].windows(2).position(|w| w == b"\r\n") else {
                if self.buf.len() - pos > 1024 {
                    return Err("chunked body: chunk size line too long".into());
                }
                break;
            };
            let line = std::str::from_utf8(&self.buf[pos..pos + eol])
                .map_err(|_| "chunked body: size line is not text".to_string())?;
            let hex = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(hex, 16)
                .map_err(|_| format!("chunked body: bad chunk size `{}`", hex.escape_debug()))?;
            if size > MAX_ITEM * 16 {
                return Err(format!("chunked body: chunk of {size} bytes is too large"));
            }
            pos += eol + 2;
            if size == 0 {
                self.done = true;
                continue;
            }
            self.left = size;
            self.in_data = true;
        }
        self.buf.drain(..pos);
        Ok(())
    }
}

/// One item of an event stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    Event {
        id: Option<String>,
        event: Option<String>,
        data: String,
    },
    /// A `:` comment line (servers use them as heartbeats).
    Comment,
}

/// Incremental SSE scanner that, unlike the server-side parser, reports comments.
#[derive(Debug, Default)]
pub struct SseScanner {
    buf: Vec<u8>,
    id: Option<String>,
    event: Option<String>,
    data: Option<String>,
    skip_lf: bool,
}

impl SseScanner {
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseItem>) -> Result<(), String> {
        if self.skip_lf && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.skip_lf = false;
        while let Some(p) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            let mut line = std::mem::take(&mut self.buf);
            line.extend_from_slice(&bytes[..p]);
            if line.len() > MAX_ITEM {
                return Err(format!("event stream line longer than {MAX_ITEM} bytes"));
            }
            let cr = bytes[p] == b'\r';
            bytes = &bytes[p + 1..];
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    None => self.skip_lf = true,
                    _ => {}
                }
            }
            self.line(&String::from_utf8_lossy(&line), out);
        }
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > MAX_ITEM {
            return Err(format!("event stream line longer than {MAX_ITEM} bytes"));
        }
        Ok(())
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseItem>) {
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                out.push(SseItem::Event {
                    id: self.id.clone(),
                    event: self.event.take(),
                    data,
                });
            }
            self.event = None;
            return;
        }
        if line.starts_with(':') {
            out.push(SseItem::Comment);
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                let d = self.data.get_or_insert_with(String::new);
                if !d.is_empty() {
                    d.push('\n');
                }
                d.push_str(value);
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            "event" => self.event = Some(value.to_string()),
            _ => {}
        }
    }
}

/// An SSE `id:` read as a sequence: leading decimal digits are the seq, an optional
/// `@EPOCH` suffix names the server's run (rtcheck serve: `SEQ@EPOCH`). None: no digits
/// (an opaque id such as a UUID cannot be ordered).
pub fn sse_id(id: &str) -> Option<(u64, Option<&str>)> {
    let id = id.trim();
    let digits = id.bytes().take_while(u8::is_ascii_digit).count();
    let seq = id[..digits].parse().ok()?;
    match &id[digits..] {
        "" => Some((seq, None)),
        rest => rest.strip_prefix('@').map(|e| (seq, Some(e))),
    }
}

/// A WebSocket frame from the server (unmasked; masked is tolerated and unmasked here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub fin: bool,
    pub opcode: u8,
    pub payload: Vec<u8>,
}

/// Take one complete frame from the front of `buf`: `Ok(None)` when incomplete.
pub fn take_frame(buf: &mut Vec<u8>) -> Result<Option<Frame>, String> {
    if buf.len() < 2 {
        return Ok(None);
    }
    let fin = buf[0] & 0x80 != 0;
    let opcode = buf[0] & 0x0f;
    let masked = buf[1] & 0x80 != 0;
    let (len, mut pos) = match buf[1] & 0x7f {
        126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as u64, 4),
        127 if buf.len() >= 10 => (
            u64::from_be_bytes(buf[2..10].try_into().unwrap_or([0; 8])),
            10,
        ),
        126 | 127 => return Ok(None),
        n => (n as u64, 2),
    };
    if len > MAX_ITEM as u64 {
        return Err(format!("WebSocket frame of {len} bytes is too large"));
    }
    if opcode >= 8 && (len > 125 || !fin) {
        return Err("WebSocket control frame too long or fragmented".into());
    }
    let mask = if masked {
        if buf.len() < pos + 4 {
            return Ok(None);
        }
        let m = [buf[pos], buf[pos + 1], buf[pos + 2], buf[pos + 3]];
        pos += 4;
        Some(m)
    } else {
        None
    };
    let len = len as usize;
    if buf.len() < pos + len {
        return Ok(None);
    }
    let mut payload = buf[pos..pos + len].to_vec();
    if let Some(m) = mask {
        payload
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b ^= m[i % 4]);
    }
    buf.drain(..pos + len);
    Ok(Some(Frame {
        fin,
        opcode,
        payload,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_parse_partial_and_garbage() {
        let raw = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nXX";
        let (h, n) = parse_head(raw).unwrap().unwrap();
        assert_eq!(h.status, 101);
        assert_eq!(&raw[n..], b"XX");
        assert!(h.has_token("connection", "upgrade"));
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\n").unwrap(), None);
        assert!(parse_head(b"SSH-2.0-OpenSSH_9.2\r\n").is_err());
    }

    #[test]
    fn chunked_split_anywhere() {
        let raw = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n";
        for split in 0..raw.len() {
            let mut c = Chunked::default();
            let mut out = Vec::new();
            c.feed(&raw[..split], &mut out).unwrap();
            c.feed(&raw[split..], &mut out).unwrap();
            assert_eq!(out, b"hello world", "split {split}");
            assert!(c.done);
        }
        assert!(Chunked::default().feed(b"zz\r\n", &mut Vec::new()).is_err());
    }

    #[test]
    fn sse_events_and_comments() {
        let mut s = SseScanner::default();
        let mut out = Vec::new();
        s.feed(b": ping\r\n\r\nid: 7\ndata: {\"seq\":7}\n\n", &mut out)
            .unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], SseItem::Comment);
        assert!(matches!(&out[1], SseItem::Event { id: Some(i), .. } if i == "7"));
    }

    #[test]
    fn sse_ids_are_seq_and_epoch() {
        assert_eq!(sse_id("42"), Some((42, None)));
        assert_eq!(sse_id("42@7f3a"), Some((42, Some("7f3a"))));
        assert_eq!(sse_id(" 9@"), Some((9, Some(""))));
        assert_eq!(sse_id("abc"), None);
        assert_eq!(sse_id("12-x"), None);
        assert_eq!(sse_id("99999999999999999999999"), None);
    }

    #[test]
    fn frames() {
        let mut b = rtcheck_wire::ws::frame(rtcheck_wire::ws::OP_PING, b"hi");
        b.extend_from_slice(&[0x81]);
        let f = take_frame(&mut b).unwrap().unwrap();
        assert_eq!((f.opcode, f.payload.as_slice()), (9, &b"hi"[..]));
        assert_eq!(take_frame(&mut b).unwrap(), None);
        let mut big = vec![0x82, 127, 0xff, 0, 0, 0, 0, 0, 0, 0];
        assert!(take_frame(&mut big).is_err());
    }
}
