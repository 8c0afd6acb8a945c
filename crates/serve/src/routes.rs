//! Every HTTP endpoint in one table: its path, the methods it answers and what serves it.
//! The table also answers what no endpoint serves: 404 with the endpoint list, 405 with
//! `Allow`. A new endpoint is a row here and an arm in [`answer`] (or, for one that takes
//! the connection over, in `server::handle_http`).
use super::app::App;
use super::{cluster, metrics, work};
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::epoch::Position;
use rtcheck_wire::http::Request;
use std::sync::atomic::Ordering::Relaxed;

const TEXT: &str = "text/plain; charset=utf-8";
const JSON: &str = "application/json";
const GET: &[&str] = &["GET", "HEAD"];

/// What serves an endpoint: a handler that takes the connection over (`server`), or one
/// that answers one request ([`answer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    Takeover(Takeover),
    Answer(Answer),
}

/// Endpoints that take the connection over (a stream, or a request served off the event
/// loop's one-response path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takeover {
    Ws,
    Sse,
    Echo,
    Work,
}

/// Endpoints that answer one request with `(status, type, body)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Poll,
    Metrics,
    Healthz,
    Stats,
    Start,
    Ack,
    Session,
    Presence,
}

/// One endpoint.
#[derive(Debug)]
pub struct Route {
    pub path: &'static str,
    /// The methods it answers; None: any (a WebSocket handshake judges its own).
    pub methods: Option<&'static [&'static str]>,
    pub handler: Handler,
    /// How the 404's endpoint list names it (None: not listed).
    pub listed: Option<&'static str>,
    /// The 405's content type and body, as this endpoint has always said them.
    pub refusal: (&'static str, &'static str),
}

const NOT_ALLOWED: (&str, &str) = (TEXT, "method not allowed\n");

const fn route(
    path: &'static str,
    methods: Option<&'static [&'static str]>,
    handler: Handler,
    listed: Option<&'static str>,
    refusal: (&'static str, &'static str),
) -> Route {
    Route {
        path,
        methods,
        handler,
        listed,
        refusal,
    }
}

/// The endpoints, in the order the 404 lists them.
pub const ROUTES: &[Route] = &[
    route(
        "/ws",
        None,
        Handler::Takeover(Takeover::Ws),
        Some("/ws"),
        NOT_ALLOWED,
    ),
    route(
        "/sse",
        Some(&["GET"]),
        Handler::Takeover(Takeover::Sse),
        Some("/sse"),
        (TEXT, "GET /sse\n"),
    ),
    route(
        "/poll",
        Some(GET),
        Handler::Answer(Answer::Poll),
        Some("/poll?since=SEQ"),
        NOT_ALLOWED,
    ),
    route(
        "/metrics",
        Some(GET),
        Handler::Answer(Answer::Metrics),
        Some("/metrics"),
        NOT_ALLOWED,
    ),
    route(
        "/healthz",
        Some(GET),
        Handler::Answer(Answer::Healthz),
        Some("/healthz"),
        NOT_ALLOWED,
    ),
    route(
        "/control/stats",
        Some(GET),
        Handler::Answer(Answer::Stats),
        Some("/control/stats"),
        NOT_ALLOWED,
    ),
    route(
        "/control/start",
        Some(&["POST"]),
        Handler::Answer(Answer::Start),
        Some("/control/start"),
        NOT_ALLOWED,
    ),
    route(
        "/echo",
        None,
        Handler::Takeover(Takeover::Echo),
        Some("/echo"),
        NOT_ALLOWED,
    ),
    route(
        "/work",
        Some(GET),
        Handler::Takeover(Takeover::Work),
        None,
        (TEXT, "GET /work?ms=N\n"),
    ),
    route(
        "/ack",
        Some(&["POST"]),
        Handler::Answer(Answer::Ack),
        None,
        (TEXT, "POST /ack\n"),
    ),
    route(
        "/session",
        None,
        Handler::Answer(Answer::Session),
        None,
        NOT_ALLOWED,
    ),
    route(
        "/presence",
        Some(GET),
        Handler::Answer(Answer::Presence),
        None,
        ("text/plain", "method not allowed\n"),
    ),
];

