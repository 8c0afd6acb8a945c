//! Who may use the control endpoints (`/control/*`), and CORS for browser readers.
//! On loopback they answer anyone who can reach the port (the load generator); elsewhere
//! a bearer token is required (given, or generated and written beside --addr-file), or
//! they are refused.
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The control policy in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Loopback, no token configured.
    Open,
    /// `Authorization: Bearer <token>` required.
    Token(String),
    /// Off loopback with no token and nowhere to write one: 403.
    Refused,
}

/// What to do at start (pure: tested without sockets or files).
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    Open,
    Given(String),
    /// Generate a token and write it to this path.
    Generate(PathBuf),
    Refuse,
}

pub fn plan(control_addr: SocketAddr, token: Option<&str>, addr_file: Option<&Path>) -> Plan {
    match (token, addr_file) {
        (Some(t), _) => Plan::Given(t.to_string()),
        _ if control_addr.ip().is_loopback() => Plan::Open,
        (None, Some(f)) => Plan::Generate(token_path(f)),
        (None, None) => Plan::Refuse,
    }
}

/// The configured token: `--control-token`, else `--control-token-file` (its first line),
/// else `RTCHECK_CONTROL_TOKEN`; each checked by `parse_token`. Errors never echo a token.
pub fn token_from(
    flag: Option<&str>,
    file: Option<&Path>,
    env: Option<&str>,
) -> Result<Option<String>, String> {
    let bad = |from: &str, e: String| format!("{from}: {e}");
    if let Some(t) = flag {
        return Ok(Some(t.to_string()));
    }
    if let Some(f) = file {
        let what = format!("--control-token-file {}", f.display());
        let text = rtcheck_base::input::read_bytes(f).map_err(|e| bad(&what, e))?;
        let text = String::from_utf8_lossy(&text);
        let line = text.lines().next().unwrap_or("").trim();
        return parse_token(line).map(Some).map_err(|e| bad(&what, e));
    }
    match env {
        Some(t) if !t.is_empty() => parse_token(t)
            .map(Some)
            .map_err(|e| bad("RTCHECK_CONTROL_TOKEN", e)),
        _ => Ok(None),
    }
}

/// Removes the generated `<addr-file>.token` when serve stops (also on an error return),
/// so no token outlives the server that honours it.
pub struct TokenFile(pub Option<PathBuf>);

impl Drop for TokenFile {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// `<addr-file>.token`.
pub fn token_path(addr_file: &Path) -> PathBuf {
    let mut s = addr_file.as_os_str().to_owned();
    s.push(".token");
    PathBuf::from(s)
}

/// Carry out a plan: a generated token is written (mode 0600) before anyone can connect.
pub fn resolve(plan: Plan) -> anyhow::Result<(Access, Option<PathBuf>)> {
    Ok(match plan {
        Plan::Open => (Access::Open, None),
        Plan::Given(t) => (Access::Token(t), None),
        Plan::Refuse => (Access::Refused, None),
        Plan::Generate(path) => {
            let t = random_token()?;
            let bytes = format!("{t}\n");
            let written = rtcheck_base::outfile::write_private(&path, bytes.as_bytes());
            written.map_err(|e| anyhow::anyhow!("{e:#} (the control token)"))?;
            (Access::Token(t), Some(path))
        }
    })
}

/// The startup line that says who may control the server.
pub fn describe(a: &Access, written: Option<&Path>) -> String {
    match (a, written) {
        (Access::Open, _) => "control: open to loopback clients (no token)".into(),
        (Access::Token(_), Some(p)) => format!(
            "control: token required (Authorization: Bearer), generated and written to {}",
            p.display()
        ),
        (Access::Token(_), None) => {
            "control: token required (Authorization: Bearer) on /control/*, and on /metrics off loopback".into()
        }
        (Access::Refused, _) => "control: /control/* refused off loopback, /metrics too (give --control-token-file or RTCHECK_CONTROL_TOKEN, or --addr-file to have a token written beside it)".into(),
    }
}

/// Whether `path` is under the control policy: `/control/*` always, and `/metrics` when the
/// server listens off loopback (it carries the same counters as /control/stats).
pub fn is_control(path: &str, listen: SocketAddr) -> bool {
    path.starts_with("/control/") || (path == "/metrics" && !listen.ip().is_loopback())
}

/// Check a request's Authorization header: Ok, or the status and message to answer.
pub fn check(a: &Access, authorization: Option<&str>) -> Result<(), (u16, &'static str)> {
    match a {
        Access::Open => Ok(()),
        Access::Refused => Err((
            403,
            "control endpoints are refused off loopback; start serve with --control-token-file or RTCHECK_CONTROL_TOKEN",
        )),
        Access::Token(t) => {
            let given = authorization
                .and_then(|v| v.trim().strip_prefix("Bearer "))
                .map(str::trim)
                .unwrap_or("");
            if eq_const_time(given.as_bytes(), t.as_bytes()) {
                Ok(())
            } else {
                Err((401, "control endpoints need Authorization: Bearer <token>"))
            }
        }
    }
}

/// Compare without an early exit on the first differing byte.
fn eq_const_time(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn random_token() -> anyhow::Result<String> {
    rtcheck_base::os::random::secret_hex(16).map_err(|e| anyhow::anyhow!("getrandom: {e}"))
}

/// Validate a --cors value: `*` or an origin `scheme://host[:port]` (no path, no spaces).
pub fn parse_origin(s: &str) -> Result<String, String> {
    let ok = s == "*"
        || s.split_once("://").is_some_and(|(scheme, host)| {
            !scheme.is_empty()
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                && !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
        });
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "`{s}`: expected `*` or an origin like https://app.example.com:8443 (no path)"
        ))
    }
}

