//! ingress-nginx rules on `Ingress` objects. An Ingress is one route (its annotations hold
//! for all its paths), classified by `classify`: a snippet that sets Upgrade, buffering
//! turned off, a well-known path, then words; the declared transports go to the one on `/`.
use super::classify::{at, block, classify, report, Route};
use super::ingress::PREFIX;
use super::rules::{above, finding, no_heartbeat, resets, Applied, Hit, RuleId};
use super::{Config, Node, Sink, Stream, Workload};
use crate::findings::{Finding, Status};
use std::time::Duration;

/// An Ingress as a route: its name and paths, a snippet that sets Upgrade (ingress-nginx
/// forwards Upgrade by itself, so only a snippet says it), buffering turned off.
fn route(ing: &Node) -> Route<'_> {
    let ann = |k: &str| ing.children().iter().find(|d| d.name == k);
    let paths: Vec<&Node> = ing.children().iter().filter(|c| c.name == "path").collect();
    let mut text = ing.args.join(" ");
    for p in &paths {
        text.push(' ');
        text.push_str(&p.args.join(" "));
    }
    let upgrade = ["configuration-snippet", "server-snippet"]
        .iter()
        .filter_map(|k| ann(k))
        .find(|d| d.args.join(" ").to_ascii_lowercase().contains("upgrade"))
        .map(|d| format!("its {} sets Upgrade at {}", d.name, at(d)));
    let stream = ann("proxy-buffering")
        .filter(|d| d.arg(0) == Some("off"))
        .map(|d| format!("proxy-buffering: off at {}", at(d)));
    Route {
        at: ing,
        label: ing.label(),
        path: text,
        upgrade,
        stream,
        catch_all: paths.is_empty() || paths.iter().any(|p| p.arg(0) == Some("/")),
    }
}

/// The controller's ConfigMap among every linted file (its keys are the default of each
/// Ingress without its own annotation), and whether any Ingress is linted.
#[derive(Debug, Clone, Copy, Default)]
pub struct Controller<'a> {
    pub configmap: Option<&'a Node>,
    pub ingresses: bool,
}

