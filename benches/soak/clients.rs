//! The soak's client kinds, one tokio task each. Counting kinds (healthy, reconnecting,
//! session, churn) keep a [`Tally`] from seq 1 to the phase's last round and, when the
//! server closes them, resume as a real client would; adversarial kinds (never-reading,
//! resume-from-0 flooders, anonymous session pinners) loop until the phase stops.
use super::conn::{Conn, OpenError, Proto};
use super::hist::Hist;
use super::tally::Tally;
use super::wire;
use rtcheck::bench::seq_account::Trace;
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio::time::sleep_until;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Reads every message (WebSocket / SSE).
    Ws,
    Sse,
    /// SSE that reconnects with `Last-Event-ID`: even ones all at once (storms), odd ones
    /// each on its own period.
    SseReconnect,
    /// Small SO_RCVBUF, never reads: the write deadline must remove it.
    NeverReadWs,
    NeverReadSse,
    /// Ask for the whole ring and never read, again and again.
    FloodSse,
    FloodWs,
    FloodPoll,
    /// session-ack clients that read everything and ack.
    SessionWs,
    SessionSse,
    /// session-ack clients that take a session, leave and come back with `?session=`.
    ChurnWs,
    ChurnSse,
    /// Bare `GET /poll?session=`, never back: each pins a session until its TTL.
    PinPoll,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ws => "ws",
            Kind::Sse => "sse",
            Kind::SseReconnect => "sse-reconnect",
            Kind::NeverReadWs => "never-read-ws",
            Kind::NeverReadSse => "never-read-sse",
            Kind::FloodSse => "flood-sse-0",
            Kind::FloodWs => "flood-ws-0",
            Kind::FloodPoll => "flood-poll-0",
            Kind::SessionWs => "session-ws",
            Kind::SessionSse => "session-sse",
            Kind::ChurnWs => "churn-ws",
            Kind::ChurnSse => "churn-sse",
            Kind::PinPoll => "pin-poll",
        }
    }

    /// Keeps a tally of seqs (and is connected before publishing starts).
    pub fn counts(self) -> bool {
        matches!(
            self,
            Kind::Ws
                | Kind::Sse
                | Kind::SseReconnect
                | Kind::SessionWs
                | Kind::SessionSse
                | Kind::ChurnWs
                | Kind::ChurnSse
        )
    }

    /// Reads every live message without leaving: its lateness judges the generator.
    pub fn healthy(self) -> bool {
        matches!(
            self,
            Kind::Ws | Kind::Sse | Kind::SessionWs | Kind::SessionSse
        )
    }
}

/// Timings of the adversarial and churning kinds.
#[derive(Debug, Clone, Copy)]
pub struct Knobs {
    /// A never-reading client holds its socket this long, then checks it was removed. At
    /// 5 msg/s the server's send buffer (autotuned to megabytes on loopback) takes minutes
    /// to fill, so it is the liveness bound (`--pong-wait`, also TCP_USER_TIMEOUT for SSE)
    /// that removes it, well before the write deadline would: hold longer than that.
    pub never_read_hold: Duration,
    /// A flooder holds each request this long.
    pub flood_hold: Duration,
    /// Every this long, every storming reconnector reconnects at the same instant.
    pub storm_every: Duration,
    /// A pinner asks for a new session this often.
    pub pin_every: Duration,
    /// How often session clients ack (WebSocket in-band; SSE by POST /ack).
    pub ack_every: Duration,
}

/// What every task shares.
pub struct Ctx {
    pub addr: SocketAddr,
    /// The phase's last round: counting clients read up to it.
    pub end: u64,
    pub knobs: Knobs,
    /// The server runs `--delivery session-ack`: clients take sessions and ack.
    pub session_ack: bool,
    /// Publishing started: adversarial kinds begin.
    pub go: watch::Receiver<bool>,
    /// Publishing finished: adversarial kinds stop, churners come back for good.
    pub stop: watch::Receiver<bool>,
    /// Ctrl-C or the drain bound: everyone leaves now.
    pub abort: watch::Receiver<bool>,
    /// The storm schedule starts here.
    pub t0: Instant,
    /// Counting clients connected (the phase starts publishing when all are).
    pub ready: AtomicU64,
    pub received: AtomicU64,
    pub connects: AtomicU64,
    /// Lateness (receive - scheduled) of healthy clients' messages.
    pub lateness: Hist,
}

