//! The connections a probe makes and what each one saw, timed per read. Observations are
//! plain data: the checks (one file each) judge them without I/O.
use super::client::{self, ClientOpts, Conn};
use super::target::Target;
use anyhow::Context;
use rtcheck_wire::appproto::{self, AppProtocol};
use rtcheck_wire::http::response::{Framing, Head, Reader};
use rtcheck_wire::sse::{self, Item};
use rtcheck_wire::ws;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How a stream ended during the observation.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Still open when the probe stopped watching.
    Open,
    /// WebSocket close frame (code) from the far side.
    CloseFrame(Option<u16>),
    /// Clean EOF (or the end of a chunked response).
    Eof,
    Reset,
    Error(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct EventRec {
    /// Milliseconds since the request was sent.
    pub at_ms: f64,
    /// Index of the read that completed this event.
    pub read: usize,
    pub id: Option<String>,
    pub name: Option<String>,
    /// seq and ts (ns since the epoch) when the payload is rtcheck's format.
    pub seq_ts: Option<(u64, u64)>,
    /// Wall clock at receipt, ns since the epoch (for the payload's ts).
    pub wall_ns: u64,
}

/// One timed stream (SSE body or WebSocket frames).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamObs {
    /// When the response head arrived (ms since the request was sent: every time here
    /// counts from then, so a proxy that holds the head back shows it).
    pub head_ms: f64,
    /// Milliseconds since the request of each read that returned bytes.
    pub reads_ms: Vec<f64>,
    pub events: Vec<EventRec>,
    /// Heartbeats: WebSocket pings or SSE comments, ms since open.
    pub heartbeats_ms: Vec<f64>,
    /// When and how it ended (`Open` at `watched_ms`).
    pub ended_ms: f64,
    pub ending: Option<Ending>,
    /// How long the probe watched (the window it asked for).
    pub window_ms: f64,
    /// The body could not be read as events (an unknown encoding, a broken one); reason.
    pub unreadable: Option<String>,
    /// The Content-Encoding the body came in and was decoded from (gzip, deflate, br):
    /// events are timed as they come out of the decoder.
    pub encoding: Option<String>,
    /// Bytes received on the wire (after the head), compressed or not.
    pub wire_bytes: usize,
    /// Body bytes that came in the same read as the head (a server that sends its head
    /// only with its first write).
    pub with_head_bytes: usize,
    /// Body bytes after the transfer framing and any Content-Encoding came off: what the
    /// SSE parser was given.
    pub body_bytes: usize,
    /// Lines of the body that were `data` or `retry` fields.
    pub sse_fields: u64,
    /// Events and heartbeats seen past [`MAX_EVENTS`] (counted, not kept).
    pub unrecorded: usize,
    /// Why the probe cut the stream itself (a peer that floods or never reads).
    pub cut: Option<String>,
    /// The library protocol spoken on a WebSocket, and what it said (issue 42).
    pub app: Option<AppObs>,
    /// A WebSocket held open the whole window: what one ping sent after it found.
    pub after_idle: Option<AfterIdle>,
    /// The reason text of the server's close frame, escaped and bounded (the peer's
    /// words: auth and origin refusals say why here).
    pub close_reason: Option<String>,
}

/// One WebSocket ping sent after the idle watch: a NAT or conntrack table that forgot
/// the flow tells neither end, so a connection it cut still looks open until someone
/// writes (issue 40).
#[derive(Debug, Clone, PartialEq)]
pub struct AfterIdle {
    /// When the ping went out (ms since the request, like every time here).
    pub sent_ms: f64,
    /// How long an answer was waited for (ms).
    pub waited_ms: f64,
    pub outcome: Afterward,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Afterward {
    /// Bytes came back (ms after the ping): the path still carries the connection.
    Answered(f64),
    /// Nothing came back, no FIN, no RST, within the wait. `tcp`: what TCP counted
    /// then (None: TCP_INFO unreadable); segments still unacknowledged mean the path
    /// dropped the ping.
    Silent {
        tcp: Option<rtcheck_base::os::tcpinfo::SendState>,
        /// Retransmissions of the ping (TCP's count since it was sent).
        retrans: Option<u32>,
        /// TCP measured the ping acknowledged: the peer's acknowledged bytes grew by the
        /// ping's length and nothing was left unsent. Behind a layer-7 proxy the
        /// acknowledgement is the proxy's, never the server's.
        acked: bool,
    },
    /// The write or the read ended the connection (a NAT answers a forgotten flow
    /// with RST).
    Ended(Ending),
}

/// The library protocol to speak on a watched WebSocket, and why (`--app-protocol`, or
/// what the URL names).
#[derive(Debug, Clone, PartialEq)]
pub struct AppSpec {
    pub protocol: AppProtocol,
    pub why: String,
    pub sub: appproto::Subscribe,
}

/// What the library protocol said on the watched connection.
#[derive(Debug, Clone, PartialEq)]
pub struct AppObs {
    pub protocol: AppProtocol,
    pub why: String,
    /// The library's heartbeats received (also in `heartbeats_ms`).
    pub heartbeats: usize,
    /// Heartbeats rtcheck's client sent because the protocol has the client send them.
    pub client_beats: usize,
    /// Heartbeat interval and drop time the server announced on the wire (s).
    pub interval_s: Option<f64>,
    pub drop_after_s: Option<f64>,
    /// Control messages seen (open, connected, joined...), first occurrence each.
    pub controls: Vec<&'static str>,
    /// The server ended the session at the protocol level, with its reason.
    pub closed: Option<String>,
    /// Messages the protocol does not define.
    pub unknown: usize,
}

impl AppObs {
    fn new(spec: &AppSpec) -> AppObs {
        AppObs {
            protocol: spec.protocol,
            why: spec.why.clone(),
            heartbeats: 0,
            client_beats: 0,
            interval_s: None,
            drop_after_s: None,
            controls: Vec::new(),
            closed: None,
            unknown: 0,
        }
    }

    /// The heartbeat interval in force: announced on the wire, else documented (s).
    pub fn interval(&self) -> Option<f64> {
        self.interval_s.or(self.protocol.defaults().interval_s)
    }

