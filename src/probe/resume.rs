//! `resume`: reconnect with `Last-Event-ID` (what EventSource does by itself) and see what
//! comes first: the replay, a gap marker, or a silent restart (evidence seq-numbers: 615
//! events vanished with no error; ring-buffer).
use super::session::SseObs;
use super::{finding, fmt_s, proxy, Kind, Meta, UrlObs};
use crate::findings::{Finding, Status};
use rtcheck_wire::sse::seq_id;

pub const ID: &str = super::CheckId::Resume.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::Resume,
    title: "SSE resume with Last-Event-ID",
    evidence: &["seq-numbers", "ring-buffer"],
    run: check,
};

#[derive(Debug, Clone, PartialEq)]
pub struct ResumeObs {
    /// The Last-Event-ID sent (the first id seen on the first connection).
    pub sent: String,
    /// The id that followed it on the first connection, when one did.
    pub next: Option<String>,
    pub obs: SseObs,
}

pub fn judge(r: &ResumeObs) -> (Status, String) {
    if r.obs.head.status != 200 {
        return (
            Status::Fail,
            format!(
                "reconnect with Last-Event-ID {} answered HTTP {}",
                r.sent, r.obs.head.status
            ),
        );
    }
    let first = r.obs.stream.as_ref().and_then(|s| s.events.first());
    let Some(first) = first else {
        let waited = r.obs.stream.as_ref().map_or(0.0, |s| s.ended_ms);
        return (
            Status::Warn,
            format!("no event within {} after reconnecting", fmt_s(waited)),
        );
    };
    if first.name.as_deref() == Some("reset") {
        return (
            Status::Warn,
            format!(
                "a reset marker came first after Last-Event-ID {}: the server restarted (or no longer holds that id) and said so",
                r.sent
            ),
        );
    }
    if first.name.as_deref() == Some("gap") {
        return (
            Status::Warn,
            format!(
                "a gap marker came first after Last-Event-ID {}: events were lost but reported",
                r.sent
            ),
        );
    }
    let got = first.id.clone().unwrap_or_default();
    if r.next.as_deref() == Some(got.as_str()) {
        return (
            Status::Pass,
            format!(
                "replayed from Last-Event-ID {}: next event {got} first",
                r.sent
            ),
        );
    }
    by_sequence(&r.sent, &got)
}

/// The first id after the reconnect against the one sent, read as `SEQ[@EPOCH]`.
fn by_sequence(sent: &str, got: &str) -> (Status, String) {
    let (Some((a, ea)), Some((b, eb))) = (seq_id(sent), seq_id(got)) else {
        return (
            Status::Warn,
            format!(
                "after Last-Event-ID {sent} the first event had id `{got}`: ids that are not numbers cannot be ordered (replay or restart unknown)"
            ),
        );
    };
    if ea != eb {
        return (
            Status::Fail,
            format!(
                "restarted: after Last-Event-ID {sent} the first id was {got} (epoch {} -> {}) with no reset marker: what the client had is gone, silently",
                ea.unwrap_or("none"),
                eb.unwrap_or("none")
            ),
        );
    }
    match b.cmp(&a.saturating_add(1)) {
        std::cmp::Ordering::Equal => (
            Status::Pass,
            format!("replayed from Last-Event-ID {sent}: event {got} first"),
        ),
        std::cmp::Ordering::Greater => (
            Status::Fail,
            format!(
                "silently restarted: after Last-Event-ID {a} the first event was {b} ({} lost, no gap marker)",
                b - a - 1
            ),
        ),
        std::cmp::Ordering::Less => (
            Status::Fail,
            format!(
                "restarted: after Last-Event-ID {sent} the first id was {got}, at or below the one sent: the ids start over (per connection or after a restart), so a reconnect cannot resume"
            ),
        ),
    }
}

/// The reconnect came compressed and nothing decoded from it: the compressor on the path
/// held the replay, so the server's resume was not measured (Some(encoding)).
fn held_by_compression(r: &ResumeObs) -> Option<&str> {
    let s = r.obs.stream.as_ref()?;
    s.encoding.as_deref().filter(|_| s.events.is_empty())
}