/// One client's figures; summed per kind by the report.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub trace: Option<Trace>,
    pub connects: u64,
    /// The server closed it while it still expected messages (it resumed).
    pub server_closed: u64,
    /// Connects answered with another status (503 at a session cap).
    pub refused: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub session_resets: u64,
    pub unknown: u64,
    pub first_unknown: Option<String>,
    /// Never-reading: holds that ran their full time, and of them the ones the server closed.
    pub judged: u64,
    pub removed: u64,
    /// Flooders and pinners: requests sent; pinners: sessions issued.
    pub requests: u64,
    pub sessions: u64,
}

impl Outcome {
    fn error(&mut self, e: impl std::fmt::Display) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(e.to_string());
        }
    }
}

/// Deterministic jitter in [0, span) for client `i`, draw `k` (no RNG: a run is repeatable).
pub fn jitter(i: usize, k: u64, span: Duration) -> Duration {
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k.wrapping_mul(0xBF58_476D);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 29;
    let ms = span.as_millis().max(1) as u64;
    Duration::from_millis(x % ms)
}

pub async fn run(ctx: std::sync::Arc<Ctx>, kind: Kind, i: usize) -> Outcome {
    let c = &*ctx;
    match kind {
        Kind::Ws | Kind::SessionWs => counting(c, Proto::Ws, i, Leave::Never).await,
        Kind::Sse | Kind::SessionSse => counting(c, Proto::Sse, i, Leave::Never).await,
        Kind::SseReconnect => counting(c, Proto::Sse, i, Leave::Reconnect).await,
        Kind::ChurnWs => counting(c, Proto::Ws, i, Leave::Churn).await,
        Kind::ChurnSse => counting(c, Proto::Sse, i, Leave::Churn).await,
        Kind::NeverReadWs => never_read(c, Proto::Ws, i).await,
        Kind::NeverReadSse => never_read(c, Proto::Sse, i).await,
        Kind::FloodSse | Kind::FloodWs | Kind::FloodPoll => flood(c, kind, i).await,
        Kind::PinPoll => pin(c, i).await,
    }
}

/// How a counting client leaves on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leave {
    Never,
    /// Reconnect at once with its position (storm or own period).
    Reconnect,
    /// session-ack: stay a few seconds, leave, stay away a few seconds, come back.
    Churn,
}

/// Why [`Counter::follow`] returned.
enum Stop {
    Done,
    Closed(Option<std::io::Error>),
    Timer,
    Abort,
}

/// A counting client across its connections: what it got, how it acks, its figures.
struct Counter<'a> {
    c: &'a Ctx,
    proto: Proto,
    /// Reads live without leaving: its lateness is recorded.
    healthy: bool,
    t: Tally,
    /// session-ack: ack every this long (in-band on the WebSocket, POST /ack over a
    /// keep-alive connection for SSE); None: no acks (seq-ring, or churning SSE, which
    /// acks by Last-Event-ID when it comes back).
    ack_every: Option<Duration>,
    acked: u64,
    post: Option<tokio::net::TcpStream>,
    o: Outcome,
}

