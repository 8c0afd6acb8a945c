//! `response`: the URL answered, but not with what its transport needs: an error status
//! (404, 502...), or a 2xx that is neither an event stream nor a poll answer (an HTML
//! page from a catch-all route). Never a pass: the other checks had nothing to measure.
use super::session::SseObs;
use super::{finding, proxy, Kind, Meta, UrlObs};
use crate::findings::{Finding, Status};
use rtcheck_wire::http::response::Head;

pub const ID: &str = super::CheckId::Response.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::Response,
    title: "The URL's answer",
    evidence: &[],
    run: check,
};

pub fn is_2xx(status: u16) -> bool {
    (200..300).contains(&status)
}

/// A body a poller can use: JSON, plain text, XML, or nothing owed (204, 304).
pub fn is_poll_body(h: &Head) -> bool {
    if matches!(h.status, 204 | 304) {
        return true;
    }
    let ct = h.header("content-type").unwrap_or("").to_ascii_lowercase();
    is_2xx(h.status)
        && ["json", "text/plain", "xml", "text/event-stream"]
            .iter()
            .any(|k| ct.contains(k))
}

/// What is wrong with the answer for this kind (None: usable).
pub fn problem(kind: Kind, s: &SseObs) -> Option<String> {
    let h = &s.head;
    let ct = h.header("content-type").unwrap_or("no content type");
    let what = match kind {
        Kind::Sse if s.is_event_stream() => return None,
        Kind::Poll if is_poll_body(h) => return None,
        Kind::Sse => "an event stream",
        Kind::Poll => "a poll answer",
        Kind::WebSocket => return None,
    };
    Some(format!("HTTP {} {} ({ct}) instead of {what}", h.status, h.reason).replace("  ", " "))
}

pub fn check(u: &UrlObs) -> Option<Finding> {
    let sse = u.sse.as_ref()?;
    let observed = problem(u.kind, sse)?;
    let mut f = finding(
        &META,
        u,
        Status::Fail,
        observed,
        match u.kind {
            Kind::Poll => "a 2xx answer with a poll body (JSON, text)",
            _ => "200 with Content-Type: text/event-stream",
        },
        "an error status or a page instead of the stream measures nothing: the other checks of this URL did not run",
        proxy::status(u.proxy, sse.head.status, u.kind, u.direct_status()),
    );
    f.numbers.insert("status".into(), sse.head.status as f64);
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, ct: &str) -> SseObs {
        SseObs {
            head: Head {
                status,
                reason: "X".into(),
                headers: vec![("content-type".into(), ct.into())],
            },
            stream: None,
        }
    }

    #[test]
    fn an_answer_is_usable_only_as_what_its_kind_needs() {
        assert!(is_poll_body(
            &answer(200, "application/json; charset=utf-8").head
        ));
        assert!(is_poll_body(&answer(204, "").head));
        assert!(!is_poll_body(&answer(200, "text/html").head));
        assert!(!is_poll_body(&answer(404, "application/json").head));
        let p = problem(Kind::Sse, &answer(404, "text/html")).unwrap();
        assert!(p.contains("HTTP 404") && p.contains("event stream"), "{p}");
        assert!(problem(Kind::Poll, &answer(200, "application/json")).is_none());
        assert!(problem(Kind::Poll, &answer(200, "text/html")).is_some());
        assert!(problem(Kind::Poll, &answer(502, "text/html")).is_some());
    }
}
