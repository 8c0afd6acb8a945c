//! tcp-wmem: a client with a small SO_RCVBUF that never reads; the server writes messages
//! without blocking until a write would block and stays blocked. Every byte the kernel
//! accepted is then accounted for in the two kernel queues (server send queue + client
//! receive queue) while the client application has read none of them.
use super::{verification, Run};
use crate::evidence::fmt_num;
use crate::findings::Verification;
use anyhow::{anyhow, Context};
use rtcheck_base::os::deadline::Deadline;
use rtcheck_base::os::proc;
use rtcheck_base::units::fmt_bytes;
use socket2::{Domain, Protocol, Socket, Type};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
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

fn wait_writable(s: &TcpStream, ms: u16) -> bool {
    use rtcheck_base::os::fd::{poll_one, POLLOUT};
    poll_one(s, POLLOUT, ms) & POLLOUT != 0
}

pub fn run(run: &Run) -> anyhow::Result<Vec<Verification>> {
    let started = Instant::now();
    let size = run.opts.message_size as usize;
    let (server, client, addr) = silent_pair(run.opts.rcvbuf as usize)?;
    let budget = run.budget.within(Duration::from_secs(30));
    run.progress
        .note("tcp-wmem: writing to a client that never reads");
    let w = fill(&server, size, &budget)?;
    std::thread::sleep(Duration::from_millis(50));
    let q = Queues::read(&server, &client)?;
    drop(client);
    drop(server);
    let details = details(run, addr, size, &w, &q);
    Ok(vec![judge(size, &w, &q, details, started)])
}

/// A loopback connection whose client never reads, SO_RCVBUF `rcvbuf` set before connect
/// (so the window is small from the handshake on). The server side is non-blocking.
fn silent_pair(rcvbuf: usize) -> anyhow::Result<(TcpStream, TcpStream, SocketAddr)> {
    let listener = super::listener::listen("127.0.0.1:0".parse()?, 16)?;
    let addr = listener.local_addr()?;
    let client = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    client.set_recv_buffer_size(rcvbuf)?;
    client
        .connect_timeout(&addr.into(), Duration::from_secs(2))
        .context("connect to the tcp-wmem listener")?;
    let client: TcpStream = client.into();
    let (server, _) = listener.accept()?;
    drop(listener);
    server.set_nodelay(true)?;
    client.set_nodelay(true)?;
    server.set_nonblocking(true)?;
    Ok((server, client, addr))
}

/// What the writer got away with.
struct Written {
    bytes: u64,
    messages: u64,
    first_block: Option<u64>,
}

