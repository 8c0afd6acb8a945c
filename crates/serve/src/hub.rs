//! The hub, registry and fan-out: registered clients, the message ring, counters, and the
//! publisher with its fan-out strategies (per-client queues, sequential shards, raw-TCP
//! floor). It imports nothing above it: the session-ack state is a leaf it owns
//! (`session`), a cluster plugs in as a [`Relay`], and registering resuming clients,
//! routes and the cluster's reads live above it (`resume`, `routes`, `cluster`).
use super::config::{Config, Strategy};
use super::io;
use super::replay::{self, Replay};
use super::ring::{
    capped, dropped_range, gap_marker, gap_round, merge_rings, poll_view, replay_after,
    snapshot_replay, Round, POLL_MAX,
};
use super::session::Sessions;
use super::sync::lock;
use bytes::Bytes;
use rtcheck_wire::epoch::{self, Epoch, Position, Reset};
use rtcheck_wire::payload;
use rtcheck_wire::stats::{AcceptErrors, ClientCounts, Refusals, ServerStats};
use rtcheck_wire::transport::Transport;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Why a connection ended. `WriteDeadline` and `PongTimeout` are server removals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client closed or its socket failed.
    Peer,
    /// The client sent something invalid (oversized, garbage, not WebSocket).
    BadInput,
    WriteDeadline,
    PongTimeout,
    Shutdown,
    /// A message the client began did not complete within --message-timeout.
    MessageTimeout,
    /// The kernel gave up on the peer (TCP_USER_TIMEOUT or keepalive: ETIMEDOUT), e.g. a
    /// half-open SSE client whose packets vanish.
    TcpTimeout,
    /// An SSE stream closed by the server after --sse-max-age (the client reconnects).
    MaxAge,
    /// `--delivery snapshot`: the client's queue was full, so it was removed; it
    /// reconnects and gets the latest state first (a dropped message has no marker there).
    QueueFull,
}

impl CloseReason {
    pub const ALL: [CloseReason; 9] = [
        CloseReason::Peer,
        CloseReason::BadInput,
        CloseReason::WriteDeadline,
        CloseReason::PongTimeout,
        CloseReason::Shutdown,
        CloseReason::MessageTimeout,
        CloseReason::TcpTimeout,
        CloseReason::MaxAge,
        CloseReason::QueueFull,
    ];
    pub fn name(self) -> &'static str {
        match self {
            CloseReason::Peer => "peer",
            CloseReason::BadInput => "bad_input",
            CloseReason::WriteDeadline => "write_deadline",
            CloseReason::PongTimeout => "pong_timeout",
            CloseReason::Shutdown => "shutdown",
            CloseReason::MessageTimeout => "message_timeout",
            CloseReason::TcpTimeout => "tcp_timeout",
            CloseReason::MaxAge => "max_age",
            CloseReason::QueueFull => "queue_full",
        }
    }
    /// Liveness removals by the server (they count in `removed` and `missed_by_removed`).
    pub fn is_removal(self) -> bool {
        matches!(
            self,
            CloseReason::WriteDeadline
                | CloseReason::PongTimeout
                | CloseReason::TcpTimeout
                | CloseReason::QueueFull
        )
    }
    /// How a failed socket operation ends a connection.
    pub fn from_io(e: &std::io::Error) -> CloseReason {
        if e.raw_os_error() == Some(libc::ETIMEDOUT) {
            CloseReason::TcpTimeout
        } else {
            CloseReason::Peer
        }
    }
    /// The close reason for a failed write.
    pub fn from_write(e: io::WriteError) -> CloseReason {
        match e {
            io::WriteError::Timeout => CloseReason::WriteDeadline,
            io::WriteError::Io(e) => CloseReason::from_io(&e),
        }
    }
}

/// One queued message for one client: the bytes are shared across clients unless
/// --percopy.
#[derive(Debug, Clone)]
pub struct Item {
    pub seq: u64,
    pub bytes: Bytes,
    /// Seqs dropped right after this message because the queue was full: a gap marker
    /// `{"from":A,"to":B}` goes out after it, so the client is told (never silent).
    pub gap_after: Option<(u64, u64)>,
}

impl Item {
    /// What to write: the message, then its gap marker if any (allocates only then).
    pub fn wire(&self, t: Transport) -> std::borrow::Cow<'_, [u8]> {
        match self.gap_after {
            None => std::borrow::Cow::Borrowed(&self.bytes),
            Some(g) => {
                let mut v = self.bytes.to_vec();
                v.extend_from_slice(&gap_marker(t, g));
                std::borrow::Cow::Owned(v)
            }
        }
    }
}

/// A connected client. Idle, it owns no buffers: the queue allocates only while
/// messages wait.
#[derive(Debug)]
pub struct Conn {
    pub id: u64,
    pub transport: Transport,
    pub stream: TcpStream,
    queue: Mutex<Queue>,
    pub notify: Notify,
    last_offered: AtomicU64,
    /// Rounds up to this seq were already sent from the ring (SSE resume); 0 again after
    /// an epoch reset (the new epoch's seqs start at 1).
    skip_until: AtomicU64,
    /// A plain `/ws` client that may still send a resume message: the latest seq when it
    /// joined (everything after it is sent live), [`NOT_JOINED`] once answered, after an
    /// epoch reset, or for any other client.
    joined: AtomicU64,
}

