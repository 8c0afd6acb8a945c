//! `rtcheck bench fanout|idle`: flags to options, run the orchestrator, render, write.
pub mod cluster;
pub mod merge;
pub mod plan;

use super::output::{BenchFormat, BenchFormats, OutputArgs};
use super::thresholds::{findings_report, gate_exit, gates, invalid_scenarios, with_thresholds};
use super::workload::EditArg;
use super::{parse_count, Ctx};
use crate::bench::fanout::{self, FanoutOptions};
use crate::bench::idle::{self, IdleOptions, IdleProto};
use crate::bench::loadgen::{self, LoadgenOptions};
use crate::bench::scenario;
use crate::findings::FailOn;
use crate::profile::DEFAULT_CONNECTIONS;
use crate::report::fanout::bench_doc;
use crate::report::Format;
use crate::report::{doc, gates};
use cluster::ClusterArgs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Fan-out tail latency: scenarios F, A, C1, C2, C3, G1, G3, P1 ("Tail latency at 10,000 connections").
    Fanout(Box<FanoutArgs>),
    /// Server RSS per idle WebSocket / SSE connection.
    Idle(IdleArgs),
    /// Several nodes over Redis: latency added, duplicates, order, a killed node, a Redis
    /// restart, presence ghosts (the realtime series, part 9).
    Cluster(ClusterArgs),
    /// One report from the shards of a run (`fanout --shard I/N`): histograms added,
    /// validity and --threshold judged after the merge.
    Merge(merge::MergeArgs),
    /// Load machines a target needs (connections, rate), from the load generator's
    /// measured cost in a bench report.
    Plan(plan::PlanArgs),
    /// The load generator process (started by `fanout` and `idle`).
    #[command(hide = true)]
    Loadgen(LoadgenArgs),
}

pub fn run(a: BenchArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    match a.command {
        BenchCommand::Fanout(f) => run_fanout(*f, ctx),
        BenchCommand::Plan(p) => plan::run(p, ctx),
        BenchCommand::Idle(i) => run_idle(i, ctx),
        BenchCommand::Cluster(c) => super::bench::cluster::run(c, ctx),
        BenchCommand::Merge(m) => merge::run(m, ctx),
        BenchCommand::Loadgen(l) => loadgen::run(l.options()),
    }
}

/// Flags of the hidden load generator process (started by `fanout` and `idle`).
#[derive(Debug, Clone, clap::Args)]
pub struct LoadgenArgs {
    /// ws(s)://HOST:PORT/PATH (WebSocket), tcp://HOST:PORT (raw length-prefixed frames),
    /// http(s)://HOST:PORT/PATH (Server-Sent Events). Loopback only (or --connect-to
    /// loopback). bench fanout and idle
    /// pass it in RTCHECK_LOADGEN_URL (userinfo and query may be secrets: never argv).
    #[arg(long, env = crate::bench::fanout::LOADGEN_URL_ENV, hide_env_values = true)]
    pub url: String,
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = parse_count, allow_negative_numbers = true)]
    pub connections: u64,
    /// Clients that connect with a small receive buffer and never read.
    #[arg(long, default_value_t = 0)]
    pub slow: u64,
    /// Rounds expected (seq 1..=rounds); 0 = idle clients, nothing expected.
    #[arg(long, default_value_t = 100)]
    pub rounds: u64,
    #[arg(long, default_value_t = 2048)]
    pub slow_rcvbuf: u32,
    /// Hard stop: the process ends by itself after this long even without a stop command.
    #[arg(long, default_value_t = 300)]
    pub max_seconds: u64,
    #[arg(long, default_value_t = 64)]
    pub connect_concurrency: usize,
    /// WebSocket read buffer per client (small: 10,000 clients share one process).
    #[arg(long, default_value_t = 4096)]
    pub read_buffer: usize,
    /// server, ws, or 'POST URL' (bench fanout passes it in RTCHECK_PUBLISH, headers in
    /// RTCHECK_PUBLISH_HEADERS: never on argv).
    #[arg(long, env = "RTCHECK_PUBLISH", hide_env_values = true, default_value = "server", value_parser = crate::bench::publisher::PublishVia::parse)]
    pub publish: crate::bench::publisher::PublishVia,
    #[arg(long)]
    pub message: Option<String>,
    #[arg(long)]
    pub subscribe: Option<String>,
    #[arg(long)]
    pub seq_path: Option<String>,
    #[arg(long)]
    pub ts_path: Option<String>,
    #[arg(long, default_value_t = 1024)]
    pub size: u64,
    #[arg(long, default_value_t = 5.0)]
    pub rate: f64,
    #[command(flatten)]
    pub app: crate::cmd::reach::AppProtocolArgs,
    #[command(flatten)]
    pub reach: crate::cmd::reach::ReachArgs,
    /// `bench fanout --allow-remote`: the remote address resolved by the orchestrator
    /// (any IP: consent was given there), used as --connect-to would be.
    #[arg(long, value_name = "ADDR:PORT", hide = true)]
    pub remote_addr: Option<std::net::SocketAddr>,
    /// A coordinated shard's clock correction (us), added to every latency.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, hide = true)]
    pub clock_correction_us: i64,
    /// Its uncertainty (us): corrected latencies below 0 by more make the run invalid.
    #[arg(long, hide = true)]
    pub clock_uncertainty_us: Option<u64>,
    #[arg(long, value_name = "A[,B...]", value_parser = crate::bench::target::Sources::parse, hide = true)]
    pub source_ip: Option<crate::bench::target::Sources>,
}