    /// When the library drops a silent peer: announced, else documented (s).
    pub fn drop_after(&self) -> Option<f64> {
        self.drop_after_s.or(self.protocol.defaults().drop_after_s)
    }

    /// "socketio (the query names Engine.IO (EIO=4))" for a report line.
    pub fn label(&self) -> String {
        format!("{} ({})", self.protocol.name(), self.why)
    }
}

impl StreamObs {
    /// The median time between two events (ms): the data's cadence. None below 2 events.
    pub fn cadence_ms(&self) -> Option<f64> {
        let mut gaps: Vec<f64> = self
            .events
            .windows(2)
            .map(|w| w[1].at_ms - w[0].at_ms)
            .collect();
        if gaps.is_empty() {
            return None;
        }
        gaps.sort_by(f64::total_cmp);
        Some(gaps[gaps.len() / 2])
    }

    /// "N message(s) received, every X" (the cadence) for a report line.
    pub fn messages_text(&self) -> String {
        let n = self.events.len();
        match self.cadence_ms() {
            Some(c) => format!(
                "{n} message(s) received, every {} (median)",
                super::fmt_s(c)
            ),
            None => format!("{n} message(s) received"),
        }
    }

    /// The longest time with nothing received, start and end included.
    pub fn longest_silence_ms(&self) -> f64 {
        let mut prev = 0.0;
        let mut best: f64 = 0.0;
        for &r in &self.reads_ms {
            best = best.max(r - prev);
            prev = r;
        }
        best.max(self.ended_ms - prev)
    }
}

/// Added delay (same clock) above which events were held on the path: `sse-buffering`
/// judges with it, and `compression` a decoded stream. A second: far above a proxy's
/// forwarding time, far below the 6.6 s measured behind a buffering proxy, and above the
/// stalls of a loaded machine.
pub const DELAY_FAIL_MS: f64 = 1000.0;
/// A read with several events after this much silence is a released buffer.
pub const BURST_SILENCE_MS: f64 = 1000.0;

/// How a stream's events arrived (`sse-buffering` and `compression` judge it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Timing {
    pub events: usize,
    pub reads: usize,
    pub first_event_ms: Option<f64>,
    /// Max of (receipt − payload ts), ms.
    pub max_delay_ms: Option<f64>,
    /// Max − min of (receipt − payload ts), ms.
    pub spread_ms: Option<f64>,
    /// Reads that delivered ≥ 2 events after ≥ BURST_SILENCE_MS of silence.
    pub bursts: usize,
}

pub fn timing(s: &StreamObs) -> Timing {
    let delays: Vec<f64> = s
        .events
        .iter()
        .filter_map(|e| e.seq_ts.map(|(_, ts)| (e.wall_ns as f64 - ts as f64) / 1e6))
        .collect();
    let max = delays
        .iter()
        .cloned()
        .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.max(d))));
    let min = delays
        .iter()
        .cloned()
        .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.min(d))));
    let mut bursts = 0;
    for (i, &at) in s.reads_ms.iter().enumerate() {
        let n = s.events.iter().filter(|e| e.read == i).count();
        let before = if i == 0 { at } else { at - s.reads_ms[i - 1] };
        if n >= 2 && before >= BURST_SILENCE_MS {
            bursts += 1;
        }
    }
    Timing {
        events: s.events.len(),
        reads: s.reads_ms.len(),
        first_event_ms: s.events.first().map(|e| e.at_ms),
        max_delay_ms: max,
        spread_ms: max.zip(min).map(|(a, b)| a - b),
        bursts,
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct WsObs {
    pub head: Head,
    /// `Sec-WebSocket-Accept` matches our key.
    pub accept_ok: bool,
    pub stream: Option<StreamObs>,
    /// A refused upgrade's body, its start (escaped, bounded), unless an HTML page:
    /// libraries say why there (python-engineio: `"ORIGIN is not an accepted origin."`),
    /// which the status alone does not.
    pub body: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SseObs {
    pub head: Head,
    pub stream: Option<StreamObs>,
}

impl SseObs {
    pub fn is_event_stream(&self) -> bool {
        self.head.status == 200
            && self
                .head
                .header("content-type")
                .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"))
    }
}

/// A streaming Content-Encoding decoder: compressed bytes in, what they decode to out
/// as soon as the compressor flushed it (so each event is timed when it could be read).
pub enum Decoder {
    Gzip(Box<flate2::write::GzDecoder<Vec<u8>>>),
    Deflate(Box<flate2::write::ZlibDecoder<Vec<u8>>>),
    Brotli(Box<brotli_decompressor::DecompressorWriter<Vec<u8>>>),
}

impl Decoder {
    /// The decoder for a Content-Encoding; Err: one this probe cannot decode.
    pub fn for_encoding(e: &str) -> Result<Decoder, String> {
        match e.trim().to_ascii_lowercase().as_str() {
            "gzip" | "x-gzip" => Ok(Decoder::Gzip(Box::new(flate2::write::GzDecoder::new(
                Vec::new(),
            )))),
            "deflate" => Ok(Decoder::Deflate(Box::new(flate2::write::ZlibDecoder::new(
                Vec::new(),
            )))),
            "br" => Ok(Decoder::Brotli(Box::new(
                brotli_decompressor::DecompressorWriter::new(Vec::new(), 4096),
            ))),
            other => Err(format!(
                "the event stream is compressed with `{other}`, which the probe cannot decode"
            )),
        }
    }

    /// Feed compressed bytes; the decoded bytes so far are moved to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        use std::io::Write;
        let bad = |e: std::io::Error| format!("the compressed event stream does not decode: {e}");
        let inner = match self {
            Decoder::Gzip(d) => {
                d.write_all(bytes).and_then(|_| d.flush()).map_err(bad)?;
                d.get_mut()
            }
            Decoder::Deflate(d) => {
                d.write_all(bytes).and_then(|_| d.flush()).map_err(bad)?;
                d.get_mut()
            }
            Decoder::Brotli(d) => {
                d.write_all(bytes).and_then(|_| d.flush()).map_err(bad)?;
                d.get_mut()
            }
        };
        out.append(inner);
        Ok(())
    }
}

/// Largest SSE line or WebSocket message the probe keeps (a flood is an error, not memory).
pub const MAX_ITEM: usize = 1024 * 1024;

/// Events recorded per stream at most: a probe needs a few; a flood must not grow memory
/// (past it the watch goes on, counting in `StreamObs::unrecorded`).
pub const MAX_EVENTS: usize = 100_000;
/// Reads and heartbeats recorded at most at full resolution; past it one per
/// [`COARSE_MS`] is kept: idle timeouts are seconds, a flood must not grow memory.
pub const MAX_TIMES: usize = 100_000;
pub const COARSE_MS: f64 = 100.0;

/// Push `at` onto a time list bounded by [`MAX_TIMES`] (coarser past it).
pub fn push_time(v: &mut Vec<f64>, at: f64) {
    if v.len() < MAX_TIMES || v.last().is_none_or(|&l| at - l >= COARSE_MS) {
        v.push(at);
    }
}

/// Pings in one watch past which the server is flooding: a heartbeat every second for a
/// 300 s idle watch is 300.
pub const MAX_PINGS: usize = 10_000;

/// When to stop watching a stream.
#[derive(Debug, Clone, Copy)]
pub struct Watch {
    pub window: Duration,
    /// Stop early after this many events (quick mode).
    pub max_events: Option<usize>,
}

/// Progress of a long watch: told about elapsed time and what was seen.
pub trait Progress {
    fn update(&self, elapsed: Duration, window: Duration, seen: &StreamObs);
}

pub struct NoProgress;
impl Progress for NoProgress {
    fn update(&self, _: Duration, _: Duration, _: &StreamObs) {}
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn ending_of(e: &std::io::Error) -> Ending {
    match e.kind() {
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
            Ending::Reset
        }
        std::io::ErrorKind::UnexpectedEof => Ending::Eof,
        _ => Ending::Error(e.to_string()),
    }
}

/// Accept header a browser's EventSource sends, plus the encodings a browser accepts (so a
/// proxy that compresses shows it).
fn sse_headers(last_id: Option<&str>) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("Accept", "text/event-stream".to_string()),
        ("Accept-Encoding", "gzip, deflate, br".to_string()),
        ("Cache-Control", "no-cache".to_string()),
    ];
    if let Some(id) = last_id {
        h.push(("Last-Event-ID", id.to_string()));
    }
    h
}