/// [`Conn`]'s `joined` when no resume message is owed an answer.
const NOT_JOINED: u64 = u64::MAX;

#[derive(Debug, Default)]
struct Queue {
    items: VecDeque<Item>,
    /// The connection's task is writing: the publisher must not write directly.
    writing: bool,
    /// Deregistered: offer nothing more.
    closed: bool,
}

enum Offer {
    Done,
    Queued(usize),
    Dropped,
    Failed(CloseReason),
}

impl Conn {
    /// Take the next message and mark the task as writing until [`Conn::done_writing`].
    pub fn pop(&self) -> Option<Item> {
        let mut q = lock(&self.queue);
        let it = q.items.pop_front();
        if it.is_some() {
            q.writing = true;
        }
        if q.items.is_empty() && q.items.capacity() > 0 {
            // Give the memory back: an idle client should hold nothing.
            q.items = VecDeque::new();
        }
        it
    }
    /// Mark the task as writing something of its own (control frames, SSE comments),
    /// unless messages are queued (one may be the rest of a partial direct write, which
    /// must go first).
    pub fn try_begin_writing(&self) -> bool {
        let mut q = lock(&self.queue);
        if q.items.is_empty() {
            q.writing = true;
        }
        q.items.is_empty()
    }
    /// Before a final frame: from now on the publisher only queues. True if nothing is
    /// queued (so the frame cannot land inside a partly written message).
    pub fn claim_for_goodbye(&self) -> bool {
        let mut q = lock(&self.queue);
        q.writing = true;
        q.items.is_empty()
    }
    pub fn done_writing(&self) {
        lock(&self.queue).writing = false;
    }

    /// A plain `/ws` client joined at `seq`: its first resume message is answered up to it.
    pub fn set_joined(&self, seq: u64) {
        self.joined.store(seq.min(NOT_JOINED - 1), Relaxed);
    }
    /// Whether a resume message would still be answered.
    pub fn resumable(&self) -> bool {
        self.joined.load(Relaxed) != NOT_JOINED
    }
    /// Where it joined, once: only the first resume message of a connection is answered.
    pub fn take_joined(&self) -> Option<u64> {
        Some(self.joined.swap(NOT_JOINED, Relaxed)).filter(|&j| j != NOT_JOINED)
    }

    /// Queue a marker (a reset) behind what is queued, and wake the task. Never dropped:
    /// a full queue goes one over its bound rather than lose the one message that says
    /// the seqs start over. Seq 0: drops after it are marked from seq 1.
    fn push_marker(&self, bytes: Bytes) {
        let mut q = lock(&self.queue);
        if q.closed {
            return;
        }
        q.items.push_back(Item {
            seq: 0,
            bytes,
            gap_after: None,
        });
        drop(q);
        self.notify.notify_one();
    }
}

/// What a resuming client gets first ([`Hub::register_resume_with`]).
#[derive(Debug)]
pub struct Resumed {
    /// The epoch and latest seq when it registered (its hello).
    pub epoch: Epoch,
    pub latest: u64,
    /// Its position was from another epoch or beyond the server's: a reset marker first.
    pub reset: Option<Reset>,
    /// Then the lost range (a gap marker) and the rounds after the position, written in
    /// chunks under the replay budget (super::replay).
    pub replay: Replay,
}

/// Upper bounds (ms) of the hub round time histogram.
pub const HUB_BUCKETS_MS: [f64; 14] = [
    0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0,
];
/// Round times kept for /control/stats (a day at 1/s); the histogram keeps counting.
const MAX_ROUND_TIMES: usize = 100_000;

#[derive(Debug, Default)]
pub struct Counters {
    /// Per transport, indexed by `Transport as usize` (polling's stay 0: polls are
    /// counted in `polls`).
    pub sent: [AtomicU64; 4],
    pub bytes_sent: [AtomicU64; 4],
    pub accepted: [AtomicU64; 4],
    pub closed: [AtomicU64; CloseReason::ALL.len()],
    /// Gauge: bytes of unfinished client frames and fragmented messages held.
    pub partial_frame_bytes: AtomicU64,
    /// WebSocket connections accepted on /echo (off the fan-out path).
    pub echo_connections: AtomicU64,
    pub drops: AtomicU64,
    pub max_queue_depth: AtomicU64,
    pub rounds_sent: AtomicU64,
    pub polls: AtomicU64,
    pub http_requests: AtomicU64,
    pub bad_requests: AtomicU64,
    pub inbound_messages: AtomicU64,
    /// Requests refused for their Host (DNS rebinding) or Origin (cross-site).
    pub refused_host: AtomicU64,
    pub refused_origin: AtomicU64,
    /// Failed accepts by [`AcceptErrors`] kind.
    pub accept_errors: [AtomicU64; 3],
}

impl Counters {
    /// Count a failed accept: EMFILE (this process's fd limit), ENFILE (the system's), other.
    pub fn accept_error(&self, e: &std::io::Error) {
        let i = match e.raw_os_error() {
            Some(libc::EMFILE) => 0,
            Some(libc::ENFILE) => 1,
            _ => 2,
        };
        self.accept_errors[i].fetch_add(1, Relaxed);
    }
    pub fn sent(&self, t: Transport, bytes: usize) {
        self.sent[t as usize].fetch_add(1, Relaxed);
        self.bytes_sent[t as usize].fetch_add(bytes as u64, Relaxed);
    }
}

