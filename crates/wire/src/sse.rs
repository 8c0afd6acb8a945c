//! Server-Sent Events wire format: event encoding (server) and an incremental parser
//! (clients: bench load generator, verify, tests).
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

/// Incremental SSE parser: feed bytes as they arrive, take complete events.
/// Handles `\n`, `\r\n` and `\r` line ends, comments (`:`), multi-line data, and
/// lines split across reads. A line longer than `max_line` is an error (hostile peer).
#[derive(Debug)]
pub struct Parser {
    buf: Vec<u8>,
    last_id: Option<String>,
    event: Option<String>,
    data: String,
    has_data: bool,
    max_line: usize,
    skip_lf: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("SSE line longer than {0} bytes")]
    LineTooLong(usize),
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
            max_line,
            skip_lf: false,
        }
    }

    /// The last event id received (what a reconnecting client sends as Last-Event-ID).
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Feed bytes; complete events are appended to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<Event>) -> Result<(), ParseError> {
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
            let line = String::from_utf8(line).map_err(|_| ParseError::NotUtf8)?;
            self.line(&line, out);
        }
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > self.max_line {
            return Err(ParseError::LineTooLong(self.max_line));
        }
        Ok(())
    }

    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        if line.is_empty() {
            if self.has_data {
                out.push(Event {
                    id: self.last_id.clone(),
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.has_data = false;
            self.event = None;
            self.data.clear();
            return;
        }
        if line.starts_with(':') {
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
            "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
            "event" => self.event = Some(value.to_string()),
            _ => {}
        }
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
}
