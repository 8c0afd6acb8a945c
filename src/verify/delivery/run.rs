//! The experiment: per run, N clients connect, receive, leave one way, stay away,
//! reconnect and resume; then count. Runs share one server and go at the same time, so
//! the whole experiment takes about the longest run.
use super::client::{latest_seq, Disconnect, PollConn, SseConn, WsConn};
use crate::bench::seq_account::{self, Counts, Trace};
use anyhow::{anyhow, bail};
use rtcheck_base::os::signal::interrupted;
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// The case of a run whose server restarts on the same port while its clients are
/// connected (they resume on the new instance, another epoch).
pub const RESTART: &str = "server-restart";

/// The run names of a foreign server (`verify delivery --url`, judged here with the
/// others): `foreign` runs come back with `--resume`; the `no-resume` control (when a
/// resume is given) comes back without it.
pub const FOREIGN_RUN: &str = "foreign";
pub const FOREIGN_CONTROL: &str = "no-resume";

/// What one run does.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// `seq-ring`, `session-ack`, `snapshot`, or `no-seq` (the control: reconnects
    /// without Last-Event-ID).
    pub delivery: &'static str,
    pub disconnect: Disconnect,
    /// `within-ring` or `beyond-ring` (seq-ring, no-seq, snapshot); `within-queue`,
    /// `beyond-queue` or `beyond-ttl` (session-ack).
    pub case: &'static str,
    pub clients: usize,
    pub away: Duration,
}

/// Timing shared by every run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    /// Receiving before leaving, and after coming back.
    pub before: Duration,
    pub after: Duration,
    /// Poll `/poll?since` instead of holding an SSE stream.
    pub poll: bool,
    /// A WebSocket (`/ws?since`) instead of SSE.
    pub ws: bool,
    pub rate: f64,
}

impl Phases {
    /// At least 1 s, and at least 3 messages at `rate`.
    pub fn for_rate(rate: f64) -> Phases {
        let d = Duration::from_secs_f64((3.0 / rate.max(1e-3)).clamp(1.0, 60.0));
        Phases {
            before: d,
            after: d,
            poll: false,
            ws: false,
            rate,
        }
    }
}

/// The result of one client.
#[derive(Debug, Clone, Default)]
pub struct ClientResult {
    pub trace: Trace,
    /// From reconnect to the first message published after it.
    pub resume_ms: Option<f64>,
    /// session-ack: the server's bytes for this client's session just before it came back.
    pub session_bytes: Option<u64>,
    /// snapshot: the first message after reconnecting was older than the latest published
    /// before it (not the latest state).
    pub stale_first: bool,
    /// session-ack: the server answered the reconnect with a new session (reset); or a
    /// reset marker came (the server's epoch changed: it restarted).
    pub reset: bool,
    /// `server-restart`: what it received from the old instance (`trace` is the new one's).
    pub before: Option<Trace>,
    /// The server (rtcheck's or a foreign one) ended this client's stream with an error
    /// close (not 1000, 1001 or 1012) after it had received messages: the close, as one
    /// phrase (the cause of what it then missed, which the seq accounting counts).
    pub closed: Option<String>,
    /// Its stream after the reconnect ended (a close of any code, a reset, an EOF)
    /// before the phase's end: what was published after that is counted as its loss.
    pub ended_early: bool,
}

/// A client's current connection.
enum Conn {
    Sse(SseConn),
    Ws(WsConn),
    Poll(PollConn),
}

