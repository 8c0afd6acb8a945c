//! The publisher for a foreign server (`--publish ws` or `--publish 'POST URL'`), run
//! inside the load generator process so its CPU is in the load generator's check. Open
//! loop: a timer task stamps each message with its SCHEDULED time and hands it to a
//! sender task, so a server that blocks the sender (its backpressure) never delays the
//! schedule, and the receivers' latency from that stamp has no coordinated omission. The
//! timer's own lateness is the load generator's fault and is reported apart from the
//! sender's backlog (the server's).
use super::target::{self, Proto};
use super::template::Template;
use super::wire::PublisherStat;
use crate::load::client::Target as HttpTarget;
use crate::load::conn::WireConn;
use crate::sys::tls::{Stream, Tls, Trust};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use rtcheck_base::os::clock;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Longest a publisher's TLS handshake may take.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// How messages reach the server's clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishVia {
    /// The server publishes by itself (rtcheck's payload, `/control/start`).
    Server,
    /// On one more WebSocket connection of rtcheck's, broadcast by the server.
    Ws,
    /// POST to the app's publish API.
    Post { url: String },
}

impl PublishVia {
    /// `server`, `ws`, or `POST http(s)://HOST:PORT/PATH`: the URL's form here; where its
    /// socket goes (loopback, or --connect-to) is checked by [`PublishVia::post`].
    pub fn parse(s: &str) -> Result<PublishVia, String> {
        let t = s.trim();
        match t {
            "server" => return Ok(PublishVia::Server),
            "ws" => return Ok(PublishVia::Ws),
            _ => {}
        }
        let url = t
            .strip_prefix("POST ")
            .or_else(|| t.strip_prefix("post "))
            .map(str::trim)
            .ok_or_else(|| {
                format!(
                    "--publish `{}`: expected server, ws or 'POST http://HOST:PORT/PATH'",
                    rtcheck_base::redact::url(t)
                )
            })?;
        match target::parse_url(url) {
            Ok(t) if t.proto == Proto::Sse => Ok(PublishVia::Post { url: url.into() }),
            Ok(_) => Err(format!(
                "--publish POST {}: expected an http:// or https:// URL",
                rtcheck_base::redact::url(url)
            )),
            Err(e) => Err(format!("--publish POST: {e}")),
        }
    }

    /// The value as the load generator's flag takes it back.
    pub fn arg(&self) -> String {
        match self {
            PublishVia::Server => "server".into(),
            PublishVia::Ws => "ws".into(),
            PublishVia::Post { url } => format!("POST {url}"),
        }
    }

    pub fn name(&self) -> String {
        match self {
            PublishVia::Server => "server".into(),
            PublishVia::Ws => "ws".into(),
            PublishVia::Post { url } => format!("POST {}", rtcheck_base::redact::url(url)),
        }
    }

    /// A POST to an https:// URL.
    pub fn is_tls(&self) -> bool {
        matches!(self, PublishVia::Post { url } if target::parse_url(url).is_ok_and(|u| u.tls))
    }

    /// The POST target, resolved: loopback, or through `connect_to` (the one check of
    /// where its socket goes), with its TLS set up; None for `server` and `ws`.
    pub fn post(
        &self,
        connect_to: Option<SocketAddr>,
        trust: &Trust,
    ) -> anyhow::Result<Option<Endpoint>> {
        match self {
            PublishVia::Post { url } => Endpoint::new(url, connect_to, trust)
                .map(Some)
                .map_err(|e| anyhow::anyhow!("--publish POST: {e:#}")),
            _ => Ok(None),
        }
    }
}

/// Where one of the publisher's connections goes, resolved, with its TLS set up once
/// (before any async code: `--ca` is read and parsed here, not per connection).
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub target: target::Target,
    pub tls: Option<Tls>,
}

impl Endpoint {
    pub fn new(
        url: &str,
        connect_to: Option<SocketAddr>,
        trust: &Trust,
    ) -> anyhow::Result<Endpoint> {
        let target = target::parse(url, connect_to)?;
        let tls = target.tls(trust)?;
        Ok(Endpoint { target, tls })
    }

