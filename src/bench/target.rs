//! A bench target URL (`ws://`, `wss://`, `tcp://`, `http://`, `https://`): what the load
//! generator connects to and where the publisher POSTs. Below both, so neither imports
//! the other for it. Sockets go to loopback only: the URL's host, or `--connect-to
//! ADDR:PORT` (a tunnel or the proxy on this host) while the URL keeps the real name for
//! TLS (SNI, the certificate) and the Host header.
use crate::sys::tls::Tls;
use std::net::SocketAddr;

/// The transport a target URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Ws,
    Raw,
    Sse,
}

/// A parsed, checked target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub proto: Proto,
    /// wss:// or https://.
    pub tls: bool,
    /// The URL's host as written (`[::1]` keeps its brackets): TLS server name.
    pub host: String,
    /// The Host header: host, and the port when the URL gives one.
    pub authority: String,
    /// Where every socket goes (loopback).
    pub addr: SocketAddr,
    /// Path and query.
    pub path: String,
}

/// The scheme, its transport and TLS, and the port it implies.
fn scheme(url: &str) -> Option<(Proto, bool, u16, &str)> {
    [
        ("ws://", Proto::Ws, false, 80),
        ("wss://", Proto::Ws, true, 443),
        ("tcp://", Proto::Raw, false, 0),
        ("http://", Proto::Sse, false, 80),
        ("https://", Proto::Sse, true, 443),
    ]
    .into_iter()
    .find_map(|(p, proto, tls, port)| url.strip_prefix(p).map(|r| (proto, tls, port, r)))
}

/// `host[:port]` of a URL: the host as written and the port if given; None when the host
/// is not an IP literal or a plain DNS name.
fn split_authority(a: &str) -> Option<(&str, Option<&str>)> {
    let (host, port) = if a.starts_with('[') {
        let end = a.find(']')?;
        let (h, rest) = a.split_at(end + 1);
        match rest {
            "" => (h, None),
            r => (h, Some(r.strip_prefix(':')?)),
        }
    } else {
        match a.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    let name_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
    let ip_ok = rtcheck_base::os::addr::parse_host(host).is_some();
    (name_ok || ip_ok).then_some((host, port))
}

/// A target URL's form, before it is known where its sockets go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub proto: Proto,
    /// wss:// or https://.
    pub tls: bool,
    /// The host as written (`[::1]` keeps its brackets).
    pub host: String,
    /// The port the URL names, if it names one.
    pub port: Option<u16>,
    /// The port its scheme implies (0: tcp://, none).
    default_port: u16,
    /// The Host header: host, and the port when the URL gives one.
    pub authority: String,
    /// Path and query.
    pub path: String,
    /// The URL as messages show it (redacted).
    pub shown: String,
}

/// Parse a target URL's form: scheme, host, port, path. Pure: where the sockets go (and
/// the loopback check) is [`Url::resolve`]'s.
pub fn parse_url(url: &str) -> anyhow::Result<Url> {
    let shown = || rtcheck_base::redact::url(url);
    let (proto, tls, default_port, rest) = scheme(url).ok_or_else(|| {
        anyhow::anyhow!(
            "{}: expected ws://, wss://, http:// or https:// (SSE), or tcp://HOST:PORT/PATH",
            shown()
        )
    })?;
    let (auth, path) = match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('?') => (&rest[..i], format!("/{}", &rest[i..])),
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    // Credentials would be dropped silently (no part of the socket nor of the Host
    // header): refused, never shown.
    if auth.contains('@') {
        anyhow::bail!(
            "{}: user:password@ in the URL is not sent; remove it (a token goes in -H or the query)",
            shown()
        );
    }
    let (host, port) = split_authority(auth)
        .ok_or_else(|| anyhow::anyhow!("{}: not a host name or IP address", shown()))?;
    let port = port
        .map(|p| {
            p.parse::<u16>()
                .map_err(|_| anyhow::anyhow!("{}: {p:?} is not a port", shown()))
        })
        .transpose()?;
    if port == Some(0) {
        anyhow::bail!("{}: port 0 is not a server address", shown());
    }
    // The Host header as the URL wrote it: with the port only when it names one.
    let authority = match port {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    };
    Ok(Url {
        proto,
        tls,
        host: host.to_string(),
        port,
        default_port,
        authority,
        path,
        shown: shown(),
    })
}

