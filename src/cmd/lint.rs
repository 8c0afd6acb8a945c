//! `rtcheck lint PATH...`: parse proxy configs (nginx, HAProxy, Caddy, Caddy JSON, Ingress,
//! Traefik), run the realtime rules against the workload, render like audit (every format,
//! SARIF included) with the same exit policy.
use super::output::{AllFormats, OutputArgs};
use super::workload::{EditArg, PathFlags, WorkloadFlags};
use super::Ctx;
use crate::findings::{outcome, FailOn, Finding, Fix, Outcome, Status};
use crate::lint::{self, rules::RULES, Kind, Workload};
use crate::profile::Profile;
use crate::report::FindingsReport;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum KindArg {
    /// By file name and content.
    #[default]
    Auto,
    Nginx,
    Haproxy,
    Caddy,
    CaddyJson,
    Ingress,
    /// Traefik dynamic configuration (file provider YAML).
    Traefik,
}

impl KindArg {
    fn kind(self) -> Option<Kind> {
        match self {
            KindArg::Auto => None,
            KindArg::Nginx => Some(Kind::Nginx),
            KindArg::Haproxy => Some(Kind::Haproxy),
            KindArg::Caddy => Some(Kind::Caddy),
            KindArg::CaddyJson => Some(Kind::CaddyJson),
            KindArg::Ingress => Some(Kind::Ingress),
            KindArg::Traefik => Some(Kind::Traefik),
        }
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Which blocks carry a stream: a path or name with ws, websocket, socket (WebSocket), sse,
events, stream (SSE), poll (polling); an nginx location that passes Upgrade; a HAProxy
backend a frontend routes to on an Upgrade ACL; --ws-location/--sse-location patterns; and,
when nothing is named, every proxied block is the declared --transport.

Examples:
  rtcheck lint deploy/nginx.conf --profile profile.yaml --format github
  nginx -T | rtcheck lint --kind nginx -
  rtcheck lint haproxy.cfg --connections 50000 --ping 25s
  rtcheck lint nginx.conf --path cloudflare,aws-alb,nginx
  rtcheck lint k8s/ --format sarif -o lint.sarif

Exit codes: 0 nothing at or above --fail-on, 1 something is, 2 a config that does not parse,
usage or runtime error (or nothing could be checked).")]
#[command(
    edit_arg("connections", |a| a.help(
        "Concurrent connections in total [default: 10000] (per proxy: divided by machines)"
    )),
    edit_arg("transport", |a| a.help("Transport in use: blocks no name classifies carry it"))
)]
pub struct LintArgs {
    /// Config files or directories; `-` reads stdin (then --kind is required).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Config kind (auto: by file name and content).
    #[arg(long, value_enum, default_value_t = KindArg::Auto)]
    pub kind: KindArg,
    #[command(flatten)]
    pub workload: WorkloadFlags,
    /// The server's heartbeat (WebSocket ping or SSE comment) the timeouts must exceed.
    #[arg(long, value_name = "DURATION", value_parser = rtcheck_base::units::parse_duration)]
    pub ping: Option<Duration>,
    #[command(flatten)]
    pub hops: PathFlags,
    /// Blocks whose name or path contains PATTERN carry WebSocket.
    #[arg(long, value_name = "PATTERN")]
    pub ws_location: Vec<String>,
    /// Blocks whose name or path contains PATTERN carry SSE.
    #[arg(long, value_name = "PATTERN")]
    pub sse_location: Vec<String>,
    /// The application sends `X-Accel-Buffering: no` on its event streams.
    #[arg(long)]
    pub x_accel_buffering: bool,
    /// Also read nginx includes (and symlinks in a directory) outside the given paths.
    #[arg(long)]
    pub follow_includes: bool,
    #[command(flatten)]
    pub out: OutputArgs<AllFormats>,
    #[command(flatten)]
    pub baseline: super::baseline::BaselineArgs,
    /// Lowest status that makes the exit code 1.
    #[arg(long, value_enum, default_value_t = FailOn::Fail)]
    pub fail_on: FailOn,
    /// Show these rules as skipped (by request).
    #[arg(long, value_name = "ID", num_args = 1.., value_delimiter = ',')]
    pub skip: Vec<String>,
    /// Text: every rule in full, not only what needs action.
    #[arg(long)]
    pub explain: bool,
}

/// The workload from --profile and the flags, with the declared path (--path or the
/// profile's `path:`, and --override) the timeout rules check against.
fn workload(a: &LintArgs) -> anyhow::Result<(Profile, Workload)> {
    let mut p = a.workload.profile()?;
    if a.ping.is_some() {
        p.ping = a.ping;
    }
    let origin = a.workload.origin();
    p.validate().map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    let w = Workload {
        connections: p.connections_per_machine(),
        ping: p.ping,
        transport: p.transport,
        ws_patterns: a.ws_location.clone(),
        sse_patterns: a.sse_location.clone(),
        x_accel_buffering: a.x_accel_buffering,
        path: declared_path(a, &p)?,
    };
    if let Some(d) = &w.path {
        // The report's profile shows the path the rules used (--path and --override too).
        p.path = Some(
            d.ids
                .iter()
                .map(|id| crate::hops::chain::PathEntry {
                    id: id.clone(),
                    set: d.overrides.get(id).cloned().unwrap_or_default(),
                })
                .collect(),
        );
    }
    Ok((p, w))
}

