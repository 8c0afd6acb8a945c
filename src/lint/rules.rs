//! The rule table: every lint rule with its stable id, what it checks, its evidence (ids
//! in data/evidence.yaml) or, where no measurement exists, the product's documented default
//! it rests on. `finding` builds a `Finding` from a row; `finish` adds one Pass per rule
//! that applied and found nothing.
use super::Node;
use crate::findings::{Finding, Fix, SourceLocation, Status};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

#[derive(Debug)]
pub struct Rule {
    pub id: &'static str,
    pub product: &'static str,
    pub title: &'static str,
    /// Ids in data/evidence.yaml.
    pub evidence: &'static [&'static str],
    /// The documented behaviour the rule rests on.
    pub basis: &'static str,
}

macro_rules! rules {
    ($($var:ident = $id:literal, $product:literal, $title:literal, [$($ev:literal),*], $basis:literal;)*) => {
        /// Every rule's id, a variant per row of [`RULES`] in its order: a checker names
        /// its rule by variant, so a typo does not compile and the lookup is an index.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum RuleId { $($var),* }
        impl RuleId {
            pub const ALL: &[RuleId] = &[$(RuleId::$var),*];
            /// The id findings carry and `--skip` and `explain` take.
            pub const fn as_str(self) -> &'static str {
                match self { $(RuleId::$var => $id),* }
            }
        }
        pub const RULES: &[Rule] = &[$(Rule { id: $id, product: $product, title: $title, evidence: &[$($ev),*], basis: $basis }),*];
    };
}

/// Ordered by the id's text, as findings are reported.
impl Ord for RuleId {
    fn cmp(&self, o: &RuleId) -> std::cmp::Ordering {
        self.as_str().cmp(o.as_str())
    }
}

