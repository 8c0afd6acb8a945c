//! The one WebSocket client configuration of bench's load generator and publisher and of
//! verify delivery's clients (issue 41 item 7). tungstenite answers every ping and, by
//! default, queues without bound what the peer does not read: a server that floods pings
//! and never reads grew a client past 1 GB. Here what a client may hold unsent is one
//! message of its own plus [`SLACK`]; past it tungstenite keeps only the latest pong owed
//! (RFC 6455 5.5.3 allows answering only the most recent ping).
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};

/// Bytes a client may hold unsent beyond its largest message: a few hundred pongs.
pub const SLACK: usize = 64 * 1024;
/// Largest message (and frame) a client accepts from a server: far above any payload a
/// run sends, far below tungstenite's 64 MiB default per connection.
pub const MAX_MESSAGE: usize = 16 << 20;

/// The client configuration for a client whose largest own message is `largest_send`
/// bytes (a subscribe or ack message, or the publisher's payload).
pub fn config(largest_send: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .write_buffer_size(0)
        .max_write_buffer_size(largest_send.saturating_add(SLACK))
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE))
}

/// A close frame as tungstenite gives it, for `rtcheck_wire::ws::close` (the table).
fn code_reason(frame: Option<&CloseFrame>) -> Option<(u16, &str)> {
    frame.map(|f| (u16::from(f.code), f.reason.as_ref()))
}

/// [`rtcheck_wire::ws::close::phrase`] of a tungstenite close frame, the run's
/// `secrets` (URL query values, header values) masked in the server's reason.
pub fn close_phrase(frame: Option<&CloseFrame>, secrets: &[String]) -> String {
    rtcheck_wire::ws::close::phrase(code_reason(frame), secrets)
}

/// [`rtcheck_wire::ws::close::is_error`] of a tungstenite close frame.
pub fn is_error_close(frame: Option<&CloseFrame>) -> bool {
    rtcheck_wire::ws::close::is_error(code_reason(frame).map(|(c, _)| c))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::io::{Cursor, ErrorKind, Read, Write};
    use tokio_tungstenite::tungstenite::protocol::{Role, WebSocket};

    /// A peer that floods pings and never reads: every write would block; the largest
    /// buffer the client ever tries to write is what it holds unsent.
    struct Flood {
        pings: Cursor<Vec<u8>>,
        largest_write: usize,
    }

    impl Read for Flood {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.pings.read(buf)? {
                0 => Err(ErrorKind::WouldBlock.into()),
                n => Ok(n),
            }
        }
    }

    impl Write for Flood {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.largest_write = self.largest_write.max(buf.len());
            Err(ErrorKind::WouldBlock.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What a client held unsent after 20,000 pings of 125 B (2.6 MB of pongs owed).
    fn held_after_flood(cfg: WebSocketConfig) -> usize {
        let ping = rtcheck_wire::ws::frame(rtcheck_wire::ws::OP_PING, &[b'p'; 125]);
        let flood = Flood {
            pings: Cursor::new(ping.repeat(20_000)),
            largest_write: 0,
        };
        let mut ws = WebSocket::from_raw_socket(flood, Role::Client, Some(cfg));
        let mut pings = 0;
        loop {
            match ws.read() {
                Ok(m) if m.is_ping() => pings += 1,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        assert_eq!(pings, 20_000);
        ws.get_ref().largest_write
    }

    #[test]
    fn a_ping_flood_that_never_reads_holds_at_most_the_bound() {
        let held = held_after_flood(config(100));
        assert!(held <= 100 + SLACK, "{held} B held unsent");
        // tungstenite's default holds every pong owed: the bound is what makes the difference.
        assert!(held_after_flood(WebSocketConfig::default()) > 1_000_000);
    }
}