/// The host of a `host[:port]` authority or of an origin `scheme://host[:port]`, lowercased;
/// IPv6 keeps its brackets.
fn host_of(s: &str) -> String {
    let auth = s.split_once("://").map_or(s, |(_, a)| a).trim();
    let host = if auth.starts_with('[') {
        auth.split_inclusive(']').next().unwrap_or(auth)
    } else {
        auth.rsplit_once(':').map_or(auth, |(h, _)| h)
    };
    host.to_ascii_lowercase()
}

/// May a WebSocket handshake with this `Origin` proceed? Browsers always send Origin and a
/// page on another site must not open a socket with the user's cookies (cross-site
/// WebSocket hijacking). Allowed: no Origin (not a browser), `--cors *`, the `--cors`
/// origin itself, or a page on the same host as the `Host` it asked for (any port: a dev
/// page on :3000 talking to :8080; a proxy that rewrites Host needs `--cors`).
pub fn origin_allowed(origin: Option<&str>, host: Option<&str>, cors: Option<&str>) -> bool {
    let Some(origin) = origin.map(str::trim) else {
        return true;
    };
    match cors {
        Some("*") => return true,
        Some(c) if c.eq_ignore_ascii_case(origin) => return true,
        _ => {}
    }
    origin != "null" && host.is_some_and(|h| host_of(h) == host_of(origin))
}

/// Validate a `--public-host` value: a host name or IP literal (`[v6]` in brackets), an
/// optional `:port` ignored; stored lowercased without the port.
pub fn parse_public_host(s: &str) -> Result<String, String> {
    let h = host_of(s);
    let name = h.trim_start_matches('[').trim_end_matches(']');
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:_".contains(&b));
    if ok && !s.contains("://") && !s.contains('/') {
        Ok(h)
    } else {
        Err(format!(
            "`{s}`: expected a host name such as rt.example.com (no scheme, no path)"
        ))
    }
}

