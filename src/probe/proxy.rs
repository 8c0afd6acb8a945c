//! Which proxy answered (from `Server` / `Via`), and the fix for each check in that
//! proxy's own configuration language.
use crate::findings::Fix;
use rtcheck_wire::http::response::Head;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Proxy {
    Nginx,
    Haproxy,
    Caddy,
    /// AWS Application Load Balancer (`Server: awselb/2.0`).
    #[value(name = "aws-alb")]
    AwsAlb,
    Cloudflare,
    /// Amazon CloudFront (`X-Amz-Cf-Id`, `Via: ... (CloudFront)`).
    Cloudfront,
    /// Fastly (or another Varnish edge: `X-Served-By: cache-...`).
    Fastly,
    /// Google Cloud load balancer (`Via: 1.1 google`).
    #[value(name = "google-lb")]
    #[serde(rename = "google-lb")]
    GoogleLb,
    Unknown,
}

impl Proxy {
    pub fn name(self) -> &'static str {
        match self {
            Proxy::Nginx => "nginx",
            Proxy::Haproxy => "HAProxy",
            Proxy::Caddy => "Caddy",
            Proxy::AwsAlb => "AWS Application Load Balancer",
            Proxy::Cloudflare => "Cloudflare",
            Proxy::Cloudfront => "Amazon CloudFront",
            Proxy::Fastly => "Fastly",
            Proxy::GoogleLb => "Google Cloud load balancer",
            Proxy::Unknown => "unidentified proxy",
        }
    }

    /// A documented default idle timeout, with where it is written.
    pub fn known_idle_timeout(self) -> Option<(u32, &'static str)> {
        match self {
            Proxy::Nginx => Some((60, "nginx docs, proxy_read_timeout (default 60s)")),
            Proxy::AwsAlb => Some((
                60,
                "AWS docs, Application Load Balancers: connection idle timeout (default 60 s)",
            )),
            Proxy::Cloudflare => {
                Some((100, "Cloudflare docs, error 524: proxy read timeout 100 s"))
            }
            Proxy::GoogleLb => Some((
                30,
                "Google Cloud docs, backend service timeout (default 30 s)",
            )),
            _ => None,
        }
    }
}

/// The edge a response came through, from the headers only that edge adds (checked
/// before Server/Via: an edge in front of nginx forwards nginx's Server header).
fn edge(h: &Head) -> Option<Proxy> {
    let via = h.header("via").unwrap_or("").to_ascii_lowercase();
    let server = h.header("server").unwrap_or("").to_ascii_lowercase();
    if h.header("cf-ray").is_some() || server == "cloudflare" {
        Some(Proxy::Cloudflare)
    } else if h.header("x-amz-cf-id").is_some() || via.contains("cloudfront") {
        Some(Proxy::Cloudfront)
    } else if h
        .header("x-served-by")
        .is_some_and(|v| v.to_ascii_lowercase().contains("cache-"))
        || h.header("x-fastly-request-id").is_some()
    {
        Some(Proxy::Fastly)
    } else if via.split(',').any(|v| v.trim().ends_with(" google")) {
        Some(Proxy::GoogleLb)
    } else if server.starts_with("awselb") {
        Some(Proxy::AwsAlb)
    } else {
        None
    }
}

/// First match over every response head seen on the path: an edge's own headers, then
/// Server and Via.
pub fn identify<'a>(heads: impl IntoIterator<Item = &'a Head> + Clone) -> Proxy {
    if let Some(p) = heads.clone().into_iter().find_map(edge) {
        return p;
    }
    for h in heads {
        let server = h.header("server").unwrap_or("").to_ascii_lowercase();
        let via = h.header("via").unwrap_or("").to_ascii_lowercase();
        let found = if server.starts_with("nginx") || via.contains("nginx") {
            Proxy::Nginx
        } else if server.contains("caddy") || via.contains("caddy") {
            Proxy::Caddy
        } else if server.contains("haproxy") || via.contains("haproxy") {
            Proxy::Haproxy
        } else {
            continue;
        };
        return found;
    }
    Proxy::Unknown
}

