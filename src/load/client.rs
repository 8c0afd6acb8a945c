//! What load's HTTP/1.1 clients share: the target parsed once, the error kinds, an answer
//! and its timing. The connections are the engines' (conn.rs: the wire engine, and
//! hyper_engine.rs with the `hyper` feature).
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

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
    pub path_uri: http::Uri,
    pub host_value: http::header::HeaderValue,
    pub method: http::Method,
    pub headers: Vec<(http::header::HeaderName, http::header::HeaderValue)>,
    pub body: Bytes,
}

/// Parse `http://host[:port]/path?query` and resolve the host. https is refused (the
/// measurement is of the server, not of TLS).
pub fn parse_url(url: &str) -> Result<Target, String> {
    // Errors and reports name the URL redacted (user info and query values may be secrets).
    let shown = rtcheck_base::redact::url(url);
    let uri: http::Uri = url.parse().map_err(|e| format!("URL `{shown}`: {e}"))?;
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
        method: http::Method::GET,
        headers: Vec::new(),
        body: Bytes::new(),
    })
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

/// Load and measurement traffic stays on loopback unless the user says otherwise.
pub fn check_loopback(t: &Target, allow_remote: bool) -> Result<(), String> {
    if allow_remote || rtcheck_base::os::addr::is_loopback(t.addr.ip()) {
        Ok(())
    } else {
        Err(not_loopback(&t.url, &t.addr.ip().to_string()))
    }
}

/// The one refusal of a non-loopback target without `--allow-remote` (load, budget
/// --live, bench fanout, verify delivery): `shown` is the redacted URL.
pub fn not_loopback(shown: &str, host: &str) -> String {
    format!(
        "{shown}: {host} is not a loopback address (127.0.0.0/8, ::1); pass --allow-remote to send this traffic to another host"
    )
}

/// A runtime for a command's network work (the caller's thread blocks on it).
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("starting the runtime: {e}"))
}
