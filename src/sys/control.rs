//! The embedded server's control plane (`/control/stats`, `/control/start`) over a minimal
//! HTTP/1.1 client: one request per connection, loopback only, bounded in time (one overall
//! deadline) and size (a body cap); errors name the peer.
use rtcheck_wire::http::response::{self, Limits};
use rtcheck_wire::stats::ServerStats;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Whole-request time budget: a peer that drips one byte at a time cannot stretch it.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Largest body accepted (stats are a few KB); the head gets a further 16 KiB.
pub const MAX_BODY: usize = 1 << 20;
const MAX_HEAD: usize = 16 << 10;
const LIMITS: Limits = Limits {
    max_head: MAX_HEAD,
    max_headers: 64,
};

/// The one non-loopback server the user consented to (`bench fanout --allow-remote`:
/// a remote `rtcheck serve`, token from RTCHECK_CONTROL_TOKEN). Set once per process.
static CONSENTED: std::sync::OnceLock<SocketAddr> = std::sync::OnceLock::new();

/// Record `--allow-remote`'s consent to `addr` (first call wins).
pub fn consent_remote(addr: SocketAddr) {
    let _ = CONSENTED.set(addr);
}

pub fn request(addr: SocketAddr, method: &str, path: &str) -> anyhow::Result<(u16, String)> {
    request_within(addr, method, path, REQUEST_DEADLINE, MAX_BODY)
}

/// One request with one overall deadline (checked between reads, each read bounded by
/// what is left) and a body cap. Errors name the peer.
pub fn request_within(
    addr: SocketAddr,
    method: &str,
    path: &str,
    deadline: Duration,
    max_body: usize,
) -> anyhow::Result<(u16, String)> {
    let peer = format!("{addr}{path}");
    if CONSENTED.get() != Some(&addr) {
        rtcheck_base::os::addr::ensure_loopback(&addr)?;
    }
    let t0 = Instant::now();
    let left = || deadline.checked_sub(t0.elapsed()).filter(|d| !d.is_zero());
    let too_slow = || {
        anyhow::anyhow!(
            "{peer}: no complete response within {}",
            rtcheck_base::units::fmt_duration(deadline)
        )
    };
    let mut s = TcpStream::connect_timeout(&addr, deadline.min(Duration::from_secs(2)))
        .map_err(|e| anyhow::anyhow!("{peer}: connect: {e}"))?;
    s.set_write_timeout(Some(left().ok_or_else(too_slow)?))?;
    let _ = s.set_nodelay(true);
    // A server started with `serve --control-token` wants it (same variable).
    let token = std::env::var("RTCHECK_CONTROL_TOKEN").ok();
    // One write: a formatted write! on a raw socket can go out in pieces.
    let req = request_head(method, path, addr, token.as_deref());
    s.write_all(&req)
        .map_err(|e| anyhow::anyhow!("{peer}: write: {e}"))?;
    let mut answer = response::Answer::new(LIMITS, false);
    let mut buf = [0u8; 8192];
    loop {
        let Some(rest) = left() else {
            return Err(too_slow());
        };
        s.set_read_timeout(Some(rest))?;
        let n = match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            // EINTR first: the wire's is_timeout counts it as a timeout too.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if rtcheck_wire::http::client::is_timeout(&e) => return Err(too_slow()),
            Err(e) => anyhow::bail!("{peer}: read: {e}"),
        };
        match answer.feed(&buf[..n]) {
            Err(response::Error::HeadTooLarge(_)) => {
                anyhow::bail!("{peer}: response head exceeds {MAX_HEAD} bytes")
            }
            Err(e) => anyhow::bail!("{peer}: {}", shown(e)),
            Ok(_) if answer.body().len() > max_body => {
                anyhow::bail!("{peer}: response body exceeds {max_body} bytes")
            }
            Ok(true) => break,
            Ok(false) => {}
        }
    }
    finish(answer).map_err(|e| anyhow::anyhow!("{peer}: {e}"))
}

/// Status and body of a whole HTTP/1.1 response (Content-Length, chunked or
/// close-delimited, as `rtcheck_wire::http::response` frames it). A body shorter than its
/// Content-Length or a chunked body without its last chunk is an error, never a silently
/// short body; bytes after the body are ignored.
pub fn parse_response(raw: &[u8]) -> Result<(u16, String), String> {
    let mut answer = response::Answer::new(LIMITS, false);
    answer.feed(raw).map_err(shown)?;
    finish(answer)
}

/// The answer once the peer closed.
fn finish(mut answer: response::Answer) -> Result<(u16, String), String> {
    if !answer.complete() {
        answer.eof().map_err(shown)?;
    }
    let status = answer.head().map_or(0, |h| h.status);
    Ok((status, String::from_utf8_lossy(answer.body()).into_owned()))
}

/// This client's words for what the response parser refused.
fn shown(e: response::Error) -> String {
    match e {
        response::Error::NoHead => "response has no header end".into(),
        response::Error::NotHttp(e) => format!("bad response head: {e}"),
        e @ response::Error::TooManyHeaders(_) => format!("bad response head: {e}"),
        e => e.to_string(),
    }
}

pub fn stats(addr: SocketAddr) -> anyhow::Result<ServerStats> {
    let (status, body) = request(addr, "GET", "/control/stats")?;
    if status != 200 {
        anyhow::bail!("{addr}/control/stats: HTTP {status}");
    }
    serde_json::from_str(&body)
        .map_err(|e| anyhow::anyhow!("{addr}/control/stats: not the stats JSON: {e}"))
}

