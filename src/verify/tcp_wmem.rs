//! tcp-wmem: a client with a small SO_RCVBUF that never reads; the server writes messages
//! without blocking until a write would block and stays blocked. Every byte the kernel
//! accepted is then accounted for in the two kernel queues (server send queue + client
//! receive queue) while the client application has read none of them.
use super::{sys, verification, Run};
use crate::evidence::fmt_num;
use crate::findings::Verification;
use crate::units::fmt_bytes;
use anyhow::{anyhow, Context};
use socket2::{Domain, Protocol, Socket, Type};
use std::io::Write;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Bytes the kernel accepted = bytes still in the server's send queue + bytes waiting in
/// the client's receive queue. `None` when the totals differ by more than one message.
pub fn accounted(written: u64, outq: u64, inq: u64, message: u64) -> Result<(), String> {
    let sum = outq + inq;
    if sum.abs_diff(written) <= message {
        Ok(())
    } else {
        Err(format!(
            "{written} bytes written but {outq} in the send queue + {inq} in the receive queue = {sum}"
        ))
    }
}

fn ioctl_int(fd: i32, req: libc::c_ulong) -> anyhow::Result<u64> {
    let mut v: libc::c_int = 0;
    // SAFETY: SIOCINQ/SIOCOUTQ write one int through the pointer.
    let r = unsafe { libc::ioctl(fd, req as _, &mut v) };
    if r != 0 {
        return Err(anyhow!("ioctl: {}", std::io::Error::last_os_error()));
    }
    Ok(v.max(0) as u64)
}

fn wait_writable(fd: i32, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    r > 0 && (p.revents & libc::POLLOUT) != 0
}

pub fn run(run: &Run) -> anyhow::Result<Vec<Verification>> {
    let started = Instant::now();
    let size = run.opts.message_size as usize;
    let listener = super::listener::listen("127.0.0.1:0".parse()?, 16)?;
    let addr = listener.local_addr()?;
    // SO_RCVBUF before connect, so the window is small from the handshake on.
    let client = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    client.set_recv_buffer_size(run.opts.rcvbuf as usize)?;
    client
        .connect_timeout(&addr.into(), Duration::from_secs(2))
        .context("connect to the tcp-wmem listener")?;
    let client: TcpStream = client.into();
    let (mut server, _) = listener.accept()?;
    drop(listener);
    server.set_nodelay(true)?;
    client.set_nodelay(true)?;
    server.set_nonblocking(true)?;
    let sfd = server.as_raw_fd();
    let cfd = client.as_raw_fd();

    let msg = vec![b'x'; size];
    let mut written: u64 = 0;
    let mut messages: u64 = 0;
    let mut first_block: Option<u64> = None;
    let mut offset = 0usize;
    let budget = run.budget.within(Duration::from_secs(30));
    // Bounded: never more than 256 MiB whatever the buffers.
    let cap: u64 = 256 << 20;
    run.progress
        .note("tcp-wmem: writing to a client that never reads");
    'outer: loop {
        budget.check("tcp-wmem")?;
        loop {
            match server.write(&msg[offset..]) {
                Ok(0) => break 'outer,
                Ok(n) => {
                    written += n as u64;
                    offset += n;
                    if offset == size {
                        offset = 0;
                        messages += 1;
                    }
                    if written >= cap {
                        break 'outer;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(anyhow!("write to the silent client: {e}")),
            }
        }
        first_block.get_or_insert(written);
        // Blocked: wait a while for room; if none comes, the kernel is full.
        if !wait_writable(sfd, 300) {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    let outq = ioctl_int(sfd, libc::TIOCOUTQ)?;
    let inq = ioctl_int(cfd, libc::FIONREAD)?;
    let sndbuf = socket2::SockRef::from(&server).send_buffer_size()? as u64;
    let rcvbuf = socket2::SockRef::from(&client).recv_buffer_size()? as u64;
    let wmem = sys::read_sysctl("net/ipv4/tcp_wmem")
        .ok()
        .and_then(|t| sys::parse_triple(&t).ok());
    let rmem = sys::read_sysctl("net/ipv4/tcp_rmem")
        .ok()
        .and_then(|t| sys::parse_triple(&t).ok());
    drop(client);
    drop(server);

    let check = accounted(written, outq, inq, size as u64);
    let ref_bytes = crate::evidence::num("kernel-sndbuf", "bytes_accepted");
    let ref_events = crate::evidence::num("kernel-sndbuf", "events_written_dead");
    let fmt3 = |t: Option<[u64; 3]>| match t {
        Some([a, b, c]) => format!("{a} {b} {c}"),
        None => "unreadable".into(),
    };
    let details = vec![
        format!("target: rtcheck's own loopback listener on {addr}; {size} B messages, TCP_NODELAY both ends"),
        format!(
            "accepted {} in {} whole messages before a write stayed blocked for 300 ms (first block after {})",
            fmt_bytes(written),
            fmt_num(messages as f64),
            fmt_bytes(first_block.unwrap_or(written))
        ),
        format!(
            "where the bytes are: {} in the server's send queue + {} in the client's receive queue; read by the client: 0 B",
            fmt_bytes(outq),
            fmt_bytes(inq)
        ),
        format!(
            "SO_SNDBUF {} (tcp_wmem {}), client SO_RCVBUF {} (asked {}, tcp_rmem {})",
            fmt_bytes(sndbuf),
            fmt3(wmem),
            fmt_bytes(rcvbuf),
            run.opts.rcvbuf,
            fmt3(rmem)
        ),
        format!(
            "reference: {} messages of 1 KB = {} \"written\" into a dead connection",
            fmt_num(ref_events),
            fmt_bytes((ref_events * 1024.0) as u64)
        ),
    ];
    let v = match check {
        Err(why) => verification(
            "tcp-wmem",
            None,
            "B",
            super::reference_for("tcp-wmem"),
            format!("invalid: {why}"),
            details,
            false,
            started,
        ),
        Ok(()) => verification(
            "tcp-wmem",
            Some(written as f64),
            "B",
            super::reference_for("tcp-wmem"),
            format!(
                "confirms: {} writes ({}) succeeded and none was delivered to the application; {:.1}x the reference {}",
                fmt_num(messages as f64),
                fmt_bytes(written),
                written as f64 / ref_bytes,
                fmt_bytes(ref_bytes as u64)
            ),
            details,
            true,
            started,
        ),
    };
    Ok(vec![v])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounting_allows_one_message_of_slack() {
        assert!(accounted(10_000, 6_000, 4_000, 1024).is_ok());
        assert!(accounted(10_000, 6_000, 3_500, 1024).is_ok());
        let e = accounted(10_000, 2_000, 1_000, 1024).unwrap_err();
        assert!(e.contains("3000"), "{e}");
    }
}
