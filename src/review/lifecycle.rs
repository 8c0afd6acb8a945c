//! How a connection ends, as pure rules: the declared read deadline (item
//! `read-deadline-with-ping`) and reconnect policy (item `reconnect-jitter`), alone and
//! against the declared path's chain (issue 24): a lifetime cap on the path makes reconnect
//! and resume mandatory, and a ping above the chain's heartbeat maximum leaves the path, not
//! the read deadline, to end quiet connections.
use super::rules::{idle_hop, secs, Outcome};
use crate::evidence::{self, fmt_num};
use crate::findings::Status;
use crate::hops::chain::{show_secs, Chain};
use rtcheck_wire::transport::Transport;
use std::time::Duration;

fn dur(d: Duration) -> String {
    secs(d.as_secs_f64())
}

fn out(status: Status, consequence: String, expected: &str) -> Outcome {
    Outcome {
        status,
        consequence,
        expected: expected.to_string(),
        numbers: Default::default(),
    }
}

fn with(mut o: Outcome, k: &str, v: f64) -> Outcome {
    o.numbers.insert(k.to_string(), v);
    o
}

const READ_EXPECTED: &str =
    "a read deadline longer than the ping interval, extended by each pong; a ping the path's heartbeat maximum allows";

/// A read deadline (evidence `read-deadline-alone`: alone it closed healthy quiet clients
/// after exactly 10 s) with the ping that brings the pongs extending it.
pub fn read_deadline(deadline: Duration, ping: Option<Duration>) -> Outcome {
    let ping = ping.filter(|p| !p.is_zero());
    let o = match ping {
        _ if deadline.is_zero() => out(
            Status::Warn,
            format!(
                "no read deadline: a peer that vanished is found only by TCP keepalive (Go's default needed {} s)",
                fmt_num(evidence::num("ping-pong", "go_keepalive_detect"))
            ),
            READ_EXPECTED,
        ),
        None => out(
            Status::Fail,
            format!(
                "a read deadline of {} without ping closes healthy quiet clients after exactly the deadline (measured: {} s)",
                dur(deadline),
                fmt_num(evidence::num("read-deadline-alone", "deadline"))
            ),
            READ_EXPECTED,
        ),
        Some(p) if deadline <= p => out(
            Status::Fail,
            format!(
                "the read deadline {} is not longer than the ping interval {}: it fires before the next pong can extend it, closing healthy clients",
                dur(deadline),
                dur(p)
            ),
            READ_EXPECTED,
        ),
        Some(p) => out(
            Status::Pass,
            format!(
                "a peer that stops answering pings is closed within {} (ping every {}, each pong extends the deadline)",
                dur(deadline),
                dur(p)
            ),
            READ_EXPECTED,
        ),
    };
    let o = with(o, "read_deadline_s", deadline.as_secs_f64());
    match ping {
        Some(p) => with(o, "ping_s", p.as_secs_f64()),
        None => o,
    }
}

/// The read deadline against the chain: the ping must keep the path open (at most the
/// chain's heartbeat maximum), or the path's tightest idle limit ends quiet connections
/// before the deadline is ever what closes them. A failing base keeps its verdict.
pub fn read_deadline_on_path(base: Outcome, ping: Option<Duration>, c: &Chain) -> Outcome {
    let (Some(max), Some(idle)) = (c.heartbeat_max_s, c.tightest_idle_s) else {
        return base;
    };
    let base = with(
        with(base, "path_idle_s", idle as f64),
        "path_heartbeat_max_s",
        max as f64,
    );
    let Some(p) = ping.filter(|p| !p.is_zero()) else {
        return base;
    };
    if base.status == Status::Fail || p.as_secs_f64() <= max as f64 {
        return base;
    }
    let status = if p.as_secs() >= idle {
        Status::Fail
    } else {
        Status::Warn
    };
    let mut o = out(
        status,
        format!(
            "ping every {} against the path {}: its tightest idle limit is {idle} s at {}, so a heartbeat must come every {max} s or less; slower, the path and not the read deadline ends quiet connections{}",
            dur(p),
            c.path.join(" -> "),
            idle_hop(c, idle).0,
            idle_hop(c, idle).1
        ),
        READ_EXPECTED,
    );
    o.numbers = base.numbers;
    o
}

const RECONNECT_EXPECTED: &str =
    "the client reconnects by itself and resumes from its last position (or gets a snapshot), waiting at most the max disconnect between attempts";

