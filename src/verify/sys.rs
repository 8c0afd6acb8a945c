//! Host readings the experiments compare against, from the process layer (`crate::sys`).
//! Kept for callers not yet importing `crate::sys` directly.
pub use crate::sys::limits::{nofile, socket_room, FD_MARGIN};
pub use crate::sys::proc::*;

/// Raise the soft open-files limit to the hard one; returns the hard limit.
pub fn raise_nofile_to_hard() -> anyhow::Result<u64> {
    crate::sys::limits::raise_nofile_to_hard().map(|(_, hard)| hard)
}
