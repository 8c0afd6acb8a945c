//! `--delivery session-ack` (issue 12): a session per client, a bounded queue of unacked
//! messages kept while it is away, acks by seq, expiry after `--session-ttl`, and the caps
//! on how many sessions (and how much memory) the server holds. A leaf the hub owns: it is
//! told of every round ([`Sessions::publish`]), every client that leaves
//! ([`Sessions::detach`]) and every epoch reset ([`Sessions::reset_all`]); registering a
//! session client, its acks and its HTTP routes live above the hub (`resume`, `routes`).
use super::ring::Round;
use super::sync::lock;
use queue::{Session, ENTRY_OVERHEAD, SESSION_OVERHEAD};
use rtcheck_wire::epoch::{Epoch, Position};
use rtcheck_wire::payload;
use rtcheck_wire::stats::SessionStats;
use std::collections::HashMap;
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

pub use answer::{Hello, Refused};

/// A client's session found or made: its hello, the (seq, ts) of its unacked messages and
/// the gap marker it is owed.
type Attached = (Hello, Vec<(u64, u64)>, Option<(u64, u64)>);

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
}

/// 128 random bits in hex (the kernel's, or a clock-and-counter mix where it fails).
fn new_id() -> String {
    rtcheck_base::os::random::hex(16)
}

mod answer;
mod queue;
#[cfg(test)]
mod tests;
