//! What a WebSocket client sent and the server has not acted on yet: unparsed bytes, the
//! decoder's partial message, decoded frames. It tracks since when a message has been
//! unfinished (bounded by --message-timeout) and mirrors the bytes it holds in the
//! `partial_frame_bytes` gauge, so dripped frames are visible and cannot live forever.
use super::hub::CloseReason;
use super::io::{self, ReadOutcome};
use rtcheck_wire::ws::{Decoder, FrameError, Inbound};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Why reading ends the connection.
#[derive(Debug)]
pub enum ReadEnd {
    /// Invalid input: close with this code.
    Bad(FrameError),
    /// The socket ended or failed.
    Gone(CloseReason),
}

pub struct Inbox<'a> {
    buf: Vec<u8>,
    dec: Decoder,
    pub frames: Vec<Inbound>,
    max: usize,
    partial_since: Option<Instant>,
    held: u64,
    gauge: &'a AtomicU64,
}

impl<'a> Inbox<'a> {
    /// Start with the bytes that came with the handshake.
    pub fn new(leftover: Vec<u8>, max: usize, gauge: &'a AtomicU64) -> Result<Self, FrameError> {
        let mut b = Inbox {
            buf: leftover,
            dec: Decoder::default(),
            frames: Vec::new(),
            max,
            partial_since: None,
            held: 0,
            gauge,
        };
        if !b.buf.is_empty() {
            let n = b.dec.decode(&b.buf, max, &mut b.frames)?;
            b.buf.drain(..n);
        }
        if b.buf.is_empty() {
            b.buf = Vec::new();
        }
        b.account();
        Ok(b)
    }

    /// Read what the socket has (without waiting) and decode it. Ok(bytes read).
    pub fn read(&mut self, s: &TcpStream) -> Result<usize, ReadEnd> {
        let mut err = None;
        let (buf, dec, frames, max) = (&mut self.buf, &mut self.dec, &mut self.frames, self.max);
        let out = io::read_available(s, 64 * 1024, |b| {
            buf.extend_from_slice(b);
            match dec.decode(buf, max, frames) {
                // After a Close nothing more is read (RFC 6455 5.5.1).
                Ok(n) => {
                    buf.drain(..n);
                    !dec.is_closed()
                }
                Err(e) => {
                    err = Some(e);
                    false
                }
            }
        });
        if self.buf.is_empty() {
            self.buf = Vec::new(); // idle clients hold no read buffer
        }
        self.account();
        if let Some(e) = err {
            return Err(ReadEnd::Bad(e));
        }
        match out {
            Ok(ReadOutcome::Data(n)) => Ok(n),
            Ok(ReadOutcome::Eof) => Err(ReadEnd::Gone(CloseReason::Peer)),
            Err(e) => Err(ReadEnd::Gone(CloseReason::from_io(&e))),
        }
    }

    /// When the unfinished message (if any) must be complete.
    pub fn message_deadline(&self, timeout: Option<Duration>) -> Option<Instant> {
        self.partial_since.zip(timeout).map(|(t, d)| t + d)
    }

    /// Update the gauge and the start of the unfinished message.
    fn account(&mut self) {
        let now = (self.buf.len() + self.dec.held_bytes()) as u64;
        if now > self.held {
            self.gauge.fetch_add(now - self.held, Relaxed);
        } else {
            self.gauge.fetch_sub(self.held - now, Relaxed);
        }
        self.held = now;
        let partial = now > 0 || self.dec.in_message();
        match (partial, self.partial_since) {
            (false, _) => self.partial_since = None,
            (true, None) => self.partial_since = Some(Instant::now()),
            (true, Some(_)) => {}
        }
    }
}

impl Drop for Inbox<'_> {
    fn drop(&mut self) {
        self.gauge.fetch_sub(self.held, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtcheck_wire::ws::{client_frame, OP_BINARY, OP_CONT};

    #[test]
    fn the_gauge_follows_held_bytes_and_returns_to_zero() {
        let gauge = AtomicU64::new(0);
        let mut wire = client_frame(OP_BINARY, false, &[1; 100], [1, 2, 3, 4]);
        let tail = client_frame(OP_CONT, true, &[2; 10], [1, 2, 3, 4]);
        wire.extend_from_slice(&tail[..5]);
        {
            let b = Inbox::new(wire, 1024, &gauge).unwrap();
            // 100 bytes of the first fragment plus 5 bytes of the next frame's header.
            assert_eq!(gauge.load(Relaxed), 105);
            assert!(b.message_deadline(Some(Duration::from_secs(1))).is_some());
            assert_eq!(b.message_deadline(None), None);
        }
        assert_eq!(gauge.load(Relaxed), 0);
        let b = Inbox::new(
            client_frame(OP_BINARY, true, &[1; 10], [0; 4]),
            1024,
            &gauge,
        )
        .unwrap();
        assert_eq!(gauge.load(Relaxed), 0);
        assert_eq!(b.message_deadline(Some(Duration::from_secs(1))), None);
        assert_eq!(b.frames.len(), 1);
    }
}
