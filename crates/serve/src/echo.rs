//! `/echo`: a WebSocket echo endpoint off the fan-out path (never registered with the hub,
//! never sent a published round), so a conformance suite can run every case against the
//! same framing code as `/ws`.
use super::hub::CloseReason;
use super::hub::Hub;
use super::inbox::{Inbox, ReadEnd};
use super::io;
use rtcheck_wire::ws::echo_close_code;
use rtcheck_wire::ws::{self, Inbound};
use std::sync::atomic::Ordering::Relaxed;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The replies to a batch of frames, in order: data echoed with its opcode, a pong for
/// each of the latest [`ws::MAX_PONGS`] pings (older ones in a burst go unanswered),
/// and the close echo (nothing after a Close). Returns (bytes, closing).
pub fn replies(frames: &mut Vec<Inbound>) -> (Vec<u8>, Option<u16>) {
    let pings = frames
        .iter()
        .take_while(|f| !matches!(f, Inbound::Close(_)))
        .filter(|f| matches!(f, Inbound::Ping(_)))
        .count();
    let mut skip = pings.saturating_sub(ws::MAX_PONGS);
    let (mut out, mut close) = (Vec::new(), None);
    for f in frames.drain(..) {
        match f {
            Inbound::Text(p) => out.extend(ws::frame(ws::OP_TEXT, &p)),
            Inbound::Binary(p) => out.extend(ws::frame(ws::OP_BINARY, &p)),
            Inbound::Ping(_) if skip > 0 => skip -= 1,
            Inbound::Ping(p) => out.extend(ws::frame(ws::OP_PONG, &p)),
            Inbound::Pong => {}
            Inbound::Close(code) => {
                let c = echo_close_code(code);
                out.extend(ws::close_frame(c));
                close = Some(c);
                break;
            }
        }
    }
    (out, close)
}

/// Serve one echo connection until it closes, goes silent for --pong-wait, takes longer
/// than --message-timeout for a message, or the server shuts down.
pub async fn run(hub: &Hub, s: &TcpStream, leftover: Vec<u8>) {
    let cfg = &hub.cfg;
    hub.counters.echo_connections.fetch_add(1, Relaxed);
    let goodbye = |code: u16| async move {
        let _ = io::write_with_deadline(s, &ws::close_frame(code), cfg.write_deadline).await;
    };
    let mut inbox = match Inbox::new(leftover, cfg.max_message, &hub.counters.partial_frame_bytes) {
        Ok(b) => b,
        Err(e) => return goodbye(e.close_code()).await,
    };
    let mut last_in = Instant::now();
    loop {
        let (out, closing) = replies(&mut inbox.frames);
        if !out.is_empty() && write_failure_of(s, &out, cfg.write_deadline).await {
            return;
        }
        if closing.is_some() {
            return;
        }
        let silent = cfg.pong_wait.map(|w| last_in + w);
        let msg_dead = inbox.message_deadline(cfg.message_timeout);
        let wake = [silent, msg_dead].into_iter().flatten().min();
        let sleep = async {
            match wake {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = s.readable() => {
                if r.is_err() {
                    return;
                }
                match inbox.read(s) {
                    Ok(0) => {}
                    Ok(_) => last_in = Instant::now(),
                    Err(ReadEnd::Bad(e)) => {
                        // What came before the bad frame is answered first.
                        let (out, _) = replies(&mut inbox.frames);
                        if !out.is_empty() && write_failure_of(s, &out, cfg.write_deadline).await {
                            return;
                        }
                        return goodbye(e.close_code()).await;
                    }
                    Err(ReadEnd::Gone(_)) => return,
                }
            }
            _ = sleep => {
                let late = msg_dead.is_some_and(|d| Instant::now() >= d);
                return goodbye(if late { ws::CLOSE_POLICY } else { ws::CLOSE_GOING_AWAY }).await;
            }
            _ = hub.shutdown_signalled() => return goodbye(ws::CLOSE_GOING_AWAY).await,
        }
    }
}

/// Write; true if the connection failed.
async fn write_failure_of(
    s: &TcpStream,
    bytes: &[u8],
    deadline: Option<std::time::Duration>,
) -> bool {
    io::write_with_deadline(s, bytes, deadline)
        .await
        .map_err(CloseReason::from_write)
        .is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_data_collapses_pings_and_stops_at_close() {
        let mut f = vec![
            Inbound::Text(b"hi".to_vec()),
            Inbound::Ping(b"1".to_vec()),
            Inbound::Binary(vec![1, 2]),
            Inbound::Ping(b"2".to_vec()),
            Inbound::Close(Some(1000)),
            Inbound::Text(b"after".to_vec()),
        ];
        let (out, close) = replies(&mut f);
        let mut want = ws::frame(ws::OP_TEXT, b"hi");
        want.extend(ws::frame(ws::OP_PONG, b"1"));
        want.extend(ws::frame(ws::OP_BINARY, &[1, 2]));
        want.extend(ws::frame(ws::OP_PONG, b"2"));
        want.extend(ws::close_frame(1000));
        assert_eq!(out, want);
        assert_eq!(close, Some(1000));
        assert!(f.is_empty());
        // A burst: only the latest 16 pings are answered.
        let mut f: Vec<Inbound> = (0..20u8).map(|i| Inbound::Ping(vec![i])).collect();
        let (out, close) = replies(&mut f);
        let want: Vec<u8> = (4..20u8)
            .flat_map(|i| ws::frame(ws::OP_PONG, &[i]))
            .collect();
        assert_eq!((out, close), (want, None));
    }
}
