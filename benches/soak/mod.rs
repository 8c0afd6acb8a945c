//! The soak benchmark (issue 21): thousands of mixed clients against `rtcheck serve` on
//! loopback for minutes, in two phases, each on a fresh server:
//!
//! 1. `seq-ring` (the default delivery): healthy WebSocket and SSE clients counting every
//!    seq, SSE clients reconnecting with `Last-Event-ID` (storms: half of them all at the
//!    same instant), never-reading clients (the write deadline must remove them), and
//!    resume-from-0 flooders (`Last-Event-ID: 0`, `/ws?since=0`, `/poll?since=0`).
//! 2. `session-ack`: healthy session clients acking, session churn (leave, come back with
//!    `?session=`), and bare `/poll?session=` requests that never come back.
//!
//! Every counting client is connected before publishing starts, so each is owed seq 1 ..=
//! the last round; a hole not covered by a gap or reset marker is lost silently. The
//! server's RSS and open fds are read from /proc (baseline, peak, after), its counters
//! from `/control/stats`. The phase fails on any silent loss, fds not back at the baseline
//! within 60 s, or RSS over a bound stated from the flags passed; it is INVALID when
//! healthy clients fell behind while the generator itself was late.
pub mod clients;
pub mod conn;
pub mod hist;
pub mod phase;
pub mod report;
pub mod tally;
pub mod wire;

use clients::{Kind, Knobs};
use std::process::ExitCode;
use std::time::Duration;

/// Messages per second and payload bytes: `serve`'s defaults, stated.
pub const RATE: u64 = 5;
pub const SIZE: &str = "1KiB";
pub const REPLAY_BUDGET: &str = "64MiB";
pub const SESSION_QUEUE: u64 = 64;
pub const SESSION_MEMORY: &str = "1GiB";

#[derive(clap::Parser, Debug)]
#[command(
    name = "soak",
    about = "Soak rtcheck serve with thousands of mixed clients on loopback (issue 21)",
    after_help = "Run: cargo bench --bench soak -- --clients 200 --minutes 0.5\n\
                  Each phase (seq-ring, then session-ack) runs on a fresh server for --minutes."
)]
pub struct Cli {
    /// Clients per phase (at least 20: one of each kind).
    #[arg(long, default_value_t = 5000)]
    pub clients: usize,
    /// Minutes of publishing per phase.
    #[arg(long, default_value_t = 3.0)]
    pub minutes: f64,
    /// Also print the figures as one JSON line.
    #[arg(long)]
    pub json: bool,
    /// Run one phase only.
    #[arg(long, value_parser = ["seq-ring", "session-ack"])]
    pub phase: Option<String>,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    pub bench: bool,
}

/// A run, from the command line or a test.
#[derive(Debug, Clone)]
pub struct Opts {
    pub clients: usize,
    pub seconds: f64,
    pub phases: Vec<&'static str>,
    pub knobs: Knobs,
    pub session_ttl: Duration,
    /// `--pong-wait` for the server (`--ping` half of it); None: serve's defaults (30 s).
    pub liveness: Option<Duration>,
    pub progress: bool,
}

impl Opts {
    /// Defaults for `clients` over `seconds` per phase; the holds shrink for short runs.
    pub fn new(clients: usize, seconds: f64) -> Opts {
        let s = Duration::from_secs_f64(seconds);
        Opts {
            clients,
            seconds,
            phases: vec!["seq-ring", "session-ack"],
            knobs: Knobs {
                // serve's --pong-wait default (30 s) and 15 s to spare.
                never_read_hold: Duration::from_secs(45),
                flood_hold: Duration::from_secs(3),
                storm_every: Duration::from_secs(5),
                pin_every: Duration::from_secs(2),
                ack_every: Duration::from_secs(2),
            },
            session_ttl: (s / 4).clamp(Duration::from_secs(3), Duration::from_secs(15)),
            liveness: None,
            progress: true,
        }
    }

    /// Bad values in one line (exit 2).
    pub fn check(&self) -> Result<(), String> {
        if !(20..=20_000).contains(&self.clients) {
            return Err(format!("--clients {}: between 20 and 20000", self.clients));
        }
        if !(self.seconds.is_finite() && (1.0..=3600.0).contains(&self.seconds)) {
            return Err(format!(
                "--minutes {}: between 1/60 and 60",
                self.seconds / 60.0
            ));
        }
        Ok(())
    }
}

/// Pure: the client mix of a phase, in per mille; the rounding remainder goes to the first.
pub fn mix(phase: &str, n: usize) -> Vec<(Kind, usize)> {
    let w: &[(Kind, usize)] = match phase {
        "seq-ring" => &[
            (Kind::Ws, 300),
            (Kind::Sse, 300),
            (Kind::SseReconnect, 150),
            (Kind::NeverReadWs, 50),
            (Kind::NeverReadSse, 50),
            (Kind::FloodSse, 50),
            (Kind::FloodWs, 50),
            (Kind::FloodPoll, 50),
        ],
        _ => &[
            (Kind::SessionWs, 400),
            (Kind::SessionSse, 200),
            (Kind::ChurnWs, 125),
            (Kind::ChurnSse, 125),
            (Kind::PinPoll, 150),
        ],
    };
    let mut v: Vec<(Kind, usize)> = w.iter().map(|&(k, pm)| (k, n * pm / 1000)).collect();
    let rest = n - v.iter().map(|x| x.1).sum::<usize>();
    v[0].1 += rest;
    v
}