impl LoadgenArgs {
    pub fn options(&self) -> LoadgenOptions {
        LoadgenOptions {
            url: self.url.clone(),
            connections: self.connections,
            slow: self.slow,
            rounds: self.rounds,
            slow_rcvbuf: self.slow_rcvbuf,
            max_seconds: self.max_seconds,
            connect_concurrency: self.connect_concurrency,
            read_buffer: self.read_buffer,
            publish: self.publish.clone(),
            message: self.message.clone(),
            subscribe: self.subscribe.clone(),
            seq_path: self.seq_path.clone(),
            ts_path: self.ts_path.clone(),
            size: self.size,
            rate: self.rate,
            connect_to: self.remote_addr.or(self.reach.connect_to),
            ca: self.reach.ca.clone(),
            app: self.app.app_protocol,
            app_sub: self.app.subscribe(),
            clock_correction_us: self.clock_correction_us,
            clock_uncertainty_us: self.clock_uncertainty_us,
            sources: self.source_ip.clone().map(|s| s.0).unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Examples:
  the seed's load: every scenario at 10,000:
    rtcheck bench fanout

    rtcheck bench fanout --connections 2000 --scenario F,A,C3
    rtcheck bench fanout --connections 2000 --format markdown \\
      --output bench.md
  another server (loopback only):
    rtcheck bench fanout --server ws://127.0.0.1:8080/ws --connections 1000
  a foreign hub, chat-style (rtcheck publishes on its own connection):
    rtcheck bench fanout --server ws://127.0.0.1:8080/ws --publish ws \\
      --scenario A,C --message '{\"type\":\"msg\",\"text\":\"{seq} {ts} {pad}\"}' \\
      --seq-path text --ts-path text
  a foreign hub with a publish API:
    rtcheck bench fanout --server ws://127.0.0.1:8080/ws \\
      --publish 'POST http://127.0.0.1:8080/publish' \\
      -H 'Authorization: Bearer $TOKEN' --message 'hello {marker} {pad}'
  through your TLS proxy (ssh -L 8443:staging-proxy:443 HOST first):
    rtcheck bench fanout --server wss://staging.example.com/ws \\
      --connect-to 127.0.0.1:8443 --publish ws --scenario A,C

Scenarios: F raw-TCP floor, A baseline, C1/C2 slow clients with shard writers (no deadline /
1 s deadline), C3 slow clients with per-client queues, G1 per-client copy + allocation, G3
shared buffer + allocation, P1 one server worker thread. With --server: A (all healthy) and
C (slow clients among them), whose verdict names the shape found: C1, C2 or C3.
Templates: {seq}, {ts} (scheduled publish time, ns since the epoch), {pad} (filler to
--size), {marker} (seq and ts in one string any receiver finds, whatever wraps it).
Exit codes: 0 every result valid (and every --threshold held), 1 a result failed its
validity check or a --threshold was crossed, 2 error.")]
#[command(
    edit_arg("app_protocol", |a| a.help(
        "With --server: the library protocol its clients speak (socketio, \
         signalr, phoenix, actioncable, graphql-ws, stomp, sockjs, mqtt or raw). \
         Default: detected from the URL where it is unambiguous (`?EIO=4`, \
         `/websocket?vsn=`, `/cable`...)"
    )),
    edit_arg("channel", |a| a.help(
        "With --app-protocol: what to subscribe to (Phoenix topic, ActionCable \
         channel, STOMP destination, MQTT topic)"
    )),
    edit_arg("event", |a| a.help(
        "With --app-protocol: the Socket.IO event or SignalR method that carries \
         the payload, and the one rtcheck publishes with --publish ws (default \
         `message`)"
    ))
)]
pub struct FanoutArgs {
    /// Clients (the seed: 10,000; on 2 cores 2,000 is the seed's load per core).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CONNECTIONS, value_parser = parse_count, allow_negative_numbers = true)]
    pub connections: u64,
    /// Messages per client (one per round).
    #[arg(long, default_value_t = 100, value_parser = parse_count, allow_negative_numbers = true)]
    pub rounds: u64,
    /// Payload bytes per message, units allowed (1024, 4KiB) (at least 16).
    #[arg(long, default_value = "1024", value_parser = rtcheck_base::units::parse_size)]
    pub size: u64,
    /// Rounds per second.
    #[arg(long, default_value_t = 5.0)]
    pub rate: f64,
    /// Slow clients in C1, C2, C3 (never read; SO_RCVBUF 2 KB; server SO_SNDBUF 4 KB).
    /// Default 50; with --server, none unless given.
    #[arg(long, value_parser = super::parse_count0, allow_negative_numbers = true)]
    pub slow: Option<u64>,
    /// Comma-separated: F (raw-TCP floor), A, C1, C2, C3, G1, G3, P1. F runs first even when
    /// not listed, so every row is also shown as a ratio to what this host can do at best.
    /// With --server: A, C or A,C (default: one run with --slow slow clients).
    #[arg(long, value_name = "LIST")]
    pub scenario: Option<String>,
    /// Do not add the floor F to the scenarios (rows then have no ratio to F).
    #[arg(long)]
    pub no_floor: bool,
    /// Measure another server instead: ws:// or wss://HOST:PORT/PATH on loopback (or any
    /// name with --connect-to). Scenarios then do not apply: one run, with --slow slow
    /// clients if given.
    #[arg(long)]
    pub server: Option<String>,
    /// With --server: the server's process(es), to sample its RSS, fds, threads and CPU
    /// through the run (`"$(pidof NAME)"` or 1,2,3). Default: the process listening on
    /// --server's port, when it runs on this host and this user can read its fds.
    #[arg(long, value_name = "PIDS", value_parser = crate::cmd::parse_pids)]
    pub pid: Option<crate::cmd::PidList>,
    /// With --server, who publishes: `server` (it publishes rtcheck's payload by itself,
    /// started by /control/start), `ws` (rtcheck sends each message on a connection of
    /// its own and the server broadcasts it, chat-style), or 'POST URL' (the app's
    /// publish API).
    #[arg(long, default_value = "server", value_parser = crate::bench::publisher::PublishVia::parse)]
    pub publish: crate::bench::publisher::PublishVia,
    /// What rtcheck publishes: a template with {seq}, {ts}, {pad}, {marker}
    /// (default: rtcheck's JSON payload).
    #[arg(long, value_name = "TEMPLATE")]
    pub message: Option<String>,
    /// Sent by every client (and the publisher) after connecting: join a room or channel.
    #[arg(long, value_name = "TEMPLATE")]
    pub subscribe: Option<String>,
    /// JSON path of the sequence in a received frame (e.g. data.seq, or text when seq
    /// and ts are the two numbers inside one string). With --ts-path.
    #[arg(long, value_name = "PATH")]
    pub seq_path: Option<String>,
    /// JSON path of the scheduled time ({ts}) in a received frame. With --seq-path.
    #[arg(long, value_name = "PATH")]
    pub ts_path: Option<String>,
    /// A header for --publish 'POST URL' ('Name: value'; never printed, never on a
    /// child's command line). Repeatable.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// The clients' transport on --server: ws (WebSocket) or sse (Server-Sent Events on
    /// an http:// URL; the event's `id:` is the seq when the payload carries none).
    #[arg(long, value_enum, default_value = "ws")]
    pub transport: FanoutTransport,
    #[command(flatten)]
    pub app: crate::cmd::reach::AppProtocolArgs,
    #[command(flatten)]
    pub reach: crate::cmd::reach::ReachArgs,
    #[command(flatten)]
    pub out: OutputArgs<BenchFormats>,
    /// Fail (exit 1) when a figure crosses EXPR, e.g. 'A.p999 < 45ms', 'lost_silently ==
    /// 0' (every scenario): keys of the JSON report, at the top or in each of `scenarios`;
    /// an unknown name is exit 2, an invalid run fails every threshold. Repeatable.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = crate::findings::threshold::parse)]
    pub thresholds: Vec<crate::findings::threshold::Threshold>,
    /// Also write the JSON report here (atomically), whatever --format says.
    #[arg(long, value_name = "PATH")]
    pub save_json: Option<PathBuf>,
    /// Text: every validity check (not only those that did not pass), the full latency
    /// and server tables and the seed's figures.
    #[arg(long)]
    pub explain: bool,
    /// Longest wait for all clients to connect.
    #[arg(long, default_value = "120s", value_parser = rtcheck_base::units::parse_duration)]
    pub connect_timeout: Duration,
    /// How long to wait past the last scheduled round for stragglers.
    #[arg(long, default_value = "5s", value_parser = rtcheck_base::units::parse_duration, hide = true)]
    pub drain: Duration,
    /// Shard I of N (with --server): hold this share of --connections and --slow; the
    /// JSON result carries the full histogram for `rtcheck bench merge`.
    #[arg(long, value_name = "I/N", value_parser = crate::bench::shard::Shard::parse, help_heading = SHARDS)]
    pub shard: Option<crate::bench::shard::Shard>,
    /// When every shard starts publishing and measuring: unix seconds or RFC 3339
    /// (2026-12-06T20:00:00Z), the same on every shard.
    #[arg(long, value_name = "TIME", value_parser = crate::bench::shard::parse_start_at, help_heading = SHARDS)]
    pub start_at: Option<u64>,
    /// The one shard that publishes (--publish ws, 'POST URL', or starts rtcheck's
    /// server); the others only receive.
    #[arg(long, value_name = "I", default_value_t = 1, help_heading = SHARDS)]
    pub publisher_shard: u32,
    /// Start the shards together through Redis (redis://HOST:PORT): a barrier, one start
    /// time, each shard's clock offset estimated and subtracted.
    #[arg(long, value_name = "URL", help_heading = SHARDS)]
    pub coordinate: Option<String>,
    /// The run's name on the --coordinate Redis (the same on every shard; one run at a
    /// time per name: a name still held by a run in progress, or by one killed within
    /// the hour, is refused).
    #[arg(long, value_name = "NAME", default_value = "default", help_heading = SHARDS)]
    pub run_id: String,
    /// Bind the clients to these local addresses, round-robin: A[,B...] or an IPv4
    /// range A-B. Each brings its own ephemeral port range (about 28,000 by default).
    #[arg(long, value_name = "A[,B...]", value_parser = crate::bench::target::Sources::parse, help_heading = SHARDS)]
    pub source_ip: Option<crate::bench::target::Sources>,
    /// Print this run as N shards for another system instead of running it: `k8s-job N`
    /// (a Kubernetes Indexed Job and the merge step; nothing is applied).
    #[arg(long, num_args = 2, value_names = ["KIND", "N"], help_heading = SHARDS)]
    pub emit: Vec<String>,
    /// With --emit k8s-job: the container image with rtcheck on its PATH.
    #[arg(long, default_value = "rtcheck:latest", help_heading = SHARDS)]
    pub image: String,
    /// With --emit k8s-job: the Job's name (and its pods' label).
    #[arg(long, default_value = "rtcheck-bench", help_heading = SHARDS)]
    pub job_name: String,
}

/// Their own heading in --help.
const SHARDS: &str = "Shards (one run over several machines; then rtcheck bench merge)";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FanoutTransport {
    Ws,
    Sse,
}

impl FanoutArgs {
    pub fn options(&self) -> anyhow::Result<FanoutOptions> {
        const ALL: &str = "F,A,C1,C2,C3,G1,G3,P1";
        let (scenario, foreign) = match (&self.server, &self.scenario) {
            (Some(_), Some(s)) => (
                scenario::ScenarioList(vec![]),
                scenario::parse_foreign_list(s).map_err(anyhow::Error::msg)?,
            ),
            (Some(_), None) => (scenario::ScenarioList(vec![]), vec![]),
            (None, s) => (
                scenario::parse_list_arg(s.as_deref().unwrap_or(ALL))
                    .map_err(|e| anyhow::anyhow!("--scenario: {e}"))?,
                vec![],
            ),
        };
        // --allow-remote: --server's own address, resolved once, goes where --connect-to
        // would (the URL keeps its name for TLS and Host).
        let to = match &self.server {
            Some(url) => self.reach.connect_to_for(url)?,
            None => self.reach.connect_to,
        };
        let remote = to.is_some() && self.reach.connect_to.is_none();
        let share = |n: u64| self.shard.map_or(n, |s| s.share(n));
        Ok(FanoutOptions {
            connections: share(self.connections),
            rounds: self.rounds,
            size: self.size,
            rate: self.rate,
            slow: self.slow.map(share),
            scenario,
            no_floor: self.no_floor,
            server: self.server.clone(),
            pids: self.pid.clone().map(|p| p.0).unwrap_or_default(),
            connect_timeout: self.connect_timeout,
            drain: self.drain,
            foreign,
            publish: self.publish.clone(),
            message: self.message.clone(),
            subscribe: self.subscribe.clone(),
            seq_path: self.seq_path.clone(),
            ts_path: self.ts_path.clone(),
            headers: self.headers.clone(),
            sse: self.transport == FanoutTransport::Sse,
            connect_to: to,
            ca: self.reach.ca.clone(),
            app_protocol: self.app.app_protocol,
            app_sub: self.app.subscribe(),
            remote,
            shard: self.shard,
            start_at_ns: self.start_at,
            publisher_shard: self.publisher_shard,
            coordinate: self.coordinate.clone(),
            run_id: self.run_id.clone(),
            sources: self.source_ip.clone().unwrap_or_default(),
        })
    }
}

fn run_fanout(a: FanoutArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    a.out.validate()?;
    if !a.emit.is_empty() {
        return emit_k8s(&a);
    }
    let opts = a.options()?;
    if a.coordinate.is_some() && !cfg!(feature = "redis") {
        return Err(super::feature_off("bench fanout --coordinate", "redis"));
    }
    if a.reach.allow_remote && a.server.is_none() {
        anyhow::bail!("--allow-remote goes with --server (the embedded server runs here)");
    }
    if opts.remote {
        // Refusals first (one line, nothing sent), then what will be sent.
        fanout::validate(&opts)?;
    }
    if let Some(plan) = fanout::remote_plan(&opts) {
        if let Some(to) = opts.connect_to {
            crate::sys::control::consent_remote(to);
        }
        eprintln!(
            "{}",
            crate::report::text::wrap(&plan, 80, "", "  ").trim_end()
        );
    }
    if a.shard.is_some() && !a.thresholds.is_empty() {
        anyhow::bail!("--threshold is judged once, by rtcheck bench merge over every shard");
    }
    let (report, hists) = fanout::run_full(&opts)?;
    if let Some(shard) = a.shard {
        let (histogram, clock) = hists.into_iter().next().unwrap_or_default();
        let r = crate::bench::shard::ShardResult {
            report,
            shard,
            histogram,
            start_at_ns: a.start_at,
            clock,
            run_id: a.coordinate.is_some().then(|| a.run_id.clone()),
        };
        return emit_shard(&r, &a, ctx);
    }
    emit_bench(
        &report,
        &a.out,
        &a.thresholds,
        a.save_json.as_deref(),
        a.explain,
        ctx,
    )
}

/// A shard's result: JSON (here and --save-json) is the whole [`ShardResult`] that
/// `bench merge` reads; the other formats show the shard's own run.
fn emit_shard(
    r: &crate::bench::shard::ShardResult,
    a: &FanoutArgs,
    ctx: Ctx,
) -> anyhow::Result<ExitCode> {
    let json = crate::report::json::render(r)?;
    if let Some(p) = &a.save_json {
        rtcheck_base::outfile::write_atomic(p, json.as_bytes())?;
    }
    let report = &r.report;
    a.out.emit_with(ctx.color, |f, p| {
        Ok(match BenchFormat::of(f)? {
            BenchFormat::Json => json.clone(),
            BenchFormat::Text => doc::text::render(&bench_doc(report, a.explain)?, &p),
            BenchFormat::Markdown => doc::markdown::render(&bench_doc(report, false)?),
            // The page holds every check and the full tables (html folds nothing away).
            BenchFormat::Html => doc::html::render(&bench_doc(report, true)?),
            BenchFormat::Junit | BenchFormat::Github => {
                let results = report
                    .scenarios
                    .iter()
                    .map(|s| (s.name.as_str(), s.valid, s.notes.as_slice()));
                let findings = findings_report(&report.command, results, &[]);
                match BenchFormat::of(f)? {
                    BenchFormat::Junit => crate::report::junit::render(&findings, FailOn::Fail)?,
                    _ => crate::report::github::render(&findings),
                }
            }
        })
    })?;
    Ok(super::exit::verdict(false, !report.valid))
}

/// A bench report in every format, its thresholds judged (fanout, merge).
pub fn emit_bench(
    report: &crate::bench::model::BenchReport,
    out: &OutputArgs<BenchFormats>,
    thresholds: &[crate::findings::threshold::Threshold],
    save_json: Option<&std::path::Path>,
    explain: bool,
    ctx: Ctx,
) -> anyhow::Result<ExitCode> {
    let results = || {
        report
            .scenarios
            .iter()
            .map(|s| (s.name.as_str(), s.valid, s.notes.as_slice()))
    };
    let invalid = invalid_scenarios(results());
    let gated = gates(thresholds, report, invalid.as_deref());
    let found = gated.as_ref().map_or(&[][..], Vec::as_slice);
    let findings = findings_report(&report.command, results(), found);
    let render = |f: Format, p: crate::report::Palette| -> anyhow::Result<String> {
        Ok(match BenchFormat::of(f)? {
            BenchFormat::Text => {
                doc::text::render(&bench_doc(report, explain)?, &p) + &gates::text(found, p)
            }
            BenchFormat::Json => crate::report::json::render(&with_thresholds(report, found)?)?,
            BenchFormat::Markdown => {
                doc::markdown::render(&bench_doc(report, false)?) + &gates::markdown(found)
            }
            BenchFormat::Junit => crate::report::junit::render(&findings, FailOn::Fail)?,
            BenchFormat::Github => crate::report::github::render(&findings),
            BenchFormat::Html => gates::html(doc::html::render(&bench_doc(report, true)?), found),
        })
    };
    if let Some(p) = save_json {
        let json = crate::report::json::render(&with_thresholds(report, found)?)?;
        rtcheck_base::outfile::write_atomic(p, json.as_bytes())?;
    }
    out.emit_with(ctx.color, render)?;
    gate_exit(report.valid, gated)
}

#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Examples:
  RSS per idle WebSocket and SSE connection:
    rtcheck bench idle --connections 10000