    /// Over TLS, one connect and handshake within `limit` before the run: a certificate
    /// not trusted (or not for the name) is one error now. Nothing on plain HTTP.
    pub fn check_tls(&self, limit: Duration) -> Result<(), String> {
        match &self.tls {
            Some(tls) => crate::sys::tls::check_handshake(self.target.addr, tls, limit),
            None => Ok(()),
        }
    }
}

/// Environment variable carrying `--publish` to the load generator (a POST URL's query
/// may hold a token: never argv).
pub const PUBLISH_ENV: &str = "RTCHECK_PUBLISH";

/// Environment variable carrying `-H` headers to the load generator (never argv: a
/// token there is in every `ps`). One `Name: value` per line.
pub const HEADERS_ENV: &str = "RTCHECK_PUBLISH_HEADERS";

/// `Name: value` → (name, value); the error never shows the value.
pub fn parse_header(h: &str) -> Result<(String, String), String> {
    let (n, v) = h
        .split_once(':')
        .ok_or_else(|| "-H: expected `Name: value`".to_string())?;
    let n = n.trim();
    if n.is_empty()
        || !n
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
    {
        return Err(format!(
            "-H `{}`: not a header name",
            n.chars().take(40).collect::<String>()
        ));
    }
    if v.contains(['\r', '\n']) {
        return Err(format!("-H {n}: the value has a line break"));
    }
    Ok((n.to_string(), v.trim().to_string()))
}

#[derive(Clone)]
pub struct Plan {
    pub via: PublishVia,
    /// Where the WebSocket publisher connects (the clients' URL, for its handshake).
    pub ws_url: String,
    /// The clients' URL resolved (`--connect-to`), with its TLS.
    pub ws: Endpoint,
    /// `--publish 'POST URL'`: the POST's, resolved.
    pub post: Option<Endpoint>,
    pub message: Template,
    pub subscribe: Option<String>,
    /// The library protocol the WebSocket publisher speaks (None: raw frames).
    pub app: Option<(
        rtcheck_wire::appproto::AppProtocol,
        rtcheck_wire::appproto::Subscribe,
    )>,
    pub headers: Vec<(String, String)>,
    pub rounds: u64,
    pub rate: f64,
    pub size: usize,
    /// `--publish ws`: dial again when a send fails (rehearse: the hub restarts under
    /// it); bench and verify keep one connection and count the failures.
    pub redial: bool,
}

/// Names the way and the rate only: a header or a POST URL's query may hold a token.
impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("via", &self.via.name())
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

/// A connected publisher, ready to start on the orchestrator's command.
pub enum Ready {
    /// A raw WebSocket publisher, read from its handshake on (see [`WsConn`]).
    Ws(Box<WsConn>),
    /// A library protocol's publisher, its loop already running (see [`AppRunning`]).
    App(Box<AppRunning>),
    Post,
}

/// One message to publish: its seq, when it was due, its text.
type Job = (u64, Instant, String);

/// A library-protocol publisher started at its handshake: its reader answers the
/// library's heartbeat from then on, while the clients connect, not only once rounds
/// flow (python-socketio drops a session whose pings go unanswered for its ping interval
/// plus timeout: on a loaded host the publisher was dropped before its first round, and
/// every round failed). Rounds go through `tx`; dropping it ends the loop.
pub struct AppRunning {
    tx: tokio::sync::mpsc::UnboundedSender<Job>,
    state: Shared,
    task: tokio::task::JoinHandle<()>,
}

