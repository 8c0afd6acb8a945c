//! A minimal HTTP/1.1 client over hyper: one connection per virtual user, reused, with
//! TCP_NODELAY set on our side, timing the response head and the body separately (a body
//! that arrives tens of ms after its head is the server-side Nagle stall).
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Body;
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// Why a request did not give a 2xx-4xx answer in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// No full answer within --timeout.
    Timeout,
    /// Connection refused (nothing listening).
    Refused,
    /// Other connect failure (unreachable, reset during connect).
    Connect,
    /// The peer's bytes were not HTTP, or the connection broke mid-answer.
    Protocol,
    /// A 4xx status (the request is wrong for this target).
    #[serde(rename = "4xx")]
    Status4xx,
    /// A 5xx status.
    #[serde(rename = "5xx")]
    Status5xx,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Refused => "refused",
            ErrorKind::Connect => "connect",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Status4xx => "4xx",
            ErrorKind::Status5xx => "5xx",
        }
    }
}

/// What to send: parsed once, cloned per request.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub addr: SocketAddr,
    pub authority: String,
    pub path: String,
    /// `path` and the Host header, parsed once (not per request).
    pub path_uri: hyper::Uri,
    pub host_value: hyper::header::HeaderValue,
    pub method: hyper::Method,
    pub headers: Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>,
    pub body: Bytes,
}

/// Parse `http://host[:port]/path?query` and resolve the host. https is refused (the
/// measurement is of the server, not of TLS).
pub fn parse_url(url: &str) -> Result<Target, String> {
    // Errors and reports name the URL redacted (user info and query values may be secrets).
    let shown = rtcheck_base::redact::url(url);
    let uri: hyper::Uri = url.parse().map_err(|e| format!("URL `{shown}`: {e}"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some(s) => {
            return Err(format!(
                "URL `{shown}`: scheme {s} is not supported (use http://)"
            ))
        }
        None => return Err(format!("URL `{shown}`: expected http://HOST[:PORT]/PATH")),
    }
    let host = uri
        .host()
        .ok_or_else(|| format!("URL `{shown}`: no host"))?
        .trim_matches(|c| c == '[' || c == ']')
        .to_string();
    let port = uri.port_u16().unwrap_or(80);
    let addr = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("URL `{shown}`: cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("URL `{shown}`: {host} has no address"))?;
    // `host:port` without user info: a password never goes out in the Host header.
    let authority = uri.authority().map_or(host.clone(), |a| {
        a.as_str().rsplit('@').next().unwrap_or(&host).to_string()
    });
    Ok(Target {
        url: shown.clone(),
        addr,
        path: uri.path_and_query().map_or("/".into(), |p| p.to_string()),
        path_uri: uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .map_err(|e| format!("URL `{shown}`: {e}"))?,
        host_value: authority
            .parse()
            .map_err(|_| format!("URL `{shown}`: bad host"))?,
        authority,
        method: hyper::Method::GET,
        headers: Vec::new(),
        body: Bytes::new(),
    })
}

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

/// One answered request.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub total: Duration,
    /// From the response head to the end of the body.
    pub body_gap: Duration,
    pub body_bytes: usize,
    pub status: u16,
}

pub(crate) fn connect_error(e: &std::io::Error) -> ErrorKind {
    if e.kind() == std::io::ErrorKind::ConnectionRefused {
        ErrorKind::Refused
    } else {
        ErrorKind::Connect
    }
}

/// Open a connection (TCP_NODELAY on) within `timeout`.
pub async fn connect(t: &Target, timeout: Duration) -> Result<Conn, ErrorKind> {
    let timer = tokio::time::sleep(timeout);
    tokio::pin!(timer);
    connect_by(t, timer).await
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

/// What came back for one request: the caller reads the clock at the end, so a request
/// costs two clock reads in the sweep (start, which is the previous end, and the head).
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    pub status: u16,
    /// When the response head arrived.
    pub head: Instant,
    pub body_bytes: usize,
}

/// A 4xx or 5xx status is an error of its kind.
pub fn check_status(status: u16) -> Result<(), ErrorKind> {
    match status {
        500.. => Err(ErrorKind::Status5xx),
        400.. => Err(ErrorKind::Status4xx),
        _ => Ok(()),
    }
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
            let Some(frame) = body.frame().await else {
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

/// One request on `conn` within `timeout` (head and body). After an error the connection
/// must be dropped: a late answer would be read as the next one's.
pub async fn request(conn: &mut Conn, t: &Target, timeout: Duration) -> Result<Timing, ErrorKind> {
    let start = Instant::now();
    let timer = tokio::time::sleep(timeout);
    tokio::pin!(timer);
    let a = exchange(conn, t, timer).await?;
    let end = Instant::now();
    check_status(a.status)?;
    Ok(Timing {
        total: end - start,
        body_gap: end - a.head,
        body_bytes: a.body_bytes,
        status: a.status,
    })
}

/// Connect and make one request (a new connection per call), timed from before connect.
pub async fn once(t: &Target, timeout: Duration) -> Result<Timing, ErrorKind> {
    let start = Instant::now();
    let mut c = connect(t, timeout).await?;
    let left = timeout.saturating_sub(start.elapsed());
    let mut timing = request(&mut c, t, left).await?;
    timing.total = start.elapsed();
    Ok(timing)
}

/// Load and measurement traffic stays on loopback unless the user says otherwise.
pub fn check_loopback(t: &Target, allow_remote: bool) -> Result<(), String> {
    if allow_remote || rtcheck_base::os::addr::is_loopback(t.addr.ip()) {
        Ok(())
    } else {
        Err(format!(
            "{}: {} is not a loopback address (127.0.0.0/8, ::1); pass --allow-remote to send this traffic to another host",
            t.url,
            t.addr.ip()
        ))
    }
}

/// A runtime for a command's network work (the caller's thread blocks on it).
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("starting the runtime: {e}"))
}

/// GET `t` on `conn` and return its status and body (small answers: metrics pages).
pub async fn fetch(
    conn: &mut Conn,
    t: &Target,
    timeout: Duration,
) -> Result<(u16, Bytes), ErrorKind> {
    let fut = conn.drive(async |sender| {
        sender.ready().await.map_err(|_| ErrorKind::Protocol)?;
        let resp = sender
            .send_request(build(t))
            .await
            .map_err(|_| ErrorKind::Protocol)?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|_| ErrorKind::Protocol)?
            .to_bytes();
        Ok((status, body))
    });
    tokio::time::timeout(timeout, fut)
        .await
        .unwrap_or(Err(ErrorKind::Timeout))
}
