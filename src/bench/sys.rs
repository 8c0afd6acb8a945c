//! Process-level plumbing for bench, from the process layer (`crate::sys`).
pub use crate::sys::child::ChildGuard;
pub use crate::sys::clock::{cores, cpu_seconds, now_ns};
pub use crate::sys::limits::{check_fd_budget, FD_MARGIN};
pub use crate::sys::signal::{install_interrupt_handler, interrupted};

/// Raise the soft RLIMIT_NOFILE to the hard limit; returns (soft, hard) after the change.
pub fn raise_nofile() -> anyhow::Result<(u64, u64)> {
    crate::sys::limits::raise_nofile().map_err(|e| anyhow::anyhow!("RLIMIT_NOFILE: {e}"))
}

pub fn check_interrupted() -> anyhow::Result<()> {
    crate::sys::signal::check_interrupted("interrupted: stopped the server and load generator")
}
