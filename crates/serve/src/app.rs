//! The server's parts put together above the hub: the hub (registry and fan-out, which
//! owns the session-ack state) and, with `--redis`, this node's cluster link. What needs
//! the concrete cluster (routes, resumes, shutdown) takes an [`App`]; the hub sees the
//! cluster only as its [`Relay`](super::hub::Relay).
use super::cluster::{self, Cluster};
use super::hub::Hub;
use super::ring::Round;
use std::sync::Arc;

pub struct App {
    pub hub: Arc<Hub>,
    pub cluster: Option<Arc<Cluster>>,
}

impl App {
    /// Rounds the cluster's Stream holds after `since` for a resume (none without a
    /// cluster, or when the node's own ring reaches back far enough).
    pub async fn stream_after(&self, since: u64) -> Vec<Round> {
        match &self.cluster {
            Some(c) => cluster::stream_after(&self.hub, c, since).await,
            None => Vec::new(),
        }
    }

    /// [`App::stream_after`] for an optional position (a fresh client resumes nothing).
    pub async fn stream_after_pos(&self, since: Option<u64>) -> Vec<Round> {
        match since {
            Some(s) => self.stream_after(s).await,
            None => Vec::new(),
        }
    }
}
