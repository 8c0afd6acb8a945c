//! What TCP itself knows of a connection's last write (TCP_INFO): whether the peer
//! acknowledged it. A ping with no answer is told apart this way: acknowledged, the path
//! delivered it and the peer stayed quiet; unacknowledged and retransmitted, the path
//! dropped it (a NAT or conntrack table that forgot the flow).
use std::os::fd::RawFd;

/// The send side of one TCP connection, as the kernel counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendState {
    /// Segments sent and not yet acknowledged.
    pub unacked: u32,
    /// Retransmissions over the connection's life.
    pub total_retrans: u32,
    /// Bytes the peer acknowledged over the connection's life (None: the kernel's
    /// TCP_INFO is too old to carry it).
    pub bytes_acked: Option<u64>,
    /// Bytes written but not yet sent (held back by the peer's window or the
    /// congestion window; None: not in this kernel's TCP_INFO).
    pub notsent: Option<u32>,
}

impl SendState {
    /// Whether a write of `len` bytes made since `before` was measured acknowledged:
    /// the peer's acknowledged bytes grew by at least `len` and nothing is left unsent.
    /// False when either count is unreadable (not measured is not acknowledged).
    pub fn acknowledged_since(&self, before: &SendState, len: u64) -> bool {
        let grew = self
            .bytes_acked
            .zip(before.bytes_acked)
            .is_some_and(|(a, b)| a.saturating_sub(b) >= len);
        grew && self.notsent == Some(0)
    }
}

/// TCP_INFO of `fd` (a TCP socket the caller keeps open); None when it is not one.
pub fn send_state(fd: RawFd) -> Option<SendState> {
    // SAFETY: tcp_info is plain integers (all-zero is valid); getsockopt writes at most
    // `len` bytes into it and tells how many; a closed or non-TCP fd is an error return.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    // A field counts only when the kernel filled it: an older kernel returns a shorter
    // struct (the zeroes past `len` are ours, not measurements).
    let filled = |end: usize| (len as usize) >= end;
    let acked_end = std::mem::offset_of!(libc::tcp_info, tcpi_bytes_acked) + 8;
    let notsent_end = std::mem::offset_of!(libc::tcp_info, tcpi_notsent_bytes) + 4;
    (r == 0).then_some(SendState {
        unacked: info.tcpi_unacked,
        total_retrans: info.tcpi_total_retrans,
        bytes_acked: filled(acked_end).then_some(info.tcpi_bytes_acked),
        notsent: filled(notsent_end).then_some(info.tcpi_notsent_bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    #[test]
    fn an_acknowledged_write_leaves_nothing_unacked() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(b"ping").unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).unwrap();
        // Loopback acknowledges at once; poll a while for a loaded host.
        let before = send_state(c.as_raw_fd()).unwrap();
        c.write_all(b"pong!").unwrap();
        let mut b = [0u8; 5];
        s.read_exact(&mut b).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let now = send_state(c.as_raw_fd()).unwrap();
            if now.unacked == 0 && now.acknowledged_since(&before, 5) {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "never acknowledged");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(send_state(-1), None);
    }

    #[test]
    fn acknowledged_means_the_bytes_were_counted_and_nothing_is_unsent() {
        let st = |acked, notsent| SendState {
            unacked: 0,
            total_retrans: 0,
            bytes_acked: acked,
            notsent,
        };
        let before = st(Some(100), Some(0));
        assert!(st(Some(124), Some(0)).acknowledged_since(&before, 24));
        // Nothing acknowledged: unacked == 0 because it was never sent (zero window).
        assert!(!st(Some(100), Some(24)).acknowledged_since(&before, 24));
        assert!(!st(Some(110), Some(0)).acknowledged_since(&before, 24));
        assert!(!st(None, Some(0)).acknowledged_since(&st(None, Some(0)), 24));
        assert!(!st(Some(124), None).acknowledged_since(&before, 24));
    }
}