fn fix(summary: &str, lines: &[&str]) -> Fix {
    Fix {
        summary: summary.to_string(),
        runtime: Vec::new(),
        persistent: lines.iter().map(|s| s.to_string()).collect(),
    }
}

/// Not identified: nginx's fix, then HAProxy's and Caddy's lines.
fn any_proxy(f: fn(Proxy) -> Fix) -> Fix {
    let mut out = f(Proxy::Nginx);
    out.summary = format!(
        "{} (proxy not identified from Server/Via: lines for nginx, HAProxy and Caddy; --proxy names it)",
        out.summary
    );
    for p in [Proxy::Haproxy, Proxy::Caddy] {
        let g = f(p);
        if g.persistent.is_empty() {
            out.persistent.push(format!("{}: {}", p.name(), g.summary));
        } else {
            out.persistent.extend(g.persistent);
        }
    }
    out
}

const NGINX_UPGRADE: [&str; 4] = [
    "nginx (http): map $http_upgrade $connection_upgrade { default upgrade; '' close; }",
    "nginx (location): proxy_http_version 1.1;",
    "nginx (location): proxy_set_header Upgrade $http_upgrade;",
    "nginx (location): proxy_set_header Connection $connection_upgrade;",
];

pub fn upgrade(p: Proxy) -> Fix {
    match p {
        Proxy::Unknown => any_proxy(upgrade),
        Proxy::Nginx => fix(
            "forward the Upgrade and Connection headers over HTTP/1.1 to the backend",
            &NGINX_UPGRADE,
        ),
        Proxy::Haproxy => fix(
            "HAProxy forwards WebSocket upgrades in mode http by itself: remove any `option httpclose`/`http-request del-header Upgrade`, and set `timeout tunnel`",
            &["haproxy (defaults): timeout tunnel 1h"],
        ),
        Proxy::Caddy => fix(
            "Caddy's reverse_proxy upgrades WebSocket by itself: remove any header_up that drops Connection or Upgrade",
            &["caddy: reverse_proxy /ws* 127.0.0.1:8080"],
        ),
        _ => fix(
            &format!("enable WebSocket on the {} listener", p.name()),
            &[],
        ),
    }
}

pub fn buffering(p: Proxy) -> Fix {
    match p {
        Proxy::Unknown => any_proxy(buffering),
        Proxy::Nginx => fix(
            "turn response buffering off on the event-stream location (or have the backend send X-Accel-Buffering: no and do not ignore it)",
            &[
                "nginx (location): proxy_buffering off;",
                "nginx (location): proxy_cache off;",
                "nginx (location): gzip off;",
                "nginx: remove `proxy_ignore_headers X-Accel-Buffering`",
            ],
        ),
        Proxy::Haproxy => fix(
            "HAProxy streams responses; remove text/event-stream from `compression type`",
            &["haproxy: compression type text/html text/plain   # not text/event-stream"],
        ),
        Proxy::Caddy => fix(
            "flush every write on the event-stream route and keep `encode` off it",
            &["caddy: reverse_proxy /sse* 127.0.0.1:8080 { flush_interval -1 }"],
        ),
        _ => fix(
            &format!("disable response buffering and compression for text/event-stream on the {}", p.name()),
            &[],
        ),
    }
}

