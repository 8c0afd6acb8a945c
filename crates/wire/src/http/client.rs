//! The client side's pieces written once: a request head encoded ([`write_head`],
//! [`head`]), a response head read off a blocking socket ([`read_head`]: the one
//! read-until-end-of-head loop, over [`super::response::parse_head`]) and what counts as
//! a read timeout ([`is_timeout`]). Generic over `std::io::Read`: no tokio, no sockets.
use super::response::{self, Head, Limits};
use std::io::Read;
use std::time::Instant;

/// Append a request head: `METHOD TARGET HTTP/1.1`, the headers in order, the blank line.
/// Header values are the caller's, checked where they were parsed (none holds CR or LF).
pub fn write_head<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    out: &mut Vec<u8>,
    method: &str,
    target: &str,
    headers: impl IntoIterator<Item = (K, V)>,
) {
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (k, v) in headers {
        let v = v.as_ref();
        debug_assert!(!v.iter().any(|b| matches!(b, b'\r' | b'\n')), "CR or LF");
        out.extend_from_slice(k.as_ref());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// A request head on its own ([`write_head`]).
pub fn head(method: &str, target: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + 32 * headers.len());
    write_head(&mut out, method, target, headers.iter().copied());
    out
}

/// A read that timed out on a socket with a read timeout (SO_RCVTIMEO gives EAGAIN,
/// which std reports as WouldBlock) or was interrupted: try again.
pub fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// Why no response head was read.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    #[error("closed before the response head")]
    Closed,
    #[error("no complete response head in time")]
    Timeout,
    #[error("response head larger than {0} bytes")]
    TooLarge(usize),
    #[error("{0}")]
    Bad(response::Error),
    #[error("read: {0}")]
    Io(std::io::Error),
    /// The caller's stop check said so (Ctrl-C): checked once per read.
    #[error("stopped")]
    Stopped,
}

/// Read a response head off a blocking reader, `chunk` bytes per read at most (1 takes
/// nothing of the body off the socket), read timeouts retried until `deadline`. Returns
/// the head and the bytes read after it.
pub fn read_head(
    r: &mut impl Read,
    limits: Limits,
    chunk: usize,
    deadline: Instant,
) -> Result<(Head, Vec<u8>), HeadError> {
    read_head_or_stop(r, limits, chunk, deadline, &mut || false)
}

/// [`read_head`] that also ends, with [`HeadError::Stopped`], once `stop` says so: it is
/// asked after every read, so a socket with a short read timeout answers it promptly
/// (how a caller honours Ctrl-C without wire knowing its signal handling).
pub fn read_head_or_stop(
    r: &mut impl Read,
    limits: Limits,
    chunk: usize,
    deadline: Instant,
    stop: &mut dyn FnMut() -> bool,
) -> Result<(Head, Vec<u8>), HeadError> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; chunk.clamp(1, 64 * 1024)];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => return Err(HeadError::Closed),
            Ok(n) => n,
            Err(e) if is_timeout(&e) => 0,
            Err(e) => return Err(HeadError::Io(e)),
        };
        match feed(&mut got, &buf[..n], limits) {
            Ok(Some(done)) => return Ok(done),
            Ok(None) => {}
            Err(response::Error::HeadTooLarge(m)) => return Err(HeadError::TooLarge(m)),
            Err(e) => return Err(HeadError::Bad(e)),
        }
        if stop() {
            return Err(HeadError::Stopped);
        }
        if Instant::now() >= deadline {
            return Err(HeadError::Timeout);
        }
    }
}

