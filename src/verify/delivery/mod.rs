//! Delivery guarantees, measured (issue 12): clients that disconnect in the ways real
//! clients do, reconnect, resume, and count from the seq numbers what they lost, saw
//! twice or out of order, and whether every loss was announced by a gap marker.
pub mod client;
pub mod foreign;
pub mod run;

use crate::findings::{Finding, Fix, Status, Summary};
use crate::sys::serve;
use anyhow::bail;
use client::Disconnect;
use rtcheck_base::os::deadline::Deadline;
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::transport::Transport;
use run::{Phases, Run, RunSpec};
use serde::Serialize;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Modes this build can measure; the others are reported as skipped, never as passed.
pub const MEASURED: [Delivery; 3] = Delivery::WEAKEST_FIRST;
/// A run's case: within the ring or the session queue, beyond them, beyond the session
/// TTL, (snapshot) the latest state first, or across a restart of the server on the same
/// port (`server-restart`: a new epoch; the clients must get a reset marker).
pub const CASES: [&str; 7] = [
    "within-ring",
    "beyond-ring",
    "within-queue",
    "beyond-queue",
    "beyond-ttl",
    "latest-first",
    run::RESTART,
];

/// The finding id of one run (`delivery-seq-ring-reset-within-ring`).
pub fn finding_id(delivery: &str, disconnect: &str, case: &str) -> String {
    format!("delivery-{delivery}-{disconnect}-{case}")
}

/// Every finding id `verify delivery` can emit (a superset): one per mode (or the no-seq
/// control), disconnect kind and case, and `delivery-MODE` for a mode not measured.
pub fn finding_ids() -> Vec<String> {
    let modes = Delivery::WEAKEST_FIRST.map(Delivery::name);
    let mut v: Vec<String> = modes.iter().map(|m| format!("delivery-{m}")).collect();
    for m in modes.iter().chain(&["no-seq"]) {
        for d in client::Disconnect::ALL {
            for c in CASES {
                v.push(finding_id(m, d.name(), c));
            }
        }
    }
    for d in client::Disconnect::ALL {
        for c in ["none", "last-event-id", "since-query", "resume-message"] {
            v.push(finding_id(run::FOREIGN_RUN, d.name(), c));
        }
    }
    v.push(finding_id(run::FOREIGN_CONTROL, "clean", "none"));
    v
}

/// `--transport`'s spelling of a transport, also the JSON's (`poll` for polling).
pub fn transport_flag(t: Transport) -> &'static str {
    match t {
        Transport::Polling => "poll",
        Transport::Sse => "sse",
        Transport::Websocket => "websocket",
        Transport::Raw => "raw",
    }
}

/// The transport `--transport` names (sse, websocket or poll).
pub fn parse_transport_flag(s: &str) -> Option<Transport> {
    let clients = [Transport::Sse, Transport::Websocket, Transport::Polling];
    clients.into_iter().find(|t| transport_flag(*t) == s)
}

fn serialize_transport<S: serde::Serializer>(t: &Transport, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(transport_flag(*t))
}

/// The experiment's inputs (flags or profile defaults, resolved by the command layer).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeliveryOptions {
    pub delivery: Vec<Delivery>,
    /// The clients' transport; `raw` is refused by [`DeliveryOptions::validate`].
    #[serde(serialize_with = "serialize_transport")]
    pub transport: Transport,
    pub connections: u64,
    pub rate: f64,
    pub size: u64,
    #[serde(with = "rtcheck_base::units::serde_duration")]
    pub max_disconnect: Duration,
    /// Ring in messages (a byte size is converted by the caller: bytes / size).
    pub ring_messages: u64,
    /// session-ack: how long the server keeps a disconnected client's session.
    #[serde(with = "rtcheck_base::units::serde_duration")]
    pub session_ttl: Duration,
    /// The profile's connections: sizes `sessions_worst_case_bytes` (not all opened).
    pub profile_connections: u64,
    /// Another server (loopback only); None starts `rtcheck serve`.
    pub server: Option<SocketAddr>,
    #[serde(with = "rtcheck_base::units::serde_duration")]
    pub timeout: Duration,
    /// A server rtcheck did not write, published to by rtcheck (`--publish`): the
    /// foreign runs replace the delivery modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub foreign: Option<foreign::ForeignTarget>,
    /// What `--profile` narrowed the run to, said in the output (None: no narrowing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `--allow-remote` (issue 37): a foreign `server` off loopback is consented to.
    #[serde(skip)]
    pub allow_remote: bool,
}

