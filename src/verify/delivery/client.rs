//! One delivery client over SSE (std sockets, one thread each): connect with or without
//! `Last-Event-ID`, read events and gap markers into a [`Trace`], disconnect the way real
//! clients do, stay away, reconnect and resume.
use crate::bench::seq_account::Trace;
use anyhow::{anyhow, bail, Context};
use rtcheck_base::os::signal::interrupted;
use rtcheck_wire::epoch::{self, Epoch, Marker, Position};
use rtcheck_wire::http::client::{self as http_client, HeadError};
use rtcheck_wire::http::response::{self, Framing, Limits};
use rtcheck_wire::{payload, sse};
use serde::Serialize;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// How a client leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Disconnect {
    /// FIN: the client closes its socket.
    Clean,
    /// RST: SO_LINGER 0, as when a process dies or a NAT forgets the flow.
    Reset,
    /// Stops reading with the socket open (a frozen tab); closes when it comes back.
    Silent,
    /// Every client of the run closes at the same instant and reconnects at once.
    Storm,
}

impl Disconnect {
    pub const ALL: [Disconnect; 4] = [
        Disconnect::Clean,
        Disconnect::Reset,
        Disconnect::Silent,
        Disconnect::Storm,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Disconnect::Clean => "clean",
            Disconnect::Reset => "reset",
            Disconnect::Silent => "silent",
            Disconnect::Storm => "storm",
        }
    }
}

/// How often a session-ack client acks what it has (the duplicates after a reconnect are
/// what arrived since the last ack: the seed's "duplicates to filter").
pub const ACK_EVERY: Duration = Duration::from_millis(100);

/// A session-ack client's session: issued by the server's hello, acked by seq.
#[derive(Debug, Clone, Default)]
pub struct SessionState {
    pub id: Option<String>,
    /// The server did not know the session presented: a new one, everything unacked lost.
    pub reset: bool,
    acked: u64,
    last_ack: Option<Instant>,
}

impl SessionState {
    /// Read a hello `{"session":ID,"reset":bool}`; false if it is not one.
    pub fn hello(&mut self, data: &str) -> bool {
        #[derive(serde::Deserialize)]
        struct H {
            session: String,
            #[serde(default)]
            reset: bool,
        }
        match serde_json::from_str::<H>(data) {
            Ok(h) => {
                self.id = Some(h.session);
                self.reset |= h.reset;
                true
            }
            Err(_) => false,
        }
    }

    /// The seq to ack now, if one is due.
    fn due(&mut self, seq: u64) -> Option<u64> {
        let due = self.last_ack.is_none_or(|t| t.elapsed() >= ACK_EVERY);
        (self.id.is_some() && due && seq > self.acked).then(|| {
            self.acked = seq;
            self.last_ack = Some(Instant::now());
            seq
        })
    }
}

/// Bytes of one SSE line we accept (a hostile or broken server is an error, not memory).
const MAX_LINE: usize = 1 << 20;
/// Read timeout: how often a blocked read looks at the clock and Ctrl-C.
const TICK: Duration = Duration::from_millis(50);

/// An open SSE stream.
pub struct SseConn {
    stream: TcpStream,
    events: sse::Stream,
    peer: SocketAddr,
    /// Bytes that came with the response head (the replay and gap marker often do).
    pending: Vec<u8>,
    /// session-ack: the session (acked with POST /ack); None in the other modes.
    pub session: Option<SessionState>,
}

