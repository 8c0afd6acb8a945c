//! The hops between a user and a realtime server (issue 24): the documented limits of
//! proxies, load balancers, CDNs and platforms (data/hops.yaml, embedded), and the pure
//! computation of a path's timeout chain (`chain`), and the hops a measured cut matches
//! (`cut`). Not to be confused with
//! `budget::hops` (the backend calls of a latency budget).
pub mod chain;
pub mod cut;
pub mod library;

use rtcheck_wire::transport::Transport;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;
use std::time::Duration;

pub const HOPS_YAML: &str = include_str!("../../data/hops.yaml");

rtcheck_base::check_ids! {
    /// The hop ids code names (probe's header fingerprints, the proxies it writes fixes
    /// for): each a hop of data/hops.yaml, which the tests hold, so `explain` and
    /// `rtcheck hops` know every one. The catalogue itself stays data: add a hop there.
    pub enum HopId {
        Nginx = "nginx",
        IngressNginx = "ingress-nginx",
        Haproxy = "haproxy",
        Caddy = "caddy",
        Envoy = "envoy",
        AwsAlb = "aws-alb",
        AwsClb = "aws-clb",
        AzureAppgw = "azure-appgw",
        GcpAlb = "gcp-alb",
        AzureFrontDoor = "azure-front-door",
        Cloudflare = "cloudflare",
        Fastly = "fastly",
        Akamai = "akamai",
        CloudRun = "cloud-run",
        Heroku = "heroku",
        Fly = "fly",
    }
}

/// A documented value: a duration, `none` (the product documents no such limit) or
/// `unknown` (not documented, or the sources disagree: the entry's note says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Value {
    Secs(Duration),
    None,
    Unknown,
}

impl TryFrom<String> for Value {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        match s.trim() {
            "none" => Ok(Value::None),
            "unknown" => Ok(Value::Unknown),
            // Documented ranges reach 2^31-1 s (68 years): a wider bound than flags have,
            // still far from any overflow.
            t => rtcheck_base::units::parse_duration_within(
                t,
                Duration::from_secs(100 * 365 * 86_400),
                "100 years",
            )
            .map(Value::Secs),
        }
    }
}

impl From<Value> for String {
    fn from(v: Value) -> String {
        v.to_string()
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Secs(d) => f.write_str(&rtcheck_base::units::fmt_duration(*d)),
            Value::None => f.write_str("none"),
            Value::Unknown => f.write_str("unknown"),
        }
    }
}

impl Value {
    /// For tables: seconds under ten minutes (`350s`, not `5m50s`), compact above.
    pub fn short(self) -> String {
        match self {
            Value::Secs(d) if d.as_secs() < 600 => format!("{}s", d.as_secs()),
            v => v.to_string(),
        }
    }

    pub fn secs(self) -> Option<u64> {
        match self {
            Value::Secs(d) => Some(d.as_secs()),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// Silence after which the hop closes the connection.
    Idle,
    /// Longest a connection (or a response) may live, busy or not.
    Lifetime,
    /// Longest wait for the response to start.
    FirstByte,
}

impl LimitKind {
    /// As reports name it ("first byte").
    pub fn name(self) -> &'static str {
        match self {
            LimitKind::Idle => "idle",
            LimitKind::Lifetime => "lifetime",
            LimitKind::FirstByte => "first byte",
        }
    }
}

/// Traffic that restarts an idle timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reset {
    /// Bytes from the server towards the client (a WebSocket ping, an SSE comment line).
    ServerData,
    /// Bytes from the client towards the server.
    ClientData,
    TcpKeepalive,
    H2Ping,
}