/// The server flags and mix of a phase.
pub fn spec(o: &Opts, phase: &'static str) -> phase::Spec {
    let rounds = ((o.seconds * RATE as f64).round() as u64).max(1);
    let mix = mix(phase, o.clients);
    let mut flags: Vec<String> = [
        "--rate",
        &RATE.to_string(),
        "--size",
        SIZE,
        "--ring",
        "1024",
        "--rounds",
        &rounds.to_string(),
        "--wait-start",
        "--replay-budget",
        REPLAY_BUDGET,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(l) = o.liveness {
        flags.extend([
            "--pong-wait".into(),
            format!("{}ms", l.as_millis()),
            "--ping".into(),
            format!("{}ms", l.as_millis() / 2),
        ]);
    }
    let session_ack = phase == "session-ack";
    if session_ack {
        // Room for every counting client's session and as many anonymous ones as pinners.
        let max: usize = mix.iter().map(|x| x.1).sum();
        for f in [
            "--delivery".into(),
            "session-ack".into(),
            "--session-queue".into(),
            SESSION_QUEUE.to_string(),
            "--session-ttl".into(),
            format!("{}ms", o.session_ttl.as_millis()),
            "--max-sessions".into(),
            max.to_string(),
            "--session-memory".into(),
            SESSION_MEMORY.into(),
        ] {
            flags.push(f);
        }
    }
    phase::Spec {
        name: phase,
        flags,
        mix,
        session_ack,
        rounds,
        knobs: o.knobs,
        session_ttl: if session_ack {
            o.session_ttl
        } else {
            Duration::ZERO
        },
        progress: o.progress,
    }
}

/// Run the phases; the reports, or an error (interrupted: `Interrupted`).
pub fn run(o: &Opts) -> anyhow::Result<Vec<report::PhaseReport>> {
    if std::env::var_os("RTCHECK_BIN").is_none() {
        // The bench and test binaries are not rtcheck: the server child is.
        std::env::set_var("RTCHECK_BIN", env!("CARGO_BIN_EXE_rtcheck"));
    }
    let (_, hard) = rtcheck_base::os::limits::raise_nofile_to_hard()?;
    // A client may hold a stream and an ack or flood connection at once.
    let need = o.clients as u64 * 2 + rtcheck_base::os::limits::FD_MARGIN;
    if need > hard {
        anyhow::bail!("--clients {}: needs about {need} open files but the hard RLIMIT_NOFILE is {hard} (ulimit -Hn)", o.clients);
    }
    let mut out = Vec::new();
    for p in &o.phases {
        let m = phase::run(spec(o, p))?;
        out.push(report::judge(&m));
    }
    Ok(out)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// `cargo bench --bench soak -- ARGS`: exit 0 all phases pass, 1 a check failed or a phase
/// is invalid, 2 bad arguments or a runtime error, 130/143 interrupted.
pub fn main() -> ExitCode {
    use clap::Parser;
    use rtcheck_base::os::signal;
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!(
                "soak: {}",
                e.to_string().lines().next().unwrap_or("bad arguments")
            );
            return ExitCode::from(2);
        }
    };
    let mut o = Opts::new(cli.clients, cli.minutes * 60.0);
    if let Some(p) = &cli.phase {
        o.phases.retain(|x| x == p);
    }
    o.progress = !cli.quiet;
    if let Err(e) = o.check() {
        eprintln!("soak: {e}");
        return ExitCode::from(2);
    }
    signal::install_interrupt_handler();
    let started = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
    let load = load_average();
    let phases = match run(&o) {
        Ok(p) => p,
        Err(e) if e.is::<signal::Interrupted>() => {
            eprintln!("soak: interrupted; server stopped, clients closed");
            return ExitCode::from(signal::exit_code());
        }
        Err(e) => {
            eprintln!("soak: {e:#}");
            return ExitCode::from(2);
        }
    };
    println!(
        "soak: {} clients per phase, {:.1} min of publishing per phase at {RATE} msg/s x {SIZE}; started {started}, load average {load} before, {} cores",
        o.clients,
        o.seconds / 60.0,
        rtcheck_base::os::clock::cores()
    );
    for p in &phases {
        print!("{}", report::text(p));
    }
    let pass = phases.iter().all(|p| p.pass);
    println!("soak: {}", if pass { "pass" } else { "FAIL" });
    if cli.json {
        let j = serde_json::json!({
            "bench": "soak", "clients": o.clients, "minutes": o.seconds / 60.0, "rate": RATE, "size": SIZE,
            "started": started.to_string(), "load_average_before": load, "pass": pass, "phases": phases,
        });
        println!("{j}");
    }
    ExitCode::from(if pass { 0 } else { 1 })
}