impl SseConn {
    /// `GET /sse`, with `Last-Event-ID: last_id` when resuming; fails unless 200.
    /// `session`: Some for session-ack (Some("") for a fresh one), presented as `?session=`.
    pub fn open(
        addr: SocketAddr,
        last_id: Option<&str>,
        session: Option<&str>,
    ) -> anyhow::Result<SseConn> {
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .with_context(|| format!("{addr}: connect"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(TICK))?;
        // Every write bounded too: a server that never reads cannot hold a client.
        stream.set_write_timeout(Some(Duration::from_secs(5)))?;
        let path = match session {
            Some(id) if !id.is_empty() => format!("/sse?session={id}"),
            _ => "/sse".into(),
        };
        let host = addr.to_string();
        let mut headers = vec![("Host", host.as_str()), ("Accept", "text/event-stream")];
        headers.extend(last_id.map(|id| ("Last-Event-ID", id)));
        stream.write_all(&http_client::head("GET", &path, &headers))?;
        let (framing, rest) = read_head(&mut stream, addr, "GET /sse")?;
        Ok(SseConn {
            stream,
            events: sse::Stream::new(framing, sse::Parser::new(MAX_LINE)),
            peer: addr,
            pending: rest,
            session: session.map(|_| SessionState::default()),
        })
    }

    /// The seq of the last event read (what a resuming client sends).
    pub fn last_id(&self) -> Option<String> {
        self.events.last_id().map(String::from)
    }

    /// Read until `until` (or EOF), appending seqs and gap markers to `t`; `on_msg` sees
    /// each seq as it arrives.
    pub fn recv_until(
        &mut self,
        until: Instant,
        t: &mut Trace,
        on_msg: &mut dyn FnMut(u64),
    ) -> anyhow::Result<()> {
        let pending = std::mem::take(&mut self.pending);
        self.feed(&pending, t, on_msg)?;
        let mut buf = vec![0u8; 64 * 1024];
        while Instant::now() < until && !interrupted() {
            match self.stream.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => self.feed(&buf[..n], t, on_msg)?,
                Err(e) if is_timeout(&e) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(()),
                Err(e) => return Err(anyhow!("{}: read: {e}", self.peer)),
            }
        }
        Ok(())
    }

    fn feed(
        &mut self,
        bytes: &[u8],
        t: &mut Trace,
        on_msg: &mut dyn FnMut(u64),
    ) -> anyhow::Result<()> {
        let mut out = Vec::new();
        self.events
            .feed(bytes, &mut out)
            .map_err(|e| anyhow!("{}: {e}", self.peer))?;
        for ev in out {
            match ev.event.as_deref() {
                // A client that does not use sessions ignores the hello, as EventSource
                // ignores an event type nobody listens to.
                Some("session") => {
                    let mut ignored = SessionState::default();
                    let s = self.session.as_mut().unwrap_or(&mut ignored);
                    if !s.hello(&ev.data) {
                        bail!("{}: bad session event `{}`", self.peer, ev.data);
                    }
                }
                Some("reset") => match epoch::parse_marker(&ev.data) {
                    Some(Marker::Reset { .. }) => t.resets += 1,
                    _ => bail!("{}: bad reset marker `{}`", self.peer, ev.data),
                },
                Some("gap") => t.gaps.push(
                    rtcheck_wire::epoch::parse_gap(&ev.data)
                        .ok_or_else(|| anyhow!("{}: bad gap marker `{}`", self.peer, ev.data))?,
                ),
                _ => {
                    let (seq, _) = payload::decode_text(&ev.data).ok_or_else(|| {
                        anyhow!("{}: event without an integer seq: `{}`", self.peer, ev.data)
                    })?;
                    t.seqs.push(seq);
                    on_msg(seq);
                }
            }
        }
        self.ack(t)
    }

    /// session-ack: POST /ack?session=ID&seq=S every [`ACK_EVERY`].
    fn ack(&mut self, t: &Trace) -> anyhow::Result<()> {
        let Some(s) = self.session.as_mut() else {
            return Ok(());
        };
        let last = t.seqs.last().copied().unwrap_or(0);
        if let (Some(seq), Some(id)) = (s.due(last), s.id.clone()) {
            match request(self.peer, "POST", &format!("/ack?session={id}&seq={seq}")) {
                Ok((code, body)) if code != 200 => {
                    bail!("{}: POST /ack answered {code}: {body:.200}", self.peer)
                }
                Ok(_) => {}
                // The server went away (a restart run stops it mid-ack): acks are
                // cumulative, the next one covers this, and what stays unacked comes back
                // as duplicates, never as loss. The stream itself says if it is gone.
                Err(_) => {}
            }
        }
        Ok(())
    }

    /// Leave the way `kind` says. `Silent` keeps the socket: drop the returned stream
    /// when the client comes back.
    pub fn leave(self, kind: Disconnect) -> Option<TcpStream> {
        leave_stream(self.stream, kind)
    }
}

/// Leave a socket the way `kind` says: FIN, RST (SO_LINGER 0), or (silent) kept open
/// and returned, to be dropped when the client comes back.
pub(super) fn leave_stream(stream: TcpStream, kind: Disconnect) -> Option<TcpStream> {
    leave_socket(&stream, kind).then_some(stream)
}

