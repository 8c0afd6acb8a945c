//! Listening TCP sockets with their backlog, from netlink sock_diag (what `ss -lnt`
//! prints as Send-Q): /proc/net/tcp shows a listener's current accept queue but not its
//! limit, min(listen()'s argument, net.core.somaxconn). Read only; this network
//! namespace. The reply parser is pure.
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A listener as sock_diag reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenSock {
    pub local: SocketAddr,
    pub inode: u64,
    /// Connections waiting in the accept queue now.
    pub queued: u32,
    /// The accept queue's limit (the effective backlog).
    pub backlog: u32,
}

const NETLINK_SOCK_DIAG: i32 = 4;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const TCP_LISTEN: u32 = 10;
const HDR: usize = 16;
/// inet_diag_msg: family, state, timer, retrans, sockid (48), expires, rqueue, wqueue,
/// uid, inode.
const MSG: usize = 72;

/// The dump request for one address family: nlmsghdr + inet_diag_req_v2 (56 bytes).
fn request(family: u8, seq: u32) -> Vec<u8> {
    let len = (HDR + 56) as u32;
    let mut b = Vec::with_capacity(len as usize);
    b.extend(len.to_ne_bytes());
    b.extend(SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    b.extend((NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    b.extend(seq.to_ne_bytes());
    b.extend(0u32.to_ne_bytes());
    b.extend([family, libc::IPPROTO_TCP as u8, 0, 0]);
    b.extend((1u32 << TCP_LISTEN).to_ne_bytes());
    b.resize(len as usize, 0);
    b
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// One inet_diag_msg body (after its nlmsghdr).
fn parse_msg(m: &[u8]) -> Option<ListenSock> {
    if m.len() < MSG {
        return None;
    }
    let port = u16::from_be_bytes([m[4], m[5]]);
    let ip = match m[0] as i32 {
        libc::AF_INET => IpAddr::V4(Ipv4Addr::new(m[8], m[9], m[10], m[11])),
        libc::AF_INET6 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&m[8..24]).ok()?)),
        _ => return None,
    };
    Some(ListenSock {
        local: SocketAddr::new(ip, port),
        queued: u32_at(m, 56),
        backlog: u32_at(m, 60),
        inode: u64::from(u32_at(m, 68)),
    })
}

/// What one datagram of the reply holds: its listeners, and whether the dump is done.
/// An error message ends it with its errno.
pub fn parse_reply(buf: &[u8]) -> Result<(Vec<ListenSock>, bool), String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + HDR <= buf.len() {
        let len = u32_at(buf, at) as usize;
        let kind = u16::from_ne_bytes([buf[at + 4], buf[at + 5]]);
        if len < HDR || at + len > buf.len() {
            return Err(format!("netlink message of {len} bytes at offset {at}"));
        }
        let body = &buf[at + HDR..at + len];
        match kind {
            NLMSG_DONE => return Ok((out, true)),
            NLMSG_ERROR => {
                let errno = if body.len() >= 4 {
                    -(u32_at(body, 0) as i32)
                } else {
                    0
                };
                return Err(std::io::Error::from_raw_os_error(errno).to_string());
            }
            SOCK_DIAG_BY_FAMILY => out.extend(parse_msg(body)),
            _ => {}
        }
        at += (len + 3) & !3;
    }
    Ok((out, false))
}

/// Every listening TCP socket (IPv4 and IPv6) of this namespace with its backlog.
pub fn listeners() -> Result<Vec<ListenSock>, String> {
    let fd = Fd::netlink().map_err(|e| format!("netlink sock_diag socket: {e}"))?;
    let mut out = Vec::new();
    for (seq, family) in [(1, libc::AF_INET), (2, libc::AF_INET6)] {
        fd.send(&request(family as u8, seq))
            .map_err(|e| format!("netlink sock_diag request: {e}"))?;
        let mut buf = vec![0u8; 64 << 10];
        // Bounded: at most this many datagrams (a host with a million listeners is not
        // one rtcheck audits), each read with a 2 s timeout.
        for _ in 0..10_000 {
            let n = fd
                .recv(&mut buf)
                .map_err(|e| format!("netlink sock_diag reply: {e}"))?;
            let (v, done) = parse_reply(&buf[..n])?;
            out.extend(v);
            if done || n == 0 {
                break;
            }
        }
    }
    Ok(out)
}

/// A connected TCP socket's kernel memory (INET_DIAG_SKMEMINFO, what `ss -m` prints as
/// skmem): the buffers charged to it, not the socket structure itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SockMem {
    pub inode: u64,
    /// Received bytes not yet read by the application (skmem r).
    pub rmem_alloc: u32,
    /// Bytes queued to send, not yet acknowledged (skmem w).
    pub wmem_queued: u32,
    /// Reserved ahead for the socket's buffers (skmem f).
    pub fwd_alloc: u32,
    /// Option memory: socket filters, TLS-in-kernel state (skmem o).
    pub optmem: u32,
}

