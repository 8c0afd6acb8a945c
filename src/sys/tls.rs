//! The one TLS client setup (rustls, ring): the roots rtcheck trusts (webpki's, plus
//! `--ca FILE`, or none checked with probe's `--insecure`), and the client streams that
//! carry a plain or TLS connection alike (tokio for bench's clients and publisher, std for
//! verify delivery's). The TCP socket under TLS stays reachable (`tcp()`): socket options
//! (SO_RCVBUF, SO_LINGER, read timeouts, shutdown) are set on it as on a plain one.
use anyhow::{anyhow, Context};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskCx, Poll};
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

/// A TLS failure said once, with the hint that fits it (a private CA wants `--ca`).
pub fn explain(e: &std::io::Error) -> String {
    let s = e.to_string();
    if s.contains("certificate") || s.contains("UnknownIssuer") {
        format!("{s} (a private or staging CA: --ca FILE with its PEM)")
    } else {
        s
    }
}

/// A connection the client asked for: how the TLS side is set up, once per run.
#[derive(Clone, Debug)]
pub struct Tls {
    pub config: Arc<rustls::ClientConfig>,
    pub name: rustls::pki_types::ServerName<'static>,
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
        })
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

/// One TCP connect and TLS handshake to `addr` within `limit` each, before a run starts:
/// a certificate not trusted (or not for the name) is one error at once. The error says
/// which step failed.
pub fn check_handshake(
    addr: std::net::SocketAddr,
    tls: &Tls,
    limit: std::time::Duration,
) -> Result<(), String> {
    let tcp = std::net::TcpStream::connect_timeout(&addr, limit)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let _ = tcp.set_read_timeout(Some(limit));
    let _ = tcp.set_write_timeout(Some(limit));
    SyncStream::over(tcp, Some(tls))
        .map(drop)
        .map_err(|e| format!("TLS handshake with {addr}: {}", explain(&e)))
}

/// A std (blocking) client connection, plain or TLS.
pub enum SyncStream {
    Plain(std::net::TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>>),
}

impl SyncStream {
    /// `tcp` as is, or after a complete TLS handshake (bounded by the socket's read and
    /// write timeouts), so a certificate refused is an error here, not at the first read.
    pub fn over(mut tcp: std::net::TcpStream, tls: Option<&Tls>) -> std::io::Result<SyncStream> {
        let Some(t) = tls else {
            return Ok(SyncStream::Plain(tcp));
        };
        let mut c = rustls::ClientConnection::new(t.config.clone(), t.name.clone())
            .map_err(std::io::Error::other)?;
        while c.is_handshaking() {
            // Nothing moved and still handshaking: the peer is gone (never a spin).
            if c.complete_io(&mut tcp)? == (0, 0) {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
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
}