/// [`leave_stream`] on a socket its owner holds (under TLS, a WebSocket): whether the
/// owner must keep it open (silent) until the client comes back; else dropping it ends
/// it (after the FIN, or as a RST).
pub(super) fn leave_socket(stream: &TcpStream, kind: Disconnect) -> bool {
    match kind {
        Disconnect::Clean | Disconnect::Storm => {
            let _ = stream.shutdown(Shutdown::Both);
            false
        }
        Disconnect::Reset => {
            let _ = socket2::SockRef::from(stream).set_linger(Some(Duration::ZERO));
            false
        }
        Disconnect::Silent => true,
    }
}

/// What counts as a read timeout, written once in rtcheck-wire.
pub(super) use rtcheck_wire::http::client::is_timeout;

/// Largest response head a delivery client reads.
const HEAD_LIMITS: Limits = Limits::head(16 * 1024);

/// Read the HTTP response head of `req` (`GET /sse`: how errors name it) with wire's
/// one read-head loop (5 s; Ctrl-C asked after each read, every TICK on the callers'
/// sockets); return how its body is framed and the bytes after the head.
/// Non-200 names the status.
pub(super) fn read_head(
    stream: &mut impl Read,
    peer: SocketAddr,
    req: &str,
) -> anyhow::Result<(Framing, Vec<u8>)> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let (head, rest) =
        http_client::read_head_or_stop(stream, HEAD_LIMITS, 4096, deadline, &mut interrupted)
            .map_err(|e| match e {
                HeadError::Closed => anyhow!("{peer}: closed before answering {req}"),
                HeadError::Timeout | HeadError::TooLarge(_) => {
                    anyhow!("{peer}: no complete HTTP response head within 5 s")
                }
                HeadError::Bad(e) => anyhow!("{peer}: {req}: {e}"),
                HeadError::Io(e) => anyhow!("{peer}: read: {e}"),
                HeadError::Stopped => anyhow!("{peer}: interrupted before {req} was answered"),
            })?;
    if head.status != 200 {
        let line = format!("HTTP {} {}", head.status, head.reason);
        bail!("{peer}: {req} answered `{}`", line.trim_end());
    }
    let framing = head
        .framing(false)
        .map_err(|e| anyhow!("{peer}: {req}: {e}"))?;
    Ok((framing, rest))
}

/// A WebSocket client (sync tungstenite): `/ws`, or `/ws?since=SEQ` to resume; binary
/// payloads or JSON text with seq; a text frame `{"from","to"}` is a gap marker.
/// tungstenite because rtcheck-wire has a frame codec but no blocking client yet (issue
/// 36 leaves that stack for later); its SSE and HTTP clients are the wire's.
pub struct WsConn {
    ws: tungstenite::WebSocket<TcpStream>,
    peer: SocketAddr,
    last: Option<u64>,
    /// The server's epoch, from its hello or a reset marker (resumes carry it).
    epoch: Option<Epoch>,
    /// session-ack: the session (acked with `{"ack":SEQ}` text frames).
    pub session: Option<SessionState>,
    /// The error close that ended the stream after messages (its phrase): the cause of
    /// what the client then missed.
    pub closed: Option<String>,
    /// This connection received a message (seq or gap marker): a close is then a cause,
    /// not a refusal, whatever an earlier connection of the client received.
    got: bool,
}

use tokio_tungstenite::tungstenite;