    rtcheck bench idle --connections 2000 --format json

  What one connection costs on your server (200 and 1,000, checked at 2,000):
    rtcheck bench idle --server ws://127.0.0.1:8080/ws \\
      --connections 200,1000,2000

  Plain, TLS (your proxy's wss:// endpoint) and permessage-deflate:
    rtcheck bench idle --server ws://127.0.0.1:8080/ws \\
      --tls-url wss://127.0.0.1:8443/ws --ca ca.pem \\
      --variants plain,tls,deflate

  Active (200 B to every client 10 times a second), saved in the profile:
    rtcheck bench idle --server ws://127.0.0.1:8080/ws \\
      --activity 10/s --size 200 \\
      --publish 'POST http://127.0.0.1:8080/publish' --save profile.yaml

  A Socket.IO server's cost per client with its session (detected from the URL):
    rtcheck bench idle \\
      --server 'ws://127.0.0.1:3000/socket.io/?EIO=4&transport=websocket'")]
#[command(
    edit_arg("app_protocol", |a| a.help(
        "With --server: the library protocol each held connection speaks \
         (socketio, signalr, phoenix, actioncable, graphql-ws, stomp, sockjs, \
         mqtt, raw): its handshake done and its heartbeat kept, so the cost is \
         the library's session. Default: the one the URL names \
         (/socket.io/?EIO=4...), else raw"
    )),
    edit_arg("channel", |a| a.help(
        "With --app-protocol: what to subscribe to (Phoenix topic, ActionCable \
         channel, STOMP destination, MQTT topic)"
    )),
    edit_arg("event", |a| a.help(
        "With --app-protocol: the Socket.IO event or SignalR method that carries \
         data"
    ))
)]
pub struct IdleArgs {
    /// Idle clients per protocol. With --server: A,B,N (fit from A and B, checked at
    /// N), or N alone (A = N/10, B = N/2); default 200,1000,2000.
    #[arg(long, value_name = "N", value_delimiter = ',', value_parser = parse_count, allow_negative_numbers = true)]
    pub connections: Option<Vec<u64>>,
    /// Protocols to measure, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ws,sse")]
    pub protocol: Vec<IdleProto>,
    /// Time to let the server settle after the last connection before reading RSS.
    #[arg(long, default_value = "2s", value_parser = rtcheck_base::units::parse_duration)]
    pub settle: Duration,
    /// Longest wait for all clients to connect.
    #[arg(long, default_value = "120s", value_parser = rtcheck_base::units::parse_duration)]
    pub connect_timeout: Duration,
    /// Measure your own server instead: ws://HOST:PORT/PATH (or http:// for SSE). Its
    /// process is found by the port (or --pid); RSS, kernel socket memory and fds are
    /// read per connection.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// With --server: the TLS endpoint for --variants tls (wss:// or https://, e.g. your
    /// nginx in front); its process's memory is counted with the server's.
    #[arg(long, value_name = "URL")]
    pub tls_url: Option<String>,
    /// With --server: the server's process(es) (`"$(pidof NAME)"` or 1,2,3).
    #[arg(long, value_name = "PIDS", value_parser = crate::cmd::parse_pids)]
    pub pid: Option<crate::cmd::PidList>,
    /// With --server: plain, tls, deflate (permessage-deflate offered), comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "plain")]
    pub variants: Vec<crate::bench::conncost::Variant>,
    /// With --server: idle, or a message to every client N times a second (1/s, 10/s)
    /// through --publish or the server's own traffic.
    #[arg(long, default_value = "idle", value_parser = crate::bench::conncost::Activity::parse)]
    pub activity: crate::bench::conncost::Activity,
    /// With --activity: the message size in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 100)]
    pub size: usize,
    /// With --activity: 'POST http://HOST:PORT/PATH', your app's publish API (its body
    /// goes to every client).
    #[arg(long, value_name = "'POST URL'", value_parser = crate::bench::publisher::PublishVia::parse)]
    pub publish: Option<crate::bench::publisher::PublishVia>,
    /// With --server: write the measured cost per variant into this profile
    /// (memory_per_connection:), read by choose and audit.
    #[arg(long, value_name = "PROFILE")]
    pub save: Option<PathBuf>,
    #[command(flatten)]
    pub app: crate::cmd::reach::AppProtocolArgs,
    #[command(flatten)]
    pub reach: super::reach::ReachArgs,
    #[command(flatten)]
    pub out: OutputArgs<BenchFormats>,
}

