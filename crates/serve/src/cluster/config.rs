//! What serve's cluster flags give and what they validate to: the Redis URL, the node's
//! name, the path and presence modes, and every Redis key name. Compiled without the
//! `redis` feature too, so the flags and the config always parse (a `--redis` then says
//! which feature is missing).
use rtcheck_base::names::Named;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathMode {
    // Every round goes publisher -> Redis -> every node, the publishing node included.
    OnePath,
    // DEMONSTRATION ONLY: also deliver this node's own rounds locally, so its clients get
    // each of them twice (the seed's 50 % duplicates).
    Naive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PresenceMode {
    // An alive key per client with a TTL, refreshed by the node's heartbeat: a dead node's
    // clients vanish within TTL + one heartbeat.
    Ttl,
    // DEMONSTRATION: join/leave events over pub/sub into a set; a dead node leaves ghosts.
    Events,
}

impl Named for PathMode {
    const ALL: &'static [PathMode] = &[PathMode::OnePath, PathMode::Naive];
    fn name(self) -> &'static str {
        match self {
            PathMode::OnePath => "one-path",
            PathMode::Naive => "naive",
        }
    }
}

impl Named for PresenceMode {
    const ALL: &'static [PresenceMode] = &[PresenceMode::Ttl, PresenceMode::Events];
    fn name(self) -> &'static str {
        match self {
            PresenceMode::Ttl => "ttl",
            PresenceMode::Events => "events",
        }
    }
}

/// What serve's cluster flags give (`--redis` and the rest), before validation.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    pub redis: Option<String>,
    pub node: Option<String>,
    pub path: PathMode,
    pub presence: PresenceMode,
    pub presence_ttl: Duration,
    pub redis_prefix: String,
    pub no_publish: bool,
}

impl Default for ClusterOptions {
    fn default() -> ClusterOptions {
        ClusterOptions {
            redis: None,
            node: None,
            path: PathMode::OnePath,
            presence: PresenceMode::Ttl,
            presence_ttl: Duration::from_secs(3),
            redis_prefix: DEFAULT_PREFIX.to_string(),
            no_publish: false,
        }
    }
}

/// `--redis-prefix` of serve by default.
pub const DEFAULT_PREFIX: &str = "rtcheck:";

/// A key prefix: 1 to 64 of `A-Z a-z 0-9 : . _ -` (no glob characters: presence counts
/// keys with `SCAN MATCH PREFIX*`, and `bench cluster` looks for keys the same way).
pub fn parse_prefix(s: &str) -> Result<String, String> {
    let ok = (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b":._-".contains(&b));
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("`{s}`: 1 to 64 of A-Z a-z 0-9 : . _ -"))
    }
}

/// Every Redis name of one cluster, built from its prefix in this one place (a new key
/// is added here).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Keys {
    pub prefix: String,
    /// Global seq counter.
    pub seq: String,
    /// The ring: a Stream whose entry ids are `SEQ-0`, capped at --ring entries.
    pub ring: String,
    /// The channel every node subscribes to: `SEQ TS NODE EPOCH` (or `gap FROM TO NODE`).
    pub rounds: String,
    /// The cluster's epoch (rtcheck_wire::epoch): the seqs of `seq` are numbered in it.
    pub epoch: String,
    /// Presence ttl: `ALIVE NODE:ID` keys with a TTL.
    pub alive: String,
    /// Presence events: the set of online members and its join/leave channel.
    pub online: String,
    pub presence: String,
}

impl Keys {
    pub fn new(prefix: &str) -> Keys {
        let k = |name: &str| format!("{prefix}{name}");
        Keys {
            prefix: prefix.to_string(),
            seq: k("seq"),
            ring: k("ring"),
            rounds: k("rounds"),
            epoch: k("epoch"),
            alive: k("alive:"),
            online: k("online"),
            presence: k("presence"),
        }
    }
}

/// Validated cluster settings.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClusterConfig {
    pub url: String,
    pub node: String,
    pub path: PathMode,
    pub presence: PresenceMode,
    pub ttl: Duration,
    pub heartbeat: Duration,
    pub publish: bool,
    pub keys: Keys,
}

impl ClusterConfig {
    /// None without --redis; the URL is parsed here (no connection yet).
    pub fn from_options(f: &ClusterOptions) -> Result<Option<ClusterConfig>, String> {
        let Some(url) = &f.redis else {
            return Ok(None);
        };
        check_url(url)?;
        let node = f
            .node
            .clone()
            .unwrap_or_else(|| format!("node-{}", std::process::id()));
        let ok = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
        if node.is_empty() || node.len() > 64 || !node.chars().all(ok) {
            return Err(format!(
                "--node `{node}`: 1 to 64 letters, digits, `.`, `_` or `-`"
            ));
        }
        let ttl = f.presence_ttl;
        if ttl < Duration::from_millis(300) || ttl > Duration::from_secs(3600) {
            return Err(format!(
                "--presence-ttl {}: out of bounds 300ms..=1h",
                rtcheck_base::units::fmt_duration(ttl)
            ));
        }
        Ok(Some(ClusterConfig {
            url: url.clone(),
            node,
            path: f.path,
            presence: f.presence,
            ttl,
            heartbeat: ttl / 3,
            publish: !f.no_publish,
            keys: Keys::new(&f.redis_prefix),
        }))
    }

