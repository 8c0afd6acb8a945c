//! `rtcheck lint`: find the realtime mistakes (WebSocket, SSE, polling) in proxy configs
//! before they deploy. One parser per config kind turns a file into the same tree of
//! directives (`Node`, each with its file:line); the rules (`rules::RULES`, one table with
//! stable ids) read that tree and the workload and produce `findings::Finding`s.
//!
//! Parsers are written here, not taken from a crate: `nginx-config` (the only nginx crate
//! with an AST) parses into a typed AST of a fixed directive subset, so any module directive
//! it does not know is a parse error, and it has had no release since 0.13.2; the nginx,
//! HAProxy and Caddyfile grammars needed here (blocks, directives, quoting) are small.
//! caddy-json, ingress and traefik go through serde_json / serde_yaml.
pub mod caddy_json;
pub mod caddyfile;
pub mod check_caddy;
pub mod check_haproxy;
pub mod check_ingress;
pub mod check_istio;
pub mod check_nginx;
pub mod check_traefik;
pub mod classify;
pub mod haproxy;
pub mod host;
pub mod ingress;
pub mod istio;
pub mod known;
pub mod load;
pub mod nginx;
pub mod path;
pub mod rules;
pub mod time;
pub mod traefik;
pub mod version;

use crate::findings::Finding;
use rtcheck_wire::transport::Transport;
use std::sync::Arc;
use std::time::Duration;

/// Deepest block nesting any parser accepts (bounded memory and recursion on any input).
pub const MAX_DEPTH: usize = 64;

/// The config kinds lint reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Nginx,
    Haproxy,
    Caddy,
    CaddyJson,
    Ingress,
    /// Traefik's dynamic configuration (file provider, YAML).
    Traefik,
    /// Istio DestinationRule / EnvoyFilter YAML (the sidecar's idle timeouts).
    Istio,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Nginx => "nginx",
            Kind::Haproxy => "haproxy",
            Kind::Caddy => "caddy",
            Kind::CaddyJson => "caddy-json",
            Kind::Ingress => "ingress",
            Kind::Traefik => "traefik",
            Kind::Istio => "istio",
        }
    }
}

/// One directive (or block) of any config kind, where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    pub args: Vec<String>,
    pub file: Arc<str>,
    /// 1-based line of the directive's first word.
    pub line: usize,
    /// Some for a block (`location /ws { ... }`, a HAProxy section), None for a directive.
    pub block: Option<Vec<Node>>,
}

impl Node {
    pub fn children(&self) -> &[Node] {
        self.block.as_deref().unwrap_or(&[])
    }

    /// The block's name as findings show it: "location /ws", "backend be_ws".
    pub fn label(&self) -> String {
        if self.args.is_empty() {
            self.name.clone()
        } else {
            format!("{} {}", self.name, self.args.join(" "))
        }
    }

    pub fn arg(&self, i: usize) -> Option<&str> {
        self.args.get(i).map(String::as_str)
    }
}

/// A parse failure: exit 2 with file:line, never a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub msg: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = rtcheck_base::escape::plain(&self.file);
        write!(f, "{file}:{}: {}", self.line, self.msg)
    }
}

impl std::error::Error for ParseError {}

/// A parse error; what the message quotes from the file is escaped and cut short (an
/// unterminated 8 MiB token is never echoed whole).
pub fn perr(file: &str, line: usize, msg: impl Into<String>) -> ParseError {
    ParseError {
        file: file.to_string(),
        line,
        msg: rtcheck_base::escape::bound_quotes(&msg.into()),
    }
}

/// YAML nested past `rtcheck_base::input::MAX_DEPTH`, refused before the parser runs
/// (its time grows with the square of the nesting: 3 MB of `[[[` ran for minutes).
pub fn yaml_depth(file: &str, text: &str) -> Result<(), ParseError> {
    rtcheck_base::input::check_depth(text).map_err(|e| {
        let line = e
            .strip_prefix("line ")
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        let msg = e.split_once(": ").map_or(e.as_str(), |(_, m)| m);
        perr(file, line, msg)
    })
}

/// Does `text` look like a `kind` config at all? A parse error on a file that does not
/// (a secret file named `haproxy.cfg`, an include of /etc/shadow) is reported without
/// quoting any of it.
pub fn looks_like(kind: Kind, text: &str) -> bool {
    let lines = || text.lines().map(str::trim).filter(|l| !l.starts_with('#'));
    match kind {
        Kind::Nginx => lines().any(|l| l.ends_with([';', '{', '}'])),
        Kind::Haproxy => lines().any(|l| {
            let w = l.split_whitespace().next().unwrap_or("");
            [
                "global",
                "defaults",
                "frontend",
                "backend",
                "listen",
                "resolvers",
                "peers",
                "userlist",
                "cache",
                "program",
                "http-errors",
                "ring",
                "mailers",
            ]
            .contains(&w)
        }),
        Kind::Caddy => lines().any(|l| l.ends_with('{') || l.starts_with("reverse_proxy")),
        Kind::CaddyJson => text.trim_start().starts_with('{'),
        Kind::Ingress | Kind::Traefik | Kind::Istio => {
            rtcheck_base::input::looks_like_mapping(text)
        }
    }
}

