//! Headless Chromium for `probe --browser`: found on PATH, started in a fresh temp
//! profile in its own process group (killed and removed on drop: error, Ctrl-C, panic),
//! driven over the DevTools protocol (chromiumoxide). The probe page is served by
//! intercepting one URL on the target's own origin (Fetch domain), so EventSource and
//! WebSocket run same-origin without any request for the page reaching the server.
use super::obs::NetRec;
use anyhow::{anyhow, Context};
use chromiumoxide::cdp::browser_protocol::fetch::{
    self, EventRequestPaused, FulfillRequestParams, HeaderEntry, RequestPattern,
};
use chromiumoxide::{Browser, Page};
use futures_util::StreamExt;
use rtcheck_base::os::child::ChildGuard;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The Debian package that provides `chromium`.
pub const PACKAGE: &str = "chromium";
const PAGE: &str = include_str!("page.html");
/// Where the probe page lives on the target's origin (answered by the interception).
pub const PAGE_PATH: &str = "/.rtcheck-probe-page";

/// How the browser treats the endpoint's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsTrust {
    /// The system's roots (no flag).
    System,
    /// `--ignore-certificate-errors-spki-list`: the leaf rtcheck verified against --ca.
    Pinned(String),
    /// `--ignore-certificate-errors` (--insecure).
    Ignore,
}

pub fn find_chromium() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            anyhow!("probe --browser: headless Chromium not found on PATH: install the Debian package `{PACKAGE}` (apt-get install chromium)")
        })
}

/// What Chromium appends to its TMPDIR for its singleton socket.
const SOCKET_TAIL: &str = "/org.chromium.Chromium.XXXXXX/SingletonSocket";
/// A unix socket path holds at most 107 bytes (sun_path is 108 with the NUL).
const SUN_PATH_MAX: usize = 107;

/// Where the profile dir `name` goes: under `tmp` ($TMPDIR) when Chromium's socket path
/// fits, else under /tmp. Chromium aborted ("Socket path too long") before DevTools
/// answered when $TMPDIR was about 30 bytes or more: the profile is its TMPDIR too.
pub fn profile_dir(tmp: &Path, name: &str) -> PathBuf {
    let p = tmp.join(name);
    if p.as_os_str().len() + SOCKET_TAIL.len() <= SUN_PATH_MAX {
        p
    } else {
        Path::new("/tmp").join(name)
    }
}

/// A private temp directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> anyhow::Result<TempDir> {
        use std::os::unix::fs::DirBuilderExt;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("rtcheck-browser-{}-{nanos}", std::process::id());
        let p = profile_dir(&std::env::temp_dir(), &name);
        // Profiles a SIGKILLed probe left (here, or under /tmp for a long $TMPDIR).
        if let Some(base) = p.parent() {
            crate::sys::serve::clean_stale(base);
        }
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&p)
            .with_context(|| format!("creating {}", p.display()))?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The running browser: its process (group) and profile dir.
pub struct Chromium {
    guard: ChildGuard,
    // Dropped after `guard` (field order): the profile goes once the browser is gone.
    dir: TempDir,
}

impl Drop for Chromium {
    fn drop(&mut self) {
        self.guard.terminate(Duration::from_secs(2));
        // Renderers and helpers share the browser's process group.
        let pg = nix::unistd::Pid::from_raw(-(self.guard.pid() as i32));
        let _ = nix::sys::signal::kill(pg, nix::sys::signal::Signal::SIGKILL);
    }
}

impl Chromium {
    /// Start headless with remote debugging on a free loopback port. Call from the main
    /// thread (the parent-death signal follows the spawning thread).
    pub fn start(trust: &TlsTrust) -> anyhow::Result<Chromium> {
        use std::os::unix::process::CommandExt;
        let bin = find_chromium()?;
        let dir = TempDir::new()?;
        let mut cmd = Command::new(bin);
        cmd.args([
            "--headless",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-quic",
            // The page comes from memory, so Chromium would count it as a public page and
            // block its WebSocket to a loopback or private host (Local Network Access); the
            // application's own page would come from that host and not be blocked.
            "--disable-features=LocalNetworkAccessChecks",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", dir.0.display()))
        // Its scratch files too: all go with the profile dir, even after a SIGKILL.
        .env("HOME", &dir.0)
        .env("TMPDIR", &dir.0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.0.join("stderr.log"))?)
        .process_group(0);
        // Chromium refuses to run as root with its sandbox.
        // SAFETY: geteuid(2) has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            cmd.arg("--no-sandbox");
        }
        match trust {
            TlsTrust::System => {}
            TlsTrust::Pinned(spki) => {
                cmd.arg(format!("--ignore-certificate-errors-spki-list={spki}"));
            }
            TlsTrust::Ignore => {
                cmd.arg("--ignore-certificate-errors");
            }
        }
        cmd.arg("about:blank");
        let guard = ChildGuard::spawn(cmd, "chromium")?;
        Ok(Chromium { guard, dir })
    }

