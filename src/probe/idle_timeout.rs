//! `idle-timeout`: hold the connection with no traffic from the client for --idle-for and
//! record when and how the path closed it. A proxy cuts a connection silent longer than its
//! idle timeout (nginx proxy_read_timeout 60 s by default): evidence proxy-config,
//! ping-timing.
use super::session::{Afterward, Ending, StreamObs};
use super::{finding, fmt_s, proxy, Kind, Meta, UrlObs};
use crate::findings::{Finding, Status};

pub const ID: &str = super::CheckId::IdleTimeout.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::IdleTimeout,
    title: "Idle connection held by the path",
    evidence: &["proxy-config", "ping-timing"],
    run: check,
};

/// A watch that ends this close to its window watched all of it (timer granularity).
const WINDOW_SLACK_MS: f64 = 50.0;

pub fn ending_text(e: &Ending) -> String {
    match e {
        Ending::Open => "still open".into(),
        Ending::CloseFrame(Some(c)) => format!("close frame {c}"),
        Ending::CloseFrame(None) => "close frame without a code".into(),
        Ending::Eof => {
            "EOF: closed by the path (the proxy or the server; which one is not known)".into()
        }
        Ending::Reset => "connection reset".into(),
        Ending::Error(e) => format!("read error: {e}"),
    }
}

/// The silence that preceded a close: the path's idle timeout as measured (ms).
pub fn silence_before_close(s: &StreamObs) -> Option<f64> {
    if matches!(s.ending, Some(Ending::Open) | None) {
        return None;
    }
    Some(s.ended_ms - s.reads_ms.last().copied().unwrap_or(0.0))
}

pub fn stream(u: &UrlObs) -> Option<&StreamObs> {
    match u.kind {
        Kind::WebSocket => u.ws.as_ref()?.stream.as_ref(),
        Kind::Sse => u.sse.as_ref()?.stream.as_ref(),
        Kind::Poll => None,
    }
}

/// A WebSocket that looked open the whole window but was gone when written to: what the
/// ping sent after the silence found (None: answered, not sent, or not known to be lost).
/// Lost means measured: a RST or EOF on writing, or TCP still waiting for the ping's
/// acknowledgement (a reply that never came back is the path's, not the server's).
pub fn silent_cut(s: &StreamObs) -> Option<String> {
    let a = s.after_idle.as_ref()?;
    match &a.outcome {
        Afterward::Ended(e) => Some(format!(
            "a ping sent after the silence met {}",
            ending_text(e)
        )),
        Afterward::Silent {
            tcp: Some(t),
            retrans,
            ..
        } if t.unacked > 0 => Some(format!(
            "a ping sent after the silence got no answer in {}, no FIN, no RST, and TCP never saw it acknowledged ({} segment(s) unacknowledged, {} retransmission(s))",
            fmt_s(a.waited_ms),
            t.unacked,
            retrans.unwrap_or(0)
        )),
        _ => None,
    }
}

/// The silence that preceded the ping after the idle watch (ms): from the last bytes read
/// to the ping. A flow forgotten in silence was forgotten within it (nothing came back
/// after a cut), so it is an upper bound on the forgetting hop's limit.
pub fn silence_before_ping(s: &StreamObs) -> Option<f64> {
    let a = s.after_idle.as_ref()?;
    let last = s
        .reads_ms
        .iter()
        .copied()
        .filter(|&t| t <= a.sent_ms)
        .fold(0.0, f64::max);
    Some((a.sent_ms - last).max(0.0))
}

/// Whether the ping after the silence went unanswered with no FIN or RST (a RFC 6455
/// peer owes a pong: unanswered is never a pass).
fn unanswered(s: &StreamObs) -> bool {
    s.after_idle
        .as_ref()
        .is_some_and(|a| matches!(a.outcome, Afterward::Silent { .. }))
}