/// What the client's reconnect policy means for the delivery design alone: no reconnect
/// leaves a dropped client down; no resume loses what was sent while it was away (unless
/// the design replaces it with a snapshot); a backoff longer than the max disconnect the
/// design holds gives a gap.
pub fn reconnect(
    reconnects: bool,
    resumes: bool,
    backoff_max: Option<Duration>,
    snapshot: bool,
    max_disconnect: Duration,
) -> Outcome {
    let o = if !reconnects {
        out(
            Status::Warn,
            "no automatic reconnect: a connection dropped by the network, a deploy or a proxy reload stays down until the user reloads".into(),
            RECONNECT_EXPECTED,
        )
    } else if !resumes && !snapshot {
        out(
            Status::Warn,
            "reconnects without a resume position: each reconnect loses what was sent while the client was away, silently".into(),
            RECONNECT_EXPECTED,
        )
    } else if let Some(b) = backoff_max.filter(|b| *b > max_disconnect) {
        out(
            Status::Warn,
            format!(
                "a client waiting up to {} between attempts is away longer than the {} the design holds for it: it resumes into a gap",
                dur(b),
                dur(max_disconnect)
            ),
            RECONNECT_EXPECTED,
        )
    } else {
        let how = if resumes {
            "resumes from its last position"
        } else {
            "gets a snapshot of the current state"
        };
        out(
            Status::Pass,
            format!("the client reconnects by itself and {how}"),
            RECONNECT_EXPECTED,
        )
    };
    match backoff_max {
        Some(b) => with(o, "backoff_max_s", b.as_secs_f64()),
        None => o,
    }
}