#[derive(Debug, Default)]
struct Removed {
    count: u64,
    /// Σ (in-flight at removal − last seq offered); missed = base + count × rounds_sent.
    base: i64,
}

#[derive(Debug, Default)]
pub struct HubTimes {
    pub round_ms: Vec<f64>,
    pub buckets: [u64; HUB_BUCKETS_MS.len()],
    pub count: u64,
    pub sum_ms: f64,
}

/// A point-in-time view: the `/control/stats` contract, and what only `/metrics` shows.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub stats: ServerStats,
    /// The round time histogram: (upper bound in ms, rounds), count, sum.
    pub hub_buckets: Vec<(f64, u64)>,
    pub hub_count: u64,
    pub hub_sum_ms: f64,
    pub bytes_sent: ClientCounts,
}

/// What the hub asks of a cluster relay (`serve --redis`), which plugs in above it: the
/// relay gives each round a global seq and hands it back through [`Hub::deliver`].
pub trait Relay: Send + Sync {
    /// The highest seq this node delivered in its epoch (a gap marker's end included:
    /// a marker never enters the ring).
    fn last_seq(&self) -> u64;
    /// False for a relay-only node (`--no-publish`): the hub schedules no rounds.
    fn publishes(&self) -> bool;
    /// Take the scheduled time of the next round, to publish it.
    fn emit(&self, ts: u64);
    /// The node's name and whether it reaches Redis, for the stats.
    fn node(&self) -> String;
    fn redis_up(&self) -> bool;
}

pub struct Hub {
    pub cfg: Config,
    /// This instance's epoch (a cluster's: set from Redis, changed when Redis lost the
    /// seq counter). Changed only under the ring's lock, with the ring cleared.
    epoch: AtomicU64,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
    ring: Mutex<VecDeque<Round>>,
    pub counters: Counters,
    removed: Mutex<Removed>,
    times: Mutex<HubTimes>,
    publish_start_ns: AtomicU64,
    rounds_total: Mutex<Option<u64>>,
    started: AtomicBool,
    start_notify: Notify,
    finished: AtomicBool,
    shutting_down: AtomicBool,
    shutdown_notify: Notify,
    pub nodelay: AtomicBool,
    /// `serve --redis`: rounds go out through Redis and come back through the relay.
    pub relay: OnceLock<Arc<dyn Relay>>,
    /// Session-ack state (empty in the other delivery modes).
    pub sessions: Sessions,
    /// Resume replay bytes in flight over every client (`--replay-budget`).
    pub replay: replay::Budget,
}

impl Hub {
    pub fn new(cfg: Config) -> Arc<Hub> {
        let rounds = cfg.rounds;
        let sessions = Sessions::new(&cfg.session_limits());
        let replay = replay::Budget::new(cfg.replay_budget.bytes);
        Arc::new(Hub {
            sessions,
            replay,
            cfg,
            epoch: AtomicU64::new(Epoch::random().0),
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            ring: Mutex::new(VecDeque::new()),
            counters: Counters::default(),
            removed: Mutex::new(Removed::default()),
            times: Mutex::new(HubTimes::default()),
            publish_start_ns: AtomicU64::new(0),
            rounds_total: Mutex::new(rounds),
            started: AtomicBool::new(false),
            start_notify: Notify::new(),
            finished: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
            shutdown_notify: Notify::new(),
            nodelay: AtomicBool::new(true),
            relay: OnceLock::new(),
        })
    }

    /// Register a client; it receives every round published from now on.
    pub fn register(&self, stream: TcpStream, transport: Transport) -> Arc<Conn> {
        let mut conns = lock(&self.conns);
        self.add(&mut conns, stream, transport, 0, false)
    }

    fn add(
        &self,
        conns: &mut HashMap<u64, Arc<Conn>>,
        stream: TcpStream,
        transport: Transport,
        skip_until: u64,
        writing: bool,
    ) -> Arc<Conn> {
        let conn = Arc::new(Conn {
            id: self.next_id.fetch_add(1, Relaxed),
            transport,
            stream,
            queue: Mutex::new(Queue {
                items: VecDeque::new(),
                writing,
                closed: false,
            }),
            notify: Notify::new(),
            last_offered: AtomicU64::new(self.counters.rounds_sent.load(Relaxed)),
            skip_until: AtomicU64::new(skip_until),
            joined: AtomicU64::new(NOT_JOINED),
        });
        self.counters.accepted[transport as usize].fetch_add(1, Relaxed);
        conns.insert(conn.id, conn.clone());
        conn
    }

    /// The epoch seqs are numbered in now.
    pub fn epoch(&self) -> Epoch {
        Epoch(self.epoch.load(Relaxed))
    }

    /// A round of this server's payload in its epoch.
    pub fn round(&self, seq: u64, ts: u64) -> Round {
        Round::build(self.cfg.size, self.cfg.text, self.epoch(), seq, ts)
    }

    /// The highest seq this server holds: its ring's last (merged with the cluster's when
    /// given), or a cluster node's last delivery (a gap marker never enters the ring).
    fn latest_held(&self, ring: &VecDeque<Round>) -> u64 {
        let back = ring.back().map_or(0, |r| r.seq);
        back.max(self.relay.get().map_or(0, |r| r.last_seq()))
    }