/// An answer the table gives itself: status, content type, body, and `Allow` for a 405.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    pub allow: Option<String>,
}

/// The handler for `method path`, or the 404 / 405 to answer instead (pure).
pub fn lookup(method: &str, path: &str) -> Result<Handler, Refusal> {
    let Some(r) = ROUTES.iter().find(|r| r.path == path) else {
        let listed: Vec<&str> = ROUTES.iter().filter_map(|r| r.listed).collect();
        return Err(Refusal {
            status: 404,
            content_type: TEXT,
            body: format!("not found; endpoints: {}\n", listed.join(" ")),
            allow: None,
        });
    };
    match r.methods {
        Some(m) if !m.contains(&method) => Err(Refusal {
            status: 405,
            content_type: r.refusal.0,
            body: r.refusal.1.to_string(),
            allow: Some(m.join(", ")),
        }),
        _ => Ok(r.handler),
    }
}

/// `?since=SEQ&epoch=E` (or `since=SEQ@E`) of `/poll` and `/ws`: where the client is;
/// None without since.
pub fn resume_position(req: &Request) -> Option<Position> {
    let epoch = req.query_param("epoch");
    let since = req.query_param("since")?;
    Some(Position::with_epoch(&since, epoch.as_deref()))
}

/// One request to an endpoint that answers in one response: `(status, type, body)`.
pub async fn answer(app: &App, req: &Request, a: Answer) -> (u16, &'static str, String) {
    let hub = &app.hub;
    match a {
        Answer::Poll => poll(app, req).await,
        Answer::Metrics => (
            200,
            rtcheck_wire::prom::CONTENT_TYPE,
            metrics::render(&hub.snapshot())
                + &work::metrics()
                + &app
                    .cluster
                    .as_deref()
                    .map_or(String::new(), cluster::metrics),
        ),
        Answer::Healthz => match app.cluster.as_deref() {
            None => (200, TEXT, "ok".into()),
            Some(c) => (200, TEXT, cluster::health(hub, c)),
        },
        Answer::Stats => (
            200,
            JSON,
            serde_json::to_string(&hub.snapshot().stats).unwrap_or_else(|_| "{}".into()),
        ),
        Answer::Start => start(app, req),
        Answer::Ack => ack(app, req),
        Answer::Session => {
            let id = req.query_param("id").unwrap_or_default();
            match hub.sessions.describe(&id) {
                Some(body) => (200, JSON, body),
                None => (404, JSON, "{\"error\":\"no such session\"}".into()),
            }
        }
        Answer::Presence => match app.cluster.as_deref() {
            Some(c) => (200, JSON, cluster::presence_json(hub, c).await),
            None => (
                404,
                "text/plain",
                "/presence needs `serve --redis URL --node NAME`\n".into(),
            ),
        },
    }
}

/// `POST /control/start[?rounds=N]`: start a `--wait-start` publisher (once).
fn start(app: &App, req: &Request) -> (u16, &'static str, String) {
    let rounds = match req.query_param("rounds").map(|v| v.parse::<u64>()) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => return (400, TEXT, "rounds must be an unsigned integer\n".into()),
    };
    if app.hub.start(rounds) {
        (200, JSON, "{\"started\":true}".into())
    } else {
        (
            409,
            JSON,
            "{\"started\":false,\"error\":\"already started\"}".into(),
        )
    }
}

/// `POST /ack?session=ID&seq=SEQ`.
fn ack(app: &App, req: &Request) -> (u16, &'static str, String) {
    let hub = &app.hub;
    if hub.cfg.delivery != Delivery::SessionAck {
        return (
            404,
            TEXT,
            "/ack needs serve --delivery session-ack\n".into(),
        );
    }
    let id = req.query_param("session").unwrap_or_default();
    let Some(Ok(seq)) = req.query_param("seq").map(|v| v.trim().parse::<u64>()) else {
        let msg = "/ack needs ?session=ID&seq=SEQ (an unsigned integer)\n";
        return (400, TEXT, msg.into());
    };
    hub.sessions.ack(&id, seq);
    // Ignored acks (unknown session, never-sent seq) are counted, not refused: a client
    // racing an expiry must not be broken by it.
    (200, JSON, "{\"ok\":true}".into())
}

