//! The declared path in choose's reasoning (issue 24): the chain of hops decides the
//! heartbeat, may force a reconnect (lifetime cap) and may exclude a transport (SSE through
//! a hop that does not support or flush it), so the recommendation changes where a hop
//! forces it. Pure.
use super::reason::Reason;
use crate::evidence::{self, fmt_num};
use crate::hops::chain::{self, Chain};
use crate::profile::{Profile, Upstream};
use rtcheck_wire::transport::Transport;

pub const QUESTION: &str = "Which hops sit between the users and the server?";

/// What the path changes: the transport to use, the reason, the chain and notes.
pub struct PathDecision {
    pub transport: Transport,
    pub reason: Reason,
    pub chain: Chain,
    pub notes: Vec<String>,
}

/// The transport to use instead of `t` when the path excludes it (None: `t` passes).
fn replacement(c: &Chain, t: Transport, p: &Profile) -> Option<Transport> {
    if !c.excludes(t) {
        return None;
    }
    let dense = p.binary || p.upstream == Some(Upstream::Dense);
    let order: &[Transport] = match t {
        Transport::Sse => &[Transport::Websocket, Transport::Polling],
        Transport::Websocket if !dense => &[Transport::Sse, Transport::Polling],
        _ => &[Transport::Polling],
    };
    order.iter().copied().find(|o| !c.excludes(*o))
}

/// None when the profile declares no path.
pub fn decide_path(p: &Profile, transport: Transport) -> Result<Option<PathDecision>, String> {
    let Some((ids, over)) = p.hop_path() else {
        return Ok(None);
    };
    let c = chain::compute(&ids, &over).map_err(|e| format!("path: {e}"))?;
    let chosen = replacement(&c, transport, p).unwrap_or(transport);
    let tc = c.transport(chosen);
    let mut decision = vec![format!("heartbeat every {} s", c.heartbeat_s)];
    if chosen != transport {
        decision.insert(
            0,
            format!("{} instead of {}", chosen.name(), transport.name()),
        );
    }
    if let Some(l) = tc.lifetime_cap_s {
        decision.push(format!("reconnect at least every {}", chain::show_secs(l)));
    }
    let mut detail = c.verdict();
    if chosen != transport {
        let why = c
            .exclusions
            .iter()
            .find(|e| e.transport == transport.name())
            .map(|e| e.why.clone())
            .unwrap_or_default();
        detail.push_str(&format!(
            " {} was the answer to Q1/Q2, but {why}: {} is recommended instead.",
            transport.name(),
            chosen.name()
        ));
    }
    let reason = Reason {
        id: "path".into(),
        question: QUESTION.into(),
        answer: if ids.is_empty() {
            "direct (no hop)".into()
        } else {
            ids.join(" -> ")
        },
        decision: decision.join("; "),
        detail,
        evidence: vec![
            evidence::reference("ping-timing"),
            evidence::reference("proxy-config"),
            evidence::reference("sse-conditions"),
        ],
    };
    let notes = notes(p, &c, chosen);
    Ok(Some(PathDecision {
        transport: chosen,
        reason,
        chain: c,
        notes,
    }))
}

