//! Probe targets: a small URL parser (ws, wss, http, https) and the redacted form that is
//! the only way a URL is ever printed (query values and user info may carry secrets).
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Ws,
    Wss,
    Http,
    Https,
}

impl Scheme {
    pub fn tls(self) -> bool {
        matches!(self, Scheme::Wss | Scheme::Https)
    }
    pub fn websocket(self) -> bool {
        matches!(self, Scheme::Ws | Scheme::Wss)
    }
    fn default_port(self) -> u16 {
        if self.tls() {
            443
        } else {
            80
        }
    }
    fn as_str(self) -> &'static str {
        match self {
            Scheme::Ws => "ws",
            Scheme::Wss => "wss",
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub scheme: Scheme,
    /// Host as written, without IPv6 brackets.
    pub host: String,
    pub port: u16,
    /// Path and query sent on the request line (secrets included: never print it).
    pub path_and_query: String,
}

impl Target {
    pub fn parse(s: &str) -> Result<Target, String> {
        let (scheme, rest) = s
            .split_once("://")
            .ok_or_else(|| "URL needs a scheme (ws://, wss://, http://, https://)".to_string())?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "ws" => Scheme::Ws,
            "wss" => Scheme::Wss,
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => {
                return Err(format!(
                    "unsupported scheme `{other}` (use ws, wss, http, https)"
                ))
            }
        };
        let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(split);
        let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let (host, port) = split_host_port(hostport)?;
        if host.is_empty() {
            return Err("URL has no host".into());
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("bad port `{p}`"))?,
            None => scheme.default_port(),
        };
        let tail = tail.split('#').next().unwrap_or("");
        let path_and_query = if tail.starts_with('/') {
            tail.to_string()
        } else {
            format!("/{tail}")
        };
        if path_and_query.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err("URL contains spaces or control characters".into());
        }
        Ok(Target {
            scheme,
            host: host.to_string(),
            port,
            path_and_query,
        })
    }

    /// `Host` header value.
    pub fn host_header(&self) -> String {
        let h = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == self.scheme.default_port() {
            h
        } else {
            format!("{h}:{}", self.port)
        }
    }

    /// The same endpoint under another scheme (e.g. the WebSocket twin of an http URL).
    pub fn with_scheme(&self, scheme: Scheme) -> Target {
        Target {
            scheme,
            ..self.clone()
        }
    }

    /// Loopback: clocks are shared, so a payload timestamp gives an exact delay.
    pub fn is_loopback(&self) -> bool {
        rtcheck_base::os::addr::parse_host(&self.host)
            .is_some_and(rtcheck_base::os::addr::is_loopback)
    }
}

fn split_host_port(hp: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(rest) = hp.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| "unclosed `[` in IPv6 host".to_string())?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((host, Some(p))),
            None if after.is_empty() => Ok((host, None)),
            None => Err(format!("unexpected `{after}` after IPv6 host")),
        };
    }
    Ok(match hp.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (hp, None),
    })
}

/// Printed form: path parameters and secret-looking query values replaced by `***`, no user info, no
/// fragment (`rtcheck_base::redact`).
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme.as_str(), self.host_header())?;
        f.write_str(&rtcheck_base::redact::path_and_query(&self.path_and_query))
    }
}

/// A `--header 'Name: value'` flag.
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once(':')
        .ok_or_else(|| "--header needs `Name: value`".to_string())?;
    let name = name.trim();
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_!#$%&'*+.^`|~".contains(&b));
    if !valid {
        // The name only: the value may be a secret.
        return Err(format!("--header: invalid header name `{name}`"));
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(format!("--header {name}: value contains a line break"));
    }
    Ok((name.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_schemes_ports_ipv6_and_redacts() {
        let t = Target::parse("wss://u:pw@example.com/ws?token=abc&x=1#f").unwrap();
        assert_eq!(t.scheme, Scheme::Wss);
        assert_eq!(t.port, 443);
        assert_eq!(t.path_and_query, "/ws?token=abc&x=1");
        let shown = t.to_string();
        assert_eq!(shown, "wss://example.com/ws?token=***&x=1");
        assert!(!shown.contains("abc") && !shown.contains("pw"));
        let t = Target::parse("http://[::1]:8080").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 8080));
        assert_eq!(t.path_and_query, "/");
        assert!(t.is_loopback());
        assert_eq!(t.host_header(), "[::1]:8080");
        for bad in [
            "ftp://x",
            "x",
            "http://:80/",
            "http://h:0",
            "http://h:99999",
            "http://h/a b",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn header_flags() {
        assert_eq!(
            parse_header("Authorization: Bearer s3cret").unwrap(),
            ("Authorization".into(), "Bearer s3cret".into())
        );
        let e = parse_header("Bad Name: s3cret").unwrap_err();
        assert!(!e.contains("s3cret"));
        assert!(parse_header("X: a\r\nInjected: 1").is_err());
        assert!(parse_header("novalue").is_err());
    }
}
