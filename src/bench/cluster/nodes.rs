//! The processes of one scenario: `rtcheck serve` nodes (children with
//! `--exit-with-parent`, guards that stop them on drop) and the Redis they share (the
//! user's `--redis URL`, or `redis-server` started here by `sys::redis`).
use crate::sys::serve::Scratch;
use anyhow::{anyhow, bail};
use rtcheck_base::os::child::ChildGuard;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use crate::sys::redis::RedisServer;

pub const NAMES: [&str; 4] = ["a", "b", "c", "d"];

/// The Redis a run uses.
pub enum Redis {
    /// Started here, on a free loopback port in its own temp dir, persistence off.
    Ours(RedisServer),
    /// The user's: not ours to stop (redis-restart needs ours).
    User { url: String, shown: String },
}

impl Redis {
    /// The user's URL (checked: loopback, connects within 2 s, answers PING), or our own.
    pub fn open(user: Option<&str>, dir: &std::path::Path) -> anyhow::Result<Redis> {
        let Some(url) = user else {
            return Ok(Redis::Ours(RedisServer::start(dir)?));
        };
        let (addr, shown) = super::parse_redis_url(url)?;
        TcpStream::connect_timeout(&addr, Duration::from_secs(2))
            .map_err(|e| anyhow!("--redis {shown}: cannot connect to {addr}: {e}"))?;
        crate::sys::redis::ping(url).map_err(|e| {
            let e = e.to_string().replace(url, &shown);
            anyhow!("--redis {shown}: no answer to PING: {e}")
        })?;
        Ok(Redis::User {
            url: url.to_string(),
            shown,
        })
    }

    /// Refuse a user's Redis that already holds keys under `prefix`: another cluster (or an
    /// earlier run) would exchange rounds with this one and the counts would mix. Ours is
    /// fresh.
    pub fn check_unused(&self, prefix: &str) -> anyhow::Result<()> {
        let Redis::User { url, shown } = self else {
            return Ok(());
        };
        let err = |e: anyhow::Error| {
            anyhow!(
                "--redis {shown}: {}",
                e.to_string().replace(url.as_str(), shown)
            )
        };
        if let Some(key) = crate::sys::redis::first_key_under(url, prefix).map_err(err)? {
            bail!(
                "--redis {shown}: already holds keys under `{prefix}` (e.g. `{key}`: another cluster, or an earlier run); give another --redis-prefix"
            );
        }
        Ok(())
    }

    /// The user's URL (whose keys a run must delete at its end); None for ours.
    pub fn user_url(&self) -> Option<&str> {
        match self {
            Redis::User { url, .. } => Some(url),
            Redis::Ours(_) => None,
        }
    }

    pub fn url(&self) -> String {
        match self {
            Redis::Ours(r) => r.url(),
            Redis::User { url, .. } => url.clone(),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Redis::Ours(r) => format!("redis-server started by rtcheck at {}", r.url()),
            Redis::User { shown, .. } => shown.clone(),
        }
    }
}

/// A running node.
pub struct Node {
    pub name: String,
    pub guard: ChildGuard,
    pub addr: SocketAddr,
    pub log: PathBuf,
    /// SIGKILLed by the scenario on purpose.
    pub killed: bool,
}

/// How a scenario's nodes run.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    /// None: one node without Redis (`single`).
    pub redis: Option<String>,
    /// `one-path` or `naive`.
    pub path: &'static str,
    /// `ttl` or `events`.
    pub presence: &'static str,
    pub presence_ttl: Duration,
    /// Node `a` publishes the rounds (after POST /control/start); the others only relay.
    pub publish: bool,
    pub rounds: u64,
    pub rate: f64,
    pub size: u64,
    /// `--redis-prefix` of every node (with `redis`).
    pub redis_prefix: String,
}

/// The environment of every node: the Redis URL (its password must not be on argv,
/// which any local user reads in /proc/PID/cmdline).
pub fn node_env(spec: &NodeSpec) -> Vec<(&'static str, String)> {
    let url = spec.redis.iter().cloned();
    url.map(|u| (crate::sys::serve::REDIS_URL_ENV, u)).collect()
}

/// `serve` flags of node `i` (the first node publishes when `spec.publish`); the Redis
/// URL is in [`node_env`].
pub fn node_flags(spec: &NodeSpec, i: usize) -> Vec<String> {
    let mut f: Vec<String> = Vec::new();
    if spec.redis.is_some() {
        f.extend([
            "--node".into(),
            NAMES[i].into(),
            "--path".into(),
            spec.path.into(),
            "--presence".into(),
            spec.presence.into(),
            "--presence-ttl".into(),
            format!("{}ms", spec.presence_ttl.as_millis()),
            "--redis-prefix".into(),
            spec.redis_prefix.clone(),
        ]);
    }
    f.extend(["--size".into(), spec.size.to_string()]);
    if spec.publish && i == 0 {
        f.extend([
            "--wait-start".into(),
            "--rounds".into(),
            spec.rounds.to_string(),
            "--rate".into(),
            spec.rate.to_string(),
        ]);
    } else if spec.redis.is_some() {
        f.push("--no-publish".into());
    }
    f
}