impl Url {
    /// Where its sockets go: `connect_to` when given (loopback, checked by
    /// [`parse_connect_to`]), else the URL's host, which must be loopback. A plain URL on
    /// loopback names its port; TLS and `--connect-to` imply the scheme's.
    pub fn resolve(self, connect_to: Option<SocketAddr>) -> anyhow::Result<Target> {
        let shown = || self.shown.clone();
        let port = match self.port {
            Some(p) => p,
            None if (self.tls || connect_to.is_some()) && self.default_port != 0 => {
                self.default_port
            }
            None => anyhow::bail!(
                "{}: host must be a loopback IP with a port, e.g. ws://127.0.0.1:8080/ws \
                 (another host: run rtcheck there, or forward a port, ssh -L 8080:127.0.0.1:PORT HOST)",
                shown()
            ),
        };
        let addr = match connect_to {
            Some(a) => a,
            None => {
                loopback_host(&self.host, port).map_err(|e| anyhow::anyhow!("{}: {e}", shown()))?
            }
        };
        Ok(Target {
            proto: self.proto,
            tls: self.tls,
            host: self.host,
            authority: self.authority,
            addr,
            path: self.path,
        })
    }
}

/// Parse and check a target URL ([`parse_url`]) and where its sockets go
/// ([`Url::resolve`]).
pub fn parse(url: &str, connect_to: Option<SocketAddr>) -> anyhow::Result<Target> {
    parse_url(url)?.resolve(connect_to)
}

impl Target {
    /// The TLS side (wss://, https://), set up once: `trust`'s roots, the URL's host.
    pub fn tls(&self, trust: &crate::sys::tls::Trust) -> anyhow::Result<Option<Tls>> {
        self.tls
            .then(|| Tls::new(trust, &self.host, &["http/1.1"]))
            .transpose()
    }
}

/// The URL's own host as the socket address: an IP literal or `localhost`, on loopback.
fn loopback_host(host: &str, port: u16) -> Result<SocketAddr, String> {
    let tunnel = format!(
        "to reach it through your proxy, forward a port (ssh -L 8443:PROXY:{port} HOST) and \
         add --connect-to 127.0.0.1:8443; the URL keeps the name for TLS and Host"
    );
    let ip = rtcheck_base::os::addr::parse_host(host).ok_or_else(|| {
        format!("{host} is not a loopback IP or localhost; live traffic goes only to 127.0.0.0/8 or ::1 ({tunnel})")
    })?;
    if !rtcheck_base::os::addr::is_loopback(ip) {
        return Err(format!(
            "{ip} is not a loopback address; live traffic goes only to 127.0.0.0/8 or ::1 ({tunnel})"
        ));
    }
    Ok(SocketAddr::new(ip, port))
}

/// `--allow-remote` (issue 37): where the sockets of `url` go. `--connect-to` wins; a
/// loopback host needs nothing (None: [`Url::resolve`] takes it); any other host is
/// refused without consent, else resolved once (the URL keeps its name for TLS and Host).
/// Some(addr) then goes everywhere `--connect-to` would.
pub fn remote_addr(
    url: &str,
    connect_to: Option<SocketAddr>,
    allow_remote: bool,
) -> anyhow::Result<Option<SocketAddr>> {
    if connect_to.is_some() {
        return Ok(connect_to);
    }
    let u = parse_url(url)?;
    let ip = rtcheck_base::os::addr::parse_host(&u.host);
    if ip.is_some_and(rtcheck_base::os::addr::is_loopback) {
        return Ok(None);
    }
    let port = match (u.port, u.default_port) {
        (Some(p), _) => p,
        (None, 0) => anyhow::bail!("{}: tcp:// needs a port", u.shown),
        (None, p) => p,
    };
    if !allow_remote {
        let refused = match ip {
            Some(_) => crate::load::client::not_loopback(&u.shown, &u.host),
            None => format!(
                "{}: {} is not a loopback IP or localhost; pass --allow-remote to send this traffic to another host",
                u.shown, u.host
            ),
        };
        anyhow::bail!(
            "{refused}, or forward a port (ssh -L 8443:{}:{port} HOST) and add --connect-to 127.0.0.1:8443",
            u.host
        );
    }
    if let Some(ip) = ip {
        return Ok(Some(SocketAddr::new(ip, port)));
    }
    use std::net::ToSocketAddrs;
    let mut all = (u.host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("{}: cannot resolve {}: {e}", u.shown, u.host))?;
    let addr = all
        .next()
        .ok_or_else(|| anyhow::anyhow!("{}: {} has no address", u.shown, u.host))?;
    Ok(Some(addr))
}

/// Most local addresses `--source-ip` may list (a range included).
pub const MAX_SOURCES: usize = 1024;