fn run_idle(a: IdleArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    a.out.validate()?;
    if a.server.is_some() {
        return run_conncost(a, ctx);
    }
    for (set, flag) in [
        (a.tls_url.is_some(), "--tls-url"),
        (a.pid.is_some(), "--pid"),
        (a.publish.is_some(), "--publish"),
        (a.save.is_some(), "--save"),
        (a.reach.allow_remote, "--allow-remote"),
        (a.app.app_protocol.is_some(), "--app-protocol"),
        (a.app.channel.is_some(), "--channel"),
        (a.app.event.is_some(), "--event"),
    ] {
        if set {
            anyhow::bail!("{flag} needs --server URL");
        }
    }
    let connections = match a.connections.as_deref() {
        None => DEFAULT_CONNECTIONS,
        Some([n]) => *n,
        Some(_) => anyhow::bail!("--connections A,B,N needs --server URL; give one number"),
    };
    let report = idle::run(&IdleOptions {
        connections,
        protocol: a.protocol.clone(),
        settle: a.settle,
        connect_timeout: a.connect_timeout,
    })?;
    let findings = findings_report(
        &report.command,
        report
            .results
            .iter()
            .map(|r| (r.protocol.as_str(), r.valid, r.notes.as_slice())),
        &[],
    );
    let doc = || crate::report::idle::idle_doc(&report);
    a.out.emit_with(ctx.color, |f, p| {
        Ok(match BenchFormat::of(f)? {
            BenchFormat::Text => crate::report::doc::text::render(&doc()?, &p),
            BenchFormat::Json => crate::report::json::render(&report)?,
            BenchFormat::Markdown => crate::report::doc::markdown::render(&doc()?),
            BenchFormat::Junit => crate::report::junit::render(&findings, FailOn::Fail)?,
            BenchFormat::Github => crate::report::github::render(&findings),
            BenchFormat::Html => crate::report::doc::html::render(&doc()?),
        })
    })?;
    Ok(super::exit::verdict(false, !report.valid))
}