/// GET with `Accept: text/event-stream`; watch the body when it is an event stream.
pub async fn sse(
    t: &Target,
    o: &ClientOpts,
    last_id: Option<&str>,
    watch: Watch,
    progress: &dyn Progress,
) -> anyhow::Result<SseObs> {
    let mut conn = client::connect(t, o, &["http/1.1"]).await?;
    let req = client::request(t, o, &sse_headers(last_id));
    let start = Instant::now();
    // A buffering proxy holds the head of a slow stream with its body: wait for it longer.
    let bound = o.head_timeout;
    let (head, rest) = client::exchange(&mut conn, t, o, &req, bound).await?;
    let mut obs = SseObs { head, stream: None };
    if obs.is_event_stream() {
        let s = watch_sse(&mut conn, &obs.head, rest, start, watch, progress).await;
        obs.stream = Some(s);
    }
    Ok(obs)
}

async fn watch_sse(
    conn: &mut Conn,
    head: &Head,
    rest: Vec<u8>,
    start: Instant,
    watch: Watch,
    progress: &dyn Progress,
) -> StreamObs {
    let mut s = StreamObs {
        head_ms: ms(start),
        window_ms: watch.window.as_secs_f64() * 1000.0,
        with_head_bytes: rest.len(),
        ..Default::default()
    };
    let encoded = head
        .header("content-encoding")
        .filter(|e| !e.eq_ignore_ascii_case("identity"));
    let mut decoder = None;
    if let Some(e) = encoded {
        s.encoding = Some(e.to_ascii_lowercase());
        match Decoder::for_encoding(e) {
            Ok(d) => decoder = Some(d),
            Err(why) => s.unreadable = Some(why),
        }
    }
    // The transfer framing (chunked, a length, until close) comes off first.
    let mut transfer = Reader::new(head.framing(false).unwrap_or_else(|e| {
        s.unreadable = Some(e.to_string());
        Framing::Close
    }));
    // Lossy, as a browser's EventSource decodes: the probe reports what a browser sees.
    let mut parser = sse::Parser::new(MAX_ITEM).lossy();
    let mut pending = rest;
    let deadline = tokio::time::Instant::now() + watch.window;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        if !pending.is_empty() {
            let at = ms(start);
            let idx = s.reads_ms.len();
            push_time(&mut s.reads_ms, at);
            s.wire_bytes += pending.len();
            if s.unreadable.is_none() {
                let body = Body {
                    transfer: &mut transfer,
                    decoder: decoder.as_mut(),
                    parser: &mut parser,
                };
                if let Err(e) = feed_sse(body, &pending, at, idx, &mut s) {
                    s.unreadable = Some(e);
                }
            }
            pending.clear();
            if transfer.done() {
                s.ending = Some(Ending::Eof);
                break;
            }
            if watch.max_events.is_some_and(|m| s.events.len() >= m) {
                break;
            }
        }
        let mut buf = [0u8; 16384];
        tokio::select! {
            r = conn.io.read(&mut buf) => match r {
                Ok(0) => { s.ending = Some(Ending::Eof); break; }
                Ok(n) => pending.extend_from_slice(&buf[..n]),
                Err(e) => { s.ending = Some(ending_of(&e)); break; }
            },
            _ = tokio::time::sleep_until(deadline) => break,
            _ = tick.tick() => progress.update(start.elapsed(), watch.window, &s),
        }
    }
    s.sse_fields = parser.fields();
    s.ended_ms = ms(start);
    s.ending.get_or_insert(Ending::Open);
    s
}

/// The layers a response body goes through before it is events: transfer (chunked),
/// content (gzip...), then the SSE parser.
struct Body<'a> {
    transfer: &'a mut Reader,
    decoder: Option<&'a mut Decoder>,
    parser: &'a mut sse::Parser,
}

