//! The soak's client side of the wire: loopback connects (with a small receive buffer for
//! the clients that never read), HTTP/1.1 requests and response heads, and the unmasked
//! server WebSocket frames. Payloads, SSE events and markers are parsed by rtcheck_wire.
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Bound of one connect, one response head, one small exchange.
pub const IO_WAIT: Duration = Duration::from_secs(10);
/// A response head larger than this is a broken server, not memory to give it.
const MAX_HEAD: usize = 16 << 10;
/// A poll answer carries at most 64 KiB of messages (docs/serve.md); plus its keys.
const MAX_BODY: usize = 256 << 10;

/// Connect to `addr`; `rcvbuf` sets SO_RCVBUF before the handshake (the kernel doubles it),
/// so a client that never reads fills at once and the server's writes block.
pub async fn connect(addr: SocketAddr, rcvbuf: Option<u32>) -> std::io::Result<TcpStream> {
    let sock = TcpSocket::new_v4()?;
    if let Some(b) = rcvbuf {
        sock.set_recv_buffer_size(b)?;
    }
    let s = tokio::time::timeout(IO_WAIT, sock.connect(addr))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
    s.set_nodelay(true)?;
    Ok(s)
}

/// Leave with RST (SO_LINGER 0: a killed process, a NAT that forgot the flow) instead of
/// FIN; it also leaves no TIME_WAIT behind on the client's ephemeral ports.
pub fn reset_on_close(s: &TcpStream) {
    let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
}

/// `GET path` with extra header lines (each ending in `\r\n`).
pub fn get(addr: SocketAddr, path: &str, headers: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}\r\n")
}

/// A WebSocket upgrade of `path` (the key is fixed: the server's accept is not checked).
pub fn ws_upgrade(addr: SocketAddr, path: &str) -> String {
    get(
        addr,
        path,
        "Upgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n",
    )
}

/// An SSE request; `last_id` resumes (`Last-Event-ID`).
pub fn sse_get(addr: SocketAddr, path: &str, last_id: Option<&str>) -> String {
    let h = last_id.map_or(String::new(), |id| format!("Last-Event-ID: {id}\r\n"));
    get(addr, path, &format!("Accept: text/event-stream\r\n{h}"))
}

/// A response head: status, `Content-Length` (None without one), `Connection: close`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub content_length: Option<usize>,
    pub close: bool,
}

/// Pure: the head at the start of `buf` and its length, None until `\r\n\r\n` arrived;
/// an error for a head that is not HTTP/1.x.
pub fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return match buf.len() > MAX_HEAD {
            true => Err(format!("response head over {MAX_HEAD} bytes")),
            false => Ok(None),
        };
    };
    let text = String::from_utf8_lossy(&buf[..end]);
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|r| r.get(2..5))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: `{status_line:.80}`"))?;
    let fields: Vec<(&str, &str)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|f| f.1)
    };
    Ok(Some((
        Head {
            status,
            content_length: field("content-length").and_then(|v| v.parse().ok()),
            close: field("connection").is_some_and(|v| v.eq_ignore_ascii_case("close")),
        },
        end + 4,
    )))
}

/// Send `req` and read the response head; returns it and the bytes read after it.
pub async fn request_head(s: &mut TcpStream, req: &str) -> std::io::Result<(Head, Vec<u8>)> {
    s.write_all(req.as_bytes()).await?;
    read_head(s).await
}

/// Read a response head (bounded in size and [`IO_WAIT`]).
pub async fn read_head(s: &mut TcpStream) -> std::io::Result<(Head, Vec<u8>)> {
    let mut got = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    let work = async {
        loop {
            if let Some((h, n)) = parse_head(&got).map_err(std::io::Error::other)? {
                return Ok((h, got.split_off(n)));
            }
            let n = s.read(&mut buf).await?;
            if n == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
            got.extend_from_slice(&buf[..n]);
        }
    };
    tokio::time::timeout(IO_WAIT, work)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no response head"))?
}

/// One keep-alive exchange: send `req`, read the head and its `Content-Length` body.
pub async fn exchange(s: &mut TcpStream, req: &str) -> std::io::Result<(Head, Vec<u8>)> {
    let (head, mut body) = request_head(s, req).await?;
    let want = head.content_length.unwrap_or(0);
    if want > MAX_BODY {
        return Err(std::io::Error::other(format!("body of {want} bytes")));
    }
    let mut buf = [0u8; 8192];
    let work = async {
        while body.len() < want {
            let n = s.read(&mut buf).await?;
            if n == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
            body.extend_from_slice(&buf[..n]);
        }
        Ok(())
    };
    tokio::time::timeout(IO_WAIT, work)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no response body"))??;
    body.truncate(want);
    Ok((head, body))
}

/// A complete server frame at the start of a buffer: opcode, payload range, frame length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub opcode: u8,
    pub payload: std::ops::Range<usize>,
    pub len: usize,
}

/// Pure: the first server WebSocket frame in `b` (unmasked, FIN set: rtcheck's server
/// frames every message once, whole), None until it is complete; an error for a masked
/// or fragmented frame or one over `max` bytes.
pub fn server_frame(b: &[u8], max: usize) -> Result<Option<Frame>, String> {
    if b.len() < 2 {
        return Ok(None);
    }
    if b[0] & 0x80 == 0 || b[0] & 0x70 != 0 {
        return Err(format!(
            "fragmented or reserved bits: first byte {:#04x}",
            b[0]
        ));
    }
    if b[1] & 0x80 != 0 {
        return Err("masked server frame".into());
    }
    let (hdr, len) = match b[1] & 0x7F {
        126 if b.len() >= 4 => (4, u16::from_be_bytes([b[2], b[3]]) as u64),
        127 if b.len() >= 10 => (10, u64::from_be_bytes(b[2..10].try_into().expect("8"))),
        126 | 127 => return Ok(None),
        n => (2, n as u64),
    };
    if len > max as u64 {
        return Err(format!("frame of {len} bytes"));
    }
    let total = hdr + len as usize;
    Ok((b.len() >= total).then(|| Frame {
        opcode: b[0] & 0x0F,
        payload: hdr..total,
        len: total,
    }))
}