impl PartialOrd for RuleId {
    fn partial_cmp(&self, o: &RuleId) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

rules! {
    NginxWsHttpVersion = "nginx-ws-http-version", "nginx", "WebSocket location proxies with HTTP/1.1", ["proxy-config"],
        "nginx proxies with HTTP/1.0 unless proxy_http_version 1.1 (the default from 1.29.7 / 1.30.0); RFC 6455 needs 1.1, and a server that checks it refuses the upgrade (seen through nginx 1.22: python3-websockets 400, while Node ws accepted)";
    NginxWsUpgrade = "nginx-ws-upgrade", "nginx", "WebSocket location passes Upgrade and Connection", ["proxy-config"],
        "Upgrade and Connection are hop-by-hop: nginx drops them unless proxy_set_header passes them, and the server refuses the upgrade (seen: 426 from Node ws and python3-websockets); a location with any proxy_set_header inherits none from above";
    NginxReadTimeout = "nginx-read-timeout", "nginx", "proxy_read_timeout above the heartbeat", ["ping-pong"],
        "proxy_read_timeout (default 60s) closes a proxied stream quiet for that long; on an upgraded WebSocket frames either way reset it (client pings keep it open), on an event stream only the server's events do (measured, docs/lint.md)";
    NginxSendTimeout = "nginx-send-timeout", "nginx", "proxy_send_timeout is a readable time", [],
        "proxy_send_timeout (default 60s) bounds one write to the upstream that does not complete (the server not reading), not silence: a quiet WebSocket or event stream is not cut by it (measured, docs/lint.md); only a value nginx cannot read is reported";
    NginxSseBuffering = "nginx-sse-buffering", "nginx", "event stream not buffered by nginx", ["proxy-config"],
        "proxy_buffering is on by default; only an X-Accel-Buffering: no response header (unless proxy_ignore_headers drops it) turns it off per response";
    NginxWorkerConnections = "nginx-worker-connections", "nginx", "worker_connections x workers hold the connections", ["ulimit-n"],
        "worker_connections (default 512) counts client and upstream connections: 2 per proxied connection; worker_processes defaults to 1";
    NginxRlimitNofile = "nginx-rlimit-nofile", "nginx", "worker_rlimit_nofile holds 2 fds per connection", ["ulimit-n"],
        "without worker_rlimit_nofile the workers keep the service's open-files limit (soft 1024 by default)";
    NginxNextUpstream = "nginx-next-upstream", "nginx", "a stream is not retried on another upstream", ["retry-amplification"],
        "proxy_next_upstream non_idempotent lets nginx resend a POST (a poll, a publish) to the next server";
    NginxUpstreamKeepalive = "nginx-upstream-keepalive", "nginx", "polls reuse upstream connections", ["connection-reuse"],
        "nginx keeps upstream connections only in an upstream block with keepalive, proxying with HTTP/1.1 and Connection \"\"";
    HaproxyTimeoutTunnel = "haproxy-timeout-tunnel", "haproxy", "WebSocket backend sets timeout tunnel", ["ping-pong"],
        "without timeout tunnel, the timeout client/server that are set apply to an upgraded connection and cut it when quiet that long; traffic either way restarts the timer (HAProxy manual, timeout tunnel)";
    HaproxyTimeoutsUnset = "haproxy-timeouts-unset", "haproxy", "client and server timeouts bound dead peers", [],
        "with no timeout client/server an idle connection has no bound: a peer that vanished without closing (lost coverage, a crashed host) holds it and its maxconn slot forever; HAProxy warns at start (HAProxy manual, timeout client)";
    HaproxyTcpModeHttp = "haproxy-tcp-mode-http", "haproxy", "a frontend that routes on HTTP runs in HTTP mode", [],
        "without mode http a proxy runs in TCP mode: http-request rules are ignored (HAProxy warns at start) and HTTP fetches (hdr(Upgrade), path_beg) read only the first packet, so a request head split across packets misses the WebSocket route (seen on HAProxy 2.6)";
    HaproxyNbproc = "haproxy-nbproc", "haproxy", "no nbproc (removed in HAProxy 2.5)", [],
        "HAProxy 2.5 removed nbproc: a config with it does not start (haproxy -c: fatal error, seen on 2.6.12); threads replace it";
    HaproxyTimeoutServer = "haproxy-timeout-server", "haproxy", "event-stream backend's timeout server above the heartbeat", ["ping-pong"],
        "an event stream is one response that never ends: timeout server bounds the silence between its events";
    HaproxyHttpClose = "haproxy-http-close", "haproxy", "no forced close on stream backends", ["connection-reuse"],
        "option httpclose / http-server-close close a connection after each response: every poll and reconnect pays a new connection";
    HaproxyMaxconn = "haproxy-maxconn", "haproxy", "maxconn holds the connections", ["ulimit-n"],
        "global maxconn (derived from ulimit -n when unset) caps connections; HAProxy sizes its fd limit at 2 per connection";
    CaddyEncodeStream = "caddy-encode-stream", "caddy", "event stream route not encoded", ["proxy-config"],
        "from Caddy 2.7 encode holds an event stream's head until its first event and, once it compresses, events in the compressor (caddy issue 6293, reported on 2.7.6 and 2.8.0-beta.1); Caddy 2.6 passed a flushed stream through uncompressed and unheld (seen on 2.6.2): no finding there";
    CaddyStreamCloseDelay = "caddy-stream-close-delay", "caddy", "a reload does not close every WebSocket", [],
        "stream_close_delay defaults to 0: a config reload closes every proxied WebSocket at once and all clients reconnect together (Caddy >= 2.7)";
    CaddyStreamTimeout = "caddy-stream-timeout", "caddy", "stream_timeout does not close WebSockets early", [],
        "reverse_proxy's stream_timeout (Caddy >= 2.7; unset: no limit) closes an upgraded or streaming connection that long after it opened, whatever its traffic: a heartbeat does not reset it, so every client reconnects at that age";
    IngressReadTimeout = "ingress-read-timeout", "ingress", "proxy-read-timeout above the heartbeat", ["ping-pong"],
        "ingress-nginx proxy-read-timeout (default 60 seconds) is nginx's proxy_read_timeout: a stream quiet that long is cut; WebSocket frames either way reset it, an event stream only by the server's events";
    IngressSendTimeout = "ingress-send-timeout", "ingress", "proxy-send-timeout is a number of seconds", [],
        "ingress-nginx proxy-send-timeout (default 60) sets nginx's proxy_send_timeout: it bounds a write the upstream does not take, not silence, so a quiet stream is not cut by it (measured on nginx, docs/lint.md)";
    IngressProxyBuffering = "ingress-proxy-buffering", "ingress", "event stream not buffered", ["proxy-config"],
        "proxy-buffering: on buffers responses (ingress-nginx default off)";
    TraefikCompressStream = "traefik-compress-stream", "traefik", "event stream not compressed by Traefik", ["proxy-config"],
        "the compress middleware compresses every type but gRPC unless excludedContentTypes lists text/event-stream, and waits for its minimum body size (1024 bytes) before it sends (doc.traefik.io, middlewares/http/compress)";
    TraefikBufferingStream = "traefik-buffering-stream", "traefik", "event stream not held by the buffering middleware", ["proxy-config"],
        "with maxResponseBodyBytes (or a retryExpression) the buffering middleware holds the response to measure it; an event stream never ends, so it is held, then refused past the limit (doc.traefik.io, middlewares/http/buffering)";
    TraefikUnroutedService = "traefik-unrouted-service", "traefik", "every service is routed", [],
        "Traefik sends requests to a service only from a router in http.routers (rule, service); a rule written under a service is ignored (doc.traefik.io, routing/routers)";
    IstioTcpIdleTimeout = "istio-tcp-idle-timeout", "istio", "DestinationRule tcp.idleTimeout above the heartbeat", ["ping-pong"],
        "connectionPool.tcp.idleTimeout (1h unless set; 0s disables it) closes a TCP connection with no bytes either way for that long (Istio DestinationRule reference): a quiet WebSocket through the sidecar is cut unless a heartbeat comes sooner";
    IstioStreamIdleTimeout = "istio-stream-idle-timeout", "istio", "EnvoyFilter stream_idle_timeout above the heartbeat", ["ping-pong"],
        "Envoy's stream_idle_timeout (5 min in Envoy; 0s disables it) closes a stream with no activity, upgraded WebSockets included (Envoy timeouts FAQ): an EnvoyFilter that sets it on a sidecar's connection manager cuts a quiet stream before a slower heartbeat";
    TraefikStickyPolling = "traefik-sticky-polling", "traefik", "polling sticks to one server", [],
        "a loadBalancer service spreads requests over its servers; long-polling sessions (socket.io, SockJS) keep state on one of them unless loadBalancer.sticky.cookie is set";
    IngressSnippet = "ingress-snippet", "ingress", "no snippet annotation the controller rejects", [],
        "ingress-nginx rejects configuration-snippet and server-snippet annotations unless the controller sets allow-snippet-annotations: true, the default false since controller v1.9.0 (kubernetes.github.io/ingress-nginx, ConfigMap allow-snippet-annotations)";
    IngressConfigmapSeconds = "ingress-configmap-seconds", "ingress", "controller timeouts in whole seconds", [],
        "ingress-nginx reads proxy-read-timeout, proxy-send-timeout and upstream-keepalive-timeout from its ConfigMap as integers; a value with a unit (3600s, the F5 NGINX Ingress Controller's syntax) fails to decode, the controller logs a warning and keeps the default 60 s (ingress-nginx ReadConfig, kubernetes.github.io/ingress-nginx ConfigMap reference)";
    IngressConfigmapReadTimeout = "ingress-configmap-read-timeout", "ingress", "controller-wide proxy-read-timeout above the heartbeat", ["ping-pong"],
        "the controller ConfigMap's proxy-read-timeout (default 60) is nginx's proxy_read_timeout for every Ingress without its own annotation: a stream quiet that long is cut";
    IngressAffinity = "ingress-affinity", "ingress", "polling sticks to one pod", [],
        "long-polling sessions (socket.io, SockJS) keep state on one pod: without affinity: cookie a poll lands elsewhere and the session is unknown";
}

/// Retired rule ids: `--skip` still accepts them (scripts keep working), nothing reports
/// them. `caddy-flush-interval`: Caddy flushes text/event-stream and bodies of unknown
/// length at once whatever `flush_interval` says (seen on 2.6.2), so a positive value
/// never held a stream. `nginx-sse-gzip`: with buffering off nginx gzips each event with
/// a sync flush and sends it at once (seen on 1.22.1: events every 500 ms arrived every
/// 500 ms, compressed); with buffering on, `nginx-sse-buffering` already says what holds
/// them (docs/lint.md).
/// `haproxy-compression`: HAProxy 2.6 compresses an event stream and still delivers each
/// event at once (seen: every event decodable on arrival).
pub const RETIRED: &[&str] = &[
    "caddy-flush-interval",
    "nginx-sse-gzip",
    "haproxy-compression",
    "haproxy-client-fin",
];

impl Rule {
    /// What `explain` shows of it (a tripping config and its fixed twin: docs/lint.md).
    pub fn info(&self) -> crate::findings::CheckInfo {
        crate::findings::CheckInfo {
            id: self.id.into(),
            kind: format!("{} lint rule", self.product),
            title: self.title.into(),
            why: self.basis.into(),
            fix: String::new(),
            evidence: crate::findings::evidence_ids(self.evidence),
            see: "a tripping config and its fixed twin: docs/lint.md; run it: rtcheck lint PATH"
                .into(),
        }
    }
}

/// The row of a rule (its variant is its index).
pub fn rule(id: RuleId) -> &'static Rule {
    &RULES[id as usize]
}