    /// The DevTools WebSocket URL, once Chromium wrote its DevToolsActivePort file.
    pub fn devtools_url(&mut self, limit: Duration) -> anyhow::Result<String> {
        let file = self.dir.0.join("DevToolsActivePort");
        let until = Instant::now() + limit;
        loop {
            rtcheck_base::os::signal::check_interrupted("probe --browser interrupted")?;
            if let Some(url) = read_active_port(&file) {
                return Ok(url);
            }
            if let Some(st) = self.guard.try_exited() {
                return Err(anyhow!(
                    "chromium exited ({st}) before DevTools answered: {}",
                    self.stderr_tail()
                ));
            }
            if Instant::now() > until {
                return Err(anyhow!(
                    "chromium: DevTools did not start within {limit:?}: {}",
                    self.stderr_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.0.join("stderr.log")).unwrap_or_default();
        let last = text.lines().rev().find(|l| !l.trim().is_empty());
        last.unwrap_or("no output").chars().take(200).collect()
    }
}

fn read_active_port(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut lines = text.lines();
    let port: u16 = lines.next()?.trim().parse().ok()?;
    let path = lines.next()?.trim();
    path.starts_with("/devtools/browser/")
        .then(|| format!("ws://127.0.0.1:{port}{path}"))
}

use super::netlog::NetLog;

/// A page on `origin` with the probe script loaded and the network log running.
pub struct ProbePage {
    pub browser: Browser,
    pub page: Page,
    pub net: NetLog,
}

/// Connect to the browser, open the probe page on `origin` (e.g. "http://host:port")
/// with its network log running.
pub async fn open(devtools: &str, origin: &str, limit: Duration) -> anyhow::Result<ProbePage> {
    let (browser, mut handler) = Browser::connect(devtools)
        .await
        .map_err(|e| anyhow!("chromium DevTools connection: {e}"))?;
    // Messages the crate cannot parse (a newer Chromium) are errors here: keep going.
    tokio::spawn(async move { while handler.next().await.is_some() {} });
    let page = browser
        .new_page("about:blank")
        .await
        .map_err(|e| anyhow!("chromium: new page: {e}"))?;
    let net = NetLog::default();
    super::netlog::attach(devtools, page.target_id().inner(), net.clone(), limit).await?;
    serve_page(&page, origin).await?;
    let url = format!("{origin}{PAGE_PATH}");
    tokio::time::timeout(limit, page.goto(url.as_str()))
        .await
        .map_err(|_| anyhow!("chromium: the probe page did not load within {limit:?}"))?
        .map_err(|e| anyhow!("chromium: loading the probe page: {e}"))?;
    Ok(ProbePage { browser, page, net })
}

/// Answer the page URL from memory: no request for it reaches the server.
async fn serve_page(page: &Page, origin: &str) -> anyhow::Result<()> {
    let url = format!("{origin}{PAGE_PATH}");
    let mut paused = page
        .event_listener::<EventRequestPaused>()
        .await
        .map_err(|e| anyhow!("chromium: {e}"))?;
    let p = page.clone();
    tokio::spawn(async move {
        while let Some(ev) = paused.next().await {
            let mut f = FulfillRequestParams::new(ev.request_id.clone(), 200);
            f.response_headers = Some(vec![
                HeaderEntry::new("Content-Type", "text/html; charset=utf-8"),
                HeaderEntry::new("Cache-Control", "no-store"),
            ]);
            f.body = Some(chromiumoxide::Binary::from(base64_encode(PAGE.as_bytes())));
            let _ = p.execute(f).await;
        }
    });
    let pattern = |u: &str| RequestPattern {
        url_pattern: Some(escape_pattern(u)),
        resource_type: None,
        request_stage: None,
    };
    page.execute(fetch::EnableParams {
        patterns: Some(vec![pattern(&url)]),
        handle_auth_requests: None,
    })
    .await
    .map_err(|e| anyhow!("chromium: Fetch.enable: {e}"))?;
    Ok(())
}

/// A URL as a Fetch pattern: `*`, `?` and `\` are pattern characters.
fn escape_pattern(u: &str) -> String {
    let mut out = String::with_capacity(u.len());
    for c in u.chars() {
        if matches!(c, '*' | '?' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl ProbePage {
    /// Run a statement in the page.
    pub async fn run(&self, js: &str) -> anyhow::Result<()> {
        self.page
            .evaluate(js)
            .await
            // Not the script itself: it carries the URL, whose query may hold secrets.
            .map_err(|e| anyhow!("chromium: running the probe script: {e}"))?;
        Ok(())
    }

    /// An experiment's state (`rtState(name)`), parsed.
    pub async fn state<T: serde::de::DeserializeOwned>(&self, name: &str) -> anyhow::Result<T> {
        let v = self
            .page
            .evaluate(format!("rtState({name:?})"))
            .await
            .map_err(|e| anyhow!("chromium: reading {name}: {e}"))?;
        let text: String = v
            .into_value()
            .map_err(|e| anyhow!("chromium: {name} state: {e}"))?;
        serde_json::from_str(&text).map_err(|e| anyhow!("chromium: {name} state: {e}"))
    }

    /// The page's requests (not the page itself) since the log was last taken.
    pub fn take_net(&self) -> Vec<NetRec> {
        let mut log = self.net.lock().unwrap_or_else(|p| p.into_inner());
        let all = std::mem::take(&mut *log);
        all.into_iter()
            .filter(|r| !r.url.ends_with(PAGE_PATH))
            .collect()
    }
}

/// Standard base64 with padding (CDP's binary fields).
fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_tmpdir_moves_the_profile_where_the_socket_path_fits() {
        let name = "rtcheck-browser-4194304-999999999";
        let short = profile_dir(Path::new("/tmp/x"), name);
        assert_eq!(short, Path::new("/tmp/x").join(name));
        let long = Path::new("/tmp/a-very-long-temporary-directory-name-here");
        let moved = profile_dir(long, name);
        assert_eq!(moved, Path::new("/tmp").join(name));
        assert!(moved.as_os_str().len() + SOCKET_TAIL.len() <= SUN_PATH_MAX);
    }
}
