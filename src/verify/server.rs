//! The embedded server (`rtcheck serve`) as a child process, per the net contract:
//! `serve --listen 127.0.0.1:0 --addr-file F --exit-with-parent ...`, plus a tiny HTTP/1.1
//! client for `/control/stats`.
use super::guard::{self, Budget, ChildGuard};
use anyhow::{anyhow, bail, Context};
use serde::Deserialize;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

pub struct Server {
    pub addr: SocketAddr,
    guard: ChildGuard,
    dir: PathBuf,
}

/// The subset of `/control/stats` the experiments read.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Stats {
    #[serde(default)]
    pub clients: Clients,
    #[serde(default)]
    pub removed: u64,
    #[serde(default)]
    pub rss_bytes: u64,
    #[serde(default)]
    pub open_fds: u64,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Clients {
    #[serde(default)]
    pub ws: u64,
    #[serde(default)]
    pub sse: u64,
}

fn temp_dir() -> anyhow::Result<PathBuf> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "rtcheck-verify-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&d).with_context(|| d.display().to_string())?;
    Ok(d)
}

impl Server {
    /// Start `rtcheck serve` on 127.0.0.1:0 with `extra` flags and wait for its address.
    pub fn start(extra: &[String], budget: &Budget) -> anyhow::Result<Server> {
        let dir = temp_dir()?;
        let addr_file = dir.join("addr");
        let log = dir.join("stderr.log");
        let exe = guard::exe()?;
        let mut cmd = Command::new(exe);
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--addr-file"])
            .arg(&addr_file)
            .arg("--exit-with-parent")
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).with_context(|| log.display().to_string())?);
        let guard = match ChildGuard::spawn(cmd, "the embedded server") {
            Ok(g) => g,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let mut s = Server {
            addr: "127.0.0.1:0".parse()?,
            guard,
            dir,
        };
        let wait = budget.within(Duration::from_secs(15));
        loop {
            if let Ok(t) = std::fs::read_to_string(&addr_file) {
                if let Some(line) = t.lines().next().filter(|_| t.ends_with('\n')) {
                    let a: SocketAddr = line.trim().parse().map_err(|e| {
                        anyhow!(
                            "serve --addr-file: `{}` is not an address ({e})",
                            line.trim()
                        )
                    })?;
                    guard::ensure_loopback(&a)?;
                    s.addr = a;
                    return Ok(s);
                }
            }
            if let Ok(Some(st)) = s.guard.child.try_wait() {
                let msg = std::fs::read_to_string(&log).unwrap_or_default();
                bail!(
                    "the embedded server exited ({st}) before accepting: {}",
                    msg.lines().last().unwrap_or("no message")
                );
            }
            if let Err(e) = wait.check("starting the embedded server") {
                // Ctrl-C while the server starts is an interruption, not a slow server.
                if guard::interrupted() {
                    return Err(e);
                }
                bail!("the embedded server did not write its address within 15 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.guard.pid()
    }

    pub fn stats(&self) -> anyhow::Result<Stats> {
        let (code, body) = http_get(self.addr, "/control/stats")?;
        if code != 200 {
            bail!("GET /control/stats on {}: HTTP {code}", self.addr);
        }
        serde_json::from_str(&body)
            .map_err(|e| anyhow!("GET /control/stats on {}: invalid JSON: {e}", self.addr))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.guard.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// GET `path` on a loopback address; (status, body). Handles Content-Length, chunked and
/// close-delimited bodies.
pub fn http_get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    guard::ensure_loopback(&addr)?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .with_context(|| format!("connect {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .with_context(|| format!("GET {path} on {addr}"))?;
    parse_response(&raw).with_context(|| format!("GET {path} on {addr}"))
}

pub fn parse_response(raw: &[u8]) -> anyhow::Result<(u16, String)> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("response without a header end"))?;
    let status_line = head.lines().next().unwrap_or("");
    let code: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow!("bad status line `{status_line}`"))?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked {
        let mut out = String::new();
        let mut rest = body;
        loop {
            let (size, after) = rest
                .split_once("\r\n")
                .ok_or_else(|| anyhow!("truncated chunked body"))?;
            let n = usize::from_str_radix(size.trim(), 16)
                .map_err(|_| anyhow!("bad chunk size `{size}`"))?;
            if n == 0 {
                break;
            }
            if after.len() < n {
                bail!("truncated chunk");
            }
            out.push_str(&after[..n]);
            rest = after[n..].trim_start_matches("\r\n");
        }
        out
    } else {
        body.to_string()
    };
    Ok((code, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_parse() {
        let (c, b) = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!((c, b.as_str()), (200, "{}"));
        let (c, b) = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((c, b.as_str()), (200, "{\"a\":1}"));
        assert!(parse_response(b"garbage").is_err());
        let s: Stats = serde_json::from_str(r#"{"clients":{"ws":3,"sse":1,"poll":0,"raw":0},"removed":2,"rss_bytes":5,"open_fds":9,"extra":1}"#).unwrap();
        assert_eq!((s.clients.ws, s.clients.sse, s.removed), (3, 1, 2));
    }
}