/// The profile at `path` (or a new one) with the measured cost per variant in it.
fn saved_profile(
    path: &std::path::Path,
    r: &crate::bench::conncost::ConnCostReport,
) -> anyhow::Result<String> {
    use crate::bench::conncost::Variant;
    let mut p = if path.exists() {
        crate::profile::Profile::load("--save", path)?
    } else {
        crate::profile::Profile::default()
    };
    let of = |v: Variant| {
        r.results
            .iter()
            .find(|x| x.variant == v && x.valid)
            .and_then(|x| x.per_connection)
            .map(|c| c.total_bytes.round() as u64)
    };
    let m = crate::profile::MemoryPerConnection {
        plain: of(Variant::Plain),
        tls: of(Variant::Tls),
        deflate: of(Variant::Deflate),
        activity: r.activity.clone(),
        how: format!("rtcheck bench idle --server {} on {}", r.server, r.host),
    };
    if m.sizing().is_none() {
        anyhow::bail!(
            "--save {}: no variant was measured; the profile is left as it was",
            path.display()
        );
    }
    p.memory_per_connection = Some(m);
    Ok(p.to_yaml())
}

/// `--connections` with --server: the two measured points and the target N.
pub fn server_points(c: Option<&[u64]>) -> anyhow::Result<([u64; 2], u64)> {
    match c {
        None => Ok(([200, 1000], 2000)),
        Some([n]) if *n >= 20 => Ok(([n / 10, n / 2], *n)),
        Some([a, b, n]) => Ok(([*a, *b], *n)),
        Some(_) => anyhow::bail!(
            "--connections with --server: A,B,N (e.g. 200,1000,2000) or N of at least 20"
        ),
    }
}