/// Start `n` nodes, each in its own directory under `scratch`.
pub fn start(spec: &NodeSpec, n: usize, scratch: &Scratch) -> anyhow::Result<Vec<Node>> {
    let mut nodes = Vec::with_capacity(n);
    for (i, name) in NAMES.iter().enumerate().take(n) {
        let dir = scratch.0.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| anyhow!("{}: {e}", dir.display()))?;
        let wait = rtcheck_base::os::deadline::Deadline::new(crate::sys::serve::START_WAIT);
        let (flags, env) = (node_flags(spec, i), node_env(spec));
        let c = crate::sys::serve::start_at_env("127.0.0.1:0", &flags, &env, &dir, 1, &wait)
            .map_err(|e| anyhow!("node {name}: {e}"))?;
        nodes.push(Node {
            name: name.to_string(),
            guard: c.guard,
            addr: c.addrs[0],
            log: c.log,
            killed: false,
        });
    }
    Ok(nodes)
}

/// Start node `i` again on `addr`, the port it just left (a restart), in `dir`.
pub fn restart_at(
    spec: &NodeSpec,
    i: usize,
    addr: SocketAddr,
    dir: &std::path::Path,
) -> anyhow::Result<Node> {
    let wait = rtcheck_base::os::deadline::Deadline::new(crate::sys::serve::START_WAIT);
    let (flags, env) = (node_flags(spec, i), node_env(spec));
    let listen = addr.to_string();
    let c = crate::sys::serve::start_at_env(&listen, &flags, &env, dir, 1, &wait)
        .map_err(|e| anyhow!("node {} (restart): {e}", NAMES[i]))?;
    Ok(Node {
        name: NAMES[i].to_string(),
        guard: c.guard,
        addr: c.addrs[0],
        log: c.log,
        killed: false,
    })
}

impl Node {
    /// SIGKILL now (the scenario's fault), reaped.
    pub fn kill(&mut self) {
        let _ = self.guard.child.kill();
        let _ = self.guard.child.wait();
        self.killed = true;
    }
}

/// SIGTERM every node still running; true when each left within its grace.
pub fn stop_all(nodes: &mut [Node]) -> bool {
    let mut clean = true;
    for n in nodes.iter_mut().filter(|n| !n.killed) {
        clean &= n.guard.terminate(Duration::from_secs(5)).1;
    }
    clean
}

/// Addresses still accepting connections (should be none after the nodes stopped).
pub fn still_listening(addrs: &[SocketAddr]) -> Vec<SocketAddr> {
    addrs
        .iter()
        .copied()
        .filter(|a| TcpStream::connect_timeout(a, Duration::from_millis(500)).is_ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_node_a_publishes_and_single_has_no_redis() {
        let spec = NodeSpec {
            redis: Some("redis://:pw@127.0.0.1:1".into()),
            path: "naive",
            presence: "ttl",
            presence_ttl: Duration::from_secs(3),
            publish: true,
            rounds: 10,
            rate: 5.0,
            size: 64,
            redis_prefix: "p:".into(),
        };
        let a = node_flags(&spec, 0).join(" ");
        assert!(
            a.contains(
                "--node a --path naive --presence ttl --presence-ttl 3000ms --redis-prefix p:"
            ),
            "{a}"
        );
        assert!(a.contains("--wait-start --rounds 10 --rate 5") && !a.contains("--no-publish"));
        // The URL (its password) travels in the environment, never argv.
        assert!(!a.contains("redis://") && !a.contains("pw"), "{a}");
        let env = node_env(&spec);
        assert_eq!(
            env,
            [("RTCHECK_REDIS_URL", "redis://:pw@127.0.0.1:1".into())]
        );
        let b = node_flags(&spec, 1).join(" ");
        assert!(b.contains("--node b") && b.ends_with("--no-publish"), "{b}");
        let single = node_flags(
            &NodeSpec {
                redis: None,
                ..spec.clone()
            },
            0,
        )
        .join(" ");
        assert!(
            !single.contains("--redis") && single.contains("--wait-start"),
            "{single}"
        );
        assert!(node_env(&NodeSpec {
            redis: None,
            ..spec
        })
        .is_empty());
    }
}
