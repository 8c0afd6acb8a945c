//! Safety rails shared by every experiment: loopback-only targets, a Ctrl-C flag, a total
//! time budget, and child processes that are always terminated and reaped.
use anyhow::{anyhow, bail, Context};
use std::net::{IpAddr, SocketAddr};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Ctrl-C (SIGINT) and SIGTERM set a flag that every experiment loop checks, so cleanup
/// (guards below) runs on the normal return path. No SA_RESTART: a blocking call returns
/// EINTR and the loop sees the flag at once.
pub fn install_interrupt_handler() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let act = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let _ = sigaction(Signal::SIGINT, &act);
        let _ = sigaction(Signal::SIGTERM, &act);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Refuse anything that is not loopback (127.0.0.0/8, ::1).
pub fn ensure_loopback(addr: &SocketAddr) -> anyhow::Result<()> {
    if is_loopback(addr.ip()) {
        Ok(())
    } else {
        bail!("target {addr}: not a loopback address (verify only runs against 127.0.0.0/8 or ::1)")
    }
}

pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v| v.is_loopback()),
    }
}

/// Parse a `--target` and check it is loopback.
pub fn parse_target(s: &str) -> anyhow::Result<SocketAddr> {
    let addr: SocketAddr = s
        .trim()
        .parse()
        .map_err(|e| anyhow!("--target `{s}`: expected IP:PORT ({e})"))?;
    ensure_loopback(&addr)?;
    Ok(addr)
}

/// A deadline shared by the whole run (`--timeout`), and a per-experiment slice of it.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub deadline: Instant,
}

impl Budget {
    pub fn new(total: Duration) -> Budget {
        Budget {
            deadline: Instant::now() + total,
        }
    }
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
    /// Error when Ctrl-C was pressed or the time is up: experiments call this in every loop.
    pub fn check(&self, what: &str) -> anyhow::Result<()> {
        if interrupted() {
            bail!("{what}: interrupted (Ctrl-C); processes and sockets cleaned up");
        }
        if Instant::now() >= self.deadline {
            bail!("{what}: time budget (--timeout) exhausted");
        }
        Ok(())
    }
    /// A sub-budget ending at `now + d` or the overall deadline, whichever is first.
    pub fn within(&self, d: Duration) -> Budget {
        Budget {
            deadline: self.deadline.min(Instant::now() + d),
        }
    }
}

/// A child process that is terminated (SIGTERM, then SIGKILL after 1 s) and reaped when the
/// guard is dropped, on success, error, or Ctrl-C alike.
pub struct ChildGuard {
    pub child: Child,
    pub name: String,
}

impl ChildGuard {
    /// Spawn with PR_SET_PDEATHSIG so the child also dies if this process is killed.
    /// Spawn from the main thread: the death signal follows the spawning thread.
    pub fn spawn(mut cmd: Command, name: &str) -> anyhow::Result<ChildGuard> {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe and touches only the child.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name}"))?;
        Ok(ChildGuard {
            child,
            name: name.to_string(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Terminate and reap now; returns the exit status if known.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        if let Ok(Some(st)) = self.child.try_wait() {
            return Some(st);
        }
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        self.child.wait().ok()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The rtcheck binary that children re-execute: this executable, or `RTCHECK_BIN` when a
/// library caller (a test binary, an embedding program) is not rtcheck itself.
pub fn exe() -> anyhow::Result<std::path::PathBuf> {
    match std::env::var_os("RTCHECK_BIN") {
        Some(p) if !p.is_empty() => Ok(p.into()),
        _ => std::env::current_exe().context("cannot find the rtcheck binary"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_targets_pass() {
        assert!(parse_target("127.0.0.1:80").is_ok());
        assert!(parse_target("127.3.4.5:1").is_ok());
        assert!(parse_target("[::1]:8080").is_ok());
        let e = parse_target("10.0.0.1:80").unwrap_err().to_string();
        assert!(e.contains("not a loopback"), "{e}");
        assert!(parse_target("192.168.1.1:80").is_err());
        assert!(parse_target("[::ffff:8.8.8.8]:53").is_err());
        assert!(parse_target("localhost").is_err());
    }

    #[test]
    fn budget_expires() {
        let b = Budget::new(Duration::from_millis(0));
        assert!(b.check("x").is_err());
        let b = Budget::new(Duration::from_secs(60));
        assert!(b.check("x").is_ok());
        assert!(b.within(Duration::from_secs(1)).remaining() <= Duration::from_secs(1));
    }
}