/// The reconnect policy against the chain: a lifetime cap ends every connection by then,
/// so reconnect (and resume, unless a snapshot replaces what was missed) is mandatory, and
/// every client reconnects at least once per cap: `connections` / cap per second.
pub fn reconnect_on_path(
    base: Outcome,
    reconnects: bool,
    resumes: bool,
    snapshot: bool,
    connections: u64,
    t: Option<Transport>,
    c: &Chain,
) -> Outcome {
    let bound = match t {
        Some(t) => c.transport(t).lifetime.clone(),
        None => c
            .transports
            .iter()
            .filter(|tc| !tc.excluded)
            .filter_map(|tc| tc.lifetime.clone())
            .min_by_key(|b| b.secs),
    };
    let Some(cap) = bound else {
        return base;
    };
    let at = format!(
        "{} at {} (change: {})",
        show_secs(cap.secs),
        cap.hop,
        cap.setting
    );
    let rate = connections as f64 / cap.secs.max(1) as f64;
    let mut o = if !reconnects {
        out(
            Status::Fail,
            format!("the path ends every connection within its lifetime cap of {at}: without an automatic reconnect every client is cut off by then"),
            RECONNECT_EXPECTED,
        )
    } else if !resumes && !snapshot {
        out(
            Status::Fail,
            format!("the path's lifetime cap of {at} makes every client reconnect at least that often, and without a resume position each reconnect loses what was sent during it"),
            RECONNECT_EXPECTED,
        )
    } else {
        let mut o = base.clone();
        o.consequence = format!(
            "{}; the path's lifetime cap of {at} makes it mandatory: about {} reconnects/s per machine in steady state ({} connections / {} s), each replayed from the ring or session",
            base.consequence,
            fmt_num((rate * 100.0).round() / 100.0),
            fmt_num(connections as f64),
            cap.secs
        );
        o
    };
    o.numbers = base.numbers;
    with(
        with(o, "lifetime_cap_s", cap.secs as f64),
        "reconnects_per_s",
        rate,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hops::chain::{compute, parse_path};

    fn s(v: u64) -> Duration {
        Duration::from_secs(v)
    }

    fn chain(p: &str) -> Chain {
        compute(&parse_path(p).unwrap(), &Default::default()).unwrap()
    }

    #[test]
    fn a_read_deadline_needs_a_ping_shorter_than_it() {
        let measured = evidence::num("read-deadline-alone", "deadline") as u64;
        let alone = read_deadline(s(measured), None);
        assert_eq!(alone.status, Status::Fail);
        assert!(
            alone.consequence.contains("exactly the deadline"),
            "{alone:?}"
        );
        assert_eq!(read_deadline(s(30), Some(s(30))).status, Status::Fail);
        let ok = read_deadline(s(31), Some(s(30)));
        assert_eq!(ok.status, Status::Pass);
        assert_eq!(ok.numbers["read_deadline_s"], 31.0);
        assert_eq!(
            read_deadline(Duration::ZERO, Some(s(25))).status,
            Status::Warn
        );
        // A zero ping is no ping.
        assert_eq!(
            read_deadline(s(60), Some(Duration::ZERO)).status,
            Status::Fail
        );
    }

    #[test]
    fn the_read_deadline_on_a_path_wants_a_ping_within_the_heartbeat_maximum() {
        let c = chain("cloudflare,aws-alb,nginx");
        let on =
            |d: u64, p: u64| read_deadline_on_path(read_deadline(s(d), Some(s(p))), Some(s(p)), &c);
        // gorilla's chat example: pongWait 60 s, ping every 54 s, behind a 60 s ALB.
        let gorilla = on(60, 54);
        assert_eq!(gorilla.status, Status::Warn, "{gorilla:?}");
        assert!(
            gorilla.consequence.contains("aws-alb"),
            "{}",
            gorilla.consequence
        );
        assert!(gorilla.consequence.contains("every 30 s or less"));
        assert_eq!(gorilla.numbers["path_heartbeat_max_s"], 30.0);
        assert_eq!(
            on(70, 60).status,
            Status::Fail,
            "the ping at the idle limit"
        );
        assert_eq!(on(40, 30).status, Status::Pass, "exactly half the 60 s");
        // A deadline that fails on its own keeps its reason.
        assert!(on(20, 25).consequence.contains("not longer than the ping"));
        // No idle limit on the path: the base verdict.
        let direct = chain("direct");
        let o = read_deadline_on_path(read_deadline(s(60), Some(s(54))), Some(s(54)), &direct);
        assert_eq!(o.status, Status::Pass);
    }

    #[test]
    fn a_reconnect_policy_alone() {
        let away = s(30);
        assert_eq!(
            reconnect(false, false, None, false, away).status,
            Status::Warn
        );
        let lossy = reconnect(true, false, None, false, away);
        assert_eq!(lossy.status, Status::Warn);
        assert!(lossy.consequence.contains("silently"), "{lossy:?}");
        // A snapshot design needs no resume position.
        assert_eq!(
            reconnect(true, false, None, true, away).status,
            Status::Pass
        );
        let slow = reconnect(true, true, Some(s(60)), false, away);
        assert_eq!(slow.status, Status::Warn);
        assert!(slow.consequence.contains("gap"), "{slow:?}");
        assert_eq!(
            reconnect(true, true, Some(s(30)), false, away).status,
            Status::Pass
        );
    }

    #[test]
    fn a_lifetime_cap_on_the_path_makes_reconnect_and_resume_mandatory() {
        let gcp = chain("gcp-alb");
        let ws = Some(Transport::Websocket);
        let on = |r: bool, m: bool| {
            let base = reconnect(r, m, None, false, s(30));
            reconnect_on_path(base, r, m, false, 3000, ws, &gcp)
        };
        let none = on(false, false);
        assert_eq!(none.status, Status::Fail);
        assert!(
            none.consequence.contains("30 s at gcp-alb"),
            "{}",
            none.consequence
        );
        assert!(
            none.consequence.contains("--timeout"),
            "the setting: {}",
            none.consequence
        );
        assert_eq!(on(true, false).status, Status::Fail);
        let ok = on(true, true);
        assert_eq!(ok.status, Status::Pass);
        assert_eq!(
            ok.numbers["reconnects_per_s"], 100.0,
            "3,000 connections / 30 s"
        );
        assert!(
            ok.consequence.contains("100 reconnects/s"),
            "{}",
            ok.consequence
        );
        // Front Door caps at 4 h; no cap behind Cloudflare -> ALB -> nginx: the base stays.
        let afd = chain("azure-front-door");
        let o = reconnect_on_path(
            reconnect(false, false, None, false, s(30)),
            false,
            false,
            false,
            10,
            ws,
            &afd,
        );
        assert_eq!(o.status, Status::Fail);
        assert_eq!(o.numbers["lifetime_cap_s"], 14_400.0);
        let free = chain("cloudflare,aws-alb,nginx");
        let base = reconnect(false, false, None, false, s(30));
        let o = reconnect_on_path(base.clone(), false, false, false, 10, ws, &free);
        assert_eq!(o, base);
    }
}
