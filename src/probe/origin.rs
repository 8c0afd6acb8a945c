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