fn run_conncost(a: IdleArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    use crate::bench::conncost::{self, Activity, ServerOptions};
    let (points, target) = server_points(a.connections.as_deref())?;
    let trust = a.reach.trust()?;
    let publish = match &a.publish {
        Some(p @ crate::bench::publisher::PublishVia::Post { .. }) => p.post(None, &trust)?,
        Some(_) => anyhow::bail!("--publish with --server: 'POST URL' (your app's publish API)"),
        None => None,
    };
    if publish.is_some() && a.activity == Activity::Idle {
        anyhow::bail!("--publish needs --activity N/s (e.g. 1/s)");
    }
    let url = a.server.clone().unwrap_or_default();
    if a.reach.allow_remote {
        eprintln!(
            "bench idle --server: up to {target} connections per variant ({}) to {}",
            a.variants
                .iter()
                .map(|v| v.name())
                .collect::<Vec<_>>()
                .join(", "),
            rtcheck_base::redact::url(&url)
        );
    }
    let o = ServerOptions {
        url,
        tls_url: a.tls_url.clone(),
        pids: a.pid.clone().map(|p| p.0).unwrap_or_default(),
        points,
        target,
        variants: a.variants.clone(),
        activity: a.activity,
        size: a.size,
        publish,
        connect_to: a.reach.connect_to,
        trust,
        allow_remote: a.reach.allow_remote,
        settle: a.settle,
        connect_timeout: a.connect_timeout,
        app: a.app.app_protocol,
        app_sub: a.app.subscribe(),
    };
    let report = conncost::run(&o)?;
    let findings = findings_report(
        &report.command,
        report
            .results
            .iter()
            .map(|r| (r.variant.name(), r.valid, r.notes.as_slice())),
        &[],
    );
    let saved = match &a.save {
        Some(path) => Some((path.clone(), saved_profile(path, &report)?)),
        None => None,
    };
    let extra: Vec<(&std::path::Path, &[u8])> = saved
        .iter()
        .map(|(p, b)| (p.as_path(), b.as_bytes()))
        .collect();
    let doc = || crate::report::conncost::conncost_doc(&report);
    a.out.write_with(ctx.color, &extra, |f, p| {
        Ok(match BenchFormat::of(f)? {
            BenchFormat::Text => crate::report::doc::text::render(&doc()?, &p),
            BenchFormat::Json => crate::report::json::render(&report)?,
            BenchFormat::Markdown => crate::report::doc::markdown::render(&doc()?),
            BenchFormat::Junit => crate::report::junit::render(&findings, FailOn::Fail)?,
            BenchFormat::Github => crate::report::github::render(&findings),
            BenchFormat::Html => crate::report::doc::html::render(&doc()?),
        })
    })?;
    Ok(super::exit::verdict(false, !report.valid))
}