pub fn idle(p: Proxy) -> Fix {
    match p {
        Proxy::Unknown => any_proxy(idle),
        Proxy::Nginx => fix(
            "raise the proxy's read timeout above the server's heartbeat interval (nginx default 60 s), or send a heartbeat more often",
            &[
                "nginx (location): proxy_read_timeout 3600s;",
                "nginx (location): proxy_send_timeout 3600s;",
            ],
        ),
        Proxy::Haproxy => fix(
            "set `timeout tunnel` for WebSocket and a `timeout server`/`timeout client` longer than the heartbeat for SSE",
            &[
                "haproxy (defaults): timeout tunnel 1h",
                "haproxy (defaults): timeout server 60s   # > SSE heartbeat",
                "haproxy (defaults): timeout client 60s",
            ],
        ),
        Proxy::Caddy => fix(
            "Caddy keeps proxied streams open by default: look for `stream_timeout` in reverse_proxy",
            &[],
        ),
        _ => fix(
            &format!(
                "send a heartbeat more often than the {} idle timeout{}",
                p.name(),
                p.known_idle_timeout()
                    .map(|(s, src)| format!(" ({s} s; {src})"))
                    .unwrap_or_default()
            ),
            &[],
        ),
    }
}

/// The heartbeat rhythm of evidence `ping-timing` (production 20-30 s).
pub fn heartbeat() -> Fix {
    let n = |v| crate::evidence::num("ping-timing", v);
    let every = format!("{}-{} s", n("production_min"), n("production_max"));
    Fix {
        summary: format!("ping (WebSocket) or send an SSE comment every {every}, shorter than every idle timeout on the path"),
        runtime: Vec::new(),
        persistent: vec![format!("server: WebSocket ping every {every}, pong wait above it; SSE `: ping` comment every {every}")],
    }
}

pub fn resume() -> Fix {
    fix(
        "give every event an id, keep a ring of recent events, replay after Last-Event-ID and send a gap marker when the ring no longer holds it",
        &["server: `id: <seq>` on every event; ring = longest disconnect x rate"],
    )
}

pub fn compression(p: Proxy) -> Fix {
    match p {
        Proxy::Unknown => any_proxy(compression),
        Proxy::Nginx => fix(
            "do not compress text/event-stream: gzip holds events until its buffer fills",
            &["nginx (location): gzip off;"],
        ),
        Proxy::Haproxy => fix("remove text/event-stream from `compression type`", &[]),
        Proxy::Caddy => fix(
            "keep `encode` off the event-stream route: Caddy's gzip holds the events until its buffer fills",
            &["caddy: handle /sse* { reverse_proxy 127.0.0.1:8080 }   # no `encode` in this handle"],
        ),
        _ => fix(
            &format!(
                "disable compression of text/event-stream on the {}",
                p.name()
            ),
            &[],
        ),
    }
}

pub fn http2(p: Proxy) -> Fix {
    match p {
        Proxy::Unknown => any_proxy(http2),
        Proxy::Nginx => fix(
            "offer HTTP/2 at the TLS edge (ALPN h2)",
            &["nginx >= 1.25.1 (server): http2 on;   older: listen 443 ssl http2;"],
        ),
        Proxy::Haproxy => fix(
            "offer h2 in ALPN on the TLS bind",
            &["haproxy (frontend): bind :443 ssl crt /etc/haproxy/site.pem alpn h2,http/1.1"],
        ),
        Proxy::Caddy => fix(
            "Caddy serves h2 by default: check `protocols` in the global options",
            &[],
        ),
        _ => fix(&format!("enable HTTP/2 on the {}", p.name()), &[]),
    }
}

/// The Origin check belongs to the application; a proxy line only for the proxy found.
pub fn origin(p: Proxy) -> Fix {
    let mut lines = vec![
        "server: check Origin against an allow-list in the handshake (Node ws: verifyClient; gorilla: Upgrader.CheckOrigin; Python websockets: origins=[...])".to_string(),
    ];
    match p {
        Proxy::Nginx => lines.push(
            "nginx (location): if ($http_origin !~* ^https://app\\.example\\.com$) { return 403; }".into(),
        ),
        Proxy::Haproxy => lines.push(
            "haproxy (frontend): http-request deny if { req.hdr(origin) -m found } !{ req.hdr(origin) -m str https://app.example.com }".into(),
        ),
        Proxy::Caddy => lines.push(
            "caddy: @foreign not header Origin https://app.example.com  then  respond @foreign 403".into(),
        ),
        _ => {}
    }
    Fix {
        summary: "check Origin against an allow-list in the WebSocket handshake and answer 403 otherwise (or pass --public if the endpoint is meant for any site)".into(),
        runtime: Vec::new(),
        persistent: lines,
    }
}