/// Which rules applied to at least one block, and how many blocks.
#[derive(Debug, Default)]
pub struct Applied(pub BTreeMap<RuleId, usize>);

impl Applied {
    pub fn mark(&mut self, id: RuleId) {
        *self.0.entry(id).or_insert(0) += 1;
    }
}

/// What one rule found at one place.
pub struct Hit<'a> {
    pub id: RuleId,
    pub status: Status,
    pub at: &'a Node,
    pub block: String,
    pub observed: String,
    pub expected: String,
    pub fix: &'a str,
    /// The lines to add or change, in the product's syntax.
    pub lines: Vec<String>,
}

pub fn finding(h: Hit) -> Finding {
    let r = rule(h.id);
    Finding {
        id: h.id.as_str().to_string(),
        title: r.title.to_string(),
        status: h.status,
        observed: format!("{}:{} ({}): {}", h.at.file, h.at.line, h.block, h.observed),
        expected: h.expected,
        rule: r.basis.to_string(),
        reason: None,
        evidence: r
            .evidence
            .iter()
            .map(|e| crate::evidence::reference(e))
            .collect(),
        fix: Fix {
            summary: format!("{} (in {})", h.fix, h.block),
            runtime: vec![],
            persistent: h.lines,
        },
        verify: None,
        verification: None,
        numbers: BTreeMap::new(),
        location: Some(SourceLocation {
            file: h.at.file.to_string(),
            line: h.at.line,
            block: Some(h.block),
        }),
    }
}