impl Conn {
    /// Connect fresh (`resume` None) or resume: after a seq, or (session-ack) with the
    /// session id.
    fn open(
        addr: SocketAddr,
        ph: Phases,
        delivery: &str,
        resume: Option<String>,
    ) -> anyhow::Result<Conn> {
        let session = (delivery == "session-ack").then(|| resume.clone().unwrap_or_default());
        let (since, session) = match session {
            Some(id) => (None, Some(id)),
            None => (resume, None),
        };
        if ph.ws {
            let c = WsConn::open(addr, since.as_deref(), session.as_deref())?;
            return Ok(Conn::Ws(c));
        }
        if !ph.poll {
            let c = SseConn::open(addr, since.as_deref(), session.as_deref())?;
            return Ok(Conn::Sse(c));
        }
        let pos = since.map(|r| rtcheck_wire::epoch::Position::parse(&r));
        let from = match (pos.map(|p| p.seq), &session) {
            (Some(s), _) => s,
            // A new session holds nothing from before it: start at 0.
            (None, Some(_)) => 0,
            (None, None) => {
                latest_seq(addr).ok_or_else(|| anyhow!("{addr}: /poll has no `latest`"))?
            }
        };
        let c = PollConn::new(addr, from, ph.rate).in_epoch(pos.and_then(|p| p.epoch));
        Ok(Conn::Poll(match session {
            Some(id) => c.with_session(&id),
            None => c,
        }))
    }

    fn session(&self) -> Option<&super::client::SessionState> {
        match self {
            Conn::Sse(c) => c.session.as_ref(),
            Conn::Ws(c) => c.session.as_ref(),
            Conn::Poll(c) => c.session.as_ref(),
        }
    }

    fn recv_until(
        &mut self,
        until: Instant,
        t: &mut Trace,
        f: &mut dyn FnMut(u64),
    ) -> anyhow::Result<()> {
        match self {
            Conn::Sse(c) => c.recv_until(until, t, f),
            Conn::Ws(c) => c.recv_until(until, t, f),
            Conn::Poll(c) => c.recv_until(until, t, f),
        }
    }

    /// Where it would resume: the last seq it has, or (session-ack) its session.
    fn resume_point(&self) -> Option<String> {
        if let Some(s) = self.session() {
            return s.id.clone();
        }
        match self {
            Conn::Sse(c) => c.last_id(),
            Conn::Ws(c) => c.last_id(),
            Conn::Poll(c) => Some(c.position()),
        }
    }

    /// The error close that ended its stream after messages (WebSocket only).
    fn closed(&self) -> Option<String> {
        match self {
            Conn::Ws(c) => c.closed.clone(),
            _ => None,
        }
    }

    /// Leave; a silent SSE client keeps its socket until it comes back.
    fn leave(self, kind: Disconnect) -> Option<std::net::TcpStream> {
        match self {
            Conn::Sse(c) => c.leave(kind),
            Conn::Ws(c) => c.leave(kind),
            Conn::Poll(_) => None,
        }
    }
}

/// One client's whole life.
pub fn client(
    addr: SocketAddr,
    spec: &RunSpec,
    ph: Phases,
    storm: &Barrier,
) -> anyhow::Result<ClientResult> {
    let mut t = Trace::default();
    let first = (|| {
        let mut c = Conn::open(addr, ph, spec.delivery, None)?;
        c.recv_until(Instant::now() + ph.before, &mut t, &mut |_| {})?;
        let Some(&first) = t.seqs.first() else {
            bail!("{addr}: no message within {:?} of connecting", ph.before);
        };
        t.first_expected = first;
        let resume_id = (spec.delivery != "no-seq")
            .then(|| c.resume_point())
            .flatten();
        if spec.delivery == "session-ack" && resume_id.is_none() {
            bail!("{addr}: no session issued at connect (session-ack)");
        }
        let last_before = t.seqs.iter().copied().max().unwrap_or(0);
        Ok((c, resume_id, last_before))
    })();
    // A storm's barriers are met on every path: one failing client must not strand
    // the others of its run (they would wait for it forever).
    let storming = spec.disconnect == Disconnect::Storm;
    if storming {
        storm.wait();
    }
    let (first, held, mut closed) = match first {
        Ok((c, id, last)) => {
            let closed = c.closed();
            (Ok((id, last)), c.leave(spec.disconnect), closed)
        }
        Err(e) => (Err(e), None, None),
    };
    let slept = sleep_checked(spec.away);
    drop(held);
    let first = first.and_then(|f| slept.map(|_| f));
    let session_bytes = match (spec.delivery, &first) {
        ("session-ack", Ok((Some(id), _))) => super::client::session_bytes(addr, id),
        _ => None,
    };
    if storming {
        storm.wait();
    }
    let (resume_id, last_before) = first?;
    let latest = latest_seq(addr);
    let t0 = Instant::now();
    let mut c = Conn::open(addr, ph, spec.delivery, resume_id)?;
    let (mut resume_ms, mut first_after) = (None, None);
    let until = Instant::now() + ph.after;
    c.recv_until(until, &mut t, &mut |seq| {
        first_after.get_or_insert(seq);
        if resume_ms.is_none() && latest.is_none_or(|l| seq > l) {
            resume_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        }
    })?;
    let ended_early = settle_owed(addr, until, &mut t)?;
    let reset = c.session().is_some_and(|s| s.reset);
    closed = closed.or(c.closed());
    let first_after = first_after.unwrap_or(0);
    // What the server announced instead of a gap marker: a reset session (everything
    // after the client's last seq is gone), or a snapshot replacing what came between.
    if (reset || spec.delivery == "snapshot") && first_after > last_before + 1 {
        t.gaps.push((last_before + 1, first_after - 1));
    }
    Ok(ClientResult {
        trace: t,
        resume_ms,
        session_bytes,
        stale_first: spec.delivery == "snapshot" && latest.is_some_and(|l| first_after < l),
        reset,
        before: None,
        closed,
        ended_early,
    })
}

