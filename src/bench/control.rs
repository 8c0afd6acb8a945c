//! The server's control plane (`/control/stats`, `/control/start`) over a minimal
//! HTTP/1.1 client: one request per connection, bounded in time and size.
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// `GET /control/stats` (contract in contracts/net.md). Every field optional so another
/// server's partial stats still parse.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerStats {
    pub rounds_sent: u64,
    pub rounds_total: Option<u64>,
    pub hub_round_ms: Vec<f64>,
    pub publish_start_ns: u64,
    pub drops: u64,
    pub removed: u64,
    pub missed_by_removed: u64,
    pub clients: serde_json::Value,
    pub max_queue_depth: u64,
    pub rss_bytes: u64,
    pub cpu_seconds: f64,
    pub nodelay: Option<bool>,
    pub open_fds: u64,
    pub finished: bool,
}

pub fn request(addr: SocketAddr, method: &str, path: &str) -> anyhow::Result<(u16, String)> {
    let peer = format!("{addr}{path}");
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| anyhow::anyhow!("{peer}: connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    let _ = s.set_nodelay(true);
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .map_err(|e| anyhow::anyhow!("{peer}: write: {e}"))?;
    let mut raw = Vec::new();
    s.take(8 << 20)
        .read_to_end(&mut raw)
        .map_err(|e| anyhow::anyhow!("{peer}: read: {e}"))?;
    parse_response(&raw).map_err(|e| anyhow::anyhow!("{peer}: {e}"))
}

/// Status and body of an HTTP/1.1 response (Content-Length, chunked or close-delimited).
pub fn parse_response(raw: &[u8]) -> Result<(u16, String), String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("response has no header end")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "response head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line `{status_line}`"))?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = &raw[end + 4..];
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn dechunk(mut b: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let i = b
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunk size")?;
        let size_str = std::str::from_utf8(&b[..i]).map_err(|_| "bad chunk size")?;
        let size = usize::from_str_radix(size_str.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("bad chunk size `{size_str}`"))?;
        b = &b[i + 2..];
        if size == 0 {
            return Ok(out);
        }
        if b.len() < size {
            return Err("truncated chunk".into());
        }
        out.extend_from_slice(&b[..size]);
        b = b.get(size + 2..).unwrap_or(&[]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(r).unwrap(), (200, "{}".into()));
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(parse_response(r).unwrap(), (200, "{\"a\":1}".into()));
        assert!(parse_response(b"garbage").is_err());
        assert!(parse_response(b"HTTP/1.1 xx\r\n\r\n").is_err());
    }

    #[test]
    fn stats_tolerate_missing_fields() {
        let s: ServerStats = serde_json::from_str(r#"{"rounds_sent":3,"rss_bytes":10}"#).unwrap();
        assert_eq!((s.rounds_sent, s.rss_bytes, s.nodelay), (3, 10, None));
    }
}
