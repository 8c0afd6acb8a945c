//! `rtcheck verify` and `audit --verify`: live experiments on loopback that demonstrate host
//! findings, each printed beside the reference number it belongs to.
//!
//! One file per experiment (`fd_limit`, `ports`, `tcp_wmem`, `memory`, `keepalive`); each
//! returns [`Verification`]s with a validity check. `guard` holds the safety rails
//! (loopback only, Ctrl-C, time budget, child cleanup), `sys` the /proc readings.
pub mod fd_limit;
pub mod guard;
pub mod keepalive;
pub mod listener;
pub mod memory;
pub mod ports;
pub mod progress;
pub mod server;
pub mod sys;
pub mod tcp_wmem;

use crate::cli::Ctx;
use crate::report::{Finding, Format, Verification};
use anyhow::bail;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Verification names, in run order. A finding's `verify` field names one of these (or an
/// alias from [`expand`]).
pub const NAMES: &[&str] = &[
    "fd-limit",
    "time-wait",
    "ephemeral-ports",
    "tcp-wmem",
    "memory",
    "memory-sse",
    "tcp-keepalive",
    "read-deadline",
];

/// Expand a name given on the command line (or in a finding) to verification names.
/// Group names run every part of their experiment; evidence ids are accepted as aliases.
pub fn expand(word: &str) -> Option<Vec<&'static str>> {
    let v: &[&'static str] = match word {
        "all" => NAMES,
        "fd-limit" | "ulimit-n" | "nofile" => &["fd-limit"],
        "time-wait" | "tw-sockstat" => &["time-wait"],
        "ephemeral-ports" | "ports" => &["time-wait", "ephemeral-ports"],
        "tcp-wmem" | "kernel-sndbuf" | "sndbuf" => &["tcp-wmem"],
        "memory" | "conn-ram" => &["memory", "memory-sse"],
        "memory-ws" => &["memory"],
        "memory-sse" => &["memory-sse"],
        "tcp-keepalive" | "keepalive" | "dead-peer" | "ping-pong" | "ping-timing" => {
            &["tcp-keepalive", "read-deadline"]
        }
        "read-deadline" | "read-deadline-alone" => &["read-deadline"],
        _ => return None,
    };
    Some(v.to_vec())
}

/// The measurement a finding naming `word` gets (the headline of its group).
pub fn headline(word: &str) -> Option<&'static str> {
    let names = expand(word)?;
    let pick = match word {
        "ephemeral-ports" | "ports" => "ephemeral-ports",
        "memory" | "conn-ram" | "memory-ws" => "memory",
        "tcp-keepalive" | "keepalive" | "dead-peer" | "ping-pong" | "ping-timing" => {
            "tcp-keepalive"
        }
        _ => names.first()?,
    };
    Some(pick)
}

/// The verification names selected by `words` (all when empty), in run order.
pub fn select(words: &[String]) -> anyhow::Result<Vec<&'static str>> {
    if words.is_empty() {
        return Ok(NAMES.to_vec());
    }
    let mut want = std::collections::BTreeSet::new();
    for w in words {
        for part in w.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match expand(part) {
                Some(v) => want.extend(v),
                None => bail!(
                    "unknown experiment `{part}` (known: fd-limit, ephemeral-ports, time-wait, tcp-wmem, memory, memory-sse, tcp-keepalive, read-deadline)"
                ),
            }
        }
    }
    Ok(NAMES.iter().copied().filter(|n| want.contains(n)).collect())
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Experiments (all when none is named):
  fd-limit         child at --limit opens connections until EMFILE; can it still read /proc?
  ephemeral-ports  close --closed (TIME_WAIT), hold --opened at once: any EADDRNOTAVAIL?
  time-wait        only the first half of ephemeral-ports: TIME_WAIT rising in sockstat
  tcp-wmem         a client that never reads: bytes the kernel accepts before a write blocks
  memory           server RSS per idle WebSocket and SSE connection (--connections)
  tcp-keepalive    time until the server notices a silent peer (--ping/--pong-wait), and
                   read-deadline: a read deadline alone closes a healthy quiet client

Examples:
  rtcheck verify                                   every experiment at its default scale
  rtcheck verify fd-limit --limit 1024             reproduce ulimit -n 1024 (reference: 1,018)
  rtcheck verify ephemeral-ports --full            10,000 closed + 20,000 opened
  rtcheck verify memory --connections 2000 --format json
  rtcheck audit --verify                           attach each measurement to its finding