/// Connect the publisher (and join the room) before measurement starts.
pub async fn connect(plan: &Plan) -> Result<Ready, String> {
    if !matches!(plan.via, PublishVia::Ws) {
        return Ok(Ready::Post);
    }
    let url = rtcheck_base::redact::url(&plan.ws_url);
    let ws = &plan.ws;
    let s = tokio::time::timeout(
        Duration::from_secs(10),
        open(ws.target.addr, ws.tls.as_ref()),
    )
    .await
    .map_err(|_| format!("publisher: {url}: connect timed out after 10s"))?
    .map_err(|e| format!("publisher: {url}: {e}"))?;
    let (mut ws, _) = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_tungstenite::client_async_with_config(
            plan.ws_url.as_str(),
            s,
            Some(super::ws_client::config(largest_send(plan))),
        ),
    )
    .await
    .map_err(|_| format!("publisher: {url}: handshake timed out after 10s"))?
    .map_err(|e| format!("publisher: {url}: handshake: {e}"))?;
    let app = match &plan.app {
        Some((p, sub)) => {
            let mut s = super::appws::Session::new(*p, &plan.ws_url, sub.clone());
            super::appws::handshake(&mut ws, &mut s, Duration::from_secs(10))
                .await
                .map_err(|e| format!("publisher: {url}: {e}"))?;
            Some(s)
        }
        None => None,
    };
    if let Some(sub) = &plan.subscribe {
        ws.send(tokio_tungstenite::tungstenite::Message::text(sub.clone()))
            .await
            .map_err(|e| format!("publisher: subscribe: {e}"))?;
    }
    Ok(match app {
        Some(app) => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
            let state = Shared::default();
            let task = tokio::spawn(send_all_app(ws, app, rx, state.clone()));
            Ready::App(Box::new(AppRunning { tx, state, task }))
        }
        None => Ready::Ws(Box::new(WsConn::new(ws))),
    })
}

/// The publisher's largest own message: a payload (padded to --size, its template around
/// it) or the subscribe message.
fn largest_send(plan: &Plan) -> usize {
    let sub = plan.subscribe.as_ref().map_or(0, String::len);
    plan.message.render(1, 0, plan.size).len().max(sub) * 2 + 4096
}

/// TCP to `addr` (TCP_NODELAY on), then TLS when asked (unbounded: the caller bounds it).
async fn open(addr: SocketAddr, tls: Option<&Tls>) -> Result<Stream, String> {
    let s = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let _ = s.set_nodelay(true);
    Stream::over(s, tls).await.map_err(|e| {
        let why = tls.map_or(e.to_string(), |t| t.explain(&e, addr, HANDSHAKE));
        format!("TLS handshake with {addr}: {why}")
    })
}

/// Publish every round on schedule until done or `stop` fires; what it achieved.
pub async fn run(
    plan: Plan,
    ready: Ready,
    stop: tokio::sync::watch::Receiver<u8>,
    stop_level: u8,
) -> PublisherStat {
    run_counted(plan, ready, stop, stop_level, Default::default()).await
}

/// [`run`], its sends completed so far also in `sent` as they complete (verify delivery:
/// what a client whose stream ended early was owed).
pub async fn run_counted(
    plan: Plan,
    ready: Ready,
    mut stop: tokio::sync::watch::Receiver<u8>,
    stop_level: u8,
    sent: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> PublisherStat {
    let period = Duration::from_secs_f64(1.0 / plan.rate);
    // One period of lead: the first round is scheduled, not sent at once.
    let t0 = Instant::now() + period;
    let t0_ns = clock::now_ns() + period.as_nanos() as u64;
    let (tx, state, sender) = match ready {
        Ready::App(a) => {
            // Started at connect: its count of completed sends is this run's from now.
            if let Ok(mut s) = a.state.lock() {
                s.live = sent;
            }
            (a.tx, a.state, a.task)
        }
        ready => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
            let state = std::sync::Arc::new(std::sync::Mutex::new(SendState {
                live: sent,
                ..SendState::default()
            }));
            let target = plan_target(&plan);
            let redial = plan.redial.then(|| std::sync::Arc::new(plan.clone()));
            let sender = tokio::spawn(send_all(ready, target, redial, rx, state.clone()));
            (tx, state, sender)
        }
    };
    let mut st = PublisherStat {
        via: plan.via.name(),
        planned: plan.rounds,
        ..Default::default()
    };
    let mut late = Vec::with_capacity(plan.rounds as usize);
    for seq in 1..=plan.rounds {
        let off = period.mul_f64((seq - 1) as f64);
        let due = t0 + off;
        tokio::select! {
            _ = tokio::time::sleep_until(due.into()) => {}
            _ = stopped(&mut stop, stop_level) => break,
        }
        let now = Instant::now();
        late.push(now.saturating_duration_since(due).as_secs_f64() * 1e3);
        if seq > 1 {
            st.achieved_period_ms =
                Some(now.duration_since(t0).as_secs_f64() * 1e3 / (seq - 1) as f64);
        }
        let ts = t0_ns + off.as_nanos() as u64;
        if tx
            .send((seq, due, plan.message.render(seq, ts, plan.size)))
            .is_err()
        {
            break;
        }
        st.timer_rounds = seq;
    }
    st.scheduled = due_by(
        Instant::now().checked_duration_since(t0),
        period,
        plan.rounds,
    );
    drop(tx);
    // A hub that blocks the sender (C1) would hold it forever: once stopped, 1 s more.
    let mut sender = sender;
    let finished = tokio::select! {
        r = &mut sender => r.is_ok(),
        _ = stopped(&mut stop, stop_level) => {
            tokio::time::timeout(Duration::from_secs(1), &mut sender).await.is_ok_and(|r| r.is_ok())
        }
    };
    sender.abort();
    let s = state.lock().map(|s| s.clone()).unwrap_or_default();
    st.sent = s.sent;
    st.failed = s.failed;
    st.first_error = s.first_error;
    st.failed_seqs = s.failed_seqs;
    st.backlog_max_ms = s.backlog_max_ms;
    if !finished {
        st.unsent = st.timer_rounds.saturating_sub(s.sent + s.failed);
    }
    late.sort_by(f64::total_cmp);
    st.timer_late_p99_ms = quantile_sorted(&late, 0.99);
    st.timer_late_max_ms = late.last().copied().unwrap_or(0.0);
    st
}