    /// Move to `epoch` (a cluster's new one: Redis lost its seq counter, or seqs went
    /// backwards): the ring and the sessions are cleared (their seqs are the old epoch's)
    /// and every connected client is sent a reset marker live, behind what it has queued.
    /// Atomic with registration: a client registered before gets the marker, one after
    /// registers in the new epoch. Returns the clients told.
    pub fn reset_epoch(&self, epoch: Epoch) -> usize {
        let conns = lock(&self.conns);
        let old = {
            let mut ring = lock(&self.ring);
            ring.clear();
            Epoch(self.epoch.swap(epoch.0, Relaxed))
        };
        let list: Vec<Arc<Conn>> = conns.values().cloned().collect();
        drop(conns);
        self.sessions.reset_all();
        let mut told = 0;
        for c in list.iter().filter(|c| c.transport != Transport::Raw) {
            c.skip_until.store(0, Relaxed);
            // Its resume message would name the old epoch's seqs.
            c.joined.store(NOT_JOINED, Relaxed);
            let r = Reset {
                epoch,
                latest: 0,
                since: c.last_offered.load(Relaxed),
                client_epoch: Some(old),
            };
            let bytes = match c.transport {
                Transport::Sse => r.sse().into_bytes(),
                _ => r.ws(),
            };
            c.push_marker(Bytes::from(bytes));
            told += 1;
        }
        told
    }

    /// Whether the ring holds round `seq` scheduled at `ts` (a cluster relay telling a
    /// round it already delivered from a different one under the same seq).
    pub fn holds(&self, seq: u64, ts: u64) -> Option<bool> {
        let ring = lock(&self.ring);
        ring.iter().rev().find(|r| r.seq == seq).map(|r| r.ts == ts)
    }

    /// The ring's latest seq and the epoch, read together (a WebSocket hello).
    pub fn latest(&self) -> (Epoch, u64) {
        let ring = lock(&self.ring);
        (self.epoch(), self.latest_held(&ring))
    }

    /// Register a resuming client (`pos`: where it says it is; None: a fresh client) and
    /// return what it gets first: a reset marker when `pos` is from another epoch or
    /// beyond what the server holds ([`epoch::decide`]), the lost range if the ring no
    /// longer reaches back that far, and the ring after the position (from its start after
    /// a reset), merged with `extra`, rounds from the cluster's Redis ring. Snapshot
    /// delivery sends the latest state first. Atomic with respect to the publisher:
    /// nothing is missed, and rounds already in the replay are not offered again. The
    /// connection starts as "writing" so the publisher queues (never writes directly)
    /// until the task has sent the head and the replay.
    pub fn register_resume_with(
        &self,
        stream: TcpStream,
        transport: Transport,
        pos: Option<Position>,
        extra: &[Round],
    ) -> (Arc<Conn>, Resumed) {
        let snapshot = self.cfg.delivery == rtcheck_wire::delivery::Delivery::Snapshot;
        self.register_with(stream, transport, |local| {
            let merged;
            let ring = if extra.is_empty() {
                local
            } else {
                merged = merge_rings(local, extra, self.epoch());
                &merged
            };
            let latest = self.latest_held(ring);
            let resume = pos.map(|p| epoch::decide(p, self.epoch(), latest));
            let (replay, gap) = match resume.map(|r| r.since()) {
                since if snapshot => snapshot_replay(ring, since),
                Some(id) => {
                    let (mut r, gap) = replay_after(ring, id);
                    r.extend(self.tail_gap(ring, id, u64::MAX));
                    (r, gap)
                }
                None => (Vec::new(), None),
            };
            let skip = replay.last().map_or(0, |r| r.seq);
            let reset = resume.and_then(|r| r.reset());
            let first = Resumed {
                epoch: self.epoch(),
                latest,
                reset,
                // Held as ranges of the ring, written in chunks (super::replay).
                replay: Replay::from_ring(replay, gap, local),
            };
            (first, skip)
        })
    }

