//! `--delivery session-ack` (issue 12): a session per client, a bounded queue of unacked
//! messages kept while it is away, acks by seq, expiry after `--session-ttl`, and the caps
//! on how many sessions (and how much memory) the server holds. A leaf the hub owns: it is
//! told of every round ([`Sessions::publish`]), every client that leaves
//! ([`Sessions::detach`]) and every epoch reset ([`Sessions::reset_all`]); registering a
//! session client, its acks and its HTTP routes live above the hub (`resume`, `routes`).
use super::ring::{Round, POLL_MAX};
use super::sync::lock;
use rtcheck_wire::epoch::{Epoch, Position};
use rtcheck_wire::payload;
use rtcheck_wire::stats::SessionStats;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the sessions are configured with (from serve's validated config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `--delivery session-ack`: otherwise the sessions stay empty and idle.
    pub enabled: bool,
    pub ttl: Duration,
    /// `--session-queue`: unacked messages one session holds.
    pub queue: usize,
    /// `--max-sessions`.
    pub max: usize,
    /// `--session-memory` in bytes.
    pub memory: u64,
    /// The payload's `--size` and `--text`, to encode a replay.
    pub size: usize,
    pub text: bool,
}

/// The seq a session-ack client acks implicitly by resuming (Last-Event-ID, `since`):
/// none when the position is from another epoch (its seqs are not this server's).
pub fn ack_from(epoch: Epoch, pos: Option<Position>) -> Option<u64> {
    pos.filter(|p| p.epoch.is_none_or(|e| e == epoch))
        .map(|p| p.seq)
}

/// What one session can hold at worst (away with a full queue): per entry its payload copy
/// (malloc rounds to 16 bytes and adds a 16-byte header), the entry twice (a VecDeque
/// grows to twice what it holds), plus the fixed part. Measured: 953 MB for 10,000
/// sessions away 3 s at 30 msg/s x 1 KiB (docs/delivery.md).
pub fn worst_session_bytes(queue: usize, size: usize) -> u64 {
    let entry = size.next_multiple_of(16) + 16 + 2 * ENTRY_OVERHEAD;
    (SESSION_OVERHEAD + queue * entry) as u64
}

/// Sessions `--session-memory` holds when each may reach its worst.
pub fn sessions_in_memory(memory: u64, queue: usize, size: usize) -> u64 {
    memory / worst_session_bytes(queue, size).max(1)
}

/// A client's session found or made: its hello, the (seq, ts) of its unacked messages and
/// the gap marker it is owed.
type Attached = (Hello, Vec<(u64, u64)>, Option<(u64, u64)>);

/// Per-entry bookkeeping beyond the payload (seq, ts, the payload's pointer and length).
const ENTRY_OVERHEAD: usize = std::mem::size_of::<Entry>();
/// A session's fixed part: the struct, its id twice (map key and the conn index) and the
/// map slots.
const SESSION_OVERHEAD: usize = std::mem::size_of::<Session>() + 2 * (32 + 48);

/// One unacked message. The session holds its own copy of the payload, as a server with
/// per-user data would; a replay re-encodes from it.
#[derive(Debug)]
struct Entry {
    seq: u64,
    ts: u64,
    payload: Box<[u8]>,
}

#[derive(Debug, Default)]
struct Session {
    queue: VecDeque<Entry>,
    /// Seqs dropped by overflow and not yet acked past: the next gap marker.
    lost: Option<(u64, u64)>,
    acked: u64,
    /// The last seq queued for this session (acks above it were never sent).
    last_queued: u64,
    conn: Option<u64>,
    /// When the client left (None while connected).
    away_since: Option<Instant>,
    bytes: usize,
}

impl Session {
    /// Queue a message, dropping the oldest when full; returns how many were dropped.
    fn push(&mut self, seq: u64, ts: u64, payload: &[u8], cap: usize) -> u64 {
        let mut freed = 0;
        let mut dropped = 0;
        while self.queue.len() >= cap {
            let Some(e) = self.queue.pop_front() else {
                break;
            };
            freed += e.payload.len() + ENTRY_OVERHEAD;
            dropped += 1;
            self.lost = Some((self.lost.map_or(e.seq, |l| l.0), e.seq));
        }
        self.queue.push_back(Entry {
            seq,
            ts,
            payload: payload.into(),
        });
        self.last_queued = seq;
        let added = payload.len() + ENTRY_OVERHEAD;
        self.bytes = self.bytes + added - freed;
        dropped
    }

