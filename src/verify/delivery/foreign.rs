//! `verify delivery --server URL --publish ws|'POST URL'` (issue 26): the delivery runs
//! against a server rtcheck did not write, through the way it already publishes. rtcheck
//! is the publisher (bench's, `crate::bench::publisher`: each message stamped with its
//! seq and scheduled time by the `--message` template), so it knows every seq the server
//! was given; its clients read them back with bench's decoder (`--seq-path`/`--ts-path`
//! or the `{marker}`), leave the four ways, come back with the user's resume mechanism
//! (`--resume`), and count. A server that says nothing about what a client missed has
//! lost it silently, and that is what is counted: rtcheck recognises only its own gap
//! marker (`event: gap` / a `{"from","to"}` text frame) as telling.
use super::client::{self, Disconnect};
use super::run::{ClientResult, Phases, RunSpec, FOREIGN_CONTROL, FOREIGN_RUN};
use crate::bench::publisher::{Endpoint, PublishVia};
use crate::bench::seq_account::{self, Trace};
use crate::bench::template::{Decoder, Template};
use crate::sys::tls::SyncStream;
use anyhow::{anyhow, bail, Context};
use rtcheck_base::os::signal::interrupted;
use rtcheck_wire::sse;
use serde::Serialize;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Barrier;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite;

/// How a client comes back (`--resume`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// Reconnect as if new (a server without resume, or a client that ignores it).
    None,
    /// SSE: `Last-Event-ID:` the last `id:` seen, as EventSource does.
    LastEventId,
    /// A query added to the URL, `{seq}` the last seq received (`since={seq}`).
    Query(String),
    /// WebSocket: a text message sent after connecting (after `--subscribe`), `{seq}`
    /// the last seq received.
    Message(String),
}

impl Resume {
    /// `none`, `last-event-id`, `query since={seq}`, `message {"since":{seq}}`.
    pub fn parse(s: &str) -> Result<Resume, String> {
        let t = s.trim();
        let with_seq = |kind: &str, v: &str| {
            if v.contains("{seq}") {
                Ok(v.to_string())
            } else {
                Err(format!(
                    "--resume {kind}: the template needs {{seq}} (the last seq received)"
                ))
            }
        };
        match t {
            "none" => return Ok(Resume::None),
            "last-event-id" => return Ok(Resume::LastEventId),
            _ => {}
        }
        if let Some(q) = t.strip_prefix("query ") {
            let q = q.trim().trim_start_matches(['?', '&']);
            return with_seq("query", q).map(Resume::Query);
        }
        if let Some(m) = t.strip_prefix("message ") {
            return with_seq("message", m.trim()).map(Resume::Message);
        }
        Err(format!(
            "--resume `{}`: expected none, last-event-id, 'query since={{seq}}' or 'message TEMPLATE'",
            t.chars().take(60).collect::<String>()
        ))
    }

    /// The run's case name (in the finding id): what the client came back with.
    pub fn name(&self) -> &'static str {
        match self {
            Resume::None => "none",
            Resume::LastEventId => "last-event-id",
            Resume::Query(_) => "since-query",
            Resume::Message(_) => "resume-message",
        }
    }
}

/// The foreign server and how rtcheck publishes to it and reads it back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ForeignTarget {
    /// The clients' URL, redacted (what reports show).
    pub url: String,
    /// `ws` or `POST URL` (redacted).
    pub publish: String,
    pub resume: String,
    pub message: String,
    /// Not serialized: a join message may carry the app's token.
    #[serde(skip)]
    pub subscribe: Option<String>,
    pub seq_path: Option<String>,
    pub ts_path: Option<String>,
    #[serde(skip)]
    pub raw_url: String,
    #[serde(skip)]
    pub via: PublishVia,
    /// Never serialized: a header's value is a secret.
    #[serde(skip)]
    pub headers: Vec<(String, String)>,
    #[serde(skip)]
    pub resume_as: Resume,
    #[serde(skip)]
    pub decoder: Decoder,
    #[serde(skip)]
    pub ws: bool,
    /// The clients' URL resolved: where every socket goes (its loopback host, or
    /// `--connect-to`), the Host header (the URL's, whatever `--connect-to` says), path
    /// and query, and on wss:// and https:// the TLS setup, once for every client (and a
    /// ws publisher).
    #[serde(skip)]
    pub server: Endpoint,
    /// `--publish 'POST URL'`: the POST's, resolved the same way.
    #[serde(skip)]
    pub post: Option<Endpoint>,
    /// `--pid`: the server's processes (empty: found by the listening port).
    #[serde(skip)]
    pub pids: Vec<u32>,
    /// The library protocol the clients and a ws publisher speak, and why (absent: raw).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<crate::bench::appws::Spoken>,
    #[serde(skip)]
    pub app: Option<(
        rtcheck_wire::appproto::AppProtocol,
        rtcheck_wire::appproto::Subscribe,
    )>,
}

