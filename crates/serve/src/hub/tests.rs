//! The hub's parts in-process. Clients are loopback socket pairs whose client end never
//! reads (unless a test reads it), so what the hub queued, marked, removed or wrote is
//! read back from the hub, the counters or the socket.
use super::conn::{Offer, Queue};
use super::*;
use crate::config::{Options, RingSize};
use crate::ring::gap_marker;
use bytes::Bytes;
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::epoch::{Epoch, Position};
use rtcheck_wire::transport::Transport;
use std::ops::RangeInclusive;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

/// Bound on anything a test waits for (a loaded 2-core machine).
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

pub(crate) fn opts(queue: usize, ring: u64, delivery: Delivery) -> Options {
    Options {
        queue,
        ring: RingSize::Messages(ring),
        delivery,
        // Every round is queued, never written directly: the queue is what is tested.
        queue_only: true,
        ..Default::default()
    }
}

pub(crate) fn hub(o: Options) -> Arc<Hub> {
    Hub::new(Config::from_options_with(&o, 1, None).unwrap())
}

/// A connected loopback pair: (the server's end, the client's end, kept open).
pub(crate) async fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    let (s, _) = l.accept().await.unwrap();
    (s, c)
}

async fn publish(h: &Arc<Hub>, seqs: RangeInclusive<u64>) {
    for seq in seqs {
        h.clone().deliver(h.round(seq, seq * 10), true).await;
    }
}

/// What the client's task would write, in order.
pub(crate) fn drain(c: &Conn) -> Vec<Item> {
    let mut out = Vec::new();
    while let Some(it) = c.pop() {
        c.done_writing();
        out.push(it);
    }
    out
}

fn seqs(items: &[Item]) -> Vec<u64> {
    items.iter().map(|i| i.seq).collect()
}

fn item(seq: u64) -> Item {
    Item {
        seq,
        bytes: Bytes::from(format!("m{seq}")),
        gap_after: None,
    }
}

#[test]
fn a_full_queue_marks_the_dropped_range_on_its_tail_or_marks_nothing() {
    assert_eq!(FullQueue::of(Delivery::SeqRing), FullQueue::Mark);
    assert_eq!(FullQueue::of(Delivery::SessionAck), FullQueue::Mark);
    assert_eq!(FullQueue::of(Delivery::Snapshot), FullQueue::Remove);
    let mut q = Queue::default();
    let got: Vec<Offer> = (1..=5)
        .map(|s| q.offer(item(s), 2, FullQueue::Mark))
        .collect();
    assert!(matches!(got[..2], [Offer::Queued(1), Offer::Queued(2)]));
    assert!(got[2..].iter().all(|o| matches!(o, Offer::Dropped)));
    let tail = q.items.back().unwrap();
    assert_eq!((tail.seq, tail.gap_after), (2, Some((3, 5))));
    // The marker goes out right after the tail message.
    let wire = tail.wire(Transport::Sse);
    let marker = gap_marker(Transport::Sse, (3, 5));
    assert_eq!(&wire[..2], b"m2");
    assert_eq!(&wire[2..], &marker[..]);

    let mut q = Queue::default();
    for s in 1..=4 {
        q.offer(item(s), 2, FullQueue::Remove);
    }
    assert!(q.items.iter().all(|i| i.gap_after.is_none()));
}

#[tokio::test]
async fn a_slow_client_gets_a_gap_marker_and_the_drops_are_counted() {
    let h = hub(opts(2, 64, Delivery::SeqRing));
    let (s, _client) = pair().await;
    let conn = h.register(s, Transport::Sse);
    publish(&h, 1..=5).await;
    let items = drain(&conn);
    assert_eq!(seqs(&items), vec![1, 2]);
    assert_eq!(items[1].gap_after, Some((3, 5)));
    let st = h.snapshot().stats;
    assert_eq!((st.drops, st.removed, st.rounds_sent), (3, 0, 5));
    assert_eq!(st.max_queue_depth, 2);
    assert_eq!(h.client_count(), 1);
    // Drained: the next round is queued again, unmarked.
    publish(&h, 6..=6).await;
    let items = drain(&conn);
    assert_eq!((seqs(&items), items[0].gap_after), (vec![6], None));
}

#[tokio::test]
async fn snapshot_delivery_removes_a_full_queue_and_counts_what_it_missed() {
    let h = hub(opts(2, 64, Delivery::Snapshot));
    let (s, _client) = pair().await;
    let conn = h.register(s, Transport::Websocket);
    publish(&h, 1..=3).await;
    assert_eq!(h.client_count(), 0);
    assert!(conn.pop().is_none(), "its queue is freed");
    let st = h.snapshot().stats;
    assert_eq!((st.drops, st.removed), (1, 1));
    assert_eq!(st.closed["queue_full"], 1);
    // The two queued rounds it never got; the dropped one is in `drops`.
    assert_eq!(st.missed_by_removed, 2);
    publish(&h, 4..=5).await;
    assert_eq!(h.snapshot().stats.missed_by_removed, 4);
}

