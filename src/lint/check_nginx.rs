//! nginx rules. A directive's effective value is its nearest one going out from the
//! location (location, server, http), nginx's inheritance; `proxy_set_header` is
//! inherited only by a block that sets none itself.
use super::classify::{at, block, classify, report, Route};
use super::rules::{above, finding, nginx_time, no_heartbeat, resets, secs, Applied, Hit, RuleId};
use super::version::at_least;
use super::{Config, Node, Sink, Stream, Workload};
use crate::findings::{Finding, Status};
use std::time::Duration;

/// The innermost directive `name` in the chain of blocks (outermost first).
fn effective<'a>(chain: &[&'a Node], name: &str) -> Option<&'a Node> {
    chain.iter().rev().find_map(|b| {
        b.children()
            .iter()
            .rev()
            .find(|d| d.name == name && d.block.is_none())
    })
}

/// All `name` directives of the innermost block that has any (array-directive inheritance).
fn effective_all<'a>(chain: &[&'a Node], name: &str) -> Vec<&'a Node> {
    for b in chain.iter().rev() {
        let v: Vec<&Node> = b.children().iter().filter(|d| d.name == name).collect();
        if !v.is_empty() {
            return v;
        }
    }
    vec![]
}

/// Every location (nested ones too) with its chain of enclosing blocks.
fn locations<'a>(nodes: &'a [Node], chain: &mut Vec<&'a Node>, out: &mut Vec<Vec<&'a Node>>) {
    for n in nodes.iter().filter(|n| n.block.is_some()) {
        chain.push(n);
        if n.name == "location" {
            out.push(chain.clone());
        }
        locations(n.children(), chain, out);
        chain.pop();
    }
}

/// A proxied location as a route: its Upgrade and streaming evidence, inherited values
/// included (what nginx applies to it).
fn route<'a>(ch: &[&'a Node], loc: &'a Node) -> Route<'a> {
    let named = |d: &&Node, h: &str| d.arg(0).is_some_and(|n| n.eq_ignore_ascii_case(h));
    let upgrade = effective_all(ch, "proxy_set_header")
        .into_iter()
        .find(|d| named(d, "upgrade"))
        .map(|d| format!("forwards Upgrade at {}", at(d)));
    let buffering = effective(ch, "proxy_buffering")
        .filter(|d| d.arg(0) == Some("off"))
        .map(|d| format!("proxy_buffering off at {}", at(d)));
    let accel = ["add_header", "proxy_set_header", "more_set_headers"]
        .iter()
        .flat_map(|n| effective_all(ch, n))
        .find(|d| {
            d.args
                .iter()
                .any(|a| a.to_ascii_lowercase().contains("x-accel-buffering"))
        })
        .map(|d| format!("sets X-Accel-Buffering at {}", at(d)));
    // A read timeout far above the default holds long responses (an upgrade aside).
    let long_read = effective(ch, "proxy_read_timeout")
        .filter(|_| upgrade.is_none())
        .filter(|d| {
            d.arg(0)
                .and_then(nginx_time)
                .is_some_and(|t| t >= LONG_READ)
        })
        .map(|d| format!("proxy_read_timeout {} at {}", d.args.join(" "), at(d)));
    let catch_all = loc.args == ["/"] || loc.arg(0).is_some_and(|a| a.starts_with('@'));
    Route {
        at: loc,
        label: loc.label(),
        path: loc.args.join(" "),
        upgrade,
        stream: buffering.or(accel).or(long_read),
        catch_all,
    }
}

/// "Well above" nginx's 60 s default read timeout: a stream's, not a slow page's.
const LONG_READ: Duration = Duration::from_secs(300);

