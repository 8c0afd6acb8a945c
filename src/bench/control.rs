//! The server's control plane, from the process layer (`crate::sys::control`).
pub use crate::sys::control::*;
