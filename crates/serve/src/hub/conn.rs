//! A connected client and its queue: what the publisher offers it, what its task writes,
//! why it ended, and the full-queue policy (a gap marker, or removal).
use super::super::io;
use super::super::ring::{dropped_range, gap_marker};
use super::super::sync::lock;
use bytes::Bytes;
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::transport::Transport;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
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
    pub(super) queue: Mutex<Queue>,
    pub notify: Notify,
    pub(super) last_offered: AtomicU64,
    /// Rounds up to this seq were already sent from the ring (SSE resume); 0 again after
    /// an epoch reset (the new epoch's seqs start at 1).
    pub(super) skip_until: AtomicU64,
    /// A plain `/ws` client that may still send a resume message: the latest seq when it
    /// joined (everything after it is sent live), [`NOT_JOINED`] once answered, after an
    /// epoch reset, or for any other client.
    pub(super) joined: AtomicU64,
}

/// [`Conn`]'s `joined` when no resume message is owed an answer.
pub(super) const NOT_JOINED: u64 = u64::MAX;

#[derive(Debug, Default)]
pub(super) struct Queue {
    pub(super) items: VecDeque<Item>,
    /// The connection's task is writing: the publisher must not write directly.
    pub(super) writing: bool,
    /// Deregistered: offer nothing more.
    pub(super) closed: bool,
}

pub(super) enum Offer {
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
    pub(super) fn push_marker(&self, bytes: Bytes) {
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

/// What a full queue does with the round it cannot take (it is dropped and counted
/// either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FullQueue {
    /// Mark the dropped range on the queue's tail: a gap marker goes out after it, so a
    /// client that follows seqs is told (never silent).
    Mark,
    /// Remove the client: snapshot clients ignore seqs, so a marker would tell them
    /// nothing; it reconnects to the latest state.
    Remove,
}

impl FullQueue {
    pub fn of(delivery: Delivery) -> FullQueue {
        match delivery {
            Delivery::Snapshot => FullQueue::Remove,
            Delivery::SeqRing | Delivery::SessionAck => FullQueue::Mark,
        }
    }
}

impl Queue {
    /// Queue `item` under `bound` messages, or drop it as `policy` says.
    pub(super) fn offer(&mut self, item: Item, bound: usize, policy: FullQueue) -> Offer {
        if self.items.len() < bound {
            self.items.push_back(item);
            return Offer::Queued(self.items.len());
        }
        // The queue is never empty here (bound >= 1): the marker rides on its tail.
        if let Some(tail) = self.items.back_mut().filter(|_| policy == FullQueue::Mark) {
            tail.gap_after = Some(dropped_range(tail.seq, tail.gap_after, item.seq));
        }
        Offer::Dropped
    }
}