Everything runs on loopback only, bounded by --timeout, and cleans up on error and Ctrl-C.
Exit codes: 0 every measurement valid, 1 a measurement failed its validity check, 2 error.")]
pub struct VerifyArgs {
    /// Experiments to run (default: all). Comma or space separated.
    pub names: Vec<String>,
    /// fd-limit: soft open-files limit of the child (default: the current soft limit).
    #[arg(long)]
    pub limit: Option<u64>,
    /// ephemeral-ports: connections to open and close first (they stay in TIME_WAIT).
    #[arg(long, default_value_t = 2000)]
    pub closed: u64,
    /// ephemeral-ports: connections then opened and held at once.
    #[arg(long, default_value_t = 2000)]
    pub opened: u64,
    /// ephemeral-ports: the reference scale, 10,000 closed + 20,000 opened.
    #[arg(long)]
    pub full: bool,
    /// memory: idle connections per transport.
    #[arg(long, default_value_t = 10_000)]
    pub connections: u64,
    /// tcp-keepalive: server ping interval.
    #[arg(long, default_value = "5s", value_parser = crate::units::parse_duration)]
    pub ping: Duration,
    /// tcp-keepalive: server pong wait (removes a peer silent this long).
    #[arg(long, default_value = "8s", value_parser = crate::units::parse_duration)]
    pub pong_wait: Duration,
    /// read-deadline: the server's read deadline (no ping) for a healthy quiet client.
    #[arg(long, default_value = "10s", value_parser = crate::units::parse_duration)]
    pub read_deadline: Duration,
    /// tcp-wmem: SO_RCVBUF of the client that never reads.
    #[arg(long, default_value_t = 2048)]
    pub rcvbuf: u64,
    /// tcp-wmem: message size written by the server.
    #[arg(long, default_value_t = 1024)]
    pub message_size: u64,
    /// Total time bound for the whole run.
    #[arg(long, default_value = "3m", value_parser = crate::units::parse_duration)]
    pub timeout: Duration,
    /// Output format: text, json, yaml, markdown, junit, github (json/yaml/junit/github
    /// carry the findings schema of `audit --verify`: findings[].verification).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to this file (atomically) instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,

    // Internal: the re-executed child of an experiment.
    #[arg(long, hide = true)]
    pub child: Option<String>,
    #[arg(long, hide = true)]
    pub target: Option<String>,
    #[arg(long, hide = true)]
    pub count: Option<u64>,
}

/// Everything an experiment needs; `audit --verify` builds one with `Default`.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyOptions {
    pub limit: Option<u64>,
    pub closed: u64,
    pub opened: u64,
    pub connections: u64,
    #[serde(with = "crate::units::serde_duration")]
    pub ping: Duration,
    #[serde(with = "crate::units::serde_duration")]
    pub pong_wait: Duration,
    #[serde(with = "crate::units::serde_duration")]
    pub read_deadline: Duration,
    pub rcvbuf: u64,
    pub message_size: u64,
    #[serde(with = "crate::units::serde_duration")]
    pub timeout: Duration,
    /// Show a progress bar (only drawn when stderr is a terminal).
    #[serde(skip)]
    pub progress: bool,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            limit: None,
            closed: 2000,
            opened: 2000,
            connections: 10_000,
            ping: Duration::from_secs(5),
            pong_wait: Duration::from_secs(8),
            read_deadline: Duration::from_secs(10),
            rcvbuf: 2048,
            message_size: 1024,
            timeout: Duration::from_secs(180),
            progress: true,
        }
    }
}