/// One Pass per rule that applied and found nothing; `--skip` ids shown as skipped.
pub fn finish(mut out: Vec<Finding>, applied: Applied, skip: &[String]) -> Vec<Finding> {
    let hit: BTreeSet<String> = out.iter().map(|f| f.id.clone()).collect();
    for (id, n) in applied.0 {
        if hit.contains(id.as_str()) {
            continue;
        }
        let r = rule(id);
        out.push(Finding {
            id: id.as_str().to_string(),
            title: r.title.to_string(),
            status: Status::Pass,
            observed: format!(
                "{n} block{} checked, none trips it",
                if n == 1 { "" } else { "s" }
            ),
            expected: r.title.to_string(),
            rule: r.basis.to_string(),
            reason: None,
            evidence: r
                .evidence
                .iter()
                .map(|e| crate::evidence::reference(e))
                .collect(),
            fix: Fix::default(),
            verify: None,
            verification: None,
            numbers: BTreeMap::new(),
            location: None,
        });
    }
    for f in out.iter_mut().filter(|f| skip.contains(&f.id)) {
        f.status = Status::Skip;
        f.reason = Some("skipped by request (--skip)".into());
    }
    out
}

/// An nginx time ("60", "60s", "1m30s", "500ms", "1h"): None when nginx would not take it
/// (`super::time::nginx` says why).
pub fn nginx_time(s: &str) -> Option<Duration> {
    super::time::nginx(s).ok()
}

/// A HAProxy time: a bare number is milliseconds.
pub fn haproxy_time(s: &str) -> Option<Duration> {
    super::time::haproxy(s).ok()
}

