//! The declared path (`--path`, `--override`, the profile's `path:`) checked against what
//! the probe saw (issue 24):
//! - `path-hops`: the hops the response headers identify against the hops declared (a hop
//!   seen but not declared, a declared hop whose own header never came), and a transport
//!   the declared path excludes;
//! - `path-idle`: the measured idle cut against the chain: a cut is matched with the hop
//!   whose declared or documented limit it equals (`hops::cut::matching_cut_with`), naming that
//!   hop's setting in its own syntax; a path held open is checked against the heartbeat
//!   maximum the chain computes.
//!
//! Pure: the observations of one URL and the declared chain in, findings out.
use super::proxy::Proxy;
use super::session::{Afterward, StreamObs};
use super::{finding, fmt_s, heartbeat, idle_timeout, Kind, Meta, UrlObs};
use crate::findings::{Finding, Fix, Status};
use crate::hops::chain::{Chain, Overrides};
use crate::hops::cut::{self, CutMatch};
use crate::hops::{self, HopId, LimitKind};
use rtcheck_wire::http::response::Head;
use rtcheck_wire::transport::Transport;

/// The checks of this file (judged only with a declared path).
pub const HOPS: Meta = Meta {
    id: super::CheckId::PathHops,
    title: "Hops seen against the declared path",
    evidence: &["proxy-config"],
    run: |u| Some(path_hops(u, declared(u)?)),
};
pub const IDLE: Meta = Meta {
    id: super::CheckId::PathIdle,
    title: "Idle cut against the declared path",
    evidence: &["proxy-config", "ping-timing"],
    run: |u| path_idle(u, declared(u)?),
};

/// The path declared for the run, with its chain computed once.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    /// Hop ids, outermost first (empty: `direct`).
    pub ids: Vec<String>,
    pub overrides: Overrides,
    pub chain: Chain,
}

impl Declared {
    /// Compute the chain; errors name the hop and field (exit 2 in the command).
    pub fn new(ids: Vec<String>, overrides: Overrides) -> Result<Declared, String> {
        let chain = hops::chain::compute(&ids, &overrides)?;
        Ok(Declared {
            ids,
            overrides,
            chain,
        })
    }

    fn shown(&self) -> String {
        if self.ids.is_empty() {
            "direct (no hop)".into()
        } else {
            self.ids.join(" -> ")
        }
    }
}

/// A hop identified from a response header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub name: &'static str,
    /// The catalogue ids it may be (empty: a hop data/hops.yaml does not know).
    pub hops: &'static [HopId],
    /// The header that shows it, as read ("cf-ray header", "Server: nginx/1.22.1").
    pub by: String,
}

/// Hops that add a header of their own to every response they pass, which no hop in
/// front of them removes: declared and not seen is a contradiction, not a hidden hop.
const ALWAYS_VISIBLE: &[(HopId, &str)] = &[
    (HopId::Cloudflare, "a cf-ray header"),
    (HopId::GcpAlb, "Via: 1.1 google"),
    (HopId::AzureFrontDoor, "an X-Azure-Ref header"),
    (HopId::Heroku, "Via: 1.1 vegur (or 2.0 heroku-router)"),
    (HopId::Fly, "a Fly-Request-Id header"),
];

impl Seen {
    /// Whether `id` is one of the hops it may be.
    fn names(&self, id: &str) -> bool {
        self.hops.iter().any(|h| h.as_str() == id)
    }
}

