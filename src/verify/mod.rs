//! Live experiments on loopback that demonstrate host findings (`rtcheck verify`, and
//! `audit --verify` composed by the command layer), each measured beside the reference
//! number it belongs to. [`EXPERIMENTS`] is the one table of what exists.
//!
//! One file per experiment (`fd_limit`, `ports`, `tcp_wmem`, `memory`, `keepalive`); each
//! returns [`Verification`]s with a validity check. `guard` holds the safety rails
//! (loopback only, Ctrl-C, time budget, child cleanup), `sys` the /proc readings.
pub mod delivery;
pub mod fd_limit;
pub mod guard;
pub mod keepalive;
pub mod listener;
pub mod memory;
pub mod ports;
pub mod progress;
pub mod server;
pub mod tcp_wmem;

use crate::audit::checks::CheckId;
use crate::evidence::{fmt_num, num};
use crate::findings::{Finding, Status, Verification};
use anyhow::bail;
use rtcheck_base::os::deadline::Deadline;
use rtcheck_base::units::fmt_bytes;
use serde::Serialize;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// One measurement an experiment produces (a `Verification` carries its name).
#[derive(Debug)]
pub struct Part {
    pub name: &'static str,
    /// Other words that select this part alone (evidence ids among them).
    pub aliases: &'static [&'static str],
    pub title: &'static str,
    /// The `rtcheck audit` check it demonstrates.
    pub finding: CheckId,
    /// The evidence entry it is compared with.
    pub evidence: &'static str,
    pub unit: &'static str,
    /// The reference printed beside the measurement (numbers from data/evidence.yaml).
    pub reference: fn() -> String,
}

type Runner = fn(&Run) -> anyhow::Result<Vec<Verification>>;

/// One experiment: a runner that produces its parts. Its name and aliases select every
/// part; the part of the same name (else the first) is its headline for `audit --verify`.
#[derive(Debug)]
pub struct Experiment {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub parts: &'static [Part],
    pub run: Runner,
}

/// Every experiment, in run order.
pub static EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "fd-limit",
        aliases: &["ulimit-n", "nofile"],
        run: fd_limit::run,
        parts: &[Part {
            name: "fd-limit",
            aliases: &[],
            title: "Connections a process opens before EMFILE at its open-files limit",
            finding: CheckId::FdLimit,
            evidence: "ulimit-n",
            unit: "connections",
            reference: || {
                format!(
                    "{} connections at ulimit -n {} [ulimit-n]",
                    fmt_num(num("ulimit-n", "connections_reached")),
                    fmt_num(num("ulimit-n", "limit"))
                )
            },
        }],
    },
    Experiment {
        name: "ephemeral-ports",
        aliases: &["ports"],
        run: ports::run,
        parts: &[
            Part {
                name: ports::TIME_WAIT,
                aliases: &["tw-sockstat"],
                title: "TIME_WAIT sockets left on the client side by closed connections",
                finding: CheckId::TimeWait,
                evidence: "tw-sockstat",
                unit: "sockets",
                reference: || {
                    format!(
                        "TIME_WAIT lasts {} s; watch tw in sockstat on the client side [tw-sockstat]",
                        fmt_num(num("tw-sockstat", "time_wait"))
                    )
                },
            },
            Part {
                name: "ephemeral-ports",
                aliases: &[],
                title: "Connects that fail with EADDRNOTAVAIL toward one destination",
                finding: CheckId::EphemeralPorts,
                evidence: "ephemeral-ports",
                unit: "connections",
                reference: || {
                    format!(
                        "{} failed of {} opened after {} closed; {} ports per destination [ephemeral-ports]",
                        fmt_num(num("ephemeral-ports", "failed")),
                        fmt_num(num("ephemeral-ports", "opened")),
                        fmt_num(num("ephemeral-ports", "closed")),
                        fmt_num(num("ephemeral-ports", "port_range"))
                    )
                },
            },
        ],
    },
    Experiment {
        name: "tcp-wmem",
        aliases: &["kernel-sndbuf", "sndbuf"],
        run: tcp_wmem::run,
        parts: &[Part {
            name: "tcp-wmem",
            aliases: &[],
            title: "Bytes the kernel accepts for a client that never reads",
            finding: CheckId::TcpWmem,
            evidence: "kernel-sndbuf",
            unit: "B",
            reference: || {
                format!(
                    "{} accepted before Write blocked; {} events written into a dead connection [kernel-sndbuf]",
                    fmt_bytes(num("kernel-sndbuf", "bytes_accepted") as u64),
                    fmt_num(num("kernel-sndbuf", "events_written_dead"))
                )
            },
        }],
    },
    Experiment {
        name: "memory",
        aliases: &["conn-ram"],
        run: memory::run,
        parts: &[
            Part {
                name: "memory",
                aliases: &["memory-ws"],
                title: "Server RSS per idle WebSocket connection",
                finding: CheckId::Memory,
                evidence: "conn-ram",
                unit: "B",
                reference: conn_ram_reference,
            },
            Part {
                name: "memory-sse",
                aliases: &[],
                title: "Server RSS per idle SSE connection",
                finding: CheckId::Memory,
                evidence: "conn-ram",
                unit: "B",
                reference: conn_ram_reference,
            },
        ],
    },
    Experiment {
        name: "tcp-keepalive",
        aliases: &["keepalive", "dead-peer", "ping-pong", "ping-timing"],
        run: keepalive::run,
        parts: &[
            Part {
                name: "tcp-keepalive",
                aliases: &[],
                title: "Time until the server notices a silent peer (ping/pong)",
                finding: CheckId::TcpKeepalive,
                evidence: "ping-timing",
                unit: "s",
                reference: || {
                    format!(
                        "dead peer detected in {} s with ping {} s, pongWait {} s [ping-timing]",
                        fmt_num(num("ping-timing", "detected")),
                        fmt_num(num("ping-timing", "ping")),
                        fmt_num(num("ping-timing", "pong_wait"))
                    )
                },
            },
            Part {
                name: "read-deadline",
                aliases: &["read-deadline-alone"],
                title: "A read deadline alone closes a healthy quiet client",
                finding: CheckId::TcpKeepalive,
                evidence: "read-deadline-alone",
                unit: "s",
                reference: || {
                    format!(
                        "a read deadline alone closed a healthy client after exactly {} s [read-deadline-alone]",
                        fmt_num(num("read-deadline-alone", "deadline"))
                    )
                },
            },
        ],
    },
];