impl VerifyOptions {
    /// Usage errors (exit 2) for values that cannot make a valid experiment.
    pub fn validate(&self) -> anyhow::Result<()> {
        if let Some(l) = self.limit {
            let (_, hard) = sys::nofile()?;
            if l < 32 {
                bail!("--limit {l}: too low to measure (minimum 32)");
            }
            if l > fd_limit::MAX_LIMIT {
                bail!(
                    "--limit {l}: above the {} connections this experiment opens",
                    fd_limit::MAX_LIMIT
                );
            }
            if l > hard {
                bail!("--limit {l}: above the hard open-files limit {hard} (raise it with `ulimit -Hn` first)");
            }
        }
        if !(1..=100_000).contains(&self.closed) || !(1..=100_000).contains(&self.opened) {
            bail!("--closed/--opened: expected 1 to 100,000 each");
        }
        if self.connections == 0 || self.connections > 100_000 {
            bail!("--connections {}: expected 1 to 100,000", self.connections);
        }
        if self.ping.is_zero() || self.pong_wait.is_zero() || self.read_deadline.is_zero() {
            bail!("--ping, --pong-wait and --read-deadline must be above 0");
        }
        if self.ping > Duration::from_secs(120)
            || self.pong_wait > Duration::from_secs(300)
            || self.read_deadline > Duration::from_secs(300)
        {
            bail!("--ping (max 120s), --pong-wait and --read-deadline (max 300s): too long for a bounded run");
        }
        if !(16..=65536).contains(&self.message_size) {
            bail!(
                "--message-size {}: expected 16 to 65536 bytes",
                self.message_size
            );
        }
        if !(256..=16 << 20).contains(&self.rcvbuf) {
            bail!("--rcvbuf {}: expected 256 B to 16 MiB", self.rcvbuf);
        }
        if self.timeout.is_zero() {
            bail!("--timeout must be above 0");
        }
        Ok(())
    }
}

impl VerifyArgs {
    pub fn options(&self) -> VerifyOptions {
        let (closed, opened) = if self.full {
            (10_000, 20_000)
        } else {
            (self.closed, self.opened)
        };
        VerifyOptions {
            limit: self.limit,
            closed,
            opened,
            connections: self.connections,
            ping: self.ping,
            pong_wait: self.pong_wait,
            read_deadline: self.read_deadline,
            rcvbuf: self.rcvbuf,
            message_size: self.message_size,
            timeout: self.timeout,
            progress: !self.quiet,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct VerifySummary {
    pub total: usize,
    pub valid: usize,
    pub invalid: usize,
}

/// The result of `rtcheck verify`.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub verifications: Vec<Verification>,
    pub summary: VerifySummary,
    pub options: VerifyOptions,
    pub duration_ms: u64,
}

impl VerifyReport {
    pub fn new(verifications: Vec<Verification>, options: VerifyOptions, started: Instant) -> Self {
        let valid = verifications.iter().filter(|v| v.valid).count();
        VerifyReport {
            summary: VerifySummary {
                total: verifications.len(),
                valid,
                invalid: verifications.len() - valid,
            },
            verifications,
            options,
            duration_ms: started.elapsed().as_millis() as u64,
        }
    }
}

/// Shared by the experiments: what they get besides their options.
pub struct Run<'a> {
    pub opts: &'a VerifyOptions,
    pub budget: guard::Budget,
    pub progress: &'a progress::Progress,
    wanted: Vec<&'static str>,
}

impl Run<'_> {
    pub fn wants(&self, name: &str) -> bool {
        self.wanted.contains(&name)
    }
}

/// Build a verification. `measured: None` marks an invalid run (the verdict says why).
/// The arguments are the fields of `Verification` in order, plus the start time.
#[allow(clippy::too_many_arguments)]
pub fn verification(
    name: &str,
    measured: Option<f64>,
    unit: &str,
    reference: String,
    verdict: String,
    details: Vec<String>,
    valid: bool,
    started: Instant,
) -> Verification {
    Verification {
        name: name.to_string(),
        measured: if valid { measured } else { None },
        unit: unit.to_string(),
        reference,
        verdict,
        details,
        valid,
        duration_ms: started.elapsed().as_millis() as u64,
    }
}

