//! `heartbeat`: the server's ping (WebSocket) or comment (SSE) interval measured on the
//! path, against the seed's rhythm (ping 5 s + pong wait 8 s found a dead peer in 4.9 s;
//! 20-30 s in production) and against the idle timeout the path showed.
use super::session::{Ending, StreamObs};
use super::{finding, fmt_s, idle_timeout, proxy, Meta, UrlObs};
use crate::findings::{Finding, Status};

pub const ID: &str = super::CheckId::Heartbeat.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::Heartbeat,
    title: "Server heartbeat (ping / SSE comment)",
    evidence: &["ping-timing", "ping-pong"],
    run: check,
};
/// What a measured interval may exceed the rule by and still meet it: the server's timer,
/// the path and a loaded probe host each add a few ms (the `ws` README's 30 s heartbeat
/// measures 30.03 s); half a second is far above that and far below a missed beat.
pub const TOLERANCE_MS: f64 = 500.0;

/// The production rhythm from evidence `ping-timing` (20-30 s), in ms.
pub fn production_ms() -> (f64, f64) {
    let n = |v| crate::evidence::num("ping-timing", v) * 1000.0;
    (n("production_min"), n("production_max"))
}

/// Above this a heartbeat is slower than production practice (the rule plus tolerance).
pub fn slowest_ms() -> f64 {
    production_ms().1 + TOLERANCE_MS
}

/// What the data did while no heartbeat came: it, not a heartbeat, kept the path open.
fn data_note(s: &StreamObs) -> String {
    if s.events.is_empty() {
        String::new()
    } else {
        format!(
            "; data, not a heartbeat, kept the path open ({}): a quiet period would not be covered",
            s.messages_text()
        )
    }
}

/// The longest gap between heartbeats, counting from the open (an upper bound on the
/// interval when only one was seen).
pub fn interval_ms(s: &StreamObs) -> Option<f64> {
    let mut prev = 0.0;
    let mut worst: Option<f64> = None;
    for &h in &s.heartbeats_ms {
        worst = Some(worst.map_or(h - prev, |w| w.max(h - prev)));
        prev = h;
    }
    worst
}

/// The heartbeat's verdict from a watched stream (`quick`: the watch was short).
pub fn judge(s: &StreamObs, quick: bool) -> (Status, String, Option<String>) {
    // Closed before anything came: no interval to judge, and the close is not the path's.
    let refused = super::closed::refused(s, quick).filter(|_| s.heartbeats_ms.is_empty());
    if let Some(c) = refused {
        let why = super::closed::skip_reason(&c);
        return (Status::Skip, "not measured".into(), Some(why));
    }
    let closed = !matches!(s.ending, Some(Ending::Open) | None);
    let timeout = idle_timeout::silence_before_close(s);
    let slowest = slowest_ms();
    let (_, rule) = production_ms();
    let (st, text, reason) = verdict(s, quick, closed, timeout, slowest, rule);
    let text = if interval_ms(s).is_none() {
        format!("{text}{}", data_note(s))
    } else {
        text
    };
    (st, text, reason)
}

fn verdict(
    s: &StreamObs,
    quick: bool,
    closed: bool,
    timeout: Option<f64>,
    slowest: f64,
    rule: f64,
) -> (Status, String, Option<String>) {
    match (interval_ms(s), closed) {
        (None, true) => (
            Status::Fail,
            format!(
                "the path closed the connection after {} before any heartbeat",
                fmt_s(s.ended_ms)
            ),
            None,
        ),
        (None, false) if s.ended_ms >= slowest => (
            Status::Warn,
            format!("no heartbeat in {}", fmt_s(s.ended_ms)),
            None,
        ),
        (None, false) => (
            Status::Skip,
            format!("no heartbeat in {}", fmt_s(s.ended_ms)),
            Some(format!(
                "watched only {}{}: use --idle-for {}s or more",
                fmt_s(s.ended_ms),
                if quick { " (--quick)" } else { "" },
                (slowest / 1000.0).ceil()
            )),
        ),
        (Some(i), true) => (
            Status::Fail,
            format!(
                "every {} or more, but the path closed the connection after {} of silence",
                fmt_s(i),
                fmt_s(timeout.unwrap_or(s.ended_ms))
            ),
            None,
        ),
        (Some(i), false) if i > slowest => (
            Status::Warn,
            format!(
                "every {} (slower than {}, with {} tolerance)",
                fmt_s(i),
                fmt_s(rule),
                fmt_s(TOLERANCE_MS)
            ),
            None,
        ),
        (Some(i), false) => (
            Status::Pass,
            format!(
                "every {} or less ({} seen)",
                fmt_s(i),
                s.heartbeats_ms.len()
            ),
            None,
        ),
    }
}