pub fn check(c: &Config, w: &Workload, s: &mut Sink) {
    let root = Node {
        name: "main".into(),
        args: vec![],
        file: c.file.as_str().into(),
        line: 1,
        block: Some(c.nodes.clone()),
    };
    let mut all = Vec::new();
    locations(std::slice::from_ref(&root), &mut vec![], &mut all);
    let proxied: Vec<&Vec<&Node>> = all
        .iter()
        .filter(|ch| {
            ch.last()
                .is_some_and(|l| l.children().iter().any(|d| d.name == "proxy_pass"))
        })
        .collect();
    let routes: Vec<Route> = proxied
        .iter()
        .map(|ch| route(ch, ch.last().expect("a chain ends at its location")))
        .collect();
    let classes = classify(&routes, w);
    let maps = upgrade_maps(&root);
    for ((ch, r), carried) in proxied.iter().zip(&routes).zip(&classes) {
        s.routes.push(report(r, carried));
        let loc = r.at;
        for c in carried {
            let block = block(r, c);
            match c.transport {
                Stream::Websocket => {
                    ws_rules(ch, loc, &block, w, &maps, &mut s.out, &mut s.applied)
                }
                Stream::Sse => sse_rules(ch, loc, &block, w, &mut s.out, &mut s.applied),
                // Socket.IO's and SockJS's polls on an upgraded route are the handshake
                // before the upgrade, not the traffic: keepalive is not theirs to judge.
                Stream::Polling if r.upgrade.is_some() => {}
                Stream::Polling => {
                    keepalive_rule(&root, ch, loc, &block, w, &mut s.out, &mut s.applied)
                }
            }
        }
        // The timeouts once per route: an event stream's (server-only heartbeat) when it
        // carries one, else the WebSocket's.
        let timed = carried
            .iter()
            .find(|c| c.transport == Stream::Sse)
            .or_else(|| carried.iter().find(|c| c.transport == Stream::Websocket));
        if let Some(c) = timed {
            let block = block(r, c);
            timeout_rule(
                (ch, loc, c.transport),
                &r.path,
                &block,
                w,
                &mut s.out,
                &mut s.applied,
            );
            send_timeout_rule(ch, loc, &block, &mut s.out, &mut s.applied);
        }
        if let Some(c) = carried.first() {
            next_upstream(ch, &block(r, c), &mut s.out, &mut s.applied);
        }
    }
    if !proxied.is_empty() {
        worker_rules(&root, w, &mut s.out, &mut s.applied);
    }
}

fn next_upstream(ch: &[&Node], block: &str, out: &mut Vec<Finding>, applied: &mut Applied) {
    applied.mark(RuleId::NginxNextUpstream);
    if let Some(d) = effective(ch, "proxy_next_upstream")
        .filter(|d| d.args.iter().any(|a| a == "non_idempotent"))
    {
        out.push(finding(Hit {
            id: RuleId::NginxNextUpstream,
            status: Status::Fail,
            at: d,
            block: block.into(),
            observed: format!("proxy_next_upstream {}", d.args.join(" ")),
            expected: "a stream or poll is never resent to another server".into(),
            fix: "drop non_idempotent (or turn retries off for the stream)",
            lines: vec!["proxy_next_upstream off;".into()],
        }));
    }
}

/// Variables set by `map $http_upgrade $VAR { ... }` (the nginx docs' Connection form).
fn upgrade_maps(root: &Node) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        for c in n.children() {
            if c.name == "map" && c.arg(0) == Some("$http_upgrade") {
                out.extend(c.arg(1).map(String::from));
            }
            if c.block.is_some() && c.name != "map" {
                stack.push(c);
            }
        }
    }
    out
}

/// nginx proxies with HTTP/1.1 and keeps upstream connections alive by default from
/// mainline 1.29.7 and stable 1.30.0 (nginx.org/en/CHANGES).
const HTTP11_DEFAULT: &[u32] = &[1, 29, 7];

