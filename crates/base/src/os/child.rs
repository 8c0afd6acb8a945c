//! Child processes that never outlive the run: terminated (SIGTERM, then SIGKILL after
//! [`GRACE`]) and reaped when their guard drops, on success, error and Ctrl-C alike, and
//! killed by the kernel if this process dies first.
use anyhow::Context;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How long a child gets between SIGTERM and SIGKILL when its guard drops.
pub const GRACE: Duration = Duration::from_secs(2);

/// The rtcheck binary that children re-execute: this executable, or `RTCHECK_BIN` when a
/// library caller (a test binary, an embedding program) is not rtcheck itself.
pub fn exe() -> anyhow::Result<std::path::PathBuf> {
    match std::env::var_os("RTCHECK_BIN") {
        Some(p) if !p.is_empty() => Ok(p.into()),
        _ => std::env::current_exe().context("cannot find the rtcheck binary"),
    }
}

/// Ask the kernel to send SIGTERM when the parent dies; error if it already has.
pub fn exit_with_parent() -> std::io::Result<()> {
    let parent = nix::unistd::getppid();
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)
        .map_err(std::io::Error::from)?;
    // The parent may have died before prctl took effect.
    if nix::unistd::getppid() != parent {
        return Err(std::io::Error::other("parent process already exited"));
    }
    Ok(())
}

/// A child process that is terminated and reaped when dropped.
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

    /// Has it exited? (Some(status) if so.)
    pub fn try_exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL; reaped either way. Returns the exit
    /// status if known and whether it exited without SIGKILL.
    pub fn terminate(&mut self, grace: Duration) -> (Option<ExitStatus>, bool) {
        if let Some(st) = self.try_exited() {
            return (Some(st), true);
        }
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Some(st) = self.try_exited() {
                return (Some(st), true);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        (self.child.wait().ok(), false)
    }

    /// Terminate with the standard [`GRACE`] and reap now.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.terminate(GRACE).0
    }

    /// Wait for a voluntary exit up to `limit`, else terminate. True if it left by itself.
    pub fn wait_or_terminate(&mut self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if self.try_exited().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop();
        false
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleeper(secs: &str) -> ChildGuard {
        let mut c = Command::new("sleep");
        c.arg(secs);
        ChildGuard::spawn(c, "sleep").unwrap()
    }

    #[test]
    fn guard_kills_and_reaps_child_on_drop() {
        let g = sleeper("30");
        let pid = g.pid() as i32;
        drop(g);
        // Reaped: the pid no longer names our child.
        let r = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
        assert!(r.is_err());
    }

    #[test]
    fn terminate_reports_a_sigterm_exit_and_is_idempotent() {
        let mut g = sleeper("30");
        let (st, clean) = g.terminate(Duration::from_secs(10));
        assert!(clean);
        assert!(st.is_some_and(|s| !s.success()));
        // Already reaped: a second call returns the same status at once.
        let t0 = Instant::now();
        assert_eq!(g.terminate(Duration::from_secs(10)), (st, true));
        assert!(t0.elapsed() < Duration::from_secs(5));
        let mut quick = sleeper("0");
        assert!(quick.wait_or_terminate(Duration::from_secs(30)));
    }

    #[test]
    fn a_missing_binary_is_named() {
        let e = ChildGuard::spawn(Command::new("/nonexistent/rtcheck-x"), "the thing")
            .err()
            .unwrap();
        assert!(e.to_string().contains("cannot start the thing"), "{e}");
    }
}