/// The foreign runs: every disconnect kind with the resume mechanism, plus the control.
pub fn specs(t: &ForeignTarget, clients: usize, away: Duration) -> Vec<RunSpec> {
    let case = t.resume_as.name();
    let mut v: Vec<RunSpec> = Disconnect::ALL
        .iter()
        .map(|&d| RunSpec {
            delivery: FOREIGN_RUN,
            disconnect: d,
            case,
            clients,
            away,
        })
        .collect();
    if t.resume_as != Resume::None {
        v.push(RunSpec {
            delivery: FOREIGN_CONTROL,
            disconnect: Disconnect::Clean,
            case: "none",
            clients,
            away,
        });
    }
    v
}

/// Bytes of one SSE line we accept from a foreign server.
const MAX_LINE: usize = 1 << 20;
const TICK: Duration = Duration::from_millis(50);

/// One open connection to the foreign server.
enum Link {
    Sse {
        stream: SyncStream,
        events: Box<sse::Stream>,
        pending: Vec<u8>,
    },
    /// With the library protocol's session when one is spoken.
    Ws(
        Box<tungstenite::WebSocket<SyncStream>>,
        Option<Box<crate::bench::appws::Session>>,
    ),
}

/// Where a client resumes from: the last seq it decoded, the last SSE `id:` it saw.
#[derive(Debug, Clone, Default)]
struct Position {
    seq: Option<u64>,
    sse_id: Option<String>,
    /// The error close that ended a stream after messages had arrived (the client's
    /// cause, named in the run's report), as one phrase.
    closed: Option<String>,
    /// Seqs and gap markers the client had when its current connection opened: a
    /// close is a cause only after a message on this connection.
    at_open: usize,
}

