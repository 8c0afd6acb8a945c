//! One reading connection, WebSocket or SSE, turned into [`Item`]s: payload seqs, gap and
//! reset markers, hellos. Pings are answered (a client that does not answer is removed by
//! `--pong-wait`, which would be the generator's fault, not the server's).
use super::wire::{self, server_frame};
use rtcheck_wire::epoch::parse_gap;
use rtcheck_wire::epoch::{self, Marker};
use rtcheck_wire::{payload, sse, ws};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Ws,
    Sse,
}

/// What a client reads off a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A payload: its seq and scheduled time (ns since the Unix epoch).
    Seq(u64, u64),
    /// A gap marker: seqs the server says it cannot deliver (inclusive).
    Gap(u64, u64),
    /// A reset marker (another epoch, or a position beyond the server's latest).
    Reset,
    /// The `/ws` hello `{"epoch","latest"}`.
    Hello(u64),
    /// A session-ack hello: the session id and whether the presented one was unknown.
    Session(String, bool),
    /// Anything else (named in the report: a server sending what clients cannot read).
    Unknown(String),
}

/// Bytes of one WebSocket frame or SSE line accepted.
const MAX_FRAME: usize = 1 << 20;
/// Per-connection read buffer: a few messages; 5,000 connections hold 40 MB of it.
const READ_BUF: usize = 8 << 10;

/// Why a connection could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The server answered another status (503 at a session cap).
    Refused(u16),
    Io(std::io::Error),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Refused(s) => write!(f, "answered HTTP {s}"),
            OpenError::Io(e) => write!(f, "{e}"),
        }
    }
}

pub struct Conn {
    s: TcpStream,
    proto: Proto,
    /// WebSocket bytes not yet parsed (with the ones that came with the response head).
    buf: Vec<u8>,
    sse: sse::Parser,
    /// Pings to answer, written outside any `select!` so a write is never cut.
    pongs: Vec<Vec<u8>>,
    /// The server's epoch as last seen (WebSocket hello, SSE id `SEQ@EPOCH`).
    pub epoch: Option<String>,
}

impl Conn {
    /// `path` over WebSocket (101 expected) or SSE (200), with `Last-Event-ID: last_id`.
    pub async fn open(
        addr: SocketAddr,
        proto: Proto,
        path: &str,
        last_id: Option<&str>,
    ) -> Result<Conn, OpenError> {
        let mut s = wire::connect(addr, None).await.map_err(OpenError::Io)?;
        let (req, want) = match proto {
            Proto::Ws => (wire::ws_upgrade(addr, path), 101),
            Proto::Sse => (wire::sse_get(addr, path, last_id), 200),
        };
        let (head, rest) = wire::request_head(&mut s, &req)
            .await
            .map_err(OpenError::Io)?;
        if head.status != want {
            return Err(OpenError::Refused(head.status));
        }
        let mut c = Conn {
            s,
            proto,
            buf: Vec::new(),
            sse: sse::Parser::new(MAX_FRAME),
            pongs: Vec::new(),
            epoch: None,
        };
        c.buf = rest;
        Ok(c)
    }

    /// Parse what is buffered, then (if nothing was) read once. Ok(false) at EOF.
    /// Cancel-safe: the only await is the read.
    pub async fn read(&mut self, out: &mut Vec<Item>) -> std::io::Result<bool> {
        if !self.buf.is_empty() && self.parse(out)? {
            return Ok(true);
        }
        let mut tmp = [0u8; READ_BUF];
        let n = self.s.read(&mut tmp).await?;
        if n == 0 {
            return Ok(false);
        }
        self.buf.extend_from_slice(&tmp[..n]);
        self.parse(out)?;
        Ok(true)
    }

