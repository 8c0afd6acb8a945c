//! A virtual user's connection by engine: the wire loop (default: the request's bytes
//! written as encoded once, the answer read by `wire`) or hyper's client (`--engine
//! hyper`, kept as a cross-check of the first). Both time the head and the body's end.
use super::client::{self, Answer, ErrorKind, Target};
use super::wire;
use bytes::{Buf, Bytes, BytesMut};
use rtcheck_wire::http::response::{self, Limits};
use serde::{Deserialize, Serialize};
use std::pin::Pin;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// Which HTTP client the sweep's users run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The request encoded once and written as is; answers read with httparse.
    Wire,
    /// hyper's HTTP/1.1 client connection (a cross-check: about 4x the user CPU per request).
    Hyper,
}

impl Engine {
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Wire => "wire",
            Engine::Hyper => "hyper",
        }
    }
}

/// What every request of a sweep sends.
#[derive(Debug, Clone)]
pub struct Request {
    pub target: Target,
    pub engine: Engine,
    /// The wire engine's bytes, encoded once.
    pub bytes: Bytes,
    pub head_only: bool,
}

impl Request {
    pub fn new(target: Target, engine: Engine) -> Request {
        Request {
            bytes: wire::encode(&target),
            head_only: target.method == hyper::Method::HEAD,
            target,
            engine,
        }
    }
}

/// Read buffer per connection: an answer head fits, and it is reused, not reallocated.
const READ_BUF: usize = 8 * 1024;

pub struct WireConn {
    stream: TcpStream,
    buf: BytesMut,
    /// The last answer said the server closes (or the peer did): open a new one.
    spent: bool,
}

pub enum UserConn {
    Wire(WireConn),
    Hyper(client::Conn),
}

impl UserConn {
    /// Whether the next request may go on this connection.
    pub fn reusable(&self) -> bool {
        match self {
            UserConn::Wire(c) => !c.spent,
            UserConn::Hyper(c) => c.reusable(),
        }
    }
}

/// Open a connection (TCP_NODELAY on) before `timer` fires.
pub async fn connect(r: &Request, timer: Pin<&mut Sleep>) -> Result<UserConn, ErrorKind> {
    match r.engine {
        Engine::Hyper => client::connect_by(&r.target, timer)
            .await
            .map(UserConn::Hyper),
        Engine::Wire => {
            let fut = async {
                let s = TcpStream::connect(r.target.addr)
                    .await
                    .map_err(|e| client::connect_error(&e))?;
                let _ = s.set_nodelay(true);
                Ok(UserConn::Wire(WireConn {
                    stream: s,
                    buf: BytesMut::with_capacity(READ_BUF),
                    spent: false,
                }))
            };
            tokio::select! {
                biased;
                r = fut => r,
                _ = timer => Err(ErrorKind::Timeout),
            }
        }
    }
}

/// One request and its whole answer before `timer` fires. After an error the connection
/// must be dropped: a late answer would be read as the next one's.
pub async fn exchange(
    c: &mut UserConn,
    r: &Request,
    timer: Pin<&mut Sleep>,
) -> Result<Answer, ErrorKind> {
    match c {
        UserConn::Hyper(c) => client::exchange(c, &r.target, timer).await,
        UserConn::Wire(c) => {
            tokio::select! {
                biased;
                a = wire_exchange(c, r) => a,
                _ = timer => Err(ErrorKind::Timeout),
            }
        }
    }
}

/// One attempt on `conn` (connecting first when needed) before `timer` fires; the
/// connection is dropped after an error (a late answer would be read as the next one's)
/// and replaced after an answer that closes it.
pub async fn attempt(
    conn: &mut Option<UserConn>,
    r: &Request,
    mut timer: Pin<&mut Sleep>,
) -> Result<Answer, ErrorKind> {
    if !conn.as_ref().is_some_and(UserConn::reusable) {
        *conn = Some(connect(r, timer.as_mut()).await?);
    }
    let c = conn.as_mut().expect("connected above");
    let a = exchange(c, r, timer).await;
    if a.is_err() {
        *conn = None;
    }
    a
}

/// Read more bytes; 0 means the peer closed.
async fn fill(c: &mut WireConn) -> Result<usize, ErrorKind> {
    c.buf.reserve(READ_BUF);
    c.stream
        .read_buf(&mut c.buf)
        .await
        .map_err(|_| ErrorKind::Protocol)
}

async fn wire_exchange(c: &mut WireConn, r: &Request) -> Result<Answer, ErrorKind> {
    c.stream
        .write_all(&r.bytes)
        .await
        .map_err(|_| ErrorKind::Protocol)?;
    let head = loop {
        match response::parse_framed(&c.buf, Limits::DEFAULT, r.head_only) {
            // 1xx interim answers (100 Continue, 103 Early Hints) precede the real one.
            Ok(Some(h)) if h.status < 200 => c.buf.advance(h.len),
            Ok(Some(h)) => break h,
            Ok(None) if fill(c).await? == 0 => return Err(ErrorKind::Protocol),
            Ok(None) => {}
            Err(_) => return Err(ErrorKind::Protocol),
        }
    };
    let at = Instant::now();
    c.buf.advance(head.len);
    let mut body = response::Body::new(head.framing);
    loop {
        let used = body.feed(&c.buf).map_err(|_| ErrorKind::Protocol)?;
        c.buf.advance(used);
        if body.done() {
            break;
        }
        if fill(c).await? == 0 {
            body.eof().map_err(|_| ErrorKind::Protocol)?;
        }
    }
    // Nothing was asked for beyond this answer (no pipelining): extra bytes mean the
    // framing disagrees with the server's, so the connection cannot be trusted.
    c.spent = head.close || !c.buf.is_empty();
    if !c.buf.is_empty() {
        return Err(ErrorKind::Protocol);
    }
    Ok(Answer {
        status: head.status,
        head: at,
        body_bytes: body.bytes as usize,
    })
}
