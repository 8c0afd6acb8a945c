//! Readiness of one descriptor: the one poll(2) call of the crate. Raw libc, not nix's
//! `poll`: nix 0.29's `PollFlags` has no POLLRDHUP and drops unknown revents bits, and
//! POLLRDHUP is how an experiment sees a peer's FIN on a socket it no longer reads.
use std::os::fd::{AsFd, AsRawFd};

pub use libc::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDHUP};

/// Wait up to `timeout_ms` for any of `events` (POLLIN, POLLOUT, POLLRDHUP, ...) on `fd`;
/// the revents that fired (0 on timeout or error; EINTR counts as nothing yet, the
/// caller's loop looks again).
pub fn poll_one(fd: &impl AsFd, events: libc::c_short, timeout_ms: u16) -> libc::c_short {
    let mut p = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call; the fd is borrowed, so open.
    let r = unsafe { libc::poll(&mut p, 1, libc::c_int::from(timeout_ms)) };
    if r > 0 {
        p.revents
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn readiness_of_a_socket_pair() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        assert_ne!(poll_one(&c, POLLOUT, 1000) & POLLOUT, 0);
        assert_eq!(poll_one(&s, POLLIN, 0), 0);
        c.write_all(b"x").unwrap();
        assert_ne!(poll_one(&s, POLLIN, 5000) & POLLIN, 0);
        drop(c);
        let r = poll_one(&s, POLLRDHUP, 5000);
        assert_ne!(r & (POLLRDHUP | POLLHUP), 0, "{r:#x}");
    }
}
