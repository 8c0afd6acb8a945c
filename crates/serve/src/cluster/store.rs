//! The Redis side of a node: the publish script (global seq, Stream, channel in one atomic
//! step), the relay (subscribe, catch up from the Stream, deliver in seq order, gap markers)
//! and Stream reads for resume. Every Redis call is bounded by [`OP_TIMEOUT`].
use super::config::PathMode;
use super::node::{Backoff, Cluster};
use super::order::{
    entry_seq, heed, parse_message, parse_unpublished, plan_fill, Heard, Heed, Step,
};
use crate::hub::Hub;
use crate::ring::gap_round;
use futures_util::StreamExt;
use rtcheck_wire::epoch::Epoch;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

/// Bound of any one Redis operation: a dead Redis costs at most this, never a hang.
pub const OP_TIMEOUT: Duration = Duration::from_secs(1);
// Key and channel names: [`super::config::Keys`], from `--redis-prefix`.

/// A node joining: the cluster's epoch, or (none in Redis: an empty Redis, or one that lost
/// its keys) ARGV[1] as a new one, with the seq counter and the Stream cleared: whatever
/// they held belongs to no epoch any more.
const EPOCH_LUA: &str = r"
local e = redis.call('GET', KEYS[1])
if e then return e end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2], KEYS[3])
return ARGV[1]
";

/// INCR, XADD and PUBLISH in one script, so the Stream and the channel carry one order and
/// two publishers never share a seq. ARGV[6] is the publisher's epoch and ARGV[1] its
/// high-water mark in it. A Redis that lost its keys (restarted without persistence) has no
/// epoch: the publisher revives its own, and the counter starts above the mark instead of
/// at 1, so the relays carry on (the seqs of the outage go out as a gap). A publisher of
/// another epoch than the cluster's (it started before Redis lost its keys and another
/// node made a new epoch since) publishes in the cluster's, from its counter: every
/// relay, its own included, sees the new epoch and resets its clients.
const PUBLISH_LUA: &str = r"
local e = redis.call('GET', KEYS[3])
if not e then
  e = ARGV[6]
  redis.call('SET', KEYS[3], e)
end
local s = redis.call('INCR', KEYS[1])
local floor = tonumber(ARGV[1])
if e == ARGV[6] and s <= floor then
  s = floor + 1
  redis.call('SET', KEYS[1], s)
end
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], s .. '-0', 'ts', ARGV[3], 'node', ARGV[4], 'epoch', e)
redis.call('PUBLISH', ARGV[5], s .. ' ' .. ARGV[3] .. ' ' .. ARGV[4] .. ' ' .. e)
return {s, e}
";

/// Reserve ARGV[2] seqs for rounds that were scheduled but never published (Redis was
/// down), with the same floor as [`PUBLISH_LUA`], and tell every node: `gap FROM TO NODE`.
/// The Stream gets one entry at TO with `ts` 0 (no round): a node that was away when the
/// message went out finds it on its catch-up; the reserved seqs hold no round, so every
/// reader marks them as a gap.
/// Only in the publisher's epoch (ARGV[6]; revived, as by [`PUBLISH_LUA`], when Redis
/// has none): rounds of an epoch the cluster left are owed to nobody (every client of it
/// gets a reset), and 0 is returned.
const RESERVE_LUA: &str = r"
local e = redis.call('GET', KEYS[3])
if not e then
  e = ARGV[6]
  redis.call('SET', KEYS[3], e)
end
if e ~= ARGV[6] then return 0 end
local n = tonumber(ARGV[2])
local s = redis.call('INCRBY', KEYS[1], n)
local floor = tonumber(ARGV[1])
if s - n < floor then
  s = floor + n
  redis.call('SET', KEYS[1], s)
end
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[5], s .. '-0', 'ts', 0, 'gap', s - n + 1, 'node', ARGV[4], 'epoch', e)
redis.call('PUBLISH', ARGV[3], 'gap ' .. (s - n + 1) .. ' ' .. s .. ' ' .. ARGV[4] .. ' ' .. e)
return s
";

/// How often an idle publisher retries reserving the seqs it owes.
const RESERVE_RETRY: Duration = Duration::from_millis(250);