/// After a phase read until `until` from rtcheck's server: whether the stream ended
/// early, and `t.last_published` set to what the client was owed ([`owed_up_to`]; when
/// it ended early, the server's latest seq at the phase's end, waited for).
fn settle_owed(addr: SocketAddr, until: Instant, t: &mut Trace) -> anyhow::Result<bool> {
    let ended_early = ended_before(until);
    let published = match ended_early {
        true => sleep_checked(until.saturating_duration_since(Instant::now()))
            .map(|_| latest_seq(addr))?,
        false => None,
    };
    t.last_published = owed_up_to(t, published);
    Ok(ended_early)
}

/// A stream that returned before `until` (not interrupted) ended early: the server
/// closed or reset it.
pub(super) fn ended_before(until: Instant) -> bool {
    Instant::now() < until && !interrupted()
}

/// Pure: the last seq a client is owed: the highest it received, or, when its stream
/// ended early, what had been published by the phase's end (`published`), so the rest
/// of the phase counts as its loss instead of going unmeasured.
pub fn owed_up_to(t: &Trace, published: Option<u64>) -> u64 {
    let got = t.seqs.iter().copied().max().unwrap_or(0);
    published.map_or(got, |p| p.max(got))
}

/// Where the clients of a `server-restart` run meet the orchestrator: all connected and
/// receiving (it then restarts the server), and the server back (they then resume).
pub struct Gate {
    ready: Barrier,
    back: Barrier,
    /// The restart failed: the clients give up instead of resuming.
    failed: std::sync::atomic::AtomicBool,
}

impl Gate {
    pub fn new(clients: usize) -> Gate {
        Gate {
            ready: Barrier::new(clients + 1),
            back: Barrier::new(clients + 1),
            failed: Default::default(),
        }
    }
}

/// How long a client connected through a restart waits for the old server to close it.
const RESTART_EOF: Duration = Duration::from_secs(20);

