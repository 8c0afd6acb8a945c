//! The workload Profile: what the user is building. Filled from flags, an answers YAML
//! file or prompts (see `choose::prompts`), saved by `choose --save`, read by `audit`.
use rtcheck_base::units::{serde_duration, serde_opt_duration};
use rtcheck_wire::transport::Transport;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Upstream {
    None,
    Sparse,
    Dense,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Loss {
    /// Newer replaces older (price, position, online count).
    Replaceable,
    /// Must not lose; everyone sees the same stream.
    Shared,
    /// Must not lose; data is per user.
    PerUser,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Terminates client connections (one fd per client).
    #[default]
    Server,
    /// Forwards connections to upstreams (one outbound port per connection).
    Proxy,
    /// Opens connections to a server (one outbound port per connection).
    Loadgen,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Proxy => "proxy",
            Role::Loadgen => "loadgen",
        }
    }
}

pub const DEFAULT_CONNECTIONS: u64 = 10_000;
pub const MAX_CONNECTIONS: u64 = 100_000_000;
pub const MIN_RATE: f64 = 0.001;
pub const MAX_RATE: f64 = 1_000_000.0;
pub const MAX_SIZE: u64 = 64 << 20;
pub const MAX_DISCONNECT: Duration = Duration::from_secs(86_400);
pub const MAX_VISIBLE: Duration = Duration::from_secs(30 * 86_400);
pub const DEFAULT_MACHINES: u64 = 1;
pub const DEFAULT_RATE: f64 = 10.0;
pub const DEFAULT_SIZE: u64 = 1024;
pub const DEFAULT_MAX_DISCONNECT: Duration = Duration::from_secs(3);

/// The workload. Question answers are optional until asked; the rest has defaults.
/// Field names are the YAML keys (snake_case) and mirror the `choose` flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Q1: how soon a change must be visible to the user.
    #[serde(
        default,
        with = "serde_opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub visible_within: Option<Duration>,
    /// Q2: client-to-server traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// Q2: binary payloads.
    #[serde(default)]
    pub binary: bool,
    /// Q3: what losing one message means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<Loss>,
    /// Q4: concurrent connections in total (YAML: a number or `20k`).
    #[serde(
        default = "default_connections",
        deserialize_with = "rtcheck_base::units::serde_count::deserialize"
    )]
    pub connections: u64,
    /// Q4: machines serving them.
    #[serde(
        default = "default_machines",
        deserialize_with = "rtcheck_base::units::serde_count::deserialize"
    )]
    pub machines: u64,
    /// Messages per second sent to each client.
    #[serde(default = "default_rate")]
    pub rate: f64,
    /// Bytes per message (YAML: a number or with a unit, `64KiB`).
    #[serde(
        default = "default_size",
        deserialize_with = "rtcheck_base::units::serde_size::deserialize"
    )]
    pub size: u64,
    /// Longest client disconnect that must not lose data.
    #[serde(default = "default_max_disconnect", with = "serde_duration")]
    pub max_disconnect: Duration,
    /// Transport in use (audit); filled by `choose --save` from the recommendation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    /// More transports the same routes carry (lint: `[websocket, sse]` behind one `/`);
    /// added to `transport`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transports: Vec<Transport>,
    /// What the audited host does.
    #[serde(default)]
    pub role: Role,
    /// How often the server sends its own heartbeat (WebSocket ping or SSE comment line);
    /// absent when unknown or none. `tcp-keepalive` passes when it is under the bound.
    #[serde(
        default,
        with = "serde_opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub ping: Option<Duration>,
    /// The hops between the users and the server, outermost first (`[cloudflare, aws-alb,
    /// nginx]`; `[direct]` for none), each optionally with declared values
    /// (`- aws-alb: {idle: 300s}`). Absent when not declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<Vec<crate::hops::chain::PathEntry>>,
    /// What one connection costs on this server, measured by `rtcheck bench idle
    /// --server --save` (issue 39); choose's sizing and audit's memory check use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_per_connection: Option<MemoryPerConnection>,
}

/// Bytes per connection (server RSS + kernel socket memory) per variant, as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryPerConnection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plain: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deflate: Option<u64>,
    /// idle, or the rate every client received (`10/s`).
    #[serde(default = "idle_word")]
    pub activity: String,
    /// The command and host that measured it (the reference choose and audit cite).
    #[serde(default)]
    pub how: String,
}

