//! Polling checks: a URL probed as polling is asked a few times the way a poll client asks
//! (`Accept: application/json`), each answer read to its end and timed, then once more
//! with its validator (If-None-Match / If-Modified-Since). `observe` is the I/O; the five
//! checks judge its records (pure): `poll-status` (status and content type), `poll-cache`
//! (a CDN or proxy caching a poll answer serves stale data), `poll-conditional` (304 or a
//! `since` cursor), `poll-latency` (over the polls), `poll-overhead` (bytes per minute for
//! an idle client against the seed's polling at 1 s: evidence poll-1s).
use super::client::{self, ClientOpts};
use super::target::Target;
use super::{finding, fmt_s, Kind, Meta, UrlObs};
use crate::findings::{Finding, Fix, Status};
use anyhow::{anyhow, Context};
use rtcheck_wire::http::client as wire_client;
use rtcheck_wire::http::response::{Head, Reader};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const STATUS: Meta = Meta {
    id: super::CheckId::PollStatus,
    title: "Poll answer status and type",
    evidence: &["poll-1s"],
    run: status,
};
pub const CACHE: Meta = Meta {
    id: super::CheckId::PollCache,
    title: "Caching of poll answers",
    evidence: &["poll-1s"],
    run: cache,
};
pub const CONDITIONAL: Meta = Meta {
    id: super::CheckId::PollConditional,
    title: "Conditional polls",
    evidence: &["poll-1s"],
    run: conditional,
};
pub const LATENCY: Meta = Meta {
    id: super::CheckId::PollLatency,
    title: "Poll answer latency",
    evidence: &["poll-1s", "poll-5s"],
    run: poll_latency,
};
pub const OVERHEAD: Meta = Meta {
    id: super::CheckId::PollOverhead,
    title: "Idle polling overhead",
    evidence: &["poll-1s", "push-latency"],
    run: overhead,
};

/// Polls per URL: enough for a median and a worst, short enough for a quick run.
pub const POLLS: usize = 5;
/// Pause between polls (a poll client waits its interval; the latency is per answer).
const GAP: Duration = Duration::from_millis(200);
/// A poll answer whose body has not ended after this many bytes is not a poll answer: the
/// poll fails (a long poll that never ends is a stream, not an answer).
pub const MAX_BODY: usize = 16 * 1024 * 1024;

/// One poll: what was sent and what came back, in bytes and time.
#[derive(Debug, Clone, PartialEq)]
pub struct PollRec {
    pub head: Head,
    pub request_bytes: usize,
    pub head_bytes: usize,
    pub body_bytes: usize,
    /// Request sent to the last byte of the answer, ms.
    pub latency_ms: f64,
}