impl<'a> Controller<'a> {
    pub fn of(configs: &'a [Config]) -> Controller<'a> {
        let mut nodes = configs
            .iter()
            .filter(|c| c.kind == super::Kind::Ingress)
            .flat_map(|c| &c.nodes);
        let maps = nodes.clone().filter(|n| n.name == "configmap");
        // Several maps: the one named as the controller's (`…-controller`) first.
        let named = maps.clone().find(|n| {
            n.arg(0).is_some_and(|id| {
                id.ends_with("-controller") || id.ends_with("/nginx-configuration")
            })
        });
        Controller {
            configmap: named.or_else(|| maps.clone().next()),
            ingresses: nodes.any(|n| n.name == "ingress"),
        }
    }

    /// The ConfigMap's `key` when it is whole seconds (the controller ignores any other
    /// value, with a warning, and keeps its default).
    fn secs(&self, key: &str) -> Option<(u64, &'a Node)> {
        let d = self.configmap?.children().iter().find(|d| d.name == key)?;
        Some((d.arg(0)?.trim().parse().ok()?, d))
    }
}

pub fn check(c: &Config, w: &Workload, ctl: Controller, s: &mut Sink) {
    for cm in c.nodes.iter().filter(|n| n.name == "configmap") {
        configmap(cm, w, ctl, s);
    }
    let ingresses = c.nodes.iter().filter(|n| n.name == "ingress");
    let routes: Vec<Route> = ingresses.map(route).collect();
    let classes = classify(&routes, w);
    for (r, carried) in routes.iter().zip(&classes) {
        s.routes.push(report(r, carried));
        let ing = r.at;
        let (out, applied) = (&mut s.out, &mut s.applied);
        // The timeouts once per Ingress: an event stream's when it carries one.
        let timed = carried
            .iter()
            .find(|c| c.transport == Stream::Sse)
            .or_else(|| carried.iter().find(|c| c.transport == Stream::Websocket));
        if let Some(c) = timed {
            timeouts(
                ing,
                (c.transport, &r.path),
                &block(r, c),
                w,
                ctl,
                out,
                applied,
            );
        }
        snippet(ing, w, out, applied);
        for c in carried {
            let kind = c.transport;
            let block = block(r, c);
            let ann = |k: &str| ing.children().iter().find(|d| d.name == k);
            if kind == Stream::Sse {
                applied.mark(RuleId::IngressProxyBuffering);
                if let Some(d) = ann("proxy-buffering").filter(|d| d.arg(0) == Some("on")) {
                    out.push(finding(Hit {
                        id: RuleId::IngressProxyBuffering,
                        status: Status::Fail,
                        at: d,
                        block: block.clone(),
                        observed: "proxy-buffering: on".into(),
                        expected: "off (the ingress-nginx default)".into(),
                        fix: "turn buffering off for the event stream",
                        lines: vec![format!("{PREFIX}proxy-buffering: \"off\"")],
                    }));
                }
            }
            if kind == Stream::Polling {
                applied.mark(RuleId::IngressAffinity);
                if ann("affinity").and_then(|d| d.arg(0)) != Some("cookie") {
                    out.push(finding(Hit {
                        id: RuleId::IngressAffinity,
                        status: Status::Warn,
                        at: ann("affinity").unwrap_or(ing),
                        block: block.clone(),
                        observed: "no affinity: each poll may land on another pod".into(),
                        expected: "affinity: cookie when the poll's session lives on one pod"
                            .into(),
                        fix: "stick a client's polls to one pod",
                        lines: vec![
                            format!("{PREFIX}affinity: \"cookie\""),
                            format!("{PREFIX}session-cookie-name: \"route\""),
                        ],
                    }));
                }
            }
        }
    }
}

/// proxy-read-timeout against the heartbeat; proxy-send-timeout only when unreadable (it
/// bounds a write the upstream does not take, not silence: `check_nginx`).
fn timeouts(
    ing: &Node,
    (kind, path): (Stream, &str),
    block: &str,
    w: &Workload,
    ctl: Controller,
    out: &mut Vec<Finding>,
    applied: &mut Applied,
) {
    let ann = |k: &str| ing.children().iter().find(|d| d.name == k);
    applied.mark(RuleId::IngressSendTimeout);
    if let Some(d) = ann("proxy-send-timeout")
        .filter(|d| d.arg(0).is_some_and(|v| v.trim().parse::<u64>().is_err()))
    {
        out.push(finding(Hit {
            id: RuleId::IngressSendTimeout,
            status: Status::Fail,
            at: d,
            block: block.into(),
            observed: format!(
                "proxy-send-timeout: {} is not a number of seconds",
                d.args.join("")
            ),
            expected: "a number of seconds, such as \"60\"".into(),
            fix: "write the timeout in seconds",
            lines: vec![format!("{PREFIX}proxy-send-timeout: \"60\"")],
        }));
    }
    let (id, k) = (RuleId::IngressReadTimeout, "proxy-read-timeout");
    applied.mark(id);
    let d = ann(k);
    let secs: Option<u64> = d.and_then(|d| d.arg(0)).and_then(|v| v.trim().parse().ok());
    // Without an annotation the controller's ConfigMap decides, else 60.
    let inherited = d.is_none().then(|| ctl.secs(k)).flatten();
    let t = Duration::from_secs(secs.or(inherited.map(|i| i.0)).unwrap_or(60));
    let Some((status, expected, want)) = read_verdict(t, w, (kind, path)) else {
        return;
    };
    let observed = match (d, inherited) {
        (Some(d), _) => format!("{k}: {}", d.args.join("")),
        (None, Some((v, cm))) => format!(
            "{k} not set on the Ingress: the controller's {} sets {v} ({}:{})",
            ctl.configmap.map_or(String::new(), |c| c.label()),
            cm.file,
            cm.line
        ),
        (None, None) => format!("{k} not set (default 60)"),
    };
    let n = want.as_secs_f64().ceil() as u64;
    let mut lines = vec![format!("{PREFIX}{k}: \"{n}\"")];
    if let (None, Some(c)) = (d, ctl.configmap.filter(|_| inherited.is_some())) {
        lines.push(format!(
            "or for every Ingress, in {}: {k}: \"{n}\"",
            c.label()
        ));
    }
    out.push(finding(Hit {
        id,
        status,
        at: d.unwrap_or(ing),
        block: block.into(),
        observed,
        expected,
        fix: "raise the timeout above the heartbeat",
        lines,
    }));
}

/// proxy-read-timeout `t` against the heartbeat (declared, or the one the declared path
/// needs) for a stream of `kind`; None when it holds.
fn read_verdict(
    t: Duration,
    w: &Workload,
    (kind, path): (Stream, &str),
) -> Option<(Status, String, Duration)> {
    let on_path = super::path::timeout(t, w, "ingress-nginx", kind);
    match (on_path, w.ping) {
        (Some(n), _) if n.status == Status::Pass => None,
        (Some(n), _) => Some((n.status, n.expected, n.want)),
        (None, Some(p)) if t <= p => Some((
            Status::Fail,
            format!("above the heartbeat ({} s; {})", p.as_secs(), resets(kind)),
            above(p),
        )),
        (None, Some(_)) => None,
        // A library's route (Socket.IO's path, or --app-protocol): its own heartbeat.
        (None, None) => match super::rules::library_need(t, path, w.app) {
            Some(need) => need,
            None => Some((
                Status::Warn,
                no_heartbeat(t, kind),
                t.max(Duration::from_secs(3600)),
            )),
        },
    }
}

/// The ConfigMap keys the controller reads as whole seconds: another value (`3600s`, the
/// F5 controller's syntax) is ignored with a warning in the controller's log and the
/// default stays (60).
const SECONDS_KEYS: &[&str] = &[
    "proxy-read-timeout",
    "proxy-send-timeout",
    "upstream-keepalive-timeout",
];

/// The controller's ConfigMap: its timeouts written as whole seconds, and (when no
/// Ingress is linted with it, else each Ingress is judged with its value) its
/// proxy-read-timeout against the heartbeat of the declared streams.
fn configmap(cm: &Node, w: &Workload, ctl: Controller, s: &mut Sink) {
    s.applied.mark(RuleId::IngressConfigmapSeconds);
    for d in cm.children() {
        let bad = SECONDS_KEYS.contains(&d.name.as_str())
            && d.arg(0).is_some_and(|v| v.trim().parse::<u64>().is_err());
        if bad {
            // The keepalive pool's timeout cuts no stream (docs/lint.md): the value is still
            // ignored, but what is lost is the pool's size, not a stream's life.
            let keepalive = d.name == "upstream-keepalive-timeout";
            s.out.push(finding(Hit {
                id: RuleId::IngressConfigmapSeconds,
                status: if keepalive { Status::Warn } else { Status::Fail },
                at: d,
                block: cm.label(),
                observed: format!(
                    "{}: {:?} is not whole seconds: ingress-nginx logs a warning and keeps its default (60){}",
                    d.name,
                    d.args.join(""),
                    if keepalive { "; idle pooled connections only, no stream is cut" } else { "" }
                ),
                expected: "a number of seconds, such as \"3600\"".into(),
                fix: "write the value in seconds, without a unit",
                lines: vec![format!("{}: \"3600\"", d.name)],
            }));
        }
    }
    if ctl.ingresses {
        return;
    }
    s.applied.mark(RuleId::IngressConfigmapReadTimeout);
    let k = "proxy-read-timeout";
    let d = cm.children().iter().find(|d| d.name == k);
    // This map's own value (the controller's default, 60, when it has none or not in seconds).
    let own = d.and_then(|d| d.arg(0)?.trim().parse::<u64>().ok());
    let t = Duration::from_secs(own.unwrap_or(60));
    // An event stream's timer is reset only by the server's events: the stricter case.
    let kind = if w
        .transports
        .contains(&rtcheck_wire::transport::Transport::Sse)
    {
        Stream::Sse
    } else {
        Stream::Websocket
    };
    let Some((status, expected, want)) = read_verdict(t, w, (kind, "")) else {
        return;
    };
    s.out.push(finding(Hit {
        id: RuleId::IngressConfigmapReadTimeout,
        status,
        at: d.unwrap_or(cm),
        block: cm.label(),
        observed: format!(
            "{k}: {} for every Ingress without its own annotation ({})",
            t.as_secs(),
            kind.as_str()
        ),
        expected,
        fix: "raise the controller-wide timeout above the heartbeat, or annotate the streaming Ingresses",
        lines: vec![format!("{k}: \"{}\"", want.as_secs_f64().ceil() as u64)],
    }));
}

/// A snippet annotation: the controller refuses the Ingress unless snippets are allowed
/// (`allow-snippet-annotations: true`, false by default since controller v1.9.0), so the
/// Upgrade lines or timeouts it carries never reach nginx.
fn snippet(ing: &Node, w: &Workload, out: &mut Vec<Finding>, applied: &mut Applied) {
    applied.mark(RuleId::IngressSnippet);
    let v = super::version::of(w, "ingress-nginx");
    if v.is_some_and(|v| !super::version::at_least(&v.parts, &[1, 9])) {
        return;
    }
    let Some(d) = ing
        .children()
        .iter()
        .find(|d| d.name == "configuration-snippet" || d.name == "server-snippet")
    else {
        return;
    };
    out.push(finding(Hit {
        id: RuleId::IngressSnippet,
        status: Status::Warn,
        at: d,
        block: ing.label(),
        observed: format!(
            "{} annotation: refused by ingress-nginx >= 1.9.0 unless the controller allows snippets ({})",
            d.name,
            super::version::assumed(v, "ingress-nginx", "none: assumed 1.9.0 or later").replace("assumed before none: ", "")
        ),
        expected: "the setting as its own annotation (proxy-read-timeout, ...), or snippets allowed on purpose".into(),
        fix: "replace the snippet by annotations, or set allow-snippet-annotations: \"true\" in the controller's ConfigMap",
        lines: vec![format!("{PREFIX}proxy-read-timeout: \"3600\"")],
    }));
}
