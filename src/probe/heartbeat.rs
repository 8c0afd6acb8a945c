//! `heartbeat`: the server's ping (WebSocket) or comment (SSE) interval measured on the
//! path, against the seed's rhythm (ping 5 s + pong wait 8 s found a dead peer in 4.9 s;
//! 20-30 s in production) and against the idle timeout the path showed.
use super::session::{Ending, StreamObs};
use super::{finding, fmt_s, idle_timeout, proxy, UrlObs};
use crate::findings::{Finding, Status};

pub const ID: &str = "heartbeat";
/// Above this a heartbeat is slower than production practice (seed: 20-30 s).
pub const SLOWEST_MS: f64 = 30_000.0;

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
    let closed = !matches!(s.ending, Some(Ending::Open) | None);
    let timeout = idle_timeout::silence_before_close(s);
    match (interval_ms(s), closed) {
        (None, true) => (
            Status::Fail,
            format!(
                "the path closed the connection after {} before any heartbeat",
                fmt_s(s.ended_ms)
            ),
            None,
        ),
        (None, false) if s.ended_ms >= SLOWEST_MS => (
            Status::Warn,
            format!("no heartbeat in {}", fmt_s(s.ended_ms)),
            None,
        ),
        (None, false) => (
            Status::Skip,
            format!("no heartbeat in {}", fmt_s(s.ended_ms)),
            Some(format!(
                "watched only {}{}: use --idle-for 30s or more",
                fmt_s(s.ended_ms),
                if quick { " (--quick)" } else { "" }
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
        (Some(i), false) if i > SLOWEST_MS => (
            Status::Warn,
            format!("every {} (slower than 30 s)", fmt_s(i)),
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

pub fn check(u: &UrlObs) -> Option<Finding> {
    let s = idle_timeout::stream(u)?;
    let (status, observed, reason) = if u.quick {
        let r = "--quick: measured during the idle test only".to_string();
        (Status::Skip, "not run".to_string(), Some(r))
    } else {
        judge(s, false)
    };
    let mut f = finding(
        ID,
        u,
        "Server heartbeat (ping / SSE comment)",
        status,
        observed,
        "a heartbeat every 20-30 s or less, shorter than every idle timeout on the path",
        "ping 5 s + pong wait 8 s found a dead peer in 4.9 s; production uses 20-30 s; a heartbeat slower than a proxy's idle timeout lets it cut quiet connections",
        &["ping-timing", "ping-pong"],
        proxy::heartbeat(),
    );
    f.reason = reason;
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
        assert_eq!(judge(&short, true).0, Status::Skip);
        let slow = obs(&[45_000.0], 75_000.0, Ending::Open, &[45_000.0]);
        assert_eq!(judge(&slow, false).0, Status::Warn);
        assert_eq!(
            interval_ms(&obs(&[2000.0, 4500.0], 5000.0, Ending::Open, &[])),
            Some(2500.0)
        );
    }
}
