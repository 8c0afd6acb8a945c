//! Process-level plumbing for bench, from the process layer (`crate::sys`). Kept for
//! callers not yet importing `crate::sys` directly.
pub use crate::sys::child::ChildGuard;
pub use crate::sys::clock::{cores, cpu_seconds, now_ns};
pub use crate::sys::limits::{check_fd_budget, FD_MARGIN};
pub use crate::sys::signal::{install_interrupt_handler, interrupted};

pub use crate::sys::limits::raise_nofile_to_hard as raise_nofile;

pub fn check_interrupted() -> anyhow::Result<()> {
    crate::sys::signal::check_interrupted("interrupted: stopped the server and load generator")
}
