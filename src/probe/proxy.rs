//! Which proxy answered (from `Server` / `Via`), and the fix for each check in that
//! proxy's own configuration language.
use super::wire::Head;
use crate::findings::Fix;

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
            _ => None,
        }
    }
}

/// First match over every response head seen on the path.
pub fn identify<'a>(heads: impl IntoIterator<Item = &'a Head>) -> Proxy {
    for h in heads {
        let server = h.header("server").unwrap_or("").to_ascii_lowercase();
        let via = h.header("via").unwrap_or("").to_ascii_lowercase();
        let found = if server.starts_with("nginx") || via.contains("nginx") {
            Proxy::Nginx
        } else if server.contains("caddy") || via.contains("caddy") {
            Proxy::Caddy
        } else if server.contains("haproxy") || via.contains("haproxy") {
            Proxy::Haproxy
        } else if server.starts_with("awselb") {
            Proxy::AwsAlb
        } else if server == "cloudflare" {
            Proxy::Cloudflare
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

pub fn heartbeat() -> Fix {
    fix(
        "ping (WebSocket) or send an SSE comment every 20-30 s, shorter than every idle timeout on the path",
        &["server: WebSocket ping every 20-30 s, pong wait above it; SSE `: ping` comment every 20-30 s"],
    )
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
        Proxy::Caddy => fix("keep `encode` off the event-stream route", &[]),
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

pub fn origin() -> Fix {
    fix(
        "check Origin against an allow-list in the WebSocket handshake and answer 403 otherwise (or pass --public if the endpoint is meant for any site)",
        &["nginx (location): if ($http_origin !~* ^https://app\\.example\\.com$) { return 403; }"],
    )
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
        let any = idle(Proxy::Unknown).persistent.join("\n");
        assert!(
            any.contains("proxy_read_timeout") && any.contains("timeout tunnel"),
            "{any}"
        );
    }
}
