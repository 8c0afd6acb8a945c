//! What the browser trusts on an https/wss endpoint given `--ca`: rtcheck verifies the
//! chain with rustls against the roots (webpki + `--ca`), then pins that leaf's public
//! key in Chromium (`--ignore-certificate-errors-spki-list`, a SHA-256 of its SPKI), so
//! the browser accepts exactly the certificate rtcheck checked and nothing else.
use crate::probe::client::{tls_config, ClientOpts};
use crate::probe::target::Target;
use anyhow::{anyhow, Context};
use std::sync::Arc;

/// Base64 SHA-256 of the endpoint's leaf SPKI, after verifying its chain.
pub async fn verified_leaf_pin(t: &Target, o: &ClientOpts) -> anyhow::Result<String> {
    let peer = format!("{}:{}", t.host, t.port);
    let tcp = tokio::time::timeout(
        o.timeout,
        tokio::net::TcpStream::connect((t.host.as_str(), t.port)),
    )
    .await
    .map_err(|_| anyhow!("connect {peer}: no answer within {:?}", o.timeout))?
    .with_context(|| format!("connect {peer}"))?;
    let cfg = tls_config(o, &["http/1.1"])?;
    let name = tokio_rustls::rustls::pki_types::ServerName::try_from(t.host.clone())
        .map_err(|_| anyhow!("{}: not a valid TLS server name", t.host))?;
    let tls = tokio::time::timeout(
        o.timeout,
        tokio_rustls::TlsConnector::from(Arc::new(cfg)).connect(name, tcp),
    )
    .await
    .map_err(|_| {
        anyhow!(
            "TLS handshake with {peer}: no answer within {:?}",
            o.timeout
        )
    })?
    .with_context(|| format!("TLS handshake with {peer}"))?;
    let leaf = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .ok_or_else(|| anyhow!("{peer}: no certificate"))?;
    let spki = spki(leaf.as_ref()).ok_or_else(|| anyhow!("{peer}: unreadable certificate"))?;
    let hash = ring::digest::digest(&ring::digest::SHA256, spki);
    use base64::Engine;
    Ok(base64::engine::general_purpose::STANDARD.encode(hash.as_ref()))
}

/// One DER element: its tag, the whole element, its content, and what follows it.
type Element<'a> = (u8, &'a [u8], &'a [u8], &'a [u8]);

/// The DER element at the start of `b`.
fn element(b: &[u8]) -> Option<Element<'_>> {
    let tag = *b.first()?;
    let l0 = *b.get(1)?;
    let (head, len) = if l0 < 0x80 {
        (2, usize::from(l0))
    } else {
        let n = usize::from(l0 & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | usize::from(*b.get(2 + i)?);
        }
        (2 + n, len)
    };
    let end = head.checked_add(len)?;
    (end <= b.len()).then(|| (tag, &b[..end], &b[head..end], &b[end..]))
}

/// The subjectPublicKeyInfo of an X.509 certificate (DER), as a whole element.
pub fn spki(cert: &[u8]) -> Option<&[u8]> {
    const SEQUENCE: u8 = 0x30;
    let (SEQUENCE, _, body, _) = element(cert)? else {
        return None;
    };
    let (SEQUENCE, _, mut tbs, _) = element(body)? else {
        return None;
    };
    if tbs.first() == Some(&0xa0) {
        tbs = element(tbs)?.3; // version [0]
    }
    // serialNumber, signature, issuer, validity, subject
    for _ in 0..5 {
        tbs = element(tbs)?.3;
    }
    let (tag, whole, _, _) = element(tbs)?;
    (tag == SEQUENCE).then_some(whole)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spki_is_the_seventh_field_of_tbs() {
        // SEQ{ SEQ{ [0]{INT 2}, INT 1, SEQ{}, SEQ{}, SEQ{}, SEQ{}, SEQ{BIT STRING} } }
        let spki_el = [0x30, 0x03, 0x03, 0x01, 0x00];
        let mut tbs = vec![0xa0, 0x03, 0x02, 0x01, 0x02, 0x02, 0x01, 0x01];
        tbs.extend([0x30, 0x00].repeat(4));
        tbs.extend(spki_el);
        let mut t = vec![0x30, tbs.len() as u8];
        t.extend(&tbs);
        let mut cert = vec![0x30, t.len() as u8];
        cert.extend(&t);
        assert_eq!(spki(&cert), Some(&spki_el[..]));
        // Truncated or garbage input: None, never a panic.
        for n in 0..cert.len() {
            assert_eq!(spki(&cert[..n]), None);
        }
        assert_eq!(spki(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(spki(&[]), None);
    }
}