pub fn start(addr: SocketAddr, rounds: u64) -> anyhow::Result<()> {
    let (status, body) = request(addr, "POST", &format!("/control/start?rounds={rounds}"))?;
    if !(200..300).contains(&status) {
        anyhow::bail!(
            "{addr}/control/start: HTTP {status}: {}",
            body.lines().next().unwrap_or("")
        );
    }
    Ok(())
}

/// The request, with `Authorization: Bearer` when a control token is configured.
fn request_head(method: &str, path: &str, addr: SocketAddr, token: Option<&str>) -> Vec<u8> {
    let host = addr.to_string();
    let bearer = token.map(|t| format!("Bearer {}", t.trim()));
    let mut headers = vec![("Host", host.as_str())];
    headers.extend(bearer.as_deref().map(|b| ("Authorization", b)));
    headers.extend([("Connection", "close"), ("Content-Length", "0")]);
    rtcheck_wire::http::client::head(method, path, &headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_sent_only_when_configured() {
        let a: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let text = |v: Vec<u8>| String::from_utf8(v).unwrap();
        let plain = text(request_head("GET", "/control/stats", a, None));
        assert!(!plain.contains("Authorization"), "{plain}");
        let t = text(request_head(
            "GET",
            "/control/stats",
            a,
            Some("0123456789abcdef\n"),
        ));
        assert!(
            t.contains("\r\nAuthorization: Bearer 0123456789abcdef\r\n"),
            "{t}"
        );
        assert!(t.ends_with("\r\n\r\n"));
    }

    #[test]
    fn parses_plain_and_chunked() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(r).unwrap(), (200, "{}".into()));
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(parse_response(r).unwrap(), (200, "{\"a\":1}".into()));
        assert!(parse_response(b"garbage").is_err());
        assert!(parse_response(b"HTTP/1.1 xx\r\n\r\n").is_err());
        // Close-delimited, chunk extensions, and a Content-Length shorter than what came.
        let r = b"HTTP/1.1 404 Not Found\r\n\r\nnope";
        assert_eq!(parse_response(r).unwrap(), (404, "nope".into()));
        let r = b"HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n2;x=y\r\nok\r\n0\r\n\r\n";
        assert_eq!(parse_response(r).unwrap(), (200, "ok".into()));
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}junk";
        assert_eq!(parse_response(r).unwrap(), (200, "{}".into()));
    }

    #[test]
    fn truncated_and_hostile_responses_are_errors() {
        for (raw, want) in [
            (
                &b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}"[..],
                "truncated body: 2 of 10",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n{}",
                "bad Content-Length",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
                "truncated chunk",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n",
                "truncated chunk size",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
                "bad chunk size",
            ),
            // A chunk size far beyond anything sent: refused, no allocation of it.
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab",
                "truncated chunk",
            ),
            (b"HTTP/1.1 200 OK\r\nX: 1", "no header end"),
            (
                b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
                "bad response head",
            ),
            (b"\x00\x01\x02\r\n\r\n", "bad response head"),
        ] {
            let e = parse_response(raw).unwrap_err();
            assert!(e.contains(want), "{:?}: {e}", String::from_utf8_lossy(raw));
        }
        // More headers than the parser holds: an error, not a panic.
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..100 {
            many.extend_from_slice(format!("X-{i}: 1\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert!(parse_response(&many).is_err());
    }

    #[test]
    fn only_loopback_peers_are_asked() {
        let e = request("10.0.0.1:9".parse().unwrap(), "GET", "/control/stats").unwrap_err();
        assert!(e.to_string().contains("not a loopback"), "{e}");
    }

    /// A one-shot peer on loopback: reads the request, then runs `act` on the socket.
    fn peer(act: impl FnOnce(&mut TcpStream) + Send + 'static) -> SocketAddr {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let (mut got, mut b) = (Vec::new(), [0u8; 1024]);
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut b) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&b[..n]),
                    }
                }
                act(&mut s);
            }
        });
        addr
    }

    #[test]
    fn a_dripping_peer_hits_one_overall_deadline() {
        // A valid start, then one byte every 50 ms for ~10 s: each read succeeds, the
        // request must not. (Garbage fails at once, not at the deadline: see below.)
        let addr = peer(|s| {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nX-Slow: ");
            for _ in 0..200 {
                if s.write_all(b"a").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let t0 = Instant::now();
        let e = request_within(
            addr,
            "GET",
            "/control/stats",
            Duration::from_millis(400),
            MAX_BODY,
        )
        .unwrap_err()
        .to_string();
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        assert!(e.contains(&format!("{addr}/control/stats")), "{e}");
        assert!(e.contains("no complete response within"), "{e}");
        let addr = peer(|s| {
            let _ = s.write_all(b"SSH-2.0-OpenSSH\r\n");
            std::thread::sleep(Duration::from_secs(10));
        });
        let t0 = Instant::now();
        let e = request_within(addr, "GET", "/x", Duration::from_secs(5), MAX_BODY)
            .unwrap_err()
            .to_string();
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        assert!(e.contains("bad response head"), "{e}");
    }

    #[test]
    fn an_oversized_body_is_refused() {
        let addr = peer(|s| {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\n");
            let _ = s.write_all(&vec![b'x'; 5000]);
        });
        let e = request_within(addr, "GET", "/control/stats", Duration::from_secs(5), 1000)
            .unwrap_err()
            .to_string();
        assert!(e.contains("body exceeds 1000 bytes"), "{e}");
        assert!(e.contains(&addr.to_string()), "{e}");
        // The same body within the cap parses.
        let addr = peer(|s| {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\n{}");
        });
        let r = request_within(addr, "GET", "/x", Duration::from_secs(5), 1000).unwrap();
        assert_eq!(r, (200, "{}".into()));
    }
}