impl WsConn {
    pub fn open(
        addr: SocketAddr,
        since: Option<&str>,
        session: Option<&str>,
    ) -> anyhow::Result<WsConn> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .with_context(|| format!("{addr}: connect"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.set_write_timeout(Some(Duration::from_secs(5)))?;
        let url = match (since.map(Position::parse), session) {
            (_, Some(id)) if !id.is_empty() => format!("ws://{addr}/ws?session={id}"),
            (Some(Position { seq, epoch: None }), _) => format!("ws://{addr}/ws?since={seq}"),
            (
                Some(Position {
                    seq,
                    epoch: Some(e),
                }),
                _,
            ) => format!("ws://{addr}/ws?since={seq}&epoch={e}"),
            _ => format!("ws://{addr}/ws"),
        };
        // Acks are its only messages: a few dozen bytes (bounded queue: issue 41 item 7).
        let cfg = crate::bench::ws_client::config(64);
        let (ws, _) = tungstenite::client::client_with_config(url.as_str(), stream, Some(cfg))
            .map_err(|e| anyhow!("{addr}: WebSocket handshake: {e}"))?;
        ws.get_ref().set_read_timeout(Some(TICK))?;
        // A server that never reads must not hold a read (which flushes pongs owed) past a
        // tick: a write that would block leaves the pong queued, bounded by the config.
        ws.get_ref().set_write_timeout(Some(TICK))?;
        Ok(WsConn {
            ws,
            peer: addr,
            last: None,
            epoch: None,
            session: session.map(|_| SessionState::default()),
            closed: None,
            got: false,
        })
    }

    /// `SEQ@EPOCH` once the server said its epoch (rtcheck's), else the bare seq.
    pub fn last_id(&self) -> Option<String> {
        self.last.map(|l| position(l, self.epoch))
    }

    pub fn recv_until(
        &mut self,
        until: Instant,
        t: &mut Trace,
        on_msg: &mut dyn FnMut(u64),
    ) -> anyhow::Result<()> {
        use tungstenite::{Error, Message};
        while Instant::now() < until && !interrupted() {
            let seq = match self.ws.read() {
                Ok(Message::Binary(b)) => payload::decode(&b),
                Ok(Message::Text(txt)) => match payload::decode_text(&txt) {
                    Some(v) => Some(v),
                    None if self.marker(&txt, t) => continue,
                    None if self
                        .session
                        .get_or_insert_with(SessionState::default)
                        .hello(&txt) =>
                    {
                        continue
                    }
                    None => {
                        let g = rtcheck_wire::epoch::parse_gap(&txt).ok_or_else(|| {
                            anyhow!(
                                "{}: text frame is neither payload nor gap: `{txt:.200}`",
                                self.peer
                            )
                        })?;
                        t.gaps.push(g);
                        self.got = true;
                        continue;
                    }
                },
                Ok(Message::Close(c)) => return self.on_close(c.as_ref()),
                Ok(_) => continue,
                Err(Error::Io(e)) if is_timeout(&e) => continue,
                Err(Error::ConnectionClosed | Error::AlreadyClosed) => return Ok(()),
                Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    return Ok(())
                }
                Err(e) => return Err(anyhow!("{}: WebSocket read: {e}", self.peer)),
            };
            let (seq, _) = seq.ok_or_else(|| anyhow!("{}: a payload without a seq", self.peer))?;
            t.seqs.push(seq);
            self.got = true;
            self.last = Some(seq);
            on_msg(seq);
            if let Some(a) = self.session.as_mut().and_then(|s| s.due(seq)) {
                match self.ws.send(Message::text(format!("{{\"ack\":{a}}}"))) {
                    // Queued: it goes with the next read's flush.
                    Err(Error::Io(e)) if is_timeout(&e) => {}
                    Err(Error::WriteBufferFull(_)) => {
                        bail!("{}: the server stopped reading (acks unsent)", self.peer)
                    }
                    r => r.map_err(|e| anyhow!("{}: WebSocket ack: {e}", self.peer))?,
                }
            }
        }
        Ok(())
    }

    /// A close from rtcheck's server, by [`close_outcome`] (it was sent no secret to
    /// echo): the stream ends; an error close after messages is kept as the cause.
    fn on_close(
        &mut self,
        frame: Option<&tungstenite::protocol::CloseFrame>,
    ) -> anyhow::Result<()> {
        if let Some(p) = close_outcome(frame, &[], self.got).cause(&self.peer)? {
            self.closed.get_or_insert(p);
        }
        Ok(())
    }

    /// A hello or a reset marker: note the epoch (and count the reset).
    fn marker(&mut self, txt: &str, t: &mut Trace) -> bool {
        match epoch::parse_marker(txt) {
            Some(Marker::Hello { epoch, .. }) => self.epoch = Some(epoch),
            Some(Marker::Reset { epoch, .. }) => {
                self.epoch = Some(epoch);
                t.resets += 1;
            }
            None => return false,
        }
        true
    }

    pub fn leave(mut self, kind: Disconnect) -> Option<TcpStream> {
        match kind {
            Disconnect::Clean | Disconnect::Storm => {
                let _ = self.ws.close(None);
                let _ = self.ws.flush();
                let _ = self.ws.get_ref().shutdown(Shutdown::Both);
                None
            }
            Disconnect::Reset => {
                let _ = socket2::SockRef::from(self.ws.get_ref()).set_linger(Some(Duration::ZERO));
                None
            }
            Disconnect::Silent => self.ws.get_ref().try_clone().ok(),
        }
    }
}