/// Rounds due on a schedule whose round 1 is at t0 and then one each `period`, once
/// `since_t0` has passed (None: t0 not reached yet), at most the plan's `rounds`.
fn due_by(since_t0: Option<Duration>, period: Duration, rounds: u64) -> u64 {
    let Some(d) = since_t0 else { return 0 };
    if period.is_zero() {
        return rounds;
    }
    let after_first = (d.as_nanos() / period.as_nanos()).min(u64::MAX as u128 - 1) as u64;
    (after_first + 1).min(rounds)
}

/// Resolves once the stop level is reached (the watch guard is not held across awaits).
async fn stopped(stop: &mut tokio::sync::watch::Receiver<u8>, level: u8) {
    let _ = stop.wait_for(|l| *l >= level).await.map(drop);
}

enum Target {
    Ws,
    /// The POST without its body, or why the HTTP library refused it.
    Post {
        addr: SocketAddr,
        tls: Option<Tls>,
        request: Result<Box<HttpTarget>, String>,
    },
}

fn plan_target(plan: &Plan) -> Target {
    match &plan.post {
        // An error here (a -H the HTTP library refuses) fails every send with its reason.
        Some(e) => Target::Post {
            addr: e.target.addr,
            tls: e.tls.clone(),
            request: post_target(&e.target, &plan.headers).map(Box::new),
        },
        None => Target::Ws,
    }
}

/// The POST to the target's path: Host (the URL's), a JSON content type, then the -H
/// headers, checked once here as HTTP names and values. Its `url` is the path redacted,
/// as errors show it.
fn post_target(t: &target::Target, headers: &[(String, String)]) -> Result<HttpTarget, String> {
    let (addr, path) = (t.addr, t.path.as_str());
    fn refused<E>(_: E) -> String {
        "publisher: a -H header was refused by the HTTP library".to_string()
    }
    let mut hs = vec![(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    )];
    for (n, v) in headers {
        hs.push((n.parse().map_err(refused)?, v.parse().map_err(refused)?));
    }
    let host = t.authority.clone();
    Ok(HttpTarget {
        url: rtcheck_base::redact::path_and_query(path),
        addr,
        path: path.to_string(),
        path_uri: path.parse().map_err(refused)?,
        host_value: host.parse().map_err(refused)?,
        authority: host,
        method: http::Method::POST,
        headers: hs,
        body: Bytes::new(),
    })
}

