//! Presence in Redis. `ttl`: one alive key per local client (`PREFIXalive:NODE:ID`, PX =
//! --presence-ttl), refreshed by the node's heartbeat every TTL/3, so a dead node's clients
//! vanish within TTL + one heartbeat. `events` (demonstration): join/leave published on a
//! channel and kept in a set; nobody sends the leaves of a node that died: ghosts.
//! The heartbeat is also the node's "does Redis answer" probe.
use super::config::PresenceMode;
use super::node::Cluster;
use crate::hub::Hub;
use crate::sync::lock;
use rtcheck_base::names::Named;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// A local client's name in Redis: `NODE:ID`.
pub fn member(node: &str, id: u64) -> String {
    format!("{node}:{id}")
}

/// Joins and leaves between two heartbeats (pure).
pub fn diff(before: &BTreeSet<u64>, now: &BTreeSet<u64>) -> (Vec<u64>, Vec<u64>) {
    (
        now.difference(before).copied().collect(),
        before.difference(now).copied().collect(),
    )
}

/// One heartbeat's commands in one pipeline (PING first: it is also the liveness probe).
fn beat(c: &Cluster, before: &BTreeSet<u64>, now: &BTreeSet<u64>) -> ::redis::Pipeline {
    let node = &c.cfg.node;
    let keys = &c.cfg.keys;
    let mut p = ::redis::pipe();
    p.cmd("PING").ignore();
    let (joined, left) = diff(before, now);
    match c.cfg.presence {
        PresenceMode::Ttl => {
            let px = c.cfg.ttl.as_millis() as u64;
            for id in now {
                let k = format!("{}{}", keys.alive, member(node, *id));
                p.cmd("SET").arg(k).arg(1).arg("PX").arg(px).ignore();
            }
            for id in &left {
                p.cmd("DEL")
                    .arg(format!("{}{}", keys.alive, member(node, *id)))
                    .ignore();
            }
        }
        PresenceMode::Events => {
            for (what, ids) in [("join", &joined), ("leave", &left)] {
                for id in ids {
                    let m = member(node, *id);
                    let op = if what == "join" { "SADD" } else { "SREM" };
                    p.cmd(op).arg(&keys.online).arg(&m).ignore();
                    p.cmd("PUBLISH")
                        .arg(&keys.presence)
                        .arg(format!("{what} {m}"))
                        .ignore();
                }
            }
        }
    }
    p
}

/// The heartbeat, every TTL/3 for the node's lifetime.
pub async fn heartbeat(hub: Arc<Hub>, c: Arc<Cluster>) {
    let mut tick = tokio::time::interval(c.cfg.heartbeat);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = hub.shutdown_signalled() => return,
        }
        let now: BTreeSet<u64> = hub.conn_ids().into_iter().collect();
        let known = lock(&c.present).clone();
        let mut con = c.con.clone();
        let p = beat(&c, &known, &now);
        match tokio::time::timeout(super::store::OP_TIMEOUT, p.query_async::<()>(&mut con)).await {
            Ok(Ok(())) => {
                c.cmd_up.store(true, Relaxed);
                *lock(&c.present) = now;
                // The cluster's epoch, for /healthz (None: Redis lost it; the next publish
                // revives or replaces it).
                if let Ok(e) = super::store::read_epoch(&c).await {
                    c.redis_epoch.store(e.map_or(0, |e| e.0), Relaxed);
                }
            }
            Ok(Err(e)) => {
                c.cmd_up.store(false, Relaxed);
                c.set_error(e);
            }
            Err(_) => {
                c.cmd_up.store(false, Relaxed);
                c.set_error("heartbeat: no answer within 1 s");
            }
        }
    }
}

/// At a clean shutdown: the leaves of every client Redis still counts (a killed node never
/// gets here: that is what TTLs are for). Bounded: a dead Redis costs at most 500 ms.
pub async fn farewell(c: &Cluster) {
    let known = std::mem::take(&mut *lock(&c.present));
    if known.is_empty() {
        return;
    }
    let mut con = c.con.clone();
    let p = beat(c, &known, &BTreeSet::new());
    let wait = std::time::Duration::from_millis(500);
    let _ = tokio::time::timeout(wait, p.query_async::<()>(&mut con)).await;
}

/// Clients online as Redis sees them (all nodes), or None when it does not answer.
pub async fn online(c: &Cluster) -> Option<u64> {
    let mut con = c.con.clone();
    let op = async {
        match c.cfg.presence {
            PresenceMode::Events => {
                ::redis::cmd("SCARD")
                    .arg(&c.cfg.keys.online)
                    .query_async::<u64>(&mut con)
                    .await
            }
            PresenceMode::Ttl => {
                let mut cursor = 0u64;
                let mut n = 0u64;
                loop {
                    let (next, keys): (u64, Vec<String>) = ::redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(format!("{}*", c.cfg.keys.alive))
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(&mut con)
                        .await?;
                    n += keys.len() as u64;
                    if next == 0 {
                        return Ok(n);
                    }
                    cursor = next;
                }
            }
        }
    };
    tokio::time::timeout(super::store::OP_TIMEOUT * 2, op)
        .await
        .ok()?
        .ok()
}

/// GET /presence: {"node","mode","online","local","redis_up"}; online is null while Redis
/// does not answer.
pub async fn json(hub: &Hub, c: &Cluster) -> String {
    serde_json::json!({
        "node": c.cfg.node,
        "mode": c.cfg.presence.name(),
        "online": online(c).await,
        "local": hub.client_count(),
        "redis_up": c.redis_up(),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeats_see_joins_and_leaves() {
        let a: BTreeSet<u64> = [1, 2, 3].into();
        let b: BTreeSet<u64> = [2, 3, 4, 5].into();
        assert_eq!(diff(&a, &b), (vec![4, 5], vec![1]));
        assert_eq!(diff(&b, &b), (vec![], vec![]));
        assert_eq!(member("a", 7), "a:7");
    }
}
