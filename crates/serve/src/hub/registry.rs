//! The registry: adding and removing clients (atomically with the publisher), an epoch
//! reset told to every client, and what removal costs in the counters.
use super::super::ring::Round;
use super::super::sync::lock;
use super::conn::{CloseReason, Conn, Queue, NOT_JOINED};
use super::Hub;
use bytes::Bytes;
use rtcheck_wire::epoch::{Epoch, Reset};
use rtcheck_wire::transport::Transport;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;
use tokio::sync::Notify;

impl Hub {
    /// Register a client; it receives every round published from now on.
    pub fn register(&self, stream: TcpStream, transport: Transport) -> Arc<Conn> {
        let mut conns = lock(&self.conns);
        self.add(&mut conns, stream, transport, 0, false)
    }

    pub(super) fn add(
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

    /// Ids of the connected clients (presence).
    pub fn conn_ids(&self) -> Vec<u64> {
        lock(&self.conns).keys().copied().collect()
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
}