impl Link {
    fn open(t: &ForeignTarget, from: Option<&Position>) -> anyhow::Result<Link> {
        let (peer, tls) = (t.server.target.addr, t.server.tls.as_ref());
        let authority = &t.server.target.authority;
        let mut path = t.server.target.path.clone();
        let seq = from.and_then(|p| p.seq);
        if let (Resume::Query(q), Some(s)) = (&t.resume_as, seq) {
            let sep = if path.contains('?') { '&' } else { '?' };
            path = format!("{path}{sep}{}", Template::parse(q).render(s, 0, 0));
        }
        let tcp = TcpStream::connect_timeout(&peer, Duration::from_secs(5))
            .with_context(|| format!("{}: connect", t.url))?;
        tcp.set_nodelay(true)?;
        tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
        tcp.set_write_timeout(Some(Duration::from_secs(5)))?;
        let limit = Duration::from_secs(5);
        let mut stream = SyncStream::over(tcp, tls, limit).map_err(|e| {
            let why = tls.map_or(e.to_string(), |tls| tls.explain(&e, peer, limit));
            anyhow!("{}: TLS handshake with {peer}: {why}", t.url)
        })?;
        if t.ws {
            // The URL's own host in the handshake (Host:), wherever the socket went.
            let scheme = if tls.is_some() { "wss" } else { "ws" };
            let url = format!("{scheme}://{authority}{path}");
            // Its own messages: the subscribe and resume templates (bounded queue: issue
            // 41 item 7).
            let largest = [t.subscribe.as_ref().map_or(0, String::len), 4096];
            let cfg = crate::bench::ws_client::config(largest.iter().sum());
            let (mut ws, _) =
                tungstenite::client::client_with_config(url.as_str(), stream, Some(cfg))
                    .map_err(|e| anyhow!("{}: WebSocket handshake: {e}", t.url))?;
            ws.get_ref().tcp().set_read_timeout(Some(TICK))?;
            let app = match &t.app {
                Some((p, sub)) => {
                    let mut s = crate::bench::appws::Session::new(*p, &t.raw_url, sub.clone());
                    app_setup(&mut ws, &mut s).map_err(|e| anyhow!("{}: {e}", t.url))?;
                    Some(Box::new(s))
                }
                None => None,
            };
            let mut say = |m: String| {
                ws.send(tungstenite::Message::text(m))
                    .map_err(|e| anyhow!("{}: WebSocket send: {e}", t.url))
            };
            if let Some(sub) = &t.subscribe {
                say(sub.clone())?;
            }
            if let (Resume::Message(m), Some(s)) = (&t.resume_as, seq) {
                say(Template::parse(m).render(s, 0, 0))?;
            }
            // From here it only reads: a pong that would block waits for the next read
            // (queued, bounded), so a server that never reads cannot hold a read past a tick.
            ws.get_ref().tcp().set_write_timeout(Some(TICK))?;
            return Ok(Link::Ws(Box::new(ws), app));
        }
        stream.tcp().set_read_timeout(Some(TICK))?;
        let mut headers = vec![
            ("Host", authority.as_str()),
            ("Accept", "text/event-stream"),
        ];
        if let (Resume::LastEventId, Some(id)) =
            (&t.resume_as, from.and_then(|p| p.sse_id.as_ref()))
        {
            headers.push(("Last-Event-ID", id.as_str()));
        }
        let req = rtcheck_wire::http::client::head("GET", &path, &headers);
        // rustls' write only tries to send (its errors wait for the next call): flush.
        stream.write_all(&req)?;
        stream.flush()?;
        let shown = format!("GET {}", rtcheck_base::redact::path_and_query(&path));
        let (framing, pending) = client::read_head(&mut stream, peer, &shown)?;
        Ok(Link::Sse {
            stream,
            events: Box::new(sse::Stream::new(framing, sse::Parser::new(MAX_LINE))),
            pending,
        })
    }