impl PollRec {
    pub fn answer_bytes(&self) -> usize {
        self.head_bytes + self.body_bytes
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PollObs {
    pub polls: Vec<Result<PollRec, String>>,
    /// The poll repeated with the first answer's validator (None: it had none).
    pub conditional: Option<Result<PollRec, String>>,
    /// The URL carries a `since` cursor (an incremental poll by design).
    pub since_in_url: bool,
}

impl PollObs {
    fn ok(&self) -> impl Iterator<Item = &PollRec> {
        self.polls.iter().filter_map(|p| p.as_ref().ok())
    }
    fn first(&self) -> Option<&Result<PollRec, String>> {
        self.polls.first()
    }
}

fn has_since(t: &Target) -> bool {
    t.path_and_query
        .split_once('?')
        .is_some_and(|(_, q)| q.split('&').any(|kv| kv.split('=').next() == Some("since")))
}

/// Ask `t` POLLS times, then once with the first answer's validator.
pub async fn observe(t: &Target, o: &ClientOpts) -> PollObs {
    let mut obs = PollObs {
        since_in_url: has_since(t),
        ..Default::default()
    };
    for i in 0..POLLS {
        if i > 0 {
            tokio::time::sleep(GAP).await;
        }
        obs.polls
            .push(poll(t, o, &[]).await.map_err(|e| format!("{e:#}")));
    }
    let validator = obs.first().and_then(|p| p.as_ref().ok()).and_then(|p| {
        let h = &p.head;
        h.header("etag")
            .map(|e| ("If-None-Match", e.to_string()))
            .or_else(|| {
                h.header("last-modified")
                    .map(|m| ("If-Modified-Since", m.to_string()))
            })
    });
    if let Some(v) = validator {
        obs.conditional = Some(poll(t, o, &[v]).await.map_err(|e| format!("{e:#}")));
    }
    obs
}

/// One GET on a fresh connection, read to the end of its body (bounded).
async fn poll(t: &Target, o: &ClientOpts, extra: &[(&str, String)]) -> anyhow::Result<PollRec> {
    let mut conn = client::connect(t, o, &["http/1.1"]).await?;
    let mut headers = vec![
        ("Accept", "application/json".to_string()),
        ("Connection", "close".to_string()),
    ];
    headers.extend(extra.iter().cloned());
    let req = client::request(t, o, &headers);
    let peer = format!("{}:{}", t.host, t.port);
    let start = Instant::now();
    let read = async {
        conn.io
            .write_all(&req)
            .await
            .with_context(|| format!("{peer}: sending the poll"))?;
        read_answer(&mut conn.io, &peer).await
    };
    let (head, head_bytes, body_bytes) =
        client::step(o.timeout, || format!("{peer}: the poll answer"), read).await?;
    let _ = tokio::time::timeout(Duration::from_millis(200), conn.io.shutdown()).await;
    Ok(PollRec {
        head,
        request_bytes: req.len(),
        head_bytes,
        body_bytes,
        latency_ms: start.elapsed().as_secs_f64() * 1000.0,
    })
}

/// The head and the body's size, framed as RFC 9112 says (Content-Length, chunked, or to
/// EOF; 304/204/1xx have none), read to its end (an error past [`MAX_BODY`]; the whole read
/// is bounded by --timeout).
async fn read_answer(
    io: &mut Box<dyn client::Io>,
    peer: &str,
) -> anyhow::Result<(Head, usize, usize)> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 16384];
    let (head, used, mut rest) = loop {
        let n = io
            .read(&mut chunk)
            .await
            .with_context(|| format!("{peer}: reading the poll answer"))?;
        if n == 0 {
            anyhow::bail!("{peer}: closed the connection without an HTTP response");
        }
        let fed = wire_client::feed(&mut buf, &chunk[..n], client::LIMITS);
        if let Some((head, rest)) = fed.map_err(|e| anyhow!("{peer}: {e}"))? {
            // `buf` now holds the head alone.
            break (head, buf.len(), rest);
        }
    };
    let framing = head.framing(false).map_err(|e| anyhow!("{peer}: {e}"))?;
    let mut body = Reader::new(framing);
    let mut scratch = Vec::new();
    // A poll answer cut short by the server still counts what came (its size is then a
    // lower bound).
    loop {
        body.feed_into(&rest, &mut scratch)
            .map_err(|e| anyhow!("{peer}: {e}"))?;
        scratch.clear();
        if body.done() {
            break;
        }
        // Not a poll answer: one that does not end (a stream sent as a poll) answers nothing.
        if body.bytes() as usize >= MAX_BODY {
            anyhow::bail!(
                "{peer}: the poll answer's body had not ended after {} (a poll answer is one complete document)",
                rtcheck_base::units::fmt_bytes(MAX_BODY as u64)
            );
        }
        let n = io
            .read(&mut chunk)
            .await
            .with_context(|| format!("{peer}: reading the poll answer"))?;
        if n == 0 {
            break;
        }
        rest = chunk[..n].to_vec();
    }
    Ok((head, used, body.bytes() as usize))
}

// ---- the checks (pure) ----