/// Most clients one run opens (each is a thread and two sockets over its life).
pub const MAX_CLIENTS: u64 = 500;

impl DeliveryOptions {
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.connections > MAX_CLIENTS {
            bail!(
                "--connections {}: at most {MAX_CLIENTS} clients per run",
                self.connections
            );
        }
        if !(0.1..=10_000.0).contains(&self.rate) {
            bail!("--rate {}: must be 0.1 ..= 10000 messages/s", self.rate);
        }
        if !(64..=1 << 20).contains(&self.size) {
            bail!("--size {}: must be 64 ..= 1048576 bytes", self.size);
        }
        if self.max_disconnect.is_zero() || self.max_disconnect > Duration::from_secs(600) {
            bail!("--max-disconnect: must be more than 0 and at most 10m");
        }
        if !(1..=1 << 20).contains(&self.ring_messages) {
            bail!(
                "--ring: {} messages; must be 1 ..= 1048576",
                self.ring_messages
            );
        }
        if self.session_ttl.is_zero() || self.session_ttl > Duration::from_secs(86_400) {
            bail!("--session-ttl: must be more than 0 and at most 1day");
        }
        if self.transport == Transport::Raw {
            bail!(
                "--transport {}: sse, websocket or poll",
                transport_flag(self.transport)
            );
        }
        Ok(())
    }

    /// The ring's bytes as `choose` counts them: messages × size.
    pub fn ring_bytes(&self) -> u64 {
        self.ring_messages * self.size
    }

    /// The server modes to start, in order: the asked ones (the control runs on the first).
    pub fn servers(&self) -> Vec<&'static str> {
        Delivery::WEAKEST_FIRST
            .iter()
            .filter(|m| self.delivery.contains(m))
            .map(|m| m.name())
            .collect()
    }

    /// Time the ring covers at the rate.
    pub fn ring_span(&self) -> Duration {
        Duration::from_secs_f64(self.ring_messages as f64 / self.rate)
    }
}

/// The default ring: `choose`'s sizing (max_disconnect × rate) plus one second of
/// messages for the reconnect itself, at least 16.
pub fn default_ring_messages(rate: f64, max_disconnect: Duration) -> u64 {
    ((max_disconnect.as_secs_f64() * rate).ceil() + rate.ceil()).max(16.0) as u64
}

/// The default session TTL: twice the longer of the max disconnect and the ring's span
/// (the session queue holds the ring's messages), plus one second for the reconnect, so a
/// client within both keeps its session with margin, and one that overflows its queue
/// still finds it.
pub fn default_session_ttl(max_disconnect: Duration, ring_span: Duration) -> Duration {
    max_disconnect.max(ring_span) * 2 + Duration::from_secs(1)
}

/// Longest away time of a `beyond-ttl` run: beyond it the case is left out (say so).
const MAX_TTL_CASE: Duration = Duration::from_secs(60);

fn kinds(o: &DeliveryOptions) -> &'static [Disconnect] {
    // A polling client has no connection to close: it only stops polling.
    match o.transport {
        Transport::Polling => &[Disconnect::Clean, Disconnect::Storm],
        _ => &Disconnect::ALL,
    }
}

fn spec(
    delivery: &'static str,
    d: Disconnect,
    case: &'static str,
    n: usize,
    away: Duration,
) -> RunSpec {
    RunSpec {
        delivery,
        disconnect: d,
        case,
        clients: n,
        away,
    }
}

