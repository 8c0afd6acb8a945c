//! `http2`: SSE over HTTP/1.1 hits the browsers' 6 connections per host; the edge must
//! offer h2 in ALPN (evidence sse-conditions).
use super::{finding, proxy, Kind, Meta, UrlObs};
use crate::findings::{Finding, Status};

pub const ID: &str = super::CheckId::Http2.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::Http2,
    title: "HTTP/2 at the TLS edge",
    evidence: &["sse-conditions"],
    run: check,
};

pub fn check(u: &UrlObs) -> Option<Finding> {
    if u.kind == Kind::WebSocket {
        return None;
    }
    let (status, observed, reason) = match &u.alpn {
        None if u.alpn_error.is_some() => (
            Status::Skip,
            "not measured".to_string(),
            u.alpn_error
                .as_ref()
                .map(|e| format!("the ALPN connection failed: {e}")),
        ),
        None => (
            Status::Skip,
            "plain http".to_string(),
            Some("plain http: browsers speak HTTP/2 only over TLS (https)".to_string()),
        ),
        Some(Some(p)) if p == "h2" => (Status::Pass, "ALPN h2 negotiated".to_string(), None),
        Some(p) => (
            Status::Warn,
            format!(
                "ALPN {}: browsers fall back to HTTP/1.1 and 6 connections per host",
                p.as_deref().unwrap_or("none")
            ),
            None,
        ),
    };
    let mut f = finding(
        &META,
        u,
        status,
        observed,
        "ALPN h2",
        "browsers open at most 6 HTTP/1.1 connections per host; over h2 one connection carries many event streams",
        proxy::http2(u.proxy),
    );
    f.reason = reason;
    Some(f)
}