fn is_json(ct: &str) -> bool {
    let ct = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    ct == "application/json" || ct.ends_with("+json")
}

fn ok_2xx(p: &PollRec) -> bool {
    (200..300).contains(&p.head.status)
}

pub fn judge_status(p: &Result<PollRec, String>) -> (Status, String) {
    let p = match p {
        Ok(p) => p,
        Err(e) => return (Status::Fail, format!("the poll failed: {e}")),
    };
    let ct = p.head.header("content-type").unwrap_or("");
    let shown = if ct.is_empty() { "no Content-Type" } else { ct };
    match (ok_2xx(p), is_json(ct)) {
        (true, true) => (Status::Pass, format!("HTTP {}, {ct}", p.head.status)),
        (true, false) => (
            Status::Warn,
            format!(
                "HTTP {} with {shown}: not a poll body (JSON), not an event stream",
                p.head.status
            ),
        ),
        (false, _) => (
            Status::Fail,
            format!("HTTP {} {} ({shown})", p.head.status, p.head.reason),
        ),
    }
}

/// Cache-Control directives, lowercased: (name, value).
fn directives(cc: &str) -> Vec<(String, Option<String>)> {
    cc.split(',')
        .map(|d| d.trim().to_ascii_lowercase())
        .filter(|d| !d.is_empty())
        .map(|d| match d.split_once('=') {
            Some((k, v)) => (
                k.trim().to_string(),
                Some(v.trim().trim_matches('"').to_string()),
            ),
            None => (d, None),
        })
        .collect()
}

pub fn judge_cache(cache_control: Option<&str>) -> (Status, String) {
    let Some(cc) = cache_control else {
        return (
            Status::Warn,
            "no Cache-Control: a CDN or proxy caches the answer by its own defaults".into(),
        );
    };
    let d = directives(cc);
    let has = |n: &str| d.iter().any(|(k, _)| k == n);
    let secs = |n: &str| {
        d.iter()
            .find(|(k, _)| k == n)
            .and_then(|(_, v)| v.as_deref()?.parse::<u64>().ok())
    };
    let shared = secs("s-maxage").or(secs("max-age")).unwrap_or(0);
    if has("no-store") || has("no-cache") || (has("private") && secs("s-maxage").unwrap_or(0) == 0)
    {
        return (Status::Pass, format!("Cache-Control: {cc}"));
    }
    if shared > 0 {
        return (
            Status::Fail,
            format!("Cache-Control: {cc}: a CDN or proxy may serve this answer for {shared} s (stale data)"),
        );
    }
    if has("max-age") || has("s-maxage") {
        return (Status::Pass, format!("Cache-Control: {cc}"));
    }
    (
        Status::Warn,
        format!("Cache-Control: {cc}: no lifetime set, a shared cache decides by its defaults"),
    )
}

pub fn judge_conditional(obs: &PollObs) -> (Status, String) {
    let Some(Ok(first)) = obs.first() else {
        return (Status::Skip, "no poll answer to repeat".into());
    };
    let full = first.answer_bytes();
    match &obs.conditional {
        Some(Ok(c)) if c.head.status == 304 => (
            Status::Pass,
            format!(
                "the validator was answered 304 Not Modified: {} B instead of {full} B",
                c.answer_bytes()
            ),
        ),
        Some(Ok(c)) => (
            Status::Warn,
            format!(
                "the validator was answered HTTP {} with the full body ({} B): every poll carries it",
                c.head.status,
                c.answer_bytes()
            ),
        ),
        Some(Err(e)) => (Status::Warn, format!("the conditional poll failed: {e}")),
        None if obs.since_in_url => (
            Status::Pass,
            format!("a `since` cursor in the URL: an idle answer was {full} B"),
        ),
        None => (
            Status::Warn,
            format!("no ETag, no Last-Modified, no `since`: every poll carries the full answer ({full} B)"),
        ),
    }
}

