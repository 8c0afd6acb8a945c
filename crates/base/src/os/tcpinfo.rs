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
    (r == 0).then_some(SendState {
        unacked: info.tcpi_unacked,
        total_retrans: info.tcpi_total_retrans,
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
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while send_state(c.as_raw_fd()).unwrap().unacked > 0 {
            assert!(std::time::Instant::now() < deadline, "never acknowledged");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(send_state(-1), None);
    }
}