/// The runs of each asked mode, plus the no-seq control: seq-ring for every disconnect
/// kind within the ring and one clean run beyond it; session-ack for every kind within
/// the queue, one beyond the queue and one beyond the TTL; snapshot for every kind.
pub fn specs(o: &DeliveryOptions) -> Vec<RunSpec> {
    let n = o.connections as usize;
    let mut v = Vec::new();
    let has = |m: &str| o.delivery.iter().any(|d| d.name() == m);
    if has("snapshot") {
        for &d in kinds(o) {
            v.push(spec("snapshot", d, "latest-first", n, o.max_disconnect));
        }
    }
    if has("session-ack") {
        for &d in kinds(o) {
            v.push(spec("session-ack", d, "within-queue", n, o.max_disconnect));
        }
        let over = o.ring_span().mul_f64(1.5).max(o.max_disconnect * 2);
        if over + Duration::from_secs(1) < o.session_ttl {
            v.push(spec(
                "session-ack",
                Disconnect::Clean,
                "beyond-queue",
                n,
                over,
            ));
        }
        if o.session_ttl <= MAX_TTL_CASE {
            let away = o.session_ttl + Duration::from_secs(1);
            v.push(spec(
                "session-ack",
                Disconnect::Clean,
                "beyond-ttl",
                n,
                away,
            ));
        }
    }
    if has("seq-ring") {
        for &d in kinds(o) {
            v.push(RunSpec {
                delivery: "seq-ring",
                disconnect: d,
                case: "within-ring",
                clients: n,
                away: o.max_disconnect,
            });
        }
        v.push(RunSpec {
            delivery: "seq-ring",
            disconnect: Disconnect::Clean,
            case: "beyond-ring",
            clients: n,
            away: o.ring_span().mul_f64(1.5).max(o.max_disconnect * 2),
        });
    }
    // A restart needs a server of our own (another one's is not ours to restart).
    if o.server.is_none() {
        for m in o.servers() {
            v.push(spec(m, Disconnect::Clean, run::RESTART, n, Duration::ZERO));
        }
    }
    v.push(RunSpec {
        delivery: "no-seq",
        disconnect: Disconnect::Clean,
        case: "within-ring",
        clients: n,
        away: o.max_disconnect,
    });
    v
}

/// How many runs the options make and about how long they take (they go at once: the
/// longest client life, plus a second to start the servers), for the progress line.
pub fn expected(o: &DeliveryOptions) -> (usize, Duration) {
    let ph = Phases::for_rate(o.rate);
    let runs = match &o.foreign {
        Some(t) => foreign::specs(t, o.connections as usize, o.max_disconnect),
        None => specs(o),
    };
    let longest = runs
        .iter()
        .map(|s| s.away)
        .max()
        .unwrap_or_default()
        .max(o.max_disconnect);
    (
        runs.len(),
        ph.before + longest + ph.after + Duration::from_secs(1),
    )
}

/// `choose`'s sizing for the profile (evidence `ring-sizing`, `session-ack`,
/// `session-expiry`), to compare the measured memory with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sized {
    pub ring_bytes: u64,
    pub session_bytes_per_client: u64,
    pub sessions_worst_case_bytes: u64,
    pub connections: u64,
}

impl Sized {
    pub fn of(o: &DeliveryOptions) -> Sized {
        let p = crate::profile::Profile {
            rate: o.rate,
            size: o.size,
            max_disconnect: o.max_disconnect,
            connections: o.profile_connections,
            ..crate::profile::Profile::default()
        };
        let s = crate::choose::sizing::size(&p);
        Sized {
            ring_bytes: s.ring_bytes,
            session_bytes_per_client: s.session_bytes_per_client,
            sessions_worst_case_bytes: s.sessions_worst_case_bytes,
            connections: o.profile_connections,
        }
    }
}