/// `f`'s lines for the proxy found, or for nginx, HAProxy and Caddy when none was.
fn per_proxy(p: Proxy, f: &dyn Fn(Proxy) -> Vec<String>) -> Vec<String> {
    match p {
        Proxy::Unknown => [Proxy::Nginx, Proxy::Haproxy, Proxy::Caddy]
            .into_iter()
            .flat_map(f)
            .collect(),
        p => f(p),
    }
}

fn ok(code: Option<u16>) -> Option<u16> {
    code.filter(|c| *c == 101 || (200..300).contains(c))
}

/// The fix an answer's status points to (404, 502, 403...), in the language of the proxy
/// found; `direct`: what the endpoint answered without the proxy (`--direct`), when asked.
pub fn status(p: Proxy, code: u16, kind: super::Kind, direct: Option<u16>) -> Fix {
    let ws = kind == super::Kind::WebSocket;
    let d_ok = ok(direct);
    let direct_says = match direct {
        Some(d) => format!(" (direct: {d})"),
        None => String::new(),
    };
    let (summary, lines): (String, Vec<String>) = match code {
        200..=299 if ws => (
            format!("the path answered the upgrade itself with HTTP {code} (a page, a cache or a catch-all route): the Upgrade headers never reached the WebSocket server"),
            upgrade(p).persistent,
        ),
        400 | 426 if ws => (
            format!("HTTP {code}: the server saw a plain request, not an upgrade: the path dropped Upgrade/Connection{direct_says}"),
            upgrade(p).persistent,
        ),
        401 => ("the endpoint asks for credentials: pass them with -H 'Authorization: Bearer ...' or -H 'Cookie: ...' (never printed)".into(), vec![]),
        403 if d_ok.is_some() => (
            format!("the application accepts the request directly{direct_says} but refuses it through the proxy: the proxy changes Host or Origin and the application's Host/Origin check refuses it"),
            per_proxy(p, &|q| vec![match q {
                Proxy::Nginx => "nginx (location): proxy_set_header Host $host;   # default is the upstream's address ($proxy_host)".into(),
                Proxy::Haproxy => "haproxy: remove any `http-request set-header Host` / `del-header Origin` (HAProxy forwards them unchanged)".into(),
                _ => "caddy: remove any `header_up Host` / `header_up -Origin` in reverse_proxy (Caddy forwards them unchanged)".into(),
            }]),
        ),
        403 => (
            format!("refused (403) by the application or an access rule on the proxy: its Origin/Host allow-list or credentials{}", if direct.is_some() { direct_says.clone() } else { "; --direct URL tells the application from the proxy".into() }),
            vec![],
        ),
        404 if d_ok.is_some() => (
            format!("the application serves this path directly{direct_says}, the proxy has no route to it: its location/route prefix does not match or strips the wrong part"),
            per_proxy(p, &|q| vec![match q {
                Proxy::Nginx => "nginx: location /events { proxy_pass http://127.0.0.1:8080; }   # a URI after the address (e.g. /) replaces the prefix".into(),
                Proxy::Haproxy => "haproxy (frontend): use_backend app if { path_beg /events }".into(),
                _ => "caddy: handle /events* { reverse_proxy 127.0.0.1:8080 }   # handle_path strips the prefix".into(),
            }]),
        ),
        404 => (
            format!("no route for this path (404){direct_says}: on the proxy (location, handle, use_backend) or in the application; check the URL"),
            vec![],
        ),
        405 => ("the route exists but refuses GET (405): the URL is not the stream's".into(), vec![]),
        301 | 302 | 303 | 307 | 308 => ("the URL redirects: probe the URL it redirects to (see Location)".into(), vec![]),
        502..=504 => (
            format!(
                "the proxy could not get an answer from the backend (HTTP {code}: {}){}",
                match code {
                    502 => "refused or broken upstream connection",
                    503 => "no backend available",
                    _ => "the backend did not answer in time",
                },
                if d_ok.is_some() { format!("; the application answers directly{direct_says}: the proxy's upstream address is wrong or unreachable from the proxy") } else { ": check the backend runs and the proxy's upstream address".into() }
            ),
            per_proxy(p, &|q| vec![match q {
                Proxy::Nginx => "nginx (location): proxy_pass http://HOST:PORT;   # the address the application listens on, reachable from nginx".into(),
                Proxy::Haproxy => "haproxy (backend): server app HOST:PORT check".into(),
                Proxy::Caddy => "caddy: reverse_proxy HOST:PORT".into(),
                _ => String::new(),
            }]),
        ),
        c => (
            format!("HTTP {c} instead of the stream{direct_says}: see the proxy's and the application's logs for this request"),
            vec![],
        ),
    };
    Fix {
        summary,
        runtime: Vec::new(),
        persistent: lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn identifies_from_server_and_via() {
        assert_eq!(
            identify([&head(&[("server", "nginx/1.22.1")])]),
            Proxy::Nginx
        );
        assert_eq!(identify([&head(&[("via", "1.1 Caddy")])]), Proxy::Caddy);
        assert_eq!(
            identify([&head(&[("server", "awselb/2.0")])]),
            Proxy::AwsAlb
        );
        assert_eq!(
            identify([&head(&[]), &head(&[("server", "cloudflare")])]),
            Proxy::Cloudflare
        );
        assert_eq!(identify([&head(&[("server", "rtcheck")])]), Proxy::Unknown);
        // Hop fingerprints win over the origin's Server header they pass on.
        let cf = head(&[("server", "nginx"), ("cf-ray", "8a1b-AMS")]);
        assert_eq!(identify([&cf]), Proxy::Cloudflare);
        let amz = head(&[("x-amz-cf-id", "abc"), ("server", "nginx")]);
        assert_eq!(identify([&amz]), Proxy::Cloudfront);
        let fastly = head(&[("x-served-by", "cache-ams21-AMS")]);
        assert_eq!(identify([&fastly]), Proxy::Fastly);
        let g = head(&[("via", "1.1 google")]);
        assert_eq!(identify([&g]), Proxy::GoogleLb);
        assert_eq!(
            identify([&head(&[("via", "1.1 googlebot")])]),
            Proxy::Unknown
        );
        // The fix follows the status, in the language of the proxy found.
        use super::super::Kind;
        let f = status(Proxy::Caddy, 404, Kind::Sse, Some(200));
        assert!(f.summary.contains("the proxy has no route"), "{f:?}");
        assert!(f.persistent.iter().all(|l| l.starts_with("caddy")), "{f:?}");
        let f = status(Proxy::Nginx, 403, Kind::WebSocket, Some(101));
        assert!(
            f.persistent[0].contains("proxy_set_header Host $host"),
            "{f:?}"
        );
        assert!(status(Proxy::Nginx, 403, Kind::WebSocket, None)
            .persistent
            .is_empty());
        let f = status(Proxy::Unknown, 502, Kind::Sse, None);
        assert_eq!(f.persistent.len(), 3, "{f:?}");
        assert!(status(Proxy::Haproxy, 426, Kind::WebSocket, None)
            .summary
            .contains("Upgrade"));
        assert!(status(Proxy::Nginx, 200, Kind::WebSocket, None)
            .summary
            .contains("answered the upgrade itself"));
        // The Origin check is the application's; a proxy line only for the proxy found.
        assert_eq!(origin(Proxy::Unknown).persistent.len(), 1);
        assert!(origin(Proxy::Caddy).persistent[1].starts_with("caddy"));
        let any = idle(Proxy::Unknown).persistent.join("\n");
        assert!(
            any.contains("proxy_read_timeout") && any.contains("timeout tunnel"),
            "{any}"
        );
    }
}