fn ws_rules(
    ch: &[&Node],
    loc: &Node,
    block: &str,
    w: &Workload,
    maps: &[String],
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    applied.mark(RuleId::NginxWsHttpVersion);
    let v = effective(ch, "proxy_http_version");
    let version = super::version::of(w, "nginx");
    let default_11 = version.is_some_and(|v| at_least(&v.parts, HTTP11_DEFAULT));
    let assumed = super::version::assumed(version, "nginx", "1.29.7");
    let ok = match v.and_then(|d| d.arg(0)) {
        Some(x) => x == "1.1",
        None => default_11,
    };
    if !ok {
        out.push(finding(Hit {
            id: RuleId::NginxWsHttpVersion,
            status: Status::Fail,
            at: v.unwrap_or(loc),
            block: block.into(),
            observed: v.map_or(
                format!("proxy_http_version not set: HTTP/1.0 to the upstream before nginx 1.29.7 / 1.30.0 ({assumed}); a server that checks the version refuses the upgrade"),
                |d| format!("proxy_http_version {}", d.args.join(" ")),
            ),
            expected: "proxy_http_version 1.1".into(),
            fix: "proxy with HTTP/1.1 so the upgrade reaches the server",
            lines: vec!["proxy_http_version 1.1;".into()],
        }));
    }
    applied.mark(RuleId::NginxWsUpgrade);
    let headers = effective_all(ch, "proxy_set_header");
    let value = |h: &str| {
        headers
            .iter()
            .find(|d| d.arg(0).is_some_and(|n| n.eq_ignore_ascii_case(h)))
            .and_then(|d| d.arg(1))
    };
    let upgrade_ok = value("Upgrade")
        .is_some_and(|v| v.contains("$http_upgrade") || v.eq_ignore_ascii_case("websocket"));
    let conn = value("Connection");
    let conn_ok = conn
        .is_some_and(|v| v.to_ascii_lowercase().contains("upgrade") || maps.iter().any(|m| v == m));
    if !(upgrade_ok && conn_ok) {
        let missing = match (upgrade_ok, conn_ok) {
            (false, false) => "Upgrade and Connection",
            (false, true) => "Upgrade",
            _ => "Connection",
        };
        // The inheritance trap: the server sets them, this location's own lines replace them.
        let own = loc.children().iter().any(|d| d.name == "proxy_set_header");
        let above = ch[..ch.len().saturating_sub(1)].iter().any(|b| {
            b.children().iter().any(|d| {
                d.name == "proxy_set_header"
                    && d.arg(0).is_some_and(|h| h.eq_ignore_ascii_case("upgrade"))
            })
        });
        let observed = match conn {
            Some(v) if upgrade_ok => format!("Connection is `{v}`, neither \"upgrade\" nor a map of $http_upgrade"),
            _ if own && above => format!("{missing} not passed: this location's own proxy_set_header lines replace the inherited ones"),
            _ => format!("{missing} not passed (nginx drops hop-by-hop headers: the server refuses the upgrade, 426)"),
        };
        let mut lines = vec!["proxy_set_header Upgrade $http_upgrade;".to_string()];
        lines.push(match maps.first() {
            Some(m) => format!("proxy_set_header Connection {m};"),
            None => "proxy_set_header Connection \"upgrade\";".into(),
        });
        out.push(finding(Hit {
            id: RuleId::NginxWsUpgrade, status: Status::Fail, at: loc, block: block.into(), observed,
            expected: "proxy_set_header Upgrade $http_upgrade and Connection \"upgrade\" (or a map of $http_upgrade)".into(),
            fix: "pass the upgrade headers in this location",
            lines,
        }));
    }
}

