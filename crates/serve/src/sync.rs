//! Locks that ignore poisoning: every critical section of the server leaves its data
//! consistent, so a panic in one task must not take every later lock down with it.
use std::sync::{Mutex, MutexGuard};

/// Lock, ignoring poisoning.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