/// What the ping after the silence showed when it does not show a cut.
fn after_idle_note(s: &StreamObs) -> String {
    match s.after_idle.as_ref().map(|a| (a, &a.outcome)) {
        Some((_, Afterward::Answered(ms))) => {
            format!("; a ping after the silence was answered in {}", fmt_s(*ms))
        }
        Some((
            a,
            Afterward::Silent {
                tcp: Some(_),
                acked: true,
                ..
            },
        )) => format!(
            "; a ping after the silence was acknowledged by TCP but not answered in {}: RFC 6455 requires a pong, so whether the server still holds the connection is not known (the acknowledgement may be a layer-7 proxy's; a NAT or conntrack table behind it may have forgotten the flow)",
            fmt_s(a.waited_ms)
        ),
        Some((a, Afterward::Silent { tcp: Some(t), .. })) => format!(
            "; a ping after the silence was not answered in {} and TCP did not show it acknowledged ({}): whether the path still carries the connection is not known",
            fmt_s(a.waited_ms),
            match t.notsent {
                Some(n) if n > 0 => format!("{n} B still unsent: the peer's window held it back"),
                Some(_) if t.bytes_acked.is_some() => "the acknowledged byte count did not grow by the ping's length".to_string(),
                _ => "this kernel's TCP_INFO does not count acknowledged or unsent bytes".to_string(),
            }
        ),
        Some((a, _)) => format!(
            "; a ping after the silence was not answered in {} and TCP's state could not be read: whether the path still carries the connection is not known",
            fmt_s(a.waited_ms)
        ),
        None => String::new(),
    }
}

/// How a close is explained by the library protocol spoken on the connection: the server
/// ended the session at the protocol level (its reason), or the close came when the
/// library's own heartbeat timeout drops a silent peer. Either is the application layer's
/// doing, never a proxy's; a close at any other time is still the path's.
pub fn app_close(s: &StreamObs) -> Option<String> {
    let a = s.app.as_ref()?;
    if let Some(r) = &a.closed {
        return Some(format!(
            "the {} server ended the session at the protocol level: {r}",
            a.protocol.name()
        ));
    }
    // The silence before the close matches the library's drop: the whole drop time after
    // the client's last word (a client-driven heartbeat), or the server's wait for an
    // answer after its last ping (Engine.IO's pingTimeout). Never the close time alone:
    // a proxy's 60 s cut may fall on a library's default too.
    let drop = a.drop_after()? * 1000.0;
    let answer_wait = a.protocol.defaults().timeout_s.map(|t| t * 1000.0);
    let wait = match (a.drop_after_s, a.interval_s) {
        (Some(d), Some(i)) => Some((d - i) * 1000.0),
        _ => answer_wait,
    };
    let silence = silence_before_close(s)?;
    let near = |t: f64, want: f64| (t - want).abs() <= (want * 0.1).max(2000.0);
    let server_wait = a.heartbeats > 0 && wait.is_some_and(|w| near(silence, w));
    (near(silence, drop) || server_wait).then(|| {
        format!(
            "the close matches {}'s own heartbeat timeout ({}): the application layer dropped the client, not a proxy",
            a.protocol.name(),
            fmt_s(drop)
        )
    })
}

/// The fix for a close the application layer made.
fn app_fix(s: &StreamObs) -> crate::findings::Fix {
    let name = s.app.as_ref().map_or("the library", |a| a.protocol.name());
    crate::findings::Fix {
        summary: format!(
            "not a proxy: read the server's log for why {name} ended the session; check the client speaks the version the server expects (`--app-protocol`, the URL's EIO= or vsn=)"
        ),
        ..Default::default()
    }
}

/// The check's verdict before it is a finding: what was measured, and the fix when the
/// cause is not a proxy's idle timeout.
struct Judged {
    status: Status,
    observed: String,
    reason: Option<String>,
    numbers: Vec<(&'static str, f64)>,
    fix: Option<crate::findings::Fix>,
}

impl Judged {
    fn skip(observed: &str, reason: String) -> Judged {
        Judged {
            status: Status::Skip,
            observed: observed.into(),
            reason: Some(reason),
            numbers: Vec::new(),
            fix: None,
        }
    }

