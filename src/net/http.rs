//! A small HTTP/1.1 front: parse a request head, build responses. Hand-rolled on tokio so
//! an upgraded connection carries nothing of the HTTP layer.
use super::io::{read_available, ReadOutcome};
use std::time::Duration;
use tokio::net::TcpStream;

/// Largest request head we accept.
pub const MAX_HEAD: usize = 8 * 1024;
/// Largest request body we read (and discard).
pub const MAX_BODY: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub http11: bool,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    /// Does a comma-separated header contain `token` (case-insensitive)?
    pub fn header_has(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, v)| n == name && v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    }
    pub fn query_param(&self, key: &str) -> Option<&str> {
        self.query.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == key).then_some(v)
        })
    }
    pub fn keep_alive(&self) -> bool {
        if self.header_has("connection", "close") {
            return false;
        }
        self.http11 || self.header_has("connection", "keep-alive")
    }
    pub fn content_length(&self) -> Result<usize, String> {
        if self.header("transfer-encoding").is_some() {
            return Err("Transfer-Encoding is not supported".into());
        }
        match self.header("content-length") {
            None => Ok(0),
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| format!("bad Content-Length `{v}`")),
        }
    }
}

/// Parse a request head from `buf`: Ok(None) if incomplete, Ok((req, head_len)) when
/// complete, Err on garbage.
pub fn parse_head(buf: &[u8]) -> Result<Option<(Request, usize)>, String> {
    let mut hs = [httparse::EMPTY_HEADER; 48];
    let mut r = httparse::Request::new(&mut hs);
    match r.parse(buf) {
        Ok(httparse::Status::Partial) => {
            if buf.len() >= MAX_HEAD {
                Err(format!("request head larger than {MAX_HEAD} bytes"))
            } else {
                Ok(None)
            }
        }
        Ok(httparse::Status::Complete(n)) if n > MAX_HEAD => {
            Err(format!("request head larger than {MAX_HEAD} bytes"))
        }
        Ok(httparse::Status::Complete(n)) => {
            let target = r.path.unwrap_or("/");
            let (path, query) = target.split_once('?').unwrap_or((target, ""));
            let headers = r
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_ascii_lowercase(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect();
            Ok(Some((
                Request {
                    method: r.method.unwrap_or("").to_string(),
                    path: path.to_string(),
                    query: query.to_string(),
                    headers,
                    http11: r.version == Some(1),
                },
                n,
            )))
        }
        Err(e) => Err(format!("bad HTTP request: {e}")),
    }
}

#[derive(Debug)]
pub enum ReadError {
    /// Clean close between requests.
    Closed,
    Timeout,
    Bad(String),
    Io(std::io::Error),
}

/// Read one request head. `buf` holds leftover bytes from the previous request and
/// keeps bytes after this head (a WebSocket client may send frames right away).
pub async fn read_request(
    s: &TcpStream,
    buf: &mut Vec<u8>,
    timeout: Duration,
) -> Result<Request, ReadError> {
    let fut = async {
        loop {
            if !buf.is_empty() {
                if let Some((req, n)) = parse_head(buf).map_err(ReadError::Bad)? {
                    buf.drain(..n);
                    return Ok(req);
                }
            }
            s.readable().await.map_err(ReadError::Io)?;
            let room = MAX_HEAD + 1 - buf.len().min(MAX_HEAD);
            match read_available(s, room, |b| {
                buf.extend_from_slice(b);
                true
            })
            .map_err(ReadError::Io)?
            {
                ReadOutcome::Eof if buf.is_empty() => return Err(ReadError::Closed),
                ReadOutcome::Eof => return Err(ReadError::Bad("truncated request".into())),
                ReadOutcome::Data(_) => {}
            }
        }
    };
    tokio::time::timeout(timeout, fut)
        .await
        .unwrap_or(Err(ReadError::Timeout))
}

/// Discard a request body of `len` bytes (some of it may already be in `buf`).
pub async fn discard_body(
    s: &TcpStream,
    buf: &mut Vec<u8>,
    len: usize,
    timeout: Duration,
) -> Result<(), ReadError> {
    let have = buf.len().min(len);
    buf.drain(..have);
    let mut left = len - have;
    let fut = async {
        while left > 0 {
            s.readable().await.map_err(ReadError::Io)?;
            let mut extra = Vec::new();
            let out = read_available(s, left, |b| {
                let take = b.len().min(left);
                left -= take;
                extra.extend_from_slice(&b[take..]);
                left > 0
            })
            .map_err(ReadError::Io)?;
            buf.extend_from_slice(&extra);
            if out == ReadOutcome::Eof && left > 0 {
                return Err(ReadError::Bad("truncated body".into()));
            }
        }
        Ok(())
    };
    tokio::time::timeout(timeout, fut)
        .await
        .unwrap_or(Err(ReadError::Timeout))
}

pub fn reason(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        413 => "Payload Too Large",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// A complete response with a body.
pub fn response(status: u16, content_type: &str, body: &[u8], keep_alive: bool) -> Vec<u8> {
    let mut v = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: {}\r\n\r\n",
        reason(status),
        body.len(),
        if keep_alive { "keep-alive" } else { "close" }
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

/// A plain-text error response that closes the connection.
pub fn error(status: u16, msg: &str) -> Vec<u8> {
    response(
        status,
        "text/plain; charset=utf-8",
        format!("{msg}\n").as_bytes(),
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_websocket_upgrade() {
        let raw = b"GET /ws?x=1 HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n\x81";
        let (r, n) = parse_head(raw).unwrap().unwrap();
        assert_eq!(n, raw.len() - 1);
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/ws");
        assert_eq!(r.query_param("x"), Some("1"));
        assert!(r.header_has("connection", "upgrade"));
        assert!(r.header_has("upgrade", "WebSocket"));
        assert_eq!(r.header("sec-websocket-version"), Some("13"));
        assert!(r.keep_alive());
    }

    #[test]
    fn partial_garbage_and_oversized() {
        assert_eq!(parse_head(b"GET /poll HTTP/1.1\r\nHo").unwrap(), None);
        assert!(parse_head(b"\x00\x01\x02garbage\r\n\r\n").is_err());
        let mut big = b"GET / HTTP/1.1\r\nX: ".to_vec();
        big.extend(vec![b'a'; MAX_HEAD]);
        assert!(parse_head(&big).unwrap_err().contains("larger"));
    }

    #[test]
    fn keep_alive_and_length_rules() {
        let (r, _) = parse_head(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!r.keep_alive());
        let (r, _) =
            parse_head(b"POST / HTTP/1.1\r\nConnection: close\r\nContent-Length: 5\r\n\r\n")
                .unwrap()
                .unwrap();
        assert!(!r.keep_alive());
        assert_eq!(r.content_length(), Ok(5));
        let (r, _) = parse_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(r.content_length().is_err());
    }

    #[test]
    fn response_has_exact_length() {
        let r = response(200, "text/plain", b"ok\n", true);
        let s = String::from_utf8(r).unwrap();
        assert!(s.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(s.contains("Content-Length: 3\r\n"));
        assert!(s.ends_with("\r\n\r\nok\n"));
    }
}
