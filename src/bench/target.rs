//! A bench target URL (`ws://`, `tcp://`, `http://` on loopback): what the load
//! generator connects to and where the publisher POSTs. Below both, so neither imports
//! the other for it.
use std::net::SocketAddr;

/// The transport a target URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Ws,
    Raw,
    Sse,
}

/// Parse and check a target URL: scheme, loopback host, port, path.
pub fn parse_target(url: &str) -> anyhow::Result<(Proto, SocketAddr, String)> {
    let (proto, rest) = if let Some(r) = url.strip_prefix("ws://") {
        (Proto::Ws, r)
    } else if let Some(r) = url.strip_prefix("tcp://") {
        (Proto::Raw, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (Proto::Sse, r)
    } else {
        anyhow::bail!(
            "{}: expected ws://, http:// (SSE) or tcp://HOST:PORT/PATH; no TLS (wss, https): \
             point it at the plain port your TLS proxy forwards to",
            rtcheck_base::redact::url(url)
        );
    };
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    // One loopback check for the whole crate: an IP literal or the name `localhost`.
    let addr = rtcheck_base::os::addr::parse_host_port(hostport).ok_or_else(|| {
        anyhow::anyhow!(
            "{}: host must be a loopback IP with a port, e.g. ws://127.0.0.1:8080/ws \
             (another host: run rtcheck there, or forward a port, ssh -L 8080:127.0.0.1:PORT HOST)",
            rtcheck_base::redact::url(url)
        )
    })?;
    if !rtcheck_base::os::addr::is_loopback(addr.ip()) {
        anyhow::bail!(
            "{}: {} is not a loopback address; live traffic goes only to 127.0.0.0/8 or ::1 \
             (run rtcheck on that host, or forward a port, ssh -L 8080:127.0.0.1:PORT HOST)",
            rtcheck_base::redact::url(url),
            addr.ip()
        );
    }
    if addr.port() == 0 {
        anyhow::bail!(
            "{}: port 0 is not a server address",
            rtcheck_base::redact::url(url)
        );
    }
    Ok((proto, addr, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_must_be_loopback() {
        let (p, a, path) = parse_target("ws://127.0.0.1:8080/ws").unwrap();
        assert_eq!((p, a.port(), path.as_str()), (Proto::Ws, 8080, "/ws"));
        let (p, _, _) = parse_target("tcp://127.0.0.2:9").unwrap();
        assert_eq!(p, Proto::Raw);
        let (p, a, _) = parse_target("ws://[::1]:80/x").unwrap();
        assert!(a.is_ipv6() && p == Proto::Ws);
        assert!(parse_target("ws://localhost:80/").is_ok());
        let (_, a, _) = parse_target("ws://[::ffff:127.0.0.1]:80/").unwrap();
        assert_eq!(a.port(), 80);
        for bad in [
            "ws://10.0.0.1:80/ws",
            "ws://example.com:80/",
            "wss://127.0.0.1:443/",
            "ws://127.0.0.1/ws",
            "ws://127.0.0.1:0/ws",
            "ws://localhost.example.com:80/",
            "ws://notlocalhost:80/",
            "ws://[::ffff:10.0.0.1]:80/",
        ] {
            assert!(parse_target(bad).is_err(), "{bad}");
        }
    }
}
