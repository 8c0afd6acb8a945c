//! Host readings the experiments compare against, from the process layer (`crate::sys`).
pub use crate::sys::limits::{nofile, socket_room, FD_MARGIN};
pub use crate::sys::proc::*;

/// Raise the soft open-files limit to the hard one (experiments that hold many sockets).
pub fn raise_nofile_to_hard() -> anyhow::Result<u64> {
    let (_, hard) = crate::sys::limits::raise_nofile()
        .map_err(|e| anyhow::anyhow!("raise RLIMIT_NOFILE: {e}"))?;
    Ok(hard)
}