/// Local source addresses as users write them: `--source-ip A[,B...]`, each an IP or an
/// IPv4 range `10.0.0.1-10.0.0.20` (issue 37). Each connection binds one, round-robin,
/// so each address brings its own ephemeral port range.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sources(pub Vec<std::net::IpAddr>);

impl Sources {
    pub fn parse(s: &str) -> Result<Sources, String> {
        use std::net::{IpAddr, Ipv4Addr};
        let mut v: Vec<IpAddr> = Vec::new();
        for item in s.split(',').map(str::trim) {
            let one = |x: &str| -> Result<IpAddr, String> {
                x.trim()
                    .parse()
                    .map_err(|_| format!("{x}: not an IP address (--source-ip A[,B...] or A-B)"))
            };
            match item.split_once('-') {
                Some((a, b)) => {
                    let (IpAddr::V4(a), IpAddr::V4(b)) = (one(a)?, one(b)?) else {
                        return Err(format!(
                            "{item}: a range is IPv4 (A-B); list IPv6 addresses"
                        ));
                    };
                    let (a, b) = (u32::from(a), u32::from(b));
                    if b < a || (b - a) as usize >= MAX_SOURCES {
                        return Err(format!(
                            "{item}: a range runs low to high, at most {MAX_SOURCES} addresses"
                        ));
                    }
                    v.extend((a..=b).map(|x| IpAddr::V4(Ipv4Addr::from(x))));
                }
                None => v.push(one(item)?),
            }
            if v.len() > MAX_SOURCES {
                return Err(format!("{s}: more than {MAX_SOURCES} source addresses"));
            }
        }
        let unusable = |ip: &IpAddr| {
            ip.is_unspecified()
                || ip.is_multicast()
                || matches!(ip, IpAddr::V4(v4) if v4.is_broadcast())
        };
        if let Some(ip) = v.iter().find(|ip| unusable(ip)) {
            return Err(format!(
                "{s}: {ip} is not a usable source address (unspecified, multicast or broadcast; give addresses of this host)"
            ));
        }
        Ok(Sources(v))
    }

    /// As the load generator's flag takes it back.
    pub fn arg(&self) -> String {
        let v: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        v.join(",")
    }
}

/// Whether two URLs name the same host and port (the scheme's port when none is given):
/// with `--allow-remote` a POST target must share the server's resolved address.
pub fn same_host_port(a: &Url, b: &Url) -> bool {
    a.host.eq_ignore_ascii_case(&b.host)
        && a.port.unwrap_or(a.default_port) == b.port.unwrap_or(b.default_port)
}