    /// Items from the buffered bytes; true if any.
    fn parse(&mut self, out: &mut Vec<Item>) -> std::io::Result<bool> {
        let before = out.len();
        match self.proto {
            Proto::Sse => {
                let mut evs = Vec::new();
                let r = self.sse.feed(&self.buf, &mut evs);
                self.buf.clear();
                r.map_err(std::io::Error::other)?;
                for e in evs {
                    if let Some(ep) = e.id.as_deref().and_then(|i| i.split_once('@')) {
                        if self.epoch.as_deref() != Some(ep.1) {
                            self.epoch = Some(ep.1.to_string());
                        }
                    }
                    out.push(sse_item(e.event.as_deref(), &e.data));
                }
            }
            Proto::Ws => {
                let mut at = 0;
                while let Some(f) =
                    server_frame(&self.buf[at..], MAX_FRAME).map_err(std::io::Error::other)?
                {
                    let body = &self.buf[at + f.payload.start..at + f.payload.end];
                    match f.opcode {
                        ws::OP_PING => self.pongs.push(body.to_vec()),
                        ws::OP_CLOSE => {
                            self.buf.clear();
                            return Err(std::io::ErrorKind::ConnectionAborted.into());
                        }
                        op => {
                            let it = ws_item(op, body);
                            if let Item::Hello(_) = it {
                                self.epoch = hello_epoch(body);
                            }
                            out.push(it);
                        }
                    }
                    at += f.len;
                }
                self.buf.drain(..at);
            }
        }
        Ok(out.len() > before)
    }

    /// Answer the pings read so far.
    pub async fn flush_pongs(&mut self) -> std::io::Result<()> {
        for p in std::mem::take(&mut self.pongs) {
            let f = ws::client_frame(ws::OP_PONG, true, &p, [7, 7, 7, 7]);
            self.s.write_all(&f).await?;
        }
        Ok(())
    }

    /// One masked text message (a session ack `{"ack":SEQ}`).
    pub async fn send_text(&mut self, text: &str) -> std::io::Result<()> {
        let f = ws::client_frame(ws::OP_TEXT, true, text.as_bytes(), [1, 2, 3, 4]);
        self.s.write_all(&f).await
    }

    /// Leave with FIN, or RST when `rst`.
    pub fn close(self, rst: bool) {
        if rst {
            wire::reset_on_close(&self.s);
        }
    }
}

fn hello_epoch(body: &[u8]) -> Option<String> {
    let m = epoch::parse_marker(std::str::from_utf8(body).ok()?)?;
    match m {
        Marker::Hello { epoch, .. } | Marker::Reset { epoch, .. } => Some(epoch.to_string()),
    }
}

/// Pure: one SSE event as an item.
pub fn sse_item(event: Option<&str>, data: &str) -> Item {
    match event {
        Some("gap") => parse_gap(data).map_or_else(|| unknown(data), |(a, b)| Item::Gap(a, b)),
        Some("reset") => match epoch::parse_marker(data) {
            Some(Marker::Reset { .. }) => Item::Reset,
            _ => unknown(data),
        },
        Some("session") => session_hello(data).unwrap_or_else(|| unknown(data)),
        _ => payload::decode_text(data).map_or_else(|| unknown(data), |(s, t)| Item::Seq(s, t)),
    }
}

/// Pure: one WebSocket data frame as an item (binary payloads, text markers).
pub fn ws_item(opcode: u8, body: &[u8]) -> Item {
    if opcode == ws::OP_BINARY {
        return payload::decode(body).map_or_else(
            || Item::Unknown(format!("{} B binary", body.len())),
            |(s, t)| Item::Seq(s, t),
        );
    }
    let Ok(text) = std::str::from_utf8(body) else {
        return Item::Unknown(format!("{} B non-UTF-8 text", body.len()));
    };
    if let Some(m) = epoch::parse_marker(text) {
        return match m {
            Marker::Hello { latest, .. } => Item::Hello(latest),
            Marker::Reset { .. } => Item::Reset,
        };
    }
    if let Some(h) = session_hello(text) {
        return h;
    }
    if let Some((a, b)) = parse_gap(text) {
        return Item::Gap(a, b);
    }
    payload::decode_text(text).map_or_else(|| unknown(text), |(s, t)| Item::Seq(s, t))
}

fn session_hello(data: &str) -> Option<Item> {
    if !data.starts_with("{\"session\"") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(data).ok()?;
    let id = v.get("session")?.as_str()?.to_string();
    Some(Item::Session(id, v.get("reset")?.as_bool()?))
}

fn unknown(data: &str) -> Item {
    Item::Unknown(data.chars().take(80).collect())
}