async fn bounded<T>(
    f: impl std::future::Future<Output = ::redis::RedisResult<T>>,
) -> anyhow::Result<T> {
    match tokio::time::timeout(OP_TIMEOUT, f).await {
        Ok(r) => Ok(r?),
        Err(_) => anyhow::bail!("no answer within {} ms", OP_TIMEOUT.as_millis()),
    }
}

/// The cluster's epoch at a node's start (made when Redis has none).
pub async fn join_epoch(c: &Cluster) -> anyhow::Result<Epoch> {
    let mut con = c.con.clone();
    let script = ::redis::Script::new(EPOCH_LUA);
    let mut inv = script.prepare_invoke();
    let k = &c.cfg.keys;
    inv.key(&k.epoch)
        .key(&k.seq)
        .key(&k.ring)
        .arg(Epoch::random().to_string());
    let e: String = bounded(inv.invoke_async(&mut con)).await?;
    Ok(Epoch::parse(&e))
}

/// The cluster's epoch as Redis holds it now (None: Redis has none, it lost its keys).
pub async fn read_epoch(c: &Cluster) -> anyhow::Result<Option<Epoch>> {
    let mut con = c.con.clone();
    let e: Option<String> = bounded(
        ::redis::cmd("GET")
            .arg(&c.cfg.keys.epoch)
            .query_async(&mut con),
    )
    .await?;
    Ok(e.map(|e| Epoch::parse(&e)))
}

/// The floor for a publish in `epoch`: the highest seq this node delivered or published
/// in it (its relay may lag its own publishes; another node's relay may not).
fn floor(c: &Cluster, epoch: Epoch) -> u64 {
    let (e, published) = *crate::sync::lock(&c.published);
    let mine = if e == epoch { published } else { 0 };
    c.last_seq.load(Relaxed).max(mine)
}

/// Publish one round scheduled at `ts` from a node in `epoch`; returns its global seq and
/// the epoch it was published in (the cluster's).
pub async fn publish_one(
    c: &Cluster,
    script: &::redis::Script,
    epoch: Epoch,
    ts: u64,
) -> anyhow::Result<(u64, Epoch)> {
    let mut con = c.con.clone();
    let mut inv = script.prepare_invoke();
    let k = &c.cfg.keys;
    inv.key(&k.seq)
        .key(&k.ring)
        .key(&k.epoch)
        .arg(floor(c, epoch))
        .arg(ring_cap(c))
        .arg(ts)
        .arg(&c.cfg.node)
        .arg(&k.rounds)
        .arg(epoch.to_string());
    let (seq, e): (u64, String) = bounded(inv.invoke_async(&mut con)).await?;
    let e = Epoch::parse(&e);
    let mut p = crate::sync::lock(&c.published);
    *p = (e, if p.0 == e { p.1.max(seq) } else { seq });
    Ok((seq, e))
}

/// Reserve seqs for the rounds this node could not publish, so every client gets a gap
/// marker for them (rounds without a seq would otherwise vanish without one). A reply
/// lost after the script ran leaves the count owed: the gap then names more seqs than were
/// lost, never fewer.
async fn reserve_unpublished(
    c: &Cluster,
    script: &::redis::Script,
    epoch: Epoch,
) -> anyhow::Result<()> {
    let n = c.unpublished.load(Relaxed);
    if n == 0 {
        return Ok(());
    }
    let mut con = c.con.clone();
    let mut inv = script.prepare_invoke();
    let k = &c.cfg.keys;
    inv.key(&k.seq)
        .key(&k.ring)
        .key(&k.epoch)
        .arg(floor(c, epoch))
        .arg(n)
        .arg(&k.rounds)
        .arg(&c.cfg.node)
        .arg(ring_cap(c))
        .arg(epoch.to_string());
    let top: u64 = bounded(inv.invoke_async(&mut con)).await?;
    c.unpublished.fetch_sub(n, Relaxed);
    if top == 0 {
        eprintln!(
            "rtcheck serve: node {}: {n} round(s) scheduled while Redis was down belong to epoch {epoch}, which the cluster left: its clients get a reset marker instead",
            c.cfg.node
        );
        return Ok(());
    }
    eprintln!(
        "rtcheck serve: node {}: {n} round(s) scheduled while Redis was down were never published: seqs {}..={top} reserved, every node sends them as a gap marker",
        c.cfg.node,
        top + 1 - n
    );
    Ok(())
}