    /// The startup line.
    pub fn banner(&self) -> String {
        let path = match self.path {
            PathMode::OnePath => "one-path (publisher -> Redis -> every node)".to_string(),
            PathMode::Naive => {
                "naive (DEMONSTRATION ONLY: own rounds also delivered locally = duplicates on this node)"
                    .to_string()
            }
        };
        format!(
            "cluster: node {}, redis {}, prefix {}, path {path}, presence {} (ttl {}, heartbeat {}), {}",
            self.node,
            redact(&self.url),
            self.keys.prefix,
            self.presence.name(),
            rtcheck_base::units::fmt_duration(self.ttl),
            rtcheck_base::units::fmt_duration(self.heartbeat),
            if self.publish {
                "publishing"
            } else {
                "not publishing (--no-publish)"
            }
        )
    }
}

/// What a `--redis` gets from a build without the `redis` feature.
pub const NO_REDIS: &str = "--redis: this rtcheck was built without the \"redis\" feature";

/// The URL parsed (no connection yet).
#[cfg(feature = "redis")]
fn check_url(url: &str) -> Result<(), String> {
    match ::redis::Client::open(url) {
        Ok(_) => Ok(()),
        Err(_) => Err(format!(
            "--redis {}: not a Redis URL (redis://HOST:PORT/ or unix:///PATH)",
            redact(url)
        )),
    }
}

#[cfg(not(feature = "redis"))]
fn check_url(_url: &str) -> Result<(), String> {
    Err(NO_REDIS.to_string())
}

/// The warning for a Redis URL whose secret (password, query value) came on `argv`, which
/// any local user reads in /proc/PID/cmdline; None when it came from RTCHECK_REDIS_URL.
pub fn argv_warning(url: &str, argv: &[String]) -> Option<String> {
    let on_argv = argv.iter().any(|x| x.ends_with(url));
    (on_argv && redact(url) != url).then(|| {
        "WARNING: the --redis URL's secret is readable by any local user in /proc/PID/cmdline; give the URL in RTCHECK_REDIS_URL".to_string()
    })
}

/// A Redis URL fit for logs and /healthz: a password (`redis://user:pass@host/`) or a
/// query value (`?password=X`) becomes `***` (the one redaction, `rtcheck_base::redact`).
pub fn redact(url: &str) -> String {
    rtcheck_base::redact::url(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redis(url: &str) -> ClusterOptions {
        ClusterOptions {
            redis: Some(url.to_string()),
            ..ClusterOptions::default()
        }
    }

    #[test]
    fn passwords_never_reach_logs() {
        assert_eq!(redact("redis://h:1/"), "redis://h:1/");
        assert_eq!(redact("redis://:pw@h:1/0"), "redis://:***@h:1/0");
        assert_eq!(redact("redis://u:pw@h/"), "redis://u:***@h/");
        assert_eq!(redact("rediss://tok@h/"), "rediss://***@h/");
        assert_eq!(redact("unix:///run/redis.sock"), "unix:///run/redis.sock");
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let url = "redis://:pw@127.0.0.1:1/";
        let w = argv_warning(url, &argv(&["rtcheck", "serve", "--redis", url])).unwrap();
        assert!(w.contains("RTCHECK_REDIS_URL") && !w.contains("pw"), "{w}");
        assert!(argv_warning(url, &argv(&["rtcheck", &format!("--redis={url}")])).is_some());
        // From the environment, or without a secret: nothing to warn about.
        assert!(argv_warning(url, &argv(&["rtcheck", "serve"])).is_none());
        let plain = "redis://127.0.0.1:1/";
        assert!(argv_warning(plain, &argv(&["rtcheck", "--redis", plain])).is_none());
        let e = ClusterConfig::from_options(&redis("nope://u:secret@h")).unwrap_err();
        assert!(!e.contains("secret"), "{e}");
    }

    #[cfg(not(feature = "redis"))]
    #[test]
    fn without_the_feature_a_redis_url_is_one_line_naming_it() {
        let e = ClusterConfig::from_options(&redis("redis://127.0.0.1:6379/")).unwrap_err();
        assert_eq!(e, NO_REDIS);
        assert!(ClusterConfig::from_options(&ClusterOptions::default())
            .unwrap()
            .is_none());
    }
}