/// Write `size`-byte messages until a write stays blocked for 300 ms (the kernel is full)
/// or 256 MiB, whatever the buffers.
fn fill(mut server: &TcpStream, size: usize, budget: &Deadline) -> anyhow::Result<Written> {
    let msg = vec![b'x'; size];
    let mut w = Written {
        bytes: 0,
        messages: 0,
        first_block: None,
    };
    let mut offset = 0usize;
    let cap: u64 = 256 << 20;
    'outer: loop {
        budget.check("tcp-wmem")?;
        loop {
            match server.write(&msg[offset..]) {
                Ok(0) => break 'outer,
                Ok(n) => {
                    w.bytes += n as u64;
                    offset += n;
                    if offset == size {
                        offset = 0;
                        w.messages += 1;
                    }
                    if w.bytes >= cap {
                        break 'outer;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(anyhow!("write to the silent client: {e}")),
            }
        }
        w.first_block.get_or_insert(w.bytes);
        // Blocked: wait a while for room; if none comes, the kernel is full.
        if !wait_writable(server, 300) {
            break;
        }
    }
    Ok(w)
}

/// Where the written bytes are, and the buffer sizes and sysctls behind them.
struct Queues {
    outq: u64,
    inq: u64,
    sndbuf: u64,
    rcvbuf: u64,
    wmem: Option<[u64; 3]>,
    rmem: Option<[u64; 3]>,
}

impl Queues {
    fn read(server: &TcpStream, client: &TcpStream) -> anyhow::Result<Queues> {
        let triple = |p: &str| {
            proc::read_sysctl(p)
                .ok()
                .and_then(|t| proc::parse_triple(&t).ok())
        };
        Ok(Queues {
            outq: ioctl_int(server.as_raw_fd(), libc::TIOCOUTQ)?,
            inq: ioctl_int(client.as_raw_fd(), libc::FIONREAD)?,
            sndbuf: socket2::SockRef::from(server).send_buffer_size()? as u64,
            rcvbuf: socket2::SockRef::from(client).recv_buffer_size()? as u64,
            wmem: triple("net/ipv4/tcp_wmem"),
            rmem: triple("net/ipv4/tcp_rmem"),
        })
    }
}

fn details(run: &Run, addr: SocketAddr, size: usize, w: &Written, q: &Queues) -> Vec<String> {
    let ref_events = crate::evidence::num("kernel-sndbuf", "events_written_dead");
    let fmt3 = |t: Option<[u64; 3]>| match t {
        Some([a, b, c]) => format!("{a} {b} {c}"),
        None => "unreadable".into(),
    };
    vec![
        format!("target: rtcheck's own loopback listener on {addr}; {size} B messages, TCP_NODELAY both ends"),
        format!(
            "accepted {} in {} whole messages before a write stayed blocked for 300 ms (first block after {})",
            fmt_bytes(w.bytes),
            fmt_num(w.messages as f64),
            fmt_bytes(w.first_block.unwrap_or(w.bytes))
        ),
        format!(
            "where the bytes are: {} in the server's send queue + {} in the client's receive queue; read by the client: 0 B",
            fmt_bytes(q.outq),
            fmt_bytes(q.inq)
        ),
        format!(
            "SO_SNDBUF {} (tcp_wmem {}), client SO_RCVBUF {} (asked {}, tcp_rmem {})",
            fmt_bytes(q.sndbuf),
            fmt3(q.wmem),
            fmt_bytes(q.rcvbuf),
            run.opts.rcvbuf,
            fmt3(q.rmem)
        ),
        format!(
            "reference: {} messages of 1 KB = {} \"written\" into a dead connection",
            fmt_num(ref_events),
            fmt_bytes((ref_events * 1024.0) as u64)
        ),
    ]
}

/// Valid when every written byte is in one of the two queues (one message of slack).
/// Whether the writes measured the kernel's buffers at all: some bytes accepted, then a
/// write that blocked. Zero bytes, or a writer stopped by the cap before any write
/// blocked, measured nothing of the buffers (and nothing passes on nothing).
fn filled(w: &Written) -> Result<(), String> {
    if w.bytes == 0 {
        return Err("the kernel accepted no byte from the writer".into());
    }
    if w.first_block.is_none() {
        return Err(format!(
            "no write blocked after {} bytes: the buffers never filled",
            w.bytes
        ));
    }
    Ok(())
}

fn judge(
    size: usize,
    w: &Written,
    q: &Queues,
    details: Vec<String>,
    started: Instant,
) -> Verification {
    let ref_bytes = crate::evidence::num("kernel-sndbuf", "bytes_accepted");
    match filled(w).and_then(|()| accounted(w.bytes, q.outq, q.inq, size as u64)) {
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
            Some(w.bytes as f64),
            "B",
            super::reference_for("tcp-wmem"),
            format!(
                "confirms: {} writes ({}) succeeded and none was delivered to the application; {:.1}x the reference {}",
                fmt_num(w.messages as f64),
                fmt_bytes(w.bytes),
                w.bytes as f64 / ref_bytes,
                fmt_bytes(ref_bytes as u64)
            ),
            details,
            true,
            started,
        ),
    }
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

    #[test]
    fn the_verdict_needs_every_byte_in_a_queue() {
        let w = Written {
            bytes: 100_000,
            messages: 97,
            first_block: Some(50_000),
        };
        let q = |outq, inq| Queues {
            outq,
            inq,
            sndbuf: 4096,
            rcvbuf: 2048,
            wmem: None,
            rmem: None,
        };
        let t0 = Instant::now();
        let v = judge(1024, &w, &q(60_000, 40_000), vec![], t0);
        assert!(v.valid && v.measured == Some(100_000.0), "{v:?}");
        assert!(
            v.verdict.starts_with("confirms: 97 writes"),
            "{}",
            v.verdict
        );
        let v = judge(1024, &w, &q(10_000, 40_000), vec![], t0);
        assert!(!v.valid && v.measured.is_none() && v.verdict.starts_with("invalid:"));
        // Nothing written (both queues empty add up): no verdict on nothing.
        let none = Written {
            bytes: 0,
            messages: 0,
            first_block: None,
        };
        let v = judge(1024, &none, &q(0, 0), vec![], t0);
        assert!(!v.valid && v.verdict.contains("accepted no byte"), "{v:?}");
        // Never blocked (stopped at the cap): the buffers were not measured.
        let unblocked = Written {
            first_block: None,
            ..w
        };
        let v = judge(1024, &unblocked, &q(60_000, 40_000), vec![], t0);
        assert!(!v.valid && v.verdict.contains("no write blocked"), "{v:?}");
    }

    #[test]
    fn a_silent_client_fills_the_kernel_and_stops_the_writer() {
        let (server, client, _) = silent_pair(4096).unwrap();
        let budget = Deadline::new(Duration::from_secs(60));
        let w = fill(&server, 1024, &budget).unwrap();
        assert!(w.bytes > 0 && w.bytes < 256 << 20, "{}", w.bytes);
        std::thread::sleep(Duration::from_millis(50));
        let q = Queues::read(&server, &client).unwrap();
        assert!(accounted(w.bytes, q.outq, q.inq, 1024).is_ok());
    }
}