/// One client of a `server-restart` run: connected to the old instance, it reads until
/// the server goes away (a poller just stops), then resumes on the new instance from its
/// last position, as it would from any disconnect. Both barriers are always met, so one
/// failing client never strands the others.
pub fn restart_client(
    addr: SocketAddr,
    spec: &RunSpec,
    ph: Phases,
    gate: &Gate,
) -> anyhow::Result<ClientResult> {
    let mut before = Trace::default();
    let first = (|| {
        let mut c = Conn::open(addr, ph, spec.delivery, None)?;
        c.recv_until(Instant::now() + ph.before, &mut before, &mut |_| {})?;
        Ok::<_, anyhow::Error>(c)
    })();
    gate.ready.wait();
    let held = first.and_then(|mut c| {
        if !ph.poll {
            c.recv_until(Instant::now() + RESTART_EOF, &mut before, &mut |_| {})?;
        }
        Ok((c.resume_point(), c.closed()))
    });
    gate.back.wait();
    let (resume_id, closed) = held?;
    if gate.failed.load(std::sync::atomic::Ordering::SeqCst) {
        bail!("{addr}: the server did not come back after its restart");
    }
    let Some(&first) = before.seqs.first() else {
        bail!("{addr}: no message within {:?} of connecting", ph.before);
    };
    before.first_expected = first;
    let latest = latest_seq(addr);
    let t0 = Instant::now();
    let mut t = Trace::default();
    let mut c = Conn::open(addr, ph, spec.delivery, resume_id)?;
    let (mut resume_ms, mut first_after) = (None, None);
    let until = Instant::now() + ph.after;
    c.recv_until(until, &mut t, &mut |seq| {
        first_after.get_or_insert(seq);
        if resume_ms.is_none() && latest.is_none_or(|l| seq > l) {
            resume_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        }
    })?;
    // On the new instance too (seq_account::count_restart reads it).
    let ended_early = settle_owed(addr, until, &mut t)?;
    let reset = t.resets > 0 || c.session().is_some_and(|s| s.reset);
    // A new session, or a snapshot: what came before the first message is replaced by
    // it, announced only by the reset.
    let first_after = first_after.unwrap_or(0);
    if reset && spec.delivery != "seq-ring" && first_after > 1 {
        t.gaps.push((1, first_after - 1));
    }
    Ok(ClientResult {
        trace: t,
        resume_ms,
        reset,
        before: Some(before),
        closed: closed.or(c.closed()),
        ended_early,
        ..ClientResult::default()
    })
}

/// A `server-restart` run: its clients, and `restart` (stop the server, start a new one on
/// the same port) once they are all connected.
pub fn run_restart(
    addr: SocketAddr,
    spec: &RunSpec,
    ph: Phases,
    restart: &(dyn Fn() -> anyhow::Result<()> + Sync),
) -> anyhow::Result<Run> {
    let gate = Gate::new(spec.clients);
    let results = std::thread::scope(|s| {
        let hs: Vec<_> = (0..spec.clients)
            .map(|_| s.spawn(|| restart_client(addr, spec, ph, &gate)))
            .collect();
        gate.ready.wait();
        let restarted = restart();
        if restarted.is_err() {
            gate.failed.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        gate.back.wait();
        let results = hs
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| anyhow!("a delivery client panicked"))?
            })
            .collect::<anyhow::Result<Vec<_>>>();
        restarted.and(results)
    })?;
    Ok(summarize(spec, &results, 0))
}

pub(super) fn sleep_checked(d: Duration) -> anyhow::Result<()> {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if interrupted() {
            bail!("interrupted");
        }
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
    Ok(())
}

/// p50 and max of the resume time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ResumeMs {
    pub p50: f64,
    pub max: f64,
}

/// One row of `runs[]` (the JSON contract of issue 12).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    pub delivery: String,
    pub disconnect: String,
    pub case: String,
    pub away_ms: u64,
    pub clients: u64,
    #[serde(flatten)]
    pub counts: Counts,
    pub resume_ms: ResumeMs,
    /// The server's ring (messages × size), as `choose` sizes it; 0 when unknown.
    pub ring_bytes: u64,
    /// Session memory per client (session-ack: the largest session measured on the server
    /// just before its client came back); 0 in the other modes.
    pub session_bytes_per_client: u64,
    /// session-ack: session_bytes_per_client x the profile's connections, all away at once.
    pub sessions_worst_case_bytes: u64,
    /// session-ack: clients whose session was gone on reconnect (a reported reset).
    pub resets: u64,
    /// snapshot: clients whose first message after reconnecting was not the latest state.
    pub stale_snapshots: u64,
    /// pass, warn or fail, and why.
    pub verdict: String,
    pub status: crate::findings::Status,
}