/// Every hop fingerprint in one response head (edges first, then Server and Via).
pub fn fingerprints(h: &Head) -> Vec<Seen> {
    let low = |n: &str| h.header(n).unwrap_or("").to_ascii_lowercase();
    let (server, via) = (low("server"), low("via"));
    let vias: Vec<&str> = via.split(',').map(str::trim).collect();
    let raw = |n: &str| h.header(n).unwrap_or("").to_string();
    let mut out = Vec::new();
    let mut add = |name, hops, by: String| out.push(Seen { name, hops, by });
    if h.header("cf-ray").is_some() {
        add("Cloudflare", &[HopId::Cloudflare], "cf-ray header".into());
    } else if server == "cloudflare" {
        add(
            "Cloudflare",
            &[HopId::Cloudflare],
            "Server: cloudflare".into(),
        );
    }
    if h.header("x-amz-cf-id").is_some() || via.contains("cloudfront") {
        add("Amazon CloudFront", &[], "x-amz-cf-id / Via".into());
    }
    if low("x-served-by").contains("cache-") || h.header("x-fastly-request-id").is_some() {
        add(
            "Fastly",
            &[HopId::Fastly],
            "x-served-by / x-fastly-request-id".into(),
        );
    }
    if server.starts_with("akamaighost") || h.header("akamai-grn").is_some() {
        add(
            "Akamai",
            &[HopId::Akamai],
            "Server: AkamaiGHost / Akamai-GRN".into(),
        );
    }
    if server == "google frontend" {
        // Cloud Run's (and App Engine's) front end; not the external load balancer,
        // whose mark is `Via: 1.1 google`.
        add(
            "Google Frontend",
            &[HopId::CloudRun],
            format!("Server: {}", raw("server")),
        );
    }
    if vias.iter().any(|v| v.ends_with(" google")) {
        add(
            "Google Cloud load balancer",
            &[HopId::GcpAlb],
            "Via: 1.1 google".into(),
        );
    }
    if h.header("x-azure-ref").is_some() {
        add(
            "Azure Front Door",
            &[HopId::AzureFrontDoor],
            "X-Azure-Ref header".into(),
        );
    }
    if vias
        .iter()
        .any(|v| v.contains("vegur") || v.contains("heroku-router"))
    {
        add(
            "Heroku router",
            &[HopId::Heroku],
            format!("Via: {}", raw("via")),
        );
    }
    if h.header("fly-request-id").is_some() || server.starts_with("fly/") {
        add(
            "Fly.io proxy",
            &[HopId::Fly],
            "Fly-Request-Id / Server".into(),
        );
    }
    if server.starts_with("awselb") {
        add(
            "AWS load balancer",
            &[HopId::AwsAlb, HopId::AwsClb],
            format!("Server: {}", raw("server")),
        );
    }
    if server.starts_with("microsoft-azure-application-gateway") {
        add(
            "Azure Application Gateway",
            &[HopId::AzureAppgw],
            format!("Server: {}", raw("server")),
        );
    }
    if server.starts_with("envoy") || h.header("x-envoy-upstream-service-time").is_some() {
        add("Envoy", &[HopId::Envoy], "Server: envoy / x-envoy-*".into());
    }
    let by_name = |w: &str| server.contains(w) || vias.iter().any(|v| v.contains(w));
    if by_name("nginx") {
        add(
            "nginx",
            &[HopId::Nginx, HopId::IngressNginx],
            "Server / Via: nginx".into(),
        );
    }
    if by_name("caddy") {
        add("Caddy", &[HopId::Caddy], "Server / Via: Caddy".into());
    }
    if by_name("haproxy") {
        add("HAProxy", &[HopId::Haproxy], "Server / Via: haproxy".into());
    }
    out
}

/// The heads the path answered with (the handshake or the stream's, and a resume's).
fn heads(u: &UrlObs) -> Vec<&Head> {
    let resumed = u.resume.as_ref().and_then(|r| r.as_ref().ok());
    [
        u.ws.as_ref().map(|w| &w.head),
        u.sse.as_ref().map(|s| &s.head),
        resumed.map(|r| &r.obs.head),
    ]
    .into_iter()
    .flatten()
    .collect()
}

pub fn transport(k: Kind) -> Transport {
    k.transport()
}

/// The declared path against the heads seen: what differs, and the verdict.
pub fn compare(seen: &[Seen], d: &Declared, t: Transport) -> (Status, String, Fix) {
    let covers = |s: &Seen| d.ids.iter().any(|i| s.names(i));
    let undeclared: Vec<&Seen> = seen.iter().filter(|s| !covers(s)).collect();
    let seen_ids = |id: &str| seen.iter().any(|s| s.names(id));
    let missing: Vec<(&str, &str)> = ALWAYS_VISIBLE
        .iter()
        .map(|(id, by)| (id.as_str(), *by))
        .filter(|(id, _)| d.ids.iter().any(|i| i == id) && !seen_ids(id))
        .collect();
    let hidden: Vec<&str> = d
        .ids
        .iter()
        .map(String::as_str)
        .filter(|id| !seen_ids(id) && !missing.iter().any(|(m, _)| m == id))
        .collect();
    let mut parts = vec![format!("declared {}", d.shown())];
    parts.push(if seen.is_empty() {
        "no hop named itself in the response headers".into()
    } else {
        let s: Vec<String> = seen
            .iter()
            .map(|s| format!("{} ({})", s.name, s.by))
            .collect();
        format!("seen {}", s.join(", "))
    });
    for s in &undeclared {
        let ids = if s.hops.is_empty() {
            "not in the hop catalogue: its limits are unknown".to_string()
        } else {
            let ids: Vec<&str> = s.hops.iter().map(|h| h.as_str()).collect();
            format!("hop id {}", ids.join(" or "))
        };
        parts.push(format!("seen, not declared: {} ({ids})", s.name));
    }
    for (id, by) in &missing {
        parts.push(format!(
            "declared, not seen: {id} (it adds {by} to every response)"
        ));
    }
    if !hidden.is_empty() {
        parts.push(format!(
            "not visible in headers (they add none of their own, or an outer hop replaces Server): {}",
            hidden.join(", ")
        ));
    }
    let mut fix = Fix::default();
    let mut status = Status::Pass;
    if !undeclared.is_empty() || !missing.is_empty() {
        status = Status::Warn;
        let mut ids: Vec<String> = d.ids.clone();
        ids.retain(|i| !missing.iter().any(|(m, _)| m == i));
        for s in &undeclared {
            if let Some(h) = s.hops.first() {
                ids.push(h.to_string());
            }
        }
        fix.summary = "declare the path the URL really crosses, so the chain counts every hop's limits (outermost first)".into();
        let order = if undeclared.is_empty() {
            ""
        } else {
            "   # put the added hops in their place, outermost first"
        };
        let ids = if ids.is_empty() {
            "direct".to_string()
        } else {
            ids.join(",")
        };
        fix.persistent.push(format!("--path {ids}{order}"));
    }
    if let Some(e) = d.chain.exclusions.iter().find(|e| e.transport == t.name()) {
        status = Status::Fail;
        parts.push(format!(
            "the declared path excludes {}: {}",
            t.name(),
            e.why
        ));
        fix.summary = format!(
            "{} cannot carry {} there: use another transport through it (rtcheck choose --path {})",
            e.hop,
            t.name(),
            d.ids.join(",")
        );
    }
    (status, parts.join("; "), fix)
}