/// `proxy_read_timeout` on a stream: nginx closes the connection after that long with
/// nothing read. On an upgraded WebSocket frames either way reset it; on an event stream
/// only the server's events do (measured, docs/lint.md).
fn timeout_rule(
    (ch, loc, kind): (&[&Node], &Node, Stream),
    path: &str,
    block: &str,
    w: &Workload,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    const ID: RuleId = RuleId::NginxReadTimeout;
    const NAME: &str = "proxy_read_timeout";
    applied.mark(ID);
    let d = effective(ch, NAME);
    let value = d.and_then(|d| d.arg(0));
    let t = match value.map(|v| (v, nginx_time(v))) {
        None => Duration::from_secs(60),
        Some((_, Some(t))) => t,
        Some((v, None)) => {
            out.push(unreadable(ID, NAME, v, d.unwrap_or(loc), block));
            return;
        }
    };
    let shown = value.map_or(format!("{NAME} not set (default 60s)"), |v| {
        format!("{NAME} {v}")
    });
    let on_path = super::path::timeout(t, w, "nginx", kind);
    let (status, expected, want) = match (on_path, w.ping) {
        (Some(n), _) if n.status == Status::Pass => return,
        (Some(n), _) => (n.status, n.expected, n.want),
        (None, Some(p)) if t <= p => (
            Status::Fail,
            format!(
                "above the heartbeat ({}): a quiet stream is cut before its ping ({})",
                secs(p),
                resets(kind)
            ),
            above(p),
        ),
        (None, Some(_)) => return,
        (None, None) => match super::rules::library_need(t, path, w.app) {
            Some(None) => return,
            Some(Some(need)) => need,
            None => (
                Status::Warn,
                no_heartbeat(t, kind),
                t.max(Duration::from_secs(3600)),
            ),
        },
    };
    out.push(finding(Hit {
        id: ID,
        status,
        at: d.unwrap_or(loc),
        block: block.into(),
        observed: shown,
        expected,
        fix: "raise the timeout above the heartbeat (and keep the heartbeat)",
        lines: vec![format!("{NAME} {};", secs(want))],
    }));
}

fn unreadable(id: RuleId, name: &str, v: &str, at: &Node, block: &str) -> Finding {
    finding(Hit {
        id,
        status: Status::Fail,
        at,
        block: block.into(),
        observed: format!(
            "{name} `{v}`: {}",
            super::time::nginx(v)
                .err()
                .map_or_else(|| "not an nginx time".into(), |e| e.why("nginx"))
        ),
        expected: "a time nginx -t accepts, such as 3600s".into(),
        fix: "write the timeout as an nginx time",
        lines: vec![format!("{name} 3600s;")],
    })
}

/// `proxy_send_timeout` bounds one write to the upstream that does not complete (the
/// server not reading), not silence: a quiet stream is not cut by it (measured, nginx
/// 1.22: 2 s, a WebSocket and an event stream quiet for 7 s stayed open). Only a value
/// nginx cannot read is reported.
fn send_timeout_rule(
    ch: &[&Node],
    loc: &Node,
    block: &str,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    applied.mark(RuleId::NginxSendTimeout);
    let d = effective(ch, "proxy_send_timeout");
    if let Some(v) = d.and_then(|d| d.arg(0)).filter(|v| nginx_time(v).is_none()) {
        out.push(unreadable(
            RuleId::NginxSendTimeout,
            "proxy_send_timeout",
            v,
            d.unwrap_or(loc),
            block,
        ));
    }
}

fn sse_rules(
    ch: &[&Node],
    loc: &Node,
    block: &str,
    w: &Workload,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    applied.mark(RuleId::NginxSseBuffering);
    let buf = effective(ch, "proxy_buffering");
    if buf.and_then(|d| d.arg(0)) != Some("off") {
        let ignored = effective_all(ch, "proxy_ignore_headers").iter().any(|d| {
            d.args
                .iter()
                .any(|a| a.eq_ignore_ascii_case("X-Accel-Buffering"))
        });
        if ignored || !w.x_accel_buffering {
            let why = if ignored {
                "and proxy_ignore_headers drops the app's X-Accel-Buffering"
            } else {
                "and the app is not declared to send X-Accel-Buffering: no (--x-accel-buffering)"
            };
            out.push(finding(Hit {
                id: RuleId::NginxSseBuffering,
                status: Status::Fail,
                at: buf.unwrap_or(loc),
                block: block.into(),
                observed: format!(
                    "{} {why}",
                    buf.map_or("proxy_buffering on (the default)".into(), |d| format!(
                        "proxy_buffering {}",
                        d.args.join(" ")
                    ))
                ),
                expected: "proxy_buffering off: each event reaches the client when written".into(),
                fix: "turn buffering off for the event stream",
                lines: vec!["proxy_buffering off;".into(), "proxy_cache off;".into()],
            }));
        }
    }
}