fn idle_word() -> String {
    "idle".into()
}

impl MemoryPerConnection {
    /// The figure to size with: the largest measured variant (a server that offers TLS
    /// or compression pays for it on the connections that take it), with its name.
    pub fn sizing(&self) -> Option<(u64, &'static str)> {
        [
            (self.plain, "plain"),
            (self.tls, "tls"),
            (self.deflate, "deflate"),
        ]
        .into_iter()
        .filter_map(|(v, n)| v.filter(|&b| b > 0).map(|b| (b, n)))
        .max_by_key(|(b, _)| *b)
    }

    /// `measured 14.2 KB per connection (deflate, idle) by rtcheck bench idle --server
    /// ... on HOST`: the reference a report cites.
    pub fn reference(&self) -> Option<String> {
        let (b, v) = self.sizing()?;
        Some(format!(
            "measured {} per connection ({v}, {}) by {}",
            rtcheck_base::units::fmt_bytes(b),
            self.activity,
            self.how
        ))
    }
}

fn default_connections() -> u64 {
    DEFAULT_CONNECTIONS
}
fn default_machines() -> u64 {
    DEFAULT_MACHINES
}
fn default_rate() -> f64 {
    DEFAULT_RATE
}
fn default_size() -> u64 {
    DEFAULT_SIZE
}
fn default_max_disconnect() -> Duration {
    DEFAULT_MAX_DISCONNECT
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            visible_within: None,
            upstream: None,
            binary: false,
            loss: None,
            connections: DEFAULT_CONNECTIONS,
            machines: DEFAULT_MACHINES,
            rate: DEFAULT_RATE,
            size: DEFAULT_SIZE,
            max_disconnect: DEFAULT_MAX_DISCONNECT,
            transport: None,
            transports: vec![],
            role: Role::Server,
            ping: None,
            path: None,
            memory_per_connection: None,
        }
    }
}

impl Profile {
    /// Every declared transport: `transport`, then `transports`, each once.
    pub fn declared_transports(&self) -> Vec<Transport> {
        let mut out: Vec<Transport> = self.transport.into_iter().collect();
        for t in &self.transports {
            if !out.contains(t) {
                out.push(*t);
            }
        }
        out
    }

    /// Connections one machine carries (rounded up).
    pub fn connections_per_machine(&self) -> u64 {
        self.connections.div_ceil(self.machines.max(1))
    }

    /// Range checks that serde cannot express. Errors name the field, in the one wording
    /// every bound error uses ("size: must be between 1 and 67108864 bytes, got 0").
    pub fn validate(&self) -> Result<(), String> {
        use rtcheck_base::units::{fmt_duration as d, out_of_bounds as oob};
        // Upper bounds keep every product (connections x bytes, ring x sessions) far from
        // u64 overflow and name the field instead of printing nonsense.
        if !(1..=MAX_CONNECTIONS).contains(&self.connections) {
            return Err(oob("connections", self.connections, 1, MAX_CONNECTIONS, ""));
        }
        if !(1..=self.connections).contains(&self.machines) {
            return Err(oob(
                "machines",
                self.machines,
                1,
                format!("{} (the connections)", self.connections),
                "",
            ));
        }
        if !(self.rate.is_finite() && (MIN_RATE..=MAX_RATE).contains(&self.rate)) {
            return Err(oob("rate", self.rate, MIN_RATE, MAX_RATE, "messages/s"));
        }
        if !(1..=MAX_SIZE).contains(&self.size) {
            return Err(oob("size", self.size, 1, MAX_SIZE, "bytes (64 MiB)"));
        }
        if self.max_disconnect > MAX_DISCONNECT {
            let got = d(self.max_disconnect);
            return Err(oob("max_disconnect", got, "0s", d(MAX_DISCONNECT), ""));
        }
        if let Some(p) = self.ping {
            if !(Duration::from_millis(100)..=MAX_DISCONNECT).contains(&p) {
                return Err(oob("ping", d(p), "100ms", d(MAX_DISCONNECT), ""));
            }
        }
        if let Some(v) = self.visible_within {
            if !(Duration::from_millis(1)..=MAX_VISIBLE).contains(&v) {
                return Err(oob("visible_within", d(v), "1ms", d(MAX_VISIBLE), ""));
            }
        }
        if let Some((ids, over)) = self.hop_path() {
            crate::hops::chain::compute(&ids, &over).map_err(|e| format!("path: {e}"))?;
        }
        Ok(())
    }