fn feed_sse(b: Body, raw: &[u8], at: f64, idx: usize, s: &mut StreamObs) -> Result<(), String> {
    let mut body = Vec::new();
    b.transfer
        .feed_into(raw, &mut body)
        .map_err(|e| format!("the event stream's framing: {e}"))?;
    let mut plain = Vec::new();
    let bytes: &[u8] = match b.decoder {
        Some(d) => {
            d.feed(&body, &mut plain)?;
            &plain
        }
        None => &body,
    };
    s.body_bytes += bytes.len();
    let mut items = Vec::new();
    b.parser
        .feed_items(bytes, &mut items)
        .map_err(|e| e.to_string())?;
    for it in items {
        if s.events.len() >= MAX_EVENTS {
            s.unrecorded += 1;
            continue;
        }
        match it {
            Item::Comment => push_time(&mut s.heartbeats_ms, at),
            Item::Event(sse::Event { id, event, data }) => s.events.push(EventRec {
                at_ms: at,
                read: idx,
                id,
                name: event,
                seq_ts: rtcheck_wire::payload::decode_text(&data),
                wall_ns: wall_ns(),
            }),
        }
    }
    Ok(())
}

/// WebSocket handshake (offering permessage-deflate like browsers do), then watch frames,
/// answering pings. `watch` None: handshake only.
/// `app`: the library protocol spoken on the watched connection; then no
/// permessage-deflate is offered (the library's messages must be read, not only counted)
/// and its subprotocol is offered.
pub async fn websocket(
    t: &Target,
    o: &ClientOpts,
    origin: &str,
    watch: Option<Watch>,
    app: Option<&AppSpec>,
    progress: &dyn Progress,
) -> anyhow::Result<WsObs> {
    use tokio_tungstenite::tungstenite::handshake::{client::generate_key, derive_accept_key};
    let mut conn = client::connect(t, o, &["http/1.1"]).await?;
    let key = generate_key();
    let mut extra = vec![
        ("Upgrade", "websocket".to_string()),
        ("Connection", "Upgrade".to_string()),
        ("Sec-WebSocket-Version", "13".to_string()),
        ("Sec-WebSocket-Key", key.clone()),
        ("Origin", origin.to_string()),
    ];
    match app {
        None => extra.push((
            "Sec-WebSocket-Extensions",
            "permessage-deflate; client_max_window_bits".to_string(),
        )),
        Some(a) => extra.extend(
            a.protocol
                .subprotocol()
                .map(|p| ("Sec-WebSocket-Protocol", p.to_string())),
        ),
    }
    let req = client::request(t, o, &extra);
    let start = Instant::now();
    let (head, mut rest) = client::exchange(&mut conn, t, o, &req, o.timeout).await?;
    let accept_ok = head.header("sec-websocket-accept") == Some(&derive_accept_key(key.as_bytes()));
    // An HTML page is a proxy's or framework's generic one: its first line is `<html>`.
    let html = head
        .header("content-type")
        .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/html"));
    // What the server may echo back of what was sent: never printed.
    let secrets = echo_secrets(t, o);
    let body = if head.status == 101 || html {
        None
    } else {
        let got = std::mem::take(&mut rest);
        refusal_body(&mut conn, &head, got, o.timeout, &secrets).await
    };
    let mut obs = WsObs {
        head,
        accept_ok,
        stream: None,
        body,
    };
    if obs.head.status == 101 {
        if let Some(w) = watch {
            let deflate = obs.head.headers.iter().any(|(n, v)| {
                n == "sec-websocket-extensions"
                    && v.to_ascii_lowercase().contains("permessage-deflate")
            });
            let app = app.map(|a| {
                let c = appproto::Client::new(a.protocol, &t.path_and_query, a.sub.clone());
                (c, AppObs::new(a))
            });
            let mut s = watch_ws(&mut conn, deflate, rest, start, w, app, progress).await;
            // The peer's close reason may echo the rejected token or query.
            s.close_reason = s.close_reason.map(|r| redact_echo(&r, &secrets));
            // Only after a full, quiet-ended window: the question is whether it survived.
            let whole = s.ended_ms + 50.0 >= s.window_ms && w.max_events.is_none();
            if whole && matches!(s.ending, Some(Ending::Open)) && s.cut.is_none() {
                s.after_idle = Some(ping_after_idle(&mut conn, start, o.timeout).await);
            }
            obs.stream = Some(s);
        }
        let close = ws::client_frame(ws::OP_CLOSE, true, &1000u16.to_be_bytes(), [1, 2, 3, 4]);
        let _ = tokio::time::timeout(Duration::from_millis(500), conn.io.write_all(&close)).await;
    }
    let _ = tokio::time::timeout(Duration::from_millis(500), conn.io.shutdown()).await;
    Ok(obs)
}

/// Longest close reason shown: RFC 6455 allows 123 bytes; a library's is a few words.
const CLOSE_REASON_MAX: usize = 123;

/// Longest part of a refused upgrade's body kept: a library's reason is one short line.
const BODY_EXCERPT: usize = 120;

/// Most of a refusal's body read: its first line is all that is shown.
const BODY_READ_MAX: usize = 512;

/// The values sent that a server may echo in a refusal's body or a close reason: the
/// URL's secret query values and path parameters ([`rtcheck_base::redact::secret_param`],
/// as sent and percent-decoded) and every `--header` value (and its last word: `Bearer
/// TOKEN`). The URL's user info is not among them: it is never sent.
fn echo_secrets(t: &Target, o: &ClientOpts) -> Vec<String> {
    let mut out = Vec::new();
    let (path, query) = t
        .path_and_query
        .split_once('?')
        .unwrap_or((&t.path_and_query, ""));
    let params = path.split('/').flat_map(|seg| seg.split(';').skip(1));
    let query = query
        .split('&')
        .filter(|p| rtcheck_base::redact::secret_param(p));
    for p in params.chain(query) {
        let v = p.split_once('=').map_or(p, |(_, v)| v);
        out.push(v.to_string());
        out.push(percent_decoded(v));
    }
    for (_, v) in &o.headers {
        let v = v.trim();
        if let Some((_, last)) = v.rsplit_once(' ') {
            out.push(last.to_string());
        }
        out.push(v.to_string());
    }
    // Longest first: a value is masked whole before a part of it is.
    out.sort_by_key(|v| std::cmp::Reverse(v.len()));
    out.dedup();
    out
}