/// The hops the URL's response heads named, each once.
fn seen_on(u: &UrlObs) -> Vec<Seen> {
    let mut seen: Vec<Seen> = Vec::new();
    for s in heads(u).into_iter().flat_map(fingerprints) {
        if !seen.iter().any(|x| x.name == s.name) {
            seen.push(s);
        }
    }
    seen
}

fn path_hops(u: &UrlObs, d: &Declared) -> Finding {
    let seen = seen_on(u);
    let (status, observed, fix) = compare(&seen, d, transport(u.kind));
    finding(
        &HOPS,
        u,
        status,
        observed,
        "every hop the headers name is on the declared path, and every declared hop that always names itself does",
        "a hop missing from the declared path is a limit the chain does not count (data/hops.yaml)",
        fix,
    )
}

/// Tolerance of a match and of "past the limit": 10 % or 2 s, as `hops::cut::matching_cut`.
fn tolerance_ms(ms: f64) -> f64 {
    (ms * 0.1).max(2000.0)
}

/// A connection cut after `silence_ms` of silence at age `age_ms`: the hops whose idle
/// limit matches the silence or whose lifetime cap matches the age, closest first.
pub fn cut_matches(d: &Declared, silence_ms: f64, age_ms: f64, t: Transport) -> Vec<CutMatch> {
    let at = |ms: f64| std::time::Duration::from_secs_f64(ms.max(0.0) / 1000.0);
    let by = |ms, k| {
        cut::matching_cut_with(&d.ids, &d.overrides, at(ms), t)
            .into_iter()
            .filter(move |c| c.kind == k)
    };
    by(silence_ms, LimitKind::Idle)
        .chain(by(age_ms, LimitKind::Lifetime))
        .collect()
}