#[derive(Debug, Clone, Default)]
struct SendState {
    sent: u64,
    failed: u64,
    first_error: Option<String>,
    /// The seqs whose send failed, as inclusive ranges.
    failed_seqs: Vec<(u64, u64)>,
    /// Largest delay behind the schedule at a send's completion (ms): how long the
    /// server held the sender.
    backlog_max_ms: f64,
    /// `sent`, readable while the run goes on.
    live: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl SendState {
    fn done(&mut self, seq: u64, r: Result<(), String>, due: Instant) {
        match r {
            Ok(()) => {
                self.sent += 1;
                self.live
                    .store(self.sent, std::sync::atomic::Ordering::SeqCst);
            }
            Err(e) => {
                self.failed += 1;
                self.first_error.get_or_insert(e);
                add_range(&mut self.failed_seqs, seq);
            }
        }
        self.backlog_max_ms = self.backlog_max_ms.max(due.elapsed().as_secs_f64() * 1e3);
    }
}

type Shared = std::sync::Arc<std::sync::Mutex<SendState>>;

fn record(state: &Shared, seq: u64, r: Result<(), String>, due: Instant) {
    if let Ok(mut s) = state.lock() {
        s.done(seq, r, due);
    }
}

/// `seq` into ranges kept in order (seqs come in order: extend the last, or open one).
fn add_range(v: &mut Vec<(u64, u64)>, seq: u64) {
    match v.last_mut() {
        Some(last) if last.1.saturating_add(1) == seq => last.1 = seq,
        _ => v.push((seq, seq)),
    }
}

/// Send in order, counting into `state` (read even if this task is aborted).
async fn send_all(
    ready: Ready,
    target: Target,
    redial: Option<std::sync::Arc<Plan>>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Job>,
    state: Shared,
) {
    match (ready, target) {
        (Ready::Ws(ws), _) => send_all_ws(*ws, redial, rx, state).await,
        // Started at connect (AppRunning): never handed here.
        (Ready::App(_), _) => {}
        (_, Target::Post { addr, tls, request }) => {
            let mut conn = None;
            while let Some((seq, due, msg)) = rx.recv().await {
                let r = match &request {
                    Ok(t) => post(&mut conn, addr, tls.as_ref(), t, msg).await,
                    Err(e) => Err(e.clone()),
                };
                record(&state, seq, r, due);
            }
        }
        (Ready::Post, Target::Ws) => record(
            &state,
            0,
            Err("publisher: no WebSocket".into()),
            Instant::now(),
        ),
    }
}

type WsSink = futures_util::stream::SplitSink<
    tokio_tungstenite::WebSocketStream<Stream>,
    tokio_tungstenite::tungstenite::Message,
>;

/// A raw WebSocket publisher: each message one text frame, in order. With `redial` a
/// failed send drops the connection and the next message dials again first (one try
/// per message: a hub that is down fails the messages of its downtime, each counted).
async fn send_all_ws(
    mut ws: WsConn,
    redial: Option<std::sync::Arc<Plan>>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Job>,
    state: Shared,
) {
    while let Some((seq, due, msg)) = rx.recv().await {
        // The hub closed (killed: its FIN came): a write would still succeed once, into
        // a socket nobody reads, and count a message the hub never took as sent.
        if redial.is_some() && ws.reader.0.is_finished() {
            ws.sink = None;
        }
        if ws.sink.is_none() {
            if let Some(plan) = &redial {
                match connect(plan).await {
                    // The old connection's reader is aborted as it is dropped.
                    Ok(Ready::Ws(new)) => ws = *new,
                    Ok(Ready::Post | Ready::App(_)) => {}
                    Err(e) => {
                        record(&state, seq, Err(e), due);
                        continue;
                    }
                }
            }
        }
        let r = match ws.sink.as_mut() {
            Some(sink) => sink
                .send(tokio_tungstenite::tungstenite::Message::text(msg))
                .await
                .map_err(|e| format!("publisher: WebSocket send: {e}")),
            None => Err("publisher: the WebSocket is closed".into()),
        };
        if r.is_err() && redial.is_some() {
            ws.sink = None;
        }
        record(&state, seq, r, due);
    }
}

/// A raw WebSocket publisher's sink (None once it failed), and a task that reads and
/// discards from the handshake on: a chat hub echoes to its sender, which must not
/// become a slow client itself, and a hub's ping is answered while the clients connect
/// (tungstenite replies as it reads; node `ws`'s heartbeat example terminates a
/// connection that missed one interval's pong). The reader ends when this is dropped.
pub struct WsConn {
    sink: Option<WsSink>,
    reader: AbortOnDrop,
}

impl WsConn {
    fn new(ws: tokio_tungstenite::WebSocketStream<Stream>) -> WsConn {
        let (sink, mut stream) = ws.split();
        let reader = tokio::spawn(async move { while let Some(Ok(_)) = stream.next().await {} });
        WsConn {
            sink: Some(sink),
            reader: AbortOnDrop(reader),
        }
    }
}

/// The WebSocket publisher of a library protocol: each message published as its clients
/// publish (`42["message",...]`...), the library's heartbeat answered from a reader that
/// never stops reading (a hub that echoes to the publisher must not make it slow).
async fn send_all_app(
    ws: tokio_tungstenite::WebSocketStream<Stream>,
    app: super::appws::Session,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Job>,
    state: Shared,
) {
    use tokio_tungstenite::tungstenite::Message;
    let app = std::sync::Arc::new(std::sync::Mutex::new(app));
    let (mut sink, mut stream) = ws.split();
    // Replies are one per server heartbeat: a few, however long the run.
    let (owed_tx, mut owed) = tokio::sync::mpsc::unbounded_channel::<Message>();
    let reader_app = app.clone();
    // Aborted with this task too (run aborts a sender still blocked 1 s after its stop).
    let _reader = AbortOnDrop(tokio::spawn(async move {
        while let Some(Ok(m)) = stream.next().await {
            let Some(replies) = with(&reader_app, |s| s.on_message(&m).replies) else {
                return;
            };
            for r in replies {
                let _ = owed_tx.send(r);
            }
        }
    }));
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        let (m, due) = tokio::select! {
            next = rx.recv() => match next {
                Some((seq, due, msg)) => match with(&app, |s| s.publish(&msg)) {
                    Some(m) => (m, Some((seq, due))),
                    None => break,
                },
                None => break,
            },
            Some(r) = owed.recv() => (r, None),
            _ = tick.tick() => match with(&app, |s| s.due()).flatten() {
                Some(b) => (b, None),
                None => continue,
            },
        };
        let r = sink
            .send(m)
            .await
            .map_err(|e| format!("publisher: WebSocket send: {e}"));
        if let Some((seq, due)) = due {
            record(&state, seq, r, due);
        }
    }
}

