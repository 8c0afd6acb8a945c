//! A real `redis-server` for cluster runs and tests: found on PATH (the error names the
//! Debian package), on a free loopback port, its config and log in a caller's directory,
//! persistence off, ready when PING answers, killed when dropped. `stop()` and `restart()`
//! keep the port, so a node's reconnect meets the same URL.
use super::serve::tail;
use anyhow::{anyhow, bail, Context};
use rtcheck_base::os::child::ChildGuard;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long redis-server gets to answer PING after it was started.
pub const START_WAIT: Duration = Duration::from_secs(15);

/// The Debian package that ships `redis-server`.
pub const PACKAGE: &str = "redis-server";

/// A running (or stopped, between `stop` and `restart`) redis-server.
pub struct RedisServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    child: Option<ChildGuard>,
}

/// `redis-server` on PATH, or in /usr/bin or /usr/sbin.
pub fn find_binary() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    find_in(
        std::env::split_paths(&path).chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")]),
    )
}

/// The first executable `redis-server` in `dirs`.
pub fn find_in(dirs: impl IntoIterator<Item = PathBuf>) -> anyhow::Result<PathBuf> {
    dirs.into_iter()
        .map(|d| d.join("redis-server"))
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            anyhow!("redis-server not found on PATH: install the Debian package `{PACKAGE}`")
        })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A loopback port that was free a moment ago.
fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("cannot bind 127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// The config: loopback only, no RDB snapshots, no AOF, files in `dir`.
pub fn config(port: u16, dir: &Path) -> String {
    format!(
        "bind 127.0.0.1\nport {port}\nprotected-mode yes\ndaemonize no\nsave \"\"\n\
         appendonly no\ndir {}\nlogfile \"\"\ndatabases 1\n",
        dir.display()
    )
}

impl RedisServer {
    /// Start redis-server with its files in `dir` (which must exist) and wait for PING.
    pub fn start(dir: &Path) -> anyhow::Result<RedisServer> {
        let bin = find_binary()?;
        let mut last = None;
        // The free port can be taken between our probe and redis' bind: try a few.
        for _ in 0..3 {
            let mut r = RedisServer {
                bin: bin.clone(),
                dir: dir.to_path_buf(),
                port: free_port()?,
                child: None,
            };
            match r.launch() {
                Ok(()) => return Ok(r),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow!("redis-server did not start")))
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.pid())
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Its log (stdout and stderr).
    pub fn log(&self) -> PathBuf {
        self.dir.join("redis.log")
    }

    /// Stop it (SIGTERM, then SIGKILL after the grace period) and reap it; the port is kept.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.stop();
        }
    }

    /// Stop if running, then start again on the same port and wait for PING.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.stop();
        self.launch()
    }

    fn launch(&mut self) -> anyhow::Result<()> {
        let conf = self.dir.join("redis.conf");
        std::fs::write(&conf, config(self.port, &self.dir))
            .with_context(|| format!("{}: cannot write", conf.display()))?;
        let log = self.log();
        let logf = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| log.display().to_string())?;
        let mut cmd = Command::new(&self.bin);
        cmd.arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::from(logf.try_clone()?))
            .stderr(Stdio::from(logf));
        let mut guard = ChildGuard::spawn(cmd, "redis-server")?;
        let until = Instant::now() + START_WAIT;
        let url = self.url();
        loop {
            if let Some(st) = guard.try_exited() {
                bail!(
                    "redis-server exited ({st}) before answering PING: {}",
                    tail(&log, 3)
                );
            }
            if ping(&url).is_ok() {
                self.child = Some(guard);
                return Ok(());
            }
            if Instant::now() >= until {
                bail!(
                    "redis-server on {url} did not answer PING within {} s: {}",
                    START_WAIT.as_secs(),
                    tail(&log, 3)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// One PING over a fresh connection, bounded to a second.
pub fn ping(url: &str) -> anyhow::Result<()> {
    let mut con = connect(url)?;
    let pong: String = redis::cmd("PING").query(&mut con)?;
    if pong != "PONG" {
        bail!("{url}: PING answered `{pong}`");
    }
    Ok(())
}

/// A connection for one short exchange, bounded to a second per reply.
fn connect(url: &str) -> anyhow::Result<redis::Connection> {
    let client = redis::Client::open(url).map_err(|e| anyhow!("{url}: {e}"))?;
    let con = client.get_connection_with_timeout(Duration::from_secs(1))?;
    con.set_read_timeout(Some(Duration::from_secs(1)))?;
    Ok(con)
}

/// The keys under `prefix` (no glob characters in it), a SCAN batch at a time, each batch
/// handed to `each` until it returns false; bounded to 10,000 batches.
fn scan_under(
    con: &mut redis::Connection,
    prefix: &str,
    mut each: impl FnMut(&mut redis::Connection, Vec<String>) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let mut cursor = 0u64;
    for _ in 0..10_000 {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}*"))
            .arg("COUNT")
            .arg(1000)
            .query(con)?;
        if !each(con, keys)? || next == 0 {
            return Ok(());
        }
        cursor = next;
    }
    Ok(())
}

/// A key under `prefix`, if Redis holds any.
pub fn first_key_under(url: &str, prefix: &str) -> anyhow::Result<Option<String>> {
    let mut con = connect(url)?;
    let mut found = None;
    scan_under(&mut con, prefix, |_, keys| {
        found = keys.into_iter().next();
        Ok(found.is_none())
    })?;
    Ok(found)
}

/// Delete every key under `prefix`.
pub fn delete_under(url: &str, prefix: &str) -> anyhow::Result<()> {
    let mut con = connect(url)?;
    scan_under(&mut con, prefix, |con, keys| {
        if !keys.is_empty() {
            redis::cmd("DEL").arg(&keys).query::<u64>(con)?;
        }
        Ok(true)
    })
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_loopback_without_persistence() {
        let c = config(6400, Path::new("/t/d"));
        assert!(c.contains("bind 127.0.0.1\n"), "{c}");
        assert!(c.contains("port 6400\n"), "{c}");
        assert!(c.contains("save \"\"\n"), "{c}");
        assert!(c.contains("appendonly no\n"), "{c}");
        assert!(c.contains("dir /t/d\n"), "{c}");
    }

    #[test]
    fn a_missing_binary_names_the_package() {
        let e = find_in([PathBuf::from("/nonexistent/rtcheck")]).unwrap_err();
        assert!(
            e.to_string().contains("Debian package `redis-server`"),
            "{e}"
        );
    }
}