impl SockMem {
    /// What the kernel has charged to this socket's buffers (r + w + f + o).
    pub fn charged(&self) -> u64 {
        [
            self.rmem_alloc,
            self.wmem_queued,
            self.fwd_alloc,
            self.optmem,
        ]
        .iter()
        .map(|&v| u64::from(v))
        .sum()
    }
}

const INET_DIAG_SKMEMINFO: u16 = 7;
/// Every TCP state but LISTEN (10) and TIME_WAIT (6): the sockets a process holds open.
const OPEN_STATES: u32 = 0xfff & !(1 << TCP_LISTEN) & !(1 << 6);

/// The dump request for connected sockets with their memory attribute.
fn mem_request(family: u8, seq: u32) -> Vec<u8> {
    let mut b = request(family, seq);
    b[HDR + 2] = 1 << (INET_DIAG_SKMEMINFO - 1);
    b[HDR + 4..HDR + 8].copy_from_slice(&OPEN_STATES.to_ne_bytes());
    b
}

/// The SKMEMINFO attribute after one inet_diag_msg body.
fn parse_mem(m: &[u8]) -> Option<SockMem> {
    if m.len() < MSG {
        return None;
    }
    let inode = u64::from(u32_at(m, 68));
    let mut at = MSG;
    while at + 4 <= m.len() {
        let len = u16::from_ne_bytes([m[at], m[at + 1]]) as usize;
        let kind = u16::from_ne_bytes([m[at + 2], m[at + 3]]);
        if len < 4 || at + len > m.len() {
            return None;
        }
        if kind == INET_DIAG_SKMEMINFO && len >= 4 + 7 * 4 {
            let v = |i: usize| u32_at(m, at + 4 + 4 * i);
            return Some(SockMem {
                inode,
                rmem_alloc: v(0),
                wmem_queued: v(5),
                fwd_alloc: v(4),
                optmem: v(6),
            });
        }
        at += (len + 3) & !3;
    }
    None
}

/// One datagram of a memory dump: its sockets, and whether the dump is done.
pub fn parse_mem_reply(buf: &[u8]) -> Result<(Vec<SockMem>, bool), String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + HDR <= buf.len() {
        let len = u32_at(buf, at) as usize;
        let kind = u16::from_ne_bytes([buf[at + 4], buf[at + 5]]);
        if len < HDR || at + len > buf.len() {
            return Err(format!("netlink message of {len} bytes at offset {at}"));
        }
        match kind {
            NLMSG_DONE => return Ok((out, true)),
            NLMSG_ERROR => return parse_reply(&buf[at..]).map(|_| (out, true)),
            SOCK_DIAG_BY_FAMILY => out.extend(parse_mem(&buf[at + HDR..at + len])),
            _ => {}
        }
        at += (len + 3) & !3;
    }
    Ok((out, false))
}

/// Every open (not listening) TCP socket of this namespace with its kernel memory.
/// Bounded: at most 100,000 datagrams of 64 KiB, each read within 2 s.
pub fn socket_memory() -> Result<Vec<SockMem>, String> {
    let fd = Fd::netlink().map_err(|e| format!("netlink sock_diag socket: {e}"))?;
    let mut out = Vec::new();
    for (seq, family) in [(1, libc::AF_INET), (2, libc::AF_INET6)] {
        fd.send(&mem_request(family as u8, seq))
            .map_err(|e| format!("netlink sock_diag request: {e}"))?;
        let mut buf = vec![0u8; 64 << 10];
        for _ in 0..100_000 {
            let n = fd
                .recv(&mut buf)
                .map_err(|e| format!("netlink sock_diag reply: {e}"))?;
            let (v, done) = parse_mem_reply(&buf[..n])?;
            out.extend(v);
            if done || n == 0 {
                break;
            }
        }
    }
    Ok(out)
}

/// The netlink socket, closed on drop.
struct Fd(i32);