/// A task aborted when this is dropped (also when the task holding it is aborted).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `f` on the session, the lock released before any await (None: poisoned).
fn with<R>(
    app: &std::sync::Mutex<super::appws::Session>,
    f: impl FnOnce(&mut super::appws::Session) -> R,
) -> Option<R> {
    let mut g = app.lock().ok()?;
    Some(f(&mut g))
}

/// The q-quantile of sorted values (0 for none).
fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// One POST on a kept-alive connection (reconnecting when the server closed it); a
/// non-2xx answer is a failure named by its status, never by the body or the headers.
async fn post(
    conn: &mut Option<WireConn<Stream>>,
    addr: SocketAddr,
    tls: Option<&Tls>,
    t: &HttpTarget,
    body: String,
) -> Result<(), String> {
    // A query value may be a token: errors show the path redacted (`t.url`).
    if !conn.as_ref().is_some_and(WireConn::open_still) {
        let s = tokio::time::timeout(Duration::from_secs(10), open(addr, tls))
            .await
            .map_err(|_| format!("publisher: POST {addr}: connect timed out"))?
            .map_err(|e| format!("publisher: POST {e}"))?;
        *conn = Some(WireConn::over(s));
    }
    let c = conn.as_mut().ok_or("publisher: no connection")?;
    let request = crate::load::wire::encode(&HttpTarget {
        body: Bytes::from(body),
        ..t.clone()
    });
    let answer = tokio::time::timeout(Duration::from_secs(10), c.exchange(&request, false, None))
        .await
        .map_err(|_| format!("publisher: POST {}: no answer within 10s", t.url))
        .and_then(|a| {
            a.map_err(|_| {
                format!(
                    "publisher: POST {}: the connection broke or the answer is not HTTP/1.1",
                    t.url
                )
            })
        });
    let a = answer.inspect_err(|_| *conn = None)?;
    if (200..300).contains(&a.status) {
        Ok(())
    } else {
        Err(format!(
            "publisher: POST {} answered HTTP {}",
            t.url, a.status
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_by_counts_rounds_due_at_the_end_not_the_plan() {
        let ms = Duration::from_millis;
        // Stopped before round 1's time: nothing was due.
        assert_eq!(due_by(None, ms(100), 1535), 0);
        // Round 1 is due at t0, then one a period: 2.5 periods in, 3 were due.
        assert_eq!(due_by(Some(ms(0)), ms(100), 1535), 1);
        assert_eq!(due_by(Some(ms(250)), ms(100), 1535), 3);
        assert_eq!(due_by(Some(ms(300)), ms(100), 1535), 4);
        // Past the last round: the plan, never more.
        assert_eq!(due_by(Some(ms(1_000_000)), ms(100), 1535), 1535);
        assert_eq!(due_by(Some(Duration::MAX), ms(1), 7), 7);
        assert_eq!(due_by(Some(ms(5)), Duration::ZERO, 7), 7);
    }

    fn ws_plan(url: &str) -> Plan {
        let ep = Endpoint::new(url, None, &Trust::default()).unwrap();
        Plan {
            via: PublishVia::Ws,
            ws_url: url.into(),
            ws: ep,
            post: None,
            message: Template::parse(super::super::template::DEFAULT_MESSAGE),
            subscribe: None,
            app: None,
            headers: vec![],
            rounds: 1,
            rate: 20.0,
            size: 16,
            redial: false,
        }
    }

    #[test]
    fn a_connected_ws_publisher_answers_the_hubs_ping_before_its_run() {
        use tokio_tungstenite::tungstenite::Message;
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("ws://{}/ws", l.local_addr().unwrap());
            // The hub pings once the publisher is in, and waits for its pong (node `ws`'s
            // heartbeat terminates a connection that missed one).
            let hub = tokio::spawn(async move {
                let (s, _) = l.accept().await.unwrap();
                let mut ws = tokio_tungstenite::accept_async(s).await.unwrap();
                ws.send(Message::Ping(b"hb".to_vec().into())).await.unwrap();
                let pong = tokio::time::timeout(Duration::from_secs(30), async {
                    while let Some(Ok(m)) = ws.next().await {
                        if let Message::Pong(p) = m {
                            return Some(p.to_vec());
                        }
                    }
                    None
                });
                pong.await.ok().flatten()
            });
            // Connected, not yet run: the clients would be connecting now.
            let ready = connect(&ws_plan(&url)).await.unwrap();
            assert!(matches!(ready, Ready::Ws(_)));
            let pong = tokio::time::timeout(Duration::from_secs(60), hub)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(pong.as_deref(), Some(&b"hb"[..]));
            drop(ready);
        });
    }

    #[test]
    fn run_stopped_early_says_what_was_due() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (stop_tx, stop) = tokio::sync::watch::channel(0u8);
        // Port 9 on loopback: nothing listens, each POST fails at once; the schedule is
        // what is checked.
        let ep = Endpoint::new("http://127.0.0.1:9/p", None, &Trust::default()).unwrap();
        let plan = Plan {
            via: PublishVia::Post {
                url: "http://127.0.0.1:9/p".into(),
            },
            ws_url: "ws://127.0.0.1:9/p".into(),
            ws: ep.clone(),
            post: Some(ep),
            message: Template::parse(super::super::template::DEFAULT_MESSAGE),
            subscribe: None,
            app: None,
            headers: vec![],
            rounds: 1535,
            rate: 20.0,
            size: 16,
            redial: false,
        };
        // Stopped long before the plan's 77 s: what was due is far below the plan.
        let st = rt.block_on(async {
            let t = tokio::spawn(run(plan, Ready::Post, stop, 1));
            tokio::task::yield_now().await;
            stop_tx.send(1).unwrap();
            tokio::time::timeout(Duration::from_secs(60), t)
                .await
                .unwrap()
                .unwrap()
        });
        assert_eq!(st.planned, 1535);
        assert!(st.scheduled < 1535, "{st:?}");
        assert!(st.scheduled >= st.timer_rounds, "{st:?}");
    }

    #[test]
    fn publish_values() {
        assert_eq!(PublishVia::parse("ws"), Ok(PublishVia::Ws));
        assert_eq!(PublishVia::parse("server"), Ok(PublishVia::Server));
        assert_eq!(
            PublishVia::parse("POST http://127.0.0.1:9/publish"),
            Ok(PublishVia::Post {
                url: "http://127.0.0.1:9/publish".into()
            })
        );
        // The host is checked where --connect-to is known (`post`); the form here.
        let far = "http://10.0.0.1:9/p?token=s3cretvalue";
        let via = PublishVia::parse(&format!("POST {far}")).unwrap();
        let e = format!("{:#}", via.post(None, &Trust::default()).unwrap_err());
        assert!(
            e.contains("not a loopback") && !e.contains("s3cretvalue"),
            "{e}"
        );
        let to = Some(SocketAddr::from(([127, 0, 0, 1], 9)));
        assert!(via.post(to, &Trust::default()).unwrap().is_some());
        let e = PublishVia::parse("POST http://u:pw@127.0.0.1:9/p").unwrap_err();
        assert!(!e.contains("pw"), "{e}");
        let e = PublishVia::parse("POST http://u:pw@/p?token=s3cretvalue").unwrap_err();
        assert!(!e.contains("pw@") && !e.contains("s3cretvalue"), "{e}");
        assert!(PublishVia::parse("POST https://api.example.com/publish").is_ok());
        assert!(PublishVia::parse("POST ws://127.0.0.1:9/x").is_err());
        assert!(PublishVia::parse("PUT http://127.0.0.1:9/x").is_err());
        let p = PublishVia::Post {
            url: "http://127.0.0.1:9/p?key=abcdefgh".into(),
        };
        assert!(!p.name().contains("abcdefgh"), "{}", p.name());
        assert_eq!(PublishVia::parse(&p.arg()), Ok(p));
    }

    #[test]
    fn the_post_is_host_json_then_the_headers_and_errors_show_the_path_redacted() {
        let tg = |u: &str| target::parse(u, None).unwrap();
        let headers = [("X-Key".to_string(), "k1".to_string())];
        let t = post_target(&tg("http://127.0.0.1:9/p?token=s3cretvalue"), &headers).unwrap();
        assert!(!t.url.contains("s3cretvalue"), "{}", t.url);
        let bytes = crate::load::wire::encode(&HttpTarget {
            body: Bytes::from_static(b"{}"),
            ..t
        });
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            "POST /p?token=s3cretvalue HTTP/1.1\r\nhost: 127.0.0.1:9\r\ncontent-type: application/json\r\nx-key: k1\r\ncontent-length: 2\r\n\r\n{}"
        );
        let bad = [("X-Key".to_string(), "a\u{1}b".to_string())];
        assert_eq!(
            post_target(&tg("http://127.0.0.1:9/p"), &bad)
                .err()
                .as_deref(),
            Some("publisher: a -H header was refused by the HTTP library")
        );
        // Through --connect-to the socket goes to loopback, the Host header keeps the name.
        let to: SocketAddr = "127.0.0.1:8443".parse().unwrap();
        let t = target::parse("https://api.example.com/publish", Some(to)).unwrap();
        let p = post_target(&t, &[]).unwrap();
        assert_eq!((p.addr, p.authority.as_str()), (to, "api.example.com"));
    }

    #[test]
    fn failed_seqs_are_kept_as_ranges() {
        let mut v = Vec::new();
        for s in [3, 4, 5, 9, 11, 12] {
            add_range(&mut v, s);
        }
        assert_eq!(v, vec![(3, 5), (9, 9), (11, 12)]);
    }

    #[test]
    fn headers_parse_without_echoing_values() {
        assert_eq!(
            parse_header("Authorization: Bearer abc"),
            Ok(("Authorization".into(), "Bearer abc".into()))
        );
        let e = parse_header("Bad Name: s3cret").unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
        let e = parse_header("X-Token: a\r\nb").unwrap_err();
        assert!(!e.contains("a\r"), "{e}");
        assert!(parse_header("novalue").is_err());
    }
}
