//! The cluster without the `redis` feature: a [`Cluster`] has no values, so no node ever
//! links (a `--redis` is refused by [`ClusterConfig::from_options`]) and every function
//! taking one is never called. Callers above the hub need no `cfg` of their own.
use super::config::{ClusterConfig, NO_REDIS};
use crate::hub::Hub;
use crate::ring::Round;
use std::sync::Arc;

/// A node's link: none in this build.
pub enum Cluster {}

pub async fn start(_hub: &Arc<Hub>, _cfg: ClusterConfig) -> anyhow::Result<Arc<Cluster>> {
    anyhow::bail!(NO_REDIS)
}

pub async fn stream_after(_hub: &Hub, c: &Cluster, _since: u64) -> Vec<Round> {
    match *c {}
}

pub fn health(_hub: &Hub, c: &Cluster) -> String {
    match *c {}
}

pub fn metrics(c: &Cluster) -> String {
    match *c {}
}

pub async fn presence_json(_hub: &Hub, c: &Cluster) -> String {
    match *c {}
}

pub async fn farewell(c: &Cluster) {
    match *c {}
}