impl Counter<'_> {
    /// Read until done, closed, `until`, or abort; ack on the way.
    async fn follow(&mut self, conn: &mut Conn, until: Option<Instant>) -> Stop {
        let c = self.c;
        let mut abort = c.abort.clone();
        let mut items = Vec::new();
        let far = Instant::now() + Duration::from_secs(86_400);
        let mut next_ack = self.ack_every.map(|e| Instant::now() + e);
        loop {
            if self.t.done() {
                return Stop::Done;
            }
            if *abort.borrow() {
                return Stop::Abort;
            }
            tokio::select! {
                r = conn.read(&mut items) => match r {
                    Ok(true) => {}
                    Ok(false) => return Stop::Closed(None),
                    Err(e) => return Stop::Closed(Some(e)),
                },
                _ = sleep_until(until.unwrap_or(far).into()) => return Stop::Timer,
                _ = sleep_until(next_ack.unwrap_or(far).into()) => {
                    next_ack = self.ack_every.map(|e| Instant::now() + e);
                    self.ack(conn).await;
                    continue;
                }
                _ = abort.changed() => return Stop::Abort,
            }
            if conn.epoch.is_some() && self.t.epoch != conn.epoch {
                self.t.epoch = conn.epoch.clone();
            }
            let now = rtcheck_base::os::clock::now_ns();
            c.received.fetch_add(items.len() as u64, Relaxed);
            for it in items.drain(..) {
                if let (Some(ts), true) = (self.t.take(it), self.healthy) {
                    c.lateness
                        .record(Duration::from_nanos(now.saturating_sub(ts)));
                }
            }
            if let Err(e) = conn.flush_pongs().await {
                return Stop::Closed(Some(e));
            }
        }
    }

    async fn ack(&mut self, conn: &mut Conn) {
        let seq = self.t.last;
        let Some(id) = self.t.session.clone().filter(|_| seq > self.acked) else {
            return;
        };
        let r = match self.proto {
            Proto::Ws => conn
                .send_text(&format!("{{\"ack\":{seq}}}"))
                .await
                .map(|_| 200),
            Proto::Sse => self.post_ack(&id, seq).await,
        };
        match r {
            Ok(200) => self.acked = seq,
            Ok(st) => self.o.error(format!("POST /ack answered {st}")),
            // The stream itself says whether the server is gone; acks are cumulative.
            Err(_) => self.post = None,
        }
    }

    async fn post_ack(&mut self, id: &str, seq: u64) -> std::io::Result<u16> {
        let addr = self.c.addr;
        if self.post.is_none() {
            self.post = Some(wire::connect(addr, None).await?);
        }
        let s = self.post.as_mut().expect("just set");
        let req = format!(
            "POST /ack?session={id}&seq={seq} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n"
        );
        Ok(wire::exchange(s, &req).await?.0.status)
    }

    /// Connect (again) until it works or the phase aborts; None on abort.
    async fn open(&mut self) -> Option<Conn> {
        let c = self.c;
        let abort = c.abort.clone();
        loop {
            if *abort.borrow() {
                return None;
            }
            let (path, last_id) = target(self.proto, &self.t, c.session_ack);
            self.o.connects += 1;
            c.connects.fetch_add(1, Relaxed);
            match Conn::open(c.addr, self.proto, &path, last_id.as_deref()).await {
                Ok(conn) => return Some(conn),
                Err(OpenError::Refused(_)) => self.o.refused += 1,
                Err(e) => self.o.error(format!("{path}: {e}")),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    fn finish(mut self) -> Outcome {
        self.o.session_resets = self.t.session_resets;
        self.o.unknown = self.t.unknown;
        self.o.first_unknown = self.t.first_unknown;
        self.o.trace = Some(self.t.trace);
        self.o
    }
}

/// The path and Last-Event-ID of a (re)connect: fresh, or resuming what `t` has.
fn target(proto: Proto, t: &Tally, session_ack: bool) -> (String, Option<String>) {
    let base = match proto {
        Proto::Ws => "/ws",
        Proto::Sse => "/sse",
    };
    match (&t.session, proto) {
        // session-ack: the session is the position (SSE also acks what it has).
        (Some(id), Proto::Ws) => (format!("{base}?session={id}"), None),
        (Some(id), Proto::Sse) => (format!("{base}?session={id}"), t.resume_id()),
        (None, _) if session_ack => (base.into(), None),
        (None, Proto::Ws) if t.last > 0 => (format!("{base}?{}", t.ws_resume()), None),
        (None, _) => (base.into(), t.resume_id()),
    }
}

/// Every counting kind: connect before publishing, read to the last round, resume when
/// closed, leave and come back as `leave` says.
async fn counting(c: &Ctx, proto: Proto, i: usize, leave: Leave) -> Outcome {
    let acks = c.session_ack && !(proto == Proto::Sse && leave == Leave::Churn);
    let mut n = Counter {
        c,
        proto,
        healthy: leave == Leave::Never,
        t: Tally::new(c.end),
        ack_every: acks.then_some(c.knobs.ack_every),
        acked: 0,
        post: None,
        o: Outcome::default(),
    };
    let Some(mut conn) = n.open().await else {
        return n.finish();
    };
    c.ready.fetch_add(1, Relaxed);
    let stop = c.stop.clone();
    let secs = Duration::from_secs;
    for k in 0u64.. {
        let until = match leave {
            _ if *stop.borrow() => None,
            Leave::Never => None,
            Leave::Reconnect if i.is_multiple_of(2) => Some(next_storm(c)),
            Leave::Reconnect => Some(Instant::now() + secs(2) + jitter(i, k, secs(4))),
            Leave::Churn => Some(Instant::now() + secs(3) + jitter(i, k, secs(3))),
        };
        match n.follow(&mut conn, until).await {
            Stop::Done | Stop::Abort => break,
            Stop::Closed(e) => {
                n.o.server_closed += 1;
                if let Some(e) = e {
                    n.o.error(format!("read: {e}"));
                }
            }
            Stop::Timer => {
                conn.close(k % 2 == 1);
                if leave == Leave::Churn {
                    away(c, i, k).await;
                }
            }
        }
        match n.open().await {
            Some(x) => conn = x,
            None => break,
        }
    }
    n.finish()
}

/// Stay away 2-4 s, or until publishing stopped.
async fn away(c: &Ctx, i: usize, k: u64) {
    let mut stop = c.stop.clone();
    let back =
        Instant::now() + Duration::from_secs(2) + jitter(i, k ^ 0xa5, Duration::from_secs(2));
    if !*stop.borrow() {
        tokio::select! {
            _ = sleep_until(back.into()) => {}
            _ = stop.changed() => {}
        }
    }
}

/// The next storm instant: the same for every storming client.
fn next_storm(c: &Ctx) -> Instant {
    let every = c.knobs.storm_every.as_millis().max(1) as u64;
    let since = c.t0.elapsed().as_millis() as u64;
    c.t0 + Duration::from_millis((since / every + 1) * every)
}

/// Wait for `go`; false if the phase aborted or stopped first.
async fn started(c: &Ctx) -> bool {
    let (mut go, mut abort) = (c.go.clone(), c.abort.clone());
    while !*go.borrow() {
        tokio::select! {
            r = go.changed() => if r.is_err() { return false },
            _ = abort.changed() => return false,
        }
    }
    !*c.stop.borrow() && !*c.abort.borrow()
}

/// Sleep until `t` or stop/abort; true if the full time passed.
async fn hold(c: &Ctx, until: Instant) -> bool {
    let (mut stop, mut abort) = (c.stop.clone(), c.abort.clone());
    if *stop.borrow() || *abort.borrow() {
        return false;
    }
    tokio::select! {
        _ = sleep_until(until.into()) => true,
        _ = stop.changed() => false,
        _ = abort.changed() => false,
    }
}

/// Connect with a small receive buffer, send `req`, never read, hold; then check the
/// server closed it (drain to EOF within a bound).
async fn never_read(c: &Ctx, proto: Proto, i: usize) -> Outcome {
    let mut o = Outcome::default();
    if !started(c).await {
        return o;
    }
    let req = match proto {
        Proto::Ws => wire::ws_upgrade(c.addr, "/ws"),
        Proto::Sse => wire::sse_get(c.addr, "/sse", None),
    };
    // Spread the first connects over a second.
    if !hold(c, Instant::now() + jitter(i, 0, Duration::from_secs(1))).await {
        return o;
    }
    loop {
        o.connects += 1;
        c.connects.fetch_add(1, Relaxed);
        let mut s = match wire::connect(c.addr, Some(4096)).await {
            Ok(s) => s,
            Err(e) => {
                o.error(format!("connect: {e}"));
                if !hold(c, Instant::now() + Duration::from_secs(1)).await {
                    return o;
                }
                continue;
            }
        };
        if let Err(e) = s.write_all(req.as_bytes()).await {
            o.error(format!("write: {e}"));
        }
        let full = hold(c, Instant::now() + c.knobs.never_read_hold).await;
        if full {
            o.judged += 1;
            o.removed += closed_by_server(&mut s).await as u64;
        }
        wire::reset_on_close(&s);
        drop(s);
        if !full {
            return o;
        }
    }
}

/// Read what is buffered: true if the stream ends (FIN or RST) within 5 s, i.e. the
/// server had closed it; a live stream keeps trickling messages and never ends.
async fn closed_by_server(s: &mut tokio::net::TcpStream) -> bool {
    let mut buf = vec![0u8; 64 << 10];
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(until.into(), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
            Err(_) => return false,
        }
    }
}

/// Ask for the whole ring (`Last-Event-ID: 0`, `/ws?since=0`, `/poll?since=0`) with a
/// small receive buffer, never read, hold, leave with RST; again until the phase stops.
async fn flood(c: &Ctx, kind: Kind, i: usize) -> Outcome {
    let mut o = Outcome::default();
    if !started(c).await {
        return o;
    }
    let req = match kind {
        Kind::FloodSse => wire::sse_get(c.addr, "/sse", Some("0")),
        Kind::FloodWs => wire::ws_upgrade(c.addr, "/ws?since=0"),
        _ => wire::get(c.addr, "/poll?since=0", ""),
    };
    let mut next = Instant::now() + jitter(i, 1, c.knobs.flood_hold);
    while hold(c, next).await {
        o.connects += 1;
        c.connects.fetch_add(1, Relaxed);
        next = Instant::now() + c.knobs.flood_hold;
        match wire::connect(c.addr, Some(4096)).await {
            Ok(mut s) => {
                match s.write_all(req.as_bytes()).await {
                    Ok(()) => o.requests += 1,
                    Err(e) => o.error(format!("write: {e}")),
                }
                let full = hold(c, next).await;
                wire::reset_on_close(&s);
                if !full {
                    break;
                }
                next = Instant::now();
            }
            Err(e) => o.error(format!("connect: {e}")),
        }
    }
    o
}

/// Bare `GET /poll?session=` on a keep-alive connection every `pin_every`: each issues a
/// session that is never presented again (it holds memory until the TTL), or is refused.
async fn pin(c: &Ctx, i: usize) -> Outcome {
    let mut o = Outcome::default();
    if !started(c).await {
        return o;
    }
    let req = wire::get(c.addr, "/poll?session=", "");
    let mut s: Option<tokio::net::TcpStream> = None;
    let mut next = Instant::now() + jitter(i, 2, c.knobs.pin_every);
    while hold(c, next).await {
        next = (next + c.knobs.pin_every).max(Instant::now());
        if s.is_none() {
            o.connects += 1;
            c.connects.fetch_add(1, Relaxed);
            match wire::connect(c.addr, None).await {
                Ok(x) => s = Some(x),
                Err(e) => {
                    o.error(format!("connect: {e}"));
                    continue;
                }
            }
        }
        o.requests += 1;
        match wire::exchange(s.as_mut().expect("connected"), &req).await {
            Ok((h, b)) => {
                match h.status {
                    200 => o.sessions += 1,
                    503 => o.refused += 1,
                    st => o.error(format!("HTTP {st}: {:.80}", String::from_utf8_lossy(&b))),
                }
                if h.close {
                    s = None;
                }
            }
            Err(e) => {
                o.error(format!("poll: {e}"));
                s = None;
            }
        }
    }
    o
}