    /// Read until `until` or the server closes, decoding seqs (and rtcheck's gap
    /// markers) into `tr`; `on_msg` sees (seq, scheduled ns) as each arrives. Frames that
    /// carry no seq (a hub's join notices, heartbeats) are not messages of the run.
    fn recv_until(
        &mut self,
        t: &ForeignTarget,
        until: Instant,
        tr: &mut Trace,
        pos: &mut Position,
        on_msg: &mut dyn FnMut(u64, u64),
    ) -> anyhow::Result<()> {
        let mut got = |seq: u64, ts: u64, tr: &mut Trace, pos: &mut Position| {
            tr.seqs.push(seq);
            pos.seq = Some(pos.seq.map_or(seq, |s| s.max(seq)));
            on_msg(seq, ts);
        };
        match self {
            Link::Sse {
                stream,
                events,
                pending,
            } => {
                let mut bytes = std::mem::take(pending);
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let mut evs = Vec::new();
                    events
                        .feed(&bytes, &mut evs)
                        .map_err(|e| anyhow!("{}: {e}", t.url))?;
                    pos.sse_id = events.last_id().map(String::from).or(pos.sse_id.take());
                    flooded(t, tr)?;
                    for ev in evs {
                        if ev.event.as_deref() == Some("gap") {
                            if let Some(g) = rtcheck_wire::epoch::parse_gap(&ev.data) {
                                tr.gaps.push(g);
                                continue;
                            }
                        }
                        if let Some((s, ts)) =
                            t.decoder.decode(ev.data.as_bytes(), ev.id.as_deref())
                        {
                            got(s, ts, tr, pos);
                        }
                    }
                    if Instant::now() >= until || interrupted() {
                        return Ok(());
                    }
                    bytes = match stream.read(&mut buf) {
                        Ok(0) => return Ok(()),
                        Ok(n) => buf[..n].to_vec(),
                        Err(e) if client::is_timeout(&e) => Vec::new(),
                        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(()),
                        Err(e) => bail!("{}: read: {e}", t.url),
                    };
                }
            }
            Link::Ws(ws, Some(app)) => {
                while Instant::now() < until && !interrupted() {
                    flooded(t, tr)?;
                    let Some(payloads) = app_read(ws, app, t, tr, pos)? else {
                        return Ok(());
                    };
                    for p in payloads {
                        if let Some((s, ts)) = t.decoder.decode(&p, None) {
                            got(s, ts, tr, pos);
                        }
                    }
                }
                Ok(())
            }
            Link::Ws(ws, None) => {
                use tungstenite::{Error, Message};
                while Instant::now() < until && !interrupted() {
                    flooded(t, tr)?;
                    let v = match ws.read() {
                        Ok(Message::Text(txt)) => match t.decoder.decode(txt.as_bytes(), None) {
                            Some(v) => Some(v),
                            None => {
                                if let Some(g) = rtcheck_wire::epoch::parse_gap(&txt) {
                                    tr.gaps.push(g);
                                }
                                None
                            }
                        },
                        Ok(Message::Binary(b)) => t.decoder.decode_binary(&b),
                        Ok(Message::Close(c)) => return refused(t, c.as_ref(), tr, pos),
                        Ok(_) => None,
                        Err(Error::Io(e)) if client::is_timeout(&e) => None,
                        Err(Error::ConnectionClosed | Error::AlreadyClosed) => return Ok(()),
                        Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                            return Ok(())
                        }
                        Err(e) => bail!("{}: WebSocket read: {e}", t.url),
                    };
                    if let Some((s, ts)) = v {
                        got(s, ts, tr, pos);
                    }
                }
                Ok(())
            }
        }
    }

    /// Leave the way `kind` says (a silent client is returned, held open). Over TLS too:
    /// a clean leave says close_notify (and the WebSocket close) before the FIN; a reset
    /// is SO_LINGER 0 on the TCP socket under TLS; a silent one sends nothing. All on the
    /// socket in place: no second descriptor (`try_clone`) to fail in a storm.
    fn leave(mut self, kind: Disconnect) -> Option<Link> {
        if matches!(kind, Disconnect::Clean | Disconnect::Storm) {
            match &mut self {
                Link::Sse { stream, .. } => stream.close_notify(),
                Link::Ws(ws, _) => {
                    let _ = ws.close(None);
                    let _ = ws.flush();
                    ws.get_mut().close_notify();
                }
            }
        }
        let tcp = match &self {
            Link::Sse { stream, .. } => stream.tcp(),
            Link::Ws(ws, _) => ws.get_ref().tcp(),
        };
        client::leave_socket(tcp, kind).then_some(self)
    }
}

/// The library protocol's session set up on a fresh WebSocket (its first messages, the
/// server's answers read and replied to until connected and subscribed), within 10 s.
fn app_setup(
    ws: &mut tungstenite::WebSocket<SyncStream>,
    s: &mut crate::bench::appws::Session,
) -> anyhow::Result<()> {
    use tungstenite::{Error, Message};
    let name = s.protocol().name();
    let (first, ready) = s.start();
    for m in first {
        ws.send(m)
            .map_err(|e| anyhow!("{name} session setup: send: {e}"))?;
    }
    let until = Instant::now() + Duration::from_secs(10);
    let mut ready = ready;
    while !ready {
        if Instant::now() >= until || interrupted() {
            bail!("{name} session setup: not connected within 10 s");
        }
        let m = match ws.read() {
            Ok(Message::Close(c)) => {
                let code = c.map_or(1005, |c| u16::from(c.code));
                bail!("{name} session setup: closed with code {code}")
            }
            Ok(m) => m,
            Err(Error::Io(e)) if client::is_timeout(&e) => continue,
            Err(e) => bail!("{name} session setup: {e}"),
        };
        let h = s.on_message(&m);
        for r in h.replies {
            ws.send(r)
                .map_err(|e| anyhow!("{name} session setup: send: {e}"))?;
        }
        if let Some(why) = h.closed {
            bail!("{name} session setup: {why}");
        }
        ready = h.ready;
    }
    Ok(())
}