fn worker_rules(root: &Node, w: &Workload, out: &mut Vec<Finding>, applied: &mut Applied) {
    // Only a main config (one with an events block) says what the workers are.
    let Some(events) = root.children().iter().find(|n| n.name == "events") else {
        return;
    };
    let need = w.connections.saturating_mul(2);
    let wp = root
        .children()
        .iter()
        .find(|d| d.name == "worker_processes");
    let workers: Option<u64> = match wp.and_then(|d| d.arg(0)) {
        None => Some(1),
        Some("auto") => None,
        Some(n) => n.parse().ok(),
    };
    let wc_node = events
        .children()
        .iter()
        .find(|d| d.name == "worker_connections");
    let wc: u64 = wc_node
        .and_then(|d| d.arg(0))
        .and_then(|v| v.parse().ok())
        .unwrap_or(512);
    applied.mark(RuleId::NginxWorkerConnections);
    let at = wc_node.unwrap_or(events);
    let block = "events".to_string();
    let holds = wc.saturating_mul(workers.unwrap_or(1));
    let wanted = need.div_ceil(workers.unwrap_or(1)).max(1024);
    let wp_text = workers.map_or("worker_processes auto (one per core)".to_string(), |n| {
        format!("{n} worker process{}", if n == 1 { "" } else { "es" })
    });
    if holds < need {
        let (status, expected) = match workers {
            Some(_) => (Status::Fail, format!("worker_connections x workers >= {need} (2 per proxied connection, {} connections)", w.connections)),
            None => (Status::Warn, format!("holds {need} only on a host with at least {} cores", need.div_ceil(wc.max(1)))),
        };
        out.push(finding(Hit {
            id: RuleId::NginxWorkerConnections,
            status,
            at,
            block: block.clone(),
            observed: format!(
                "worker_connections {wc}{} with {wp_text}: {holds} connections",
                if wc_node.is_none() { " (default)" } else { "" }
            ),
            expected,
            fix: "raise worker_connections",
            lines: vec![format!("worker_connections {wanted};")],
        }));
    }
    applied.mark(RuleId::NginxRlimitNofile);
    let rl = root
        .children()
        .iter()
        .find(|d| d.name == "worker_rlimit_nofile");
    let per_worker = need.div_ceil(workers.unwrap_or(1));
    let limit: Option<u64> = rl.and_then(|d| d.arg(0)).and_then(|v| v.parse().ok());
    let lines = vec![format!(
        "worker_rlimit_nofile {};",
        per_worker + per_worker / 10 + 64
    )];
    match limit {
        Some(l) if l >= per_worker => {}
        Some(l) => out.push(finding(Hit {
            id: RuleId::NginxRlimitNofile, status: Status::Fail, at: rl.unwrap_or(root), block: "main".into(),
            observed: format!("worker_rlimit_nofile {l}"),
            expected: format!(">= {per_worker} per worker (2 fds per connection, {} connections)", w.connections),
            fix: "raise the workers' open-files limit", lines,
        })),
        None => out.push(finding(Hit {
            id: RuleId::NginxRlimitNofile, status: Status::Warn, at: wp.unwrap_or(events), block: "main".into(),
            observed: "worker_rlimit_nofile not set: workers keep the service's limit (soft 1024 unless raised)".into(),
            expected: format!(">= {per_worker} per worker (2 fds per connection, {} connections)", w.connections),
            fix: "set the workers' open-files limit in nginx.conf", lines,
        })),
    }
}