/// Median and worst of the answered polls, ms.
pub fn latency(obs: &PollObs) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = obs.ok().map(|p| p.latency_ms).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some((v[v.len() / 2], v[v.len() - 1]))
}

/// The seed's polling interval and its idle cost (evidence poll-1s).
fn seed() -> (f64, f64) {
    (
        crate::evidence::num("poll-1s", "interval"),
        crate::evidence::num("poll-1s", "idle_bytes_per_min"),
    )
}

pub fn judge_latency(obs: &PollObs) -> (Status, String) {
    let Some((p50, max)) = latency(obs) else {
        return (Status::Fail, "no poll was answered".into());
    };
    // Polling every interval already delays a change by half of it on average (poll-1s);
    // an answer slower than that doubles the delay.
    let half = seed().0 * 1000.0 / 2.0;
    let n = obs.ok().count();
    let text = format!(
        "{n} of {} polls answered: median {:.0} ms, worst {:.0} ms",
        obs.polls.len(),
        p50,
        max
    );
    if p50 > half {
        (
            Status::Warn,
            format!(
                "{text}, above half the {} s interval ({})",
                seed().0,
                fmt_s(half)
            ),
        )
    } else {
        (Status::Pass, text)
    }
}

/// Bytes an idle client exchanges per poll: our request and the answer it would get
/// (the 304 when the validator works).
pub fn idle_bytes_per_poll(obs: &PollObs) -> Option<usize> {
    let Some(Ok(first)) = obs.first() else {
        return None;
    };
    let answer = match &obs.conditional {
        Some(Ok(c)) if c.head.status == 304 => c,
        _ => first,
    };
    Some(answer.request_bytes + answer.answer_bytes())
}

pub fn judge_overhead(obs: &PollObs) -> (Status, String, Option<f64>) {
    let Some(per_poll) = idle_bytes_per_poll(obs) else {
        return (Status::Skip, "no poll answer to measure".into(), None);
    };
    let (interval_s, seed_per_min) = seed();
    let per_min = per_poll as f64 * 60.0 / interval_s;
    let text = format!(
        "{per_poll} B per idle poll (request as probe sends it + answer): {:.1} KB per minute at one poll every {interval_s} s; the seed measured {:.1} KB",
        per_min / 1000.0,
        seed_per_min / 1000.0
    );
    let status = if per_min > seed_per_min {
        Status::Warn
    } else {
        Status::Pass
    };
    (status, text, Some(per_min))
}

fn fix(summary: &str, lines: &[&str]) -> Fix {
    Fix {
        summary: summary.into(),
        runtime: Vec::new(),
        persistent: lines.iter().map(|s| s.to_string()).collect(),
    }
}

/// The polls of a URL probed as polling (none otherwise: no polling finding).
fn polls(u: &UrlObs) -> Option<&PollObs> {
    u.poll.as_ref().filter(|_| u.kind == Kind::Poll)
}

/// The first poll's answer, when it was a 2xx.
fn answered(obs: &PollObs) -> Option<&PollRec> {
    obs.first()
        .and_then(|p| p.as_ref().ok())
        .filter(|p| ok_2xx(p))
}

/// Nothing answered 2xx: measured latency and size stay, but nothing passes on them.
fn unless_unanswered(obs: &PollObs, mut f: Finding) -> Finding {
    if answered(obs).is_none() && f.status == Status::Pass {
        f.status = Status::Skip;
        f.reason = Some("the poll URL did not answer 2xx".into());
    }
    f
}

fn status(u: &UrlObs) -> Option<Finding> {
    let obs = polls(u)?;
    let first = obs.first().cloned().unwrap_or(Err("not polled".into()));
    let (s, o) = judge_status(&first);
    let status_fix = match &first {
        Ok(p) if ok_2xx(p) => fix(
            "answer polls with a JSON body and Content-Type: application/json",
            &["server: Content-Type: application/json on the poll route"],
        ),
        _ => fix(
            "the poll URL did not answer 2xx: check the route on the proxy and in the app, and that the proxy reaches the backend",
            &[],
        ),
    };
    Some(finding(
        &STATUS,
        u,
        s,
        o,
        "2xx with a JSON body",
        "a poll client reads a 2xx JSON answer; anything else is an error page or a route miss",
        status_fix,
    ))
}