/// One `GET path` (5 s bound): (status, body).
pub fn get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    request(addr, "GET", path)
}

/// One request without a body (5 s bound): (status, body), read as soon as it is whole.
pub fn request(addr: SocketAddr, method: &str, path: &str) -> anyhow::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .with_context(|| format!("{addr}: connect"))?;
    s.set_read_timeout(Some(TICK))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    let host = addr.to_string();
    let headers = [("Host", host.as_str()), ("Connection", "close")];
    s.write_all(&http_client::head(method, path, &headers))?;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut answer = response::Answer::new(Limits::DEFAULT, method == "HEAD");
    let mut buf = [0u8; 16 * 1024];
    let broken = |e: response::Error| anyhow!("{addr}: {method} {path}: {e}");
    loop {
        if answer.complete() {
            let status = answer.head().map_or(0, |h| h.status);
            return Ok((status, String::from_utf8_lossy(answer.body()).into_owned()));
        }
        if answer.body().len() > 64 << 20 || Instant::now() > deadline || interrupted() {
            bail!("{addr}: {method} {path}: no complete response within 5 s");
        }
        match s.read(&mut buf) {
            Ok(0) if answer.head().is_some() => answer.eof().map_err(broken)?,
            Ok(0) => bail!("{addr}: {method} {path}: closed before a complete response"),
            Ok(n) => {
                answer.feed(&buf[..n]).map_err(broken)?;
            }
            Err(e) if is_timeout(&e) => {}
            Err(e) => bail!("{addr}: {method} {path}: {e}"),
        }
    }
}

/// One session's bytes on rtcheck's server (`GET /session?id=`); None elsewhere.
pub fn session_bytes(addr: SocketAddr, id: &str) -> Option<u64> {
    let (code, body) = get(addr, &format!("/session?id={id}")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&body).ok().filter(|_| code == 200)?;
    v.get("bytes")?.as_u64()
}

/// The server's latest published seq from `/poll` (rtcheck's format), to tell replayed
/// messages from live ones; None for a server without it.
pub fn latest_seq(addr: SocketAddr) -> Option<u64> {
    let (code, body) = get(addr, &format!("/poll?since={}", u64::MAX)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&body).ok().filter(|_| code == 200)?;
    v.get("latest")?.as_u64()
}

/// A polling client: `GET /poll?since=S`; "leaving" is not polling.
pub struct PollConn {
    addr: SocketAddr,
    since: u64,
    /// The epoch of `since` (from the server's answers).
    epoch: Option<Epoch>,
    every: Duration,
    /// session-ack: `/poll?session=ID&since=S` (since acks).
    pub session: Option<SessionState>,
    presented: Option<String>,
}

impl PollConn {
    /// Start after `since` (the last seq it has; for a fresh client, the server's latest).
    pub fn new(addr: SocketAddr, since: u64, rate: f64) -> PollConn {
        // Twice per message, between 10 ms and 500 ms: the gap is the server's ring, not us.
        let every = Duration::from_secs_f64((0.5 / rate.max(1e-3)).clamp(0.01, 0.5));
        PollConn {
            addr,
            since,
            epoch: None,
            every,
            session: None,
            presented: None,
        }
    }

    /// A session-ack poller presenting `session` ("" for a new one).
    pub fn with_session(mut self, session: &str) -> PollConn {
        self.session = Some(SessionState::default());
        self.presented = Some(session.to_string());
        self
    }

    /// Resume after `since` of `epoch` (None: a bare seq, as an old client would).
    pub fn in_epoch(mut self, epoch: Option<Epoch>) -> PollConn {
        self.epoch = epoch;
        self
    }

    /// Where it is: `SEQ@EPOCH` once the server said its epoch.
    pub fn position(&self) -> String {
        position(self.since, self.epoch)
    }