/// A poll is one request each time: without upstream keepalive (an `upstream` block with
/// `keepalive`, HTTP/1.1 and `Connection ""`) every poll opens a new upstream connection.
fn keepalive_rule(
    root: &Node,
    ch: &[&Node],
    loc: &Node,
    block: &str,
    w: &Workload,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    applied.mark(RuleId::NginxUpstreamKeepalive);
    let Some(pass) = loc.children().iter().find(|d| d.name == "proxy_pass") else {
        return;
    };
    let target = pass.arg(0).unwrap_or("");
    let host = target
        .split("://")
        .nth(1)
        .unwrap_or(target)
        .split(['/', ':'])
        .next()
        .unwrap_or("");
    let mut stack = vec![root];
    let mut upstream = None;
    while let Some(n) = stack.pop() {
        for c in n.children().iter().filter(|c| c.block.is_some()) {
            if c.name == "upstream" && c.arg(0) == Some(host) {
                upstream = Some(c);
            }
            stack.push(c);
        }
    }
    let version = super::version::of(w, "nginx");
    // From 1.29.7 / 1.30.0 an upstream block keeps connections alive by default, over
    // HTTP/1.1 without `Connection: close`, unless the config says otherwise.
    let new_defaults = version.is_some_and(|v| at_least(&v.parts, HTTP11_DEFAULT));
    let keepalive = upstream.and_then(|u| u.children().iter().find(|d| d.name == "keepalive"));
    let version_set = effective(ch, "proxy_http_version").and_then(|d| d.arg(0));
    let http11 = version_set.map_or(new_defaults, |v| v == "1.1");
    let conn = effective_all(ch, "proxy_set_header").into_iter().find(|d| {
        d.arg(0)
            .is_some_and(|h| h.eq_ignore_ascii_case("connection"))
    });
    let cleared = conn.map_or(new_defaults, |d| d.arg(1) == Some(""));
    let assumed = super::version::assumed(version, "nginx", "1.29.7");
    let observed = match (upstream, keepalive) {
        (None, _) => format!("proxy_pass {target}: no upstream block, so no keepalive to it"),
        (Some(_), None) if new_defaults && http11 && cleared => return,
        (Some(u), None) => format!(
            "upstream {} has no keepalive (the default only from nginx 1.29.7 / 1.30.0; {assumed})",
            u.arg(0).unwrap_or("")
        ),
        (Some(_), Some(_)) if !(http11 && cleared) => {
            "keepalive set, but the location proxies with HTTP/1.0 or Connection: close".into()
        }
        _ => return,
    };
    let name = upstream.and_then(|u| u.arg(0)).unwrap_or("app").to_string();
    out.push(finding(Hit {
        id: RuleId::NginxUpstreamKeepalive,
        status: Status::Warn,
        at: pass,
        block: block.into(),
        observed,
        expected: "polls reuse upstream connections".into(),
        fix: "keep upstream connections alive for the polls",
        lines: vec![
            format!("upstream {name} {{ server ...; keepalive 32; }}  (in http)"),
            format!("proxy_pass http://{name};"),
            "proxy_http_version 1.1;".into(),
            "proxy_set_header Connection \"\";".into(),
        ],
    }));
}

#[cfg(test)]
mod tests {
    use crate::lint::{lint, nginx, Config, Kind, Workload};

    fn run(t: &str) -> Vec<crate::findings::Finding> {
        let nodes = nginx::parse("n.conf", t).unwrap();
        lint(
            &[Config {
                kind: Kind::Nginx,
                file: "n.conf".into(),
                nodes,
            }],
            &Workload::default(),
            &[],
        )
    }

    /// A Socket.IO route with no declared ping: the library's documented 25 s heartbeat is
    /// what proxy_read_timeout must hold (20 s fails, 40 s is under twice it, the
    /// default 60 s holds it).
    #[test]
    fn a_socketio_route_is_judged_against_the_librarys_heartbeat() {
        use crate::findings::Status;
        let conf = |t: &str| {
            format!("server {{\n location /socket.io/ {{\n  proxy_pass http://a;\n  proxy_http_version 1.1;\n  proxy_set_header Upgrade $http_upgrade;\n  proxy_set_header Connection upgrade;\n{t} }}\n}}\n")
        };
        let read = |t: &str| {
            run(&conf(t))
                .into_iter()
                .find(|f| f.id == "nginx-read-timeout")
        };
        let f = read("  proxy_read_timeout 20s;\n").expect("a finding");
        assert_eq!(f.status, Status::Fail, "{}", f.expected);
        assert!(
            f.expected.contains("Socket.IO's heartbeat"),
            "{}",
            f.expected
        );
        assert!(f.expected.contains("socket.io/docs"), "{}", f.expected);
        let f = read("  proxy_read_timeout 40s;\n").expect("a finding");
        assert_eq!(f.status, Status::Warn, "{}", f.expected);
        assert!(read("").is_none_or(|f| f.status == Status::Pass));
        // A route no library names keeps the rule's own bound.
        let plain = run("server {\n location /ws {\n  proxy_pass http://a;\n  proxy_http_version 1.1;\n  proxy_set_header Upgrade $http_upgrade;\n  proxy_set_header Connection upgrade;\n  proxy_read_timeout 20s;\n }\n}\n");
        let f = plain.iter().find(|f| f.id == "nginx-read-timeout").unwrap();
        assert!(f.expected.contains("none declared"), "{}", f.expected);
    }