/// One read of a library protocol's WebSocket (a tick at most): the payloads it
/// unwrapped, its heartbeat answered and the client's own sent when due; None when the
/// server closed (at the WebSocket or the protocol level).
fn app_read(
    ws: &mut tungstenite::WebSocket<SyncStream>,
    s: &mut crate::bench::appws::Session,
    t: &ForeignTarget,
    tr: &Trace,
    pos: &mut Position,
) -> anyhow::Result<Option<Vec<Vec<u8>>>> {
    use tungstenite::{Error, Message};
    let h = match ws.read() {
        Ok(Message::Close(c)) => return refused(t, c.as_ref(), tr, pos).map(|_| None),
        Ok(m) => s.on_message(&m),
        Err(Error::Io(e)) if client::is_timeout(&e) => Default::default(),
        Err(Error::ConnectionClosed | Error::AlreadyClosed) => return Ok(None),
        Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(None),
        Err(e) => bail!("{}: WebSocket read: {e}", t.url),
    };
    // A reply that would block stays queued (bounded) and goes with the next write.
    for r in h.replies.into_iter().chain(s.due()) {
        match ws.send(r) {
            Ok(()) => {}
            Err(Error::Io(e)) if client::is_timeout(&e) => {}
            Err(Error::ConnectionClosed | Error::AlreadyClosed) => return Ok(None),
            Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Ok(None)
            }
            Err(e) => bail!("{}: WebSocket send: {e}", t.url),
        }
    }
    if h.closed.is_some() {
        return Ok(None);
    }
    Ok(Some(h.payloads))
}

/// A close the server sent, by the one rule both clients follow
/// ([`client::close_outcome`]): a planned close ends the stream; an error close before
/// any message on this connection is a refusal naming it; after one it ends the stream
/// too, recorded in `pos` as the client's cause, and what the client then misses is
/// counted as loss. A reset ends the stream without a close to name.
fn refused(
    t: &ForeignTarget,
    frame: Option<&tungstenite::protocol::CloseFrame>,
    tr: &Trace,
    pos: &mut Position,
) -> anyhow::Result<()> {
    let received = tr.seqs.len() + tr.gaps.len() > pos.at_open;
    if let Some(p) = client::close_outcome(frame, &t.secrets(), received).cause(&t.url)? {
        pos.closed.get_or_insert(p);
    }
    Ok(())
}

impl ForeignTarget {
    /// The run's secrets (the clients' URL's password, path parameters and secret query
    /// values, every header value): masked wherever the server's words are shown (a
    /// close reason that echoes a rejected token).
    pub fn secrets(&self) -> Vec<String> {
        let mut args = vec![self.raw_url.clone()];
        for (n, v) in &self.headers {
            args.push("--header".into());
            args.push(format!("{n}: {v}"));
        }
        rtcheck_base::redact::secrets_in_args(&args)
    }
}

/// Seqs and gap markers one client keeps at most: far above any run's rate x duration. A
/// server sending more is flooding the client; the run stops saying so, not growing.
const MAX_KEPT: usize = 2_000_000;

fn flooded(t: &ForeignTarget, tr: &Trace) -> anyhow::Result<()> {
    if tr.seqs.len() + tr.gaps.len() > MAX_KEPT {
        bail!(
            "{}: more than {} messages and gap markers to one client: a flood, not what was published",
            t.url,
            rtcheck_base::units::fmt_thousands(MAX_KEPT as u64)
        );
    }
    Ok(())
}