    pub fn recv_until(
        &mut self,
        until: Instant,
        t: &mut Trace,
        on_msg: &mut dyn FnMut(u64),
    ) -> anyhow::Result<()> {
        while Instant::now() < until && !interrupted() {
            let path = match (&self.presented, &self.session) {
                (Some(p), Some(s)) => {
                    let id = s.id.as_deref().unwrap_or(p);
                    format!("/poll?session={id}&since={}", self.since)
                }
                _ => format!("/poll?since={}", self.since),
            };
            let path = match self.epoch {
                Some(e) => format!("{path}&epoch={e}"),
                None => path,
            };
            let (code, body) = get(self.addr, &path)?;
            if code != 200 {
                bail!("{}: /poll answered {code}", self.addr);
            }
            let p = parse_poll(&body)
                .ok_or_else(|| anyhow!("{}: /poll: not the poll format: {body:.200}", self.addr))?;
            if let Some(s) = self.session.as_mut() {
                if !s.hello(&body) {
                    bail!("{}: /poll with a session answered no session", self.addr);
                }
            }
            if p.reset {
                // Another epoch (the server restarted) or beyond what it holds: the
                // answer is the ring from its start, in the server's epoch.
                t.resets += 1;
                self.since = 0;
            }
            self.epoch = p.epoch.or(self.epoch);
            if let Some(g) = poll_gap(self.since, &p) {
                t.gaps.push(g);
            }
            for &seq in &p.seqs {
                t.seqs.push(seq);
                on_msg(seq);
                self.since = self.since.max(seq);
            }
            std::thread::sleep(
                self.every
                    .min(until.saturating_duration_since(Instant::now())),
            );
        }
        Ok(())
    }
}

/// One `/poll` answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Poll {
    pub gap: bool,
    /// The position asked was from another epoch or beyond the server's (rtcheck's).
    pub reset: bool,
    pub epoch: Option<Epoch>,
    pub oldest: Option<u64>,
    pub seqs: Vec<u64>,
}

pub fn parse_poll(body: &str) -> Option<Poll> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let seqs = v
        .get("messages")?
        .as_array()?
        .iter()
        .map(|m| m.get("seq")?.as_u64())
        .collect::<Option<Vec<u64>>>()?;
    Some(Poll {
        gap: v.get("gap").and_then(|g| g.as_bool()).unwrap_or(false),
        reset: v.get("reset").and_then(|g| g.as_bool()).unwrap_or(false),
        epoch: v.get("epoch").and_then(|e| e.as_str()).map(Epoch::parse),
        oldest: v.get("oldest").and_then(|o| o.as_u64()),
        seqs,
    })
}

/// A resume id: `SEQ@EPOCH`, or the bare seq while the epoch is unknown.
fn position(seq: u64, epoch: Option<Epoch>) -> String {
    match epoch {
        Some(e) => format!("{seq}@{e}"),
        None => seq.to_string(),
    }
}

/// What a WebSocket close means for a delivery client: one rule for rtcheck's server and
/// a foreign one.
#[derive(Debug, PartialEq)]
pub(super) enum CloseOutcome {
    /// Planned (1000, 1001, 1012: a restart) or without a code: the stream ends. The
    /// client does not reconnect within the phase: ended before the phase's end, what
    /// was published after it counts as its loss (run.rs, `owed_up_to`).
    End,
    /// An error close before any message (seq or gap marker): the server refused the
    /// client. The run stops naming it, not with a later "no message".
    Refusal(String),
    /// An error close after messages: the stream ends and the close is the client's
    /// cause; what it then misses is counted as loss by seq.
    Cause(String),
}

/// Pure: the [`CloseOutcome`] of `frame` on a connection that `received` a message (seq
/// or gap marker) or not; the phrase names code, meaning and the server's reason with
/// `secrets` masked (a reason that echoes a rejected token). Only this connection's
/// messages count: a resume refused before any message is a refusal, whatever the
/// client's earlier connection received.
pub(super) fn close_outcome(
    frame: Option<&tungstenite::protocol::CloseFrame>,
    secrets: &[String],
    received: bool,
) -> CloseOutcome {
    use crate::bench::ws_client::{close_phrase, is_error_close};
    if !is_error_close(frame) {
        return CloseOutcome::End;
    }
    let phrase = close_phrase(frame, secrets);
    match received {
        false => CloseOutcome::Refusal(phrase),
        true => CloseOutcome::Cause(phrase),
    }
}

impl CloseOutcome {
    /// As the client takes it (both clients, one wording): an end is nothing, a cause is
    /// returned to keep, a refusal stops the run naming `peer` and the close.
    pub(super) fn cause(self, peer: &dyn std::fmt::Display) -> anyhow::Result<Option<String>> {
        match self {
            CloseOutcome::End => Ok(None),
            CloseOutcome::Refusal(p) => bail!("{peer}: the server closed the WebSocket: {p}"),
            CloseOutcome::Cause(p) => Ok(Some(p)),
        }
    }
}

