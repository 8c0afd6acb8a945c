//! SSE over HTTP/2 (`--http2`): one request stream on a TLS connection that agreed to
//! h2, its DATA read as the HTTP/1.1 client reads its body, and the connection's GOAWAY
//! noticed. The h2 crate keeps a received GOAWAY as the connection's error, which
//! `poll_ready` reports without opening a stream: nothing is sent to look. The
//! connection's task looks each time it has polled the connection (it is woken by what
//! arrives) and says so once on a channel: no timer runs per client.
use crate::sys::tls::Stream;
use bytes::Bytes;
use std::future::Future;
use std::task::{Context, Poll};

/// Aborts the connection's task when the stream is dropped (an error, a reconnect).
struct Task(tokio::task::JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One SSE stream over h2.
pub struct H2Sse {
    send: h2::client::SendRequest<Bytes>,
    pub body: h2::RecvStream,
    pub parser: rtcheck_wire::sse::Parser,
    _task: Task,
    /// Fires once when the connection's task saw the server's GOAWAY (dropped unfired
    /// when the connection ended without one).
    pub goaway_seen: Option<tokio::sync::oneshot::Receiver<()>>,
    /// When a GOAWAY was first seen on this connection (ms since the run's start).
    pub goaway: Option<f64>,
}

impl H2Sse {
    /// Note the GOAWAY at `now_ms` if one came since the last look.
    pub fn note_goaway(&mut self, now_ms: f64) {
        if self.goaway.is_some() {
            return;
        }
        if remote_goaway(&mut self.send) {
            self.goaway = Some(now_ms);
        }
    }
}

/// The server's GOAWAY, as `poll_ready` reports it (polled without a waker of its own).
fn remote_goaway(send: &mut h2::client::SendRequest<Bytes>) -> bool {
    let waker = futures_util::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    matches!(send.poll_ready(&mut cx), Poll::Ready(Err(e)) if e.is_go_away() && e.is_remote())
}

/// Resolves when the connection's task saw a GOAWAY; never when there is none (or its
/// task ended without one). Cancel safe: a `select!` branch.
pub async fn goaway(seen: &mut Option<tokio::sync::oneshot::Receiver<()>>) {
    match seen.as_mut() {
        Some(rx) => {
            let fired = rx.await.is_ok();
            *seen = None;
            if !fired {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending::<()>().await,
    }
}

/// Why a stream could not be opened (the client names the cause).
#[derive(Debug)]
pub enum Failed {
    /// The answer was not 200.
    Status(u16),
    /// The connection or the stream broke.
    Broken(String),
    /// No HTTP/2, or a request that cannot be sent.
    Other(String),
}

/// ALPN settled on h2.
fn agreed_h2(s: &Stream) -> bool {
    match s {
        Stream::Tls(t) => t.get_ref().1.alpn_protocol() == Some(b"h2".as_slice()),
        Stream::Plain(_) => false,
    }
}

/// The h2 handshake, then `GET path` for the event stream (resuming from `last_id`),
/// its 200 head read.
pub async fn open(
    stream: Stream,
    authority: &str,
    path: &str,
    last_id: Option<&str>,
) -> Result<H2Sse, Failed> {
    if !agreed_h2(&stream) {
        return Err(Failed::Other(
            "the server did not agree to HTTP/2 (ALPN h2)".into(),
        ));
    }
    let (send, conn) = h2::client::handshake(stream)
        .await
        .map_err(|e| Failed::Broken(format!("HTTP/2 handshake: {e}")))?;
    // The connection's task: after each poll of the connection (woken by each frame),
    // a look for the GOAWAY, said once.
    let (tx, goaway_seen) = tokio::sync::oneshot::channel();
    let mut look = send.clone();
    let task = Task(tokio::spawn(async move {
        let mut tx = Some(tx);
        let mut conn = std::pin::pin!(conn);
        std::future::poll_fn(|cx| {
            let r = conn.as_mut().poll(cx);
            if tx.is_some() && remote_goaway(&mut look) {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(());
                }
            }
            r.map(|_| ())
        })
        .await;
    }));
    let mut req = http::Request::builder()
        .method("GET")
        .uri(format!("https://{authority}{path}"))
        .header("accept", "text/event-stream")
        .header("cache-control", "no-cache");
    if let Some(id) = last_id {
        req = req.header("last-event-id", id);
    }
    let req = req
        .body(())
        .map_err(|e| Failed::Other(format!("HTTP/2 request: {e}")))?;
    let mut send = send
        .ready()
        .await
        .map_err(|e| Failed::Broken(format!("HTTP/2: {e}")))?;
    let (resp, _) = send
        .send_request(req, true)
        .map_err(|e| Failed::Broken(format!("HTTP/2 request: {e}")))?;
    let resp = resp
        .await
        .map_err(|e| Failed::Broken(format!("HTTP/2 response: {e}")))?;
    let status = resp.status().as_u16();
    if status != 200 {
        return Err(Failed::Status(status));
    }
    Ok(H2Sse {
        send,
        body: resp.into_body(),
        parser: rtcheck_wire::sse::Parser::new(1 << 20),
        _task: task,
        goaway_seen: Some(goaway_seen),
        goaway: None,
    })
}
