//! Delivery modes beyond the shared ring (issue 12): `--delivery session-ack` (a session
//! per client: a bounded queue of unacked messages kept while it is away, acks by seq,
//! expiry after `--session-ttl`) and `--delivery snapshot` (the latest message first).
//! The hub calls in at four points: publish, register, deregister and snapshot.
use super::hub::{Conn, Hub};
use super::ring::Round;
use super::sync::lock;
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::epoch::{self, Epoch, Position, Reset};
use rtcheck_wire::http::Request;
use rtcheck_wire::payload;
use rtcheck_wire::transport::Transport;
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// `--ring`: a bare number is messages, a size with a unit is bytes of payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingSize {
    Messages(u64),
    Bytes(u64),
}

impl RingSize {
    /// Whole messages of `size` bytes (bytes are rounded up).
    pub fn messages(self, size: u64) -> u64 {
        match self {
            RingSize::Messages(n) => n,
            RingSize::Bytes(b) => b.div_ceil(size.max(1)),
        }
    }
}

pub fn parse_ring(s: &str) -> Result<RingSize, String> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse()
            .map(RingSize::Messages)
            .map_err(|_| format!("{t}: too large"));
    }
    rtcheck_base::units::parse_size(t).map(RingSize::Bytes)
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

/// The banner's sessions lines: TTL, queue, both caps and what they hold at worst.
pub fn banner_line(cfg: &super::config::Config) -> String {
    let per = worst_session_bytes(cfg.session_queue, cfg.size);
    let by_memory = sessions_in_memory(cfg.session_memory.bytes, cfg.session_queue, cfg.size);
    let held = (cfg.max_sessions as u64).min(by_memory);
    format!(
        "  sessions: max {} (new ones then get 503 + Retry-After), ttl {}, queue {}\n  \
         session memory: {} ({})\n  \
         sessions at worst: {} ({held} x {}, away with full queues)\n",
        cfg.max_sessions,
        rtcheck_base::units::fmt_duration(cfg.session_ttl),
        cfg.session_queue,
        rtcheck_base::units::fmt_bytes(cfg.session_memory.bytes),
        cfg.session_memory.source,
        rtcheck_base::units::fmt_bytes(per * held),
        rtcheck_base::units::fmt_bytes(per),
    )
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

/// Session counters (`/metrics`, `/control/stats` under `sessions`).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct SessionStats {
    /// Sessions held (connected or away).
    pub count: u64,
    /// `--max-sessions`: the cap on `count`.
    pub max: u64,
    /// New sessions refused at the cap (503 + Retry-After; WebSocket close 1013).
    pub refused: u64,
    /// `--session-memory` in bytes, what one session can hold at worst, the sessions that
    /// fit (the cap is the lower of this and `max`), and the refusals where memory was the
    /// binding cap.
    pub memory_budget: u64,
    pub worst_session_bytes: u64,
    pub max_by_memory: u64,
    pub refused_memory: u64,
    pub connected: u64,
    /// Bytes of session state held: payload copies plus bookkeeping (counted, not the
    /// allocator's view; RSS is the independent check).
    pub bytes: u64,
    /// Unacked messages held over every session.
    pub messages: u64,
    pub created: u64,
    pub expired: u64,
    /// A client presented an unknown or expired session and got a new one (reset: true).
    pub resets: u64,
    /// Messages dropped from a full session queue (each reported in a gap marker).
    pub overflow_messages: u64,
    pub acks: u64,
    /// Acks for a seq never sent to that session, or for no session: ignored.
    pub acks_ignored: u64,
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
    /// Plain `/ws` connections that may still send a resume message: the ring's last seq
    /// when each joined (everything after it is sent live).
    joined: Mutex<HashMap<u64, u64>>,
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
    /// The server's epoch (set by [`register`]; sessions live in one instance's memory,
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
    pub fn new(cfg: &super::config::Config) -> Sessions {
        Sessions {
            inner: Mutex::new(Inner::default()),
            ttl: cfg.session_ttl,
            cap: cfg.session_queue.max(1),
            max: cfg.max_sessions.max(1),
            memory: cfg.session_memory.bytes,
            worst: worst_session_bytes(cfg.session_queue.max(1), cfg.size),
            refused_memory: AtomicU64::new(0),
            size: cfg.size,
            text: cfg.text,
            enabled: cfg.delivery == Delivery::SessionAck,
            joined: Mutex::new(HashMap::new()),
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
        lock(&self.joined).clear();
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
    fn attach(&self, presented: Option<&str>, ack_upto: Option<u64>) -> Result<Attached, Refused> {
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
    fn encode(&self, epoch: Epoch, replay: &[(u64, u64)]) -> Vec<Round> {
        let b = |&(seq, ts): &(u64, u64)| Round::build(self.size, self.text, epoch, seq, ts);
        replay.iter().map(b).collect()
    }

    fn bind(&self, conn: u64, id: &str) {
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
        lock(&self.joined).remove(&conn);
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
    fn poll(
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
        let n = (super::ring::POLL_MAX / per).clamp(1, owed.len().max(1));
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

    /// `GET /session?id=ID`: one session's state, for clients and `verify delivery`.
    fn describe(&self, id: &str) -> Option<String> {
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

/// 128 random bits in hex (the kernel's getrandom; a clock-and-counter mix if it fails).
fn new_id() -> String {
    let mut b = [0u8; 16];
    // SAFETY: b is a valid 16-byte buffer.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        static N: AtomicU64 = AtomicU64::new(0);
        let t = rtcheck_base::os::clock::now_ns() ^ N.fetch_add(1, Relaxed).rotate_left(40);
        b[..8].copy_from_slice(&t.to_le_bytes());
        b[8..].copy_from_slice(&(std::process::id() as u64 ^ t.rotate_left(17)).to_le_bytes());
    }
    b.iter().fold(String::with_capacity(32), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

/// A registered session client: its connection, what it gets first, and its hello.
pub type Registered = (Arc<Conn>, super::replay::Replay, Hello);

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
    let replay = super::replay::Replay::built(epoch, replay, gap);
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
        let marked = hub.cluster.get().map_or(0, |c| c.last_seq.load(Relaxed));
        ((hub.epoch(), back.max(marked)), 0)
    });
    lock(&hub.sessions.joined).insert(conn.id, joined);
    (conn, epoch::ws_hello(epoch, joined))
}

/// The answer to a WebSocket resume message: a reset marker (the position was not this
/// server's), written before the replay.
pub type ResumeReply = (Option<Reset>, super::replay::Replay);

/// A WebSocket text message from a client. session-ack: `{"ack":SEQ}` acks up to SEQ.
/// seq-ring: `{"since":SEQ,"epoch":"E"}` (the resume message, for clients that cannot set
/// the URL; once per connection) returns what to send: a reset marker if SEQ is from
/// another epoch or beyond where the client joined, then the gap marker and the ring after
/// SEQ (from its start after a reset) up to where the client joined. Anything else is
/// ignored, as before.
pub fn on_ws_text(hub: &Hub, conn: u64, text: &[u8]) -> Option<ResumeReply> {
    let v: serde_json::Value = serde_json::from_slice(text).ok()?;
    match hub.cfg.delivery {
        Delivery::SessionAck => {
            let seq = v.get("ack")?.as_u64()?;
            hub.sessions.ack_conn(conn, seq);
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
pub fn cluster_resume_since(hub: &Hub, conn: u64, text: &[u8]) -> Option<Position> {
    if hub.cluster.get().is_none()
        || hub.cfg.delivery != Delivery::SeqRing
        || !lock(&hub.sessions.joined).contains_key(&conn)
    {
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
    conn: u64,
    pos: Position,
    extra: &[Round],
) -> Option<ResumeReply> {
    let upto = match lock(&hub.sessions.joined).remove(&conn)? {
        0 => extra.last().map_or(0, |r| r.seq),
        j => j,
    };
    let resume = epoch::decide(pos, hub.epoch(), upto);
    let (replay, gap) = hub.replay_between(resume.since(), upto, extra);
    // Written by the connection's loop, the reset marker first, then the replay a chunk
    // at a time (super::replay).
    Some((resume.reset(), hub.plan(replay, gap)))
}

/// `POST /ack?session=ID&seq=SEQ` and `GET /session?id=ID`: `(status, type, body)`, or
/// None for other paths.
pub fn route(hub: &Hub, req: &Request) -> Option<(u16, &'static str, String)> {
    const JSON: &str = "application/json";
    const TEXT: &str = "text/plain; charset=utf-8";
    let on = hub.cfg.delivery == Delivery::SessionAck;
    match req.path.as_str() {
        "/ack" if req.method != "POST" => Some((405, TEXT, "POST /ack\n".into())),
        "/ack" if !on => Some((
            404,
            TEXT,
            "/ack needs serve --delivery session-ack\n".into(),
        )),
        "/ack" => {
            let id = req.query_param("session").unwrap_or_default();
            let Some(Ok(seq)) = req.query_param("seq").map(|v| v.trim().parse::<u64>()) else {
                return Some((
                    400,
                    TEXT,
                    "/ack needs ?session=ID&seq=SEQ (an unsigned integer)\n".into(),
                ));
            };
            hub.sessions.ack(&id, seq);
            // Ignored acks (unknown session, never-sent seq) are counted, not refused: a
            // client racing an expiry must not be broken by it.
            Some((200, JSON, "{\"ok\":true}".into()))
        }
        // With a `session` parameter (empty: issue one); without, the plain ring poll.
        "/poll" if on && (req.method == "GET" || req.method == "HEAD") => {
            let presented = req.query_param("session")?;
            hub.counters.polls.fetch_add(1, Relaxed);
            let since = super::server::resume_position(req);
            let presented = Some(presented.as_str()).filter(|p| !p.is_empty());
            // A refusal's Retry-After header is added by the caller (`retry_after`).
            Some(match hub.sessions.poll(presented, since, hub.epoch()) {
                Ok(body) => (200, JSON, body),
                Err(r) => (503, JSON, refused_json(r, &hub.sessions)),
            })
        }
        "/session" => {
            let id = req.query_param("id").unwrap_or_default();
            Some(match hub.sessions.describe(&id) {
                Some(body) => (200, JSON, body),
                None => (404, JSON, "{\"error\":\"no such session\"}".into()),
            })
        }
        _ => None,
    }
}

/// The body of a refused `/poll?session=`.
fn refused_json(r: Refused, s: &Sessions) -> String {
    let error = match s.cap() < s.max {
        true => "session memory full",
        false => "too many sessions",
    };
    format!(
        "{{\"error\":\"{error}\",\"max_sessions\":{},\"session_memory\":{},\"retry_after\":{}}}",
        s.max, s.memory, r.0
    )
}

/// The `Retry-After` seconds of a 503 from [`route`]: read back from its body.
pub fn retry_after(body: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    v.get("retry_after")?.as_u64().map(|s| s.to_string())
}

/// Expire sessions in the background (a few times per TTL, at most every second) and give
/// the freed memory back to the OS.
pub async fn expire_loop(hub: Arc<Hub>) {
    let every = (hub.sessions.ttl / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = hub.shutdown_signalled() => return,
        }
        if hub.sessions.expire(Instant::now()) > 0 {
            trim_heap();
        }
    }
}

use rtcheck_base::os::proc::trim_heap;

/// Families [`metrics`] renders.
pub const METRIC_FAMILIES: usize = 16;

/// Ring and session families for `/metrics`.
pub fn metrics(o: &mut String, snap: &super::hub::Snapshot) {
    let s = &snap.sessions;
    let rows: [(&str, &str, &str, u64); METRIC_FAMILIES] = [
        (
            "rtcheck_ring_messages",
            "gauge",
            "Messages held in the resume ring.",
            snap.ring_messages,
        ),
        (
            "rtcheck_ring_bytes",
            "gauge",
            "Bytes of the resume ring in every encoding it keeps (WebSocket, SSE, raw, JSON).",
            snap.ring_bytes,
        ),
        (
            "rtcheck_sessions",
            "gauge",
            "Sessions held (session-ack).",
            s.count,
        ),
        (
            "rtcheck_session_bytes",
            "gauge",
            "Bytes of session state held: unacked payload copies plus bookkeeping.",
            s.bytes,
        ),
        (
            "rtcheck_session_messages",
            "gauge",
            "Unacked messages held over every session.",
            s.messages,
        ),
        (
            "rtcheck_sessions_expired_total",
            "counter",
            "Sessions forgotten after --session-ttl away.",
            s.expired,
        ),
        (
            "rtcheck_session_resets_total",
            "counter",
            "Unknown or expired sessions presented: a new session with reset true.",
            s.resets,
        ),
        (
            "rtcheck_session_overflow_messages_total",
            "counter",
            "Messages dropped from full session queues, each reported in a gap marker.",
            s.overflow_messages,
        ),
        (
            "rtcheck_session_acks_total",
            "counter",
            "Acks applied.",
            s.acks,
        ),
        (
            "rtcheck_session_acks_ignored_total",
            "counter",
            "Acks ignored: a seq never sent, or no such session.",
            s.acks_ignored,
        ),
        (
            "rtcheck_sessions_created_total",
            "counter",
            "Sessions issued.",
            s.created,
        ),
        (
            "rtcheck_sessions_max",
            "gauge",
            "Sessions held at most (--max-sessions); beyond it new sessions are refused.",
            s.max,
        ),
        (
            "rtcheck_sessions_refused_total",
            "counter",
            "New sessions refused at --max-sessions (503 + Retry-After, WebSocket close 1013).",
            s.refused,
        ),
        (
            "rtcheck_session_memory_budget_bytes",
            "gauge",
            "--session-memory: sessions held at worst (away, queue full) stay within it.",
            s.memory_budget,
        ),
        (
            "rtcheck_sessions_max_by_memory",
            "gauge",
            "Sessions --session-memory holds at their worst (the cap is the lower of this and --max-sessions).",
            s.max_by_memory,
        ),
        (
            "rtcheck_sessions_refused_memory_total",
            "counter",
            "New sessions refused with --session-memory as the binding cap (also in rtcheck_sessions_refused_total).",
            s.refused_memory,
        ),
    ];
    for (name, kind, help, v) in rows {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(cap: usize) -> Sessions {
        let mut cfg = super::super::config::Config::from_options(&Default::default(), 1).unwrap();
        cfg.delivery = Delivery::SessionAck;
        cfg.session_queue = cap;
        cfg.size = 64;
        Sessions::new(&cfg)
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
        assert!(refused_json(r, &s).contains("\"error\":\"session memory full\""));
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
    fn ring_sizes_and_resume_ids() {
        assert_eq!(parse_ring("1024"), Ok(RingSize::Messages(1024)));
        assert_eq!(parse_ring("100KiB").unwrap().messages(1024), 100);
        assert!(parse_ring("x").is_err());
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
