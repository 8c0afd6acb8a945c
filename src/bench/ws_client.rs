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

/// Pure: what a close code means (RFC 6455 7.4.1, the IANA registry; 4000-4999 are the
/// application's, and libraries often write 4 + the HTTP status there).
pub fn close_meaning(code: u16) -> String {
    let s = match code {
        1000 => "normal closure",
        1001 => "going away",
        1002 => "protocol error",
        1003 => "unsupported data",
        1007 => "invalid payload data",
        1008 => "policy violation",
        1009 => "message too big",
        1010 => "mandatory extension",
        1011 => "internal error",
        1012 => "service restart",
        1013 => "try again later",
        1014 => "bad gateway",
        3000 => "unauthorized",
        3003 => "forbidden",
        3008 => "timeout",
        4400..=4599 => return format!("the application's code (as HTTP {})", code - 4000),
        4000..=4999 => "the application's code",
        _ => "unregistered",
    };
    s.to_string()
}

/// Pure: a close frame the server sent, as one phrase: `close 1008 (policy violation),
/// reason "no token"`. The reason is the peer's text: escaped and bounded.
pub fn close_phrase(frame: Option<&CloseFrame>) -> String {
    let Some(f) = frame else {
        return "a close frame without a code".into();
    };
    let code = u16::from(f.code);
    let head: String = f.reason.chars().take(120).collect();
    let reason = rtcheck_base::escape::plain(&head);
    match reason.is_empty() {
        true => format!("close {code} ({})", close_meaning(code)),
        false => format!(
            "close {code} ({}), reason \"{reason}\"",
            close_meaning(code)
        ),
    }
}

/// Pure: whether a close is a stream ending as planned (1000 normal, 1001 going away,
/// 1012 service restart: a client reconnects); any other is a refusal or an error, and
/// its code and reason are the cause of what the client did not get.
pub fn is_error_close(frame: Option<&CloseFrame>) -> bool {
    frame.is_some_and(|f| !matches!(u16::from(f.code), 1000 | 1001 | 1012))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_is_named_with_its_code_meaning_and_reason() {
        use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
        let f = |code: u16, reason: &str| CloseFrame {
            code: CloseCode::from(code),
            reason: reason.into(),
        };
        let auth = f(1008, "authentication\x1b[31m required");
        let s = close_phrase(Some(&auth));
        assert!(
            s.starts_with("close 1008 (policy violation), reason \"authentication"),
            "{s}"
        );
        assert!(!s.contains('\x1b'), "the peer's text is made inert: {s}");
        assert_eq!(
            close_phrase(Some(&f(4401, ""))),
            "close 4401 (the application's code (as HTTP 401))"
        );
        assert_eq!(close_phrase(None), "a close frame without a code");
        assert!(is_error_close(Some(&auth)));
        assert!(is_error_close(Some(&f(1011, "boom"))));
        for planned in [1000, 1001, 1012] {
            assert!(!is_error_close(Some(&f(planned, "bye"))), "{planned}");
        }
        assert!(!is_error_close(None));
    }
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
