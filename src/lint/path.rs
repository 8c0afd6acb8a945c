//! The declared path (`--path`, `--override`, the profile's `path:`; issue 24) in the
//! timeout rules: the proxy a config belongs to is one hop of the path, so its idle timeout
//! must carry the heartbeat the path needs. That heartbeat is the declared ping, else the
//! one the rest of the path allows (the chain without this hop: at most half the tightest
//! idle limit, no slower than the production ping). The chain's rule then asks this hop's
//! timeout for at least twice it: below the heartbeat the stream is cut (fail), below twice
//! it one late heartbeat is (warn), and this proxy becomes the path's tightest hop.
use super::{Stream, Workload};
use crate::findings::Status;
use crate::hops::chain::{self, Overrides};
use rtcheck_wire::transport::Transport;
use std::time::Duration;

/// A declared path: hop ids (outermost first) and the values declared for them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeclaredPath {
    pub ids: Vec<String>,
    pub overrides: Overrides,
}

/// What the path asks of one timeout, and the verdict on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Need {
    /// Pass: nothing to report.
    pub status: Status,
    pub expected: String,
    /// The value to configure.
    pub want: Duration,
}

fn transport(s: Stream) -> Transport {
    match s {
        Stream::Websocket => Transport::Websocket,
        Stream::Sse => Transport::Sse,
        Stream::Polling => Transport::Polling,
    }
}

/// The heartbeat the timeout must carry and where it comes from; None without a path.
pub fn heartbeat(w: &Workload, hop: &str, s: Stream) -> Option<(Duration, String)> {
    let p = w.path.as_ref()?;
    let shown = if p.ids.is_empty() {
        "direct".to_string()
    } else {
        p.ids.join(" -> ")
    };
    let place = if p.ids.iter().any(|i| i == hop) {
        String::new()
    } else {
        format!("; {hop} is not on it: checked as its innermost hop")
    };
    if let Some(ping) = w.ping {
        let from = format!("the declared ping, on the path {shown}{place}");
        return Some((ping, from));
    }
    let rest: Vec<String> = p.ids.iter().filter(|i| *i != hop).cloned().collect();
    let mut over = p.overrides.clone();
    over.remove(hop);
    // The profile validated the whole path; without this hop it computes as well.
    let c = chain::compute(&rest, &over).ok()?;
    let tc = c.transport(transport(s));
    let pmax = crate::evidence::num("ping-timing", "production_max") as u64;
    let beat = tc.heartbeat_max_s.map_or(pmax, |m| m.min(pmax)).max(1);
    let why = match &tc.idle {
        Some(b) => format!("{} s idle limit at {}", b.secs, b.hop),
        None => "the production ping (ping-timing): no other hop documents an idle limit".into(),
    };
    let from = format!("the heartbeat the path {shown} needs without this proxy ({why}){place}");
    Some((Duration::from_secs(beat), from))
}

/// The verdict on `timeout` (the hop's configured or default idle timeout) for a stream of
/// kind `s`; None when no path is declared (the rule keeps its own bound).
pub fn timeout(timeout: Duration, w: &Workload, hop: &str, s: Stream) -> Option<Need> {
    let (beat, from) = heartbeat(w, hop, s)?;
    let want = super::rules::above(beat);
    let hb = super::rules::secs(beat);
    let status = if timeout <= beat {
        Status::Fail
    } else if timeout < beat * 2 {
        Status::Warn
    } else if w.ping.is_none() {
        // The path says what heartbeat is needed, not that the app sends one.
        return Some(Need {
            status: Status::Warn,
            expected: format!(
                "{}; the path needs one at most {hb} ({from})",
                super::rules::no_heartbeat(timeout, s)
            ),
            want: want.max(timeout),
        });
    } else {
        Status::Pass
    };
    let expected = match status {
        Status::Fail => format!(
            "above the heartbeat ({hb}: {from}): a quiet stream is cut before its heartbeat"
        ),
        _ => format!(
            "at least twice the heartbeat ({hb}: {from}): the chain's rule, a heartbeat at most half the tightest idle limit, so one late heartbeat is not cut"
        ),
    };
    Some(Need {
        status,
        expected,
        want,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(path: &str, ping: Option<u64>) -> Workload {
        Workload {
            ping: ping.map(Duration::from_secs),
            path: Some(DeclaredPath {
                ids: chain::parse_path(path).unwrap(),
                overrides: Overrides::new(),
            }),
            ..Workload::default()
        }
    }

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn the_rest_of_the_path_sets_the_heartbeat_the_timeout_must_carry() {
        let ws = Stream::Websocket;
        // Behind Cloudflare and an ALB, nginx must carry their 30 s heartbeat.
        let p = w("cloudflare,aws-alb,nginx", None);
        let (beat, from) = heartbeat(&p, "nginx", ws).unwrap();
        assert_eq!(beat, s(30));
        assert!(from.contains("60 s idle limit at aws-alb"), "{from}");
        // Long enough for the heartbeat the path needs, but none is declared: a warn
        // that says which heartbeat it needs, never a pass.
        let n = timeout(s(60), &p, "nginx", ws).unwrap();
        assert_eq!(n.status, Status::Warn);
        assert!(
            n.expected
                .starts_with("holds only with a heartbeat under 60s"),
            "{}",
            n.expected
        );
        let declared = w("cloudflare,aws-alb,nginx", Some(25));
        assert_eq!(
            timeout(s(60), &declared, "nginx", ws).unwrap().status,
            Status::Pass
        );
        let n = timeout(s(45), &p, "nginx", ws).unwrap();
        assert_eq!(n.status, Status::Warn);
        assert_eq!(n.want, s(60));
        assert!(
            n.expected.contains("twice the heartbeat (30s"),
            "{}",
            n.expected
        );
        assert_eq!(
            timeout(s(30), &p, "nginx", ws).unwrap().status,
            Status::Fail
        );
        // Heroku's 55 s router idle: a 27 s heartbeat, so a 50 s timeout warns.
        let h = w("heroku,nginx", None);
        assert_eq!(heartbeat(&h, "nginx", ws).unwrap().0, s(27));
        assert_eq!(
            timeout(s(50), &h, "nginx", ws).unwrap().status,
            Status::Warn
        );
        // A declared ping is what the server sends: it wins over the chain's.
        let d = w("cloudflare,aws-alb,nginx", Some(50));
        let n = timeout(s(75), &d, "nginx", ws).unwrap();
        assert_eq!(n.status, Status::Warn);
        assert_eq!(n.want, s(100));
        // No path: the rule keeps its own bound.
        assert!(timeout(s(10), &Workload::default(), "nginx", ws).is_none());
        // A hop missing from the path is checked as its innermost hop, and said so.
        let cf = w("cloudflare", None);
        let (beat, from) = heartbeat(&cf, "haproxy", ws).unwrap();
        assert_eq!(
            beat,
            s(30),
            "Cloudflare's 100 s allows 50 s; production caps at 30 s"
        );
        assert!(from.contains("haproxy is not on it"), "{from}");
    }
}
