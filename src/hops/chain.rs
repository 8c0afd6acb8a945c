//! The timeout chain of a path (pure): for each transport, the tightest idle limit and what
//! resets it, the tightest lifetime cap, the first-byte limit, who buffers, who compresses,
//! what must be configured; from it, the heartbeat that keeps every hop open and whether a
//! reconnect is mandatory.
//!
//! The heartbeat rule (stated in every report): a server heartbeat (WebSocket ping or SSE
//! comment line) at most half the tightest idle limit that server data resets, so one late
//! or lost heartbeat still lands inside the limit; and, as the seed's `ping-timing` says,
//! no slower than the 20-30 s production ping even when every hop allows more.
use super::{BufferMode, CompressionDefault, Hop, LimitKind, Reset, Support, Value};
use rtcheck_wire::transport::Transport;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// A declared value replacing a hop's documented default (`aws-alb: {idle: 300s}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopOverride {
    #[serde(
        default,
        with = "rtcheck_base::units::serde_opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub idle: Option<Duration>,
    #[serde(
        default,
        with = "rtcheck_base::units::serde_opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub lifetime: Option<Duration>,
    #[serde(
        default,
        with = "rtcheck_base::units::serde_opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub first_byte: Option<Duration>,
}

impl HopOverride {
    pub fn get(&self, kind: LimitKind) -> Option<Duration> {
        match kind {
            LimitKind::Idle => self.idle,
            LimitKind::Lifetime => self.lifetime,
            LimitKind::FirstByte => self.first_byte,
        }
    }
}

pub type Overrides = BTreeMap<String, HopOverride>;

/// One hop of a profile's `path:`: an id, or an id with declared values
/// (`- aws-alb: {idle: 300s}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry {
    pub id: String,
    pub set: HopOverride,
}