/// What `verify delivery` reports.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryReport {
    pub kind: &'static str,
    pub target: String,
    pub options: DeliveryOptions,
    /// `choose`'s sizing for these options, beside which the runs' measured memory sits.
    pub sizing: Sized,
    pub runs: Vec<Run>,
    pub findings: Vec<Finding>,
    pub summary: Summary,
    pub duration_ms: u64,
    /// A foreign server: what rtcheck's publisher achieved against its schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publisher: Option<crate::bench::wire::PublisherStat>,
    /// A foreign server's own process through the runs (sys::procwatch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_process: Option<crate::sys::procwatch::ServerProcess>,
    /// Why it was not measured (remote, not found, unreadable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_unmeasured: Option<String>,
    /// False when the report is not a valid measurement ([`invalid_reason`]: no run was
    /// made, or a run was invalid), its reason in `invalid_reason`.
    pub valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
}

/// The `rtcheck serve` flags for one delivery mode.
fn serve_flags(o: &DeliveryOptions, mode: &str) -> Vec<String> {
    let mut f: Vec<String> = vec![
        "--rate".into(),
        o.rate.to_string(),
        "--size".into(),
        o.size.to_string(),
        "--ring".into(),
        o.ring_messages.to_string(),
        "--delivery".into(),
        mode.into(),
    ];
    if mode == "session-ack" {
        f.push("--session-ttl".into());
        f.push(format!("{}ms", o.session_ttl.as_millis()));
    }
    f
}

/// The ring's bytes as the server holds them (every encoding), from /control/stats.
fn measured_ring_bytes(addr: SocketAddr) -> u64 {
    client::get(addr, "/control/stats")
        .ok()
        .and_then(|(_, b)| serde_json::from_str::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("ring_bytes")?.as_u64())
        .unwrap_or(0)
}

/// One mode's runs against one server (started here unless `--server`).
fn measure_mode(
    o: &DeliveryOptions,
    mode: &str,
    specs: &[RunSpec],
    budget: &Deadline,
) -> anyhow::Result<Vec<Run>> {
    let scratch = serve::Scratch::new("delivery")?;
    let (child, addr) = match o.server {
        Some(a) => (None, a),
        None => {
            let c = serve::start(&serve_flags(o, mode), &scratch.0, 1, budget)?;
            let a = c.addrs[0];
            (Some(c), a)
        }
    };
    let phases = Phases {
        poll: o.transport == Transport::Polling,
        ws: o.transport == Transport::Websocket,
        ..Phases::for_rate(o.rate)
    };
    let (restarts, specs): (Vec<RunSpec>, Vec<RunSpec>) =
        specs.iter().cloned().partition(|s| s.case == run::RESTART);
    // The restart runs on a server of its own, beside the others (same time).
    let (runs, restarted) = std::thread::scope(|s| {
        let h = s.spawn(|| restart_runs(o, mode, &restarts, phases, budget));
        let runs = run::run_all(addr, &specs, phases, 0);
        let restarted = h
            .join()
            .map_err(|_| anyhow::anyhow!("a server-restart run panicked"))
            .and_then(|r| r);
        (runs, restarted)
    });
    let mut runs = runs?;
    if child.is_some() {
        let ring = measured_ring_bytes(addr);
        for r in &mut runs {
            r.ring_bytes = ring;
        }
    }
    for r in runs.iter_mut().filter(|r| r.delivery == "session-ack") {
        r.sessions_worst_case_bytes = r
            .session_bytes_per_client
            .saturating_mul(o.profile_connections);
    }
    drop(child);
    runs.extend(restarted?);
    Ok(runs)
}

/// The `server-restart` runs of one mode: each on its own `rtcheck serve`, stopped with
/// SIGTERM once its clients are connected and started again on the same port.
fn restart_runs(
    o: &DeliveryOptions,
    mode: &str,
    specs: &[RunSpec],
    ph: Phases,
    budget: &Deadline,
) -> anyhow::Result<Vec<Run>> {
    let mut runs = Vec::new();
    for spec in specs {
        let scratch = serve::Scratch::new("delivery-restart")?;
        let flags = serve_flags(o, mode);
        let first = serve::start(&flags, &scratch.0, 1, budget)?;
        let addr = first.addrs[0];
        let server = std::sync::Mutex::new(Some(first));
        let restart = || -> anyhow::Result<()> {
            let mut g = server.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(mut old) = g.take() {
                old.guard.terminate(rtcheck_base::os::child::GRACE);
            }
            let listen = addr.to_string();
            *g = Some(serve::start_at(&listen, &flags, &scratch.0, 1, budget)?);
            Ok(())
        };
        runs.push(run::run_restart(addr, spec, ph, &restart)?);
    }
    Ok(runs)
}

