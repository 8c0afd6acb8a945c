//! Delivery guarantees, measured (issue 12): clients that disconnect in the ways real
//! clients do, reconnect, resume, and count from the seq numbers what they lost, saw
//! twice or out of order, and whether every loss was announced by a gap marker.
pub mod account;
pub mod client;
pub mod run;

use crate::findings::{Finding, Fix, Status, Summary};
use crate::sys::{budget::Budget, serve};
use anyhow::bail;
use client::Disconnect;
use run::{Phases, Run, RunSpec};
use serde::Serialize;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Delivery modes of `--delivery`.
pub const MODES: [&str; 3] = ["snapshot", "seq-ring", "session-ack"];
/// Modes this build can measure; the others are reported as skipped, never as passed.
pub const MEASURED: [&str; 1] = ["seq-ring"];
/// A run's case: within the ring, or away long enough to overflow it.
pub const CASES: [&str; 2] = ["within-ring", "beyond-ring"];

/// The finding id of one run (`delivery-seq-ring-reset-within-ring`).
pub fn finding_id(delivery: &str, disconnect: &str, case: &str) -> String {
    format!("delivery-{delivery}-{disconnect}-{case}")
}

/// Every finding id `verify delivery` can emit: one per mode (or the no-seq control),
/// disconnect kind and case, and `delivery-MODE` for a mode reported as not measured.
pub fn finding_ids() -> Vec<String> {
    let mut v: Vec<String> = MODES.iter().map(|m| format!("delivery-{m}")).collect();
    for m in MODES.iter().chain(&["no-seq"]) {
        for d in client::Disconnect::ALL {
            for c in CASES {
                v.push(finding_id(m, d.name(), c));
            }
        }
    }
    v
}

/// The experiment's inputs (flags or profile defaults, resolved by the command layer).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeliveryOptions {
    pub delivery: Vec<String>,
    pub transport: String,
    pub connections: u64,
    pub rate: f64,
    pub size: u64,
    #[serde(with = "crate::units::serde_duration")]
    pub max_disconnect: Duration,
    /// Ring in messages (a byte size is converted by the caller: bytes / size).
    pub ring_messages: u64,
    /// Another server (loopback only); None starts `rtcheck serve`.
    pub server: Option<SocketAddr>,
    #[serde(with = "crate::units::serde_duration")]
    pub timeout: Duration,
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
        if !["sse", "websocket", "poll"].contains(&self.transport.as_str()) {
            bail!("--transport {}: sse, websocket or poll", self.transport);
        }
        Ok(())
    }

    /// The ring's bytes as `choose` counts them: messages × size.
    pub fn ring_bytes(&self) -> u64 {
        self.ring_messages * self.size
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

/// The runs: seq-ring for every disconnect kind within the ring and one clean run
/// beyond it, plus the no-seq control.
pub fn specs(o: &DeliveryOptions) -> Vec<RunSpec> {
    let n = o.connections as usize;
    let mut v = Vec::new();
    if o.delivery.iter().any(|d| d == "seq-ring") {
        // A polling client has no connection to close: it only stops polling.
        let kinds: &[Disconnect] = match o.transport.as_str() {
            "poll" => &[Disconnect::Clean, Disconnect::Storm],
            _ => &Disconnect::ALL,
        };
        for &d in kinds {
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
    v.push(RunSpec {
        delivery: "no-seq",
        disconnect: Disconnect::Clean,
        case: "within-ring",
        clients: n,
        away: o.max_disconnect,
    });
    v
}

/// What `verify delivery` reports.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryReport {
    pub kind: &'static str,
    pub target: String,
    pub options: DeliveryOptions,
    pub runs: Vec<Run>,
    pub findings: Vec<Finding>,
    pub summary: Summary,
    pub duration_ms: u64,
}

/// Start the server (unless `--server`), run every spec at once, judge.
pub fn measure(o: &DeliveryOptions) -> anyhow::Result<DeliveryReport> {
    o.validate()?;
    let started = Instant::now();
    let budget = Budget::new(o.timeout);
    let scratch = serve::Scratch::new("delivery")?;
    let (child, addr) = match o.server {
        Some(a) => {
            crate::sys::addr::ensure_loopback(&a)?;
            (None, a)
        }
        None => {
            let flags: Vec<String> = [
                "--rate".to_string(),
                o.rate.to_string(),
                "--size".into(),
                o.size.to_string(),
                "--ring".into(),
                o.ring_messages.to_string(),
            ]
            .into();
            let c = serve::start(&flags, &scratch.0, 1, &budget)?;
            let a = c.addrs[0];
            (Some(c), a)
        }
    };
    let specs = specs(o);
    let ring_bytes = if child.is_some() { o.ring_bytes() } else { 0 };
    let phases = Phases {
        poll: o.transport == "poll",
        ws: o.transport == "websocket",
        ..Phases::for_rate(o.rate)
    };
    let runs = run::run_all(addr, &specs, phases, ring_bytes)?;
    drop(child);
    let findings = findings(o, &runs);
    Ok(DeliveryReport {
        kind: "verify-delivery",
        target: o
            .server
            .map_or("rtcheck serve".into(), |a| format!("http://{a}")),
        options: o.clone(),
        summary: Summary::of(&findings),
        runs,
        findings,
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// One finding per run, plus a skip for each asked mode this build does not measure.
pub fn findings(o: &DeliveryOptions, runs: &[Run]) -> Vec<Finding> {
    let mut v: Vec<Finding> = runs.iter().map(finding).collect();
    for m in o
        .delivery
        .iter()
        .filter(|m| !MEASURED.contains(&m.as_str()))
    {
        v.push(Finding {
            id: format!("delivery-{m}"),
            title: format!("Delivery {m}: not measured"),
            status: Status::Skip,
            observed: "not measured".into(),
            expected: String::new(),
            rule: String::new(),
            reason: Some(format!(
                "--delivery {m} needs server support not built yet (issue 12)"
            )),
            evidence: vec![crate::evidence::reference(evidence_for(m, ""))],
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
        ("no-seq", _) => "seq-numbers",
        ("seq-ring", "beyond-ring") => "ring-sizing",
        ("seq-ring", _) => "ring-buffer",
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
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Finding {
        id: finding_id(&r.delivery, &r.disconnect, &r.case),
        title: format!(
            "{} after a {} disconnect of {} ms ({})",
            r.delivery, r.disconnect, r.away_ms, r.case
        ),
        status: r.status,
        observed: format!(
            "{} client(s): received {}, lost {}, lost silently {}, duplicated {}, out of order {}, in gaps {}",
            r.clients, c.received, c.lost, c.lost_silently, c.duplicated, c.out_of_order, c.gaps
        ),
        expected: match r.delivery.as_str() {
            "no-seq" => "the control: loss without seq numbers is silent".into(),
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