/// `--connect-to ADDR:PORT`: a loopback IP (or localhost) and a port.
pub fn parse_connect_to(s: &str) -> Result<SocketAddr, String> {
    let a = rtcheck_base::os::addr::parse_host_port(s.trim()).ok_or_else(|| {
        format!("{s}: expected ADDR:PORT with a loopback IP, e.g. 127.0.0.1:8443 or [::1]:8443")
    })?;
    if !rtcheck_base::os::addr::is_loopback(a.ip()) {
        return Err(format!(
            "{a}: not a loopback address; live traffic goes only to 127.0.0.0/8 or ::1 \
             (forward a port to the proxy, ssh -L 8443:PROXY:443 HOST, then --connect-to 127.0.0.1:8443)"
        ));
    }
    if a.port() == 0 {
        return Err(format!("{a}: port 0 is not a server address"));
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Transport, socket address, path (no --connect-to).
    fn parse_target(url: &str) -> anyhow::Result<(Proto, SocketAddr, String)> {
        parse(url, None).map(|t| (t.proto, t.addr, t.path))
    }

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
            "wss://example.com/",
            "ws://127.0.0.1/ws",
            "ws://127.0.0.1:0/ws",
            "ws://localhost.example.com:80/",
            "ws://notlocalhost:80/",
            "ws://[::ffff:10.0.0.1]:80/",
            "ftp://127.0.0.1:21/",
            "ws://127.0.0.1:http/",
            "ws://bad host:80/",
        ] {
            assert!(parse_target(bad).is_err(), "{bad}");
        }
        let e = parse_target("wss://staging.example.com/ws").unwrap_err();
        assert!(e.to_string().contains("--connect-to 127.0.0.1:"), "{e}");
    }

    #[test]
    fn tls_schemes_default_to_443_and_keep_the_name() {
        let t = parse("wss://127.0.0.1/ws", None).unwrap();
        assert_eq!((t.proto, t.tls, t.addr.port()), (Proto::Ws, true, 443));
        let t = parse("https://localhost:8443/events?x=1", None).unwrap();
        assert_eq!((t.proto, t.tls, t.addr.port()), (Proto::Sse, true, 8443));
        assert_eq!(
            (t.authority.as_str(), t.path.as_str()),
            ("localhost:8443", "/events?x=1")
        );
        let to: SocketAddr = "127.0.0.1:9443".parse().unwrap();
        let t = parse("wss://hub.test/ws", Some(to)).unwrap();
        assert_eq!(
            (t.host.as_str(), t.authority.as_str()),
            ("hub.test", "hub.test")
        );
        assert_eq!(t.addr, to);
        let t = parse("wss://hub.test:8443", Some(to)).unwrap();
        assert_eq!(
            (t.authority.as_str(), t.path.as_str()),
            ("hub.test:8443", "/")
        );
        // Credentials in the URL would be dropped: refused, the password never shown.
        let e = format!(
            "{:#}",
            parse("ws://u:s3cret@127.0.0.1:8080/", None).unwrap_err()
        );
        assert!(e.contains("user:password@") && !e.contains("s3cret"), "{e}");
        let t = parse("ws://staging.example.com/ws", Some(to)).unwrap();
        assert_eq!(
            (t.tls, t.authority.as_str()),
            (false, "staging.example.com")
        );
        let t = parse("https://[::1]/sse", None).unwrap();
        assert!(t.addr.is_ipv6() && t.addr.port() == 443 && t.host == "[::1]");
        let t = parse("wss://[2001:db8::1]:8443/ws", Some(to)).unwrap();
        assert_eq!(t.authority, "[2001:db8::1]:8443");
        assert!(parse("tcps://127.0.0.1:1/", None).is_err());
    }

    #[test]
    fn a_remote_host_needs_consent_and_keeps_its_name() {
        // Loopback: nothing to resolve; --connect-to wins over the URL.
        assert_eq!(
            remote_addr("ws://127.0.0.1:80/ws", None, false).unwrap(),
            None
        );
        let to: SocketAddr = "127.0.0.1:9443".parse().unwrap();
        assert_eq!(
            remote_addr("wss://10.0.0.1/ws", Some(to), false).unwrap(),
            Some(to)
        );
        let e = remote_addr("ws://10.0.0.1:80/ws?token=s3cret", None, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--allow-remote") && !e.contains("s3cret"), "{e}");
        let a = remote_addr("wss://10.0.0.1/ws", None, true)
            .unwrap()
            .unwrap();
        assert_eq!(a, "10.0.0.1:443".parse().unwrap());
        let a = remote_addr("http://[2001:db8::1]:8080/sse", None, true)
            .unwrap()
            .unwrap();
        assert_eq!(a.port(), 8080);
        // The resolved address goes where --connect-to would: the URL keeps its name.
        let t = parse("wss://10.0.0.1/ws", Some(a)).unwrap();
        assert_eq!(t.host, "10.0.0.1");
        assert!(remote_addr("tcp://10.0.0.1/", None, true).is_err());
    }

    #[test]
    fn source_addresses_are_lists_and_ranges() {
        let s = Sources::parse("10.0.0.1, 10.0.0.5-10.0.0.7,::1").unwrap();
        assert_eq!(s.0.len(), 5);
        assert_eq!(s.arg(), "10.0.0.1,10.0.0.5,10.0.0.6,10.0.0.7,::1");
        for bad in [
            "10.0.0.9-10.0.0.1",
            "x",
            "0.0.0.0",
            "10.0.0.0-10.0.255.255",
            "::1-::2",
        ] {
            assert!(Sources::parse(bad).is_err(), "{bad}");
        }
        for bad in ["0.0.0.0", "10.0.0.1,224.0.0.1", "255.255.255.255", "::"] {
            let e = Sources::parse(bad).unwrap_err();
            assert!(e.contains("not a usable source address"), "{e}");
        }
    }

    #[test]
    fn connect_to_is_loopback_with_a_port() {
        assert_eq!(parse_connect_to("127.0.0.1:8443").unwrap().port(), 8443);
        assert!(parse_connect_to("[::1]:443").unwrap().is_ipv6());
        assert!(parse_connect_to("localhost:443").is_ok());
        for bad in [
            "10.0.0.5:443",
            "staging.example.com:443",
            "127.0.0.1",
            "127.0.0.1:0",
            "[::2]:443",
        ] {
            assert!(parse_connect_to(bad).is_err(), "{bad}");
        }
        let e = parse_connect_to("10.0.0.5:443").unwrap_err();
        assert!(e.contains("not a loopback") && e.contains("ssh -L"), "{e}");
    }
}