/// Sum the clients of a run and judge it.
pub fn summarize(spec: &RunSpec, results: &[ClientResult], ring_bytes: u64) -> Run {
    let mut counts = Counts::default();
    // The old instance's last seq, as far as any client saw it.
    let old_end = results
        .iter()
        .filter_map(|r| r.before.as_ref()?.seqs.iter().copied().max())
        .max()
        .unwrap_or(0);
    for r in results {
        let c = match &r.before {
            Some(b) => seq_account::count_restart(b, &r.trace, old_end, r.reset),
            None if spec.delivery == "no-seq" => seq_account::count_without_seq(&r.trace),
            None => seq_account::count(&r.trace),
        };
        counts.add(&c);
    }
    let resumes: Vec<f64> = results.iter().filter_map(|r| r.resume_ms).collect();
    let (p50, max) = seq_account::p50_max(&resumes);
    let stale = results.iter().filter(|r| r.stale_first).count() as u64;
    let resets = results.iter().filter(|r| r.reset).count() as u64;
    let (status, verdict) = verdict(spec, &counts, resumes.len(), results.len());
    let untold = match spec.case {
        RESTART => results.len() as u64 - resets,
        _ => 0,
    };
    let notes: Vec<String> = [ended_note(results), closed_note(results)]
        .into_iter()
        .flatten()
        .collect();
    let (status, verdict) = match notes.is_empty() {
        true => (status, verdict),
        false => (
            status.max(crate::findings::Status::Warn),
            format!("{verdict}; {}", notes.join("; ")),
        ),
    };
    let (status, verdict) = match (stale, untold) {
        (0, 0) => (status, verdict),
        (0, n) => (
            crate::findings::Status::Fail,
            format!("{n} client(s) resumed across the server restart without a reset marker"),
        ),
        (n, _) => (
            crate::findings::Status::Fail,
            format!("{n} client(s) got an older message than the latest state first"),
        ),
    };
    Run {
        delivery: spec.delivery.into(),
        disconnect: spec.disconnect.name().into(),
        case: spec.case.into(),
        away_ms: spec.away.as_millis() as u64,
        clients: results.len() as u64,
        counts,
        resume_ms: ResumeMs { p50, max },
        ring_bytes,
        session_bytes_per_client: results
            .iter()
            .filter_map(|r| r.session_bytes)
            .max()
            .unwrap_or(0),
        sessions_worst_case_bytes: 0,
        resets,
        stale_snapshots: stale,
        verdict,
        status,
    }
}

/// Pure: the clients whose stream ended early after the reconnect (any close, a reset),
/// named: what was published after it is counted as their loss.
fn ended_note(results: &[ClientResult]) -> Option<String> {
    match results.iter().filter(|r| r.ended_early).count() {
        0 => None,
        n => Some(format!(
            "{n} client(s)' stream ended early, before the phase's end (what was published after it counted as lost)"
        )),
    }
}

/// Pure: the clients the server (rtcheck's or a foreign one) ended with an error close
/// after they had received messages, named (how many, and one of their closes): the
/// cause of what they missed.
fn closed_note(results: &[ClientResult]) -> Option<String> {
    let closed: Vec<&String> = results.iter().filter_map(|r| r.closed.as_ref()).collect();
    let first = closed.first()?;
    Some(match closed.len() {
        1 => format!("the server ended 1 client's stream with {first}"),
        n => format!(
            "the server ended {n} clients' streams with an error close, one of them with {first}"
        ),
    })
}

/// The rules of issue 12: seq-ring passes only with 0 lost silently; within the ring it
/// loses 0; beyond it every loss is in a gap marker (and there must be one, or the run
/// did not test the overflow). The no-seq control shows silent loss.
pub fn verdict(
    spec: &RunSpec,
    c: &Counts,
    resumed: usize,
    clients: usize,
) -> (crate::findings::Status, String) {
    use crate::findings::Status::*;
    // No client: nothing was measured, and nothing passes on nothing.
    if clients == 0 {
        return (Fail, "invalid: no client ran, nothing was measured".into());
    }
    if resumed < clients {
        return (
            Fail,
            format!(
                "invalid: {} of {clients} client(s) got no live message after reconnecting",
                clients - resumed
            ),
        );
    }
    match spec.delivery {
        "no-seq" | FOREIGN_CONTROL => control_verdict(spec, c),
        FOREIGN_RUN => foreign_verdict(spec, c),
        _ => own_verdict(spec, c),
    }
}