impl Fd {
    fn netlink() -> std::io::Result<Fd> {
        // SAFETY: plain socket(2); the fd is owned by the returned value.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = Fd(fd);
        let tv = libc::timeval {
            tv_sec: 2,
            tv_usec: 0,
        };
        // SAFETY: tv lives across the call; the size is its own.
        let r = unsafe {
            libc::setsockopt(
                fd.0,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as u32,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(fd)
    }

    fn send(&self, b: &[u8]) -> std::io::Result<()> {
        // SAFETY: a zeroed sockaddr_nl is the kernel's address (pid 0).
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: b and sa outlive the call; lengths are theirs.
        let r = unsafe {
            libc::sendto(
                self.0,
                b.as_ptr() as *const libc::c_void,
                b.len(),
                0,
                &sa as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    fn recv(&self, b: &mut [u8]) -> std::io::Result<usize> {
        // SAFETY: b is writable for its length.
        let r = unsafe { libc::recv(self.0, b.as_mut_ptr() as *mut libc::c_void, b.len(), 0) };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(r as usize)
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the fd is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_with_backlog_7_is_read_back() {
        let sock = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = sock.local_addr().unwrap().port();
        // Rust's listen() asks for 128; reopen the same socket with listen(7).
        use std::os::fd::AsRawFd;
        // SAFETY: listen on our own socket.
        assert_eq!(unsafe { libc::listen(sock.as_raw_fd(), 7) }, 0);
        let all = listeners().unwrap();
        let me = all.iter().find(|l| l.local.port() == port).unwrap();
        assert_eq!(me.backlog, 7.min(somaxconn()), "{me:?}");
        assert_eq!(me.local.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert!(me.inode > 0);
    }

    #[test]
    fn a_connected_socket_has_its_memory_read() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        // 4 KB the server side has not read: its receive memory holds them.
        c.write_all(&[7u8; 4096]).unwrap();
        use std::os::fd::AsRawFd;
        let link = std::fs::read_link(format!("/proc/self/fd/{}", s.as_raw_fd())).unwrap();
        let inode = crate::os::process::socket_inode(&link.to_string_lossy()).unwrap();
        let t0 = std::time::Instant::now();
        loop {
            let all = socket_memory().unwrap();
            let me = all.iter().find(|m| m.inode == inode);
            if let Some(m) = me.filter(|m| m.rmem_alloc >= 4096) {
                assert!(m.charged() >= 4096, "{m:?}");
                break;
            }
            assert!(t0.elapsed().as_secs() < 30, "{me:?}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let mut b = [0u8; 4096];
        let mut s = s;
        s.read_exact(&mut b).unwrap();
    }

    #[test]
    fn memory_attribute_is_found_after_other_attributes() {
        let mut body = vec![0u8; MSG];
        body[68..72].copy_from_slice(&99u32.to_ne_bytes());
        // An unrelated attribute (len 5, padded to 8), then SKMEMINFO with 9 values.
        body.extend(5u16.to_ne_bytes());
        body.extend(5u16.to_ne_bytes());
        body.extend([1, 0, 0, 0]);
        body.extend((4u16 + 36).to_ne_bytes());
        body.extend(INET_DIAG_SKMEMINFO.to_ne_bytes());
        for v in [10u32, 0, 0, 0, 40, 50, 60, 0, 0] {
            body.extend(v.to_ne_bytes());
        }
        let m = parse_mem(&body).unwrap();
        assert_eq!((m.inode, m.charged()), (99, 160));
        assert_eq!(parse_mem(&body[..MSG]), None);
    }

    fn somaxconn() -> u32 {
        std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn reply_parsing_stops_at_done_and_names_errors() {
        let mut m = vec![0u8; HDR + MSG];
        m[..4].copy_from_slice(&((HDR + MSG) as u32).to_ne_bytes());
        m[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        m[HDR] = libc::AF_INET as u8;
        m[HDR + 4..HDR + 6].copy_from_slice(&8080u16.to_be_bytes());
        m[HDR + 8..HDR + 12].copy_from_slice(&[127, 0, 0, 1]);
        m[HDR + 60..HDR + 64].copy_from_slice(&100u32.to_ne_bytes());
        m[HDR + 68..HDR + 72].copy_from_slice(&4242u32.to_ne_bytes());
        let mut done = vec![0u8; HDR + 4];
        done[..4].copy_from_slice(&((HDR + 4) as u32).to_ne_bytes());
        done[4..6].copy_from_slice(&NLMSG_DONE.to_ne_bytes());
        let (v, end) = parse_reply(&[m.clone(), done].concat()).unwrap();
        assert!(end);
        assert_eq!(v[0].local, "127.0.0.1:8080".parse().unwrap());
        assert_eq!((v[0].backlog, v[0].inode), (100, 4242));
        let (_, end) = parse_reply(&m).unwrap();
        assert!(!end);
        let mut err = vec![0u8; HDR + 4];
        err[..4].copy_from_slice(&((HDR + 4) as u32).to_ne_bytes());
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err[HDR..].copy_from_slice(&(-(libc::EPERM)).to_ne_bytes());
        assert!(parse_reply(&err).unwrap_err().contains("not permitted"));
        let mut short = m.clone();
        short[..4].copy_from_slice(&9999u32.to_ne_bytes());
        assert!(parse_reply(&short).is_err());
    }
}