/// `--emit k8s-job N`: the Indexed Job and the steps around it, printed (or written to
/// -o), nothing applied. The pods get this command's own flags, minus where its output
/// went and what the Job sets itself; values that may be secrets never go in.
fn emit_k8s(a: &FanoutArgs) -> anyhow::Result<ExitCode> {
    use crate::bench::k8s;
    let (kind, n) = match a.emit.as_slice() {
        [k, n] => (k.as_str(), n.as_str()),
        _ => anyhow::bail!("--emit KIND N: e.g. --emit k8s-job 4"),
    };
    if kind != "k8s-job" {
        anyhow::bail!("--emit {kind}: the one kind is k8s-job (a Kubernetes Indexed Job)");
    }
    let shards: u32 = n
        .parse()
        .ok()
        .filter(|n| (1..=crate::bench::shard::MAX_SHARDS).contains(n))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--emit k8s-job {n}: N is the shard count, 1..={}",
                crate::bench::shard::MAX_SHARDS
            )
        })?;
    let Some(url) = &a.server else {
        anyhow::bail!("--emit k8s-job goes with --server (the pods load that server)");
    };
    crate::bench::target::parse_url(url)?;
    if !a.headers.is_empty() || a.subscribe.is_some() {
        anyhow::bail!("--emit k8s-job: -H and --subscribe may carry secrets and would be in the manifest; leave them out (put a token in the --server URL, which goes in a Secret)");
    }
    if a.shard.is_some() || a.start_at.is_some() || a.coordinate.is_none() {
        anyhow::bail!("--emit k8s-job: give --coordinate redis://... (the pods meet there and start together; the Job sets --shard)");
    }
    // Flags every pod would fail on: refused here rather than in N pods.
    if !a.thresholds.is_empty() {
        anyhow::bail!("--emit k8s-job: --threshold is judged once over every shard: give it to rtcheck bench merge");
    }
    if a.pid.is_some() {
        anyhow::bail!(
            "--emit k8s-job: --pid names a process on this host, not in the pods; leave it out"
        );
    }
    if a.reach.connect_to.is_some() {
        anyhow::bail!("--emit k8s-job: --connect-to is an address seen from this host; leave it out (the pods resolve --server)");
    }
    if a.reach.ca.is_some() {
        anyhow::bail!("--emit k8s-job: --ca is a file on this host, not in the pods; leave it out (mount the CA in the image and pass it there)");
    }
    if a.source_ip.is_some() {
        anyhow::bail!(
            "--emit k8s-job: --source-ip lists this host's addresses, not the pods'; leave it out"
        );
    }
    let publish_secret = matches!(a.publish, crate::bench::publisher::PublishVia::Post { .. });
    let spec = k8s::JobSpec {
        name: a.job_name.clone(),
        image: a.image.clone(),
        shards,
        connections_per_shard: a.connections.div_ceil(u64::from(shards)),
        args: pod_args(std::env::args().collect(), publish_secret),
        publish_secret,
    };
    let yaml = serde_yaml::to_string(&k8s::job(&spec))?;
    let text = format!("{}---\n{yaml}", k8s::steps(&spec));
    match &a.out.output {
        Some(p) => rtcheck_base::outfile::write_atomic(p, text.as_bytes())?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// This command's flags after `fanout`, without those the Job sets, those that come from
/// the Secret (--server, --coordinate, a POST --publish: `publish_secret`) or that say
/// where this process's output goes, shell-quoted.
fn pod_args(argv: Vec<String>, publish_secret: bool) -> Vec<String> {
    const DROP_VALUE: [&str; 12] = [
        "--server",
        "--coordinate",
        "--image",
        "--job-name",
        "--format",
        "-o",
        "--output",
        "--save-json",
        "--report",
        "--shard",
        "--start-at",
        "--color",
    ];
    const DROP: [&str; 1] = ["--allow-remote"];
    let mut out = Vec::new();
    let mut it = argv.into_iter().skip_while(|a| a != "fanout").skip(1);
    while let Some(arg) = it.next() {
        let name = arg.split('=').next().unwrap_or_default();
        if arg == "--emit" {
            it.next();
            it.next();
        } else if DROP_VALUE.contains(&name) || (publish_secret && name == "--publish") {
            if !arg.contains('=') {
                it.next();
            }
        } else if !DROP.contains(&name) {
            out.push(crate::bench::k8s::shell_quote(&arg));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_scenario_fails_every_threshold_and_no_threshold_is_no_finding() {
        let report = serde_json::json!({
            "valid": false,
            "scenarios": [{"name": "A", "p999_ms": 3.0, "valid": true, "notes": []},
                          {"name": "C1", "p999_ms": null, "valid": false, "notes": ["starved"]}],
        });
        let notes = [vec![], vec!["starved".to_string()]];
        let why = invalid_scenarios(
            [
                ("A", true, notes[0].as_slice()),
                ("C1", false, notes[1].as_slice()),
            ]
            .into_iter(),
        );
        assert_eq!(why.as_deref(), Some("scenario C1 invalid: starved"));
        let t = crate::findings::threshold::parse("A.p999 < 45ms").unwrap();
        let found = gates(&[t], &report, why.as_deref()).unwrap();
        assert_eq!(found[0].status, crate::findings::Status::Fail);
        assert!(
            found[0].observed.contains("scenario C1 invalid"),
            "{found:?}"
        );
        assert_eq!(
            gate_exit(true, Ok(found)).unwrap(),
            super::super::exit::findings()
        );
        assert!(gates(&[], &report, why.as_deref()).unwrap().is_empty());
        let v = with_thresholds(&report, &[]).unwrap();
        assert!(v.get("thresholds").is_none());
    }
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        a: FanoutArgs,
    }

    fn parse(args: &[&str]) -> FanoutArgs {
        Wrap::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .unwrap()
            .a
    }

    fn runs(args: &[&str]) -> Vec<&'static str> {
        parse(args)
            .options()
            .unwrap()
            .scenarios()
            .iter()
            .map(|s| s.name())
            .collect()
    }

    #[test]
    fn the_floor_runs_first_unless_refused() {
        assert_eq!(runs(&["--scenario", "A,C1"]), ["F", "A", "C1"]);
        assert_eq!(runs(&["--scenario", "C3,F"]), ["F", "C3"]);
        assert_eq!(runs(&["--scenario", "A", "--no-floor"]), ["A"]);
        assert_eq!(runs(&[]).len(), 8);
    }

    #[test]
    fn a_schedule_longer_than_an_hour_is_refused() {
        for rate in ["0.000001", "1e-300"] {
            let e = fanout::validate(
                &parse(&["--rounds", "10", "--rate", rate])
                    .options()
                    .unwrap(),
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains("the bound is 3600 s"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        // 3600 rounds at 1/s is exactly the bound: not refused for its length.
        let e = fanout::validate(
            &parse(&["--rounds", "3600", "--rate", "1"])
                .options()
                .unwrap(),
        );
        assert!(e
            .as_ref()
            .map_or_else(|e| !e.to_string().contains("bound is"), |_| true));
    }

    #[test]
    fn fanout_has_an_output_file_and_the_shared_connections_parser() {
        let a = parse(&["-o", "bench.md", "--format", "markdown"]);
        assert_eq!(
            a.out.output.as_deref(),
            Some(std::path::Path::new("bench.md"))
        );
        assert_eq!(a.connections, DEFAULT_CONNECTIONS);
        let e = Wrap::try_parse_from(["x", "--connections", "0"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("must be at least 1, got 0"), "{e}");
    }
}
