//! Process-level plumbing: open-file limits, CPU time, child processes that never outlive
//! the run, and Ctrl-C.
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// File descriptors a process needs besides its sockets (stdio, epoll, runtime, files).
pub const FD_MARGIN: u64 = 64;

/// Raise the soft RLIMIT_NOFILE to the hard limit; returns (soft, hard) after the change.
pub fn raise_nofile() -> anyhow::Result<(u64, u64)> {
    crate::net::sys::raise_nofile().map_err(|e| anyhow::anyhow!("RLIMIT_NOFILE: {e}"))
}

/// Refuse a connection count the limits cannot hold, with the fix in the message.
pub fn check_fd_budget(connections: u64, hard: u64) -> anyhow::Result<()> {
    let need = connections + FD_MARGIN;
    if need > hard {
        anyhow::bail!(
            "--connections {connections}: needs about {need} open files per process but the hard \
             RLIMIT_NOFILE is {hard} (use at most {}, or raise the hard limit: ulimit -Hn, \
             /etc/security/limits.conf, systemd LimitNOFILE)",
            hard.saturating_sub(FD_MARGIN)
        );
    }
    Ok(())
}

/// CPU time and the payload's clock: the same readings as the server's.
pub use crate::net::sys::{cpu_seconds, now_ns};

pub fn cores() -> u64 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u64)
        .unwrap_or(1)
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Turn SIGINT/SIGTERM into a flag the orchestrator polls, so child guards run on Ctrl-C.
pub fn install_interrupt_handler() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let act = SigAction::new(
        SigHandler::Handler(on_sigint),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only stores to an atomic.
        let _ = unsafe { sigaction(sig, &act) };
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Ctrl-C (or SIGTERM) stopped a bench: the children are stopped and the temp dir removed by
/// their guards; the command layer exits 130 on it.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "interrupted: stopped the server and load generator, removed the temp files; no report",
        )
    }
}

impl std::error::Error for Interrupted {}

pub fn check_interrupted() -> anyhow::Result<()> {
    if interrupted() {
        return Err(Interrupted.into());
    }
    Ok(())
}

/// A child process that is terminated (SIGTERM, then SIGKILL) when dropped.
pub struct ChildGuard {
    pub child: Option<Child>,
    pub name: &'static str,
}

impl ChildGuard {
    pub fn new(child: Child, name: &'static str) -> Self {
        ChildGuard {
            child: Some(child),
            name,
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Has it exited? (Some(status) if so.)
    pub fn try_exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL. Returns true if it exited on SIGTERM.
    pub fn terminate(&mut self, grace: Duration) -> bool {
        let Some(mut c) = self.child.take() else {
            return true;
        };
        if let Ok(Some(_)) = c.try_wait() {
            return true;
        }
        let pid = nix::unistd::Pid::from_raw(c.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Ok(Some(_)) = c.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
        false
    }

    /// Wait for a voluntary exit up to `limit`, else terminate.
    pub fn wait_or_terminate(&mut self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if self.try_exited().is_some() {
                self.child = None;
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.terminate(Duration::from_secs(2));
        false
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.terminate(Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_budget_refuses_with_the_fix() {
        assert!(check_fd_budget(2000, 20000).is_ok());
        let e = check_fd_budget(20000, 20000).unwrap_err().to_string();
        assert!(e.contains("19936"), "{e}");
        assert!(e.contains("RLIMIT_NOFILE is 20000"), "{e}");
    }

    #[test]
    fn guard_kills_child_on_drop() {
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        drop(ChildGuard::new(child, "sleep"));
        // Reaped: the pid no longer names our child.
        let r = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
        assert!(r.is_err());
    }
}