/// `/poll?since=SEQ`: over the cluster's Stream too on a cluster node; with a `session`
/// parameter under session-ack (empty: issue one), the session's unacked messages.
async fn poll(app: &App, req: &Request) -> (u16, &'static str, String) {
    let hub = &app.hub;
    let pos = resume_position(req);
    if let (Some(c), Some(pos)) = (app.cluster.as_deref(), pos) {
        let extra = cluster::stream_after(hub, c, pos.seq).await;
        hub.counters.polls.fetch_add(1, Relaxed);
        return (200, JSON, hub.poll_json_with(pos, &extra));
    }
    let session = req.query_param("session");
    if let Some(presented) = session.filter(|_| hub.cfg.delivery == Delivery::SessionAck) {
        hub.counters.polls.fetch_add(1, Relaxed);
        let presented = Some(presented.as_str()).filter(|p| !p.is_empty());
        // A refusal's Retry-After header is added by the caller (`retry_after`).
        return match hub.sessions.poll(presented, pos, hub.epoch()) {
            Ok(body) => (200, JSON, body),
            Err(r) => (503, JSON, hub.sessions.refused_json(r)),
        };
    }
    match pos {
        Some(pos) => {
            hub.counters.polls.fetch_add(1, Relaxed);
            (200, JSON, hub.poll_json(pos))
        }
        None => (400, TEXT, "/poll needs ?since=SEQ\n".into()),
    }
}

/// The `Retry-After` seconds of a 503 from [`answer`]: read back from its body.
pub fn retry_after(body: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    v.get("retry_after")?.as_u64().map(|s| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_404_lists_the_endpoints_as_it_always_has() {
        let r = lookup("GET", "/nope").unwrap_err();
        assert_eq!(r.status, 404);
        assert_eq!(
            r.body,
            "not found; endpoints: /ws /sse /poll?since=SEQ /metrics /healthz /control/stats /control/start /echo\n"
        );
        assert_eq!(r.allow, None);
    }

    #[test]
    fn a_known_path_with_another_method_is_a_405_with_allow() {
        let r = lookup("POST", "/metrics").unwrap_err();
        assert_eq!((r.status, r.body.as_str()), (405, "method not allowed\n"));
        assert_eq!(r.allow.as_deref(), Some("GET, HEAD"));
        let r = lookup("GET", "/ack").unwrap_err();
        assert_eq!(
            (r.body.as_str(), r.allow.as_deref()),
            ("POST /ack\n", Some("POST"))
        );
        let r = lookup("DELETE", "/presence").unwrap_err();
        assert_eq!(r.content_type, "text/plain");
        assert_eq!(lookup("HEAD", "/sse").unwrap_err().body, "GET /sse\n");
        assert_eq!(lookup("PUT", "/work").unwrap_err().body, "GET /work?ms=N\n");
    }

    #[test]
    fn every_path_is_one_row_and_handshakes_judge_their_own_method() {
        for r in ROUTES {
            assert_eq!(
                ROUTES.iter().filter(|x| x.path == r.path).count(),
                1,
                "{}",
                r.path
            );
        }
        assert_eq!(lookup("POST", "/ws"), Ok(Handler::Takeover(Takeover::Ws)));
        assert_eq!(lookup("HEAD", "/poll"), Ok(Handler::Answer(Answer::Poll)));
        assert_eq!(
            lookup("DELETE", "/session"),
            Ok(Handler::Answer(Answer::Session))
        );
        assert_eq!(
            lookup("POST", "/control/start"),
            Ok(Handler::Answer(Answer::Start))
        );
    }
}
