//! Reading a request head and discarding a body off a socket, under a timeout; the
//! parsing is [`rtcheck_wire::http`]. Hand-rolled on tokio so an upgraded connection
//! carries nothing of the HTTP layer.
use super::io::{read_available, ReadOutcome};
use rtcheck_wire::http::{head_error, parse_head, HeadError, Request, MAX_HEAD};
use std::time::Duration;
use tokio::net::TcpStream;

#[derive(Debug)]
pub enum ReadError {
    /// Clean close between requests.
    Closed,
    Timeout,
    Bad(HeadError),
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
                ReadOutcome::Eof => {
                    return Err(ReadError::Bad(head_error(400, "truncated request")))
                }
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
                return Err(ReadError::Bad(head_error(400, "truncated body")));
            }
        }
        Ok(())
    };
    tokio::time::timeout(timeout, fut)
        .await
        .unwrap_or(Err(ReadError::Timeout))
}
