//! Starting a node's link (feature `redis`): connect within bounds, check that Redis
//! answers, join the cluster's epoch, then run the relay, the publisher and the heartbeat;
//! and the Stream reads a resume makes.
use super::config::{redact, ClusterConfig};
use super::node::Cluster;
use super::{presence, store};
use crate::hub::Hub;
use crate::ring::Round;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

/// Connect (bounded: a wrong URL fails the start), then spawn the relay, the publisher and
/// the heartbeat. The hub knows its cluster before any client or round.
pub async fn start(hub: &Arc<Hub>, cfg: ClusterConfig) -> anyhow::Result<Arc<Cluster>> {
    let client = ::redis::Client::open(cfg.url.as_str())?;
    let mc = ::redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(store::OP_TIMEOUT)
        .set_response_timeout(store::OP_TIMEOUT)
        .set_number_of_retries(1)
        .set_max_delay(500);
    let con = tokio::time::timeout(
        Duration::from_secs(3),
        ::redis::aio::ConnectionManager::new_with_config(client.clone(), mc),
    )
    .await
    .map_err(|_| anyhow::anyhow!("--redis {}: no answer within 3 s", redact(&cfg.url)))?
    .map_err(|e| anyhow::anyhow!("--redis {}: cannot connect: {e}", redact(&cfg.url)))?;
    check_link(&con, &cfg.url).await?;
    let (c, rx) = Cluster::new(cfg, client, con, hub.cfg.ring);
    let c = Arc::new(c);
    // The cluster's epoch before any client: seqs are numbered in it.
    let epoch = store::join_epoch(&c)
        .await
        .map_err(|e| anyhow::anyhow!("--redis {}: reading the epoch: {e}", redact(&c.cfg.url)))?;
    hub.reset_epoch(epoch);
    c.redis_epoch.store(epoch.0, Relaxed);
    let _ = hub.relay.set(c.clone());
    let ready = Arc::new(tokio::sync::Notify::new());
    tokio::spawn(store::relay(hub.clone(), c.clone(), ready.clone()));
    tokio::spawn(store::publisher(hub.clone(), c.clone(), rx));
    tokio::spawn(presence::heartbeat(hub.clone(), c.clone()));
    // The first subscription, so a round published right after start reaches this node.
    let _ = tokio::time::timeout(Duration::from_secs(3), ready.notified()).await;
    Ok(c)
}

/// One PING at start: a connection is not a link (a Redis that wants a password accepts
/// the connection and refuses every command, NOAUTH), so serve must not start without it.
async fn check_link(con: &::redis::aio::ConnectionManager, url: &str) -> anyhow::Result<()> {
    let mut con = con.clone();
    let cmd = ::redis::cmd("PING");
    let ping = cmd.query_async::<String>(&mut con);
    let shown = redact(url);
    match tokio::time::timeout(Duration::from_secs(3), ping).await {
        Err(_) => anyhow::bail!("--redis {shown}: no answer to PING within 3 s"),
        Ok(Err(e)) if is_auth_error(&e) => anyhow::bail!(
            "--redis {shown}: PING refused ({}): give the password in the URL (redis://:PASSWORD@HOST:PORT/)",
            one_line(&e)
        ),
        Ok(Err(e)) => anyhow::bail!("--redis {shown}: PING refused: {}", one_line(&e)),
        Ok(Ok(_)) => Ok(()),
    }
}

/// NOAUTH (a password is required) or WRONGPASS.
pub fn is_auth_error(e: &::redis::RedisError) -> bool {
    let code = e.code().unwrap_or("");
    code == "NOAUTH" || code == "WRONGPASS" || e.kind() == ::redis::ErrorKind::AuthenticationFailed
}

fn one_line(e: &impl std::fmt::Display) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Rounds after `since` from the Stream for a resume (empty when the node's own ring
/// reaches back far enough (a reconnect storm after a node dies costs Redis nothing), or
/// when Redis does not answer: the node's own ring then decides, gap included).
pub async fn stream_after(hub: &Hub, c: &Cluster, since: u64) -> Vec<Round> {
    // A client coming from a node further ahead may resume beyond this node's ring: the
    // Stream then says whether its seq is held (or it would get a reset it is not owed).
    let (_, latest) = hub.latest();
    if since <= latest
        && hub
            .ring_oldest()
            .is_some_and(|o| o <= since.saturating_add(1))
    {
        return Vec::new();
    }
    // From `since` itself: a Stream whose newest is `since` holds the client's position.
    // Read in this epoch: if it resets meanwhile, merge_rings leaves these rounds out.
    let epoch = hub.epoch();
    match store::newest_after(c, epoch, since.max(1)).await {
        Ok(v) => v
            .into_iter()
            .filter(|&(_, ts)| ts != 0) // seqs reserved for unpublished rounds: a hole
            // Not encoded here (a resume flood would build a whole ring per client):
            // a replay encodes them as it writes them, a poll only those it carries.
            .map(|(seq, ts)| Round::stub(epoch, seq, ts))
            .collect(),
        Err(e) => {
            c.set_error(e);
            Vec::new()
        }
    }
}