impl Reset {
    pub fn as_str(self) -> &'static str {
        match self {
            Reset::ServerData => "server-data",
            Reset::ClientData => "client-data",
            Reset::TcpKeepalive => "tcp-keepalive",
            Reset::H2Ping => "h2-ping",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    pub kind: LimitKind,
    pub applies_to: Vec<Transport>,
    pub default: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Value>,
    #[serde(default)]
    pub adjustable: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reset_by: Vec<Reset>,
    /// What changes it, in the product's own syntax (`-` when nothing does).
    pub setting: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BufferMode {
    /// Forwards bytes as it reads them.
    None,
    /// Buffers responses unless its setting turns it off.
    ByDefault,
    /// Cannot stream.
    Always,
    Unknown,
}

/// yes / no / needs-config / unknown (also `with-setting` for SSE flushing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Support {
    Yes,
    No,
    NeedsConfig,
    WithSetting,
    Unknown,
}

impl Support {
    pub fn as_str(self) -> &'static str {
        match self {
            Support::Yes => "yes",
            Support::No => "no",
            Support::NeedsConfig => "needs-config",
            Support::WithSetting => "with-setting",
            Support::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Buffering {
    pub mode: BufferMode,
    pub sse_flushed: Support,
    pub setting: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompressionDefault {
    Off,
    On,
    ConfigurableOff,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compression {
    pub default: CompressionDefault,
    pub setting: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub url: String,
    /// The date the page was read (YYYY-MM-DD).
    pub read: String,
}

/// One hop kind, as documented by its vendor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hop {
    pub id: String,
    pub name: String,
    pub kind: String,
    /// l4 (passes bytes) or l7 (terminates HTTP).
    pub layer: String,
    pub limits: Vec<Limit>,
    pub buffering: Buffering,
    pub compression: Compression,
    pub http2_client: Support,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2_setting: Option<String>,
    pub sse: Support,
    pub websocket: Support,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket_setting: Option<String>,
    /// What a configuration reload or deploy does to open connections.
    pub reload: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub sources: Vec<Source>,
}

impl Hop {
    /// The limits of `kind` that apply to `t`.
    pub fn limits(&self, kind: LimitKind, t: Transport) -> impl Iterator<Item = &Limit> {
        self.limits
            .iter()
            .filter(move |l| l.kind == kind && l.applies_to.contains(&t))
    }

    pub fn supports(&self, t: Transport) -> Support {
        match t {
            Transport::Polling => Support::Yes,
            Transport::Sse => self.sse,
            Transport::Websocket => self.websocket,
            // The raw-TCP floor is not HTTP: no hop of the catalogue carries it.
            Transport::Raw => Support::No,
        }
    }
}

/// Parse a hops YAML (the embedded one, or a test's).
pub fn parse(text: &str) -> Result<Vec<Hop>, String> {
    serde_yaml::from_str(text).map_err(|e| format!("data/hops.yaml: {e}"))
}

/// The embedded catalogue, parsed once.
pub fn catalog() -> &'static [Hop] {
    static C: OnceLock<Vec<Hop>> = OnceLock::new();
    C.get_or_init(|| parse(HOPS_YAML).expect("data/hops.yaml parses (tests/cli/hops_data.rs)"))
}

pub fn get(id: &str) -> Option<&'static Hop> {
    catalog().iter().find(|h| h.id == id)
}

pub fn ids() -> Vec<&'static str> {
    catalog().iter().map(|h| h.id.as_str()).collect()
}

/// A hop id the catalogue knows, or an error naming the closest ones.
pub fn check_id(id: &str) -> Result<&'static Hop, String> {
    get(id).ok_or_else(|| {
        let near = closest(id);
        let hint = if near.is_empty() {
            String::new()
        } else {
            format!(" (closest: {})", near.join(", "))
        };
        format!("unknown hop `{id}`{hint}; known hops: {}", ids().join(", "))
    })
}

/// Ids sharing a prefix or word with `id` (a short, cheap suggestion list).
fn closest(id: &str) -> Vec<&'static str> {
    let id = id.to_ascii_lowercase();
    ids()
        .into_iter()
        .filter(|k| {
            k.starts_with(&id)
                || id.starts_with(k)
                || k.split('-').any(|w| w.len() > 2 && id.contains(w))
        })
        .take(3)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_none_unknown_and_durations() {
        assert_eq!(Value::try_from("none".to_string()), Ok(Value::None));
        assert_eq!(Value::try_from("unknown".to_string()), Ok(Value::Unknown));
        assert_eq!(
            Value::try_from("4m".to_string()),
            Ok(Value::Secs(Duration::from_secs(240)))
        );
        assert!(Value::try_from("soon".to_string()).is_err());
    }

    #[test]
    fn every_hop_id_code_names_is_in_the_catalogue() {
        for id in HopId::ALL {
            assert!(get(id.as_str()).is_some(), "{id} is not in data/hops.yaml");
            assert_eq!(HopId::parse(id.as_str()), Some(*id));
        }
        assert_eq!(HopId::parse("aws_alb"), None, "the text is exact");
    }

    #[test]
    fn the_catalogue_parses_and_unknown_ids_name_the_closest() {
        assert!(catalog().len() >= 21);
        assert!(get("aws-alb").is_some());
        let e = check_id("alb").unwrap_err();
        assert!(e.contains("aws-alb"), "{e}");
    }
}