    /// Where a replay is written from: the ring, the budget, the encoding and the
    /// write bound (super::replay).
    pub fn replay_source(&self) -> replay::Source<'_> {
        replay::Source {
            ring: &self.ring,
            budget: &self.replay,
            size: self.cfg.size,
            text: self.cfg.text,
            deadline: self.cfg.write_deadline,
        }
    }

    /// A replay decided outside registration, held as ranges of the ring where it can be.
    pub fn plan(&self, rounds: Vec<Round>, gap: Option<(u64, u64)>) -> Replay {
        Replay::from_ring(rounds, gap, &lock(&self.ring))
    }

    /// Register with a first part decided by `first` (given the ring) atomically with the
    /// publisher: it returns what to send first and the last seq in it; rounds up to that
    /// seq are not offered again, later ones are. The connection starts as "writing".
    pub fn register_with<T>(
        &self,
        stream: TcpStream,
        transport: Transport,
        first: impl FnOnce(&VecDeque<Round>) -> (T, u64),
    ) -> (Arc<Conn>, T) {
        let infallible = |ring: &VecDeque<Round>| Ok::<_, std::convert::Infallible>(first(ring));
        match self.try_register_with(stream, transport, infallible) {
            Ok(r) => r,
            Err((_, never)) => match never {},
        }
    }

    /// [`Hub::register_with`] where `first` may refuse the client: nothing is registered
    /// and the stream comes back with the refusal.
    pub fn try_register_with<T, E>(
        &self,
        stream: TcpStream,
        transport: Transport,
        first: impl FnOnce(&VecDeque<Round>) -> Result<(T, u64), E>,
    ) -> Result<(Arc<Conn>, T), (TcpStream, E)> {
        let mut conns = lock(&self.conns);
        let ring = lock(&self.ring);
        match first(&ring) {
            Ok((head, skip)) => {
                drop(ring);
                Ok((self.add(&mut conns, stream, transport, skip, true), head))
            }
            Err(e) => Err((stream, e)),
        }
    }

    /// The ring after `since` up to `upto` (a WebSocket resume message: what the client
    /// missed before it joined at `upto`), and the lost range if the ring is too short.
    /// `extra`: rounds from the cluster's Redis ring, merged by seq.
    pub fn replay_between(
        &self,
        since: u64,
        upto: u64,
        extra: &[Round],
    ) -> (Vec<Round>, Option<(u64, u64)>) {
        let local = lock(&self.ring);
        // The tail gap is judged on the ring that is replayed (merged with the cluster's
        // when given), or a hole would be marked twice, the second time out of order.
        let (mut replay, gap) = if extra.is_empty() {
            let (mut r, g) = replay_after(&local, since);
            r.extend(self.tail_gap(&local, since, upto));
            (r, g)
        } else {
            let merged = merge_rings(&local, extra, self.epoch());
            let (mut r, g) = replay_after(&merged, since);
            r.extend(self.tail_gap(&merged, since, upto));
            (r, g)
        };
        drop(local);
        replay.retain(|r| r.seq <= upto);
        (replay, gap.filter(|g| g.0 <= upto))
    }

    /// Remove a client (idempotent) and count why.
    pub fn deregister(&self, conn: &Conn, reason: CloseReason, in_flight: u64) {
        let mut conns = lock(&self.conns);
        if conns.remove(&conn.id).is_none() {
            return;
        }
        drop(conns);
        self.sessions.detach(conn.id);
        self.counters.closed[reason as usize].fetch_add(1, Relaxed);
        let mut q = lock(&conn.queue);
        q.closed = true;
        if reason.is_removal() {
            let queued = q.items.len() as i64;
            let offered = conn.last_offered.load(Relaxed) as i64;
            let mut r = lock(&self.removed);
            r.count += 1;
            r.base += queued + in_flight as i64 - offered;
        }
        // Free any queued messages now.
        q.items = VecDeque::new();
        drop(q);
        if reason.is_removal() {
            // A shard writer removes without its connection task noticing: close the
            // socket so that task ends and the fd is freed now, not when the peer leaves.
            let _ = socket2::SockRef::from(&conn.stream).shutdown(std::net::Shutdown::Both);
            conn.notify.notify_one();
        }
    }

    pub fn client_count(&self) -> usize {
        lock(&self.conns).len()
    }

    /// A cluster node whose last delivery was a gap marker (the Stream no longer held the
    /// rounds, or they were never published) holds nothing after its ring's last round: a
    /// resume after `since` is owed that gap too, up to `upto`.
    fn tail_gap(&self, ring: &VecDeque<Round>, since: u64, upto: u64) -> Option<Round> {
        let last = self.relay.get()?.last_seq().min(upto);
        // `since` is the client's: u64::MAX owes nothing (and must not wrap to 0).
        let from = since.max(ring.back().map_or(0, |r| r.seq)).checked_add(1)?;
        (last >= from).then(|| gap_round(from, last))
    }

    /// The oldest seq in the local ring.
    pub fn ring_oldest(&self) -> Option<u64> {
        lock(&self.ring).front().map(|r| r.seq)
    }

    /// Ids of the connected clients (presence).
    pub fn conn_ids(&self) -> Vec<u64> {
        lock(&self.conns).keys().copied().collect()
    }

    /// /poll: ring messages with seq > since, as a JSON document (see contract).
    pub fn poll_json(&self, pos: Position) -> String {
        self.poll_json_with(pos, &[])
    }

    /// [`Hub::poll_json`] over the local ring merged with the cluster's (`extra`). A
    /// position from another epoch, or beyond what the server holds, is answered with
    /// `"reset":true` and the ring from its start (as for since=0).
    pub fn poll_json_with(&self, pos: Position, extra: &[Round]) -> String {
        let local = lock(&self.ring);
        let merged;
        let ring = if extra.is_empty() {
            &*local
        } else {
            merged = merge_rings(&local, extra, self.epoch());
            &merged
        };
        let snapshot = self.cfg.delivery == rtcheck_wire::delivery::Delivery::Snapshot;
        let resume = epoch::decide(pos, self.epoch(), self.latest_held(ring));
        let since = resume.since();
        let (mut latest, mut oldest, mut gap, served) = poll_view(ring, since, snapshot);
        if let Some(g) = self
            .tail_gap(ring, since, u64::MAX)
            .filter(|_| served.is_empty())
        {
            // Nothing after `since` but a tail the node marked as a gap: say so.
            (latest, oldest, gap) = (g.seq, Some(g.seq + 1), true);
        }
        // Bounded: at most POLL_MAX bytes of messages (at least one); the client polls
        // again from `latest`, the last one carried.
        let (served, more) = capped(served, POLL_MAX, self.cfg.size);
        if more {
            latest = served.last().map_or(latest, |r| r.seq);
        }
        let mut out = format!(
            "{{\"epoch\":\"{}\",\"reset\":{},\"latest\":{latest},\"gap\":{gap},\"oldest\":{},\"more\":{more},\"messages\":[",
            self.epoch(),
            resume.reset().is_some(),
            oldest.map_or("null".to_string(), |o| o.to_string())
        );
        let mut first = true;
        for r in served {
            if !first {
                out.push(',');
            }
            first = false;
            if r.json.is_empty() && r.is_data() {
                // A Stream round (Round::stub): encoded for this answer only.
                out.push_str(&payload::encode_text(self.cfg.size, r.seq, r.ts));
            } else {
                out.push_str(std::str::from_utf8(&r.json).unwrap_or("{}"));
            }
        }
        out.push_str("]}");
        out
    }

    pub fn start(&self, rounds: Option<u64>) -> bool {
        if self.started.swap(true, Relaxed) {
            return false;
        }
        if let Some(n) = rounds {
            *lock(&self.rounds_total) = (n > 0).then_some(n);
        }
        self.start_notify.notify_one();
        true
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Relaxed)
    }

    /// Resolves once shutdown begins.
    pub async fn shutdown_signalled(&self) {
        let n = self.shutdown_notify.notified();
        if self.is_shutting_down() {
            return;
        }
        n.await
    }

    /// Ask every connection to close and stop the publisher and the listeners.
    pub fn shutdown(&self) {
        self.shutting_down.store(true, Relaxed);
        self.shutdown_notify.notify_waiters();
        let conns: Vec<_> = lock(&self.conns).values().cloned().collect();
        for c in conns {
            c.notify.notify_one();
            if c.transport == Transport::Raw {
                self.deregister(&c, CloseReason::Shutdown, 0);
            }
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let c = &self.counters;
        let times = lock(&self.times);
        let per = |a: &[AtomicU64; 4]| ClientCounts {
            ws: a[Transport::Websocket as usize].load(Relaxed),
            sse: a[Transport::Sse as usize].load(Relaxed),
            poll: 0,
            raw: a[Transport::Raw as usize].load(Relaxed),
        };
        Snapshot {
            stats: self.stats(&times, per(&c.sent)),
            hub_buckets: HUB_BUCKETS_MS
                .iter()
                .copied()
                .zip(times.buckets.iter().copied())
                .collect(),
            hub_count: times.count,
            hub_sum_ms: times.sum_ms,
            bytes_sent: per(&c.bytes_sent),
        }
    }

    /// Connected clients by transport; polls are counted by request.
    fn clients(&self) -> ClientCounts {
        let mut clients = ClientCounts::default();
        for c in lock(&self.conns).values() {
            match c.transport {
                Transport::Websocket => clients.ws += 1,
                Transport::Sse => clients.sse += 1,
                Transport::Raw => clients.raw += 1,
                // Polls hold no connection.
                Transport::Polling => {}
            }
        }
        clients.poll = self.counters.polls.load(Relaxed);
        clients
    }

    fn stats(&self, times: &HubTimes, messages_sent: ClientCounts) -> ServerStats {
        let c = &self.counters;
        let rounds_sent = c.rounds_sent.load(Relaxed);
        let (removed, missed) = {
            let r = lock(&self.removed);
            let m = r.base + (r.count * rounds_sent) as i64;
            (r.count, m.max(0) as u64)
        };
        let (ring_messages, ring_bytes) = {
            let ring = lock(&self.ring);
            (ring.len() as u64, ring.iter().map(Round::bytes).sum())
        };
        ServerStats {
            rounds_sent,
            rounds_total: *lock(&self.rounds_total),
            hub_round_ms: times.round_ms.clone(),
            publish_start_ns: self.publish_start_ns.load(Relaxed),
            drops: c.drops.load(Relaxed),
            removed,
            missed_by_removed: missed,
            clients: Some(self.clients()),
            max_queue_depth: c.max_queue_depth.load(Relaxed),
            rss_bytes: rtcheck_base::os::proc::self_rss_bytes(),
            cpu_seconds: rtcheck_base::os::clock::cpu_seconds(),
            nodelay: Some(self.nodelay.load(Relaxed)),
            open_fds: rtcheck_base::os::proc::self_open_fds(),
            finished: self.finished.load(Relaxed),
            messages_sent,
            closed: CloseReason::ALL
                .iter()
                .map(|r| (r.name().to_string(), c.closed[*r as usize].load(Relaxed)))
                .collect(),
            partial_frame_bytes: c.partial_frame_bytes.load(Relaxed),
            echo_connections: c.echo_connections.load(Relaxed),
            node: self.relay.get().map(|r| r.node()),
            redis_up: self.relay.get().map(|r| r.redis_up()),
            ring_messages,
            ring_bytes,
            sessions: self.sessions.stats(),
            refused: Refusals {
                host: c.refused_host.load(Relaxed),
                origin: c.refused_origin.load(Relaxed),
            },
            accept_errors: AcceptErrors {
                emfile: c.accept_errors[0].load(Relaxed),
                enfile: c.accept_errors[1].load(Relaxed),
                other: c.accept_errors[2].load(Relaxed),
            },
            replay: self.replay.stats(),
        }
    }

    fn record_round(&self, ms: f64) {
        let mut t = lock(&self.times);
        if t.round_ms.len() < MAX_ROUND_TIMES {
            // Nanosecond resolution is plenty and keeps the JSON readable.
            t.round_ms.push((ms * 1e6).round() / 1e6);
        }
        for (i, b) in HUB_BUCKETS_MS.iter().enumerate() {
            if ms <= *b {
                t.buckets[i] += 1;
            }
        }
        t.count += 1;
        t.sum_ms += ms;
    }

    /// The publisher: one round every 1/rate on a fixed schedule (sleep until the
    /// scheduled instant; a late round is sent at once, stamped with its scheduled time).
    pub async fn publish(self: Arc<Self>) {
        if self.relay.get().is_some_and(|r| !r.publishes()) {
            return; // --no-publish: a relay-only node
        }
        if self.cfg.wait_start {
            let n = self.start_notify.notified();
            if !self.started.load(Relaxed) {
                tokio::select! {
                    _ = n => {}
                    _ = self.shutdown_signalled() => return,
                }
            }
        } else {
            self.started.store(true, Relaxed);
        }
        let start = tokio::time::Instant::now();
        let start_ns = rtcheck_base::os::clock::now_ns();
        self.publish_start_ns.store(start_ns, Relaxed);
        let period_ns = self.cfg.period.as_nanos() as u64;
        let mut seq = 1u64;
        loop {
            if lock(&self.rounds_total).is_some_and(|n| seq > n) {
                self.finished.store(true, Relaxed);
                return;
            }
            let offset = Duration::from_nanos((seq - 1) * period_ns);
            tokio::select! {
                _ = sleep_precisely_until(start + offset) => {}
                _ = self.shutdown_signalled() => return,
            }
            let ts = start_ns + offset.as_nanos() as u64;
            match self.relay.get() {
                // One path: the round comes back to every node, this one included.
                Some(r) => r.emit(ts),
                None => {
                    let round = self.round(seq, ts);
                    self.clone().deliver(round, true).await;
                }
            }
            seq += 1;
        }
    }

    /// Hand one round to every client (and keep it in the ring when `ring`); the
    /// publisher's step, and the cluster relay's for each round that comes back.
    pub async fn deliver(self: Arc<Self>, round: Round, ring: bool) {
        if ring {
            let mut ring = lock(&self.ring);
            if ring.len() >= self.cfg.ring {
                ring.pop_front();
            }
            ring.push_back(round.clone());
        }
        self.sessions.publish(&round);
        let t0 = Instant::now();
        match self.cfg.strategy {
            Strategy::PerClient => self.clone().offer_all(&round).await,
            Strategy::Shards => self.clone().shard_pass(&round).await,
        }
        self.record_round(t0.elapsed().as_secs_f64() * 1e3);
        self.counters.rounds_sent.fetch_max(round.seq, Relaxed);
    }

    /// Per-client strategy: hand the round to every client; returns when all have it.
    /// Queue mode: enqueue (drop and count when full) and wake the client's task.
    /// Direct mode: one non-blocking write to each client whose task is idle, queueing
    /// only what does not fit; the pass is split over the worker threads.
    /// Raw clients always get one non-blocking write.
    async fn offer_all(self: Arc<Self>, round: &Round) {
        let conns: Vec<Arc<Conn>> = lock(&self.conns).values().cloned().collect();
        let parts = if self.cfg.direct { self.cfg.workers } else { 1 };
        if parts <= 1 || conns.len() < 64 {
            self.offer_to(&conns, round);
            return;
        }
        let chunk = conns.len().div_ceil(parts);
        let conns = Arc::new(conns);
        let mut set = tokio::task::JoinSet::new();
        for k in 0..parts {
            let (hub, conns, round) = (self.clone(), conns.clone(), round.clone());
            set.spawn(async move {
                let lo = (k * chunk).min(conns.len());
                let hi = ((k + 1) * chunk).min(conns.len());
                hub.offer_to(&conns[lo..hi], &round);
            });
        }
        while set.join_next().await.is_some() {}
    }

    fn offer_to(&self, conns: &[Arc<Conn>], round: &Round) {
        let mut failed = Vec::new();
        let remove_slow = self.cfg.delivery == rtcheck_wire::delivery::Delivery::Snapshot;
        for c in conns {
            if round.seq <= c.skip_until.load(Relaxed) {
                continue;
            }
            match self.offer_one(c, round) {
                Offer::Done => {}
                Offer::Queued(depth) => {
                    self.counters
                        .max_queue_depth
                        .fetch_max(depth as u64, Relaxed);
                    c.notify.notify_one();
                }
                Offer::Dropped => {
                    self.counters.drops.fetch_add(1, Relaxed);
                    // Snapshot clients ignore seqs, so a marker would tell them nothing:
                    // remove the slow client; it reconnects to the latest state.
                    if remove_slow && c.transport != Transport::Raw {
                        failed.push((c.clone(), CloseReason::QueueFull, 0));
                    }
                }
                Offer::Failed(reason) => failed.push((c.clone(), reason, 1)),
            }
        }
        for (c, reason, in_flight) in failed {
            self.deregister(&c, reason, in_flight);
        }
    }

    /// Everything under the client's queue lock, so it is atomic with its task's writes
    /// and with [`Hub::deregister`] (whose accounting reads `last_offered`).
    fn offer_one(&self, c: &Conn, round: &Round) -> Offer {
        let mut q = lock(&c.queue);
        if q.closed {
            return Offer::Done;
        }
        c.last_offered.store(round.seq, Relaxed);
        let mut bytes = self.bytes_for(round, c.transport);
        if c.transport == Transport::Raw {
            return match c.stream.try_write(&bytes) {
                Ok(n) if n == bytes.len() => {
                    self.counters.sent(Transport::Raw, n);
                    Offer::Done
                }
                // A partial frame would corrupt the stream: remove the client.
                Ok(_) => Offer::Failed(CloseReason::WriteDeadline),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Offer::Dropped,
                Err(_) => Offer::Failed(CloseReason::Peer),
            };
        }
        if self.cfg.direct && q.items.is_empty() && !q.writing {
            match c.stream.try_write(&bytes) {
                Ok(n) if n == bytes.len() => {
                    self.counters.sent(c.transport, n);
                    return Offer::Done;
                }
                Ok(n) => {
                    // The message is counted once, when its task finishes the rest.
                    self.counters.bytes_sent[c.transport as usize].fetch_add(n as u64, Relaxed);
                    bytes = bytes.slice(n..);
                }
                // WouldBlock or an error: the task writes (or fails) later.
                Err(_) => {}
            }
        }
        if q.items.len() >= self.cfg.queue {
            // The queue is never empty here (queue >= 1): the marker rides on its tail.
            // Snapshot clients get no marker: they are removed (see offer_to).
            let snapshot = self.cfg.delivery == rtcheck_wire::delivery::Delivery::Snapshot;
            if let Some(tail) = q.items.back_mut().filter(|_| !snapshot) {
                tail.gap_after = Some(dropped_range(tail.seq, tail.gap_after, round.seq));
            }
            return Offer::Dropped;
        }
        q.items.push_back(Item {
            seq: round.seq,
            bytes,
            gap_after: None,
        });
        Offer::Queued(q.items.len())
    }

    fn bytes_for(&self, round: &Round, t: Transport) -> Bytes {
        let b = round.for_transport(t);
        if self.cfg.percopy {
            // G1: a fresh allocation and copy per client per round.
            Bytes::copy_from_slice(b)
        } else {
            b.clone()
        }
    }

    /// Shards strategy (unsafe hub, C1/C2): --shards tasks each write the round to their
    /// clients one after another; the round ends when every shard has finished.
    async fn shard_pass(self: Arc<Self>, round: &Round) {
        let n = self.cfg.shards;
        let mut shards: Vec<Vec<Arc<Conn>>> = vec![Vec::new(); n];
        let mut raw = Vec::new();
        {
            let conns = lock(&self.conns);
            for (i, c) in conns.values().enumerate() {
                c.last_offered.store(round.seq, Relaxed);
                if round.seq <= c.skip_until.load(Relaxed) {
                    continue;
                }
                if c.transport == Transport::Raw {
                    raw.push(c.clone());
                } else {
                    shards[i % n].push(c.clone());
                }
            }
        }
        self.offer_to(&raw, round);
        let mut set = tokio::task::JoinSet::new();
        for shard in shards.into_iter().filter(|s| !s.is_empty()) {
            let hub = self.clone();
            let round = round.clone();
            set.spawn(async move {
                for c in shard {
                    let bytes = hub.bytes_for(&round, c.transport);
                    let r = match hub.write_queued(&c).await {
                        Ok(()) => {
                            io::write_with_deadline(&c.stream, &bytes, hub.cfg.write_deadline).await
                        }
                        Err(e) => Err(e),
                    };
                    match r {
                        Ok(()) => hub.counters.sent(c.transport, bytes.len()),
                        Err(io::WriteError::Timeout) => {
                            hub.deregister(&c, CloseReason::WriteDeadline, 1)
                        }
                        Err(io::WriteError::Io(e)) => {
                            hub.deregister(&c, CloseReason::from_io(&e), 1)
                        }
                    }
                }
            });
        }
        while set.join_next().await.is_some() {}
    }
}

impl Hub {
    /// Shards strategy: what is queued for a client (markers of a live epoch reset; no
    /// writer task pops its queue) goes out before the round it precedes, so the new
    /// epoch's seqs never arrive without the reset that explains them.
    async fn write_queued(&self, c: &Conn) -> Result<(), io::WriteError> {
        while let Some(item) = c.pop() {
            let wire = item.wire(c.transport);
            let r = io::write_with_deadline(&c.stream, &wire, self.cfg.write_deadline).await;
            c.done_writing();
            r?;
            // Counted as the per-client writer counts what it pops.
            self.counters.sent(c.transport, item.bytes.len());
        }
        Ok(())
    }
}

/// The tokio timer has 1 ms granularity and fires late; sleep to ~1 ms before the
/// scheduled instant, then yield until it (costs < 1 ms of polling per round).
async fn sleep_precisely_until(due: tokio::time::Instant) {
    let coarse = due.checked_sub(Duration::from_millis(1)).unwrap_or(due);
    tokio::time::sleep_until(coarse).await;
    while tokio::time::Instant::now() < due {
        tokio::task::yield_now().await;
    }
}