/// The reference printed for a verification (from data/evidence.yaml).
pub fn reference_for(name: &str) -> String {
    use crate::evidence::{fmt_num, num};
    match name {
        "fd-limit" => format!(
            "{} connections at ulimit -n {} [ulimit-n]",
            fmt_num(num("ulimit-n", "connections_reached")),
            fmt_num(num("ulimit-n", "limit"))
        ),
        "time-wait" => format!(
            "TIME_WAIT lasts {} s; watch tw in sockstat on the client side [tw-sockstat]",
            fmt_num(num("tw-sockstat", "time_wait"))
        ),
        "ephemeral-ports" => format!(
            "{} failed of {} opened after {} closed; {} ports per destination [ephemeral-ports]",
            fmt_num(num("ephemeral-ports", "failed")),
            fmt_num(num("ephemeral-ports", "opened")),
            fmt_num(num("ephemeral-ports", "closed")),
            fmt_num(num("ephemeral-ports", "port_range"))
        ),
        "tcp-wmem" => format!(
            "{} accepted before Write blocked; {} events written into a dead connection [kernel-sndbuf]",
            crate::units::fmt_bytes(num("kernel-sndbuf", "bytes_accepted") as u64),
            fmt_num(num("kernel-sndbuf", "events_written_dead"))
        ),
        "memory" | "memory-sse" => format!(
            "{} RSS per idle WebSocket connection, {} for 10,000 (Go + gorilla) [conn-ram]",
            crate::units::fmt_bytes(num("conn-ram", "rss_per_conn") as u64),
            crate::units::fmt_bytes(num("conn-ram", "rss_10k") as u64)
        ),
        "tcp-keepalive" => format!(
            "dead peer detected in {} s with ping {} s, pongWait {} s [ping-timing]",
            fmt_num(num("ping-timing", "detected")),
            fmt_num(num("ping-timing", "ping")),
            fmt_num(num("ping-timing", "pong_wait"))
        ),
        "read-deadline" => format!(
            "a read deadline alone closed a healthy client after exactly {} s [read-deadline-alone]",
            fmt_num(num("read-deadline-alone", "deadline"))
        ),
        other => format!("no reference for `{other}`"),
    }
}

fn unit_for(name: &str) -> &'static str {
    match name {
        "fd-limit" | "ephemeral-ports" => "connections",
        "time-wait" => "sockets",
        "tcp-wmem" | "memory" | "memory-sse" => "B",
        _ => "s",
    }
}

/// Run the selected verifications (names from [`select`]) in order, within the time budget.
/// An experiment that fails to run yields invalid verifications saying why; Ctrl-C stops
/// the whole run with an error after cleanup.
pub fn run_selected(
    wanted: &[&'static str],
    opts: &VerifyOptions,
) -> anyhow::Result<Vec<Verification>> {
    guard::install_interrupt_handler();
    // Holding thousands of sockets needs the hard limit; the fd-limit child sets its own.
    let _ = sys::raise_nofile_to_hard();
    type Exp = fn(&Run) -> anyhow::Result<Vec<Verification>>;
    let experiments: [(&[&str], &str, Exp); 5] = [
        (&["fd-limit"], "fd-limit", fd_limit::run),
        (
            &["time-wait", "ephemeral-ports"],
            "ephemeral-ports",
            ports::run,
        ),
        (&["tcp-wmem"], "tcp-wmem", tcp_wmem::run),
        (&["memory", "memory-sse"], "memory", memory::run),
        (
            &["tcp-keepalive", "read-deadline"],
            "tcp-keepalive",
            keepalive::run,
        ),
    ];
    let todo: Vec<_> = experiments
        .iter()
        .filter(|(names, _, _)| names.iter().any(|n| wanted.contains(n)))
        .collect();
    let progress = progress::Progress::new(opts.progress, todo.len() as u64);
    let budget = guard::Budget::new(opts.timeout);
    let mut out = Vec::new();
    for (names, label, exp) in todo {
        progress.start(label);
        let run = Run {
            opts,
            budget,
            progress: &progress,
            wanted: wanted.to_vec(),
        };
        let started = Instant::now();
        match exp(&run) {
            Ok(v) => out.extend(v),
            Err(e) if guard::interrupted() => {
                progress.finish();
                return Err(e);
            }
            Err(e) => {
                let reason = e
                    .chain()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(": ");
                for n in names.iter().filter(|n| wanted.contains(n)) {
                    out.push(verification(
                        n,
                        None,
                        unit_for(n),
                        reference_for(n),
                        format!("invalid: {reason}"),
                        vec![],
                        false,
                        started,
                    ));
                }
            }
        }
        progress.done();
    }
    progress.finish();
    Ok(out)
}

/// `audit --verify`: run the experiments named by the findings' `verify` fields (each
/// once; skipped findings are left alone) and attach the matching measurement to every
/// finding that names it. Without `opts.limit`, fd-limit runs at the soft limit the audit
/// read (numbers.soft), so an audited service's 1024 is reproduced, not rtcheck's own.
pub fn attach(findings: &mut [Finding], opts: &VerifyOptions) -> anyhow::Result<()> {
    let mut opts = opts.clone();
    let mut wanted = std::collections::BTreeSet::new();
    for f in findings.iter() {
        if f.status == crate::report::Status::Skip {
            continue;
        }
        let Some(name) = f.verify.as_deref().and_then(headline) else {
            continue;
        };
        wanted.insert(name);
        if name == "fd-limit" && opts.limit.is_none() {
            let hard = sys::nofile().map(|(_, h)| h).unwrap_or(0);
            if let Some(&soft) = f.numbers.get("soft") {
                // Above the experiment's cap, fd-limit picks its own (and says so).
                if soft >= 32.0 && soft <= hard as f64 && soft <= fd_limit::MAX_LIMIT as f64 {
                    opts.limit = Some(soft as u64);
                }
            }
        }
    }
    if wanted.is_empty() {
        return Ok(());
    }
    let wanted: Vec<&'static str> = NAMES
        .iter()
        .copied()
        .filter(|n| wanted.contains(n))
        .collect();
    let results = run_selected(&wanted, &opts)?;
    for f in findings.iter_mut() {
        if f.status == crate::report::Status::Skip {
            continue;
        }
        let Some(name) = f.verify.as_deref().and_then(headline) else {
            continue;
        };
        if let Some(v) = results.iter().find(|v| v.name == name) {
            f.verification = Some(v.clone());
        }
    }
    Ok(())
}

/// The `rtcheck audit` check each measurement demonstrates.
pub fn finding_for(name: &str) -> &'static str {
    match name {
        "fd-limit" => "fd-limit",
        "time-wait" => "time-wait",
        "ephemeral-ports" => "ephemeral-ports",
        "tcp-wmem" => "tcp-wmem",
        "memory" | "memory-sse" => "memory",
        _ => "tcp-keepalive",
    }
}

