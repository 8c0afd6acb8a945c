//! `sse-buffering`: how events arrive through the path. Each read is timed: with rtcheck's
//! payload (seq + ts) the added delay is exact on one host, and its spread is exact across
//! hosts (clock offset cancels); otherwise several events in one read after a silence
//! mean a buffer released them (evidence proxy-config: 6.6 s of silence behind a buffering
//! proxy).
use super::session::{timing, Ending, SseObs, StreamObs, Timing, BURST_SILENCE_MS, DELAY_FAIL_MS};
use super::{finding, fmt_s, proxy, Kind, Meta, UrlObs};
use crate::findings::{Finding, Status};

pub const ID: &str = super::CheckId::SseBuffering.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::SseBuffering,
    title: "SSE delivery through the path (buffering)",
    evidence: &["proxy-config"],
    run: check,
};
/// Spread of one-way delays (different clocks) above which events were held.
pub const SPREAD_FAIL_MS: f64 = 1000.0;

/// The verdict and what to print, from the timing alone (pure).
pub fn judge(t: &Timing, same_clock: bool, direct_first_ms: Option<f64>) -> (Status, String) {
    let mut parts = vec![format!(
        "{} event(s) in {} read(s), first after {}",
        t.events,
        t.reads,
        t.first_event_ms.map_or("-".into(), fmt_s)
    )];
    let mut status = Status::Pass;
    if let (true, Some(d)) = (same_clock, t.max_delay_ms) {
        parts.push(format!(
            "added delay up to {} (payload ts, same clock)",
            fmt_s(d)
        ));
        if d > DELAY_FAIL_MS {
            status = Status::Fail;
        }
    } else if let Some(sp) = t.spread_ms {
        parts.push(format!("delay spread {} (payload ts)", fmt_s(sp)));
        if sp > SPREAD_FAIL_MS {
            status = Status::Fail;
        }
    }
    // Bursts decide only without the payload's timestamps (which measure the delay itself).
    if t.bursts > 0 && t.max_delay_ms.is_none() {
        parts.push(format!(
            "{} read(s) delivered several events after >= {} of silence",
            t.bursts,
            fmt_s(BURST_SILENCE_MS)
        ));
        status = Status::Fail;
    }
    if let (Some(direct), Some(path)) = (direct_first_ms, t.first_event_ms) {
        parts.push(format!("direct: first event after {}", fmt_s(direct)));
        if path - direct > SPREAD_FAIL_MS {
            status = Status::Fail;
        }
    }
    (status, parts.join("; "))
}

/// A response head later than this (ms) was held on the path with the first events.
pub const HEAD_HELD_MS: f64 = 1000.0;

pub fn check(u: &UrlObs) -> Option<Finding> {
    if let (Some(bound), Kind::Sse) = (u.head_held_ms, u.kind) {
        return Some(never_headed(u, bound));
    }
    let sse = u.sse.as_ref()?;
    if u.kind == Kind::Poll && super::response::problem(u.kind, sse).is_none() {
        return Some(polled(u, sse));
    }
    let expected = "each event delivered as it is sent (added delay < 1 s, no bursts)";
    let (status, observed, reason, numbers) = match &sse.stream {
        None => (
            Status::Skip,
            format!("HTTP {}: no event stream", sse.head.status),
            Some(format!(
                "no event stream to time: HTTP {} (see `{}`)",
                sse.head.status,
                super::response::ID
            )),
            vec![],
        ),
        Some(s) => judge_stream(u, sse, s),
    };
    let mut f = finding(
        &META,
        u,
        status,
        observed,
        expected,
        "a buffering proxy completes the SSE handshake, then holds events (6.6 s of silence measured)",
        proxy::buffering(u.proxy),
    );
    f.reason = reason;
    for (k, v) in numbers {
        f.numbers.insert(k.into(), (v * 10.0).round() / 10.0);
    }
    Some(f)
}