#[tokio::test]
async fn deregistering_is_idempotent_and_counted_once_by_reason() {
    let h = hub(opts(8, 64, Delivery::SeqRing));
    let (s, _client) = pair().await;
    let conn = h.register(s, Transport::Websocket);
    assert_eq!(h.snapshot().stats.clients.unwrap().ws, 1);
    h.deregister(&conn, CloseReason::Peer, 0);
    h.deregister(&conn, CloseReason::Peer, 0);
    publish(&h, 1..=1).await;
    assert!(conn.pop().is_none(), "a removed client is offered nothing");
    let st = h.snapshot().stats;
    assert_eq!((st.closed["peer"], st.removed), (1, 0));
    assert_eq!(st.clients.unwrap().ws, 0);
}

#[tokio::test]
async fn a_resume_is_owed_the_lost_range_then_the_ring_and_nothing_twice() {
    let h = hub(opts(64, 5, Delivery::SeqRing));
    publish(&h, 1..=10).await;
    assert_eq!(h.ring_oldest(), Some(6));
    let (rounds, gap) = h.replay_between(2, u64::MAX, &[]);
    assert_eq!(gap, Some((3, 5)));
    assert_eq!(
        rounds.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [6, 7, 8, 9, 10]
    );
    let (rounds, gap) = h.replay_between(7, 9, &[]);
    assert_eq!((rounds.len(), gap), (2, None));

    let (s, mut client) = pair().await;
    let pos = Position::parse(&format!("7@{}", h.epoch()));
    let (conn, first) = h.register_resume_with(s, Transport::Sse, Some(pos), &[]);
    assert_eq!((first.epoch, first.latest), (h.epoch(), 10));
    assert!(first.reset.is_none());
    publish(&h, 11..=11).await;
    // Registered as writing: live rounds are queued behind the replay, never before it.
    assert_eq!(seqs(&drain(&conn)), vec![11]);
    crate::replay::write(
        &h.replay_source(),
        &conn.stream,
        Transport::Sse,
        b"",
        first.replay,
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(read_sse_ids(&mut client, 3).await, ["8", "9", "10"]);
}

/// The seqs of the first `n` SSE events the client reads (ids are `SEQ@EPOCH`).
async fn read_sse_ids(client: &mut TcpStream, n: usize) -> Vec<String> {
    let mut parser = rtcheck_wire::sse::Parser::new(1 << 20);
    let mut events = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    while events.len() < n {
        let read = tokio::time::timeout(PATIENCE, client.read(&mut buf)).await;
        let k = read.expect("replay within the bound").unwrap();
        assert!(k > 0, "the replay ended early");
        parser.feed(&buf[..k], &mut events).unwrap();
    }
    let id = |e: &rtcheck_wire::sse::Event| e.id.clone().unwrap_or_default();
    events
        .iter()
        .map(|e| id(e).split('@').next().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_position_from_another_epoch_is_reset_and_replayed_from_the_start() {
    let h = hub(opts(64, 5, Delivery::SeqRing));
    publish(&h, 1..=3).await;
    let (s, _client) = pair().await;
    let pos = Position::parse("2@00000000000000ff");
    let (_conn, first) = h.register_resume_with(s, Transport::Websocket, Some(pos), &[]);
    let reset = first.reset.expect("another epoch: a reset marker first");
    assert_eq!(reset.epoch, h.epoch());
    assert!(!first.replay.is_empty());
}

#[tokio::test]
async fn an_epoch_reset_clears_the_ring_and_tells_every_client_behind_its_queue() {
    let h = hub(opts(64, 8, Delivery::SeqRing));
    let (s, _client) = pair().await;
    let conn = h.register(s, Transport::Sse);
    publish(&h, 1..=2).await;
    assert_eq!(h.reset_epoch(Epoch(7)), 1);
    assert_eq!((h.epoch(), h.ring_oldest()), (Epoch(7), None));
    let items = drain(&conn);
    assert_eq!(seqs(&items), vec![1, 2, 0]);
    let marker = String::from_utf8(items[2].bytes.to_vec()).unwrap();
    assert!(marker.contains("0000000000000007"), "{marker}");
}

#[tokio::test]
async fn a_poll_is_answered_after_its_position_with_the_gap_as_json() {
    let h = hub(opts(64, 5, Delivery::SeqRing));
    publish(&h, 1..=10).await;
    let poll = |p: &str| -> serde_json::Value {
        serde_json::from_str(&h.poll_json(Position::parse(p))).unwrap()
    };
    let v = poll(&format!("2@{}", h.epoch()));
    assert_eq!(v["epoch"], h.epoch().to_string());
    assert_eq!(
        (v["latest"].as_u64(), v["oldest"].as_u64()),
        (Some(10), Some(6))
    );
    assert_eq!(
        (v["gap"].as_bool(), v["reset"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(v["messages"].as_array().unwrap().len(), 5);
    let v = poll(&format!("8@{}", h.epoch()));
    assert_eq!(
        (v["gap"].as_bool(), v["messages"].as_array().unwrap().len()),
        (Some(false), 2)
    );
    let v = poll("8@00000000000000ff");
    assert_eq!(
        (
            v["reset"].as_bool(),
            v["messages"].as_array().unwrap().len()
        ),
        (Some(true), 5)
    );
    assert_eq!(
        h.counters.polls.load(Relaxed),
        0,
        "polls are counted by the route"
    );
}

#[tokio::test]
async fn the_publisher_sends_its_rounds_in_order_then_finishes() {
    let h = hub(Options {
        rounds: 3,
        rate: 1000.0,
        ..opts(64, 64, Delivery::SeqRing)
    });
    let (s, _client) = pair().await;
    let conn = h.register(s, Transport::Websocket);
    tokio::time::timeout(PATIENCE, h.clone().publish())
        .await
        .expect("three rounds at 1000/s");
    let snap = h.snapshot();
    assert!(snap.stats.finished);
    assert_eq!((snap.stats.rounds_sent, snap.hub_count), (3, 3));
    assert_eq!(seqs(&drain(&conn)), vec![1, 2, 3]);
    assert!(!h.start(None), "already started");
}

#[tokio::test]
async fn the_publisher_stops_on_shutdown_and_the_clients_are_woken() {
    let h = hub(Options {
        wait_start: true,
        ..opts(64, 64, Delivery::SeqRing)
    });
    let task = tokio::spawn(h.clone().publish());
    h.shutdown();
    assert!(h.is_shutting_down());
    tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
    assert_eq!(h.snapshot().stats.rounds_sent, 0);
}

#[tokio::test]
async fn direct_mode_writes_to_an_idle_client_and_counts_the_message() {
    let h = hub(Options {
        queue_only: false,
        ..opts(64, 64, Delivery::SeqRing)
    });
    let (s, mut client) = pair().await;
    let conn = h.register(s, Transport::Sse);
    publish(&h, 1..=1).await;
    assert!(conn.pop().is_none(), "written, not queued");
    assert_eq!(h.snapshot().stats.messages_sent.sse, 1);
    assert_eq!(read_sse_ids(&mut client, 1).await, ["1"]);
}

/// A cluster relay whose last delivered seq the test sets, as `cluster::store::fill`
/// marks it.
#[derive(Default)]
pub(crate) struct FakeRelay(AtomicU64);

impl FakeRelay {
    pub(crate) fn mark(&self, seq: u64) {
        self.0.fetch_max(seq, Relaxed);
    }
}

impl Relay for FakeRelay {
    fn last_seq(&self) -> u64 {
        self.0.load(Relaxed)
    }
    fn publishes(&self) -> bool {
        false
    }
    fn emit(&self, _ts: u64) {}
    fn node(&self) -> String {
        "test".into()
    }
    fn redis_up(&self) -> bool {
        true
    }
}

/// A cluster node's hub that delivered rounds 1..=3 (ring and relay), then hears that
/// 4..=6 are gone from the Stream ([`GAP`]): `fill` marks 6, then fans out the marker.
pub(crate) async fn cluster_hub() -> (Arc<Hub>, Arc<FakeRelay>) {
    let h = hub(opts(64, 64, Delivery::SeqRing));
    let relay = Arc::new(FakeRelay::default());
    assert!(h.relay.set(relay.clone() as Arc<dyn Relay>).is_ok());
    publish(&h, 1..=3).await;
    relay.mark(3);
    (h, relay)
}

pub(crate) const GAP: (u64, u64) = (4, 6);

/// The gap round's fan-out (`fill`'s `c.deliver(hub, gap_round(a, b), false)`).
pub(crate) async fn fan_out_gap(h: &Arc<Hub>) {
    h.clone()
        .deliver(crate::ring::gap_round(GAP.0, GAP.1), false)
        .await;
}

/// The next round from the channel, as `on_round` delivers it: fanned out, then marked.
pub(crate) async fn next_round(h: &Arc<Hub>, relay: &FakeRelay, seq: u64) {
    publish(h, seq..=seq).await;
    relay.mark(seq);
}

/// A step of `fill`'s gap round and a resume registering around it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    Mark,
    FanOut,
    Register,
}

/// What an SSE client resuming from 3 read, registered at its place among `steps`:
/// the gap markers (from, to) it read, the data seqs, and how many gap markers came live
/// (the rest came in its replay).
struct Read {
    gaps: Vec<(u64, u64)>,
    data: Vec<u64>,
    gaps_live: usize,
}

async fn sse_resume_around_the_gap(steps: [Step; 3]) -> Read {
    let (h, relay) = cluster_hub().await;
    let (s, mut client) = pair().await;
    let pos = Position::parse(&format!("3@{}", h.epoch()));
    let mut s = Some(s);
    let mut reg = None;
    for step in steps {
        match step {
            Step::Mark => relay.mark(GAP.1),
            Step::FanOut => fan_out_gap(&h).await,
            Step::Register => {
                let stream = s.take().unwrap();
                reg = Some(h.register_resume_with(stream, Transport::Sse, Some(pos), &[]));
            }
        }
    }
    let (conn, first) = reg.unwrap();
    next_round(&h, &relay, 7).await;
    // As the client's task writes: the replay, then what was queued live behind it.
    crate::replay::write(
        &h.replay_source(),
        &conn.stream,
        Transport::Sse,
        b"",
        first.replay,
        |_| {},
    )
    .await
    .unwrap();
    let live = drain(&conn);
    let gaps_live = live.iter().filter(|i| i.seq == GAP.1).count();
    for it in &live {
        crate::io::write_with_deadline(&conn.stream, &it.wire(Transport::Sse), Some(PATIENCE))
            .await
            .unwrap();
    }
    let events = read_sse_until(&mut client, 7).await;
    let mut read = Read {
        gaps: Vec::new(),
        data: Vec::new(),
        gaps_live,
    };
    for e in events {
        match e.event.as_deref() {
            Some("gap") => {
                let v: serde_json::Value = serde_json::from_str(&e.data).unwrap();
                read.gaps
                    .push((v["from"].as_u64().unwrap(), v["to"].as_u64().unwrap()));
            }
            _ => read.data.push(sse_seq(&e)),
        }
    }
    read
}

fn sse_seq(e: &rtcheck_wire::sse::Event) -> u64 {
    let id = e.id.as_deref().expect("a data event has an id");
    id.split('@').next().unwrap().parse().unwrap()
}

/// The SSE events the client reads up to the data event of seq `last`.
async fn read_sse_until(client: &mut TcpStream, last: u64) -> Vec<rtcheck_wire::sse::Event> {
    let mut parser = rtcheck_wire::sse::Parser::new(1 << 20);
    let mut events = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let done = |ev: &[rtcheck_wire::sse::Event]| {
        ev.last()
            .is_some_and(|e| e.id.is_some() && sse_seq(e) == last)
    };
    while !done(&events) {
        let read = tokio::time::timeout(PATIENCE, client.read(&mut buf)).await;
        let k = read.expect("the client's events within the bound").unwrap();
        assert!(k > 0, "the stream ended early");
        parser.feed(&buf[..k], &mut events).unwrap();
    }
    events
}

/// Regression for 66b4a74 (`fill` marks a gap's end before its fan-out): an SSE resume
/// gets the gap round exactly once wherever it registers around the gap's two steps.
/// Registration reads the relay's mark (`Hub::tail_gap`) under the conns lock, and the
/// fan-out snapshots the conns under that lock, so each order below is one the server
/// can take; the test drives them one after another.
#[tokio::test]
async fn an_sse_resume_gets_a_cluster_gap_once_wherever_it_registers() {
    use Step::*;
    // (order, gap markers that came live)
    let cases = [
        // Before the marking: not owed it in the replay, so it comes live.
        ([Register, Mark, FanOut], 1),
        // Between: owed it in the replay (skip = its seq), so the fan-out passes it by.
        ([Mark, Register, FanOut], 0),
        // After the fan-out: only the replay has it.
        ([Mark, FanOut, Register], 0),
    ];
    for (steps, live) in cases {
        let read = sse_resume_around_the_gap(steps).await;
        assert_eq!(read.gaps, [GAP], "{steps:?}: the gap exactly once");
        assert_eq!(read.gaps_live, live, "{steps:?}: live or replayed");
        assert_eq!(read.data, [7], "{steps:?}: then the next round");
    }
    // Why `fill` marks first: marked after its fan-out, a resume registering in between
    // is owed nothing yet and is not in the fan-out's snapshot: it never gets the gap.
    let read = sse_resume_around_the_gap([FanOut, Register, Mark]).await;
    assert_eq!((read.gaps.len(), read.data), (0, vec![7]));
}