pub fn check(u: &UrlObs) -> Option<Finding> {
    if u.kind != Kind::Sse {
        return None;
    }
    let stream = u.sse.as_ref()?.stream.as_ref();
    let (status, observed, reason) = match (&u.resume, stream) {
        (Some(Ok(r)), _) if held_by_compression(r).is_some() => (
            Status::Skip,
            "not measured".to_string(),
            held_by_compression(r).map(|e| {
                format!(
                    "the reconnect's events were held by compression on the path (Content-Encoding: {e}): see `{}`",
                    super::compression::ID
                )
            }),
        ),
        (Some(Ok(r)), _) => {
            let (s, o) = judge(r);
            (s, o, None)
        }
        (Some(Err(e)), _) => (
            Status::Warn,
            format!("the reconnect with Last-Event-ID failed: {e}"),
            None,
        ),
        (None, Some(s)) if !s.events.is_empty() => (
            Status::Warn,
            "events carry no `id:`: EventSource cannot resume with Last-Event-ID".to_string(),
            None,
        ),
        (None, None) => (
            Status::Skip,
            "no event stream".to_string(),
            Some(format!(
                "no event stream to resume (see `{}`)",
                super::response::ID
            )),
        ),
        _ => (
            Status::Skip,
            "no event to resume from".to_string(),
            Some("no event arrived on the first connection".to_string()),
        ),
    };
    let mut f = finding(
        &META,
        u,
        status,
        observed,
        "the events after Last-Event-ID replayed, or a gap marker",
        "without sequence numbers loss is silent (615 events vanished with no error); a ring replays a short disconnect, a gap marker reports a long one",
        proxy::resume(),
    );
    f.reason = reason;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::super::session::{EventRec, StreamObs};
    use super::*;
    use rtcheck_wire::http::response::Head;

    fn after(sent: &str, next: Option<&str>, first: Option<(&str, Option<&str>)>) -> ResumeObs {
        let events = first
            .map(|(id, name)| EventRec {
                at_ms: 1.0,
                read: 0,
                id: Some(id.to_string()),
                name: name.map(str::to_string),
                seq_ts: None,
                wall_ns: 0,
            })
            .into_iter()
            .collect();
        ResumeObs {
            sent: sent.into(),
            next: next.map(str::to_string),
            obs: SseObs {
                head: Head {
                    status: 200,
                    ..Default::default()
                },
                stream: Some(StreamObs {
                    events,
                    ended_ms: 10.0,
                    ..Default::default()
                }),
            },
        }
    }

    #[test]
    fn replay_gap_restart() {
        assert_eq!(
            judge(&after("10", Some("11"), Some(("11", None)))).0,
            Status::Pass
        );
        assert_eq!(
            judge(&after("10", None, Some(("11", None)))).0,
            Status::Pass
        );
        assert_eq!(
            judge(&after("a", Some("b"), Some(("b", None)))).0,
            Status::Pass
        );
        let (st, text) = judge(&after("10", Some("11"), Some(("50", None))));
        assert_eq!(st, Status::Fail);
        assert!(text.contains("39 lost"), "{text}");
        assert_eq!(
            judge(&after("10", None, Some(("x", Some("gap"))))).0,
            Status::Warn
        );
        assert_eq!(judge(&after("10", None, None)).0, Status::Warn);
        assert_eq!(judge(&after("a", None, Some(("c", None)))).0, Status::Warn);
        // Per-connection ids: 1 again after Last-Event-ID 1 is a restart.
        let (st, text) = judge(&after("1", None, Some(("1", None))));
        assert_eq!(st, Status::Fail, "{text}");
        assert!(text.contains("at or below"), "{text}");
        assert_eq!(judge(&after("5", None, Some(("2", None)))).0, Status::Fail);
        // SEQ@EPOCH: the next seq of the same epoch is a replay; another epoch a restart.
        assert_eq!(
            judge(&after("7@a1", None, Some(("8@a1", None)))).0,
            Status::Pass
        );
        let (st, text) = judge(&after("7@a1", None, Some(("8@b2", None))));
        assert_eq!(st, Status::Fail, "{text}");
        assert!(text.contains("epoch a1 -> b2"), "{text}");
        // An announced restart is honest: a warning, not silence.
        assert_eq!(
            judge(&after("7@a1", None, Some(("0@b2", Some("reset"))))).0,
            Status::Warn
        );
        let (st, text) = judge(&after("10@ab", None, Some(("x", Some("reset")))));
        assert_eq!(st, Status::Warn);
        assert!(text.contains("reset marker"), "{text}");
    }
}