fn cache(u: &UrlObs) -> Option<Finding> {
    let obs = polls(u)?;
    let (s, o) = match answered(obs) {
        Some(p) => judge_cache(p.head.header("cache-control")),
        None => (Status::Skip, "no 2xx poll answer".into()),
    };
    Some(finding(
        &CACHE,
        u,
        s,
        o,
        "Cache-Control: no-cache, no-store or private on poll answers",
        "a CDN or proxy that caches a poll answer serves every client the same stale data until it expires",
        fix(
            "mark poll answers uncacheable by shared caches",
            &["server: Cache-Control: no-cache (or no-store, private) on every poll answer"],
        ),
    ))
}

fn conditional(u: &UrlObs) -> Option<Finding> {
    let obs = polls(u)?;
    let (s, o) = judge_conditional(obs);
    let f = finding(
        &CONDITIONAL,
        u,
        s,
        o,
        "ETag + If-None-Match answered 304, or a since cursor",
        "an idle poll that returns the full answer costs its whole size every interval",
        fix(
            "send an ETag and answer If-None-Match with 304 Not Modified (or take a since= cursor and answer only what is new)",
            &["server: ETag on the answer; 304 with no body when If-None-Match matches"],
        ),
    );
    Some(unless_unanswered(obs, f))
}

fn poll_latency(u: &UrlObs) -> Option<Finding> {
    let obs = polls(u)?;
    let (s, o) = judge_latency(obs);
    let rule = format!(
        "polling every {} s delivered a change after {:.0} ms at the median (half the interval); a slow answer adds to it",
        seed().0,
        crate::evidence::num("poll-1s", "delivery_p50")
    );
    let mut f = finding(
        &LATENCY,
        u,
        s,
        o,
        "median answer within half the polling interval",
        &rule,
        fix(
            "find what the poll handler waits on (database, lock, upstream); answer an idle poll from memory",
            &[],
        ),
    );
    if let Some((p50, max)) = latency(obs) {
        f.numbers.insert("p50_ms".into(), p50.round());
        f.numbers.insert("max_ms".into(), max.round());
    }
    f.numbers.insert("polls".into(), obs.ok().count() as f64);
    Some(unless_unanswered(obs, f))
}