/// One client's life against the foreign server. The storm barrier is met on every
/// path, so one failing client never strands the others.
pub fn client(
    t: &ForeignTarget,
    spec: &RunSpec,
    ph: Phases,
    storm: &Barrier,
    sent: &std::sync::atomic::AtomicU64,
) -> anyhow::Result<ClientResult> {
    let storm = (spec.disconnect == Disconnect::Storm).then_some(storm);
    let mut tr = Trace::default();
    let mut pos = Position::default();
    let first = Link::open(t, None).and_then(|mut c| {
        c.recv_until(
            t,
            Instant::now() + ph.before,
            &mut tr,
            &mut pos,
            &mut |_, _| {},
        )?;
        Ok(c)
    });
    if let Some(b) = storm {
        b.wait();
    }
    let (link, err) = match first {
        Ok(c) => (Some(c), None),
        Err(e) => (None, Some(e)),
    };
    let held = link.and_then(|c| c.leave(spec.disconnect));
    let slept = super::run::sleep_checked(spec.away);
    drop(held);
    if let Some(b) = storm {
        b.wait();
    }
    if let Some(e) = err {
        return Err(e);
    }
    slept?;
    let Some(&first) = tr.seqs.first() else {
        bail!(
            "{}: no message with a seq within {:?} of connecting (check --message and --seq-path/--ts-path)",
            t.url,
            ph.before
        );
    };
    tr.first_expected = first;
    let from = (spec.delivery == FOREIGN_RUN).then_some(&pos).cloned();
    let t0 = Instant::now();
    let t0_ns = rtcheck_base::os::clock::now_ns();
    let mut resume_ms = None;
    pos.at_open = tr.seqs.len() + tr.gaps.len();
    let mut c = Link::open(t, from.as_ref())?;
    let until = Instant::now() + ph.after;
    c.recv_until(t, until, &mut tr, &mut pos, &mut |_, ts| {
        // The first message scheduled after the reconnect: live again.
        if resume_ms.is_none() && ts >= t0_ns {
            resume_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        }
    })?;
    drop(c);
    let ended_early = super::run::ended_before(until);
    // The publisher's rounds sent by the phase's end: what this client was owed.
    let published = match ended_early {
        true => super::run::sleep_checked(until.saturating_duration_since(Instant::now()))
            .map(|_| Some(sent.load(std::sync::atomic::Ordering::SeqCst)))?,
        false => None,
    };
    tr.last_published = super::run::owed_up_to(&tr, published);
    Ok(ClientResult {
        trace: tr,
        resume_ms,
        closed: pos.closed,
        ended_early,
        ..ClientResult::default()
    })
}

/// What the foreign runs put on the server (from the delivery options).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    pub clients: usize,
    /// How long a client stays away before it reconnects.
    pub away: Duration,
    /// Messages per second, of `size` bytes.
    pub rate: f64,
    pub size: usize,
}

/// With `--allow-remote`, what the foreign runs will send, said before anything is
/// (issue 37): the target (redacted) and its address, connections, rate, the bound on
/// their length and the bytes planned (the publisher's schedule, each client receiving it).
pub fn remote_plan(t: &ForeignTarget, o: Load) -> String {
    use rtcheck_base::units::{fmt_bytes, fmt_thousands};
    let ph = Phases::for_rate(o.rate);
    let runs = specs(t, o.clients, o.away).len() as u64;
    let life = ph.before + o.away + ph.after + Duration::from_secs(60);
    let rounds = (life.as_secs_f64() * o.rate).ceil() as u64;
    let clients = runs * o.clients as u64;
    let published = rounds * o.size as u64;
    format!(
        "remote target {} ({}): {} connections ({runs} runs x {}), {} msg/s, at most {} s; \
         planned {} ({} x {rounds} x {} B received, {} published); Ctrl-C stops every \
         connection",
        t.url,
        t.server.target.addr,
        fmt_thousands(clients),
        o.clients,
        o.rate,
        life.as_secs(),
        fmt_bytes(published * (clients + 1)),
        fmt_thousands(clients),
        fmt_thousands(o.size as u64),
        fmt_bytes(published),
    )
}

