//! Random bytes, written once: the kernel's getrandom(2). [`fill`] falls back to a mix of
//! the clock, the pid and a counter (unique enough for ids, epochs and key prefixes);
//! [`secret_hex`] never does (a token must be unguessable or not made at all).
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Fill `buf` from the kernel; false (and `buf` partly filled) if it failed.
fn kernel(buf: &mut [u8]) -> bool {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: `rest` is a valid, writable buffer of its length.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n > 0 {
            done += n as usize;
        } else if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
    true
}

/// Fill `buf` from the kernel, or, where getrandom fails, from the clock, the pid and a
/// process-wide counter (two calls never give the same bytes). True when from the kernel.
pub fn fill(buf: &mut [u8]) -> bool {
    if kernel(buf) {
        return true;
    }
    static N: AtomicU64 = AtomicU64::new(0);
    let mut state = super::clock::now_ns()
        ^ (u64::from(std::process::id()) << 40)
        ^ N.fetch_add(1, Relaxed).rotate_left(20);
    for chunk in buf.chunks_mut(8) {
        let v = splitmix64(&mut state).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    false
}

/// A random u64 ([`fill`]).
pub fn u64() -> u64 {
    let mut b = [0u8; 8];
    fill(&mut b);
    u64::from_le_bytes(b)
}

/// `bytes` random bytes in lower-case hex ([`fill`]).
pub fn hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    fill(&mut b);
    to_hex(&b)
}

/// `bytes` random bytes from the kernel in lower-case hex, for a secret; an error when
/// the kernel gives none.
pub fn secret_hex(bytes: usize) -> std::io::Result<String> {
    let mut b = vec![0u8; bytes];
    match kernel(&mut b) {
        true => Ok(to_hex(&b)),
        false => Err(std::io::Error::last_os_error()),
    }
}

fn to_hex(b: &[u8]) -> String {
    use std::fmt::Write;
    b.iter()
        .fold(String::with_capacity(2 * b.len()), |mut s, x| {
            let _ = write!(s, "{x:02x}");
            s
        })
}

/// One step of splitmix64: spreads a counter-like state over all 64 bits.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_twice_as_long_and_differs_between_calls() {
        let (a, b) = (hex(16), hex(16));
        assert_eq!(a.len(), 32);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
        assert_eq!(secret_hex(16).unwrap().len(), 32);
        assert_ne!(u64(), u64());
    }

    #[test]
    fn a_large_buffer_is_filled_to_its_last_byte() {
        // getrandom(2) may fill a large buffer in parts (a signal arrives): all of it is.
        let mut b = vec![0u8; 1 << 16];
        assert!(fill(&mut b));
        assert!(b.chunks(1024).all(|c| c.iter().any(|&x| x != 0)));
    }

    #[test]
    fn the_fallback_spreads_its_state_over_every_byte() {
        let mut s = 1;
        let (a, b) = (splitmix64(&mut s), splitmix64(&mut s));
        assert_ne!(a, b);
        assert!(a.to_le_bytes().iter().filter(|&&x| x != 0).count() >= 6);
    }
}