/// The path of --path (or the profile's `path:`) with --override; its chain must compute.
fn declared_path(a: &LintArgs, p: &Profile) -> anyhow::Result<Option<lint::path::DeclaredPath>> {
    let Some((ids, overrides)) = a.hops.declared(p)? else {
        return Ok(None);
    };
    crate::hops::chain::compute(&ids, &overrides).map_err(|e| anyhow::anyhow!("--path: {e}"))?;
    Ok(Some(lint::path::DeclaredPath { ids, overrides }))
}

fn validate_skip(skip: &[String]) -> anyhow::Result<()> {
    for s in skip {
        if !RULES.iter().any(|r| r.id == s) && s != "lint-include" && s != "lint-input" {
            anyhow::bail!("--skip {s}: unknown rule (see `rtcheck lint --help` and docs/lint.md)");
        }
    }
    Ok(())
}

/// Parse every path (or stdin), then the rules: the findings report.
pub fn build_report(
    a: &LintArgs,
    profile: Profile,
    w: &Workload,
) -> anyhow::Result<FindingsReport> {
    let start = Instant::now();
    let stdin = a.paths.iter().any(|p| p.as_os_str() == "-");
    let loaded = if stdin {
        if a.paths.len() > 1 {
            anyhow::bail!("lint: `-` (stdin) cannot be combined with other paths");
        }
        let Some(kind) = a.kind.kind() else {
            anyhow::bail!(
                "lint -: stdin needs --kind (nginx, haproxy, caddy, caddy-json, ingress, traefik)"
            );
        };
        let text = crate::cmd::lint::read_stdin()?;
        lint::load::load_stdin(&text, kind)?
    } else {
        lint::load::load_paths(&a.paths, a.kind.kind(), a.follow_includes)?
    };
    let mut findings = lint::lint(&loaded.configs, w, &a.skip);
    let checked = findings.iter().any(|f| {
        !matches!(
            f.id.as_str(),
            "nginx-worker-connections" | "nginx-rlimit-nofile" | "haproxy-maxconn"
        )
    });
    if !checked {
        findings.push(no_streams(&loaded.configs));
    }
    findings.extend(loaded.skipped);
    let files: Vec<String> = loaded
        .configs
        .iter()
        .map(|c| format!("{} ({})", c.file, c.kind.as_str()))
        .collect();
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    Ok(FindingsReport::new(
        "lint",
        profile,
        Some(files.join(", ")),
        findings,
        ms,
    ))
}

/// Nothing in the configs could be told to carry a stream: a skip, never a pass.
fn no_streams(configs: &[lint::Config]) -> Finding {
    Finding {
        id: "lint-streams".into(),
        title: "a WebSocket, SSE or polling block found".into(),
        status: Status::Skip,
        observed: format!("{} config(s) read, no block carries a stream by its name or path", configs.len()),
        expected: "at least one block to check".into(),
        rule: "blocks are classified by name/path words, --ws-location/--sse-location, or --transport".into(),
        reason: Some("no WebSocket, SSE or polling block found: name them with --ws-location/--sse-location or declare --transport".into()),
        evidence: vec![],
        fix: Fix::default(),
        verify: None,
        verification: None,
        numbers: Default::default(),
        location: None,
    }
}

/// Stdin, bounded like a file.
pub fn read_stdin() -> anyhow::Result<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::io::stdin()
        .take(lint::load::MAX_FILE + 1)
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > lint::load::MAX_FILE {
        anyhow::bail!(
            "-: larger than {} MiB, not a config",
            lint::load::MAX_FILE >> 20
        );
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

pub fn run(a: LintArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    validate_skip(&a.skip)?;
    a.out.validate()?;
    let base = a.baseline.load(&[])?;
    let (profile, w) = workload(&a)?;
    let mut r = build_report(&a, profile, &w).map_err(|e| anyhow::anyhow!("lint: {e:#}"))?;
    let in_file = super::baseline::host_subject(None);
    let written = base.apply(&a.baseline, &mut r.findings, in_file)?;
    r.summary = crate::findings::Summary::of(&r.findings);
    let outcome = outcome(&r.findings, a.fail_on, &[], &a.skip);
    if let Outcome::Nothing(_) = &outcome {
        let why = r
            .findings
            .iter()
            .find_map(|f| f.reason.clone())
            .unwrap_or_default();
        anyhow::bail!("lint: nothing could be checked: {why}");
    }
    let extra: Vec<(&std::path::Path, &[u8])> = written
        .iter()
        .map(|(p, t)| (p.as_path(), t.as_bytes()))
        .collect();
    a.out.write_with(ctx.color, &extra, |f, p| {
        super::audit::render(&r, f, a.fail_on, p, a.explain)
    })?;
    Ok(super::exit::of_outcome(&outcome, false))
}