/// Whose heartbeat was counted when a library protocol was spoken: the library's own
/// (Engine.IO pings, SignalR type-6 records, ActionCable pings...), and the interval the
/// idle chain must carry.
fn app_note(a: &super::session::AppObs) -> String {
    use rtcheck_wire::appproto::Pinger;
    let d = a.protocol.defaults();
    let every = a
        .interval()
        .map_or(String::new(), |i| format!(" every {}", fmt_s(i * 1000.0)));
    let src = if a.interval_s.is_some() {
        "announced by the server"
    } else {
        "documented"
    };
    let who = match d.pinger {
        Pinger::Server => "the server's",
        Pinger::Client => "the client's (answered by the server)",
        Pinger::Both => "both ends'",
        Pinger::Nobody => "no",
    };
    format!(
        "the heartbeat counted is {} {} heartbeat{every} ({src}); the path's idle limits must exceed it; spoken: {}",
        who,
        a.protocol.name(),
        a.label()
    )
}

fn expected() -> String {
    let (lo, hi) = production_ms();
    format!(
        "a heartbeat every {}-{} or less (measured within {} of it), shorter than every idle timeout on the path",
        fmt_s(lo).trim_end_matches(" s"),
        fmt_s(hi),
        fmt_s(TOLERANCE_MS)
    )
}

pub fn check(u: &UrlObs) -> Option<Finding> {
    let s = idle_timeout::stream(u)?;
    let (status, observed, reason) = if u.quick {
        let r = "--quick: measured during the idle test only".to_string();
        (Status::Skip, "not run".to_string(), Some(r))
    } else if let Some(cut) = &s.cut {
        // A flood is not a fast heartbeat: the probe cut it (issue 41 item 6).
        (Status::Fail, format!("cut by the probe: {cut}"), None)
    } else {
        judge(s, false)
    };
    let mut f = finding(
        &META,
        u,
        status,
        observed,
        &expected(),
        "ping 5 s + pong wait 8 s found a dead peer in 4.9 s; production uses 20-30 s; a heartbeat slower than a proxy's idle timeout lets it cut quiet connections",
        proxy::heartbeat(),
    );
    f.reason = reason;
    if let Some(a) = &s.app {
        f.observed = format!("{}; {}", f.observed, app_note(a));
        if let Some(i) = a.interval() {
            f.numbers.insert("app_interval_s".into(), i);
        }
        if let Some(d) = a.drop_after() {
            f.numbers.insert("app_drop_after_s".into(), d);
        }
    }
    if let Some(i) = interval_ms(s) {
        f.numbers
            .insert("interval_s".into(), (i / 10.0).round() / 100.0);
    }
    f.numbers
        .insert("heartbeats".into(), s.heartbeats_ms.len() as f64);
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(hb: &[f64], ended: f64, ending: Ending, reads: &[f64]) -> StreamObs {
        StreamObs {
            heartbeats_ms: hb.to_vec(),
            reads_ms: reads.to_vec(),
            ended_ms: ended,
            ending: Some(ending),
            ..Default::default()
        }
    }

    #[test]
    fn verdicts() {
        let ok = obs(&[4000.0], 6000.0, Ending::Open, &[4000.0]);
        assert_eq!(judge(&ok, false).0, Status::Pass);
        let cut = obs(&[], 3000.0, Ending::Eof, &[]);
        assert_eq!(judge(&cut, false).0, Status::Fail);
        let short = obs(&[], 5000.0, Ending::Open, &[]);
        let (st, _, why) = judge(&short, true);
        assert_eq!(st, Status::Skip);
        // The flag as it is typed, after the time watched (issue 41 item 10).
        assert_eq!(
            why.as_deref(),
            Some("watched only 5.0 s (--quick): use --idle-for 31s or more")
        );
        let slow = obs(&[45_000.0], 75_000.0, Ending::Open, &[45_000.0]);
        assert_eq!(judge(&slow, false).0, Status::Warn);
        // The `ws` README's canonical 30 s heartbeat, measured 30.03 s: within the rule.
        let canon = obs(&[30_030.0, 60_060.0], 75_000.0, Ending::Open, &[]);
        let (st, text, _) = judge(&canon, false);
        assert_eq!(st, Status::Pass, "{text}");
        let late = obs(&[31_000.0, 62_000.0], 75_000.0, Ending::Open, &[]);
        assert_eq!(judge(&late, false).0, Status::Warn);
        assert_eq!(
            interval_ms(&obs(&[2000.0, 4500.0], 5000.0, Ending::Open, &[])),
            Some(2500.0)
        );
    }
}