    #[test]
    fn a_locations_own_headers_hide_the_servers_upgrade_lines() {
        let fs = run("server {\n proxy_http_version 1.1;\n proxy_set_header Upgrade $http_upgrade;\n proxy_set_header Connection upgrade;\n location /ws {\n  proxy_pass http://a;\n  proxy_set_header Host $host;\n }\n}\n");
        let f = fs.iter().find(|f| f.id == "nginx-ws-upgrade").unwrap();
        assert!(
            f.observed.contains("replace the inherited ones"),
            "{}",
            f.observed
        );
        assert_eq!(f.location.as_ref().unwrap().line, 5);
        // Without the location's own line, the server's are inherited: nothing to report.
        let fs = run("server {\n proxy_http_version 1.1;\n proxy_set_header Upgrade $http_upgrade;\n proxy_set_header Connection upgrade;\n location /ws {\n  proxy_pass http://a;\n }\n}\n");
        assert!(fs
            .iter()
            .all(|f| f.id != "nginx-ws-upgrade" || f.status == crate::findings::Status::Pass));
    }

    #[test]
    fn the_http_version_default_follows_the_nginx_version() {
        use crate::lint::version::ProxyVersion;
        let t = "server { location /ws { proxy_pass http://a; proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection upgrade; } }";
        let at = |v: Option<&str>| {
            let w = Workload {
                versions: v
                    .map(|v| ProxyVersion {
                        product: "nginx".into(),
                        parts: crate::lint::version::parse(v).unwrap(),
                        text: v.into(),
                        from: "--proxy-version".into(),
                    })
                    .into_iter()
                    .collect(),
                ..Workload::default()
            };
            let nodes = nginx::parse("n.conf", t).unwrap();
            let c = Config {
                kind: Kind::Nginx,
                file: "n.conf".into(),
                nodes,
            };
            lint(&[c], &w, &[])
                .into_iter()
                .find(|f| f.id == "nginx-ws-http-version")
                .unwrap()
        };
        // Before 1.29.7 the default is HTTP/1.0: the upgrade fails, and the version is said.
        let old = at(Some("1.22.1"));
        assert_eq!(old.status, crate::findings::Status::Fail);
        assert!(
            old.observed.contains("nginx 1.22.1 (--proxy-version)"),
            "{}",
            old.observed
        );
        let unknown = at(None);
        assert!(
            unknown.observed.contains("assumed before 1.29.7"),
            "{}",
            unknown.observed
        );
        // 1.29.7 (mainline) and 1.30.0 (stable) proxy with HTTP/1.1 by default.
        for v in ["1.29.7", "1.30.0"] {
            assert_eq!(at(Some(v)).status, crate::findings::Status::Pass, "{v}");
        }
    }

    #[test]
    fn a_connection_variable_must_come_from_a_map_of_http_upgrade() {
        let t = |map: &str| {
            format!("{map}\nserver {{ location /ws {{ proxy_pass http://a; proxy_http_version 1.1; proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection $conn; }} }}")
        };
        let bad = run(&t("map $http_host $conn { default upgrade; }"));
        assert!(bad
            .iter()
            .any(|f| f.id == "nginx-ws-upgrade" && f.status == crate::findings::Status::Fail));
        let good = run(&t("map $http_upgrade $conn { default upgrade; '' close; }"));
        assert!(good
            .iter()
            .any(|f| f.id == "nginx-ws-upgrade" && f.status == crate::findings::Status::Pass));
    }
}