    /// The declared path as hop ids and overrides (None when no path was declared).
    pub fn hop_path(&self) -> Option<(Vec<String>, crate::hops::chain::Overrides)> {
        self.path.as_deref().map(crate::hops::chain::split_path)
    }

    /// The bound error of `field` as [`Profile::validate`] words it ("connections: must be
    /// between ..."), or None when that field is within bounds. Prompts check each answer with it.
    pub fn field_error(&self, field: &str) -> Option<String> {
        self.validate()
            .err()
            .filter(|e| e.starts_with(&format!("{field}:")))
    }

    /// Parse a profile YAML; `origin` names the file in errors, with the line and field.
    pub fn from_yaml(text: &str, origin: &str) -> anyhow::Result<Profile> {
        let p: Profile = serde_yaml::from_str(text).map_err(|e| {
            // serde_yaml appends " at line X column Y"; the prefix already says where.
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg);
            let line_text = e
                .location()
                .and_then(|l| text.lines().nth(l.line().saturating_sub(1)))
                .unwrap_or("");
            let mut msg = plain_yaml_error(msg, line_text);
            let mut loc = e
                .location()
                .map(|l| format!(":{}:{}", l.line(), l.column()))
                .unwrap_or_default();
            // Errors from custom deserializers (durations) carry neither the field nor its
            // line: find the key that fails on its own and point at it.
            if let Some((key, line)) = failing_key(text) {
                if !msg.starts_with(&format!("{key}:")) && !msg.contains(&format!("`{key}`")) {
                    msg = format!("{key}: {msg}");
                    loc = format!(":{line}");
                }
            }
            anyhow::anyhow!("{origin}{loc}: {msg}")
        })?;
        p.validate().map_err(|e| {
            let field = e.split(':').next().unwrap_or_default();
            let loc = key_line(text, field)
                .map(|l| format!(":{l}"))
                .unwrap_or_default();
            anyhow::anyhow!("{origin}{loc}: {e}")
        })?;
        Ok(p)
    }

    /// The profile in `path`, given to `flag` (named in every error), read bounded.
    pub fn load(flag: &str, path: &Path) -> anyhow::Result<Profile> {
        let text = rtcheck_base::input::yaml(flag, path)?;
        Profile::from_yaml(&text, &path.display().to_string())
    }

    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("profile serializes")
    }
}

/// serde's words for a type mismatch in a user's words: "invalid type: string \"abc\",
/// expected u64" becomes "expected a whole number, got `abc`"; an unclosed `[` is named
/// instead of serde_yaml's "expected a YAML tag". `line` is the YAML line it points at.
pub fn plain_yaml_error(msg: &str, line: &str) -> String {
    // What serde quotes from the file is escaped and cut short.
    rtcheck_base::escape::bound_quotes(&yaml_words(msg, line))
}

fn yaml_words(msg: &str, line: &str) -> String {
    if msg.contains("did not find expected") || msg.contains("while parsing a flow") {
        return "unclosed `[` or `{` (the YAML ends inside it)".to_string();
    }
    let Some((head, expected)) = msg.split_once(", expected ") else {
        return msg.to_string();
    };
    let (field, got) = match head
        .split_once("invalid type: ")
        .or(head.split_once("invalid value: "))
    {
        Some((field, got)) => (field, got),
        None => return msg.to_string(),
    };
    let got = match got {
        "sequence" => "a list".to_string(),
        "map" => "a map".to_string(),
        g => g
            .split_once(' ')
            .map(|(_, v)| v.trim_matches(|c| c == '"' || c == '`').to_string())
            .map(|v| format!("`{v}`"))
            .unwrap_or_else(|| g.to_string()),
    };
    let expected = match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" | "i32" | "i64" => "a whole number",
        "f32" | "f64" => "a number",
        "a boolean" => "true or false",
        e if e.starts_with("struct ") => "`key: value` lines",
        e if e.contains("YAML tag") => "a single value, not a list or map",
        e => e,
    };
    let unclosed = line.matches('[').count() > line.matches(']').count()
        || line.matches('{').count() > line.matches('}').count();
    if unclosed {
        return format!("{field}unclosed `[` or `{{` on this line");
    }
    format!("{field}expected {expected}, got {got}")
}

