//! What the server needs from the process layer, under the names it uses.
pub use crate::sys::child::exit_with_parent;
pub use crate::sys::clock::{cpu_seconds, now_ns};
pub use crate::sys::limits::raise_nofile;
pub use crate::sys::proc::{self_open_fds as open_fds, self_rss_bytes as rss_bytes};
