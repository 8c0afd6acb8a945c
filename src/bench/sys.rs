//! Process-level plumbing for bench, from the process layer (`crate::sys`). Kept for
//! callers not yet importing `crate::sys` directly.
pub use crate::sys::child::ChildGuard;
pub use crate::sys::clock::{cores, cpu_seconds, now_ns};
pub use crate::sys::limits::{check_fd_budget, FD_MARGIN};
pub use crate::sys::signal::{install_interrupt_handler, interrupted, Interrupted};

pub use crate::sys::limits::raise_nofile_to_hard as raise_nofile;

/// What a bench run says when Ctrl-C stopped it (the guards stopped the children and removed
/// the temp dir on the way out).
pub const INTERRUPTED: &str =
    "interrupted: stopped the server and load generator, removed the temp files; no report";

pub fn check_interrupted() -> anyhow::Result<()> {
    crate::sys::signal::check_interrupted(INTERRUPTED)
}