/// `%XX` decoded (`+` kept); invalid escapes kept as written.
fn percent_decoded(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The peer's words with every value in `secrets` masked (`***`).
fn redact_echo(text: &str, secrets: &[String]) -> String {
    let refs: Vec<&str> = secrets.iter().map(String::as_str).collect();
    rtcheck_base::redact::scrub(text, &refs)
}

/// The start of a refusal's body: read until its Content-Length, [`BODY_READ_MAX`] bytes,
/// the end of a chunked body, EOF or `wait` (the probe's --timeout), whichever comes
/// first (a server may write head and body apart, a loaded host late); its first line,
/// with what the server echoed of `secrets` masked.
async fn refusal_body(
    conn: &mut Conn,
    head: &Head,
    mut got: Vec<u8>,
    wait: Duration,
    secrets: &[String],
) -> Option<String> {
    let promised = head
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok());
    let chunked = head.has_token("transfer-encoding", "chunked");
    let want = promised.unwrap_or(BODY_READ_MAX).min(BODY_READ_MAX);
    let ended = |g: &[u8]| chunked && (g.starts_with(b"0\r\n") || g.ends_with(b"\r\n0\r\n\r\n"));
    let deadline = tokio::time::Instant::now() + wait;
    while got.len() < want && !ended(&got) {
        let mut buf = [0u8; BODY_READ_MAX];
        let room = want - got.len();
        match tokio::time::timeout_at(deadline, conn.io.read(&mut buf[..room])).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    got.truncate(want);
    if head.has_token("transfer-encoding", "chunked") {
        // The first line is the chunk's size, not the server's words.
        let at = got
            .windows(2)
            .position(|w| w == b"\r\n")
            .map_or(0, |i| i + 2);
        got.drain(..at);
    }
    body_excerpt(&got, secrets)
}

/// Pure: a body's first line, trimmed, its echoed secrets masked, escaped and bounded;
/// None when there is none.
fn body_excerpt(bytes: &[u8], secrets: &[String]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text.trim().lines().next()?.trim();
    let line = redact_echo(line, secrets);
    (!line.is_empty()).then(|| rtcheck_base::escape::excerpt(&line, BODY_EXCERPT))
}

/// `deflate`: permessage-deflate was negotiated (compressed messages are counted, not
/// inflated).
async fn watch_ws(
    conn: &mut Conn,
    deflate: bool,
    rest: Vec<u8>,
    start: Instant,
    watch: Watch,
    app: Option<(appproto::Client, AppObs)>,
    progress: &dyn Progress,
) -> StreamObs {
    let (mut app, obs) = app.unzip();
    let mut s = StreamObs {
        head_ms: ms(start),
        window_ms: watch.window.as_secs_f64() * 1000.0,
        app: obs,
        ..Default::default()
    };
    if let Some(c) = app.as_mut() {
        let first: Vec<u8> = c.start().iter().flat_map(out_frame).collect();
        let sent = tokio::time::timeout(watch.window, conn.io.write_all(&first));
        if !first.is_empty() && !matches!(sent.await, Ok(Ok(()))) {
            s.ending = Some(Ending::Reset);
            s.ended_ms = ms(start);
            return s;
        }
    }
    let mut buf = rest;
    let mut fresh = !buf.is_empty();
    let mut dec = ws::Decoder::client(deflate);
    let deadline = tokio::time::Instant::now() + watch.window;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        if fresh {
            fresh = false;
            let mut pongs = Vec::new();
            let at = ms(start);
            if let Some(end) =
                record_frames(&mut dec, &mut buf, at, &mut s, &mut pongs, app.as_mut())
            {
                s.ending = Some(end);
                break;
            }
            if s.heartbeats_ms.len() >= MAX_PINGS {
                s.cut = Some(format!(
                    "the server sent {} heartbeats (WebSocket pings or the library's) in {}: a flood, not a heartbeat",
                    s.heartbeats_ms.len(),
                    super::fmt_s(ms(start))
                ));
                break;
            }
            // A peer that floods pings without reading would hold this write forever:
            // it shares the watch's deadline, and what stays unsent is reported.
            if !pongs.is_empty() {
                match tokio::time::timeout_at(deadline, conn.io.write_all(&pongs)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => {
                        s.ending = Some(Ending::Reset);
                        break;
                    }
                    Err(_) => {
                        s.cut = Some(format!(
                            "the server stopped reading: a pong of {} B was still unsent at the end of the watch ({} ping(s) received)",
                            pongs.len(),
                            s.heartbeats_ms.len() + s.unrecorded
                        ));
                        break;
                    }
                }
            }
            if watch.max_events.is_some_and(|m| s.events.len() >= m) {
                break;
            }
        }
        let mut chunk = [0u8; 16384];
        tokio::select! {
            r = conn.io.read(&mut chunk) => match r {
                Ok(0) => { s.ending = Some(Ending::Eof); break; }
                Ok(n) => { buf.extend_from_slice(&chunk[..n]); fresh = true; }
                Err(e) => { s.ending = Some(ending_of(&e)); break; }
            },
            _ = tokio::time::sleep_until(deadline) => break,
            _ = tick.tick() => {
                progress.update(start.elapsed(), watch.window, &s);
                let beat = app.as_mut().and_then(|c| c.due(start.elapsed().as_secs_f64()));
                if let Some(b) = beat {
                    // Bounded like the pongs: a peer that never reads cannot hold it.
                    let frame = out_frame(&b);
                    let sent = tokio::time::timeout_at(deadline, conn.io.write_all(&frame));
                    if !matches!(sent.await, Ok(Ok(()))) {
                        s.ending = Some(Ending::Reset);
                        break;
                    }
                    if let Some(a) = s.app.as_mut() {
                        a.client_beats += 1;
                    }
                }
            }
        }
    }
    s.ended_ms = ms(start);
    s.ending.get_or_insert(Ending::Open);
    s
}