/// What the path asks of the deployment for `t`: settings, reconnect rate, the declared
/// ping against the path, the sources.
fn notes(p: &Profile, c: &Chain, t: Transport) -> Vec<String> {
    let tc = c.transport(t);
    let mut n: Vec<String> = tc
        .required
        .iter()
        .map(|r| {
            format!(
                "Path: {} must be configured for {}: {}: {}",
                r.hop,
                t.name(),
                r.what,
                r.setting
            )
        })
        .collect();
    for (what, b) in [("idle limit", &tc.idle), ("lifetime cap", &tc.lifetime)] {
        if let Some(b) = b.as_ref().filter(|b| !b.declared) {
            let change = if b.adjustable {
                format!("if yours differs, declare it; to raise it: {}", b.setting)
            } else {
                "it is not adjustable".to_string()
            };
            n.push(format!(
                "Path: {}'s {what} of {} (documented default) binds; {change}",
                b.hop,
                chain::show_secs(b.secs)
            ));
        }
    }
    if let (Some(b), true) = (&tc.first_byte, t != Transport::Polling) {
        n.push(format!(
            "Path: {} wants the first byte within {}: send the response headers (and a first heartbeat) as soon as the stream opens.",
            b.hop,
            chain::show_secs(b.secs)
        ));
    }
    if let Some(l) = tc.lifetime_cap_s.filter(|l| *l > 0) {
        n.push(format!(
            "Path: {} caps every connection at {}, so all {} connections reconnect at least every {} ({} reconnects/s at steady state): the delivery design must resume (Last-Event-ID or session) and the ring must cover the replay window.",
            tc.lifetime.as_ref().map(|b| b.hop.as_str()).unwrap_or("-"),
            chain::show_secs(l),
            fmt_num(p.connections as f64),
            chain::show_secs(l),
            fmt_num((p.connections as f64 / l as f64 * 10.0).round() / 10.0)
        ));
    }
    if let (Some(ping), Some(max)) = (p.ping, c.heartbeat_max_s) {
        if ping.as_secs() > max {
            n.push(format!(
                "Path: the declared ping ({} s) is slower than the {max} s this path allows: lower it to {} s.",
                ping.as_secs(),
                c.heartbeat_s
            ));
        }
    }
    n.extend(c.warnings.iter().map(|w| format!("Path: {w}")));
    if t == Transport::Sse {
        n.push(format!("Path: SSE and HTTP/2: {}.", c.sse_http2));
    }
    let unknown: Vec<&str> = tc.unknown.iter().map(String::as_str).collect();
    if !unknown.is_empty() {
        n.push(format!(
            "Path: not documented, declare the value in the profile (`- hop: {{idle: DUR}}`) or measure it with `rtcheck probe`: {}.",
            unknown.join("; ")
        ));
    }
    let sources: Vec<String> = c
        .path
        .iter()
        .filter_map(|id| crate::hops::get(id))
        .map(|h| {
            let urls: Vec<&str> = h.sources.iter().map(|s| s.url.as_str()).collect();
            format!("{} {}", h.id, urls.join(" "))
        })
        .collect();
    if !sources.is_empty() {
        n.push(format!(
            "Path sources (read {}; `rtcheck explain HOP` for each): {}",
            crate::hops::catalog()
                .first()
                .and_then(|h| h.sources.first())
                .map(|s| s.read.as_str())
                .unwrap_or("-"),
            sources.join("; ")
        ));
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hops::chain::PathEntry;
    use crate::profile::Loss;
    use std::time::Duration;

    fn profile(path: &[&str]) -> Profile {
        Profile {
            visible_within: Some(Duration::from_millis(200)),
            upstream: Some(Upstream::Sparse),
            loss: Some(Loss::Shared),
            path: Some(
                path.iter()
                    .map(|id| PathEntry {
                        id: id.to_string(),
                        set: Default::default(),
                    })
                    .collect(),
            ),
            ..Profile::default()
        }
    }

    #[test]
    fn front_door_turns_sse_into_websocket() {
        let r = crate::choose::decide(&profile(&["azure-front-door"])).unwrap();
        assert_eq!(r.transport, Transport::Websocket, "SSE is not recommended");
        assert_eq!(r.profile.transport, Some(Transport::Websocket));
        let path = r.reasons.iter().find(|q| q.id == "path").unwrap();
        assert!(
            path.decision.starts_with("websocket instead of sse"),
            "{}",
            path.decision
        );
        assert!(path.decision.contains("reconnect"), "4 h lifetime cap");
        assert!(r.chain.as_ref().unwrap().excludes(Transport::Sse));
    }

    #[test]
    fn cloudflare_alb_nginx_keeps_sse_with_a_30s_heartbeat_and_nginx_settings() {
        let mut p = profile(&["cloudflare", "aws-alb", "nginx"]);
        p.ping = Some(Duration::from_secs(60));
        let r = crate::choose::decide(&p).unwrap();
        assert_eq!(r.transport, Transport::Sse);
        let path = r.reasons.iter().find(|q| q.id == "path").unwrap();
        assert_eq!(path.decision, "heartbeat every 30 s");
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("nginx must be configured") && n.contains("proxy_buffering off")));
        assert!(r.notes.iter().any(|n| n.contains("declared ping (60 s)")));
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("https://docs.aws.amazon.com/")));
    }

    #[test]
    fn gcp_makes_reconnects_mandatory_and_sizes_their_rate() {
        let r = crate::choose::decide(&profile(&["gcp-alb"])).unwrap();
        let path = r.reasons.iter().find(|q| q.id == "path").unwrap();
        assert!(
            path.decision.contains("reconnect at least every 30 s"),
            "{}",
            path.decision
        );
        // 10,000 connections every 30 s.
        assert!(
            r.notes.iter().any(|n| n.contains("333.3 reconnects/s")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn no_path_changes_nothing() {
        let mut p = profile(&[]);
        p.path = None;
        let r = crate::choose::decide(&p).unwrap();
        assert!(r.reasons.iter().all(|q| q.id != "path"));
        assert!(r.chain.is_none());
    }
}