fn conn_ram_reference() -> String {
    format!(
        "{} RSS per idle WebSocket connection, {} for 10,000 (Go + gorilla) [conn-ram]",
        fmt_bytes(num("conn-ram", "rss_per_conn") as u64),
        fmt_bytes(num("conn-ram", "rss_10k") as u64)
    )
}

/// Every measurement name, in run order.
pub fn names() -> Vec<&'static str> {
    EXPERIMENTS
        .iter()
        .flat_map(|e| e.parts.iter().map(|p| p.name))
        .collect()
}

/// The part (measurement) of this name.
pub fn part(name: &str) -> Option<&'static Part> {
    EXPERIMENTS
        .iter()
        .flat_map(|e| e.parts.iter())
        .find(|p| p.name == name)
}

/// The experiment a word names as a whole (its name or an alias).
fn experiment_named(word: &str) -> Option<&'static Experiment> {
    EXPERIMENTS
        .iter()
        .find(|e| e.name == word || e.aliases.contains(&word))
}

/// The part a word names alone (its name or an alias).
fn part_named(word: &str) -> Option<&'static Part> {
    EXPERIMENTS
        .iter()
        .flat_map(|e| e.parts.iter())
        .find(|p| p.name == word || p.aliases.contains(&word))
}

/// Expand a name given on the command line (or in a finding) to measurement names. An
/// experiment's name or alias selects every part of it; `all` selects everything.
pub fn expand(word: &str) -> Option<Vec<&'static str>> {
    if word == "all" {
        return Some(names());
    }
    if let Some(e) = experiment_named(word) {
        return Some(e.parts.iter().map(|p| p.name).collect());
    }
    part_named(word).map(|p| vec![p.name])
}

/// The measurement a finding naming `word` gets (the headline of its experiment).
pub fn headline(word: &str) -> Option<&'static str> {
    if let Some(e) = experiment_named(word) {
        let p = e
            .parts
            .iter()
            .find(|p| p.name == e.name)
            .or(e.parts.first());
        return p.map(|p| p.name);
    }
    part_named(word).map(|p| p.name)
}

/// The names `select` accepts, for its error: experiments, then their other parts.
fn known() -> Vec<&'static str> {
    EXPERIMENTS
        .iter()
        .flat_map(|e| {
            std::iter::once(e.name)
                .chain(e.parts.iter().map(|p| p.name).filter(move |n| *n != e.name))
        })
        .collect()
}