/// Send one ping on a connection held idle and wait up to `wait` for any bytes back;
/// then ask TCP whether the ping was acknowledged.
async fn ping_after_idle(conn: &mut Conn, start: Instant, wait: Duration) -> AfterIdle {
    let tcp_before = conn.fd.and_then(rtcheck_base::os::tcpinfo::send_state);
    let sent_ms = ms(start);
    let sent = Instant::now();
    let ping = ws::client_frame(ws::OP_PING, true, b"rtcheck-after-idle", [5, 6, 7, 8]);
    let deadline = tokio::time::Instant::now() + wait;
    let outcome = match tokio::time::timeout_at(deadline, conn.io.write_all(&ping)).await {
        Ok(Err(e)) => Afterward::Ended(ending_of(&e)),
        // The kernel took it (or its buffer is full): the answer tells the rest.
        Ok(Ok(())) | Err(_) => {
            let mut b = [0u8; 4096];
            match tokio::time::timeout_at(deadline, conn.io.read(&mut b)).await {
                Ok(Ok(0)) => Afterward::Ended(Ending::Eof),
                Ok(Ok(_)) => Afterward::Answered(sent.elapsed().as_secs_f64() * 1000.0),
                Ok(Err(e)) => Afterward::Ended(ending_of(&e)),
                Err(_) => {
                    let tcp = conn.fd.and_then(rtcheck_base::os::tcpinfo::send_state);
                    let retrans = tcp
                        .zip(tcp_before)
                        .map(|(a, b)| a.total_retrans.saturating_sub(b.total_retrans));
                    let acked = tcp
                        .zip(tcp_before)
                        .is_some_and(|(a, b)| a.acknowledged_since(&b, ping.len() as u64));
                    Afterward::Silent {
                        tcp,
                        retrans,
                        acked,
                    }
                }
            }
        }
    };
    AfterIdle {
        sent_ms,
        waited_ms: sent.elapsed().as_secs_f64() * 1000.0,
        outcome,
    }
}

/// A library message as a masked client frame.
fn out_frame(o: &appproto::Out) -> Vec<u8> {
    let (op, data) = match o {
        appproto::Out::Text(t) => (ws::OP_TEXT, t.as_bytes()),
        appproto::Out::Binary(b) => (ws::OP_BINARY, b.as_slice()),
    };
    ws::client_frame(op, true, data, [7; 4])
}

/// What the library protocol made of one message: heartbeats, replies owed, payloads
/// (returned, to be counted as events), what it said.
fn app_message(
    c: &mut appproto::Client,
    m: appproto::Msg,
    at: f64,
    s: &mut StreamObs,
    replies: &mut Vec<u8>,
) -> Vec<Vec<u8>> {
    use appproto::Event;
    let mut payloads = Vec::new();
    for e in c.on_message(m) {
        let a = s.app.as_mut().expect("app obs with an app client");
        match e {
            Event::Heartbeat => {
                a.heartbeats += 1;
                push_time(&mut s.heartbeats_ms, at);
            }
            Event::Reply(o) => replies.extend(out_frame(&o)),
            Event::Payload(p) => payloads.push(p),
            Event::Negotiated {
                interval_s,
                drop_after_s,
                ..
            } => {
                a.interval_s = interval_s.or(a.interval_s);
                a.drop_after_s = drop_after_s.or(a.drop_after_s);
            }
            Event::Control(name) if !a.controls.contains(&name) && a.controls.len() < 16 => {
                a.controls.push(name)
            }
            Event::Control(_) => {}
            Event::Closed(r) => a.closed = Some(r),
            Event::Unknown => a.unknown += 1,
        }
    }
    payloads
}

/// Decode every complete frame in `buf` (one read, at `at` ms; the bytes used are
/// removed): pings are heartbeats (their pongs appended to `pongs`), data messages are
/// events (a compressed one carries no readable seq). Some(ending) on a close frame or a
/// protocol error.
pub fn record_frames(
    dec: &mut ws::Decoder,
    buf: &mut Vec<u8>,
    at: f64,
    s: &mut StreamObs,
    pongs: &mut Vec<u8>,
    mut app: Option<&mut appproto::Client>,
) -> Option<Ending> {
    use rtcheck_wire::payload;
    use ws::Inbound;
    let read = s.reads_ms.len();
    push_time(&mut s.reads_ms, at);
    let mut msgs = Vec::new();
    // Messages before an error still count: they arrived.
    let decoded = dec.decode_messages(buf, MAX_ITEM, &mut msgs);
    // Only the latest ping of a read is answered (RFC 6455 5.5.3 allows it): a ping flood
    // owes one pong, not one per ping. The library protocol's replies all go out.
    let mut pong = None;
    for m in msgs {
        let seq_ts = match m.inbound {
            Inbound::Ping(p) => {
                push_time(&mut s.heartbeats_ms, at);
                // A fixed mask is fine for a probe: it only has to be present.
                pong = Some(ws::client_frame(ws::OP_PONG, true, &p, [7; 4]));
                continue;
            }
            Inbound::Close(code) => {
                s.close_reason = dec
                    .close_reason()
                    .map(|r| rtcheck_base::escape::excerpt(r, CLOSE_REASON_MAX));
                return Some(Ending::CloseFrame(code));
            }
            Inbound::Pong => continue,
            _ if m.compressed => None,
            Inbound::Text(t) if app.is_some() => {
                let c = app.as_deref_mut().expect("checked");
                let t = String::from_utf8_lossy(&t).into_owned();
                for p in app_message(c, appproto::Msg::Text(&t), at, s, pongs) {
                    push_event(s, at, read, &p);
                }
                continue;
            }
            Inbound::Binary(b) if app.is_some() => {
                let c = app.as_deref_mut().expect("checked");
                for p in app_message(c, appproto::Msg::Binary(&b), at, s, pongs) {
                    push_event(s, at, read, &p);
                }
                continue;
            }
            // rtcheck serve's hello (`{"epoch":..,"latest":..}`) or a reset marker: not
            // an event of the stream.
            Inbound::Text(t) => match std::str::from_utf8(&t) {
                Ok(t) if rtcheck_wire::epoch::parse_marker(t).is_some() => continue,
                Ok(t) => payload::decode_text(t),
                Err(_) => None,
            },
            Inbound::Binary(b) => payload::decode(&b),
        };
        if s.events.len() >= MAX_EVENTS {
            s.unrecorded += 1;
            continue;
        }
        s.events.push(EventRec {
            at_ms: at,
            read,
            id: None,
            name: None,
            seq_ts,
            wall_ns: wall_ns(),
        });
    }
    pongs.extend(pong.unwrap_or_default());
    match decoded {
        Ok(used) => {
            buf.drain(..used);
            None
        }
        Err(e) => Some(Ending::Error(format!("WebSocket {e}"))),
    }
}