fn overhead(u: &UrlObs) -> Option<Finding> {
    let obs = polls(u)?;
    let (s, o, per_min) = judge_overhead(obs);
    let (interval_s, seed_per_min) = seed();
    let kb = |v: f64| format!("{:.1} KB", v / 1000.0);
    let sse = crate::evidence::num("push-latency", "sse_idle_bytes_per_min");
    let ws = crate::evidence::num("push-latency", "ws_idle_bytes_per_min");
    let expected = format!(
        "at most the seed's {} per minute at {interval_s} s",
        kb(seed_per_min)
    );
    let rule = format!(
        "polling every {interval_s} s cost {} per minute with nothing new; SSE idled at {} and WebSocket at {}",
        kb(seed_per_min),
        kb(sse),
        kb(ws)
    );
    let advice = format!(
        "answer an idle poll with 304 (or an empty body), poll less often, or push (SSE idles at {} per minute)",
        kb(sse)
    );
    let mut f = finding(&OVERHEAD, u, s, o, &expected, &rule, fix(&advice, &[]));
    if let Some(m) = per_min {
        f.numbers.insert("bytes_per_min".into(), m.round());
        f.numbers
            .insert("bytes_per_poll".into(), (m / 60.0 * interval_s).round());
    }
    Some(unless_unanswered(obs, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(status: u16, headers: &[(&str, &str)], body: usize, ms: f64) -> PollRec {
        PollRec {
            head: Head {
                status,
                reason: String::new(),
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            },
            request_bytes: 100,
            head_bytes: 150,
            body_bytes: body,
            latency_ms: ms,
        }
    }

    #[test]
    fn status_and_type() {
        let json = rec(
            200,
            &[("content-type", "application/json; charset=utf-8")],
            50,
            1.0,
        );
        assert_eq!(judge_status(&Ok(json)).0, Status::Pass);
        let text = rec(200, &[("content-type", "text/plain")], 2, 1.0);
        assert_eq!(judge_status(&Ok(text)).0, Status::Warn);
        let missing = rec(404, &[("content-type", "text/html")], 9, 1.0);
        let (s, o) = judge_status(&Ok(missing));
        assert_eq!(s, Status::Fail);
        assert!(o.contains("404"), "{o}");
        assert_eq!(judge_status(&Err("refused".into())).0, Status::Fail);
    }

    #[test]
    fn cache_control_verdicts() {
        assert_eq!(judge_cache(None).0, Status::Warn);
        assert_eq!(judge_cache(Some("no-cache")).0, Status::Pass);
        assert_eq!(judge_cache(Some("private, max-age=5")).0, Status::Pass);
        assert_eq!(judge_cache(Some("max-age=0")).0, Status::Pass);
        let (s, o) = judge_cache(Some("public, max-age=60"));
        assert_eq!(s, Status::Fail);
        assert!(o.contains("60 s"), "{o}");
        assert_eq!(judge_cache(Some("private, s-maxage=30")).0, Status::Fail);
        assert_eq!(judge_cache(Some("public")).0, Status::Warn);
    }

    #[test]
    fn conditional_latency_and_overhead() {
        let etag = rec(200, &[("etag", "\"a\"")], 2000, 10.0);
        let mut obs = PollObs {
            polls: vec![
                Ok(etag.clone()),
                Ok(rec(200, &[], 2000, 900.0)),
                Err("x".into()),
            ],
            conditional: Some(Ok(rec(304, &[], 0, 5.0))),
            since_in_url: false,
        };
        assert_eq!(judge_conditional(&obs).0, Status::Pass);
        assert_eq!(latency(&obs), Some((900.0, 900.0)));
        assert_eq!(judge_latency(&obs).0, Status::Warn);
        // 100 B request + 150 B head of the 304: 250 B a second = 15 KB a minute.
        assert_eq!(idle_bytes_per_poll(&obs), Some(250));
        assert_eq!(judge_overhead(&obs).0, Status::Warn);
        obs.conditional = Some(Ok(rec(200, &[], 2000, 5.0)));
        assert_eq!(judge_conditional(&obs).0, Status::Warn);
        assert_eq!(idle_bytes_per_poll(&obs), Some(2250));
        obs.conditional = None;
        assert_eq!(judge_conditional(&obs).0, Status::Warn);
        obs.since_in_url = true;
        assert_eq!(judge_conditional(&obs).0, Status::Pass);
        let small = PollObs {
            polls: vec![Ok(PollRec {
                request_bytes: 40,
                head_bytes: 60,
                ..rec(200, &[], 20, 3.0)
            })],
            ..Default::default()
        };
        // 120 B a second = 7.2 KB a minute: under the seed's 8.4 KB.
        assert_eq!(judge_overhead(&small).0, Status::Pass);
        assert_eq!(judge_latency(&small).0, Status::Pass);
        assert_eq!(judge_latency(&PollObs::default()).0, Status::Fail);
    }

    #[test]
    fn since_cursor_in_the_query() {
        let t = |u: &str| has_since(&Target::parse(u).unwrap());
        assert!(t("http://h/poll?since=4"));
        assert!(t("http://h/poll?a=1&since=4"));
        assert!(!t("http://h/poll?sinceX=4"));
        assert!(!t("http://h/poll"));
    }
}