/// The controls (no seq numbers, or a foreign server without --resume): they pass by
/// showing silent loss; losing nothing means the disconnect was too short to show it.
fn control_verdict(spec: &RunSpec, c: &Counts) -> (crate::findings::Status, String) {
    use crate::findings::Status::*;
    match (spec.delivery, c.lost_silently) {
        ("no-seq", 0) => (
            Warn,
            "control lost nothing: the disconnect was too short to show silent loss".into(),
        ),
        ("no-seq", n) => (
            Pass,
            format!("control: {n} message(s) vanished silently without seq numbers"),
        ),
        (_, 0) => (
            Warn,
            "control lost nothing without --resume: the disconnect was too short to show what the resume keeps, or the server resumes by itself".into(),
        ),
        (_, n) => (
            Pass,
            format!(
                "control: {n} message(s) vanished silently when reconnecting without --resume"
            ),
        ),
    }
}

/// A foreign server resumed with --resume: silent loss fails, announced loss passes.
fn foreign_verdict(spec: &RunSpec, c: &Counts) -> (crate::findings::Status, String) {
    use crate::findings::Status::*;
    match spec.case {
        "none" if c.lost_silently > 0 => (
            Fail,
            format!(
                "{} message(s) lost silently: the server was given no way to resume (--resume) and said nothing of what the client missed",
                c.lost_silently
            ),
        ),
        _ if c.lost_silently > 0 => (
            Fail,
            format!(
                "{} message(s) lost silently: the server did not resume from the client's position ({}) and said nothing of what it missed",
                c.lost_silently, spec.case
            ),
        ),
        _ if c.lost > 0 => (
            Pass,
            format!("all {} lost message(s) announced in gap markers", c.lost),
        ),
        _ => (
            Pass,
            format!(
                "0 lost after a {} disconnect ({}); {} duplicate(s), {} out of order",
                spec.disconnect.name(),
                spec.case,
                c.duplicated,
                c.out_of_order
            ),
        ),
    }
}

/// rtcheck's own server (seq-ring, session-ack, snapshot): 0 lost silently, 0 lost within
/// the ring or queue, and beyond it every loss announced (with a gap to show it).
fn own_verdict(spec: &RunSpec, c: &Counts) -> (crate::findings::Status, String) {
    use crate::findings::Status::*;
    match (spec.delivery, spec.case) {
        (_, _) if c.lost_silently > 0 => (
            Fail,
            format!(
                "{} message(s) lost silently (no gap marker)",
                c.lost_silently
            ),
        ),
        (_, RESTART) => (
            Pass,
            format!(
                "told of the restart: 0 lost silently; {} lost with the old instance or the new ring, all announced",
                c.lost
            ),
        ),
        ("snapshot", _) => (
            Pass,
            format!(
                "the first message after reconnecting was the latest state ({} older one(s) replaced by it)",
                c.gaps
            ),
        ),
        ("session-ack", "within-queue") if c.lost > 0 => (
            Fail,
            format!("{} message(s) lost within the session's queue and TTL", c.lost),
        ),
        ("session-ack", "within-queue") => (
            Pass,
            format!(
                "0 lost; {} duplicate(s), all filtered by seq",
                c.duplicated
            ),
        ),
        (_, "within-ring") if c.lost > 0 => (
            Fail,
            format!(
                "{} message(s) lost within the ring (reported in gap markers)",
                c.lost
            ),
        ),
        (_, "within-ring") => (Pass, "0 lost within the ring".into()),
        _ => beyond_verdict(spec, c),
    }
}

/// Pure: away longer than the ring or the queue holds: every loss must be announced (and
/// there must be a gap, or the run did not test the overflow).
fn beyond_verdict(spec: &RunSpec, c: &Counts) -> (crate::findings::Status, String) {
    use crate::findings::Status::*;
    match (spec.delivery, spec.case) {
        (_, _) if c.gaps == 0 => (
            Warn,
            format!(
                "nothing overflowed or expired: no gap to check ({}; stay away longer)",
                spec.case
            ),
        ),
        ("session-ack", "beyond-ttl") => (
            Pass,
            format!(
                "session expired: all {} lost message(s) announced by a reset",
                c.lost
            ),
        ),
        _ => (
            Pass,
            format!(
                "beyond the {}: all {} lost message(s) announced in gap markers",
                if spec.case == "beyond-ring" {
                    "ring"
                } else {
                    "queue"
                },
                c.lost
            ),
        ),
    }
}