fn ring_cap(c: &Cluster) -> usize {
    c.ring
}

/// `(seq, ts)` of a Stream entry of `epoch` (one without an epoch field is taken as
/// the current one's: entries written before epochs, or by a test).
fn entry_in(e: &::redis::streams::StreamId, epoch: Epoch) -> Option<(u64, u64)> {
    let theirs = e.get::<String>("epoch").map(|s| Epoch::parse(&s));
    if theirs.is_some_and(|t| t != epoch) {
        return None;
    }
    Some((entry_seq(&e.id)?, e.get::<u64>("ts")?))
}

/// `(seq, ts)` of the Stream entries of `epoch` with `from <= seq <= to`, in order.
pub async fn range(
    c: &Cluster,
    epoch: Epoch,
    from: u64,
    to: u64,
) -> anyhow::Result<Vec<(u64, u64)>> {
    let mut con = c.con.clone();
    let end = if to == u64::MAX {
        "+".to_string()
    } else {
        to.to_string()
    };
    let reply: ::redis::streams::StreamRangeReply = bounded(
        ::redis::cmd("XRANGE")
            .arg(&c.cfg.keys.ring)
            .arg(from)
            .arg(end)
            .arg("COUNT")
            .arg(ring_cap(c))
            .query_async(&mut con),
    )
    .await?;
    Ok(reply
        .ids
        .iter()
        .filter_map(|e| entry_in(e, epoch))
        .collect())
}

/// `(seq, ts)` of the newest Stream entries after `from` (at most the node's ring), in
/// order: what a resume replays. (A node's --ring may be smaller than the Stream's cap,
/// set by the publisher's; the oldest are then left to the gap marker, as with a ring.)
pub async fn newest_after(c: &Cluster, epoch: Epoch, from: u64) -> anyhow::Result<Vec<(u64, u64)>> {
    let mut con = c.con.clone();
    let reply: ::redis::streams::StreamRangeReply = bounded(
        ::redis::cmd("XREVRANGE")
            .arg(&c.cfg.keys.ring)
            .arg("+")
            .arg(from)
            .arg("COUNT")
            .arg(ring_cap(c))
            .query_async(&mut con),
    )
    .await?;
    let mut v: Vec<(u64, u64)> = reply
        .ids
        .iter()
        .filter_map(|e| entry_in(e, epoch))
        .collect();
    v.reverse();
    Ok(v)
}

/// Deliver `from..=to` from the Stream (gap markers for what it no longer holds, and for
/// seqs reserved for unpublished rounds: entries with `ts` 0 hold no round).
async fn fill(hub: &Arc<Hub>, c: &Cluster, from: u64, to: u64) -> anyhow::Result<()> {
    let mut have = range(c, hub.epoch(), from, to).await?;
    have.retain(|&(_, ts)| ts != 0);
    for step in plan_fill(from, to, &have) {
        match step {
            Step::Deliver(seq, ts) => {
                let r = hub.round(seq, ts);
                c.deliver(hub, r, true).await;
            }
            Step::Gap(a, b) => {
                c.gap_messages.fetch_add(b - a + 1, Relaxed);
                eprintln!(
                    "rtcheck serve: node {}: rounds {a}..={b} are not in the Redis ring (trimmed, lost in a restart, or never published): gap marker sent",
                    c.cfg.node
                );
                // Marked before the fan-out: a client registering in between gets this gap
                // in its replay (Hub::tail_gap) and skips the live one; one registered
                // before gets it live. Marked after, a resume in that window got neither
                // (hub::tests::an_sse_resume_gets_a_cluster_gap_once_wherever_it_registers).
                c.last_seq.fetch_max(b, Relaxed);
                c.deliver(hub, gap_round(a, b), false).await;
            }
        }
    }
    c.last_seq.fetch_max(to, Relaxed);
    Ok(())
}