/// The evidence entry each measurement is compared with.
pub fn evidence_id(name: &str) -> &'static str {
    match name {
        "fd-limit" => "ulimit-n",
        "time-wait" => "tw-sockstat",
        "ephemeral-ports" => "ephemeral-ports",
        "tcp-wmem" => "kernel-sndbuf",
        "memory" | "memory-sse" => "conn-ram",
        "tcp-keepalive" => "ping-timing",
        _ => "read-deadline-alone",
    }
}

fn title_for(name: &str) -> &'static str {
    match name {
        "fd-limit" => "Connections a process opens before EMFILE at its open-files limit",
        "time-wait" => "TIME_WAIT sockets left on the client side by closed connections",
        "ephemeral-ports" => "Connects that fail with EADDRNOTAVAIL toward one destination",
        "tcp-wmem" => "Bytes the kernel accepts for a client that never reads",
        "memory" => "Server RSS per idle WebSocket connection",
        "memory-sse" => "Server RSS per idle SSE connection",
        "tcp-keepalive" => "Time until the server notices a silent peer (ping/pong)",
        _ => "A read deadline alone closes a healthy quiet client",
    }
}

/// Verifications as findings (kind "verify"), for the findings formats: a valid
/// measurement passes, an invalid one fails. Same schema as `audit --verify`.
pub fn to_findings_report(
    results: &[Verification],
    duration_ms: f64,
) -> crate::report::FindingsReport {
    use crate::report::{Finding, Fix, Status};
    let findings = results
        .iter()
        .map(|v| Finding {
            id: v.name.clone(),
            title: title_for(&v.name).to_string(),
            status: if v.valid { Status::Pass } else { Status::Fail },
            observed: crate::report::text::verify::measured(v),
            expected: v.reference.clone(),
            rule: v.verdict.clone(),
            reason: None,
            evidence: vec![crate::evidence::reference(evidence_id(&v.name))],
            fix: Fix::default(),
            verify: Some(v.name.clone()),
            verification: Some(v.clone()),
            numbers: v
                .measured
                .map(|m| [("measured".to_string(), m)].into_iter().collect())
                .unwrap_or_default(),
        })
        .collect();
    crate::report::FindingsReport::new(
        "verify",
        crate::profile::Profile::default(),
        Some("loopback (127.0.0.0/8) only".into()),
        findings,
        duration_ms,
    )
}