    fn of(status: Status, observed: String) -> Judged {
        Judged {
            status,
            observed,
            reason: None,
            numbers: Vec::new(),
            fix: None,
        }
    }
}

pub fn check(u: &UrlObs) -> Option<Finding> {
    let j = match (stream(u), u.quick, u.kind) {
        (_, _, Kind::Poll) => Judged::skip("polling", "polling holds no connection open".into()),
        (_, true, _) => Judged::skip("not run", "--quick: idle test not run".into()),
        (None, _, _) => Judged::skip("no stream", "no connection was established to hold".into()),
        (Some(s), false, _) => judge_held(u, s),
    };
    let expected = format!("open for --idle-for {}", fmt_s(u.idle_for_ms));
    let mut f = finding(
        &META,
        u,
        j.status,
        j.observed,
        &expected,
        "every proxy cuts a connection silent longer than its idle timeout (nginx: proxy_read_timeout 60 s); the heartbeat must come sooner",
        proxy::idle(u.proxy),
    );
    f.reason = j.reason;
    if let Some(fix) = j.fix {
        f.fix = fix;
    }
    if let Some(a) = stream(u).and_then(|s| s.app.as_ref()) {
        f.observed = format!("{}; spoken: {}", f.observed, a.label());
    }
    for (k, v) in j.numbers {
        f.numbers.insert(k.into(), (v * 1000.0).round() / 1000.0);
    }
    Some(f)
}

/// A stream held for the idle watch: how long, and how it ended.
fn judge_held(u: &UrlObs, s: &StreamObs) -> Judged {
    let silence = s.longest_silence_ms();
    let held = vec![
        ("longest_silence_s", silence / 1000.0),
        ("held_s", s.ended_ms / 1000.0),
        // When this URL's probe began in the run: URLs are probed at once.
        ("started_s", u.started_ms / 1000.0),
    ];
    let mut j = match &s.ending {
        // Refused or closed at once: nothing was held (upgrade or sse-buffering says so
        // and fails).
        Some(_) if super::closed::refused(s, false).is_some() => Judged::skip(
            "not measured",
            super::closed::refused(s, false)
                .map(|c| super::closed::skip_reason(&c))
                .unwrap_or_default(),
        ),
        Some(Ending::Open) | None => judge_open(u, s, silence),
        Some(e) => judge_closed(s, e, silence),
    };
    j.numbers.extend(held);
    j
}

/// A stream still open at the end of the watch: a silent cut shown by the ping after it,
/// an unanswered ping, or held.
fn judge_open(u: &UrlObs, s: &StreamObs, silence: f64) -> Judged {
    // The watch stopped before --idle-for: no idle period measured.
    if s.ended_ms + WINDOW_SLACK_MS < s.window_ms {
        return Judged::skip(
            "not measured",
            format!(
                "the watch stopped after {} of --idle-for {}: no idle period was measured",
                fmt_s(s.ended_ms),
                fmt_s(s.window_ms)
            ),
        );
    }
    if let Some(cut) = silent_cut(s) {
        let before = silence_before_ping(s).unwrap_or(silence);
        let mut j = Judged::of(
            Status::Fail,
            format!(
                "silent cut: no FIN or RST in {} held, but {cut}: a NAT, conntrack table or layer-4 balancer forgot the connection within the {} of silence before the ping (an upper bound on its limit){}",
                fmt_s(s.ended_ms),
                fmt_s(before),
                silent_candidates(u, before)
            ),
        );
        j.numbers.push(("silent_cut_within_s", before / 1000.0));
        j.fix = Some(silent_cut_fix());
        return j;
    }
    // Unanswered, not shown lost: lost past a proxy, ignored, or never sent; not known,
    // never a pass (an acknowledgement is not an answer).
    if unanswered(s) {
        return Judged::of(
            Status::Warn,
            format!(
                "held open {} with no FIN or RST{}",
                fmt_s(s.ended_ms),
                after_idle_note(s)
            ),
        );
    }
    Judged::of(
        Status::Pass,
        format!(
            "held open {} with nothing sent by the client; longest silence from the server {}{}{}",
            fmt_s(s.ended_ms),
            fmt_s(silence),
            if s.events.is_empty() {
                String::new()
            } else {
                format!("; {}", s.messages_text())
            },
            after_idle_note(s)
        ),
    )
}

/// A stream the far side ended during the watch: the library's own doing, or the path's
/// idle timeout after the silence before it.
fn judge_closed(s: &StreamObs, e: &Ending, silence: f64) -> Judged {
    let closed_after = ("closed_after_s", s.ended_ms / 1000.0);
    if let Some(why) = app_close(s) {
        let mut j = Judged::of(
            Status::Warn,
            format!(
                "closed after {} by {}: {why}",
                fmt_s(s.ended_ms),
                ending_text(e)
            ),
        );
        j.numbers.push(closed_after);
        j.fix = Some(app_fix(s));
        return j;
    }
    let before = silence_before_close(s).unwrap_or(silence);
    let mut j = Judged::of(
        Status::Fail,
        format!(
            "closed after {} by {} following {} of silence; {} heartbeat(s) seen",
            fmt_s(s.ended_ms),
            ending_text(e),
            fmt_s(before),
            s.heartbeats_ms.len()
        ),
    );
    j.numbers.push(closed_after);
    j.numbers.push(("idle_timeout_s", before / 1000.0));
    j
}

/// Without a declared path: the catalogue's silent cutters whose documented limit fits
/// the silence, else an unnamed one (the path's own check names a declared hop).
fn silent_candidates(u: &UrlObs, silence: f64) -> String {
    if u.path.is_some() {
        return String::new();
    }
    let ids: Vec<String> = crate::hops::catalog()
        .iter()
        .filter(|h| crate::hops::cut::forgets_silently(h))
        .map(|h| h.id.clone())
        .collect();
    let within = std::time::Duration::from_secs_f64(silence.max(0.0) / 1000.0);
    let t = u.kind.transport();
    let known: Vec<String> =
        crate::hops::cut::silent_cutters(&ids, &crate::hops::chain::Overrides::new(), within, t)
            .into_iter()
            .filter(|c| c.default_s > 0)
            .map(|c| format!("{} ({} s)", c.hop, c.default_s))
            .collect();
    if known.is_empty() {
        format!(
            "; an unnamed silent cutter at {} or less: no hop rtcheck knows documents a limit that short (declare it: --path HOP --override HOP.idle=...)",
            fmt_s(silence)
        )
    } else {
        format!(
            "; documented limits that fit: {} (declare the path with --path to name it)",
            known.join(", ")
        )
    }
}

/// The fix for a flow forgotten in silence: traffic more often than the cutter's limit.
fn silent_cut_fix() -> crate::findings::Fix {
    crate::findings::Fix {
        summary: "keep the connection busy more often than the forgetting hop's idle limit: a server heartbeat (WebSocket ping), or TCP keepalive set in the server's own network namespace (a pod's: audit --netns); its limit is at most the silence before the ping (silent_cut_within_s, an upper bound); rerun with a shorter --idle-for to bracket it".into(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_before_a_close_is_the_timeout_found() {
        let cut = StreamObs {
            head_ms: 5.0,
            reads_ms: vec![5.0, 400.0],
            ended_ms: 3400.0,
            ending: Some(Ending::Eof),
            ..Default::default()
        };
        assert_eq!(silence_before_close(&cut), Some(3000.0));
        assert_eq!(cut.longest_silence_ms(), 3000.0);
        let open = StreamObs {
            ending: Some(Ending::Open),
            ended_ms: 6000.0,
            ..cut.clone()
        };
        assert_eq!(silence_before_close(&open), None);
        assert_eq!(open.longest_silence_ms(), 5600.0);
        assert!(ending_text(&Ending::CloseFrame(Some(1001))).contains("1001"));
    }

    #[test]
    fn a_ping_lost_after_the_silence_is_a_silent_cut_an_ignored_one_is_not() {
        use crate::probe::session::{AfterIdle, Afterward};
        use rtcheck_base::os::tcpinfo::SendState;
        let after = |outcome| StreamObs {
            head_ms: 5.0,
            reads_ms: vec![5.0],
            ended_ms: 8000.0,
            window_ms: 8000.0,
            ending: Some(Ending::Open),
            after_idle: Some(AfterIdle {
                sent_ms: 8000.0,
                waited_ms: 10_000.0,
                outcome,
            }),
            ..Default::default()
        };
        let st = |unacked, notsent| SendState {
            unacked,
            total_retrans: 6,
            bytes_acked: Some(100),
            notsent: Some(notsent),
        };
        let lost = after(Afterward::Silent {
            tcp: Some(st(1, 0)),
            retrans: Some(6),
            acked: false,
        });
        let why = silent_cut(&lost).expect("unacknowledged: the path dropped it");
        assert!(why.contains("1 segment(s) unacknowledged"), "{why}");
        assert!(silent_cut(&after(Afterward::Ended(Ending::Reset))).is_some());
        // Acknowledged, unanswered: not a cut, not known either (the ack may be a proxy's).
        let ignored = after(Afterward::Silent {
            tcp: Some(st(0, 0)),
            retrans: Some(0),
            acked: true,
        });
        assert_eq!(silent_cut(&ignored), None);
        let note = after_idle_note(&ignored);
        assert!(note.contains("acknowledged by TCP"), "{note}");
        assert!(
            note.contains("not known") && !note.contains("carried"),
            "{note}"
        );
        // Nothing unacknowledged because nothing was sent (zero window): not "acknowledged".
        let unsent = after(Afterward::Silent {
            tcp: Some(st(0, 24)),
            retrans: Some(0),
            acked: false,
        });
        assert_eq!(silent_cut(&unsent), None);
        let note = after_idle_note(&unsent);
        assert!(note.contains("24 B still unsent"), "{note}");
        assert!(!note.contains("acknowledged by TCP"), "{note}");
        // TCP unreadable: no verdict either way.
        let unknown = after(Afterward::Silent {
            tcp: None,
            retrans: None,
            acked: false,
        });
        assert_eq!(silent_cut(&unknown), None);
        assert!(after_idle_note(&unknown).contains("not known"));
        assert_eq!(silent_cut(&after(Afterward::Answered(3.0))), None);
        // Every unanswered ping is "unanswered" (a warn at best), whatever TCP said.
        assert!(unanswered(&ignored) && unanswered(&unsent) && unanswered(&unknown));
        assert!(!unanswered(&after(Afterward::Answered(3.0))));
    }

    #[test]
    fn the_cut_bound_is_the_silence_before_the_ping_not_the_longest() {
        use crate::probe::session::{AfterIdle, Afterward};
        // A 6 s silence early, then reads until 7 s, the ping at 10 s: the flow was
        // forgotten within the last 3 s (nothing came back after a cut), not within 6 s.
        let s = StreamObs {
            head_ms: 5.0,
            reads_ms: vec![5.0, 6005.0, 7000.0],
            ended_ms: 10_000.0,
            window_ms: 10_000.0,
            ending: Some(Ending::Open),
            after_idle: Some(AfterIdle {
                sent_ms: 10_000.0,
                waited_ms: 5000.0,
                outcome: Afterward::Ended(Ending::Reset),
            }),
            ..Default::default()
        };
        assert_eq!(s.longest_silence_ms(), 6000.0);
        assert_eq!(silence_before_ping(&s), Some(3000.0));
        assert_eq!(silence_before_ping(&StreamObs::default()), None);
    }
}
