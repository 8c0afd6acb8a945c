//! `rtcheck serve` as a child process, per the net contract: `serve --listen 127.0.0.1:0
//! --addr-file F --exit-with-parent FLAGS`, then wait for the address file. The child is
//! the binary from [`exe`] (`RTCHECK_BIN` honoured), its stderr goes to a log in a scratch
//! directory that is removed with the guard.
use anyhow::{anyhow, bail, Context};
use rtcheck_base::os::addr::ensure_loopback;
use rtcheck_base::os::child::{exe, ChildGuard};
use rtcheck_base::os::deadline::Deadline;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long `serve` gets to bind and write its address file.
pub const START_WAIT: Duration = Duration::from_secs(15);

/// A scratch directory (address file, logs) removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// `$TMPDIR/rtcheck-TAG-PID-N`. The first one of a process also removes the stale
    /// ones a SIGKILLed run left ([`clean_stale`]).
    pub fn new(tag: &str) -> anyhow::Result<Scratch> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        static CLEAN: std::sync::Once = std::sync::Once::new();
        CLEAN.call_once(|| clean_stale(&std::env::temp_dir()));
        let p = std::env::temp_dir().join(format!(
            "rtcheck-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&p).map_err(|e| anyhow!("{}: cannot create: {e}", p.display()))?;
        Ok(Scratch(p))
    }
}

/// The pid in a scratch dir's name, `rtcheck-TAG-PID-N` (TAG may hold dashes), or None
/// for any other name. Pure.
pub fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("rtcheck-")?;
    let mut parts = rest.rsplitn(3, '-');
    let n = parts.next()?;
    let pid = parts.next()?;
    let tag = parts.next()?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(n) && !tag.is_empty()).then_some(())?;
    pid.parse().ok().filter(|p| *p > 0)
}

/// Remove the scratch dirs under `dir` (bench, cluster, verify, delivery, browser
/// profiles) whose owner process is gone: a run killed with SIGKILL cannot remove its
/// own. Only our own directories (same uid, not symlinks) with a dead pid in their name;
/// a live run's dirs are left alone.
pub fn clean_stale(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        let ours = std::fs::symlink_metadata(e.path())
            .is_ok_and(|m| m.file_type().is_dir() && m.uid() == uid);
        if ours && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The last `lines` non-empty lines of a log, joined with ` | ` (for one-line errors).
pub fn tail(path: &Path, lines: usize) -> String {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let v: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let t = v[v.len().saturating_sub(lines)..].join(" | ");
    if t.is_empty() {
        "no message".into()
    } else {
        t
    }
}

/// A running `rtcheck serve` child.
pub struct ServeChild {
    pub guard: ChildGuard,
    /// The addresses it wrote, in order (data, then control with a raw listener).
    pub addrs: Vec<SocketAddr>,
    /// Its stderr.
    pub log: PathBuf,
}

/// Complete address lines of an address file: `None` until `want` lines and the final
/// newline are there (the server may be mid-write); each must be a loopback address.
pub fn parse_addr_file(
    file: &Path,
    text: &str,
    want: usize,
) -> anyhow::Result<Option<Vec<SocketAddr>>> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() < want || !text.ends_with('\n') {
        return Ok(None);
    }
    let parse = |l: &str| -> anyhow::Result<SocketAddr> {
        let a: SocketAddr = l
            .trim()
            .parse()
            .map_err(|_| anyhow!("{}: bad address `{}`", file.display(), l.trim()))?;
        ensure_loopback(&a)?;
        Ok(a)
    };
    lines[..want]
        .iter()
        .map(|l| parse(l))
        .collect::<Result<_, _>>()
        .map(Some)
}

/// The environment variable `serve --redis` is read from: a URL with a password goes to
/// a serve child through it, never argv (readable by any local user in /proc/PID/cmdline).
pub const REDIS_URL_ENV: &str = "RTCHECK_REDIS_URL";

/// Start `rtcheck serve` on 127.0.0.1:0 with `flags`, in `dir`, and wait (within `wait`
/// and [`START_WAIT`]) until it wrote `want` addresses.
pub fn start(
    flags: &[String],
    dir: &Path,
    want: usize,
    wait: &Deadline,
) -> anyhow::Result<ServeChild> {
    start_at("127.0.0.1:0", flags, dir, want, wait)
}

/// [`start`] on `listen` (a restart on the port a server just left).
pub fn start_at(
    listen: &str,
    flags: &[String],
    dir: &Path,
    want: usize,
    wait: &Deadline,
) -> anyhow::Result<ServeChild> {
    start_at_env(listen, flags, &[], dir, want, wait)
}