/// Every foreign run at once, with rtcheck's publisher (bench's, on a tokio runtime of
/// its own) publishing on schedule for as long as they last. A publish that failed
/// makes every run invalid: its seq would count as the server's loss.
pub fn measure(
    t: &ForeignTarget,
    o: Load,
) -> anyhow::Result<(Vec<super::run::Run>, crate::bench::wire::PublisherStat)> {
    use crate::bench::publisher;
    let ph = Phases {
        ws: t.ws,
        ..Phases::for_rate(o.rate)
    };
    let specs = specs(t, o.clients, o.away);
    // A certificate not trusted (the server's, or an https:// POST target's) is one line
    // now, not every client's and the publisher's failure later.
    let limit = Duration::from_secs(5);
    t.server
        .check_tls(limit)
        .map_err(|e| anyhow!("--server {}: {e}", t.url))?;
    if let Some(p) = &t.post {
        p.check_tls(limit)
            .map_err(|e| anyhow!("--publish {}: {e}", t.publish))?;
    }
    // Rounds for the longest client life with a minute to spare; the stop ends it.
    let life = ph.before + o.away + ph.after + Duration::from_secs(60);
    let plan = publisher::Plan {
        via: t.via.clone(),
        ws_url: t.raw_url.clone(),
        ws: t.server.clone(),
        post: t.post.clone(),
        message: Template::parse(&t.message),
        subscribe: t.subscribe.clone(),
        app: t.app.clone(),
        headers: t.headers.clone(),
        rounds: (life.as_secs_f64() * o.rate).ceil() as u64,
        rate: o.rate,
        size: o.size,
        redial: false,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let ready = rt
        .block_on(publisher::connect(&plan))
        .map_err(anyhow::Error::msg)?;
    let (stop, stopped) = tokio::sync::watch::channel(0u8);
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let publishing = rt.spawn(publisher::run_counted(
        plan,
        ready,
        stopped,
        1,
        sent.clone(),
    ));
    let runs =
        super::run::run_all_with(&specs, 0, &|spec, storm| client(t, spec, ph, storm, &sent));
    let _ = stop.send(1);
    let stat = rt
        .block_on(publishing)
        .map_err(|_| anyhow!("the publisher stopped abnormally"))?;
    // A client that got nothing ends the run; the publisher may be why.
    let mut runs = match (runs, publisher_invalid(&stat)) {
        (Err(e), Some(why)) => bail!("{}; so {e}", why.trim_start_matches("invalid: ")),
        (r, _) => r?,
    };
    for r in &mut runs {
        // The publisher's failure first (it explains the rest), then a seq stream that
        // is not what it published.
        let why = publisher_invalid(&stat)
            .or_else(|| seq_account::stream_invalid(&r.counts, stat.timer_rounds));
        if let Some(why) = why {
            r.status = crate::findings::Status::Fail;
            r.verdict = why;
        }
    }
    Ok((runs, stat))
}

/// Why the publisher's run makes the counts meaningless, if it does.
pub fn publisher_invalid(s: &crate::bench::wire::PublisherStat) -> Option<String> {
    let first = s
        .first_error
        .as_deref()
        .map(|e| e.trim_start_matches("publisher: "));
    if s.sent == 0 {
        return Some(format!(
            "invalid: the publisher ({}) delivered nothing to the server{}",
            s.via,
            first.map(|e| format!(": {e}")).unwrap_or_default()
        ));
    }
    crate::bench::validity::publishes_failed(s)
        .map(|failed| format!("invalid: {failed}; their seqs would count as the server's loss"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_values() {
        assert_eq!(Resume::parse("none"), Ok(Resume::None));
        assert_eq!(Resume::parse("last-event-id"), Ok(Resume::LastEventId));
        assert_eq!(
            Resume::parse("query ?since={seq}"),
            Ok(Resume::Query("since={seq}".into()))
        );
        assert_eq!(
            Resume::parse(r#"message {"since":{seq}}"#),
            Ok(Resume::Message(r#"{"since":{seq}}"#.into()))
        );
        assert!(Resume::parse("query since=1").is_err());
        assert!(Resume::parse("header X").is_err());
        let ok = crate::bench::wire::PublisherStat {
            sent: 10,
            ..Default::default()
        };
        assert_eq!(publisher_invalid(&ok), None);
        let failed = crate::bench::wire::PublisherStat {
            failed: 1,
            first_error: Some("HTTP 404".into()),
            ..ok.clone()
        };
        assert!(publisher_invalid(&failed).unwrap().contains("1 of 11"));
        let none = crate::bench::wire::PublisherStat::default();
        assert!(publisher_invalid(&none).unwrap().starts_with("invalid"));
        let names = ["none", "last-event-id", "since-query", "resume-message"];
        for (s, n) in ["none", "last-event-id", "query a={seq}", "message {seq}"]
            .iter()
            .zip(names)
        {
            assert_eq!(Resume::parse(s).unwrap().name(), n);
        }
    }
}