/// Everything the Stream holds after the last seq this node delivered (after a loss).
async fn catch_up(hub: &Arc<Hub>, c: &Cluster) -> anyhow::Result<()> {
    let last = c.last_seq.load(Relaxed);
    if last == 0 {
        return Ok(());
    }
    let have = range(c, hub.epoch(), last + 1, u64::MAX).await?;
    if let Some(&(top, _)) = have.last() {
        fill(hub, c, last + 1, top).await?;
    }
    Ok(())
}

/// Move the node to `epoch`: clients told live, ring cleared, counted, said once.
fn reset(hub: &Hub, c: &Cluster, epoch: Epoch, why: &str) {
    let old = hub.epoch();
    let told = hub.reset_epoch(epoch);
    c.last_seq.store(0, Relaxed);
    c.redis_epoch.store(epoch.0, Relaxed);
    c.epoch_resets.fetch_add(1, Relaxed);
    *crate::sync::lock(&c.last_reset) = Some((old, epoch, std::time::Instant::now()));
    eprintln!(
        "rtcheck serve: node {}: epoch {old} -> {epoch} ({why}): ring cleared, {told} client(s) sent a reset marker",
        c.cfg.node
    );
}

/// One round from the channel: in order, filling any hole from the Stream first; another
/// epoch (or seqs going backwards) resets the node's clients first.
async fn on_round(hub: &Arc<Hub>, c: &Cluster, h: &Heard<'_>) -> anyhow::Result<()> {
    let (seq, ts) = (h.seq, h.ts);
    let last = c.last_seq.load(Relaxed);
    let known = (last != 0 && seq <= last)
        .then(|| hub.holds(seq, ts))
        .flatten();
    let from = match heed(hub.epoch(), last, h, known) {
        Heed::Skip => return Ok(()),
        Heed::Deliver { from } => from,
        Heed::Reset => {
            let why = match h.epoch.filter(|&e| e != hub.epoch()) {
                Some(_) => "a new epoch: Redis lost its seq counter",
                None => "a seq went backwards",
            };
            reset(hub, c, h.epoch.unwrap_or(hub.epoch()), why);
            1
        }
    };
    if from < seq {
        fill(hub, c, from, seq - 1).await?;
    }
    c.deliver(hub, hub.round(seq, ts), true).await;
    c.last_seq.fetch_max(seq, Relaxed);
    Ok(())
}

/// Seqs `from..=to` reserved for rounds never published: whatever this node has not
/// delivered up to `to` is filled from the Stream, which marks the reserved ones as a gap.
async fn on_unpublished(hub: &Arc<Hub>, c: &Cluster, h: &Heard<'_>) -> anyhow::Result<()> {
    let (from, to) = (h.seq, h.ts);
    if h.epoch.is_some_and(|e| e != hub.epoch()) {
        // Reserved in an epoch this node is not in yet: its first round resets it.
        return Ok(());
    }
    let last = c.last_seq.load(Relaxed);
    if to <= last {
        return Ok(()); // already covered by a catch-up
    }
    fill(hub, c, if last == 0 { from } else { last + 1 }, to).await
}

/// The relay: subscribed to the rounds channel for the node's lifetime; on a loss it
/// reconnects with [`Backoff`], catches up from the Stream, and carries on.
pub async fn relay(hub: Arc<Hub>, c: Arc<Cluster>, ready: Arc<tokio::sync::Notify>) {
    let mut backoff = Backoff::default();
    let mut first = true;
    // A failure that repeats (a Redis refusing AUTH fails every attempt) is one line per
    // interval with a count, never a flood.
    let mut log = crate::ratelog::RateLog::new(crate::ratelog::EVERY);
    loop {
        let r = relay_once(&hub, &c, &mut backoff, first, &ready, &mut log).await;
        c.link_up.store(false, Relaxed);
        if hub.is_shutting_down() {
            return;
        }
        if let Err(e) = r {
            if let Some(n) = log.hit(std::time::Instant::now()) {
                // Redis's own error text: a peer's words, shown escaped.
                eprintln!(
                    "rtcheck serve: node {}: redis link lost ({}){}; clients stay, reconnecting",
                    c.cfg.node,
                    rtcheck_base::escape::plain(&e.to_string()),
                    log.suffix(n)
                );
            }
            c.set_error(e);
        }
        first = false;
        tokio::select! {
            _ = tokio::time::sleep(backoff.next_delay()) => {}
            _ = hub.shutdown_signalled() => return,
        }
    }
}