/// The measurement names selected by `words` (all when empty), in run order. An unknown
/// name is an error naming the known ones.
pub fn select(words: &[String]) -> anyhow::Result<Vec<&'static str>> {
    if words.is_empty() {
        return Ok(names());
    }
    let mut want = std::collections::BTreeSet::new();
    for w in words {
        for word in w.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match expand(word) {
                Some(v) => want.extend(v),
                None => bail!(
                    "unknown experiment `{word}` (known: {})",
                    known().join(", ")
                ),
            }
        }
    }
    // Only separators (`verify ,`): running nothing would report "0 invalid" and exit 0.
    if want.is_empty() {
        bail!(
            "no experiment named in `{}` (known: {})",
            words.join(" "),
            known().join(", ")
        );
    }
    Ok(names().into_iter().filter(|n| want.contains(n)).collect())
}

/// The experiments that run for these measurement names, in order.
pub fn experiments_for(wanted: &[&str]) -> Vec<&'static str> {
    EXPERIMENTS
        .iter()
        .filter(|e| e.parts.iter().any(|p| wanted.contains(&p.name)))
        .map(|e| e.name)
        .collect()
}

/// Everything an experiment needs. The command layer fills it (its defaults are the
/// flags' defaults, `cmd::verify::default_options`).
#[derive(Debug, Clone, Serialize)]
pub struct VerifyOptions {
    pub limit: Option<u64>,
    pub closed: u64,
    pub opened: u64,
    pub connections: u64,
    #[serde(with = "rtcheck_base::units::serde_duration")]
    pub ping: Duration,
    #[serde(with = "rtcheck_base::units::serde_duration")]
    pub pong_wait: Duration,
    #[serde(with = "rtcheck_base::units::serde_duration")]
    pub read_deadline: Duration,
    pub rcvbuf: u64,
    pub message_size: u64,
    #[serde(with = "rtcheck_base::units::serde_duration")]
    pub timeout: Duration,
    /// Show a progress bar (only drawn when stderr is a terminal).
    #[serde(skip)]
    pub progress: bool,
}