/// Caddy durations (Go's syntax plus `d`); a bare number is nanoseconds, -1 is "at once".
pub fn caddy_time(s: &str) -> Option<Duration> {
    super::time::caddy(s).ok()
}

/// Seconds as a config value: "3600s".
pub fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64().ceil() as u64)
}

/// Who resets an idle timeout on a stream of this kind (nginx and HAProxy alike: a tunnel's
/// timer restarts on traffic in either direction; measured for nginx, docs/lint.md).
pub fn resets(kind: super::Stream) -> &'static str {
    match kind {
        super::Stream::Websocket => {
            "frames either way reset it: the server's pings, or the client's"
        }
        _ => "only the server's events reset it: an event stream has no client direction",
    }
}

/// The expectation when no heartbeat is declared: the heartbeat this timeout needs.
pub fn no_heartbeat(t: Duration, kind: super::Stream) -> String {
    let from = match kind {
        super::Stream::Websocket => "from the server (or pings from the client)",
        _ => "from the server",
    };
    format!(
        "holds only with a heartbeat under {} {from}; none declared (--ping, the profile's ping:)",
        secs(t)
    )
}

/// A library's route (its path names one, or `--app-protocol`) with no declared ping:
/// its documented heartbeat is the one an idle timeout must hold (Socket.IO's 25 s
/// ping: a 20 s timeout cuts every quiet client before it). None: no library;
/// Some(None): the timeout holds it twice over; else the status, the expectation and
/// the timeout to set.
pub fn library_need(
    t: Duration,
    path: &str,
    given: Option<rtcheck_wire::appproto::AppProtocol>,
) -> Option<Option<(Status, String, Duration)>> {
    let (beat, why) = super::known::library_heartbeat(path, given)?;
    let status = if t <= beat {
        Status::Fail
    } else if t < beat * 2 {
        Status::Warn
    } else {
        return Some(None);
    };
    let expected = match status {
        Status::Fail => format!(
            "above {why}: the proxy cuts a quiet connection before the library's heartbeat, and every client reconnects"
        ),
        _ => format!("at least twice {why}, so one late heartbeat is not cut"),
    };
    Some(Some((status, expected, above(beat))))
}

/// The timeout to recommend above a heartbeat: twice it, and at least ten seconds more.
pub fn above(ping: Duration) -> Duration {
    (ping * 2).max(ping + Duration::from_secs(10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_unique_and_its_evidence_exists() {
        let mut ids = BTreeSet::new();
        for r in RULES {
            assert!(ids.insert(r.id), "{} twice", r.id);
            assert!(r.id.starts_with(r.product), "{}", r.id);
            for e in r.evidence {
                assert!(
                    crate::evidence::store().get(e).is_some(),
                    "{}: evidence {e}",
                    r.id
                );
            }
            assert!(!r.basis.is_empty());
        }
    }

    #[test]
    fn a_rule_id_is_its_rows_index_and_sorts_by_its_text() {
        assert_eq!(RuleId::ALL.len(), RULES.len());
        for (i, id) in RuleId::ALL.iter().enumerate() {
            assert_eq!((*id as usize, rule(*id).id), (i, id.as_str()));
        }
        let mut a = Applied::default();
        a.mark(RuleId::NginxWsUpgrade);
        a.mark(RuleId::CaddyEncodeStream);
        a.mark(RuleId::NginxWsUpgrade);
        let got: Vec<(&str, usize)> = a.0.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        assert_eq!(got, [("caddy-encode-stream", 1), ("nginx-ws-upgrade", 2)]);
    }

    #[test]
    fn times_in_each_products_syntax() {
        assert_eq!(nginx_time("60"), Some(Duration::from_secs(60)));
        assert_eq!(nginx_time("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(nginx_time("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(nginx_time("x"), None);
        assert_eq!(haproxy_time("5000"), Some(Duration::from_secs(5)));
        assert_eq!(haproxy_time("30s"), Some(Duration::from_secs(30)));
        assert_eq!(caddy_time("-1"), Some(Duration::ZERO));
        assert_eq!(caddy_time("100ms"), Some(Duration::from_millis(100)));
    }
}
