//! The probe's client edge: DNS, TCP, TLS (rustls) and one HTTP/1.1 request, each step
//! bounded by `--timeout`. Errors name the step and the peer, never a secret.
use super::target::Target;
use anyhow::{anyhow, Context};
use rtcheck_wire::http::client;
use rtcheck_wire::http::response::{Head, Limits};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls;

/// What the probe reads of a response head: as much as a browser takes.
pub const LIMITS: Limits = Limits {
    max_head: 64 * 1024,
    max_headers: 128,
};

pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Everything a connection needs from the flags.
#[derive(Debug, Clone)]
pub struct ClientOpts {
    pub timeout: Duration,
    /// How long an event stream's response head may take (`--head-timeout`): a buffering
    /// proxy holds it back with the first events.
    pub head_timeout: Duration,
    pub ca: Option<PathBuf>,
    pub insecure: bool,
    /// `--header` pairs, sent on every request (values are secrets).
    pub headers: Vec<(String, String)>,
}

/// The step of a connection that failed: the `reachable` check names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Dns,
    Connect,
    Tls,
    Request,
    Head,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Dns => "dns",
            Step::Connect => "connect",
            Step::Tls => "tls",
            Step::Request => "request",
            Step::Head => "head",
        }
    }
}

/// A connection that failed at `step`; `timed_out` when the step's bound passed (for the
/// head of an event stream: a path holding it back).
#[derive(Debug)]
pub struct StepError {
    pub step: Step,
    pub timed_out: bool,
    pub message: String,
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StepError {}

/// The step an error of this module failed at (None: not a connection step).
pub fn failed_step(e: &anyhow::Error) -> Option<&StepError> {
    e.chain().find_map(|c| c.downcast_ref::<StepError>())
}

fn at(step: Step, e: anyhow::Error) -> anyhow::Error {
    if failed_step(&e).is_some() {
        return e;
    }
    let timed_out = e.chain().any(|c| c.is::<TimedOut>());
    anyhow::Error::new(StepError {
        step,
        timed_out,
        message: format!("{e:#}"),
    })
}

pub struct Conn {
    pub io: Box<dyn Io>,
    /// ALPN protocol the TLS server chose.
    pub alpn: Option<String>,
    /// The TCP socket under any TLS, for TCP_INFO (owned by `io`).
    pub fd: Option<std::os::fd::RawFd>,
}

/// Bound one step; the error names it.
pub async fn step<T>(
    timeout: Duration,
    what: impl FnOnce() -> String,
    f: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    match tokio::time::timeout(timeout, f).await {
        Ok(r) => r,
        Err(_) => Err(anyhow::Error::new(TimedOut(format!(
            "{}: no answer within {:?}",
            what(),
            timeout
        )))),
    }
}

/// A step that outlived its bound (told apart from a refusal by `StepError::timed_out`).
#[derive(Debug)]
struct TimedOut(String);

impl std::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TimedOut {}

pub async fn connect(t: &Target, o: &ClientOpts, alpn: &[&str]) -> anyhow::Result<Conn> {
    let peer = format!("{}:{}", t.host, t.port);
    let addrs: Vec<_> = step(o.timeout, || format!("DNS lookup of {}", t.host), async {
        let it = tokio::net::lookup_host((t.host.as_str(), t.port))
            .await
            .with_context(|| format!("DNS lookup of {}", t.host))?;
        Ok(it.collect())
    })
    .await
    .map_err(|e| at(Step::Dns, e))?;
    let mut last = None;
    let mut tcp = None;
    for a in addrs {
        match tokio::time::timeout(o.timeout, TcpStream::connect(a)).await {
            Ok(Ok(s)) => {
                tcp = Some(s);
                break;
            }
            Ok(Err(e)) => last = Some(anyhow!("connect {a}: {e}")),
            Err(_) => {
                let what = format!("connect {a}: no answer within {:?}", o.timeout);
                last = Some(anyhow::Error::new(TimedOut(what)));
            }
        }
    }
    let tcp = tcp
        .ok_or_else(|| last.unwrap_or_else(|| anyhow!("{peer}: no address")))
        .map_err(|e| at(Step::Connect, e))?;
    let _ = tcp.set_nodelay(true);
    let fd = Some(std::os::fd::AsRawFd::as_raw_fd(&tcp));
    if !t.scheme.tls() {
        return Ok(Conn {
            io: Box::new(tcp),
            alpn: None,
            fd,
        });
    }
    let cfg = tls_config(o, alpn)?;
    let name = crate::sys::tls::server_name(&t.host).map_err(|e| at(Step::Tls, e))?;
    let tls = step(o.timeout, || format!("TLS handshake with {peer}"), async {
        tokio_rustls::TlsConnector::from(Arc::new(cfg))
            .connect(name, tcp)
            .await
            .with_context(|| format!("TLS handshake with {peer}"))
    })
    .await
    .map_err(|e| at(Step::Tls, e))?;
    let alpn = tls
        .get_ref()
        .1
        .alpn_protocol()
        .map(|p| String::from_utf8_lossy(p).into_owned());
    Ok(Conn {
        io: Box::new(tls),
        alpn,
        fd,
    })
}

/// The TLS client setup for these options ([`crate::sys::tls`], the one builder).
pub fn tls_config(o: &ClientOpts, alpn: &[&str]) -> anyhow::Result<rustls::ClientConfig> {
    let trust = crate::sys::tls::Trust {
        ca: o.ca.clone(),
        insecure: o.insecure,
    };
    crate::sys::tls::client_config(&trust, alpn)
}

/// A request head: the caller's headers, then `--header` flags (which win by coming last).
pub fn request(t: &Target, o: &ClientOpts, extra: &[(&str, String)]) -> Vec<u8> {
    let host = t.host_header();
    let agent = concat!("rtcheck-probe/", env!("CARGO_PKG_VERSION"));
    let fixed = [("Host", host.as_str()), ("User-Agent", agent)];
    let extra = extra.iter().map(|(n, v)| (*n, v.as_str()));
    let flags = o.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    let mut r = Vec::with_capacity(256);
    client::write_head(
        &mut r,
        "GET",
        &t.path_and_query,
        fixed.into_iter().chain(extra).chain(flags),
    );
    r
}

/// Send a request, read the response head (waiting up to `head_bound`). Returns the head
/// and bytes read past it.
pub async fn exchange(
    conn: &mut Conn,
    t: &Target,
    o: &ClientOpts,
    req: &[u8],
    head_bound: Duration,
) -> anyhow::Result<(Head, Vec<u8>)> {
    let peer = format!("{}:{}", t.host, t.port);
    step(
        o.timeout,
        || format!("{peer}: sending the request"),
        async {
            conn.io
                .write_all(req)
                .await
                .with_context(|| format!("{peer}: sending the request"))
        },
    )
    .await
    .map_err(|e| at(Step::Request, e))?;
    step(
        head_bound,
        || format!("{peer}: waiting for the response"),
        async {
            let mut buf = Vec::with_capacity(4096);
            loop {
                let mut chunk = [0u8; 8192];
                let n = conn
                    .io
                    .read(&mut chunk)
                    .await
                    .with_context(|| format!("{peer}: reading the response"))?;
                if n == 0 {
                    anyhow::bail!("{peer}: closed the connection without an HTTP response");
                }
                let fed = client::feed(&mut buf, &chunk[..n], LIMITS);
                if let Some(done) = fed.map_err(|e| anyhow!("{peer}: {e}"))? {
                    return Ok(done);
                }
            }
        },
    )
    .await
    .map_err(|e| at(Step::Head, e))
}