/// An application payload unwrapped by the library protocol, as an event (its seq and ts
/// when it is rtcheck's payload format).
fn push_event(s: &mut StreamObs, at: f64, read: usize, p: &[u8]) {
    use rtcheck_wire::payload;
    if s.events.len() >= MAX_EVENTS {
        s.unrecorded += 1;
        return;
    }
    let seq_ts = std::str::from_utf8(p)
        .ok()
        .and_then(payload::decode_text)
        .or_else(|| payload::decode(p));
    s.events.push(EventRec {
        at_ms: at,
        read,
        id: None,
        name: None,
        seq_ts,
        wall_ns: wall_ns(),
    });
}

/// ALPN offer h2 + http/1.1 on a fresh TLS connection: what the edge would speak.
pub async fn alpn(t: &Target, o: &ClientOpts) -> anyhow::Result<Option<String>> {
    let mut conn = client::connect(t, o, &["h2", "http/1.1"])
        .await
        .context("ALPN check")?;
    let _ = tokio::time::timeout(Duration::from_millis(500), conn.io.shutdown()).await;
    Ok(conn.alpn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtcheck_wire::{payload, ws};

    #[test]
    fn a_refusals_body_is_its_first_line_escaped_and_bounded() {
        // python-engineio's 400 body is a JSON string.
        let b = body_excerpt(b"\"Not an accepted origin.\"", &[]).unwrap();
        assert_eq!(b, "\"Not an accepted origin.\"");
        assert_eq!(body_excerpt(b"  \r\n", &[]), None);
        assert_eq!(body_excerpt(b"", &[]), None);
        let b = body_excerpt(b"<html>\x1b[2J\r\n<body>400</body>", &[]).unwrap();
        assert_eq!(b, "<html>\\x1b[2J");
        let long = body_excerpt(&[b'x'; 400], &[]).unwrap();
        assert!(long.starts_with(&"x".repeat(BODY_EXCERPT)), "{long}");
        assert!(long.contains("more bytes"), "{long}");
    }

    fn opts(headers: &[(&str, &str)]) -> ClientOpts {
        ClientOpts {
            timeout: Duration::from_secs(30),
            head_timeout: Duration::from_secs(30),
            ca: None,
            insecure: false,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn what_a_refusal_or_close_echoes_of_the_secrets_sent_is_masked() {
        let t = Target::parse("wss://h/ws;jsessionid=SESS1234?token=abc%2Bdef&EIO=4").unwrap();
        let o = opts(&[("Authorization", "Bearer s3cr3t-tok")]);
        let sec = echo_secrets(&t, &o);
        // The token as sent and decoded, the path parameter, the header and its token.
        for v in [
            "abc%2Bdef",
            "abc+def",
            "SESS1234",
            "Bearer s3cr3t-tok",
            "s3cr3t-tok",
        ] {
            assert!(sec.iter().any(|s| s == v), "{v}: {sec:?}");
        }
        // Not a secret: a protocol's version stays readable.
        assert!(!sec.iter().any(|s| s == "4"), "{sec:?}");
        let b = body_excerpt(
            b"invalid token abc+def for /ws?token=abc%2Bdef\r\nmore",
            &sec,
        )
        .unwrap();
        assert_eq!(b, "invalid token *** for /ws?token=***");
        let b = body_excerpt(b"bad credentials: Bearer s3cr3t-tok", &sec).unwrap();
        assert_eq!(b, "bad credentials: ***");
        assert!(!redact_echo("session SESS1234 expired", &sec).contains("SESS1234"));
        // A secret past the excerpt's cut is masked before the cut, never half shown.
        let mut long = vec![b'x'; BODY_EXCERPT - 4];
        long.extend_from_slice(b"s3cr3t-tok");
        let b = body_excerpt(&long, &sec).unwrap();
        assert!(!b.contains("s3cr"), "{b}");
    }

    fn head(headers: &[(&str, &str)]) -> Head {
        Head {
            status: 401,
            reason: "Unauthorized".into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// A body that comes in many small reads is read to its Content-Length, not one read.
    #[tokio::test]
    async fn a_refusals_body_is_read_to_its_length_over_many_reads() {
        use tokio::io::AsyncWriteExt;
        // 8 B of room: every read gets 8 B at most.
        let (ours, mut theirs) = tokio::io::duplex(8);
        let body = b"missing the subprotocol header\r\n";
        let writer = tokio::spawn(async move { theirs.write_all(body).await });
        let mut conn = Conn {
            io: Box::new(ours),
            alpn: None,
            fd: None,
        };
        let len = body.len().to_string();
        let h = head(&[("content-length", &len)]);
        let got = refusal_body(&mut conn, &h, Vec::new(), Duration::from_secs(30), &[]).await;
        assert_eq!(got.as_deref(), Some("missing the subprotocol header"));
        writer.await.unwrap().unwrap();
        // Chunked: read to the last chunk, the size line dropped.
        let (ours, mut theirs) = tokio::io::duplex(8);
        let writer = tokio::spawn(async move {
            theirs.write_all(b"c\r\nno such room\r\n0\r\n\r\n").await?;
            // Held open after the body: the read stops at the last chunk, not at EOF.
            std::future::pending::<std::io::Result<()>>().await
        });
        let mut conn = Conn {
            io: Box::new(ours),
            alpn: None,
            fd: None,
        };
        let h = head(&[("transfer-encoding", "chunked")]);
        // A wait far past the bound below: a read that missed the last chunk never ends.
        let read = refusal_body(&mut conn, &h, Vec::new(), Duration::from_secs(3600), &[]);
        let got = tokio::time::timeout(Duration::from_secs(120), read)
            .await
            .expect("the read stops at the last chunk");
        assert_eq!(got.as_deref(), Some("no such room"));
        writer.abort();
    }

    /// Feed `enc` one byte at a time: what comes out is the text, whatever the split.
    fn decoded(encoding: &str, enc: &[u8]) -> String {
        let mut d = Decoder::for_encoding(encoding).unwrap();
        let mut out = Vec::new();
        for b in enc {
            d.feed(std::slice::from_ref(b), &mut out).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn content_encodings_decode_incrementally() {
        use std::io::Write;
        let text = "id: 1\ndata: x\n\n";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(text.as_bytes()).unwrap();
        gz.flush().unwrap();
        // Sync-flushed, not finished: a stream still open decodes what was flushed.
        assert_eq!(decoded("gzip", gz.get_ref()), text);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(text.as_bytes()).unwrap();
        assert_eq!(decoded("deflate", &z.finish().unwrap()), text);
        // Brotli: one uncompressed meta-block (WBITS 16, 4 nibbles of MLEN - 1 from bit 4,
        // ISUNCOMPRESSED at bit 20), then the last, empty one (ISLAST, ISLASTEMPTY).
        let m = text.len() - 1;
        let mut br = vec![
            ((m & 0xF) << 4) as u8,
            (m >> 4) as u8,
            0x10 | (m >> 12) as u8,
        ];
        br.extend_from_slice(text.as_bytes());
        br.push(0x03);
        assert_eq!(decoded("br", &br), text);
        assert!(Decoder::for_encoding("zstd").is_err());
        let mut bad = Decoder::for_encoding("gzip").unwrap();
        assert!(bad.feed(b"not gzip at all", &mut Vec::new()).is_err());
    }

    /// A peer that floods pings and never reads: the pong write shares the watch's
    /// deadline, so the watch ends on time, cut and saying why (issue 41 item 6).
    #[tokio::test]
    async fn a_ping_flood_that_never_reads_is_cut_at_the_deadline() {
        use tokio::io::AsyncWriteExt;
        // 64 B of room toward the peer, which never reads: the first pongs fill it.
        let (ours, mut theirs) = tokio::io::duplex(64);
        let flood = tokio::spawn(async move {
            let ping = ws::frame(ws::OP_PING, &[b'p'; 125]);
            while theirs.write_all(&ping).await.is_ok() {}
        });
        let mut conn = Conn {
            io: Box::new(ours),
            alpn: None,
            fd: None,
        };
        let watch = Watch {
            window: Duration::from_millis(300),
            max_events: None,
        };
        let start = Instant::now();
        let s = watch_ws(
            &mut conn,
            false,
            Vec::new(),
            start,
            watch,
            None,
            &NoProgress,
        )
        .await;
        flood.abort();
        // Bounded: the watch's window, not forever (a generous bound for a loaded host).
        assert!(start.elapsed() < Duration::from_secs(30));
        let cut = s.cut.expect("the watch says it cut the stream");
        assert!(cut.contains("stopped reading"), "{cut}");
        assert!(!s.heartbeats_ms.is_empty());
        assert!(s.heartbeats_ms.len() <= MAX_TIMES + 1);
    }

    #[test]
    fn only_the_latest_ping_of_a_read_is_answered() {
        let mut buf = Vec::new();
        for i in 0..50u8 {
            buf.extend(ws::frame(ws::OP_PING, &[i]));
        }
        let (mut s, mut pongs) = (StreamObs::default(), Vec::new());
        let mut dec = ws::Decoder::client(false);
        assert_eq!(
            record_frames(&mut dec, &mut buf, 1.0, &mut s, &mut pongs, None),
            None
        );
        assert_eq!(s.heartbeats_ms.len(), 50);
        assert_eq!(pongs, ws::client_frame(ws::OP_PONG, true, &[49], [7; 4]));
    }

    #[test]
    fn time_lists_stay_bounded_under_a_flood() {
        let mut v = Vec::new();
        for i in 0..(MAX_TIMES * 3) {
            push_time(&mut v, i as f64 * 0.01);
        }
        assert!(v.len() <= MAX_TIMES + 30, "{}", v.len());
        // Past the bound a read 100 ms after the last kept one is still kept.
        let last = *v.last().unwrap();
        push_time(&mut v, last + COARSE_MS);
        assert_eq!(*v.last().unwrap(), last + COARSE_MS);
    }

    #[test]
    fn frames_become_heartbeats_events_and_endings() {
        let mut buf = ws::frame(ws::OP_PING, b"p");
        buf.extend(ws::frame(ws::OP_BINARY, &payload::encode(32, 9, 1)));
        buf.extend(ws::frame(ws::OP_TEXT, b"{\"seq\":10,\"ts\":2}"));
        let late = ws::frame(ws::OP_TEXT, b"{\"seq\":11,\"ts\":3}");
        buf.extend(&late[..4]); // the rest comes with the next read
        let mut s = StreamObs::default();
        let mut pongs = Vec::new();
        let mut dec = ws::Decoder::client(false);
        assert_eq!(
            record_frames(&mut dec, &mut buf, 5.0, &mut s, &mut pongs, None),
            None
        );
        assert_eq!(s.heartbeats_ms, vec![5.0]);
        let seqs: Vec<_> = s.events.iter().map(|e| e.seq_ts).collect();
        assert_eq!(seqs, vec![Some((9, 1)), Some((10, 2))]);
        assert_eq!(buf.len(), 4, "a partial frame waits");
        assert_eq!(pongs[0], 0x80 | ws::OP_PONG);
        buf.extend(&late[4..]);
        buf.extend(ws::close_frame(1001));
        let end = record_frames(&mut dec, &mut buf, 6.0, &mut s, &mut pongs, None);
        assert_eq!(end, Some(Ending::CloseFrame(Some(1001))));
        assert_eq!(s.events.last().unwrap().seq_ts, Some((11, 3)));
        // A masked server frame, as any protocol error, ends the stream.
        let mut junk = vec![0x89, 0xFE, 0, 200];
        let mut dec = ws::Decoder::client(false);
        assert!(matches!(
            record_frames(&mut dec, &mut junk, 7.0, &mut s, &mut pongs, None),
            Some(Ending::Error(e)) if e.contains("masked")
        ));
        // Compressed (permessage-deflate negotiated): an event without a readable seq.
        let mut z = ws::frame(ws::OP_TEXT, &[0xff, 0x01]);
        z[0] |= 0x40;
        let mut dec = ws::Decoder::client(true);
        let n = s.events.len();
        assert_eq!(
            record_frames(&mut dec, &mut z, 8.0, &mut s, &mut pongs, None),
            None
        );
        assert_eq!(s.events[n].seq_ts, None);
    }
}