pub fn run(a: VerifyArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    if let Some(child) = &a.child {
        return run_child(child, &a);
    }
    let wanted = select(&a.names)?;
    let opts = a.options();
    opts.validate()?;
    let started = Instant::now();
    let results = run_selected(&wanted, &opts)?;
    let report = VerifyReport::new(results, opts, started);
    // `auto` colours a terminal, never a file.
    let ctx = if a.output.is_some() && ctx.color == crate::report::ColorChoice::Auto {
        Ctx {
            color: crate::report::ColorChoice::Never,
        }
    } else {
        ctx
    };
    let content = match a.format {
        Format::Text => crate::report::text::verify::render(&report, &ctx.palette()),
        Format::Markdown => crate::report::markdown::verify::render(&report),
        f => {
            let fr = to_findings_report(&report.verifications, report.duration_ms as f64);
            crate::audit::render(&fr, f, crate::report::FailOn::Fail, ctx)?
        }
    };
    crate::outfile::emit(&content, a.output.as_deref())?;
    Ok(if report.summary.invalid > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The hidden `--child` entry points: re-executed experiment halves that must live in their
/// own process (their own fd limit, their own fd table).
fn run_child(kind: &str, a: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let list = a
        .target
        .as_deref()
        .ok_or_else(|| anyhow::anyhow!("--child needs --target"))?;
    let targets = list
        .split(',')
        .map(guard::parse_target)
        .collect::<anyhow::Result<Vec<_>>>()?;
    match kind {
        "fd-limit" => {
            let limit = a
                .limit
                .ok_or_else(|| anyhow::anyhow!("--child fd-limit needs --limit"))?;
            fd_limit::child(limit, &targets)
        }
        "open-hold" => {
            let count = a
                .count
                .ok_or_else(|| anyhow::anyhow!("--child open-hold needs --count"))?;
            ports::child_open_hold(targets[0], count)
        }
        other => bail!("--child `{other}`: unknown"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_expands_groups_and_aliases_in_run_order() {
        assert_eq!(select(&[]).unwrap(), NAMES.to_vec());
        assert_eq!(
            select(&["tcp-wmem,fd-limit".into()]).unwrap(),
            vec!["fd-limit", "tcp-wmem"]
        );
        assert_eq!(
            select(&["ephemeral-ports".into()]).unwrap(),
            vec!["time-wait", "ephemeral-ports"]
        );
        assert_eq!(
            select(&["ulimit-n".into(), "read-deadline-alone".into()]).unwrap(),
            vec!["fd-limit", "read-deadline"]
        );
        let e = select(&["nope".into()]).unwrap_err().to_string();
        assert!(e.contains("unknown experiment `nope`"), "{e}");
    }

    #[test]
    fn every_name_has_a_reference_from_the_evidence() {
        for n in NAMES {
            let r = reference_for(n);
            assert!(r.contains('['), "{n}: {r}");
            assert!(!r.starts_with("no reference"), "{n}");
        }
        for n in NAMES {
            assert_eq!(
                headline(finding_for(n)).map(finding_for),
                Some(finding_for(n))
            );
            assert!(
                crate::evidence::store().get(evidence_id(n)).is_some(),
                "{n}"
            );
        }
        assert_eq!(
            reference_for("fd-limit"),
            "1,018 connections at ulimit -n 1,024 [ulimit-n]"
        );
    }

    #[test]
    fn options_reject_unmeasurable_values() {
        let ok = VerifyOptions::default();
        ok.validate().unwrap();
        let bad = VerifyOptions {
            limit: Some(4),
            ..ok.clone()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--limit 4"));
        let bad = VerifyOptions {
            limit: Some(fd_limit::MAX_LIMIT + 1),
            ..ok.clone()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("this experiment opens"), "{e}");
        let (_, hard) = sys::nofile().unwrap();
        if hard < fd_limit::MAX_LIMIT {
            let bad = VerifyOptions {
                limit: Some(hard + 1),
                ..ok.clone()
            };
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains("hard open-files limit"), "{e}");
        }
        let bad = VerifyOptions {
            message_size: 1,
            ..ok
        };
        assert!(bad.validate().is_err());
    }
}