/// May a request naming `host` in its `Host` header be served? The defence against DNS
/// rebinding, where a page on the attacker's name (resolved to 127.0.0.1 a moment later)
/// reaches a loopback service as if same-site. A connection that arrived on a loopback
/// address must name the server by a loopback name: `localhost` (or `*.localhost`, which
/// browsers resolve to loopback themselves), a loopback IP, the address it connected to,
/// or a `--public-host`. Off loopback any Host is served unless `--public-host` is given
/// (then the same list, the connection's own address included). Ports are not compared: a
/// proxy on another port forwards its own Host. No Host (HTTP/1.0): not a browser.
pub fn host_allowed(host: Option<&str>, local: SocketAddr, public: &[String]) -> bool {
    let Some(host) = host else {
        return true;
    };
    if !rtcheck_base::os::addr::is_loopback(local.ip()) && public.is_empty() {
        return true;
    }
    let h = host_of(host);
    let bare = h.trim_start_matches('[').trim_end_matches(']');
    let ip_ok = bare
        .parse::<std::net::IpAddr>()
        .is_ok_and(|ip| rtcheck_base::os::addr::is_loopback(ip) || ip == local.ip());
    ip_ok || h == "localhost" || h.ends_with(".localhost") || public.contains(&h)
}

/// May a `/control/*` request with this `Origin` proceed? A browser sends Origin on every
/// POST, even `no-cors`, so a page of another site could start or steer the run; only the
/// server's own origin (`http://` + the Host asked for) is accepted. No Origin: not a
/// browser (rtcheck's own clients, curl).
pub fn control_origin_ok(origin: Option<&str>, host: Option<&str>) -> bool {
    match (origin.map(str::trim), host.map(str::trim)) {
        (None, _) => true,
        (Some(o), Some(h)) => o.eq_ignore_ascii_case(&format!("http://{h}")),
        (Some(_), None) => false,
    }
}

/// Paths that send CORS headers when --cors is given.
pub const CORS_PATHS: [&str; 3] = ["/sse", "/poll", "/metrics"];

/// CORS response headers for `path`, if any.
pub fn cors_headers<'a>(origin: Option<&'a str>, path: &str) -> Vec<(&'static str, &'a str)> {
    match origin {
        Some(o) if CORS_PATHS.contains(&path) => {
            let mut h = vec![("Access-Control-Allow-Origin", o)];
            if o != "*" {
                h.push(("Vary", "Origin"));
            }
            h
        }
        _ => Vec::new(),
    }
}

