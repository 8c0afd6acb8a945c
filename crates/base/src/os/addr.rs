//! Loopback-only addresses: live traffic (load, soak, failure) goes to 127.0.0.0/8 or ::1.
use anyhow::bail;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// 127.0.0.0/8, ::1, and IPv4-mapped loopback (::ffff:127.x.y.z).
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v| v.is_loopback()),
    }
}

/// Refuse anything that is not loopback.
pub fn ensure_loopback(addr: &SocketAddr) -> anyhow::Result<()> {
    if is_loopback(addr.ip()) {
        Ok(())
    } else {
        bail!("target {addr}: not a loopback address (only 127.0.0.0/8 or ::1)")
    }
}

/// A host as written in a URL or flag: an IP literal (`[::1]` brackets allowed) or the
/// name `localhost` (any case), which is 127.0.0.1. No DNS: other names are `None`.
pub fn parse_host(host: &str) -> Option<IpAddr> {
    if host.eq_ignore_ascii_case("localhost") {
        return Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse().ok()
}

/// `HOST:PORT` (`[V6]:PORT` for IPv6) with the host per [`parse_host`].
pub fn parse_host_port(s: &str) -> Option<SocketAddr> {
    let (host, port) = s.rsplit_once(':')?;
    if host.contains(':') && !host.starts_with('[') {
        return None; // an unbracketed IPv6 address is ambiguous
    }
    let port: u16 = port.parse().ok()?;
    Some(SocketAddr::new(parse_host(host)?, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_127_slash_8_and_v6_one() {
        for ok in ["127.0.0.1", "127.3.4.5", "::1", "::ffff:127.0.0.1"] {
            assert!(is_loopback(ok.parse().unwrap()), "{ok}");
        }
        for bad in [
            "10.0.0.1",
            "128.0.0.1",
            "::",
            "::2",
            "::ffff:8.8.8.8",
            "0.0.0.0",
        ] {
            assert!(!is_loopback(bad.parse().unwrap()), "{bad}");
        }
        let e = ensure_loopback(&"10.0.0.1:80".parse().unwrap()).unwrap_err();
        assert!(e.to_string().contains("not a loopback"), "{e}");
    }

    #[test]
    fn hosts_parse_without_string_replacement() {
        let a = parse_host_port("localhost:80").unwrap();
        assert_eq!(a, "127.0.0.1:80".parse().unwrap());
        assert_eq!(parse_host_port("LocalHost:1").unwrap().port(), 1);
        assert_eq!(
            parse_host_port("[::1]:8080").unwrap(),
            "[::1]:8080".parse().unwrap()
        );
        // A name that merely contains `localhost` is not localhost.
        for bad in [
            "localhost.example.com:80",
            "notlocalhost:80",
            "localhost127.0.0.1:80",
            "::1:80",
            "localhost",
            "127.0.0.1:99999",
            "example.com:80",
        ] {
            assert!(parse_host_port(bad).is_none(), "{bad}");
        }
    }
}