/// The first top-level key whose value alone fails to deserialize, with its line.
fn failing_key(text: &str) -> Option<(String, usize)> {
    let Ok(serde_yaml::Value::Mapping(m)) = serde_yaml::from_str::<serde_yaml::Value>(text) else {
        return None;
    };
    m.into_iter().find_map(|(k, v)| {
        let key = k.as_str()?.to_string();
        let mut one = serde_yaml::Mapping::new();
        one.insert(k, v);
        serde_yaml::from_value::<Profile>(serde_yaml::Value::Mapping(one))
            .is_err()
            .then(|| {
                let line = key_line(text, &key).unwrap_or(1);
                (key, line)
            })
    })
}

/// 1-based line of a top-level `key:` in the YAML text.
fn key_line(text: &str, key: &str) -> Option<usize> {
    if key.is_empty() {
        return None;
    }
    text.lines()
        .position(|l| {
            l.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_round_trip_keeps_every_field() {
        let p = Profile {
            visible_within: Some(Duration::from_millis(200)),
            upstream: Some(Upstream::Dense),
            binary: true,
            loss: Some(Loss::PerUser),
            connections: 5000,
            machines: 2,
            rate: 5.0,
            size: 512,
            max_disconnect: Duration::from_secs(10),
            transport: Some(Transport::Websocket),
            transports: vec![Transport::Sse],
            role: Role::Proxy,
            ping: Some(Duration::from_secs(25)),
            path: None,
            memory_per_connection: Some(MemoryPerConnection {
                plain: Some(17_500),
                tls: None,
                deflate: Some(33_300),
                activity: "idle".into(),
                how: "rtcheck bench idle --server ws://127.0.0.1:8080/ws on h".into(),
            }),
        };
        let back = Profile::from_yaml(&p.to_yaml(), "x.yaml").unwrap();
        assert_eq!(back, p);
        // The largest measured variant sizes, named in the reference.
        let m = p.memory_per_connection.unwrap();
        assert_eq!(m.sizing(), Some((33_300, "deflate")));
        assert!(m
            .reference()
            .unwrap()
            .contains("(deflate, idle) by rtcheck bench idle"));
    }

    #[test]
    fn unknown_key_names_file_line_and_field() {
        let err = Profile::from_yaml("connections: 10\nvisible_withn: 5s\n", "a.yaml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("a.yaml:2:"), "{err}");
        assert!(err.contains("visible_withn"), "{err}");
    }

    #[test]
    fn absurd_values_are_refused_with_the_field() {
        for (yaml, field) in [
            ("connections: 18446744073709551615\n", "connections"),
            ("rate: 1e300\n", "rate"),
            ("rate: 0.0000001\n", "rate"),
            ("size: 999999999999\n", "size"),
            ("max_disconnect: 3000h\n", "max_disconnect"),
            ("visible_within: 500ns\n", "visible_within"),
            ("visible_within: 1000d\n", "visible_within"),
            ("connections: 3\nmachines: 5\n", "machines"),
        ] {
            let e = Profile::from_yaml(yaml, "p.yaml").unwrap_err().to_string();
            assert!(e.starts_with("p.yaml"), "{yaml}: {e}");
            assert!(e.contains(field), "{yaml}: {e}");
        }
        let top = "connections: 100000000\nrate: 1000000\nsize: 67108864\nmax_disconnect: 1day\n";
        assert!(
            Profile::from_yaml(top, "p.yaml").is_ok(),
            "the bounds themselves are allowed"
        );
    }

    #[test]
    fn bad_values_are_rejected_with_the_field() {
        let e = Profile::from_yaml("loss: shared\nconnections: 0\n", "p.yaml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "p.yaml:2: connections: must be between 1 and 100000000, got 0"
        );
        let e = Profile::from_yaml("connections: -5\n", "p.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("p.yaml:1"), "{e}");
        let e = Profile::from_yaml("loss: shared\nvisible_within: soon\n", "p.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("p.yaml:2: visible_within: invalid duration `soon`"),
            "{e}"
        );
        let e = Profile::from_yaml("loss: maybe\n", "p.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("maybe"), "{e}");
    }
}