impl VerifyOptions {
    /// Usage errors (exit 2) for values that cannot make a valid experiment.
    pub fn validate(&self) -> anyhow::Result<()> {
        if let Some(l) = self.limit {
            let (_, hard) = rtcheck_base::os::limits::nofile()?;
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

/// Shared by the experiments: what they get besides their options.
pub struct Run<'a> {
    pub opts: &'a VerifyOptions,
    pub budget: Deadline,
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

/// The reference printed for a measurement (from data/evidence.yaml).
pub fn reference_for(name: &str) -> String {
    match part(name) {
        Some(p) => (p.reference)(),
        None => format!("no reference for `{name}`"),
    }
}

/// The `rtcheck audit` check a measurement demonstrates.
pub fn finding_for(name: &str) -> Option<&'static str> {
    part(name).map(|p| p.finding.as_str())
}

/// The evidence entry a measurement is compared with.
pub fn evidence_id(name: &str) -> Option<&'static str> {
    part(name).map(|p| p.evidence)
}

/// Run the selected verifications (names from [`select`]) in order, within the time budget.
/// An experiment that fails to run yields invalid verifications saying why; Ctrl-C stops
/// the whole run with an error after cleanup.
pub fn run_selected(
    wanted: &[&'static str],
    opts: &VerifyOptions,
) -> anyhow::Result<Vec<Verification>> {
    rtcheck_base::os::signal::install_interrupt_handler();
    // Holding thousands of sockets needs the hard limit; the fd-limit child sets its own.
    let _ = rtcheck_base::os::limits::raise_nofile_to_hard();
    let todo: Vec<&Experiment> = EXPERIMENTS
        .iter()
        .filter(|e| e.parts.iter().any(|p| wanted.contains(&p.name)))
        .collect();
    let progress = progress::Progress::new(opts.progress, todo.len() as u64);
    let budget = Deadline::new(opts.timeout);
    let mut out = Vec::new();
    for exp in todo {
        progress.start(exp.name);
        let run = Run {
            opts,
            budget,
            progress: &progress,
            wanted: wanted.to_vec(),
        };
        let started = Instant::now();
        match (exp.run)(&run) {
            Ok(v) => out.extend(v),
            Err(e) if rtcheck_base::os::signal::interrupted() => {
                progress.finish();
                // Typed, so `app` exits 130 as for every command stopped by Ctrl-C.
                return Err(e.context(rtcheck_base::os::signal::Interrupted(
                    "verify interrupted; its server and sockets were cleaned up",
                )));
            }
            Err(e) => {
                let reason = e
                    .chain()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(": ");
                for p in exp.parts.iter().filter(|p| wanted.contains(&p.name)) {
                    out.push(verification(
                        p.name,
                        None,
                        p.unit,
                        (p.reference)(),
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
        if f.status == Status::Skip {
            continue;
        }
        let Some(name) = f.verify.as_deref().and_then(headline) else {
            continue;
        };
        wanted.insert(name);
        if name == "fd-limit" && opts.limit.is_none() {
            let hard = rtcheck_base::os::limits::nofile()
                .map(|(_, h)| h)
                .unwrap_or(0);
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
    let wanted: Vec<&'static str> = names().into_iter().filter(|n| wanted.contains(n)).collect();
    let results = run_selected(&wanted, &opts)?;
    for f in findings.iter_mut() {
        if f.status == Status::Skip {
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

/// The hidden `--child` entry points: re-executed experiment halves that must live in their
/// own process (their own fd limit, their own fd table).
pub fn run_child(
    kind: &str,
    target: Option<&str>,
    limit: Option<u64>,
    count: Option<u64>,
) -> anyhow::Result<ExitCode> {
    let list = target.ok_or_else(|| anyhow::anyhow!("--child needs --target"))?;
    let targets = list
        .split(',')
        .map(guard::parse_target)
        .collect::<anyhow::Result<Vec<_>>>()?;
    match kind {
        "fd-limit" => {
            let limit = limit.ok_or_else(|| anyhow::anyhow!("--child fd-limit needs --limit"))?;
            fd_limit::child(limit, &targets)
        }
        "open-hold" => {
            let count = count.ok_or_else(|| anyhow::anyhow!("--child open-hold needs --count"))?;
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
        assert_eq!(select(&[]).unwrap(), names());
        let e = select(&[", ,".into()]).unwrap_err().to_string();
        assert!(e.starts_with("no experiment named in `, ,`"), "{e}");
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
        assert_eq!(select(&["memory-ws".into()]).unwrap(), vec!["memory"]);
        assert_eq!(select(&["all".into()]).unwrap().len(), 8);
        let e = select(&["nope".into()]).unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown experiment `nope` (known: fd-limit, ephemeral-ports, time-wait, tcp-wmem, memory, memory-sse, tcp-keepalive, read-deadline)"
        );
    }

    #[test]
    fn every_word_names_one_thing_and_unknown_names_have_no_fallback() {
        let mut words: Vec<&str> = vec!["all"];
        for e in EXPERIMENTS {
            words.push(e.name);
            words.extend(e.aliases);
            for p in e.parts.iter().filter(|p| p.name != e.name) {
                words.push(p.name);
            }
            for p in e.parts {
                words.extend(p.aliases);
            }
        }
        let mut sorted = words.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            words.len(),
            "a word is listed twice: {words:?}"
        );
        assert_eq!(finding_for("nope"), None);
        assert_eq!(evidence_id("nope"), None);
        assert_eq!(headline("nope"), None);
        assert_eq!(headline("ports"), Some("ephemeral-ports"));
        assert_eq!(headline("conn-ram"), Some("memory"));
        assert_eq!(headline("ping-pong"), Some("tcp-keepalive"));
        assert_eq!(
            experiments_for(&["time-wait", "memory-sse"]),
            ["ephemeral-ports", "memory"]
        );
    }

    #[test]
    fn every_name_has_a_reference_from_the_evidence() {
        for n in names() {
            let r = reference_for(n);
            assert!(r.contains('['), "{n}: {r}");
            assert!(!r.starts_with("no reference"), "{n}");
            let finding = finding_for(n).unwrap();
            assert_eq!(headline(finding).and_then(finding_for), Some(finding));
            assert!(crate::audit::check_ids().contains(&finding), "{n}");
            assert!(
                crate::evidence::store()
                    .get(evidence_id(n).unwrap())
                    .is_some(),
                "{n}"
            );
        }
        assert_eq!(
            reference_for("fd-limit"),
            "1,018 connections at ulimit -n 1,024 [ulimit-n]"
        );
        assert_eq!(finding_for("read-deadline"), Some("tcp-keepalive"));
        assert_eq!(evidence_id("read-deadline"), Some("read-deadline-alone"));
    }
}
