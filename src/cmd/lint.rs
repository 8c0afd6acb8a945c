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
    /// Istio DestinationRule / EnvoyFilter YAML.
    Istio,
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
            KindArg::Istio => Some(Kind::Istio),
        }
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Which routes carry a stream, by evidence: one that forwards Upgrade (or a
HAProxy backend routed on an Upgrade ACL) carries WebSocket; one that turns
buffering off or holds responses far past 60 s carries a stream; a well-known realtime path
(/socket.io/, /cable, /api/v1/streaming, ...: docs/lint.md) carries its stack's;
--ws-location/--sse-location name more. Path words (ws, events, poll) count only
when nothing else does. --transport websocket,sse (or the profile) goes to the
catch-all route, for what no route carries. The header says why, per route.

Examples:
  rtcheck lint deploy/nginx.conf --profile profile.yaml --format github
  nginx -T | rtcheck lint --kind nginx -
  rtcheck lint haproxy.cfg --connections 50000 --ping 25s
  rtcheck lint nginx.conf --path cloudflare,aws-alb,nginx
  rtcheck lint k8s/ --format sarif -o lint.sarif

Exit codes: 0 nothing at or above --fail-on, 1 something is, 2 a config that does
not parse, usage or runtime error (or nothing could be checked).")]
#[command(
    edit_arg("connections", |a| a.help(
        "Concurrent connections in total [default: 10000] (per proxy: divided by machines)"
    )),
    edit_arg("transport", |a| a.help("Transports the app speaks, comma-separated (websocket,sse): the catch-all route carries those no route carries by evidence"))
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
    /// The proxy's version the defaults follow: VERSION (every config's proxy) or
    /// PRODUCT=VERSION (nginx=1.30.0); else read from its binary on PATH.
    #[arg(long, value_name = "[PRODUCT=]VERSION")]
    pub proxy_version: Vec<String>,
    /// Also read nginx includes (and symlinks in a directory) outside the given paths.
    #[arg(long)]
    pub follow_includes: bool,
    /// The library protocol the stream routes speak (socketio, signalr, phoenix,
    /// actioncable, sockjs...): its documented heartbeat is what the idle timeouts must
    /// hold when no --ping is given. Default: the one a route's path names
    /// (/socket.io/...); raw: none.
    #[arg(long, value_name = "NAME", value_parser = crate::cmd::reach::parse_app_protocol)]
    pub app_protocol: Option<rtcheck_wire::appproto::AppProtocol>,
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
        transports: p.declared_transports(),
        declared_by: Some(if a.workload.transport.is_empty() {
            format!("profile {origin}")
        } else {
            "--transport".into()
        }),
        ws_patterns: a.ws_location.clone(),
        sse_patterns: a.sse_location.clone(),
        x_accel_buffering: a.x_accel_buffering,
        path: declared_path(a, &p)?,
        versions: vec![],
        app: a.app_protocol,
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
        if !RULES.iter().any(|r| r.id == s)
            && s != "lint-include"
            && s != "lint-input"
            && !lint::rules::RETIRED.contains(&s.as_str())
        {
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
                "lint -: stdin needs --kind (nginx, haproxy, caddy, caddy-json, ingress, traefik, istio)"
            );
        };
        let text = crate::cmd::lint::read_stdin()?;
        lint::load::load_stdin(&text, kind)?
    } else {
        lint::load::load_paths(&a.paths, a.kind.kind(), a.follow_includes)?
    };
    let mut w = w.clone();
    w.versions = versions(&a.proxy_version, &loaded.configs)?;
    let w = &w;
    let linted = lint::lint_routes(&loaded.configs, w, &a.skip);
    let mut findings = linted.findings;
    // Istio objects have no routes: their idle timeouts are what is judged.
    let istio_values = loaded.configs.iter().any(|c| {
        let judged = |n: &lint::Node| n.children().iter().any(|k| k.name != "http.idleTimeout");
        c.kind == lint::Kind::Istio && c.nodes.iter().any(judged)
    });
    // Nor has ingress-nginx's controller ConfigMap: its values are the defaults judged.
    let istio_values = istio_values
        || loaded.configs.iter().any(|c| {
            c.kind == lint::Kind::Ingress && c.nodes.iter().any(|n| n.name == "configmap")
        });
    if !linted.routes.iter().any(|r| !r.carries.is_empty()) && !istio_values {
        if linted.routes.is_empty() && findings.iter().all(|f| f.status == Status::Pass) {
            anyhow::bail!("{}", proxies_nothing(&loaded.configs, &loaded.skipped));
        }
        if !linted.routes.is_empty() {
            findings.push(unclassified(&linted.routes));
        }
    }
    findings.extend(loaded.skipped);
    let files: Vec<String> = loaded
        .configs
        .iter()
        .map(|c| {
            let product = lint::version::product(c.kind);
            match lint::version::of(w, product) {
                Some(v) => format!(
                    "{} ({}, {product} {} from {})",
                    c.file,
                    c.kind.as_str(),
                    v.text,
                    v.from
                ),
                None => format!("{} ({})", c.file, c.kind.as_str()),
            }
        })
        .collect();
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let mut r = FindingsReport::new("lint", profile, Some(files.join(", ")), findings, ms);
    r.routes = linted.routes;
    Ok(r)
}