/// A bearer token: 8 to 256 characters that are safe in a header (token68, RFC 9110 11.2).
pub fn parse_token(s: &str) -> Result<String, String> {
    let ok = (8..=256).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b));
    if ok {
        Ok(s.to_string())
    } else {
        Err("expected 8-256 characters of A-Z a-z 0-9 - . _ ~ + / =".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_is_open_elsewhere_a_token_or_refusal() {
        let f = Path::new("/tmp/a");
        assert_eq!(plan(addr("127.0.0.1:1"), None, Some(f)), Plan::Open);
        assert_eq!(plan(addr("[::1]:1"), None, None), Plan::Open);
        assert_eq!(
            plan(addr("127.0.0.1:1"), Some("t"), None),
            Plan::Given("t".into())
        );
        assert_eq!(
            plan(addr("0.0.0.0:1"), None, Some(f)),
            Plan::Generate(PathBuf::from("/tmp/a.token"))
        );
        assert_eq!(plan(addr("10.1.2.3:1"), None, None), Plan::Refuse);
        assert_eq!(
            plan(addr("0.0.0.0:1"), Some("t"), None),
            Plan::Given("t".into())
        );
    }

    #[test]
    fn bearer_token_check() {
        let a = Access::Token("abc".into());
        assert_eq!(check(&a, Some("Bearer abc")), Ok(()));
        assert_eq!(check(&a, Some("Bearer abd")).unwrap_err().0, 401);
        assert_eq!(check(&a, Some("abc")).unwrap_err().0, 401);
        assert_eq!(check(&a, None).unwrap_err().0, 401);
        assert_eq!(check(&Access::Open, None), Ok(()));
        assert_eq!(
            check(&Access::Refused, Some("Bearer x")).unwrap_err().0,
            403
        );
    }

    #[test]
    fn generated_token_is_private_and_never_replaces_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("addr.token");
        let (a, written) = resolve(Plan::Generate(p.clone())).unwrap();
        let Access::Token(t) = a else { panic!() };
        assert_eq!(t.len(), 32);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), format!("{t}\n"));
        assert_eq!(written.as_deref(), Some(p.as_path()));
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let link = d.path().join("link.token");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let e = resolve(Plan::Generate(link)).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }

    #[test]
    fn websocket_origins_allowed() {
        let h = Some("127.0.0.1:8080");
        assert!(origin_allowed(None, h, None), "no Origin: not a browser");
        assert!(origin_allowed(Some("http://127.0.0.1:3000"), h, None));
        assert!(origin_allowed(
            Some("https://APP.example.com"),
            Some("app.example.com"),
            None
        ));
        assert!(origin_allowed(
            Some("http://[::1]:5"),
            Some("[::1]:8080"),
            None
        ));
        assert!(!origin_allowed(Some("https://evil.example"), h, None));
        assert!(
            !origin_allowed(Some("null"), h, None),
            "sandboxed pages send null"
        );
        assert!(!origin_allowed(Some("http://127.0.0.1:3000"), None, None));
        assert!(origin_allowed(Some("https://evil.example"), h, Some("*")));
        assert!(origin_allowed(
            Some("https://a.com"),
            h,
            Some("https://a.com")
        ));
        assert!(!origin_allowed(
            Some("https://b.com"),
            h,
            Some("https://a.com")
        ));
    }

    #[test]
    fn cors_origins_and_headers() {
        assert!(parse_origin("*").is_ok());
        assert!(parse_origin("https://app.example.com:8443").is_ok());
        assert!(parse_origin("http://[::1]:3000").is_ok());
        assert!(parse_origin("https://a.com/path").is_err());
        assert!(parse_origin("https://a.com\r\nX: y").is_err());
        assert!(parse_origin("a.com").is_err());
        let h = cors_headers(Some("https://a.com"), "/sse");
        assert_eq!(
            h,
            vec![
                ("Access-Control-Allow-Origin", "https://a.com"),
                ("Vary", "Origin")
            ]
        );
        assert!(cors_headers(Some("*"), "/control/stats").is_empty());
        assert!(cors_headers(None, "/poll").is_empty());
    }
    #[test]
    fn host_names_on_loopback_are_loopback_names_or_public_hosts() {
        let lo = addr("127.0.0.1:8080");
        let none: &[String] = &[];
        for ok in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "127.9.9.9:1",
            "[::1]:8080",
            "localhost:8080",
            "LOCALHOST",
            "app.localhost:3000",
        ] {
            assert!(host_allowed(Some(ok), lo, none), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "10.0.0.1",
            "x",
            "localhost.evil.example",
        ] {
            assert!(!host_allowed(Some(bad), lo, none), "{bad}");
        }
        assert!(host_allowed(None, lo, none), "HTTP/1.0 without Host");
        let public = vec![parse_public_host("RT.example.com:443").unwrap()];
        assert_eq!(public, ["rt.example.com"]);
        assert!(host_allowed(Some("rt.example.com:8080"), lo, &public));
        assert!(!host_allowed(Some("evil.example"), lo, &public));
        // Off loopback: anything, unless --public-host names the server.
        let lan = addr("192.168.1.5:8080");
        assert!(host_allowed(Some("evil.example"), lan, none));
        assert!(!host_allowed(Some("evil.example"), lan, &public));
        assert!(host_allowed(Some("192.168.1.5:8080"), lan, &public));
        assert!(host_allowed(Some("rt.example.com"), lan, &public));
        for bad in ["http://a.com", "a.com/x", "", "a b"] {
            assert!(parse_public_host(bad).is_err(), "{bad}");
        }
    }
    #[test]
    fn control_refuses_every_origin_but_its_own() {
        let h = Some("127.0.0.1:8080");
        assert!(control_origin_ok(None, h));
        assert!(control_origin_ok(Some("http://127.0.0.1:8080"), h));
        assert!(!control_origin_ok(Some("https://evil.example"), h));
        assert!(!control_origin_ok(Some("http://127.0.0.1:3000"), h));
        assert!(!control_origin_ok(Some("null"), h));
        assert!(!control_origin_ok(Some("http://x"), None));
    }
}
