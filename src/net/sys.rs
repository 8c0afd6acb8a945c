//! What the server needs from the process layer, under the names it uses.
pub use crate::sys::child::exit_with_parent;
pub use crate::sys::clock::{cpu_seconds, now_ns};
pub use crate::sys::limits::raise_nofile;
pub use crate::sys::proc::{self_open_fds as open_fds, self_rss_bytes as rss_bytes};

/// MemAvailable now (None if /proc/meminfo cannot be read or parsed): the defaults of the
/// memory budgets are fractions of it.
pub fn mem_available() -> Option<u64> {
    let path = std::path::Path::new("/proc/meminfo");
    let text = std::fs::read_to_string(path).ok()?;
    crate::audit::host::parse_meminfo(path, &text)
        .ok()
        .map(|m| m.available)
}

/// glibc keeps freed small blocks in its arenas; hand them back so RSS follows what the
/// server holds (after sessions expire, after a replay flood).
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