/// The verdict of a watched stream against the declared chain, the fix and the numbers.
pub fn judge_idle(
    s: &StreamObs,
    t: Transport,
    d: &Declared,
    seen: &[Seen],
) -> (Status, String, Fix, Vec<(&'static str, f64)>) {
    match idle_timeout::silence_before_close(s) {
        Some(silence) => judge_cut(s, silence, t, d, seen),
        None if idle_timeout::silent_cut(s).is_some() => judge_silent(s, t, d, seen),
        None => judge_open(s, t, d),
    }
}

/// A connection forgotten in silence (seen only when written to): the declared hops that
/// forget flows silently within the silence measured, the first to forget blamed.
fn judge_silent(
    s: &StreamObs,
    t: Transport,
    d: &Declared,
    seen: &[Seen],
) -> (Status, String, Fix, Vec<(&'static str, f64)>) {
    // The flow was forgotten after the last bytes came in: the silence before the ping.
    let silence = idle_timeout::silence_before_ping(s).unwrap_or_else(|| s.longest_silence_ms());
    let numbers = vec![("silent_cut_within_s", silence / 1000.0)];
    let how = match s.after_idle.as_ref().map(|a| &a.outcome) {
        Some(Afterward::Ended(e)) => {
            format!("a ping after it met {}", idle_timeout::ending_text(e))
        }
        _ => "no FIN or RST; a ping after it was never acknowledged by TCP".to_string(),
    };
    let within = std::time::Duration::from_secs_f64(silence.max(0.0) / 1000.0);
    let m = cut::silent_cutters(&d.ids, &d.overrides, within, t);
    let Some(first) = m.first() else {
        let observed = format!(
            "silent cut within {} of silence ({how}); no hop of the declared path {} forgets a flow that soon: a NAT, conntrack or layer-4 hop is missing from the path",
            fmt_s(silence),
            d.shown()
        );
        let fix = Fix {
            summary: format!(
                "find what forgets flows within {}: declare it on the path with its value (--override HOP.idle=...), and send a heartbeat more often",
                fmt_s(silence)
            ),
            ..Fix::default()
        };
        return (Status::Fail, observed, fix, numbers);
    };
    let also: Vec<String> = m[1..].iter().map(|c| attribution(&c.hop, seen)).collect();
    let observed = format!(
        "silent cut within {} of silence ({how}): {}; {}{}",
        fmt_s(silence),
        first.describe(),
        attribution(&first.hop, seen),
        if also.is_empty() {
            String::new()
        } else {
            format!("; may also have: {}", also.join(", "))
        }
    );
    let limit = first.declared_s.unwrap_or(first.default_s);
    let mut lines: Vec<String> = m
        .iter()
        .map(|c| format!("{}: {}", c.hop, c.setting))
        .collect();
    let summary = if limit > 0 {
        let hb = (limit / 2).max(1);
        lines.push(format!(
            "server: heartbeat (WebSocket ping / SSE comment) or TCP keepalive every {hb} s or less"
        ));
        format!(
            "{} forgets an idle flow after {limit} s and tells neither end: send a heartbeat every {hb} s or less (half its limit), or raise the limit",
            first.hop
        )
    } else {
        format!(
            "{}'s limit is not documented: send a heartbeat more often than {}, and declare the value you measure (--override {}.idle=...)",
            first.hop,
            fmt_s(silence),
            first.hop
        )
    };
    let fix = Fix {
        summary,
        runtime: Vec::new(),
        persistent: lines,
    };
    (Status::Fail, observed, fix, numbers)
}

/// How a matching hop is known to be there: the header that named it, or only the
/// declared path.
fn attribution(hop: &str, seen: &[Seen]) -> String {
    match seen.iter().find(|s| s.names(hop)) {
        Some(s) => format!("{hop} seen on the path ({})", s.by),
        None => format!("{hop} assumed from the declared path (not seen in the headers)"),
    }
}

fn judge_cut(
    s: &StreamObs,
    silence: f64,
    t: Transport,
    d: &Declared,
    seen: &[Seen],
) -> (Status, String, Fix, Vec<(&'static str, f64)>) {
    let tc = d.chain.transport(t);
    let numbers = vec![
        ("cut_after_s", s.ended_ms / 1000.0),
        ("silence_s", silence / 1000.0),
    ];
    let cut = format!(
        "cut after {} ({} of silence)",
        fmt_s(s.ended_ms),
        fmt_s(silence)
    );
    let mut m = cut_matches(d, silence, s.ended_ms, t);
    // A hop the headers showed is blamed before one only declared (stable: the closest
    // match first within each).
    m.sort_by_key(|c| !seen.iter().any(|s| s.names(&c.hop)));
    let Some(first) = m.first() else {
        let others: Vec<String> = cut_matches_anywhere(silence, t, d);
        let tightest = tc
            .idle
            .as_ref()
            .map_or("no documented idle limit".into(), |b| {
                format!("tightest idle limit {} s at {}", b.secs, b.hop)
            });
        let observed = format!(
            "{cut}; no hop of the declared path {} has a limit near it ({tightest}){}: the cut comes from a hop missing from the path, or from the server",
            d.shown(),
            if others.is_empty() {
                String::new()
            } else {
                format!("; undeclared hops whose default matches: {}", others.join(", "))
            }
        );
        let fix = Fix {
            summary: format!(
                "find what cuts at {}: declare that hop on the path, or its configured value (--override HOP.idle={}s)",
                fmt_s(silence),
                (silence / 1000.0).round()
            ),
            ..Fix::default()
        };
        return (Status::Fail, observed, fix, numbers);
    };
    let also: Vec<String> = m[1..].iter().map(|c| attribution(&c.hop, seen)).collect();
    let observed = format!(
        "{cut}: {}; {}{}",
        first.describe().trim_end_matches(';'),
        attribution(&first.hop, seen),
        if also.is_empty() {
            String::new()
        } else {
            format!("; also matches: {}", also.join(", "))
        }
    );
    let mut lines: Vec<String> = m
        .iter()
        .map(|c| format!("{}: {}", c.hop, c.setting))
        .collect();
    let summary = if first.kind == LimitKind::Lifetime {
        format!(
            "{} ends every connection at its lifetime cap: reconnect and resume (or raise the cap)",
            first.hop
        )
    } else {
        let hb = tc.heartbeat_max_s.map_or(String::new(), |mx| {
            lines.push(format!(
                "server: heartbeat (WebSocket ping / SSE comment) every {mx} s or less"
            ));
            format!(
                ", or send a server heartbeat every {mx} s or less (half the tightest idle limit)"
            )
        });
        format!("raise {}'s idle limit above the heartbeat{hb}", first.hop)
    };
    let fix = Fix {
        summary,
        runtime: Vec::new(),
        persistent: lines,
    };
    (Status::Fail, observed, fix, numbers)
}

/// Hops off the declared path whose documented idle default matches a cut.
fn cut_matches_anywhere(silence: f64, t: Transport, d: &Declared) -> Vec<String> {
    let at = std::time::Duration::from_secs_f64(silence.max(0.0) / 1000.0);
    cut::matching_cut(&[], at, t)
        .into_iter()
        .filter(|c| c.kind == LimitKind::Idle && !d.ids.contains(&c.hop))
        .map(|c| format!("{} ({} s)", c.hop, c.default_s))
        .take(3)
        .collect()
}

fn judge_open(
    s: &StreamObs,
    t: Transport,
    d: &Declared,
) -> (Status, String, Fix, Vec<(&'static str, f64)>) {
    let tc = d.chain.transport(t);
    let silence = s.longest_silence_ms();
    let mut numbers = vec![("held_s", s.ended_ms / 1000.0)];
    if let Some(mx) = tc.heartbeat_max_s {
        numbers.push(("heartbeat_max_s", mx as f64));
    }
    let held = format!("held open {}", fmt_s(s.ended_ms));
    let limit = tc.idle.as_ref().map(|b| {
        let how = if b.declared { "declared" } else { "documented" };
        (b, format!("{}'s {how} idle limit of {} s", b.hop, b.secs))
    });
    let beat = heartbeat::interval_ms(s);
    if let Some(i) = beat {
        numbers.push(("interval_s", i / 1000.0));
    }
    match (beat, &limit, tc.heartbeat_max_s) {
        (Some(i), Some((b, what)), Some(mx))
            if i > mx as f64 * 1000.0 + heartbeat::TOLERANCE_MS =>
        {
            let reach = if silence < b.secs as f64 * 1000.0 {
                format!(
                    " (the test's longest silence, {}, did not reach the limit yet)",
                    fmt_s(silence)
                )
            } else {
                String::new()
            };
            let fix = Fix {
                summary: format!("send the server heartbeat every {mx} s or less (half {what}), or raise that limit"),
                runtime: Vec::new(),
                persistent: vec![
                    format!("server: heartbeat every {mx} s or less"),
                    format!("{}: {}", b.hop, b.setting),
                ],
            };
            let o = format!("{held}; the server's heartbeat every {} is slower than the path allows: at most {mx} s, half {what}{reach}", fmt_s(i));
            (Status::Warn, o, fix, numbers)
        }
        (Some(i), _, Some(mx)) => {
            let o = format!(
                "{held}; heartbeat every {} or less, within the path's maximum of {mx} s ({})",
                fmt_s(i),
                d.chain.heartbeat_rule
            );
            (Status::Pass, o, Fix::default(), numbers)
        }
        (Some(i), _, None) => {
            let o = format!("{held}; heartbeat every {}; no hop of {} documents an idle limit a server heartbeat resets", fmt_s(i), d.shown());
            (Status::Pass, o, Fix::default(), numbers)
        }
        (None, Some((b, what)), _)
            if silence >= b.secs as f64 * 1000.0 + tolerance_ms(b.secs as f64 * 1000.0) =>
        {
            let o = format!(
                "{held} through {} of silence, past {what}: the hop is configured otherwise, or not on this path",
                fmt_s(silence)
            );
            let fix = Fix {
                summary: format!(
                    "declare the value {} is configured with, so the chain is computed from it",
                    b.hop
                ),
                runtime: Vec::new(),
                persistent: vec![format!(
                    "--override {}.idle=DURATION   # the configured value",
                    b.hop
                )],
            };
            (Status::Warn, o, fix, numbers)
        }
        (None, Some((b, _)), _) => {
            let o = format!(
                "{held}; longest silence {}, under the path's tightest idle limit ({} s at {}): not reached; use --idle-for {}s",
                fmt_s(silence),
                b.secs,
                b.hop,
                b.secs + 15
            );
            (Status::Skip, o, Fix::default(), numbers)
        }
        (None, None, _) if !tc.unknown.is_empty() => {
            let o = format!(
                "{held}; the path's limits are not documented ({}): declare them with --override",
                tc.unknown.join("; ")
            );
            (Status::Skip, o, Fix::default(), numbers)
        }
        (None, None, _) => {
            let o = format!(
                "{held} through {} of silence; no hop of {} documents an idle limit",
                fmt_s(silence),
                d.shown()
            );
            (Status::Pass, o, Fix::default(), numbers)
        }
    }
}

fn path_idle(u: &UrlObs, d: &Declared) -> Option<Finding> {
    let t = transport(u.kind);
    let (status, observed, fix, numbers, reason) = match (idle_timeout::stream(u), u.quick) {
        _ if u.kind == Kind::Poll => return None,
        (_, true) => (
            Status::Skip,
            "not run".into(),
            Fix::default(),
            vec![],
            Some("--quick: idle test not run"),
        ),
        (None, _) => (
            Status::Skip,
            "no stream".into(),
            Fix::default(),
            vec![],
            Some("no connection was established to hold"),
        ),
        (Some(s), false) => {
            let (st, o, f, n) = judge_idle(s, t, d, &seen_on(u));
            let why =
                (st == Status::Skip).then_some("the idle test did not reach a documented limit");
            (st, o, f, n, why)
        }
    };
    let mut f = finding(
        &IDLE,
        u,
        status,
        observed,
        "no cut during --idle-for, a heartbeat within the chain's maximum; a cut names the hop and its setting",
        "the tightest idle limit of the path cuts a quiet connection; a server heartbeat at most half of it keeps the path open (hops chain rule)",
        fix,
    );
    f.reason = reason.map(String::from);
    for (k, v) in numbers {
        f.numbers.insert(k.into(), (v * 1000.0).round() / 1000.0);
    }
    Some(f)
}

/// The proxy whose fixes a URL gets when its headers named none: the innermost declared
/// hop probe writes fixes for (HAProxy adds no header of its own). A declaration, like
/// `--proxy`, which wins over it.
pub fn declared_proxy(d: &Declared) -> Option<Proxy> {
    d.ids.iter().rev().find_map(|id| match HopId::parse(id)? {
        HopId::Nginx | HopId::IngressNginx => Some(Proxy::Nginx),
        HopId::Haproxy => Some(Proxy::Haproxy),
        HopId::Caddy => Some(Proxy::Caddy),
        _ => None,
    })
}

/// [`declared_proxy`] for every URL still without an identified proxy.
pub fn proxy_from_path(all: &mut [UrlObs]) {
    for u in all.iter_mut().filter(|u| u.proxy == Proxy::Unknown) {
        if let Some(p) = u.path.as_deref().and_then(declared_proxy) {
            u.proxy = p;
        }
    }
}

/// The declared path of a reached URL (None: no path check applies).
fn declared(u: &UrlObs) -> Option<&Declared> {
    u.path.as_deref().filter(|_| u.unreached.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::session::Ending;

    fn head(pairs: &[(&str, &str)]) -> Head {
        Head {
            status: 200,
            reason: String::new(),
            headers: pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn declared(path: &str, over: &[&str]) -> Declared {
        let mut o = Overrides::new();
        for s in over {
            hops::chain::parse_override(s, &mut o).unwrap();
        }
        Declared::new(hops::chain::parse_path(path).unwrap(), o).unwrap()
    }

    fn seen(pairs: &[(&str, &str)]) -> Vec<Seen> {
        fingerprints(&head(pairs))
    }

    #[test]
    fn seen_hops_are_matched_with_the_declared_ones() {
        let d = declared("cloudflare,aws-alb,nginx", &[]);
        let ws = Transport::Websocket;
        let cf = seen(&[("cf-ray", "8a-AMS"), ("server", "cloudflare")]);
        let (st, o, _) = compare(&cf, &d, ws);
        assert_eq!(st, Status::Pass, "{o}");
        assert!(
            o.contains("not visible in headers") && o.contains("aws-alb, nginx"),
            "{o}"
        );
        // Declared Cloudflare, whose cf-ray never came: the URL does not cross it.
        let (st, o, fix) = compare(&seen(&[("server", "nginx/1.22.1")]), &d, ws);
        assert_eq!(st, Status::Warn);
        assert!(o.contains("declared, not seen: cloudflare"), "{o}");
        assert_eq!(fix.persistent[0], "--path aws-alb,nginx");
        // A hop seen and not declared: its limits are not in the chain.
        let d = declared("nginx", &[]);
        let heroku = seen(&[("via", "1.1 vegur"), ("server", "nginx")]);
        let (st, o, fix) = compare(&heroku, &d, ws);
        assert_eq!(st, Status::Warn);
        assert!(
            o.contains("seen, not declared: Heroku router (hop id heroku)"),
            "{o}"
        );
        assert!(fix.persistent[0].contains("nginx,heroku"), "{fix:?}");
        // ingress-nginx shows itself as nginx.
        let d = declared("ingress-nginx", &[]);
        assert_eq!(
            compare(&seen(&[("server", "nginx")]), &d, ws).0,
            Status::Pass
        );
        // Direct declared, a proxy answered.
        let d = declared("direct", &[]);
        let (st, o, _) = compare(&seen(&[("via", "1.1 Caddy")]), &d, ws);
        assert_eq!(st, Status::Warn, "{o}");
        assert!(o.contains("declared direct (no hop)"), "{o}");
        // CloudFront is not in the catalogue: said so.
        let (_, o, _) = compare(&seen(&[("x-amz-cf-id", "x")]), &d, ws);
        assert!(o.contains("not in the hop catalogue"), "{o}");
    }

    #[test]
    fn cdn_and_platform_fingerprints_name_their_hop_ids() {
        let ids = |pairs: &[(&str, &str)]| -> Vec<&str> {
            seen(pairs)
                .iter()
                .flat_map(|s| s.hops.iter().map(|h| h.as_str()))
                .collect()
        };
        assert_eq!(ids(&[("x-served-by", "cache-ams21-AMS")]), ["fastly"]);
        assert_eq!(ids(&[("server", "AkamaiGHost")]), ["akamai"]);
        assert_eq!(ids(&[("akamai-grn", "0.1.2")]), ["akamai"]);
        assert_eq!(ids(&[("server", "Google Frontend")]), ["cloud-run"]);
        // The external load balancer's mark is Via, not Server.
        assert_eq!(ids(&[("via", "1.1 google")]), ["gcp-alb"]);
        let d = declared("fastly,nginx", &[]);
        let both = seen(&[("x-served-by", "cache-ams21-AMS"), ("server", "nginx")]);
        assert_eq!(compare(&both, &d, Transport::Sse).0, Status::Pass);
    }

    #[test]
    fn the_innermost_declared_proxy_gives_the_fixes() {
        assert_eq!(
            declared_proxy(&declared("cloudflare,haproxy", &[])),
            Some(Proxy::Haproxy)
        );
        assert_eq!(
            declared_proxy(&declared("nginx,caddy", &[])),
            Some(Proxy::Caddy)
        );
        assert_eq!(declared_proxy(&declared("aws-alb", &[])), None);
    }

    #[test]
    fn a_transport_the_path_excludes_fails() {
        let d = declared("azure-front-door", &[]);
        let (st, o, fix) = compare(&seen(&[("x-azure-ref", "r")]), &d, Transport::Sse);
        assert_eq!(st, Status::Fail);
        assert!(o.contains("excludes sse"), "{o}");
        assert!(fix.summary.contains("azure-front-door"), "{fix:?}");
        let (st, _, _) = compare(&seen(&[("x-azure-ref", "r")]), &d, Transport::Websocket);
        assert_eq!(st, Status::Pass);
    }

    fn obs(hb: &[f64], reads: &[f64], ended: f64, ending: Ending) -> StreamObs {
        StreamObs {
            heartbeats_ms: hb.to_vec(),
            reads_ms: reads.to_vec(),
            ended_ms: ended,
            ending: Some(ending),
            ..Default::default()
        }
    }

    #[test]
    fn a_cut_is_blamed_on_the_hop_the_headers_showed_before_one_only_declared() {
        // Declared aws-alb,nginx; the headers name nginx and no ALB: the 60 s cut is
        // nginx's, seen, and the ALB is only assumed.
        let d = declared("aws-alb,nginx", &[]);
        let ws = Transport::Websocket;
        let nginx = seen(&[("server", "nginx/1.22.1")]);
        let cut = obs(&[], &[5.0], 60_405.0, Ending::Eof);
        let (st, o, fix, _) = judge_idle(&cut, ws, &d, &nginx);
        assert_eq!(st, Status::Fail);
        assert!(
            o.contains("NGINX (reverse proxy) idle limit (default 60 s)"),
            "{o}"
        );
        assert!(
            o.contains("nginx seen on the path (Server / Via: nginx)"),
            "{o}"
        );
        assert!(
            o.contains("also matches: aws-alb assumed from the declared path"),
            "{o}"
        );
        assert!(fix.persistent[0].starts_with("nginx: "), "{fix:?}");
        assert!(
            fix.summary.starts_with("raise nginx's idle limit"),
            "{fix:?}"
        );
    }

    #[test]
    fn a_cut_names_the_hop_whose_limit_it_matches_and_its_setting() {
        let d = declared("cloudflare,aws-alb,nginx", &[]);
        let ws = Transport::Websocket;
        // Silent for 60.4 s, then EOF: the ALB (outermost of the two 60 s hops).
        let cut = obs(&[], &[5.0], 60_405.0, Ending::Eof);
        let (st, o, fix, n) = judge_idle(&cut, ws, &d, &[]);
        assert_eq!(st, Status::Fail);
        assert!(
            o.contains("AWS Application Load Balancer idle limit (default 60 s)"),
            "{o}"
        );
        assert!(o.contains("aws-alb assumed from the declared path"), "{o}");
        assert!(o.contains("also matches: nginx assumed"), "{o}");
        assert!(
            fix.persistent[0].starts_with("aws-alb: aws elbv2"),
            "{fix:?}"
        );
        // The ALB's command is complete: its ARN named, and how to find it.
        assert!(
            fix.persistent[0].contains("--load-balancer-arn <ARN>")
                && fix.persistent[0].contains("<ARN>: aws elbv2 describe-load-balancers"),
            "{fix:?}"
        );
        assert!(
            fix.persistent[0].contains("idle_timeout.timeout_seconds"),
            "{fix:?}"
        );
        assert!(
            fix.persistent
                .iter()
                .any(|l| l.contains("every 30 s or less")),
            "{fix:?}"
        );
        assert!(n
            .iter()
            .any(|(k, v)| *k == "silence_s" && (*v - 60.4).abs() < 0.01));
        // A declared, scaled-down value is what a 4 s cut matches.
        let d = declared("nginx", &["nginx.idle=4s"]);
        let (st, o, fix, _) = judge_idle(&obs(&[], &[5.0], 4_020.0, Ending::Eof), ws, &d, &[]);
        assert_eq!(st, Status::Fail);
        assert!(o.contains("declared 4 s; default 60 s"), "{o}");
        assert!(fix.persistent[0].contains("proxy_read_timeout"), "{fix:?}");
        // A cut no declared hop explains: an undeclared hop's default is suggested.
        let d = declared("cloudflare", &[]);
        let (st, o, _, _) = judge_idle(&obs(&[], &[5.0], 55_100.0, Ending::Eof), ws, &d, &[]);
        assert_eq!(st, Status::Fail);
        assert!(o.contains("no hop of the declared path cloudflare"), "{o}");
        assert!(o.contains("heroku (55 s)"), "{o}");
    }

    #[test]
    fn a_lifetime_cap_matches_the_age_not_the_silence() {
        let d = declared("gcp-alb", &[]);
        // Heartbeats every 5 s, closed at 30 s: the silence is 5 s, the age 30 s.
        let hb = [5000.0, 10000.0, 15000.0, 20000.0, 25000.0];
        let s = obs(&hb, &hb, 30_050.0, Ending::Eof);
        let (st, o, fix, _) = judge_idle(&s, Transport::Websocket, &d, &[]);
        assert_eq!(st, Status::Fail);
        assert!(o.contains("lifetime limit"), "{o}");
        assert!(fix.summary.contains("reconnect and resume"), "{fix:?}");
    }

    #[test]
    fn a_path_held_open_is_checked_against_the_heartbeat_maximum() {
        let ws = Transport::Websocket;
        let d = declared("nginx", &["nginx.idle=4s"]);
        let every = |step: f64| -> Vec<f64> { (1..=6).map(|i| i as f64 * step).collect() };
        let fast = every(1000.0);
        let (st, o, _, _) = judge_idle(&obs(&fast, &fast, 12_000.0, Ending::Open), ws, &d, &[]);
        assert_eq!(st, Status::Pass, "{o}");
        // Slower than half the 4 s limit (but it did not cut yet): warned, hop named.
        let slow = [3000.0, 6000.0, 9000.0];
        let (st, o, fix, _) = judge_idle(&obs(&slow, &slow, 10_000.0, Ending::Open), ws, &d, &[]);
        assert_eq!(st, Status::Warn, "{o}");
        assert!(
            o.contains("at most 2 s") && o.contains("nginx's declared idle limit of 4 s"),
            "{o}"
        );
        assert!(fix.persistent[1].contains("proxy_read_timeout"), "{fix:?}");
        // Silent past the documented 60 s: the hop is configured otherwise.
        let d = declared("aws-alb", &[]);
        let (st, o, fix, _) = judge_idle(&obs(&[], &[5.0], 75_000.0, Ending::Open), ws, &d, &[]);
        assert_eq!(st, Status::Warn, "{o}");
        assert!(
            fix.persistent[0].starts_with("--override aws-alb.idle="),
            "{fix:?}"
        );
        // Silent, but shorter than the limit: not reached.
        let (st, o, _, _) = judge_idle(&obs(&[], &[5.0], 30_000.0, Ending::Open), ws, &d, &[]);
        assert_eq!(st, Status::Skip, "{o}");
        assert!(o.contains("--idle-for 75s"), "{o}");
        // HAProxy documents no idle default: declare it.
        let d = declared("haproxy", &[]);
        let (st, o, _, _) = judge_idle(&obs(&[], &[5.0], 30_000.0, Ending::Open), ws, &d, &[]);
        assert_eq!(st, Status::Skip, "{o}");
        assert!(o.contains("--override"), "{o}");
    }
}