/// What one verdict is made of: status, observed, the reason for a skip, numbers.
type Verdict = (Status, String, Option<String>, Vec<(&'static str, f64)>);

/// The stream that came: a head held, unreadable or broken, no event, or events timed.
fn judge_stream(u: &UrlObs, sse: &SseObs, s: &StreamObs) -> Verdict {
    match s {
        s if s.head_ms >= HEAD_HELD_MS && !direct_head_late(u, s) && held_by_path(u, s) => (
            Status::Fail,
            format!(
                "head held {} by the path{}{}",
                fmt_s(s.head_ms),
                events_after_head(s),
                direct_head(u)
            ),
            None,
            vec![("head_ms", s.head_ms), ("events", s.events.len() as f64)],
        ),
        s if s.head_ms >= HEAD_HELD_MS && !direct_head_late(u, s) => (
            Status::Warn,
            format!(
                "the head came only with the server's first write, after {}: the server holds its head until it writes (EventSource opens late; Node: res.flushHeaders()){}",
                fmt_s(s.head_ms),
                events_after_head(s)
            ),
            None,
            vec![("head_ms", s.head_ms), ("events", s.events.len() as f64)],
        ),
        s if s.unreadable.is_some() => (
            Status::Fail,
            s.unreadable.clone().unwrap_or_default(),
            None,
            vec![],
        ),
        s if broken(s).is_some() => (
            Status::Fail,
            broken(s).unwrap_or_default(),
            None,
            vec![("body_bytes", s.body_bytes as f64)],
        ),
        s if s.events.is_empty() => (
            Status::Skip,
            format!("no event in {}", fmt_s(s.ended_ms)),
            Some(format!(
                "no event arrived in {} to time{}{}",
                fmt_s(s.ended_ms),
                held_head(s),
                match &s.encoding {
                    Some(e) => format!(
                        " ({} B arrived compressed with {e}: see `{}`)",
                        s.wire_bytes,
                        super::compression::ID
                    ),
                    None => String::new(),
                }
            )),
            vec![("head_ms", s.head_ms)],
        ),
        s => timed(u, sse, s),
    }
}

/// Events arrived: their timing judged, with the headers' notes and the head's wait.
fn timed(u: &UrlObs, sse: &SseObs, s: &StreamObs) -> Verdict {
    let t = timing(s);
    let direct = u
        .direct
        .as_ref()
        .and_then(|d| d.stream.as_ref())
        .and_then(|d| d.events.first())
        .map(|e| e.at_ms);
    let (mut st, mut obs) = judge(&t, u.target.is_loopback(), direct);
    if let Some(e) = &u.direct_error {
        obs.push_str(&format!("; direct not measured: {e}"));
    }
    let (hst, notes) = header_notes(&sse.head);
    st = st.max(hst);
    obs.push_str(&notes);
    obs.push_str(&held_head(s));
    let mut nums = vec![("events", t.events as f64), ("bursts", t.bursts as f64)];
    if let Some(d) = t.max_delay_ms {
        nums.push(("max_delay_ms", d));
    }
    if let Some(f) = t.first_event_ms {
        nums.push(("first_event_ms", f));
    }
    (st, obs, None, nums)
}

/// An event stream that cannot be one: it ended without a byte of body, or its body held
/// neither an event nor a comment (random bytes, fields without `data:`). A quiet stream
/// (open, nothing sent yet) is not broken: nothing was there to time.
pub fn broken(s: &StreamObs) -> Option<String> {
    if !s.events.is_empty() || s.unreadable.is_some() {
        return None;
    }
    let ended = !matches!(s.ending, Some(Ending::Open) | None);
    // Compressed bytes that never decoded are the compressor's holding (`compression`).
    let held_compressed = s.encoding.is_some() && s.wire_bytes > 0;
    if s.body_bytes == 0 && ended && !held_compressed {
        return Some(format!(
            "the event stream ended after {} with an empty body ({}): no event, and EventSource reconnects in a loop",
            fmt_s(s.ended_ms),
            super::idle_timeout::ending_text(s.ending.as_ref().unwrap_or(&Ending::Eof))
        ));
    }
    // A `retry:` line and no event yet is a quiet stream, not garbage.
    if s.body_bytes > 0 && s.heartbeats_ms.is_empty() && s.events.is_empty() && s.sse_fields == 0 {
        return Some(format!(
            "{} B of body in {}, none of it an SSE event or comment (no `data:` line ended by a blank line): EventSource delivers nothing",
            s.body_bytes,
            fmt_s(s.ended_ms)
        ));
    }
    None
}

/// No head within the bound: the path held it (the issue measured nginx holding a slow
/// stream's head ~100 s, then 4 KB bursts).
fn never_headed(u: &UrlObs, bound_ms: f64) -> Finding {
    let mut f = finding(
        &META,
        u,
        Status::Fail,
        format!(
            "head held more than {} by the path: no response head within --head-timeout (a buffering proxy sends a slow stream's head with its first full buffer){}",
            fmt_s(bound_ms),
            direct_head(u)
        ),
        "the response head at once, then each event as it is sent",
        "a buffering proxy completes the SSE handshake, then holds events (6.6 s of silence measured); with a slow stream it holds the head too",
        proxy::buffering(u.proxy),
    );
    f.numbers.insert("head_held_ms".into(), bound_ms.round());
    f
}

/// A late head was the path's doing: the --direct head came at once, or the head brought
/// a buffer (several events in its read), or the payload's timestamps show the delay. A
/// head with just its first event, and no other evidence, is a server that sends its head
/// with its first write.
fn held_by_path(u: &UrlObs, s: &StreamObs) -> bool {
    let direct_fast = direct_head_ms(u).is_some_and(|d| s.head_ms - d >= HEAD_HELD_MS);
    let Some(&first_at) = s.reads_ms.first().filter(|_| s.with_head_bytes > 0) else {
        // The head came alone, late: held, with nothing that shows the server waited.
        return true;
    };
    let events = s.events.iter().filter(|e| e.read == 0).count();
    let comments = s.heartbeats_ms.iter().filter(|&&h| h == first_at).count();
    let t = timing(s);
    let delayed = u.target.is_loopback() && t.max_delay_ms.is_some_and(|d| d > DELAY_FAIL_MS);
    direct_fast || events + comments >= 2 || delayed
}

/// What the --direct endpoint did with the same request, when it was asked.
fn direct_head(u: &UrlObs) -> String {
    if let Some(e) = &u.direct_error {
        return format!("; direct: {e}");
    }
    let Some(d) = &u.direct else {
        return String::new();
    };
    match &d.stream {
        Some(s) => format!(
            "; direct: head after {}, first event after {}",
            fmt_s(s.head_ms),
            s.events.first().map_or("-".into(), |e| fmt_s(e.at_ms))
        ),
        None => format!("; direct: HTTP {}", d.head.status),
    }
}

/// The --direct endpoint's head (ms), when it was measured.
fn direct_head_ms(u: &UrlObs) -> Option<f64> {
    u.direct
        .as_ref()
        .and_then(|d| d.stream.as_ref())
        .map(|d| d.head_ms)
}

/// The --direct endpoint's head was about as late: the server, not the path, holds it.
fn direct_head_late(u: &UrlObs, s: &StreamObs) -> bool {
    direct_head_ms(u).is_some_and(|d| d >= HEAD_HELD_MS && s.head_ms - d < HEAD_HELD_MS)
}

fn events_after_head(s: &StreamObs) -> String {
    format!(
        "; then {} event(s) in {} read(s)",
        s.events.len(),
        s.reads_ms.len()
    )
}

/// A response head that took over a second: a buffering proxy may hold it with the body.
fn held_head(s: &StreamObs) -> String {
    if s.head_ms >= BURST_SILENCE_MS {
        format!("; the response head itself came after {}", fmt_s(s.head_ms))
    } else {
        String::new()
    }
}

/// What the headers say about buffering and caching on the way: a stream without
/// `Cache-Control: no-cache`/`no-store` may be held or replayed by a cache (warn).
pub fn header_notes(h: &rtcheck_wire::http::response::Head) -> (Status, String) {
    let mut notes = String::new();
    let mut st = Status::Pass;
    if h.has_token("x-accel-buffering", "no") {
        notes.push_str("; X-Accel-Buffering: no");
    }
    let cc = h.header("cache-control").unwrap_or("").to_ascii_lowercase();
    if !(cc.contains("no-cache") || cc.contains("no-store")) {
        st = Status::Warn;
        notes.push_str(&format!(
            "; Cache-Control `{}` lets a cache hold the stream (send no-cache)",
            if cc.is_empty() { "(none)" } else { cc.as_str() }
        ));
    }
    (st, notes)
}

/// The answer was not an event stream: say what it was (probed as polling).
fn polled(u: &UrlObs, sse: &super::session::SseObs) -> Finding {
    let mut f = finding(
        &META,
        u,
        Status::Skip,
        format!(
            "HTTP {} {}",
            sse.head.status,
            sse.head
                .header("content-type")
                .unwrap_or("(no content type)")
        ),
        "an event stream (text/event-stream)",
        "polling holds no stream: nothing to buffer",
        Default::default(),
    );
    f.reason = Some(format!(
        "not an event stream (HTTP {}, {}): probed as polling",
        sse.head.status,
        sse.head.header("content-type").unwrap_or("no content type")
    ));
    f
}

#[cfg(test)]
mod tests {
    /// Issue 41 item 9: random bytes, an empty body and fields without `data:` are a
    /// broken stream (fail); a quiet open stream or one with only comments is not.
    #[test]
    fn a_stream_without_events_is_broken_only_when_it_carried_something_else() {
        let base = StreamObs {
            ended_ms: 3000.0,
            ending: Some(Ending::Open),
            ..Default::default()
        };
        let garbage = StreamObs {
            body_bytes: 4096,
            ..base.clone()
        };
        assert!(broken(&garbage).unwrap().contains("4096 B of body"));
        let empty = StreamObs {
            ending: Some(Ending::Eof),
            ended_ms: 20.0,
            ..base.clone()
        };
        assert!(broken(&empty).unwrap().contains("empty body"));
        assert_eq!(broken(&base), None, "quiet and open: nothing to time");
        let comments = StreamObs {
            body_bytes: 30,
            heartbeats_ms: vec![10.0],
            ..base.clone()
        };
        assert_eq!(broken(&comments), None);
        // Compressed bytes not decoded yet when it ended: compression's finding, not this.
        let held = StreamObs {
            encoding: Some("gzip".into()),
            wire_bytes: 300,
            ..empty.clone()
        };
        assert_eq!(broken(&held), None);
    }

    use super::super::session::EventRec;
    use super::*;

    fn ev(at: f64, read: usize, delay_ms: f64) -> EventRec {
        EventRec {
            at_ms: at,
            read,
            id: None,
            name: None,
            seq_ts: Some((1, 1_000_000_000_000)),
            wall_ns: 1_000_000_000_000 + (delay_ms * 1e6) as u64,
        }
    }

    #[test]
    fn headers_decide_cache_and_note_accel() {
        let head = |pairs: &[(&str, &str)]| rtcheck_wire::http::response::Head {
            status: 200,
            reason: String::new(),
            headers: pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        };
        let (st, n) = header_notes(&head(&[
            ("cache-control", "no-store"),
            ("x-accel-buffering", "no"),
        ]));
        assert_eq!(st, Status::Pass);
        assert!(n.contains("X-Accel-Buffering"));
        let (st, n) = header_notes(&head(&[("cache-control", "public, max-age=60")]));
        assert_eq!(st, Status::Warn, "{n}");
        assert_eq!(header_notes(&head(&[])).0, Status::Warn);
    }

    #[test]
    fn prompt_events_pass_held_events_fail() {
        let ok = StreamObs {
            reads_ms: vec![200.0, 400.0],
            events: vec![ev(200.0, 0, 2.0), ev(400.0, 1, 3.0)],
            ..Default::default()
        };
        assert_eq!(judge(&timing(&ok), true, None).0, Status::Pass);
        let held = StreamObs {
            reads_ms: vec![3000.0],
            events: vec![ev(3000.0, 0, 2800.0), ev(3000.0, 0, 2600.0)],
            ..Default::default()
        };
        let t = timing(&held);
        assert_eq!(t.bursts, 1);
        let (st, text) = judge(&t, true, None);
        assert_eq!(st, Status::Fail);
        assert!(text.contains("added delay up to 2.8 s"), "{text}");
        // A foreign payload (no ts): the burst pattern decides.
        let mut foreign = held.clone();
        foreign.events.iter_mut().for_each(|e| e.seq_ts = None);
        assert_eq!(judge(&timing(&foreign), true, None).0, Status::Fail);
        foreign.reads_ms = vec![300.0];
        foreign.events.iter_mut().for_each(|e| e.at_ms = 300.0);
        assert_eq!(judge(&timing(&foreign), true, None).0, Status::Pass);
        // Different clocks: only the spread counts (offset cancels).
        let skewed = StreamObs {
            reads_ms: vec![200.0, 400.0],
            events: vec![ev(200.0, 0, 5000.0), ev(400.0, 1, 5010.0)],
            ..Default::default()
        };
        assert_eq!(judge(&timing(&skewed), false, None).0, Status::Pass);
    }
}
