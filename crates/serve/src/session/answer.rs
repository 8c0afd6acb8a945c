//! What a session client is told: its hello, a refusal (503 message, `/poll` body), the
//! `/poll?session=` answer and `GET /session?id=`. Text only; the state is in `super`.
use super::queue::SESSION_OVERHEAD;
use super::{ack_from, Sessions};
use crate::ring::POLL_MAX;
use crate::sync::lock;
use rtcheck_wire::epoch::{Epoch, Position};

/// A new session refused at `--max-sessions`: the seconds after which one may free up
/// (the soonest expiry of an away session; the TTL when every session is connected).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused(pub u64);

impl Refused {
    pub fn message(self, max: usize) -> String {
        format!(
            "too many sessions: {max} held (serve --max-sessions); retry after {} s",
            self.0
        )
    }
}

/// What a client is told at connect: its session and whether the one it presented was
/// gone (then everything it had not acked is lost, and it is told so).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub session: String,
    pub reset: bool,
    /// The server's epoch (set by `resume::register`; sessions live in one instance's memory,
    /// so a restarted server knows none of the old ones: they get reset: true).
    pub epoch: Option<Epoch>,
}

impl Hello {
    pub fn json(&self) -> String {
        let epoch = self
            .epoch
            .map_or(String::new(), |e| format!(",\"epoch\":\"{e}\""));
        format!(
            "{{\"session\":\"{}\",\"reset\":{}{epoch}}}",
            self.session, self.reset
        )
    }
    pub fn sse(&self) -> String {
        format!("event: session\ndata: {}\n\n", self.json())
    }
}

impl Sessions {
    /// The 503's message: which cap was reached and when to retry.
    pub fn refusal_message(&self, r: Refused) -> String {
        let cap = self.cap();
        if cap < self.max {
            format!(
                "session memory full: {cap} sessions of up to {} each fill serve --session-memory {}; retry after {} s",
                rtcheck_base::units::fmt_bytes(self.worst),
                rtcheck_base::units::fmt_bytes(self.memory),
                r.0
            )
        } else {
            r.message(self.max)
        }
    }

    /// `/poll?session=ID&since=SEQ` under session-ack: `since` acks, the answer holds the
    /// session's unacked messages after it and the usual keys, plus `session` and `reset`.
    pub fn poll(
        &self,
        presented: Option<&str>,
        pos: Option<Position>,
        epoch: Epoch,
    ) -> Result<String, Refused> {
        let ack = ack_from(epoch, pos);
        let (hello, replay, gap) = self.attach_as(presented, ack, true)?;
        // A new session, or a position from another epoch: what it holds is all owed.
        let since = ack.filter(|_| !hello.reset).unwrap_or(0);
        // Bounded like a plain poll: the client polls again from `latest` (which acks).
        let owed: Vec<(u64, u64)> = replay.into_iter().filter(|r| r.0 > since).collect();
        // A JSON message is padded to --size bytes (at least its seq and ts), plus a comma.
        let per = self.size.max(64) + 1;
        let n = (POLL_MAX / per).clamp(1, owed.len().max(1));
        let more = owed.len() > n;
        let replay = self.encode(epoch, &owed[..n.min(owed.len())]);
        let mut out = format!(
            "{{\"session\":\"{}\",\"reset\":{},\"epoch\":\"{epoch}\",\"latest\":{},\"gap\":{},\"oldest\":{},\"more\":{more},\"messages\":[",
            hello.session,
            hello.reset || pos.is_some_and(|p| p.epoch.is_some_and(|e| e != epoch)),
            replay.last().map_or(since, |r| r.seq),
            gap.is_some(),
            gap.map(|g| g.1 + 1)
                .or(replay.first().map(|r| r.seq))
                .map_or("null".into(), |o| o.to_string()),
        );
        let items: Vec<&str> = replay
            .iter()
            .filter(|r| r.seq > since)
            .map(|r| std::str::from_utf8(&r.json).unwrap_or("{}"))
            .collect();
        out.push_str(&items.join(","));
        out.push_str("]}");
        Ok(out)
    }

    /// The body of a refused `/poll?session=`.
    pub fn refused_json(&self, r: Refused) -> String {
        let error = match self.cap() < self.max {
            true => "session memory full",
            false => "too many sessions",
        };
        format!(
            "{{\"error\":\"{error}\",\"max_sessions\":{},\"session_memory\":{},\"retry_after\":{}}}",
            self.max, self.memory, r.0
        )
    }

    /// `GET /session?id=ID`: one session's state, for clients and `verify delivery`.
    pub fn describe(&self, id: &str) -> Option<String> {
        let g = lock(&self.inner);
        let s = g.by_id.get(id)?;
        Some(format!(
            "{{\"session\":\"{id}\",\"connected\":{},\"messages\":{},\"bytes\":{},\"acked\":{},\"gap\":{}}}",
            s.conn.is_some(),
            s.queue.len(),
            s.bytes + SESSION_OVERHEAD,
            s.acked,
            s.gap().map_or("null".into(), |(a, b)| format!("{{\"from\":{a},\"to\":{b}}}"))
        ))
    }
}
