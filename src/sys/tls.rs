//! The one TLS client setup (rustls, ring): the roots rtcheck trusts (webpki's, plus
//! `--ca FILE`, or none checked with probe's `--insecure`), and the client streams that
//! carry a plain or TLS connection alike (tokio for bench's clients and publisher, std for
//! verify delivery's). The TCP socket under TLS stays reachable (`tcp()`): socket options
//! (SO_RCVBUF, SO_LINGER, read timeouts, shutdown) are set on it as on a plain one.
use anyhow::{anyhow, Context};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskCx, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::rustls;

/// What a TLS client trusts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    /// Extra root certificate(s), PEM (`--ca`).
    pub ca: Option<PathBuf>,
    /// Accept any certificate (probe's `--insecure`).
    pub insecure: bool,
}

impl Trust {
    /// webpki's roots plus `--ca` (bench and verify delivery: never `--insecure`).
    pub fn with_ca(ca: Option<PathBuf>) -> Trust {
        Trust {
            ca,
            insecure: false,
        }
    }
}

/// The client configuration for `trust`, offering `alpn`. A bad `--ca` is one line naming
/// the file.
pub fn client_config(trust: &Trust, alpn: &[&str]) -> anyhow::Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS setup")?;
    let mut cfg = if trust.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(ca) = &trust.ca {
            add_ca(&mut roots, ca)?;
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    cfg.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    Ok(cfg)
}

fn add_ca(roots: &mut rustls::RootCertStore, path: &Path) -> anyhow::Result<()> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let what = || format!("--ca {}", path.display());
    // Read bounded first: a device or FIFO (`--ca /dev/zero`) is refused, never streamed.
    let pem = rtcheck_base::input::read_bytes(path).map_err(|e| anyhow!("{}: {e}", what()))?;
    let mut n = 0;
    for c in CertificateDer::pem_slice_iter(&pem) {
        let c = c.map_err(|e| anyhow!("{}: {e}", what()))?;
        roots
            .add(c)
            .map_err(|e| anyhow!("{}: certificate rejected: {e}", what()))?;
        n += 1;
    }
    if n == 0 {
        anyhow::bail!("{}: no PEM certificate in the file", what());
    }
    Ok(())
}

/// The name the certificate is checked against (and sent as SNI): a DNS name or an IP.
pub fn server_name(host: &str) -> anyhow::Result<rustls::pki_types::ServerName<'static>> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    rustls::pki_types::ServerName::try_from(h.to_string())
        .map_err(|_| anyhow!("{host}: not a valid TLS server name"))
}

/// A failed handshake said once, with the one hint that fits its cause: an issuer not
/// trusted wants `--ca`; a certificate for another name says which name was checked; no
/// answer in time asks whether the address is a TLS port at all.
pub fn explain(e: &std::io::Error, host: &str, addr: SocketAddr, limit: Duration) -> String {
    use rustls::CertificateError as C;
    let s = e.to_string();
    let cert = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<rustls::Error>())
        .and_then(|r| match r {
            rustls::Error::InvalidCertificate(c) => Some(c),
            _ => None,
        });
    match (e.kind(), cert) {
        (_, Some(C::UnknownIssuer)) => {
            format!("{s} (a private or staging CA: --ca FILE with its PEM)")
        }
        (_, Some(C::NotValidForName | C::NotValidForNameContext { .. })) => {
            format!("{s}: the certificate is not for {host} (the URL's host is checked)")
        }
        (std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut, _) => format!(
            "no TLS answer within {}s (is {addr} a TLS port?)",
            limit.as_secs_f64()
        ),
        _ => s,
    }
}

/// A connection the client asked for: how the TLS side is set up, once per run.
#[derive(Clone, Debug)]
pub struct Tls {
    pub config: Arc<rustls::ClientConfig>,
    pub name: rustls::pki_types::ServerName<'static>,
    /// The name as the URL wrote it, for messages.
    pub host: String,
}

/// The same setup: one configuration, one name.
impl PartialEq for Tls {
    fn eq(&self, o: &Tls) -> bool {
        Arc::ptr_eq(&self.config, &o.config) && self.name == o.name
    }
}

impl Tls {
    pub fn new(trust: &Trust, host: &str, alpn: &[&str]) -> anyhow::Result<Tls> {
        Ok(Tls {
            config: Arc::new(client_config(trust, alpn)?),
            name: server_name(host)?,
            host: host.to_string(),
        })
    }

    /// [`explain`] for this name.
    pub fn explain(&self, e: &std::io::Error, addr: SocketAddr, limit: Duration) -> String {
        explain(e, &self.host, addr, limit)
    }
}

/// A stream with a TCP socket under it, plain or TLS (for socket-level checks).
pub trait OnTcp {
    fn tcp(&self) -> &tokio::net::TcpStream;
}

impl OnTcp for tokio::net::TcpStream {
    fn tcp(&self) -> &tokio::net::TcpStream {
        self
    }
}

impl OnTcp for Stream {
    fn tcp(&self) -> &tokio::net::TcpStream {
        Stream::tcp(self)
    }
}

/// A tokio client connection, plain or TLS.
pub enum Stream {
    Plain(tokio::net::TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>),
}

impl Stream {
    /// `tcp` as is, or after a TLS handshake (unbounded: the caller bounds it in time).
    pub async fn over(tcp: tokio::net::TcpStream, tls: Option<&Tls>) -> std::io::Result<Stream> {
        match tls {
            None => Ok(Stream::Plain(tcp)),
            Some(t) => tokio_rustls::TlsConnector::from(t.config.clone())
                .connect(t.name.clone(), tcp)
                .await
                .map(|s| Stream::Tls(Box::new(s))),
        }
    }