/// One step of the read-until-end-of-head loop, for callers that do their own reads
/// (async ones): `new` appended to `got`; once the head is complete, it and the bytes
/// read after it. Parses only when a line end arrived (a head ends at one) or the bound
/// is reached, so a head sent a byte at a time costs no quadratic reparsing.
pub fn feed(
    got: &mut Vec<u8>,
    new: &[u8],
    limits: Limits,
) -> Result<Option<(Head, Vec<u8>)>, response::Error> {
    got.extend_from_slice(new);
    if !new.contains(&b'\n') && got.len() < limits.max_head {
        return Ok(None);
    }
    Ok(response::parse_head(got, limits)?.map(|(head, used)| (head, got.split_off(used))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use std::time::Duration;

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[test]
    fn a_head_is_the_request_line_the_headers_in_order_and_a_blank_line() {
        let h = head(
            "GET",
            "/sse?x=1",
            &[("Host", "127.0.0.1:9"), ("Accept", "a/b")],
        );
        assert_eq!(
            h,
            b"GET /sse?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAccept: a/b\r\n\r\n"
        );
        let mut v = b"x".to_vec();
        write_head(
            &mut v,
            "POST",
            "/",
            [(b"x-a".as_slice(), b"\xff".as_slice())],
        );
        assert_eq!(v, b"xPOST / HTTP/1.1\r\nx-a: \xff\r\n\r\n");
    }

    #[test]
    fn the_head_is_read_and_what_follows_it_kept() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: 1\n\n";
        for chunk in [1, 7, 4096] {
            let mut r = Cursor::new(&raw[..]);
            let (h, rest) = read_head(&mut r, Limits::head(8192), chunk, soon()).unwrap();
            assert_eq!((h.status, h.headers.len()), (200, 1));
            // What was read past the head is kept; the rest is still unread.
            let mut body = rest.clone();
            r.read_to_end(&mut body).unwrap();
            assert_eq!(body, b"data: 1\n\n", "chunk {chunk}");
            if chunk == 1 {
                assert!(rest.is_empty(), "nothing of the body taken");
            }
        }
    }

    #[test]
    fn a_peer_that_closes_sends_garbage_or_too_much_is_an_error() {
        let read = |raw: &[u8], max| {
            read_head(
                &mut Cursor::new(raw.to_vec()),
                Limits::head(max),
                64,
                soon(),
            )
            .unwrap_err()
        };
        assert!(matches!(
            read(b"HTTP/1.1 200 OK\r\nX: 1", 8192),
            HeadError::Closed
        ));
        assert!(matches!(
            read(b"SSH-2.0-x\r\n\r\n", 8192),
            HeadError::Bad(_)
        ));
        let big = [b"HTTP/1.1 200 OK\r\nX: ".as_slice(), &[b'a'; 300]].concat();
        assert!(matches!(read(&big, 128), HeadError::TooLarge(128)));
    }

    #[test]
    fn a_head_fed_in_pieces_is_returned_once_complete_with_what_follows() {
        let raw = b"HTTP/1.1 200 OK\r\nX: 1\r\n\r\nbody";
        for cut in 1..raw.len() {
            let mut got = Vec::new();
            let (a, b) = raw.split_at(cut);
            let first = feed(&mut got, a, Limits::head(8192)).unwrap();
            let (h, rest) = match first {
                Some(done) => done,
                None => feed(&mut got, b, Limits::head(8192)).unwrap().unwrap(),
            };
            assert_eq!((h.status, h.headers.len()), (200, 1), "cut {cut}");
            // What was fed past the head comes back, no more.
            let head_len = raw.len() - 4;
            let want = if cut >= head_len {
                &raw[head_len..cut]
            } else {
                &raw[head_len..]
            };
            assert_eq!(rest, want, "cut {cut}");
        }
        let mut got = Vec::new();
        let big = [b"HTTP/1.1 200 OK\r\nX: ".as_slice(), &[b'a'; 300]].concat();
        let e = feed(&mut got, &big, Limits::head(128)).unwrap_err();
        assert!(matches!(e, response::Error::HeadTooLarge(128)), "{e}");
        let e = feed(&mut Vec::new(), b"SSH-2.0-x\r\n\r\n", Limits::head(64));
        assert!(e.is_err());
    }

    #[test]
    fn read_timeouts_are_retried_until_the_deadline() {
        struct Silent;
        impl Read for Silent {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::WouldBlock.into())
            }
        }
        let past = Instant::now();
        let e = read_head(&mut Silent, Limits::head(64), 16, past).unwrap_err();
        assert!(matches!(e, HeadError::Timeout), "{e}");
        // A stop check ends the wait before the deadline, after the read it follows.
        let far = Instant::now() + std::time::Duration::from_secs(3600);
        let mut asked = 0;
        let e = read_head_or_stop(&mut Silent, Limits::head(64), 16, far, &mut || {
            asked += 1;
            asked == 3
        })
        .unwrap_err();
        assert!(matches!(e, HeadError::Stopped), "{e}");
        assert_eq!(asked, 3);
        assert!(is_timeout(&std::io::ErrorKind::TimedOut.into()));
        assert!(!is_timeout(&std::io::ErrorKind::ConnectionReset.into()));
    }
}
