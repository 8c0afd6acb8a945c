//! `--engine hyper` (feature `hyper`): hyper's HTTP/1.1 client connection, kept as a
//! cross-check of the wire engine (docs/load.md). One connection per virtual user, reused,
//! TCP_NODELAY on our side, the head and the body's end timed apart.
use super::client::{connect_error, Answer, ErrorKind, Target};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Body;
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use std::pin::Pin;
use std::time::Instant;
use tokio::net::TcpStream;

/// One open connection.
/// The connection is driven by the task that uses it (polled beside each request), not by
/// a task of its own: no cross-task wake-up per request, which halves the client's CPU.
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    driver: Pin<Box<Connection<TokioIo<TcpStream>, Full<Bytes>>>>,
    /// The driver finished (peer closed): never poll it again.
    closed: bool,
}

impl Conn {
    /// Whether the next request may go on this connection (hyper closes it after a
    /// `Connection: close` answer; a request on it would fail as a protocol error).
    pub fn reusable(&self) -> bool {
        !self.closed && !self.sender.is_closed()
    }

    /// Run `f` (a request on `sender`) while driving the connection.
    async fn drive<T>(
        &mut self,
        f: impl AsyncFnOnce(&mut SendRequest<Full<Bytes>>) -> Result<T, ErrorKind>,
    ) -> Result<T, ErrorKind> {
        let Conn {
            sender,
            driver,
            closed,
        } = self;
        if *closed {
            return Err(ErrorKind::Protocol);
        }
        let fut = f(sender);
        tokio::pin!(fut);
        tokio::select! {
            biased;
            r = &mut fut => r,
            // The connection ended (a `Connection: close` answer, a reset): what it
            // delivered before ending is still the answer, or the request fails.
            _ = driver.as_mut() => {
                *closed = true;
                fut.await
            }
        }
    }
}

/// Open a connection (TCP_NODELAY on) before `timer` fires.
pub async fn connect_by(
    t: &Target,
    timer: Pin<&mut tokio::time::Sleep>,
) -> Result<Conn, ErrorKind> {
    let fut = async {
        let s = TcpStream::connect(t.addr)
            .await
            .map_err(|e| connect_error(&e))?;
        let _ = s.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(s))
            .await
            .map_err(|_| ErrorKind::Protocol)?;
        Ok(Conn {
            sender,
            driver: Box::pin(conn),
            closed: false,
        })
    };
    tokio::select! {
        biased;
        r = fut => r,
        _ = timer => Err(ErrorKind::Timeout),
    }
}

/// The request, set field by field (not through `Request::builder`, which moves the
/// parts through a `Result` at every step).
fn build(t: &Target) -> hyper::Request<Full<Bytes>> {
    let mut r = hyper::Request::new(Full::new(t.body.clone()));
    *r.method_mut() = t.method.clone();
    *r.uri_mut() = t.path_uri.clone();
    let h = r.headers_mut();
    h.reserve(1 + t.headers.len());
    h.insert(hyper::header::HOST, t.host_value.clone());
    for (k, v) in &t.headers {
        h.append(k, v.clone());
    }
    r
}

/// One request on `conn` (head and body), bounded by `timer`: the caller owns it and moves
/// it forward per request (one timer per virtual user; pushing a tokio timer later is an
/// atomic store, while a fresh `timeout` registers and removes a wheel entry per request).
/// After an error the connection must be dropped: a late answer would be read as the next
/// one's.
pub async fn exchange(
    conn: &mut Conn,
    t: &Target,
    timer: Pin<&mut tokio::time::Sleep>,
) -> Result<Answer, ErrorKind> {
    let fut = conn.drive(async |sender| {
        sender.ready().await.map_err(|_| ErrorKind::Protocol)?;
        let resp = sender
            .send_request(build(t))
            .await
            .map_err(|_| ErrorKind::Protocol)?;
        let head = Instant::now();
        let status = resp.status().as_u16();
        // Counted frame by frame, never gathered: the sweep needs the length only. A body
        // whose Content-Length is used up is complete (hyper has already gone back to
        // keep-alive), so it is not polled once more for its end.
        let mut body = resp.into_body();
        let mut len = 0;
        while !body.is_end_stream() {
            let Some(frame) = http_body_util::BodyExt::frame(&mut body).await else {
                break;
            };
            let frame = frame.map_err(|_| ErrorKind::Protocol)?;
            len += frame.data_ref().map_or(0, |d| d.len());
        }
        Ok(Answer {
            status,
            head,
            body_bytes: len,
        })
    });
    tokio::select! {
        biased;
        r = fut => r,
        _ = timer => Err(ErrorKind::Timeout),
    }
}