impl PathEntry {
    /// A hop with its documented values.
    pub fn new(id: &str) -> PathEntry {
        PathEntry {
            id: id.to_string(),
            set: HopOverride::default(),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum RawEntry {
    Id(String),
    WithValues(BTreeMap<String, HopOverride>),
}

impl Serialize for PathEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.set == HopOverride::default() {
            RawEntry::Id(self.id.clone()).serialize(s)
        } else {
            RawEntry::WithValues([(self.id.clone(), self.set.clone())].into()).serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for PathEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match RawEntry::deserialize(d).map_err(|_| {
            D::Error::custom(
                "a path entry is a hop id or `ID: {idle: DUR, lifetime: DUR, first_byte: DUR}`",
            )
        })? {
            RawEntry::Id(id) => Ok(PathEntry {
                id,
                set: HopOverride::default(),
            }),
            RawEntry::WithValues(m) if m.len() == 1 => {
                let (id, set) = m.into_iter().next().expect("one entry");
                Ok(PathEntry { id, set })
            }
            RawEntry::WithValues(_) => Err(D::Error::custom(
                "one hop per path entry (`- aws-alb: {idle: 300s}`)",
            )),
        }
    }
}

/// A profile path split into ids and overrides; `direct` or `none` alone is the empty path.
pub fn split_path(entries: &[PathEntry]) -> (Vec<String>, Overrides) {
    let mut ids = Vec::new();
    let mut over = Overrides::new();
    for e in entries {
        if entries.len() == 1 && (e.id == "direct" || e.id == "none") {
            break;
        }
        ids.push(e.id.clone());
        if e.set != HopOverride::default() {
            over.insert(e.id.clone(), e.set.clone());
        }
    }
    (ids, over)
}

/// Parse one `--override HOP.FIELD=DURATION` (`aws-alb.idle=300s`) into `over`.
pub fn parse_override(s: &str, over: &mut Overrides) -> Result<(), String> {
    let bad = || {
        format!("`{s}`: expected HOP.FIELD=DURATION (e.g. aws-alb.idle=300s; fields idle, lifetime, first_byte)")
    };
    let (key, value) = s.split_once('=').ok_or_else(bad)?;
    let (hop, field) = key.trim().split_once('.').ok_or_else(bad)?;
    let hop = server_side(hop)?.map_or(hop, |(_, id)| id);
    super::check_id(hop)?;
    let d = rtcheck_base::units::parse_duration(value)?;
    let o = over.entry(hop.to_string()).or_default();
    match field {
        "idle" => o.idle = Some(d),
        "lifetime" => o.lifetime = Some(d),
        "first_byte" | "first-byte" => o.first_byte = Some(d),
        _ => return Err(bad()),
    }
    Ok(())
}

pub const TRANSPORTS: [Transport; 3] = [Transport::Polling, Transport::Sse, Transport::Websocket];

/// The hop (and its setting) that sets one bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    pub secs: u64,
    pub hop: String,
    pub setting: String,
    /// From an override, not the documented default.
    pub declared: bool,
    /// The product lets it be changed (`setting` says how).
    pub adjustable: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HopSetting {
    pub hop: String,
    pub what: String,
    pub setting: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exclusion {
    pub transport: String,
    pub hop: String,
    pub why: String,
}

/// The chain for one transport.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransportChain {
    pub transport: String,
    pub excluded: bool,
    pub tightest_idle_s: Option<u64>,
    pub reset_by: Vec<String>,
    pub idle: Option<Bound>,
    pub lifetime_cap_s: Option<u64>,
    pub lifetime: Option<Bound>,
    pub first_byte_s: Option<u64>,
    pub first_byte: Option<Bound>,
    pub heartbeat_max_s: Option<u64>,
    pub reconnect_required: bool,
    /// Hops that buffer or must be configured not to (SSE).
    pub buffering: Vec<HopSetting>,
    /// Hops that compress by default.
    pub compressing: Vec<HopSetting>,
    /// What a hop must be configured with for this transport.
    pub required: Vec<HopSetting>,
    /// Limits the documentation leaves unknown: declare them (overrides) or measure (probe).
    pub unknown: Vec<String>,
}

/// The whole chain; the top-level numbers hold for every transport the path allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chain {
    pub path: Vec<String>,
    pub tightest_idle_s: Option<u64>,
    pub reset_by: Vec<String>,
    pub lifetime_cap_s: Option<u64>,
    pub heartbeat_max_s: Option<u64>,
    /// The heartbeat to use: the maximum, and no slower than the seed's production ping.
    pub heartbeat_s: u64,
    pub heartbeat_rule: String,
    pub reconnect_required: bool,
    pub excluded_transports: Vec<String>,
    pub exclusions: Vec<Exclusion>,
    /// Whether browsers reach the path over HTTP/2 (SSE's 6-connection limit per origin).
    pub sse_http2: String,
    /// What config reloads and deploys do to open connections, per hop.
    pub reloads: Vec<HopSetting>,
    pub warnings: Vec<String>,
    pub transports: Vec<TransportChain>,
    /// The hops on the server's own links to Redis or a backend (`redis:ID`, `backend:ID`
    /// in the path); not part of the users' chain above.
    #[serde(default)]
    pub backend_links: Vec<BackendLink>,
    /// `--app-protocol`: the library's documented heartbeat on this path (issue 42).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<LibraryFit>,
}

/// The seed's production ping range (`ping-timing`), in seconds.
fn production_ping() -> (u64, u64) {
    (
        crate::evidence::num("ping-timing", "production_min") as u64,
        crate::evidence::num("ping-timing", "production_max") as u64,
    )
}

/// The chain of `path` (outermost first, ids of the catalogue) under `overrides`. Errors
/// name the hop and the field (an unknown id, an override outside the documented range).
pub fn compute(path: &[String], overrides: &Overrides) -> Result<Chain, String> {
    let (users, server) = split_sides(path)?;
    let overrides = &bare_overrides(overrides);
    let hops: Vec<&Hop> = users
        .iter()
        .map(|id| super::check_id(id))
        .collect::<Result<_, _>>()?;
    let all: Vec<&Hop> = hops
        .iter()
        .copied()
        .chain(server.iter().map(|(_, h)| *h))
        .collect();
    check_overrides(&all, overrides)?;
    let transports: Vec<TransportChain> = TRANSPORTS
        .iter()
        .map(|t| for_transport(&hops, overrides, *t))
        .collect();
    let mut c = summarise(&users, &hops, transports);
    c.backend_links = backend_links(&server, overrides);
    for l in &c.backend_links {
        if let Some(w) = l.warning() {
            c.warnings.push(w);
        }
    }
    Ok(c)
}

/// The server's own links (to Redis, to a database or another backend) a path entry can
/// name with a prefix: `redis:aws-nat-gateway`, `backend:gcp-cloud-nat`.
pub const SIDES: [&str; 2] = ["redis", "backend"];

/// `Some((side, id))` for an entry on the server's side of a link to Redis or a backend;
/// an unknown prefix is an error naming the known ones.
pub fn server_side(entry: &str) -> Result<Option<(&str, &str)>, String> {
    let Some((side, id)) = entry.split_once(':') else {
        return Ok(None);
    };
    if !SIDES.contains(&side.trim()) {
        return Err(format!(
            "`{entry}`: unknown link `{side}:` (server-side hops are redis:ID or backend:ID)"
        ));
    }
    Ok(Some((side.trim(), id.trim())))
}

/// The users' hops (ids) and the server-side ones (link, hop), checked against the catalogue.
#[allow(clippy::type_complexity)]
fn split_sides(path: &[String]) -> Result<(Vec<String>, Vec<(String, &'static Hop)>), String> {
    let mut users = Vec::new();
    let mut server = Vec::new();
    for e in path {
        match server_side(e)? {
            Some((side, id)) => server.push((side.to_string(), super::check_id(id)?)),
            None => users.push(e.clone()),
        }
    }
    Ok((users, server))
}

/// Overrides keyed by the bare hop id (a profile may write `redis:aws-nat-gateway: {...}`).
fn bare_overrides(over: &Overrides) -> Overrides {
    over.iter()
        .map(|(k, v)| {
            let id = match server_side(k) {
                Ok(Some((_, id))) => id.to_string(),
                _ => k.clone(),
            };
            (id, v.clone())
        })
        .collect()
}

/// One link of the server to Redis or another backend, with the hops on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendLink {
    /// `redis` or `backend`.
    pub side: String,
    pub hops: Vec<String>,
    pub tightest_idle_s: Option<u64>,
    pub idle: Option<Bound>,
    pub reset_by: Vec<String>,
    /// The slowest keepalive (TCP keepalive or the client's PING) that keeps the link open:
    /// half the tightest idle limit, when TCP keepalive resets it.
    pub keepalive_max_s: Option<u64>,
    /// Limits the documentation leaves unknown on this link.
    pub unknown: Vec<String>,
}

impl BackendLink {
    /// What the link needs, in one sentence (None when no hop documents an idle limit).
    pub fn warning(&self) -> Option<String> {
        let b = self.idle.as_ref()?;
        let keep = match self.keepalive_max_s {
            Some(k) => format!("TCP keepalive (or a client PING) at most every {k} s on it"),
            None => "traffic from the application (a PING) on it: TCP keepalive does not reset it"
                .to_string(),
        };
        Some(format!(
            "the server's {} link passes {}, which forgets a flow idle for {}: \
             a {} subscriber or pooled connection is cut silently; {keep}",
            self.side,
            b.hop,
            show_secs(b.secs),
            self.side
        ))
    }
}

/// The server-side links in path order, one per side named.
fn backend_links(server: &[(String, &'static Hop)], overrides: &Overrides) -> Vec<BackendLink> {
    let mut sides: Vec<&str> = Vec::new();
    for (s, _) in server {
        if !sides.contains(&s.as_str()) {
            sides.push(s);
        }
    }
    sides
        .into_iter()
        .map(|side| {
            let hops: Vec<&Hop> = server
                .iter()
                .filter(|(s, _)| s == side)
                .map(|(_, h)| *h)
                .collect();
            let mut unknown = Vec::new();
            // A Redis or database link is one long-lived TCP connection in both directions:
            // the limits hops document for WebSockets are the ones that apply.
            let idle = tightest(
                &hops,
                overrides,
                LimitKind::Idle,
                Transport::Websocket,
                &mut unknown,
            );
            let keepalive_max_s = idle
                .as_ref()
                .filter(|(_, r)| r.contains(&Reset::TcpKeepalive))
                .map(|(b, _)| b.secs / 2);
            BackendLink {
                side: side.to_string(),
                hops: hops.iter().map(|h| h.id.clone()).collect(),
                tightest_idle_s: idle.as_ref().map(|(b, _)| b.secs),
                reset_by: idle
                    .as_ref()
                    .map(|(_, r)| r.iter().map(|r| r.as_str().to_string()).collect())
                    .unwrap_or_default(),
                idle: idle.map(|(b, _)| b),
                keepalive_max_s,
                unknown,
            }
        })
        .collect()
}

fn check_overrides(hops: &[&Hop], overrides: &Overrides) -> Result<(), String> {
    for (id, o) in overrides {
        let hop = hops
            .iter()
            .find(|h| &h.id == id)
            .ok_or_else(|| format!("overrides: `{id}` is not on the path"))?;
        for (kind, name) in [
            (LimitKind::Idle, "idle"),
            (LimitKind::Lifetime, "lifetime"),
            (LimitKind::FirstByte, "first_byte"),
        ] {
            let Some(v) = o.get(kind) else { continue };
            let limits: Vec<_> = hop.limits.iter().filter(|l| l.kind == kind).collect();
            if limits.is_empty() || limits.iter().all(|l| !l.adjustable) {
                return Err(format!(
                    "overrides: {id}: {name} is not adjustable on {} (documented: {})",
                    hop.name,
                    limits
                        .first()
                        .map(|l| l.default.to_string())
                        .unwrap_or_else(|| "no such limit".into())
                ));
            }
            for l in &limits {
                let lo = l.min.and_then(|m| m.secs()).unwrap_or(0);
                let hi = l.max.and_then(|m| m.secs()).unwrap_or(u64::MAX);
                if !(lo..=hi).contains(&v.as_secs()) {
                    return Err(rtcheck_base::units::out_of_bounds(
                        &format!("overrides: {id}: {name}"),
                        v.as_secs(),
                        lo,
                        hi,
                        "s",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The tightest limit of `kind` for `t`; limits the documentation leaves unknown are listed.
fn tightest(
    hops: &[&Hop],
    overrides: &Overrides,
    kind: LimitKind,
    t: Transport,
    unknown: &mut Vec<String>,
) -> Option<(Bound, Vec<Reset>)> {
    let mut best: Option<(Bound, Vec<Reset>)> = None;
    for h in hops {
        let declared = overrides.get(&h.id).and_then(|o| o.get(kind));
        for l in h.limits(kind, t) {
            let secs = match (declared, l.default) {
                (Some(d), _) => d.as_secs(),
                (None, Value::Secs(d)) => d.as_secs(),
                (None, Value::None) => continue,
                (None, Value::Unknown) => {
                    unknown.push(format!("{}: {} ({})", h.id, kind.name(), l.setting));
                    continue;
                }
            };
            if best.as_ref().is_none_or(|(b, _)| secs < b.secs) {
                let bound = Bound {
                    secs,
                    hop: h.id.clone(),
                    setting: l.setting.clone(),
                    declared: declared.is_some(),
                    adjustable: l.adjustable,
                };
                best = Some((bound, l.reset_by.clone()));
            }
        }
    }
    best
}

fn for_transport(hops: &[&Hop], overrides: &Overrides, t: Transport) -> TransportChain {
    let mut unknown = Vec::new();
    let idle = tightest(hops, overrides, LimitKind::Idle, t, &mut unknown);
    let lifetime = tightest(hops, overrides, LimitKind::Lifetime, t, &mut unknown).map(|b| b.0);
    let first_byte = tightest(hops, overrides, LimitKind::FirstByte, t, &mut unknown).map(|b| b.0);
    let reset_by: Vec<String> = idle
        .as_ref()
        .map(|(_, r)| r.iter().map(|r| r.as_str().to_string()).collect())
        .unwrap_or_default();
    // A server heartbeat only keeps open what server data resets.
    let heartbeat_max_s = idle
        .as_ref()
        .filter(|(_, r)| r.contains(&Reset::ServerData))
        .map(|(b, _)| b.secs / 2);
    let mut tc = TransportChain {
        transport: t.name().to_string(),
        excluded: false,
        tightest_idle_s: idle.as_ref().map(|(b, _)| b.secs),
        reset_by,
        idle: idle.map(|(b, _)| b),
        lifetime_cap_s: lifetime.as_ref().map(|b| b.secs),
        reconnect_required: lifetime.is_some(),
        lifetime,
        first_byte_s: first_byte.as_ref().map(|b| b.secs),
        first_byte,
        heartbeat_max_s,
        buffering: Vec::new(),
        compressing: Vec::new(),
        required: Vec::new(),
        unknown,
    };
    for h in hops {
        per_hop(h, t, &mut tc);
    }
    tc
}

/// Support, buffering, compression and required settings of one hop for `t`.
fn per_hop(h: &Hop, t: Transport, tc: &mut TransportChain) {
    let hs = |what: &str, setting: &str| HopSetting {
        hop: h.id.clone(),
        what: what.to_string(),
        setting: setting.to_string(),
    };
    match h.supports(t) {
        Support::No => tc.excluded = true,
        Support::NeedsConfig => tc.required.push(hs(
            &format!("{} must be enabled", t.name()),
            h.websocket_setting.as_deref().unwrap_or("-"),
        )),
        Support::Unknown => tc.unknown.push(format!("{}: {} support", h.id, t.name())),
        _ => {}
    }
    if t == Transport::Sse {
        let b = &h.buffering;
        match (b.mode, b.sse_flushed) {
            (BufferMode::Always, _) | (_, Support::No) => tc.excluded = true,
            (BufferMode::ByDefault, _) | (_, Support::WithSetting) => {
                tc.buffering
                    .push(hs("buffers responses by default", &b.setting));
                tc.required
                    .push(hs("turn response buffering off", &b.setting));
            }
            (BufferMode::Unknown, _) | (_, Support::Unknown) => tc
                .unknown
                .push(format!("{}: whether an event stream is flushed", h.id)),
            _ => {}
        }
    }
    if t != Transport::Polling && h.compression.default == CompressionDefault::On {
        tc.compressing
            .push(hs("compresses by default", &h.compression.setting));
    }
}

/// Why `t` is excluded at `h`, if it is.
fn exclusion(h: &Hop, t: Transport) -> Option<String> {
    if h.supports(t) == Support::No {
        return Some(format!("{} does not support {}", h.name, t.name()));
    }
    let b = &h.buffering;
    if t == Transport::Sse && (b.mode == BufferMode::Always || b.sse_flushed == Support::No) {
        return Some(format!("{} does not flush an event stream", h.name));
    }
    None
}

fn summarise(path: &[String], hops: &[&Hop], transports: Vec<TransportChain>) -> Chain {
    let exclusions: Vec<Exclusion> = TRANSPORTS
        .iter()
        .flat_map(|t| {
            hops.iter().filter_map(move |h| {
                exclusion(h, *t).map(|why| Exclusion {
                    transport: t.name().to_string(),
                    hop: h.id.clone(),
                    why,
                })
            })
        })
        .collect();
    let allowed: Vec<&TransportChain> = transports.iter().filter(|t| !t.excluded).collect();
    let idle = allowed
        .iter()
        .filter(|t| t.tightest_idle_s.is_some())
        .min_by_key(|t| t.tightest_idle_s);
    let heartbeat_max_s = allowed.iter().filter_map(|t| t.heartbeat_max_s).min();
    let (pmin, pmax) = production_ping();
    let heartbeat_s = heartbeat_max_s.map_or(pmax, |m| m.min(pmax));
    let mut warnings = Vec::new();
    if let Some(m) = heartbeat_max_s.filter(|m| *m < pmin) {
        warnings.push(format!(
            "the path forces a heartbeat of {m} s or less, faster than the {pmin}-{pmax} s \
             production ping (ping-timing): raise the tightest idle timeout if you can"
        ));
    }
    if heartbeat_max_s == Some(0) {
        warnings.push("an idle limit under 2 s leaves no heartbeat that survives it".into());
    }
    if let Some(t) = idle.filter(|t| !t.reset_by.iter().any(|r| r == "server-data")) {
        warnings.push(format!(
            "the tightest idle limit ({}) is not reset by server data: a server heartbeat does not keep it open",
            t.idle.as_ref().map(|b| b.hop.as_str()).unwrap_or("-")
        ));
    }
    let mut excluded: Vec<String> = exclusions.iter().map(|e| e.transport.clone()).collect();
    excluded.dedup();
    let rule = format!(
        "heartbeat at most half the tightest idle limit that server data resets, \
         and no slower than the {pmin}-{pmax} s production ping (ping-timing)"
    );
    Chain {
        path: path.to_vec(),
        tightest_idle_s: idle.and_then(|t| t.tightest_idle_s),
        reset_by: idle.map(|t| t.reset_by.clone()).unwrap_or_default(),
        lifetime_cap_s: allowed.iter().filter_map(|t| t.lifetime_cap_s).min(),
        heartbeat_max_s,
        heartbeat_s,
        heartbeat_rule: rule,
        reconnect_required: allowed.iter().any(|t| t.reconnect_required),
        excluded_transports: excluded,
        exclusions,
        sse_http2: sse_http2(hops),
        reloads: hops
            .iter()
            .map(|h| HopSetting {
                hop: h.id.clone(),
                what: "on reload or deploy".into(),
                setting: h.reload.clone(),
            })
            .collect(),
        warnings,
        transports,
        backend_links: Vec::new(),
        library: None,
    }
}

/// The HTTP version browsers get decides SSE's connection limit: the outermost hop that
/// terminates HTTP (layer 7) speaks to them.
fn sse_http2(hops: &[&Hop]) -> String {
    let Some(h) = hops.iter().find(|h| h.layer == "l7") else {
        return "the server's own HTTP/2 decides (no hop terminates HTTP): over HTTP/1.1 \
                browsers open at most 6 SSE connections per origin"
            .into();
    };
    let setting = h.http2_setting.as_deref().unwrap_or("-");
    match h.http2_client {
        Support::Yes => format!("{} speaks HTTP/2 to browsers: SSE streams share one connection", h.id),
        Support::No => format!(
            "{} speaks HTTP/1.1 to browsers: at most 6 SSE connections per origin (tabs)",
            h.id
        ),
        _ => format!(
            "HTTP/2 at {} needs `{setting}`; without it browsers open at most 6 SSE connections per origin",
            h.id
        ),
    }
}

impl Chain {
    /// The verdict: the heartbeat that survives the path, the lifetime cap, the exclusions.
    pub fn verdict(&self) -> String {
        let c = self;
        let path = if c.path.is_empty() {
            "the direct path".to_string()
        } else {
            c.path.join(" -> ")
        };
        let mut v = match (c.heartbeat_max_s, c.tightest_idle_s) {
            (Some(m), Some(idle)) => format!(
                "A server heartbeat every {} s keeps {path} open (at most {m} s: the tightest idle limit is {idle} s, reset by {}).",
                c.heartbeat_s,
                c.reset_by.join(", ")
            ),
            _ => format!(
                "No hop of {path} documents an idle limit; heartbeat every {} s anyway (the production ping).",
                c.heartbeat_s
            ),
        };
        match c.lifetime_cap_s {
            Some(l) => v.push_str(&format!(
                " Lifetime cap {}: every connection ends by then, so reconnect and resume are mandatory.",
                show_secs(l)
            )),
            None => v.push_str(" No lifetime cap: the path forces no reconnect."),
        }
        for e in &c.exclusions {
            v.push_str(&format!(" No {}: {}.", e.transport, e.why));
        }
        for l in &c.backend_links {
            if let (Some(b), Some(k)) = (&l.idle, l.keepalive_max_s) {
                v.push_str(&format!(
                    " Server to {}: {} cuts an idle flow at {}, keepalive every {k} s or less.",
                    l.side,
                    b.hop,
                    show_secs(b.secs)
                ));
            } else if let Some(b) = &l.idle {
                v.push_str(&format!(
                    " Server to {}: {} cuts an idle flow at {}, keepalive does not reset it.",
                    l.side,
                    b.hop,
                    show_secs(b.secs)
                ));
            }
        }
        v
    }

    pub fn transport(&self, t: Transport) -> &TransportChain {
        self.transports
            .iter()
            .find(|c| c.transport == t.name())
            .expect("every transport is computed")
    }

    pub fn excludes(&self, t: Transport) -> bool {
        self.excluded_transports.iter().any(|e| e == t.name())
    }
}

/// Seconds in prose: `60 s`, and `14400 s (4h)` from ten minutes up.
pub fn show_secs(n: u64) -> String {
    if n < 600 {
        format!("{n} s")
    } else {
        format!(
            "{n} s ({})",
            rtcheck_base::units::fmt_duration(Duration::from_secs(n))
        )
    }
}

/// Parse a `--path` value: comma-separated ids, outermost first; `direct` or `none` alone
/// is the empty path.
pub fn parse_path(s: &str) -> Result<Vec<String>, String> {
    let ids: Vec<String> = s
        .split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    if ids.len() == 1 && (ids[0] == "direct" || ids[0] == "none") {
        return Ok(Vec::new());
    }
    for id in &ids {
        match server_side(id)? {
            Some((_, bare)) => super::check_id(bare)?,
            None => super::check_id(id)?,
        };
    }
    Ok(ids)
}

/// What `hops::library` (`--app-protocol`) found: kept here, beside the chain that carries
/// it, so the chain needs nothing from the module that reads it.
/// How the library's heartbeat fares on the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fit {
    /// At most half the tightest idle limit (or no hop documents one): it holds.
    Holds,
    /// Under the tightest idle limit but above half of it: one late heartbeat is cut.
    Late,
    /// At or above the tightest idle limit (or a direction that limit ignores): every
    /// quiet connection is cut before the library's heartbeat.
    Cut,
}

/// The library's heartbeat on the path: the verdict and the sentence saying it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibraryFit {
    pub protocol: String,
    pub interval_s: f64,
    pub fit: Fit,
    pub sentence: String,
    pub source: String,
    pub read: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> Vec<String> {
        parse_path(s).unwrap()
    }

    fn chain(s: &str) -> Chain {
        compute(&path(s), &Overrides::new()).unwrap()
    }

    #[test]
    fn cloudflare_alb_nginx_is_cut_by_the_alb_and_needs_a_30s_heartbeat() {
        let c = chain("cloudflare,aws-alb,nginx");
        assert_eq!(c.tightest_idle_s, Some(60));
        let ws = c.transport(Transport::Websocket);
        // ALB and nginx both at 60 s: the first met (outermost) names the limit.
        assert_eq!(ws.idle.as_ref().unwrap().hop, "aws-alb");
        assert_eq!(c.heartbeat_max_s, Some(30));
        assert_eq!(c.heartbeat_s, 30);
        assert_eq!(c.lifetime_cap_s, None);
        assert!(!c.reconnect_required);
        assert!(c.excluded_transports.is_empty());
        // nginx buffers SSE unless told not to, and needs the Upgrade headers for WebSocket.
        let sse = c.transport(Transport::Sse);
        assert!(sse.required.iter().any(|r| r.hop == "nginx"));
        assert!(ws.required.iter().any(|r| r.hop == "nginx"));
        assert!(c.sse_http2.starts_with("cloudflare speaks HTTP/2"));
    }

    #[test]
    fn an_override_moves_the_tightest_hop() {
        let mut o = Overrides::new();
        o.insert(
            "aws-alb".into(),
            HopOverride {
                idle: Some(Duration::from_secs(300)),
                ..Default::default()
            },
        );
        o.insert(
            "nginx".into(),
            HopOverride {
                idle: Some(Duration::from_secs(3600)),
                ..Default::default()
            },
        );
        let c = compute(&path("cloudflare,aws-alb,nginx"), &o).unwrap();
        assert_eq!(c.tightest_idle_s, Some(100), "Cloudflare's 100 s now binds");
        assert_eq!(c.heartbeat_max_s, Some(50));
        assert_eq!(c.heartbeat_s, 30, "never slower than the production ping");
        let e = compute(
            &path("aws-alb"),
            &[(
                "aws-alb".to_string(),
                HopOverride {
                    idle: Some(Duration::from_secs(5000)),
                    ..Default::default()
                },
            )]
            .into(),
        )
        .unwrap_err();
        assert!(e.contains("aws-alb: idle") && e.contains("4000"), "{e}");
    }

    #[test]
    fn heroku_cuts_at_55s_and_wants_the_first_byte_within_30s() {
        let c = chain("heroku");
        assert_eq!(c.tightest_idle_s, Some(55));
        assert_eq!(c.heartbeat_max_s, Some(27));
        assert_eq!(c.heartbeat_s, 27);
        assert_eq!(c.transport(Transport::Sse).first_byte_s, Some(30));
        assert!(c.reset_by.contains(&"client-data".to_string()));
        let e = compute(
            &path("heroku"),
            &[(
                "heroku".to_string(),
                HopOverride {
                    idle: Some(Duration::from_secs(120)),
                    ..Default::default()
                },
            )]
            .into(),
        )
        .unwrap_err();
        assert!(e.contains("not adjustable"), "{e}");
    }

    #[test]
    fn gcp_caps_a_websocket_lifetime_at_30s_and_forces_reconnects() {
        let c = chain("gcp-alb");
        let ws = c.transport(Transport::Websocket);
        assert_eq!(ws.lifetime_cap_s, Some(30));
        assert!(ws.reconnect_required);
        assert_eq!(
            ws.tightest_idle_s, None,
            "it is a lifetime cap, not an idle one"
        );
        assert!(c.reconnect_required);
        assert!(ws.lifetime.as_ref().unwrap().setting.contains("--timeout"));
    }

    #[test]
    fn cloud_run_caps_every_connection_at_its_request_timeout() {
        let c = chain("cloud-run");
        let ws = c.transport(Transport::Websocket);
        assert_eq!(ws.lifetime_cap_s, Some(300), "5 min request timeout");
        assert_eq!(
            ws.tightest_idle_s, None,
            "a cap on the whole request, not on silence"
        );
        assert!(ws.reconnect_required && c.reconnect_required);
        assert_eq!(c.transport(Transport::Sse).lifetime_cap_s, Some(300));
        assert!(ws.unknown.iter().any(|u| u.starts_with("cloud-run: idle")));
        // Raised to its documented maximum, the cap follows; past it, refused.
        let mut o = Overrides::new();
        parse_override("cloud-run.lifetime=1h", &mut o).unwrap();
        let c = compute(&path("cloud-run"), &o).unwrap();
        assert_eq!(c.lifetime_cap_s, Some(3600));
        parse_override("cloud-run.lifetime=2h", &mut o).unwrap();
        let e = compute(&path("cloud-run"), &o).unwrap_err();
        assert!(
            e.contains("cloud-run: lifetime") && e.contains("3600"),
            "{e}"
        );
    }

    #[test]
    fn fastly_between_bytes_timeout_forces_a_fast_sse_heartbeat() {
        let c = chain("fastly,nginx");
        let sse = c.transport(Transport::Sse);
        assert_eq!(sse.tightest_idle_s, Some(10));
        assert_eq!(sse.idle.as_ref().unwrap().hop, "fastly");
        assert!(sse
            .idle
            .as_ref()
            .unwrap()
            .setting
            .contains("between_bytes_timeout"));
        assert_eq!(sse.heartbeat_max_s, Some(5));
        assert_eq!(
            c.heartbeat_s, 5,
            "faster than the production ping when the path says so"
        );
        assert!(
            c.warnings.iter().any(|w| w.contains("5 s or less")),
            "{:?}",
            c.warnings
        );
        // Fastly buffers a miss unless Streaming Miss is on; nginx too.
        let bufs: Vec<&str> = sse.required.iter().map(|r| r.hop.as_str()).collect();
        assert_eq!(bufs, ["fastly", "nginx"]);
        assert!(sse.required[0].setting.contains("beresp.do_stream"));
        // WebSockets are not timed by between_bytes: nginx's 60 s binds there.
        let ws = c.transport(Transport::Websocket);
        assert_eq!(
            ws.idle.as_ref().map(|b| (b.hop.as_str(), b.secs)),
            Some(("nginx", 60))
        );
        assert!(
            ws.required.iter().any(|r| r.hop == "fastly"),
            "passthrough must be enabled"
        );
    }

    #[test]
    fn azure_front_door_excludes_sse() {
        let c = chain("azure-front-door");
        assert_eq!(c.excluded_transports, vec!["sse".to_string()]);
        assert!(c.excludes(Transport::Sse));
        assert!(c.transport(Transport::Sse).excluded);
        let ws = c.transport(Transport::Websocket);
        assert_eq!(ws.tightest_idle_s, Some(300));
        assert_eq!(ws.lifetime_cap_s, Some(4 * 3600));
        assert!(c.reconnect_required);
    }

    #[test]
    fn direct_has_no_hop_limits_and_keeps_the_production_ping() {
        let c = compute(&path("direct"), &Overrides::new()).unwrap();
        assert!(c.path.is_empty());
        assert_eq!(c.tightest_idle_s, None);
        assert_eq!(c.heartbeat_max_s, None);
        assert_eq!(c.heartbeat_s, 30);
        assert!(!c.reconnect_required);
        assert!(c.excluded_transports.is_empty());
        assert!(c.sse_http2.contains("server's own"));
    }

    #[test]
    fn a_profile_path_takes_ids_and_declared_values() {
        let yaml = "- cloudflare\n- aws-alb: {idle: 300s}\n- nginx\n";
        let entries: Vec<PathEntry> = serde_yaml::from_str(yaml).unwrap();
        let (ids, over) = split_path(&entries);
        assert_eq!(ids, ["cloudflare", "aws-alb", "nginx"]);
        assert_eq!(over["aws-alb"].idle, Some(Duration::from_secs(300)));
        let back = serde_yaml::to_string(&entries).unwrap();
        assert_eq!(
            serde_yaml::from_str::<Vec<PathEntry>>(&back).unwrap(),
            entries
        );
        let direct: Vec<PathEntry> = serde_yaml::from_str("[direct]").unwrap();
        assert!(split_path(&direct).0.is_empty());
        assert!(serde_yaml::from_str::<Vec<PathEntry>>("- aws-alb: {idel: 3s}\n").is_err());
        let mut o = Overrides::new();
        parse_override("aws-alb.idle=300s", &mut o).unwrap();
        assert_eq!(o["aws-alb"].idle, Some(Duration::from_secs(300)));
        assert!(parse_override("aws-alb.idle", &mut o).is_err());
        assert!(parse_override("aws-alb.speed=3s", &mut o).is_err());
    }

    #[test]
    fn unknown_values_are_listed_not_guessed() {
        let c = chain("haproxy");
        assert_eq!(c.tightest_idle_s, None);
        assert!(c.transport(Transport::Websocket).unknown[0].starts_with("haproxy: idle"));
        let e = parse_path("nginx,albb").unwrap_err();
        assert!(e.contains("unknown hop `albb`"), "{e}");
        let e = compute(
            &path("nginx"),
            &[("heroku".to_string(), HopOverride::default())].into(),
        )
        .unwrap_err();
        assert!(e.contains("not on the path"), "{e}");
    }

    #[test]
    fn server_side_hops_form_their_own_link_and_leave_the_users_chain_alone() {
        let c = chain("cloudflare,aws-alb,kube-proxy-ipvs,redis:aws-nat-gateway");
        assert_eq!(c.path, ["cloudflare", "aws-alb", "kube-proxy-ipvs"]);
        assert_eq!(
            c.tightest_idle_s,
            Some(60),
            "the NAT is not on the users' side"
        );
        assert_eq!(c.backend_links.len(), 1);
        let l = &c.backend_links[0];
        assert_eq!(
            (l.side.as_str(), l.hops.clone()),
            ("redis", vec!["aws-nat-gateway".to_string()])
        );
        assert_eq!(l.tightest_idle_s, Some(350));
        assert_eq!(l.keepalive_max_s, Some(175));
        assert!(l.reset_by.contains(&"tcp-keepalive".to_string()));
        assert!(c
            .warnings
            .iter()
            .any(|w| w.contains("redis link") && w.contains("350 s")));
        assert!(
            c.verdict().contains("Server to redis: aws-nat-gateway"),
            "{}",
            c.verdict()
        );
        // Declared values reach the server side too, under either spelling.
        let mut o = Overrides::new();
        parse_override("redis:gcp-cloud-nat.idle=600s", &mut o).unwrap();
        let c = compute(
            &path("nginx,backend:gcp-cloud-nat,redis:azure-nat-gateway"),
            &o,
        )
        .unwrap();
        let sides: Vec<(&str, Option<u64>)> = c
            .backend_links
            .iter()
            .map(|l| (l.side.as_str(), l.tightest_idle_s))
            .collect();
        assert_eq!(sides, [("backend", Some(600)), ("redis", Some(240))]);
        let o: Overrides = [(
            "gcp-cloud-nat".to_string(),
            HopOverride {
                idle: Some(Duration::from_secs(600)),
                ..Default::default()
            },
        )]
        .into();
        let c = compute(&path("redis:gcp-cloud-nat"), &o).unwrap();
        assert_eq!(c.backend_links[0].tightest_idle_s, Some(600));
        assert!(c.path.is_empty());
        // Bad sides and bad ids are named.
        let e = parse_path("nginx,db:aws-nat-gateway").unwrap_err();
        assert!(e.contains("unknown link `db:`"), "{e}");
        let e = parse_path("redis:aws-nat").unwrap_err();
        assert!(e.contains("unknown hop `aws-nat`"), "{e}");
    }

    #[test]
    fn cluster_and_nat_hops_cut_where_their_vendors_say() {
        let c = chain("cloudflare-tunnel");
        let ws = c.transport(Transport::Websocket);
        assert_eq!(ws.tightest_idle_s, Some(270));
        assert!(
            !ws.reset_by.contains(&"tcp-keepalive".to_string()),
            "keepalive does not help"
        );
        assert_eq!(chain("kube-proxy-ipvs").tightest_idle_s, Some(900));
        assert_eq!(chain("kube-proxy-iptables").tightest_idle_s, Some(86_400));
        assert_eq!(chain("azure-nat-gateway").tightest_idle_s, Some(240));
        // Unknowns are listed, not guessed.
        let c = chain("istio-sidecar,linkerd,dapr-sidecar,cgnat");
        assert_eq!(c.tightest_idle_s, None);
        let sse = c.transport(Transport::Sse);
        for id in ["istio-sidecar", "linkerd", "dapr-sidecar", "cgnat"] {
            assert!(
                sse.unknown.iter().any(|u| u.starts_with(id)),
                "{id}: {:?}",
                sse.unknown
            );
        }
    }
}