    /// The TCP socket under it.
    pub fn tcp(&self) -> &tokio::net::TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskCx<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskCx<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// One TCP connect and TLS handshake to `addr`, within `limit` each, before a run starts:
/// a certificate not trusted (or not for the name) is one error at once. The error says
/// which step failed.
pub fn check_handshake(addr: SocketAddr, tls: &Tls, limit: Duration) -> Result<(), String> {
    let tcp = std::net::TcpStream::connect_timeout(&addr, limit)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    SyncStream::over(tcp, Some(tls), limit)
        .map(drop)
        .map_err(|e| {
            format!(
                "TLS handshake with {addr}: {}",
                tls.explain(&e, addr, limit)
            )
        })
}

/// A std (blocking) client connection, plain or TLS.
pub enum SyncStream {
    Plain(std::net::TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>>),
}

impl SyncStream {
    /// `tcp` as is, or after a complete TLS handshake within `limit` in all (TimedOut
    /// past it), so a certificate refused is an error here, not at the first read. The
    /// socket's own read and write timeouts are as before afterwards.
    pub fn over(
        mut tcp: std::net::TcpStream,
        tls: Option<&Tls>,
        limit: Duration,
    ) -> std::io::Result<SyncStream> {
        let Some(t) = tls else {
            return Ok(SyncStream::Plain(tcp));
        };
        let mut c = rustls::ClientConnection::new(t.config.clone(), t.name.clone())
            .map_err(std::io::Error::other)?;
        let (read, write) = (tcp.read_timeout()?, tcp.write_timeout()?);
        let deadline = Instant::now() + limit;
        while c.is_handshaking() {
            // Each call may wait only for what is left of the whole handshake's time.
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            tcp.set_read_timeout(Some(left))?;
            tcp.set_write_timeout(Some(left))?;
            match c.complete_io(&mut tcp) {
                // Nothing moved and still handshaking: the peer is gone (never a spin).
                Ok((0, 0)) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    return Err(std::io::ErrorKind::TimedOut.into())
                }
                Err(e) => return Err(e),
            }
        }
        tcp.set_read_timeout(read)?;
        tcp.set_write_timeout(write)?;
        Ok(SyncStream::Tls(Box::new(rustls::StreamOwned::new(c, tcp))))
    }

    pub fn tcp(&self) -> &std::net::TcpStream {
        match self {
            SyncStream::Plain(s) => s,
            SyncStream::Tls(s) => s.get_ref(),
        }
    }

    /// Say goodbye at the TLS layer (close_notify) before a FIN; nothing on a plain one.
    pub fn close_notify(&mut self) {
        if let SyncStream::Tls(s) = self {
            s.conn.send_close_notify();
            let _ = s.conn.complete_io(&mut s.sock);
        }
    }
}

impl Read for SyncStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            SyncStream::Plain(s) => s.read(buf),
            SyncStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for SyncStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            SyncStream::Plain(s) => s.write(buf),
            SyncStream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            SyncStream::Plain(s) => s.flush(),
            SyncStream::Tls(s) => s.flush(),
        }
    }
}

/// `--insecure`: accept any certificate (the report says so loudly).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_ca_files_are_one_line_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let not_pem = dir.path().join("ca.pem");
        std::fs::write(&not_pem, "hello\n").unwrap();
        for p in [
            not_pem.clone(),
            dir.path().join("missing.pem"),
            dir.path().to_path_buf(),
            PathBuf::from("/dev/zero"),
        ] {
            let t = Trust {
                ca: Some(p.clone()),
                insecure: false,
            };
            let e = format!("{:#}", client_config(&t, &[]).unwrap_err());
            assert!(e.starts_with(&format!("--ca {}", p.display())), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(client_config(&Trust::default(), &["http/1.1"]).is_ok());
        assert!(server_name("hub.test").is_ok() && server_name("[::1]").is_ok());
        assert!(server_name("bad name").is_err());
    }

    #[test]
    fn a_silent_peer_ends_the_blocking_handshake_at_its_deadline() {
        // Accepts (the kernel's backlog) and never answers the ClientHello.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let before = Some(Duration::from_secs(30));
        tcp.set_read_timeout(before).unwrap();
        let tls = Tls::new(&Trust::default(), "hub.test", &[]).unwrap();
        let t0 = Instant::now();
        let e = SyncStream::over(tcp, Some(&tls), Duration::from_millis(300))
            .err()
            .expect("no answer is no handshake");
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    }

    #[test]
    fn each_handshake_failure_gets_its_own_hint() {
        use rustls::CertificateError as C;
        let addr: SocketAddr = "127.0.0.1:8443".parse().unwrap();
        let limit = Duration::from_secs(5);
        let cert = |c: C| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                rustls::Error::InvalidCertificate(c),
            )
        };
        let say = |e: &std::io::Error| explain(e, "hub.test", addr, limit);
        let issuer = say(&cert(C::UnknownIssuer));
        assert!(issuer.contains("--ca FILE"), "{issuer}");
        let name = say(&cert(C::NotValidForName));
        assert!(
            name.contains("the certificate is not for hub.test (the URL's host is checked)")
                && !name.contains("--ca"),
            "{name}"
        );
        for k in [std::io::ErrorKind::WouldBlock, std::io::ErrorKind::TimedOut] {
            let slow = say(&k.into());
            assert_eq!(
                slow,
                "no TLS answer within 5s (is 127.0.0.1:8443 a TLS port?)"
            );
        }
        let other = say(&cert(C::Expired));
        assert!(
            !other.contains("--ca") && !other.contains("not for"),
            "{other}"
        );
        let eof = say(&std::io::ErrorKind::UnexpectedEof.into());
        assert!(!eof.contains("TLS port"), "{eof}");
    }
}
