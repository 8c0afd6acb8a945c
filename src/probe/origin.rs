//! `origin`: a handshake with a foreign Origin that is accepted lets any site open the
//! socket with the user's cookies (cross-site WebSocket hijacking). Not measured by the
//! series: no evidence number, the rule is the WebSocket RFC's (RFC 6455 10.2).
use super::{finding, proxy, Kind, Meta, UrlObs, FOREIGN_ORIGIN};
use crate::findings::{Finding, Status};

pub const ID: &str = super::CheckId::Origin.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::Origin,
    title: "WebSocket handshake from a foreign Origin",
    evidence: &[],
    run: check,
};

/// The upgrade's own session was refused after its 101 (`closed::refused`).
fn refused_after_101(u: &UrlObs) -> bool {
    let s = u.ws.as_ref().and_then(|w| w.stream.as_ref());
    s.and_then(|s| super::closed::refused(s, u.quick)).is_some()
}

pub fn check(u: &UrlObs) -> Option<Finding> {
    if u.kind != Kind::WebSocket {
        return None;
    }
    let code = u.origin_status?;
    let upgraded = u.ws.as_ref().is_some_and(|w| w.head.status == 101);
    let (status, observed) = match (code, u.public) {
        _ if !upgraded => (
            Status::Skip,
            "not tested: the upgrade with the page's own Origin already failed".to_string(),
        ),
        (101, true) => (
            Status::Pass,
            format!("Origin {FOREIGN_ORIGIN} accepted (101); declared public with --public"),
        ),
        // The page's own Origin was refused right after its 101: a 101 to the foreign
        // one shows the handshake only, not that a foreign site gets a session.
        (101, false) if refused_after_101(u) => (
            Status::Warn,
            format!(
                "Origin {FOREIGN_ORIGIN} accepted (101), but the session with the page's own \
                 Origin was closed before any message (see upgrade): whether the server \
                 checks Origin after the handshake is not known"
            ),
        ),
        (101, false) => (
            Status::Warn,
            format!("Origin {FOREIGN_ORIGIN} accepted (101): any site can open this socket"),
        ),
        (c, _) => (
            Status::Pass,
            format!("Origin {FOREIGN_ORIGIN} refused with {c}"),
        ),
    };
    let mut f = finding(
        &META,
        u,
        status,
        observed,
        "a foreign Origin refused (403), unless the endpoint is public",
        "browsers send cookies with a cross-site WebSocket handshake; only the server's Origin check stops it (RFC 6455 10.2; not measured by the series)",
        proxy::origin(u.proxy),
    );
    if status == Status::Skip {
        f.reason = Some("the WebSocket upgrade failed (see `upgrade`)".into());
    }
    f.numbers.insert("status".into(), code as f64);
    Some(f)
}
