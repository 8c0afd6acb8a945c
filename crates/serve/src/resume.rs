//! Resuming above the hub: registering a session-ack client (its session attached under
//! the hub's registration lock), a plain `/ws` client that may send a resume message, and
//! the answers to what a WebSocket client sends (`{"ack":SEQ}`, `{"since":SEQ,"epoch":E}`).
use super::hub::{Conn, Hub};
use super::replay::Replay;
use super::ring::Round;
use super::session::{Hello, Refused};
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::epoch::{self, Epoch, Position, Reset};
use rtcheck_wire::transport::Transport;
use std::sync::Arc;
use tokio::net::TcpStream;

/// A registered session client: its connection, what it gets first, and its hello.
pub type Registered = (Arc<Conn>, Replay, Hello);

/// Register a session-ack client: attach its session under the hub's registration lock
/// (so no message is missed or sent twice by the hub), bind the connection to it. At
/// `--max-sessions` a new session is refused: the stream comes back with the refusal.
pub fn register(
    hub: &Hub,
    stream: TcpStream,
    transport: Transport,
    presented: Option<&str>,
    ack_upto: Option<u64>,
) -> Result<Registered, (TcpStream, Refused)> {
    let (conn, (mut hello, replay, gap)) = hub.try_register_with(stream, transport, |_| {
        let a = hub.sessions.attach(presented, ack_upto)?;
        let skip = a.1.last().map_or(0, |r| r.0);
        Ok((a, skip))
    })?;
    hub.sessions.bind(conn.id, &hello.session);
    let epoch = hub.epoch();
    hello.epoch = Some(epoch);
    // Encoded as it is written, a chunk at a time (super::replay).
    let replay = Replay::built(epoch, replay, gap);
    Ok((conn, replay, hello))
}

/// Register a plain `/ws` client (no `since`) that may resume with a message: remember
/// the ring's last seq at the moment it joined. Returns its hello (the first frame:
/// epoch and that seq); the connection stays "writing" until the caller has sent it.
pub fn register_ws(hub: &Hub, stream: TcpStream) -> (Arc<Conn>, Vec<u8>) {
    // A cluster node's last delivery may be a gap marker, which never enters the ring:
    // the client joined after it, so a resume owes that gap too.
    let (conn, (epoch, joined)) = hub.register_with(stream, Transport::Websocket, |ring| {
        let back = ring.back().map_or(0, |r| r.seq);
        let marked = hub.relay.get().map_or(0, |r| r.last_seq());
        ((hub.epoch(), back.max(marked)), 0)
    });
    conn.set_joined(joined);
    (conn, epoch::ws_hello(epoch, joined))
}

/// The answer to a WebSocket resume message: a reset marker (the position was not this
/// server's), written before the replay.
pub type ResumeReply = (Option<Reset>, Replay);

/// A WebSocket text message from a client. session-ack: `{"ack":SEQ}` acks up to SEQ.
/// seq-ring: `{"since":SEQ,"epoch":"E"}` (the resume message, for clients that cannot set
/// the URL; once per connection) returns what to send: a reset marker if SEQ is from
/// another epoch or beyond where the client joined, then the gap marker and the ring after
/// SEQ (from its start after a reset) up to where the client joined. Anything else is
/// ignored, as before.
pub fn on_ws_text(hub: &Hub, conn: &Conn, text: &[u8]) -> Option<ResumeReply> {
    let v: serde_json::Value = serde_json::from_slice(text).ok()?;
    match hub.cfg.delivery {
        Delivery::SessionAck => {
            let seq = v.get("ack")?.as_u64()?;
            hub.sessions.ack_conn(conn.id, seq);
            None
        }
        Delivery::SeqRing => ws_resume_reply(hub, conn, resume_since(&v)?, &[]),
        Delivery::Snapshot => None,
    }
}

/// The position of a resume message `{"since":SEQ,"epoch":"E"}` (a string since is read
/// as a resume id, `SEQ@EPOCH` included; the epoch is optional, as for old clients).
fn resume_since(v: &serde_json::Value) -> Option<Position> {
    let mut p = match v.get("since")? {
        serde_json::Value::String(s) => Position::parse(s),
        n => Position {
            seq: n.as_u64().unwrap_or(0),
            epoch: None,
        },
    };
    if let Some(e) = v.get("epoch") {
        p.epoch = Some(e.as_str().map_or(Epoch::FOREIGN, Epoch::parse));
    }
    Some(p)
}