/// The proxies' versions: `--proxy-version [PRODUCT=]VERSION`, else each linted kind's
/// binary on PATH asked (`nginx -v`, `haproxy -v`, `caddy version`), bounded in time.
fn versions(
    flags: &[String],
    configs: &[lint::Config],
) -> anyhow::Result<Vec<lint::version::ProxyVersion>> {
    use lint::version::{parse, product, ProxyVersion};
    let mut products: Vec<&str> = configs.iter().map(|c| product(c.kind)).collect();
    products.dedup();
    let mut out: Vec<ProxyVersion> = Vec::new();
    for f in flags {
        let (who, v) = match f.split_once('=') {
            Some((p, v)) => (vec![p.trim()], v.trim()),
            None => (products.clone(), f.trim()),
        };
        let parts = parse(v).ok_or_else(|| {
            anyhow::anyhow!("--proxy-version {f}: not a version (1.30.0, or nginx=1.30.0)")
        })?;
        for p in who {
            out.retain(|x| x.product != p);
            out.push(ProxyVersion {
                product: p.to_string(),
                parts: parts.clone(),
                text: v.trim_start_matches(['v', 'V']).to_string(),
                from: "--proxy-version".into(),
            });
        }
    }
    for p in products {
        if out.iter().any(|x| x.product == p) {
            continue;
        }
        if let Some(v) = binary_version(p) {
            out.push(v);
        }
    }
    Ok(out)
}

/// Ask the product's binary on PATH for its version (two seconds at most).
fn binary_version(product: &str) -> Option<lint::version::ProxyVersion> {
    let (bin, arg) = match product {
        "nginx" => ("nginx", "-v"),
        "haproxy" => ("haproxy", "-v"),
        "caddy" => ("caddy", "version"),
        "traefik" => ("traefik", "version"),
        _ => return None,
    };
    let mut child = std::process::Command::new(bin)
        .arg(arg)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    let until = Instant::now() + Duration::from_secs(2);
    while child.try_wait().ok()?.is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().ok()?;
    let text = format!(
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (parts, text) = lint::version::from_output(&text.chars().take(4096).collect::<String>())?;
    Some(lint::version::ProxyVersion {
        product: product.into(),
        parts,
        text,
        from: format!("`{bin} {arg}` on PATH"),
    })
}

/// Proxied routes, none of which the config, the known paths or a declaration says carry
/// a stream: each listed with the flags that would declare it. A warn, never a pass.
fn unclassified(routes: &[lint::classify::RouteReport]) -> Finding {
    const SHOWN: usize = 12;
    // The pattern that names one route: its path (`/api`), else its name.
    let pattern = |r: &lint::classify::RouteReport| {
        r.route
            .split_whitespace()
            .rev()
            .find(|w| w.starts_with('/'))
            .or_else(|| r.route.split_whitespace().nth(1))
            .unwrap_or("/")
            .to_string()
    };
    let listed: Vec<String> = routes
        .iter()
        .take(SHOWN)
        .map(|r| format!("{} ({}:{})", r.route, r.file, r.line))
        .collect();
    let flags: Vec<String> = routes
        .iter()
        .take(SHOWN)
        .map(|r| {
            let p = pattern(r);
            format!("{}: --ws-location {p} or --sse-location {p}", r.route)
        })
        .collect();
    let more = routes.len().saturating_sub(SHOWN);
    Finding {
        id: "lint-streams".into(),
        title: "every proxied route classified".into(),
        status: Status::Warn,
        observed: format!(
            "{} proxied route(s), none says what it carries: {}{}",
            routes.len(),
            listed.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        ),
        expected: "the routes that carry WebSocket, SSE or polling known, so their rules run".into(),
        rule: "a route carries WebSocket when it forwards Upgrade, a stream when it turns buffering off or holds responses far past 60 s, or what a well-known realtime path or a declaration says".into(),
        reason: None,
        evidence: vec![],
        fix: Fix {
            summary: "declare what the app speaks: --transport websocket,sse (the catch-all route carries it), or name each route".into(),
            runtime: vec![],
            persistent: flags,
        },
        verify: None,
        verification: None,
        numbers: Default::default(),
        location: routes.first().map(|r| crate::findings::SourceLocation {
            file: r.file.clone(),
            line: r.line,
            block: Some(r.route.clone()),
        }),
    }
}

/// The error when no config proxies anything: what they serve instead.
fn proxies_nothing(configs: &[lint::Config], skipped: &[crate::findings::Finding]) -> String {
    const SERVES: &[&str] = &[
        "return",
        "root",
        "alias",
        "fastcgi_pass",
        "uwsgi_pass",
        "grpc_pass",
        "scgi_pass",
        "file_server",
        "respond",
        "redir",
        "php_fastcgi",
        "http-request",
        "redirect",
    ];
    let mut seen = Vec::new();
    let mut stack: Vec<&lint::Node> = configs.iter().flat_map(|c| c.nodes.iter()).collect();
    while let Some(n) = stack.pop() {
        if SERVES.contains(&n.name.as_str()) && seen.len() < 4 {
            seen.push(format!("{} at {}:{}", n.label(), n.file, n.line));
        }
        stack.extend(n.children().iter().rev());
    }
    let files: Vec<&str> = configs.iter().map(|c| c.file.as_str()).collect();
    let what = if seen.is_empty() {
        "no route at all".to_string()
    } else {
        seen.join(", ")
    };
    // `nginx.conf` alone with `include conf.d/*.conf`: the routes are in what was not read.
    let unread: Vec<&str> = skipped
        .iter()
        .filter(|f| f.id == "lint-include")
        .map(|f| f.observed.as_str())
        .take(3)
        .collect();
    let includes = if unread.is_empty() {
        String::new()
    } else {
        format!(
            "; not read: {} (lint reads only the given paths: give the directory, or --follow-includes)",
            unread.join(", ")
        )
    };
    format!(
        "nothing to check: {} proxies nothing (no proxy_pass, backend, reverse_proxy, router or Ingress path); it serves {what}{includes}",
        if files.is_empty() { "the input".to_string() } else { files.join(", ") }
    )
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
