//! Istio rules (issue 40): the idle timeouts a sidecar applies to a long-lived connection,
//! against the heartbeat (declared, or the one the declared path needs). A DestinationRule's
//! `tcp.idleTimeout` closes a TCP connection with no bytes either way for that long (1h
//! unless set; 0s disables it); an EnvoyFilter's `stream_idle_timeout` closes a quiet
//! stream, upgraded WebSockets included (0s disables it). `http.idleTimeout` counts only
//! while no request is active, so it cuts no open stream and is not judged.
use super::rules::{above, finding, no_heartbeat, Hit, RuleId};
use super::{Config, Node, Sink, Stream, Workload};
use crate::findings::Status;
use std::time::Duration;

/// An Istio duration (`30s`, `1h`, `1.5s`, `500ms`); None when it is not one.
fn duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| c.is_ascii_alphabetic())?);
    let n: f64 = num
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(secs).ok()
}

pub fn check(c: &Config, w: &Workload, s: &mut Sink) {
    for obj in &c.nodes {
        for d in obj.children() {
            let id = match d.name.as_str() {
                "tcp.idleTimeout" => RuleId::IstioTcpIdleTimeout,
                "stream_idle_timeout" => RuleId::IstioStreamIdleTimeout,
                _ => continue,
            };
            s.applied.mark(id);
            judge(id, obj, d, w, s);
        }
    }
}

fn judge(id: RuleId, obj: &Node, d: &Node, w: &Workload, s: &mut Sink) {
    let value = d.arg(0).unwrap_or("");
    let hit = |status, observed: String, expected: String, lines: Vec<String>| Hit {
        id,
        status,
        at: d,
        block: obj.label(),
        observed,
        expected,
        fix: "raise the idle timeout above the heartbeat (0s disables it)",
        lines,
    };
    let key = d.name.rsplit('.').next().unwrap_or(&d.name);
    let Some(t) = duration(value) else {
        s.out.push(finding(hit(
            Status::Fail,
            format!("{}: {value} is not a duration", d.name),
            "a duration such as 3600s or 1h".into(),
            vec![format!("{key}: 3600s")],
        )));
        return;
    };
    if t.is_zero() {
        return;
    }
    // WebSocket: frames either way reset both timers.
    let kind = Stream::Websocket;
    let need = super::path::timeout(t, w, "istio-sidecar", kind);
    let (status, expected, want) = match (need, w.ping) {
        (Some(n), _) if n.status == Status::Pass => return,
        (Some(n), _) => (n.status, n.expected, n.want),
        (None, Some(p)) if t <= p => (
            Status::Fail,
            format!("above the heartbeat ({} s)", p.as_secs()),
            above(p),
        ),
        (None, Some(_)) => return,
        (None, None) => (
            Status::Warn,
            no_heartbeat(t, kind),
            t.max(Duration::from_secs(3600)),
        ),
    };
    let want = format!("{key}: {}s", want.as_secs_f64().ceil() as u64);
    s.out.push(finding(hit(
        status,
        format!("{}: {value}", d.name),
        expected,
        vec![want],
    )));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn istio_durations_parse() {
        assert_eq!(duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(duration("0s"), Some(Duration::ZERO));
        assert_eq!(duration("soon"), None);
        assert_eq!(duration("30"), None);
    }
}