/// Run every spec at once against `addr`; each client is a thread.
pub fn run_all(
    addr: SocketAddr,
    specs: &[RunSpec],
    ph: Phases,
    ring_bytes: u64,
) -> anyhow::Result<Vec<Run>> {
    run_all_with(specs, ring_bytes, &|spec, storm| {
        client(addr, spec, ph, storm)
    })
}

/// What one client of a run does (rtcheck's server or a foreign one).
pub type ClientFn<'a> = dyn Fn(&RunSpec, &Barrier) -> anyhow::Result<ClientResult> + Sync + 'a;

/// Run every spec at once, each client a thread running `client`.
pub fn run_all_with(
    specs: &[RunSpec],
    ring_bytes: u64,
    client: &ClientFn,
) -> anyhow::Result<Vec<Run>> {
    let out = std::thread::scope(|s| {
        let handles: Vec<_> = specs
            .iter()
            .map(|spec| {
                s.spawn(move || {
                    let storm = Barrier::new(spec.clients);
                    let results = std::thread::scope(|s2| {
                        let hs: Vec<_> = (0..spec.clients)
                            .map(|_| s2.spawn(|| client(spec, &storm)))
                            .collect();
                        hs.into_iter()
                            .map(|h| {
                                h.join()
                                    .map_err(|_| anyhow!("a delivery client panicked"))?
                            })
                            .collect::<anyhow::Result<Vec<_>>>()
                    })?;
                    Ok::<_, anyhow::Error>(summarize(spec, &results, ring_bytes))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| anyhow!("a delivery run panicked"))?)
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Status;

    fn spec(delivery: &'static str, case: &'static str) -> RunSpec {
        RunSpec {
            delivery,
            disconnect: Disconnect::Clean,
            case,
            clients: 2,
            away: Duration::from_secs(1),
        }
    }

    fn counts(lost: u64, silent: u64, gaps: u64) -> Counts {
        Counts {
            received: 10,
            lost,
            lost_silently: silent,
            gaps,
            ..Counts::default()
        }
    }

    #[test]
    fn seq_ring_verdicts() {
        let v = |case, c| verdict(&spec("seq-ring", case), &c, 2, 2).0;
        assert_eq!(v("within-ring", counts(0, 0, 0)), Status::Pass);
        assert_eq!(v("within-ring", counts(3, 0, 3)), Status::Fail);
        assert_eq!(v("within-ring", counts(3, 1, 2)), Status::Fail);
        assert_eq!(v("beyond-ring", counts(5, 0, 5)), Status::Pass);
        assert_eq!(v("beyond-ring", counts(5, 2, 3)), Status::Fail);
        assert_eq!(v("beyond-ring", counts(0, 0, 0)), Status::Warn);
    }

    #[test]
    fn control_and_invalid_runs() {
        let s = spec("no-seq", "within-ring");
        assert_eq!(verdict(&s, &counts(7, 7, 0), 2, 2).0, Status::Pass);
        assert_eq!(verdict(&s, &counts(0, 0, 0), 2, 2).0, Status::Warn);
        let (st, why) = verdict(&spec("seq-ring", "within-ring"), &counts(0, 0, 0), 1, 2);
        assert_eq!(st, Status::Fail);
        assert!(why.starts_with("invalid"), "{why}");
        // No client at all: invalid, not "0 lost within the ring".
        let (st, why) = verdict(&spec("seq-ring", "within-ring"), &counts(0, 0, 0), 0, 0);
        assert_eq!(st, Status::Fail);
        assert!(why.starts_with("invalid"), "{why}");
    }

    #[test]
    fn summary_sums_clients_and_uses_the_control_counting() {
        let r = |seqs: &[u64], gaps: &[(u64, u64)]| ClientResult {
            trace: Trace {
                seqs: seqs.to_vec(),
                gaps: gaps.to_vec(),
                first_expected: 1,
                last_published: 6,
                resets: 0,
            },
            resume_ms: Some(2.0),
            ..ClientResult::default()
        };
        let results = [r(&[1, 2, 5, 6], &[(3, 4)]), r(&[1, 2, 3, 4, 5, 6], &[])];
        let run = summarize(&spec("seq-ring", "beyond-ring"), &results, 100);
        assert_eq!(
            (run.counts.lost, run.counts.lost_silently, run.counts.gaps),
            (2, 0, 2)
        );
        assert_eq!(run.status, Status::Pass);
        let run = summarize(&spec("no-seq", "within-ring"), &results, 100);
        assert_eq!((run.counts.lost_silently, run.counts.gaps), (2, 0));
        assert_eq!(run.resume_ms, ResumeMs { p50: 2.0, max: 2.0 });
    }

    /// A client a foreign server closed with 1011 after messages arrived: its loss is
    /// counted (not discarded with the other clients'), and the close is named.
    #[test]
    fn a_client_closed_with_an_error_keeps_its_counts_and_names_the_close() {
        let ok = ClientResult {
            trace: Trace {
                seqs: vec![1, 2, 3, 4, 5, 6],
                first_expected: 1,
                last_published: 6,
                ..Trace::default()
            },
            resume_ms: Some(2.0),
            ..ClientResult::default()
        };
        let closed = ClientResult {
            trace: Trace {
                seqs: vec![1, 2, 6],
                first_expected: 1,
                last_published: 6,
                ..Trace::default()
            },
            resume_ms: Some(2.0),
            closed: Some("close 1011 (internal error)".into()),
            ..ClientResult::default()
        };
        let run = summarize(&spec("seq-ring", "within-ring"), &[ok.clone(), closed], 100);
        assert_eq!(run.counts.lost, 3, "{run:?}");
        assert_eq!(run.status, Status::Fail, "{run:?}");
        assert!(
            run.verdict.contains("close 1011 (internal error)"),
            "{}",
            run.verdict
        );
        // No loss, but a client's stream ended by an error close: not a plain pass.
        let closed = ClientResult {
            closed: Some("close 4500 (the application's code (as HTTP 500))".into()),
            ..ok.clone()
        };
        let run = summarize(&spec("seq-ring", "within-ring"), &[ok, closed], 100);
        assert_eq!(run.status, Status::Warn, "{run:?}");
        assert!(
            run.verdict.contains("1 client's stream with close 4500"),
            "{}",
            run.verdict
        );
    }

    /// A stream closed (1000) right after one message past the resume: the rest of the
    /// phase, published but never received, is counted as loss, and the verdict says the
    /// stream ended early.
    #[test]
    fn a_stream_that_ended_early_is_owed_what_was_published() {
        let trace = Trace {
            seqs: vec![1, 2, 3, 9],
            first_expected: 1,
            ..Trace::default()
        };
        assert_eq!(owed_up_to(&trace, None), 9);
        assert_eq!(owed_up_to(&trace, Some(20)), 20);
        // A latest below what it received (read from another answer) never shrinks it.
        assert_eq!(owed_up_to(&trace, Some(5)), 9);
        let mut early = ClientResult {
            trace,
            resume_ms: Some(2.0),
            ended_early: true,
            ..ClientResult::default()
        };
        early.trace.last_published = owed_up_to(&early.trace, Some(20));
        let run = summarize(&spec(FOREIGN_RUN, "since-query"), &[early.clone()], 0);
        // 4..=8 in the disconnect, 10..=20 after the close: 16 lost, none announced.
        assert_eq!((run.counts.lost, run.counts.lost_silently), (16, 16));
        assert_eq!(run.status, Status::Fail, "{run:?}");
        assert!(run.verdict.contains("ended early"), "{}", run.verdict);
        // Nothing published after the close: no loss, but not a plain pass either.
        early.trace.seqs = (1..=9).collect();
        early.trace.last_published = owed_up_to(&early.trace, Some(9));
        let run = summarize(&spec(FOREIGN_RUN, "since-query"), &[early], 0);
        assert_eq!(run.counts.lost, 0, "{run:?}");
        assert_eq!(run.status, Status::Warn, "{run:?}");
        assert!(run.verdict.contains("1 client(s)' stream ended early"));
    }
}