async fn relay_once(
    hub: &Arc<Hub>,
    c: &Cluster,
    backoff: &mut Backoff,
    first: bool,
    ready: &tokio::sync::Notify,
    log: &mut crate::ratelog::RateLog,
) -> anyhow::Result<()> {
    let mut ps = bounded(c.client.get_async_pubsub()).await?;
    bounded(ps.subscribe(&c.cfg.keys.rounds)).await?;
    // A connection and a sent SUBSCRIBE prove nothing (NOAUTH comes back later): the link
    // is back only once a command has answered, on the subscription and on the commands'
    // connection.
    if let ::redis::Value::ServerError(e) = bounded(ps.ping::<::redis::Value>()).await? {
        let detail = e.details().unwrap_or("");
        anyhow::bail!("PING on the subscription refused: {} {detail}", e.code());
    }
    bounded(::redis::cmd("PING").query_async::<String>(&mut c.con.clone())).await?;
    // Subscribed before the catch-up: nothing published meanwhile is missed.
    catch_up(hub, c).await?;
    c.link_up.store(true, Relaxed);
    log.reset();
    if !first {
        c.reconnects.fetch_add(1, Relaxed);
        eprintln!(
            "rtcheck serve: node {}: redis link back after {} attempt(s)",
            c.cfg.node,
            backoff.attempts()
        );
    }
    backoff.reset();
    ready.notify_one();
    let mut msgs = ps.on_message();
    let mut check = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            m = msgs.next() => {
                let m = m.ok_or_else(|| anyhow::anyhow!("subscription closed"))?;
                let p = m.get_payload_bytes();
                // A round (the common case) is parsed once; a gap only when it is not one.
                if let Some(h) = parse_message(p) {
                    on_round(hub, c, &h).await?;
                } else if let Some(h) = parse_unpublished(p) {
                    on_unpublished(hub, c, &h).await?;
                } else {
                    eprintln!("rtcheck serve: {}: a message that is neither `SEQ TS NODE` nor `gap FROM TO NODE`", c.cfg.keys.rounds);
                }
            }
            _ = check.tick() => {
                if !c.cmd_up.load(Relaxed) {
                    anyhow::bail!("redis stopped answering the heartbeat");
                }
            }
            _ = hub.shutdown_signalled() => return Ok(()),
        }
    }
}

/// The publisher: the hub schedules rounds, this gives each a global seq in Redis. With
/// `--path naive` the round is also delivered here at once (the demonstrated mistake).
/// A round it cannot publish is counted and owed: once Redis answers again, its seqs are
/// reserved (before the next round, or on a retry while idle) and sent as a gap.
pub async fn publisher(hub: Arc<Hub>, c: Arc<Cluster>, mut rx: tokio::sync::mpsc::Receiver<u64>) {
    let script = ::redis::Script::new(PUBLISH_LUA);
    let reserve = ::redis::Script::new(RESERVE_LUA);
    let mut down = false;
    loop {
        let owed = c.unpublished.load(Relaxed) > 0;
        let ts = tokio::select! {
            t = rx.recv() => match t {
                Some(t) => Some(t),
                None => return,
            },
            _ = tokio::time::sleep(RESERVE_RETRY), if owed => None,
        };
        let r = match reserve_unpublished(&c, &reserve, hub.epoch()).await {
            Ok(()) => match ts {
                Some(ts) => publish_one(&c, &script, hub.epoch(), ts)
                    .await
                    .map(|(seq, _)| Some((seq, ts))),
                None => Ok(None),
            },
            Err(e) => Err(e),
        };
        match r {
            Ok(published) => {
                down = false;
                if let Some((seq, ts)) = published.filter(|_| c.cfg.path == PathMode::Naive) {
                    let r = hub.round(seq, ts);
                    c.deliver(&hub, r, false).await;
                }
            }
            Err(e) => {
                if ts.is_some() {
                    c.count_unpublished();
                }
                if !down {
                    eprintln!(
                        "rtcheck serve: node {}: cannot publish ({e}); counting unpublished rounds",
                        c.cfg.node
                    );
                }
                down = true;
            }
        }
    }
}