/// The range a poll answer says is gone: `since + 1 ..= oldest - 1` when `gap`.
pub fn poll_gap(since: u64, p: &Poll) -> Option<(u64, u64)> {
    let oldest = p.oldest.filter(|_| p.gap)?;
    (oldest > since.saturating_add(1)).then(|| (since + 1, oldest - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_close_rule_end_refusal_or_cause() {
        use tungstenite::protocol::{frame::coding::CloseCode, CloseFrame};
        let f = |code: u16, reason: &str| CloseFrame {
            code: CloseCode::from(code),
            reason: reason.into(),
        };
        for code in [1000, 1001, 1012] {
            for got in [true, false] {
                assert_eq!(
                    close_outcome(Some(&f(code, "")), &[], got),
                    CloseOutcome::End
                );
            }
        }
        assert_eq!(close_outcome(None, &[], false), CloseOutcome::End);
        let phrase = "close 1011 (internal error), reason \"ring broke\"";
        let broke = f(1011, "ring broke");
        assert_eq!(
            close_outcome(Some(&broke), &[], false),
            CloseOutcome::Refusal(phrase.into())
        );
        assert_eq!(
            close_outcome(Some(&broke), &[], true),
            CloseOutcome::Cause(phrase.into())
        );
        let CloseOutcome::Refusal(p) = close_outcome(Some(&f(1008, "")), &[], false) else {
            panic!("1008 before any message is a refusal")
        };
        assert!(p.contains("close 1008 (policy violation)"), "{p}");
        let e = CloseOutcome::Refusal(p).cause(&"127.0.0.1:9").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("127.0.0.1:9: the server closed the WebSocket: close 1008"),
            "{e}"
        );
        let kept = CloseOutcome::Cause(phrase.into()).cause(&"x").unwrap();
        assert_eq!(kept.as_deref(), Some(phrase));
        assert_eq!(CloseOutcome::End.cause(&"x").unwrap(), None);
        // A reason echoing a secret is masked.
        let leak = f(4401, "bad token s3cr3t-tok");
        let CloseOutcome::Cause(p) = close_outcome(Some(&leak), &["s3cr3t-tok".into()], true)
        else {
            panic!("an error close after messages is the cause")
        };
        assert!(!p.contains("s3cr3t-tok") && p.contains("4401"), "{p}");
    }

    /// rtcheck's server: an error close after a message on this connection (a gap marker
    /// is one) ends the stream and is kept as the cause; before any message on it the run
    /// stops naming the close, even when the client's earlier connection received
    /// messages (a resume refused is a refusal, not a cause).
    #[test]
    fn own_server_close_is_kept_or_refused() {
        use std::net::TcpListener;
        use tungstenite::protocol::{frame::coding::CloseCode, CloseFrame};
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for i in 0..2 {
                let (s, _) = l.accept().unwrap();
                let mut ws = tungstenite::accept(s).unwrap();
                if i == 0 {
                    let _ = ws.send(tungstenite::Message::text(r#"{"from":2,"to":3}"#));
                }
                let close = CloseFrame {
                    code: CloseCode::from(1011),
                    reason: "ring broke".into(),
                };
                let _ = ws.close(Some(close));
                let _ = ws.flush();
                let _ = ws.read();
            }
        });
        let until = Instant::now() + Duration::from_secs(30);
        // Phase one's messages, before either connection.
        let mut t = Trace {
            seqs: vec![1],
            ..Trace::default()
        };
        let mut c = WsConn::open(addr, None, None).unwrap();
        c.recv_until(until, &mut t, &mut |_| {}).unwrap();
        assert_eq!(t.gaps, [(2, 3)]);
        let closed = c.closed.clone().expect("the close kept as the cause");
        assert!(closed.contains("close 1011 (internal error)"), "{closed}");
        // The server waits for this client to go before it takes the next one.
        drop(c);
        let mut c = WsConn::open(addr, Some("3"), None).unwrap();
        let e = c.recv_until(until, &mut t, &mut |_| {}).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("the server closed the WebSocket: close 1011"),
            "{e}"
        );
        drop(c);
        server.join().unwrap();
    }

    #[test]
    fn gap_markers_parse_or_are_refused() {
        assert_eq!(
            Disconnect::ALL.map(|d| d.name()),
            ["clean", "reset", "silent", "storm"]
        );
    }
}