/// A resume message under seq-ring with a cluster: its seq, for the caller to fetch the
/// Redis ring (async) and answer with [`ws_resume_reply`]. None: not one, or no cluster.
/// Only the first resume message of a connection is answered: a repeated one would cost a
/// Redis read and a replay each time, for nothing.
pub fn cluster_resume_since(hub: &Hub, conn: &Conn, text: &[u8]) -> Option<Position> {
    if hub.relay.get().is_none() || hub.cfg.delivery != Delivery::SeqRing || !conn.resumable() {
        return None;
    }
    resume_since(&serde_json::from_slice(text).ok()?)
}

/// The answer to a resume message (once per connection): a reset marker if the position is
/// from another epoch or beyond where the client joined, the gap marker and the ring
/// (merged with `extra`, the cluster's) after `since` up to where the client joined. A
/// cluster node that had delivered nothing when the client joined will never deliver what
/// the Stream already held: all of it is replayed.
pub fn ws_resume_reply(
    hub: &Hub,
    conn: &Conn,
    pos: Position,
    extra: &[Round],
) -> Option<ResumeReply> {
    let upto = match conn.take_joined()? {
        0 => extra.last().map_or(0, |r| r.seq),
        j => j,
    };
    let resume = epoch::decide(pos, hub.epoch(), upto);
    let (replay, gap) = hub.replay_between(resume.since(), upto, extra);
    // Written by the connection's loop, the reset marker first, then the replay a chunk
    // at a time (super::replay).
    Some((resume.reset(), hub.plan(replay, gap)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::tests::{cluster_hub, drain, fan_out_gap, pair, FakeRelay, GAP};
    use rtcheck_wire::ws::{Decoder, Inbound};
    use tokio::io::AsyncReadExt;

    /// A plain `/ws` client registering before the gap's marking, between the marking
    /// and its fan-out, or after it (as in `hub::tests`), then sending the resume message
    /// `{"since":3}`: the gap markers it got live and in the answer.
    async fn ws_resume_around_the_gap(at: usize) -> (usize, usize) {
        let (h, relay): (Arc<Hub>, Arc<FakeRelay>) = cluster_hub().await;
        let (s, mut client) = pair().await;
        let mut s = Some(s);
        let mut conn = None;
        for step in 0..3 {
            if step == at {
                conn = Some(register_ws(&h, s.take().unwrap()).0);
            }
            match step {
                0 => relay.mark(GAP.1),
                1 => fan_out_gap(&h).await,
                _ => {}
            }
        }
        let conn = conn.unwrap();
        let live = drain(&conn).iter().filter(|i| i.seq == GAP.1).count();
        let msg = format!(r#"{{"since":3,"epoch":"{}"}}"#, h.epoch());
        let (reset, replay) = on_ws_text(&h, &conn, msg.as_bytes()).expect("answered");
        assert!(reset.is_none());
        let src = h.replay_source();
        crate::replay::write(
            &src,
            &conn.stream,
            Transport::Websocket,
            b"",
            replay,
            |_| {},
        )
        .await
        .unwrap();
        // The answer is all that is written: read it to its end.
        socket2::SockRef::from(&conn.stream)
            .shutdown(std::net::Shutdown::Write)
            .unwrap();
        let mut bytes = Vec::new();
        let read = client.read_to_end(&mut bytes);
        tokio::time::timeout(crate::hub::tests::PATIENCE, read)
            .await
            .expect("the answer within the bound")
            .unwrap();
        let mut frames = Vec::new();
        Decoder::client(false)
            .decode(&bytes, 1 << 20, &mut frames)
            .unwrap();
        let gap = format!(r#"{{"from":{},"to":{}}}"#, GAP.0, GAP.1);
        assert!(
            frames
                .iter()
                .all(|f| matches!(f, Inbound::Text(t) if t == gap.as_bytes())),
            "only the gap marker: {frames:?}"
        );
        (live, frames.len())
    }

    /// A `/ws` client joined between a gap's marking and its fan-out gets the gap live
    /// and again in the answer to its resume message: a duplicate, not a loss. Left so: to
    /// skip it live (skip = the marked seq at registration) the hub would have to trust
    /// that its relay never marks a seq before a ring round's fan-out, or a client that
    /// never sends a resume message would miss that round.
    #[tokio::test]
    async fn a_ws_client_joined_between_a_gap_marking_and_its_fan_out_gets_it_twice() {
        // (live, in the answer) for: before the marking, between, after the fan-out.
        assert_eq!(ws_resume_around_the_gap(0).await, (1, 0));
        assert_eq!(ws_resume_around_the_gap(1).await, (1, 1));
        assert_eq!(ws_resume_around_the_gap(2).await, (0, 1));
    }
}