/// Start one server per asked mode (unless `--server`), run every mode's specs at once,
/// judge.
pub fn measure(o: &DeliveryOptions) -> anyhow::Result<DeliveryReport> {
    o.validate()?;
    if let Some(a) = o
        .server
        .filter(|_| !(o.allow_remote && o.foreign.is_some()))
    {
        rtcheck_base::os::addr::ensure_loopback(&a)?;
    }
    let started = Instant::now();
    if let Some(t) = &o.foreign {
        let load = foreign::Load {
            clients: o.connections as usize,
            away: o.max_disconnect,
            rate: o.rate,
            size: o.size as usize,
        };
        // The server's own process, watched from outside for as long as the runs last.
        let watch = crate::sys::procwatch::find(t.server.target.addr, &t.pids)
            .map(|w| crate::sys::procwatch::Sampler::start(w, Duration::from_millis(500)));
        let (runs, stat) = foreign::measure(t, load)?;
        let (server_process, server_unmeasured) = match watch {
            Ok(s) => (Some(s.finish(0.0, f64::MAX, f64::MAX)), None),
            Err(why) => (None, Some(why)),
        };
        let findings = findings(o, &runs);
        let invalid_reason = invalid_reason(&runs);
        return Ok(DeliveryReport {
            kind: "verify-delivery",
            target: t.url.clone(),
            options: o.clone(),
            sizing: Sized::of(o),
            summary: Summary::of(&findings),
            runs,
            findings,
            duration_ms: started.elapsed().as_millis() as u64,
            publisher: Some(stat),
            server_process,
            server_unmeasured,
            valid: invalid_reason.is_none(),
            invalid_reason,
        });
    }
    let budget = Deadline::new(o.timeout);
    let all = specs(o);
    let servers = o.servers();
    let groups: Vec<(&str, Vec<RunSpec>)> = servers
        .iter()
        .enumerate()
        .map(|(i, &m)| {
            let mine = all
                .iter()
                .filter(|s| s.delivery == m || (i == 0 && s.delivery == "no-seq"))
                .cloned()
                .collect();
            (m, mine)
        })
        .collect();
    let results = std::thread::scope(|s| {
        let hs: Vec<_> = groups
            .iter()
            .map(|(m, specs)| s.spawn(|| measure_mode(o, m, specs, &budget)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| anyhow::anyhow!("a delivery mode panicked"))?
            })
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    let runs: Vec<Run> = results.into_iter().flatten().collect();
    let findings = findings(o, &runs);
    let invalid_reason = invalid_reason(&runs);
    Ok(DeliveryReport {
        kind: "verify-delivery",
        target: o
            .server
            .map_or("rtcheck serve".into(), |a| format!("http://{a}")),
        options: o.clone(),
        sizing: Sized::of(o),
        summary: Summary::of(&findings),
        runs,
        findings,
        duration_ms: started.elapsed().as_millis() as u64,
        publisher: None,
        server_process: None,
        server_unmeasured: None,
        valid: invalid_reason.is_none(),
        invalid_reason,
    })
}

/// Pure: why the report is not a valid measurement, None when it is. Nothing passes on
/// nothing: no run was made, or a run could not measure what it set out to (its verdict
/// says "invalid: ..."; it is a failing run too). The report says so (`valid: false`, a
/// JSON reader need not read each run), and the command writes it and exits 1.
pub fn invalid_reason(runs: &[Run]) -> Option<String> {
    if runs.is_empty() {
        return Some("invalid: nothing measured: no run was made".to_string());
    }
    let bad: Vec<&Run> = runs
        .iter()
        .filter(|r| r.verdict.starts_with("invalid"))
        .collect();
    let first = bad.first()?;
    Some(format!(
        "invalid: {} of {} run(s) could not measure what they set out to (first, {} {} {}: {})",
        bad.len(),
        runs.len(),
        first.delivery,
        first.disconnect,
        first.case,
        first.verdict.trim_start_matches("invalid: ")
    ))
}

/// One finding per run, plus a skip for each asked mode this build does not measure.
pub fn findings(o: &DeliveryOptions, runs: &[Run]) -> Vec<Finding> {
    let mut v: Vec<Finding> = runs.iter().map(finding).collect();
    for m in o.delivery.iter().filter(|m| !MEASURED.contains(m)) {
        v.push(Finding {
            location: None,
            id: format!("delivery-{m}"),
            title: format!("Delivery {m}: not measured"),
            status: Status::Skip,
            observed: "not measured".into(),
            expected: String::new(),
            rule: String::new(),
            reason: Some(format!(
                "--delivery {m} needs server support not built yet (issue 12)"
            )),
            evidence: vec![crate::evidence::reference(evidence_for(m.name(), ""))],
            fix: Fix::default(),
            verify: Some("delivery".into()),
            verification: None,
            numbers: Default::default(),
        });
    }
    v
}

fn evidence_for(delivery: &str, case: &str) -> &'static str {
    match (delivery, case) {
        ("no-seq" | run::FOREIGN_CONTROL, _) | (_, run::RESTART) => "seq-numbers",
        ("seq-ring", "beyond-ring") => "ring-sizing",
        ("seq-ring", _) => "ring-buffer",
        ("session-ack", "beyond-ttl") => "session-expiry",
        ("session-ack", _) => "session-ack",
        _ => "loss-dup-order",
    }
}