/// [`parse`], but a failure on text that does not look like `kind` quotes none of it.
pub fn parse_checked(kind: Kind, file: &str, text: &str) -> Result<Vec<Node>, ParseError> {
    parse(kind, file, text).map_err(|e| {
        if looks_like(kind, text) {
            return e;
        }
        perr(
            file,
            1,
            format!(
                "does not look like {} {} config (content not shown); pass the right file or --kind",
                if matches!(kind, Kind::Nginx | Kind::Ingress) { "an" } else { "a" },
                kind.as_str()
            ),
        )
    })
}

/// A parsed config: its kind, the file it came from and its top-level nodes.
#[derive(Debug, Clone)]
pub struct Config {
    pub kind: Kind,
    pub file: String,
    pub nodes: Vec<Node>,
}

/// Parse one file's text as `kind` (includes are resolved by `load`).
pub fn parse(kind: Kind, file: &str, text: &str) -> Result<Vec<Node>, ParseError> {
    match kind {
        Kind::Nginx => nginx::parse(file, text),
        Kind::Haproxy => haproxy::parse(file, text),
        Kind::Caddy => caddyfile::parse(file, text),
        Kind::CaddyJson => caddy_json::parse(file, text),
        Kind::Ingress => ingress::parse(file, text),
        Kind::Traefik => traefik::parse(file, text),
        Kind::Istio => istio::parse(file, text),
    }
}

/// What a block carries, as far as the realtime rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Websocket,
    Sse,
    Polling,
}

impl Stream {
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Websocket => "WebSocket",
            Stream::Sse => "SSE",
            Stream::Polling => "polling",
        }
    }
}

/// What the config must carry: from the profile or the workload flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Connections one proxy instance holds (the profile's per machine).
    pub connections: u64,
    /// The server's heartbeat (WebSocket ping or SSE comment); None when not declared.
    pub ping: Option<Duration>,
    /// The transports declared (profile or --transport, several allowed): the catch-all
    /// route carries those no route carries by evidence (`classify`).
    pub transports: Vec<Transport>,
    /// Where they were declared ("--transport", "profile p.yaml"); None: --transport.
    pub declared_by: Option<String>,
    /// `--ws-location` / `--sse-location` patterns (substrings of a block's name or path).
    pub ws_patterns: Vec<String>,
    pub sse_patterns: Vec<String>,
    /// The application sends `X-Accel-Buffering: no` on its event streams.
    pub x_accel_buffering: bool,
    /// The declared hops (`--path`, the profile's `path:`): the timeouts carry the
    /// heartbeat their chain needs (`path`).
    pub path: Option<path::DeclaredPath>,
    /// The proxies' versions (`--proxy-version`, or read from the binary on PATH): the
    /// defaults that changed between releases follow them.
    pub versions: Vec<version::ProxyVersion>,
    /// `--app-protocol`: the library every stream route speaks (its documented
    /// heartbeat is what the timeouts must hold); None: the one a route's path names.
    pub app: Option<rtcheck_wire::appproto::AppProtocol>,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            connections: crate::profile::DEFAULT_CONNECTIONS,
            ping: None,
            transports: vec![],
            declared_by: None,
            ws_patterns: vec![],
            sse_patterns: vec![],
            x_accel_buffering: false,
            path: None,
            versions: vec![],
            app: None,
        }
    }
}

/// Every rule over every config: the findings, one Pass per rule that applied and found
/// nothing, and a Skip when no block could be told to carry a stream.
pub fn lint(configs: &[Config], w: &Workload, skip: &[String]) -> Vec<Finding> {
    lint_routes(configs, w, skip).findings
}

/// What lint found: the findings and every proxied route with what it carries and why.
#[derive(Debug, Default)]
pub struct Linted {
    pub findings: Vec<Finding>,
    pub routes: Vec<classify::RouteReport>,
}

/// What each config kind's check writes into: findings, the rules that applied, routes.
#[derive(Debug, Default)]
pub struct Sink {
    pub out: Vec<Finding>,
    pub applied: rules::Applied,
    pub routes: Vec<classify::RouteReport>,
}

pub fn lint_routes(configs: &[Config], w: &Workload, skip: &[String]) -> Linted {
    let mut s = Sink::default();
    let ingress = check_ingress::Controller::of(configs);
    for c in configs {
        match c.kind {
            Kind::Nginx => check_nginx::check(c, w, &mut s),
            Kind::Haproxy => check_haproxy::check(c, w, &mut s),
            Kind::Caddy | Kind::CaddyJson => check_caddy::check(c, w, &mut s),
            Kind::Ingress => check_ingress::check(c, w, ingress, &mut s),
            Kind::Traefik => check_traefik::check(c, w, &mut s),
            Kind::Istio => check_istio::check(c, w, &mut s),
        }
    }
    Linted {
        findings: rules::finish(s.out, s.applied, skip),
        routes: s.routes,
    }
}