/// [`start_at`] with `env` added to the child's environment (secrets: a Redis URL in
/// [`REDIS_URL_ENV`]).
pub fn start_at_env(
    listen: &str,
    flags: &[String],
    env: &[(&str, String)],
    dir: &Path,
    want: usize,
    wait: &Deadline,
) -> anyhow::Result<ServeChild> {
    let addr_file = dir.join("addr");
    // A previous server's address file must not be read as this one's.
    let _ = std::fs::remove_file(&addr_file);
    let log = dir.join("server.log");
    let logf = std::fs::File::create(&log).with_context(|| log.display().to_string())?;
    let mut cmd = Command::new(exe()?);
    // --drain 1s: the children's close frames are not what a run measures, and their
    // stop must end inside every caller's SIGTERM grace (2 s at the least) unkilled.
    cmd.args(["serve", "--listen", listen, "--exit-with-parent"])
        .args(["--drain", "1s"])
        .arg("--addr-file")
        .arg(&addr_file)
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(logf));
    // Only what this run passes: a RTCHECK_REDIS_URL in the user's environment must not
    // put a fanout's server or a `single` node into a cluster.
    cmd.env_remove(REDIS_URL_ENV);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let mut guard = ChildGuard::spawn(cmd, "the embedded server")?;
    let wait = wait.within(START_WAIT);
    loop {
        wait.check("starting the embedded server").map_err(|e| {
            match wait.remaining().is_zero() {
                true => anyhow!(
                    "the embedded server did not write {} within {} s: {}",
                    addr_file.display(),
                    START_WAIT.as_secs(),
                    tail(&log, 3)
                ),
                false => e,
            }
        })?;
        if let Some(st) = guard.try_exited() {
            bail!(
                "the embedded server exited ({st}) before listening: {}",
                tail(&log, 3)
            );
        }
        if let Ok(text) = std::fs::read_to_string(&addr_file) {
            if let Some(addrs) = parse_addr_file(&addr_file, &text, want)? {
                return Ok(ServeChild { guard, addrs, log });
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_files_are_read_only_when_complete() {
        let f = Path::new("/t/addr");
        assert_eq!(parse_addr_file(f, "", 1).unwrap(), None);
        assert_eq!(parse_addr_file(f, "127.0.0.1:5", 1).unwrap(), None);
        let a = parse_addr_file(f, "127.0.0.1:5\n", 1).unwrap().unwrap();
        assert_eq!(a, vec!["127.0.0.1:5".parse().unwrap()]);
        assert_eq!(parse_addr_file(f, "127.0.0.1:5\n", 2).unwrap(), None);
        let a = parse_addr_file(f, "127.0.0.1:5\n[::1]:6\n", 2)
            .unwrap()
            .unwrap();
        assert_eq!(a.len(), 2);
        let e = parse_addr_file(f, "nope\n", 1).unwrap_err().to_string();
        assert!(e.contains("/t/addr: bad address `nope`"), "{e}");
        let e = parse_addr_file(f, "10.1.1.1:80\n", 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a loopback"), "{e}");
    }

    #[test]
    fn owner_pids_come_from_scratch_names_only() {
        assert_eq!(owner_pid("rtcheck-bench-A-1234-0"), Some(1234));
        assert_eq!(owner_pid("rtcheck-bench-idle-C2-77-3"), Some(77));
        assert_eq!(owner_pid("rtcheck-cluster-9-1"), Some(9));
        assert_eq!(owner_pid("rtcheck-browser-4242-123456789"), Some(4242));
        for other in [
            "rtcheck-1-2",
            "rtcheck-x-y-z",
            "rtcheck-review.yaml",
            "tmp-1-2",
            "rtcheck-a-0-1",
        ] {
            assert_eq!(owner_pid(other), None, "{other}");
        }
    }

    #[test]
    fn stale_scratch_dirs_of_dead_pids_are_removed_live_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let me = std::process::id();
        let stale = d.path().join(format!("rtcheck-bench-A-{dead}-0"));
        let live = d.path().join(format!("rtcheck-cluster-{me}-0"));
        let other = d.path().join(format!("keep-{dead}-0"));
        for p in [&stale, &live, &other] {
            std::fs::create_dir(p).unwrap();
            std::fs::write(p.join("log"), "x").unwrap();
        }
        clean_stale(d.path());
        assert!(!stale.exists() && live.exists() && other.exists());
    }

    #[test]
    fn scratch_dirs_are_unique_and_removed() {
        let (a, b) = (Scratch::new("t").unwrap(), Scratch::new("t").unwrap());
        assert_ne!(a.0, b.0);
        std::fs::write(a.0.join("f"), "x").unwrap();
        let p = a.0.clone();
        drop(a);
        assert!(!p.exists());
        std::fs::write(b.0.join("log"), "one\n\ntwo\nthree\n").unwrap();
        assert_eq!(tail(&b.0.join("log"), 2), "two | three");
        assert_eq!(tail(&b.0.join("none"), 2), "no message");
    }
}