fn finding(r: &Run) -> Finding {
    let c = &r.counts;
    let numbers = [
        ("received", c.received as f64),
        ("lost", c.lost as f64),
        ("lost_silently", c.lost_silently as f64),
        ("duplicated", c.duplicated as f64),
        ("out_of_order", c.out_of_order as f64),
        ("gaps", c.gaps as f64),
        ("resume_ms_p50", r.resume_ms.p50),
        ("resume_ms_max", r.resume_ms.max),
        ("ring_bytes", r.ring_bytes as f64),
        (
            "session_bytes_per_client",
            r.session_bytes_per_client as f64,
        ),
        (
            "sessions_worst_case_bytes",
            r.sessions_worst_case_bytes as f64,
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Finding {
location: None,
        id: finding_id(&r.delivery, &r.disconnect, &r.case),
        title: match r.case.as_str() {
            run::RESTART => format!("{} across a restart of the server on its port", r.delivery),
            _ => format!(
                "{} after a {} disconnect of {} ms ({})",
                r.delivery, r.disconnect, r.away_ms, r.case
            ),
        },
        status: r.status,
        observed: format!(
            "{} client(s): received {}, lost {}, lost silently {}, duplicated {}, out of order {}, in gaps {}",
            r.clients, c.received, c.lost, c.lost_silently, c.duplicated, c.out_of_order, c.gaps
        ),
        expected: match r.delivery.as_str() {
            "no-seq" => "the control: loss without seq numbers is silent".into(),
            run::FOREIGN_CONTROL => "the control: reconnecting without the resume loses silently".into(),
            run::FOREIGN_RUN => "0 lost silently: the server resumes from the client's position, or announces what it cannot".into(),
            _ if r.case == run::RESTART => "a reset marker to every client; 0 lost silently".into(),
            "snapshot" => "the latest state first after reconnecting; 0 lost silently".into(),
            "session-ack" => "0 lost silently; 0 lost within the queue and TTL; duplicates filtered by seq".into(),
            _ => "0 lost silently; 0 lost within the ring".into(),
        },
        rule: r.verdict.clone(),
        reason: None,
        evidence: vec![
            crate::evidence::reference(evidence_for(&r.delivery, &r.case)),
            crate::evidence::reference("loss-dup-order"),
        ],
        fix: Fix::default(),
        verify: Some("delivery".into()),
        verification: None,
        numbers,
    }
}