    /// Drop everything up to `seq`; returns the bytes freed.
    fn ack(&mut self, seq: u64) -> usize {
        let mut freed = 0;
        while self.queue.front().is_some_and(|e| e.seq <= seq) {
            if let Some(e) = self.queue.pop_front() {
                freed += e.payload.len() + ENTRY_OVERHEAD;
            }
        }
        if self.queue.is_empty() {
            self.queue = VecDeque::new(); // an idle session holds no buffer
        }
        self.acked = self.acked.max(seq);
        if self.lost.is_some_and(|(_, b)| b <= self.acked) {
            self.lost = None;
        }
        self.bytes -= freed;
        freed
    }

    /// The gap marker still owed (beyond what the client acked).
    fn gap(&self) -> Option<(u64, u64)> {
        let (a, b) = self.lost?;
        (b > self.acked).then(|| (a.max(self.acked + 1), b))
    }
}

#[derive(Debug, Default)]
struct Inner {
    by_id: HashMap<String, Session>,
    by_conn: HashMap<u64, String>,
    bytes: usize,
}

/// Every session of the server. Empty and idle unless `--delivery session-ack`.
#[derive(Debug)]
pub struct Sessions {
    inner: Mutex<Inner>,
    pub ttl: Duration,
    cap: usize,
    /// `--max-sessions`: beyond it a new session is refused (a known one never is).
    max: usize,
    /// `--session-memory`: sessions held at worst stay within it (a new one beyond is
    /// refused like one beyond `max`), and one session's worst.
    memory: u64,
    worst: u64,
    refused_memory: AtomicU64,
    size: usize,
    text: bool,
    enabled: bool,
    created: AtomicU64,
    expired: AtomicU64,
    resets: AtomicU64,
    overflow: AtomicU64,
    acks: AtomicU64,
    acks_ignored: AtomicU64,
    refused: AtomicU64,
}

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
    pub fn new(l: &Limits) -> Sessions {
        Sessions {
            inner: Mutex::new(Inner::default()),
            ttl: l.ttl,
            cap: l.queue.max(1),
            max: l.max.max(1),
            memory: l.memory,
            worst: worst_session_bytes(l.queue.max(1), l.size),
            refused_memory: AtomicU64::new(0),
            size: l.size,
            text: l.text,
            enabled: l.enabled,
            created: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            resets: AtomicU64::new(0),
            overflow: AtomicU64::new(0),
            acks: AtomicU64::new(0),
            acks_ignored: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Sessions `--session-memory` holds when each reaches its worst.
    fn by_memory(&self) -> usize {
        (self.memory / self.worst.max(1)).min(usize::MAX as u64) as usize
    }

    /// Sessions held at most: the lower of `--max-sessions` and what the memory holds.
    pub fn cap(&self) -> usize {
        self.max.min(self.by_memory())
    }

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

    /// Room for a new session? At the cap (the lower of `--max-sessions` and what
    /// `--session-memory` holds at worst), sessions already past their TTL go first (the
    /// expiry loop may not have reached them); if none, the new session is refused and
    /// counted. Existing sessions are never evicted for a new one: under a connect flood,
    /// the clients that are away keep what they are owed.
    fn admit(&self, inner: &mut Inner, now: Instant) -> Result<(), Refused> {
        let cap = self.cap();
        if inner.by_id.len() < cap {
            return Ok(());
        }
        self.expire_locked(inner, now);
        if inner.by_id.len() < cap {
            return Ok(());
        }
        self.refused.fetch_add(1, Relaxed);
        if cap < self.max {
            self.refused_memory.fetch_add(1, Relaxed);
        }
        let soonest = inner
            .by_id
            .values()
            .filter_map(|s| s.away_since)
            .map(|t| self.ttl.saturating_sub(now.duration_since(t)))
            .min()
            .unwrap_or(self.ttl);
        Err(Refused(soonest.as_secs_f64().ceil().max(1.0) as u64))
    }

    /// Would a client presenting `presented` get a session? (Checked before a WebSocket
    /// handshake is answered, so a refusal can be a 503; a refusal is counted.)
    pub fn check(&self, presented: Option<&str>) -> Result<(), Refused> {
        if !self.enabled {
            return Ok(());
        }
        let mut g = lock(&self.inner);
        if presented.is_some_and(|p| g.by_id.contains_key(p)) {
            return Ok(());
        }
        self.admit(&mut g, Instant::now())
    }

    /// An epoch reset (a cluster's seqs start over): every session's queue holds seqs of
    /// the old epoch, so every session goes; a client presenting one gets a new session
    /// with reset: true (a connected one was just sent a reset marker).
    pub fn reset_all(&self) {
        if !self.enabled {
            return;
        }
        let mut g = lock(&self.inner);
        let n = g.by_id.len() as u64;
        *g = Inner::default();
        self.expired.fetch_add(n, Relaxed);
    }

    /// The publisher's hook: queue the round in every session (connected or away).
    pub fn publish(&self, r: &Round) {
        if !self.enabled {
            return;
        }
        let body = payload::encode(self.size, r.seq, r.ts);
        let mut g = lock(&self.inner);
        let inner = &mut *g;
        let mut dropped = 0;
        for s in inner.by_id.values_mut() {
            let before = s.bytes;
            dropped += s.push(r.seq, r.ts, &body, self.cap);
            inner.bytes = inner.bytes + s.bytes - before;
        }
        self.overflow.fetch_add(dropped, Relaxed);
    }

    /// Find or create the client's session and take what it must get first: the unacked
    /// messages (after `ack_upto`, an implicit ack from Last-Event-ID / since) and the gap
    /// marker for an overflow. Called under the hub's registration lock.
    pub fn attach(
        &self,
        presented: Option<&str>,
        ack_upto: Option<u64>,
    ) -> Result<Attached, Refused> {
        self.attach_as(presented, ack_upto, false)
    }

    /// `polling`: no connection holds the session, so its TTL runs from this request.
    /// A new session is refused at `--max-sessions`; a known one is always attached.
    fn attach_as(
        &self,
        presented: Option<&str>,
        ack_upto: Option<u64>,
        polling: bool,
    ) -> Result<Attached, Refused> {
        let mut g = lock(&self.inner);
        let inner = &mut *g;
        let known = presented.filter(|p| inner.by_id.contains_key(*p));
        let (id, reset) = match known {
            Some(p) => (p.to_string(), false),
            None => {
                self.admit(inner, Instant::now())?;
                let id = new_id();
                inner.by_id.insert(id.clone(), Session::default());
                inner.bytes += SESSION_OVERHEAD;
                self.created.fetch_add(1, Relaxed);
                if presented.is_some() {
                    self.resets.fetch_add(1, Relaxed);
                }
                (id, presented.is_some())
            }
        };
        let s = inner.by_id.get_mut(&id).expect("just found or inserted");
        if let Some(a) = ack_upto.filter(|&a| a <= s.last_queued && !reset) {
            inner.bytes -= s.ack(a);
        }
        if let Some(old) = s.conn.take() {
            inner.by_conn.remove(&old);
        }
        s.away_since = polling.then(Instant::now);
        // (seq, ts) only: the rounds are encoded after the locks are released.
        let replay = s
            .queue
            .iter()
            .map(|e| payload::decode(&e.payload).unwrap_or((e.seq, e.ts)))
            .collect();
        let gap = s.gap();
        let hello = Hello {
            session: id,
            reset,
            epoch: None,
        };
        Ok((hello, replay, gap))
    }

    /// Encode a replay from a session's (seq, ts) pairs.
    pub fn encode(&self, epoch: Epoch, replay: &[(u64, u64)]) -> Vec<Round> {
        let b = |&(seq, ts): &(u64, u64)| Round::build(self.size, self.text, epoch, seq, ts);
        replay.iter().map(b).collect()
    }

    pub fn bind(&self, conn: u64, id: &str) {
        let mut g = lock(&self.inner);
        if let Some(s) = g.by_id.get_mut(id) {
            if s.conn.is_none() && s.away_since.is_none() {
                s.conn = Some(conn);
                g.by_conn.insert(conn, id.to_string());
            }
        }
    }

    /// The hub's deregister hook: the session stays, its TTL starts.
    pub fn detach(&self, conn: u64) {
        if !self.enabled {
            return;
        }
        let mut g = lock(&self.inner);
        if let Some(id) = g.by_conn.remove(&conn) {
            if let Some(s) = g.by_id.get_mut(&id) {
                s.conn = None;
                s.away_since = Some(Instant::now());
            }
        }
    }

    /// Ack everything up to `seq` for a connection's session.
    pub fn ack_conn(&self, conn: u64, seq: u64) {
        let id = lock(&self.inner).by_conn.get(&conn).cloned();
        match id {
            Some(id) => self.ack(&id, seq),
            None => {
                self.acks_ignored.fetch_add(1, Relaxed);
            }
        }
    }

    /// Ack by session id; an unknown session or a seq never sent is ignored and counted.
    /// Returns whether the ack was applied.
    pub fn ack(&self, id: &str, seq: u64) {
        let mut g = lock(&self.inner);
        let inner = &mut *g;
        match inner.by_id.get_mut(id) {
            Some(s) if seq <= s.last_queued => {
                inner.bytes -= s.ack(seq);
                self.acks.fetch_add(1, Relaxed);
            }
            _ => {
                self.acks_ignored.fetch_add(1, Relaxed);
            }
        }
    }

    /// Forget sessions away for longer than the TTL; returns how many.
    pub fn expire(&self, now: Instant) -> usize {
        self.expire_locked(&mut lock(&self.inner), now)
    }

    fn expire_locked(&self, inner: &mut Inner, now: Instant) -> usize {
        let ttl = self.ttl;
        let mut freed = 0;
        let before = inner.by_id.len();
        inner.by_id.retain(|_, s| {
            let keep = s.away_since.is_none_or(|t| now.duration_since(t) < ttl);
            if !keep {
                freed += s.bytes + SESSION_OVERHEAD;
            }
            keep
        });
        let n = before - inner.by_id.len();
        inner.bytes -= freed;
        if n > 0 && inner.by_id.capacity() > 4 * inner.by_id.len().max(16) {
            inner.by_id.shrink_to_fit();
        }
        self.expired.fetch_add(n as u64, Relaxed);
        n
    }

    pub fn stats(&self) -> SessionStats {
        let g = lock(&self.inner);
        SessionStats {
            count: g.by_id.len() as u64,
            max: self.max as u64,
            refused: self.refused.load(Relaxed),
            memory_budget: self.memory,
            worst_session_bytes: self.worst,
            max_by_memory: self.by_memory() as u64,
            refused_memory: self.refused_memory.load(Relaxed),
            connected: g.by_conn.len() as u64,
            bytes: g.bytes as u64,
            messages: g.by_id.values().map(|s| s.queue.len() as u64).sum(),
            created: self.created.load(Relaxed),
            expired: self.expired.load(Relaxed),
            resets: self.resets.load(Relaxed),
            overflow_messages: self.overflow.load(Relaxed),
            acks: self.acks.load(Relaxed),
            acks_ignored: self.acks_ignored.load(Relaxed),
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

    /// Expire sessions in the background until `shutdown` resolves (a few times per TTL,
    /// at most every second), and give the freed memory back to the OS.
    pub async fn expire_until(&self, shutdown: impl std::future::Future<Output = ()>) {
        let every = (self.ttl / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = &mut shutdown => return,
            }
            if self.expire(Instant::now()) > 0 {
                rtcheck_base::os::proc::trim_heap();
            }
        }
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

/// 128 random bits in hex (the kernel's, or a clock-and-counter mix where it fails).
fn new_id() -> String {
    rtcheck_base::os::random::hex(16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(cap: usize) -> Sessions {
        let o = crate::config::Options {
            delivery: rtcheck_wire::delivery::Delivery::SessionAck,
            session_queue: Some(cap),
            size: 64,
            ..Default::default()
        };
        let cfg = crate::config::Config::from_options_with(&o, 1, None).unwrap();
        Sessions::new(&cfg.session_limits())
    }

    fn round(seq: u64) -> Round {
        Round::build(64, false, Epoch(1), seq, seq * 10)
    }

    #[test]
    fn unacked_messages_replay_and_acks_free_them() {
        let s = sessions(100);
        let (h, replay, gap) = s.attach(None, None).unwrap();
        assert!(!h.reset && replay.is_empty() && gap.is_none());
        assert_eq!(h.session.len(), 32);
        for q in 1..=5 {
            s.publish(&round(q));
        }
        let st = s.stats();
        assert_eq!((st.count, st.messages), (1, 5));
        assert_eq!(
            st.bytes as usize,
            SESSION_OVERHEAD + 5 * (64 + ENTRY_OVERHEAD)
        );
        s.ack(&h.session, 3);
        assert_eq!(s.stats().messages, 2);
        let (h2, replay, gap) = s.attach(Some(&h.session), None).unwrap();
        assert_eq!(
            h2,
            Hello {
                session: h.session.clone(),
                reset: false,
                epoch: None,
            }
        );
        assert_eq!(replay, [(4, 40), (5, 50)]);
        assert_eq!(s.encode(Epoch(1), &replay)[1].seq, 5);
        assert!(gap.is_none());
        // A seq never sent, or an unknown session: ignored and counted.
        s.ack(&h.session, 99);
        s.ack("nope", 1);
        let st = s.stats();
        assert_eq!((st.acks, st.acks_ignored, st.messages), (1, 2, 2));
    }

    #[test]
    fn overflow_is_a_gap_marker_until_acked_past() {
        let s = sessions(3);
        let (h, ..) = s.attach(None, None).unwrap();
        for q in 1..=7 {
            s.publish(&round(q));
        }
        assert_eq!(s.stats().overflow_messages, 4);
        let (_, replay, gap) = s.attach(Some(&h.session), Some(2)).unwrap();
        assert_eq!(gap, Some((3, 4)), "acked 2 through Last-Event-ID");
        assert_eq!(replay.iter().map(|r| r.0).collect::<Vec<_>>(), [5, 6, 7]);
        s.ack(&h.session, 5);
        let (_, _, gap) = s.attach(Some(&h.session), None).unwrap();
        assert_eq!(gap, None);
    }

    #[test]
    fn unknown_sessions_reset_and_away_sessions_expire() {
        let s = sessions(10);
        let (h, ..) = s.attach(Some("gone"), None).unwrap();
        assert!(h.reset);
        assert_eq!(s.stats().resets, 1);
        s.bind(7, &h.session);
        s.publish(&round(1));
        let t0 = Instant::now();
        assert_eq!(s.expire(t0 + Duration::from_secs(3600)), 0, "connected");
        s.detach(7);
        assert_eq!(s.expire(Instant::now()), 0, "within the TTL");
        assert_eq!(s.expire(Instant::now() + s.ttl), 1);
        let st = s.stats();
        assert_eq!((st.count, st.bytes, st.expired), (0, 0, 1));
        let (h2, ..) = s.attach(Some(&h.session), None).unwrap();
        assert!(h2.reset && h2.session != h.session);
    }

    #[test]
    fn at_the_cap_expired_sessions_go_first_then_new_ones_are_refused() {
        let mut s = sessions(10);
        s.max = 1;
        let (h, ..) = s.attach(None, None).unwrap();
        s.bind(7, &h.session);
        // Connected: nothing frees up before a TTL, so that is the Retry-After.
        let ttl = s.ttl.as_secs();
        assert_eq!(s.attach(None, None).unwrap_err(), Refused(ttl));
        assert_eq!(s.check(Some("unknown")), Err(Refused(ttl)));
        assert!(s.check(Some(&h.session)).is_ok(), "a known session");
        s.detach(7);
        let later = Instant::now() + s.ttl / 2;
        let r = s.admit(&mut lock(&s.inner), later).unwrap_err();
        assert!((1..=ttl / 2 + 1).contains(&r.0), "{r:?}");
        // Past its TTL (the expiry loop has not run): it makes room, counted as expired.
        assert!(s.admit(&mut lock(&s.inner), Instant::now() + s.ttl).is_ok());
        let st = s.stats();
        assert_eq!((st.count, st.expired, st.refused, st.max), (0, 1, 3, 1));
    }

    #[test]
    fn the_memory_budget_caps_new_sessions_like_max_sessions() {
        let mut s = sessions(10);
        assert_eq!(s.worst, worst_session_bytes(10, 64));
        s.memory = 3 * s.worst + 1;
        let ids: Vec<String> = (0..3)
            .map(|_| s.attach(None, None).unwrap().0.session)
            .collect();
        let r = s.attach(None, None).unwrap_err();
        let m = s.refusal_message(r);
        assert!(m.contains("session memory full: 3 sessions"), "{m}");
        assert!(s
            .refused_json(r)
            .contains("\"error\":\"session memory full\""));
        assert!(
            s.check(Some(&ids[0])).is_ok(),
            "a known session is never refused"
        );
        let st = s.stats();
        assert_eq!(
            (st.count, st.refused, st.refused_memory, st.max_by_memory),
            (3, 1, 1, 3)
        );
        // Full queues stay within the budget: the worst is an upper bound of the gauge.
        for q in 1..=20 {
            s.publish(&round(q));
        }
        assert!(s.stats().bytes <= s.memory, "{:?}", s.stats());
        // The count cap still applies when it is the lower one.
        s.max = 2;
        assert!(s.refusal_message(r).contains("--max-sessions"));
    }

    #[test]
    fn resume_ids_ack_only_in_this_epoch() {
        // A resume from another epoch acks nothing; a bare number or the same epoch does.
        let at = |seq, epoch| Some(Position { seq, epoch });
        assert_eq!(ack_from(Epoch(1), at(5, Some(Epoch(2)))), None);
        assert_eq!(ack_from(Epoch(1), at(5, Some(Epoch(1)))), Some(5));
        assert_eq!(ack_from(Epoch(1), at(5, None)), Some(5));
        let hello = Hello {
            session: "s".into(),
            reset: true,
            epoch: Some(Epoch(3)),
        };
        assert_eq!(
            hello.json(),
            "{\"session\":\"s\",\"reset\":true,\"epoch\":\"0000000000000003\"}"
        );
    }
}
