//! `rtcheck audit`: flags to a Profile, the host snapshot and its pure checks, optionally
//! each finding demonstrated live (`--verify`, composed here with `crate::verify`).
use super::output::{GaugeFormat, GaugeFormats, OutputArgs};
use super::workload::WorkloadFlags;
use super::Ctx;
use crate::audit::{self, Host, Roots};
use crate::findings::{outcome, FailOn, Outcome};
use crate::profile::DEFAULT_CONNECTIONS;
use crate::profile::{Profile, Role};
use crate::report::{self, FindingsReport, Format, Palette};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

mod watch;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Check ids: fd-limit fd-system ephemeral-ports time-wait tcp-wmem tcp-keepalive somaxconn memory cpu conntrack

Examples:
  this host, 10,000 websocket connections, role server:
    rtcheck audit

    rtcheck audit --profile profile.yaml --format junit --output audit.xml
    rtcheck audit --connections 50000 --role proxy --fail-on warn
  judged at your traffic (cpu, memory), not the default 10 msg/s of 1 KiB:
    rtcheck audit --connections 50000 --rate 2 --size 512
  the limits of a running service (a master/worker one: its workers):
    rtcheck audit --pid \"$(pidof myserver)\"
    rtcheck audit --process nginx
  a pod's keepalive and port sysctls (its network namespace; as root):
    rtcheck audit --netns \"$(pidof -s myserver)\"
  the host, from a container with its /proc and /sys mounted:
    docker run -v /proc:/host/proc:ro -v /sys:/host/sys:ro ... \\
      rtcheck audit --procfs /host/proc --sysfs /host/sys

Exit codes: 0 nothing at or above --fail-on, 1 something is (or a required check was not
measured), 2 usage or runtime error (or nothing could be measured).")]
pub struct AuditArgs {
    #[command(flatten)]
    pub workload: WorkloadFlags,
    /// What the audited host does [default: server].
    #[arg(long, value_enum)]
    pub role: Option<Role>,
    /// Messages per second sent to each connection: cpu and memory are judged at it
    /// [default: 10, or the profile's rate:].
    #[arg(long, value_name = "MSGS_PER_S", value_parser = super::parse_rate, allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// Bytes per message, units allowed (512, 4KiB) [default: 1KiB, or the profile's size:].
    #[arg(long, value_name = "SIZE", value_parser = super::parse_message_size, allow_negative_numbers = true)]
    pub size: Option<u64>,
    /// procfs root (a container audits its host with -v /proc:/host/proc:ro).
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    pub procfs: PathBuf,
    /// sysfs root (cgroup limits are read under DIR/fs/cgroup).
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sysfs: PathBuf,
    /// Audit this process's own limits, fds, affinity, cgroup and listen backlog
    /// (default: rtcheck itself). A list as `pidof` prints it (`"$(pidof nginx)"`) or
    /// 1,2,3: a master/worker server's workers are judged.
    #[arg(long, value_name = "PIDS", value_parser = super::parse_pids)]
    pub pid: Option<super::PidList>,
    /// Audit the running process(es) called NAME (as --pid "$(pidof NAME)"; also a
    /// process title such as `gunicorn: master`).
    #[arg(long, value_name = "NAME", conflicts_with = "pid")]
    pub process: Option<String>,
    /// Read the network sysctls (keepalive, local port range, somaxconn) in the network
    /// namespace of process PID, e.g. a pod's, and judge those: they are per namespace
    /// and a pod does not inherit the host's. Needs root (joins the namespace to read).
    #[arg(long, value_name = "PID")]
    pub netns: Option<u32>,
    /// The audited host's root: the running proxies' configs are read under it
    /// (etc/nginx/nginx.conf, etc/haproxy/haproxy.cfg, etc/caddy/Caddyfile) and their
    /// open-files limits judged. Without it, only with --role proxy (root / for /proc).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Do not look for nginx, HAProxy or Caddy (their config and open-files limit).
    #[arg(long)]
    pub no_proxy_config: bool,
    #[command(flatten)]
    pub out: OutputArgs<GaugeFormats>,
    #[command(flatten)]
    pub baseline: super::baseline::BaselineArgs,
    /// Lowest status that makes the exit code 1 (skip: also a check that could not be
    /// measured). A required check not measured is exit 1, nothing measured exit 2.
    #[arg(long, value_enum, default_value_t = FailOn::Fail)]
    pub fail_on: FailOn,
    /// Show these checks as skipped (by request); they still appear in the report.
    #[arg(long, value_name = "ID", num_args = 1.., value_delimiter = ',')]
    pub skip: Vec<String>,
    /// Demonstrate each finding live on loopback (`rtcheck verify`) and attach the
    /// measurement (findings[].verification); an invalid measurement gives exit 1. With
    /// --profile, `verify delivery` runs too for its delivery and its findings are added.
    #[arg(long)]
    pub verify: bool,
    /// Text: every check in full (rule, evidence, every fix line), not only what needs action.
    #[arg(long)]
    pub explain: bool,
    /// Time bound for --verify.
    #[arg(long, value_name = "DURATION", default_value = "3m", value_parser = rtcheck_base::units::parse_duration)]
    pub verify_timeout: std::time::Duration,
    /// Re-audit every DURATION until SIGINT/SIGTERM (then exit 0), rewriting -o and every
    /// --report atomically each time: e.g. --report prometheus=FILE for node_exporter's
    /// textfile collector. Read-only, no --verify.
    #[arg(long, value_name = "DURATION", value_parser = rtcheck_base::units::parse_duration)]
    pub watch: Option<std::time::Duration>,
    /// Serve the gauges of the last audit at http://ADDR/metrics (re-audits every --watch,
    /// default 15s). Loopback only unless --listen-public.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Allow --listen on an address other than loopback: the gauges show this host's
    /// limits to anyone who can reach it.
    #[arg(long, requires = "listen")]
    pub listen_public: bool,
}

/// Profile from --profile (or defaults), then flags on top; transport resolved.
pub fn resolve_profile(a: &AuditArgs) -> anyhow::Result<Profile> {
    let mut p = a.workload.profile()?;
    if let Some(r) = a.role {
        p.role = r;
    }
    if let Some(r) = a.rate {
        p.rate = r;
    }
    if let Some(s) = a.size {
        p.size = s;
    }
    p.transport.get_or_insert(audit::checks::DEFAULT_TRANSPORT);
    // Named like choose does: the file when one was given, else the flags; a bad --rate
    // or --size is the flag's, whatever the file says.
    p.validate().map_err(|e| {
        let flag = (e.starts_with("rate:") && a.rate.is_some())
            || (e.starts_with("size:") && a.size.is_some());
        let origin = if flag {
            "flags".to_string()
        } else {
            a.workload.origin()
        };
        anyhow::anyhow!("{origin}: {e}")
    })?;
    Ok(p)
}

/// Snapshot + checks, timed: the report every format renders.
pub fn build_report(
    profile: Profile,
    roots: &Roots,
    skip: &[String],
) -> anyhow::Result<FindingsReport> {
    build_report_in(profile, roots, skip, None)
}

/// [`build_report`] with the network sysctls of `netns`'s namespace in place of the host's.
pub fn build_report_in(
    profile: Profile,
    roots: &Roots,
    skip: &[String],
    netns: Option<u32>,
) -> anyhow::Result<FindingsReport> {
    use audit::netns;
    let start = Instant::now();
    let mut host = Host::read(roots)?;
    let ns = match netns {
        Some(_) if roots.procfs != std::path::Path::new("/proc") => anyhow::bail!(
            "--netns joins a live process's namespace: it cannot be used with --procfs {}",
            roots.procfs.display()
        ),
        Some(pid) => {
            let (id, values) = netns::read(&roots.procfs, pid).map_err(|e| anyhow::anyhow!(e))?;
            Some(netns::apply(
                pid,
                id,
                netns::own(&roots.procfs),
                values,
                &mut host,
            ))
        }
        None => None,
    };
    let findings = audit::audit(&profile, &host, skip);
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let mut target = audit::describe_target(roots, &host);
    match &ns {
        Some(n) => target.push_str(&format!(
            "; network sysctls from the namespace of process {} ({})",
            n.pid, n.namespace
        )),
        None => {
            let env = std::env::var("KUBERNETES_SERVICE_HOST").ok();
            let sa = std::path::Path::new("/var/run/secrets/kubernetes.io/serviceaccount").is_dir();
            if let Some(why) = netns::in_pod(env.as_deref(), sa) {
                target.push_str(&format!(
                    "; running inside a Kubernetes pod ({why}): the network sysctls are this pod's, not the node's"
                ));
            }
        }
    }
    let mut r = FindingsReport::new("audit", profile, Some(target), findings, ms);
    r.netns = ns;
    Ok(r)
}

/// Render an audit report in any format (also used by the guided run).
pub fn render(
    r: &FindingsReport,
    format: Format,
    fail_on: FailOn,
    p: Palette,
    explain: bool,
) -> anyhow::Result<String> {
    let doc = || report::audit::audit_doc(r, explain);
    Ok(match GaugeFormat::of(format)? {
        GaugeFormat::Text => report::doc::text::render(&doc()?, &p),
        GaugeFormat::Json => report::json::render(r)?,
        GaugeFormat::Yaml => report::yaml::render(r)?,
        GaugeFormat::Markdown => report::doc::markdown::render(&doc()?),
        GaugeFormat::Junit => report::junit::render(r, fail_on)?,
        GaugeFormat::Github => report::github::render(r),
        GaugeFormat::Html => report::doc::html::render(&report::audit::audit_page(r)?),
        GaugeFormat::Sarif => report::sarif::render(r)?,
        GaugeFormat::Prometheus => report::prometheus::render(r, report::prometheus::unix_now()),
    })
}

/// A proxy on the audited host (issue 25): its config linted, its fd limit judged. The
/// root is --root, else `/` when auditing this host's /proc; a mounted procfs without
/// --root reads no config at all (nothing outside what was mounted).
fn proxy_findings(a: &AuditArgs, p: &Profile) -> anyhow::Result<Vec<crate::findings::Finding>> {
    let root = a
        .root
        .clone()
        .or_else(|| (a.procfs == std::path::Path::new("/proc")).then(|| PathBuf::from("/")));
    let w = crate::lint::Workload {
        connections: p.connections_per_machine(),
        ping: p.ping,
        // The declared transport only (audit's default websocket is not a declaration).
        transports: if !a.workload.transport.is_empty() || a.workload.profile.is_some() {
            p.declared_transports()
        } else {
            vec![]
        },
        // The profile's `path:` (issue 24): the proxy's timeouts carry the chain's heartbeat.
        path: p
            .hop_path()
            .map(|(ids, overrides)| crate::lint::path::DeclaredPath { ids, overrides }),
        ..Default::default()
    };
    crate::lint::host::findings(&a.procfs, root.as_deref(), &w)
        .map_err(|e| anyhow::anyhow!("audit: proxy config: {e:#}"))
}

pub fn run(a: AuditArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    audit::validate_skip(&a.skip)?;
    // Several transports on one route are lint's (`--transport websocket,sse`).
    if a.workload.transport.len() > 1 {
        anyhow::bail!("--transport: audit judges a host for one transport; give one");
    }
    a.out.validate()?;
    let base = a.baseline.load(&[])?;
    if a.watch.is_some() || a.listen.is_some() {
        return watch::run(&a, &base, ctx);
    }
    let (r, outcome, written) = once(&a, &base)?;
    let invalid_measurement = r
        .findings
        .iter()
        .any(|f| f.verification.as_ref().is_some_and(|v| !v.valid));
    if let Outcome::Nothing(why) = &outcome {
        anyhow::bail!("audit: {why}");
    }
    let extra: Vec<(&std::path::Path, &[u8])> = written
        .iter()
        .map(|(p, t)| (p.as_path(), t.as_bytes()))
        .collect();
    a.out.write_with(ctx.color, &extra, |f, p| {
        render(&r, f, a.fail_on, p, a.explain)
    })?;
    if let Outcome::Unmeasured(why) = &outcome {
        eprintln!("rtcheck: audit: {}", rtcheck_base::escape::plain(why));
    }
    Ok(super::exit::of_outcome(&outcome, invalid_measurement))
}

/// The roots with the judged process: --pid's list or --process's name resolved, a
/// master/worker server's first worker (its workers carry the connections).
pub fn audited(a: &AuditArgs) -> anyhow::Result<Roots> {
    let mut roots = Roots {
        procfs: a.procfs.clone(),
        sysfs: a.sysfs.clone(),
        ..Roots::default()
    };
    let given = match (&a.pid, &a.process) {
        (Some(p), _) => p.0.clone(),
        (None, Some(name)) => {
            let found = audit::process::named(&table(&a.procfs), name);
            if found.is_empty() {
                anyhow::bail!(
                    "--process {name}: no running process by that name (under {})",
                    a.procfs.display()
                );
            }
            found
        }
        (None, None) => return Ok(roots),
    };
    if let Some(p) = given
        .iter()
        .find(|p| !a.procfs.join(p.to_string()).is_dir())
    {
        anyhow::bail!(
            "--pid {p}: no such process ({} missing)",
            a.procfs.join(p.to_string()).display()
        );
    }
    let j = audit::process::resolve(&table(&a.procfs), &given)
        .ok_or_else(|| anyhow::anyhow!("--pid: no process id"))?;
    roots.pid = Some(j.pid);
    roots.group = j.group;
    roots.others = j.others;
    Ok(roots)
}

/// The process table under `procfs`, with the names processes show.
fn table(procfs: &std::path::Path) -> Vec<audit::process::Proc> {
    rtcheck_base::os::process::stats(procfs)
        .into_iter()
        .map(|(pid, st)| {
            let cmdline =
                std::fs::read(procfs.join(pid.to_string()).join("cmdline")).unwrap_or_default();
            audit::process::Proc {
                pid,
                ppid: st.ppid,
                name: audit::process::shown_name(&st.comm, &cmdline),
                comm: st.comm,
            }
        })
        .collect()
}

/// `--verify` with --pid runs its experiments on rtcheck's own server: each result is a
/// reference beside the user's process, never a figure of it.
fn label_reference(findings: &mut [crate::findings::Finding], pid: u32) {
    for v in findings.iter_mut().filter_map(|f| f.verification.as_mut()) {
        v.verdict = format!(
            "reference, measured on rtcheck's own server (not process {pid}): {}",
            v.verdict
        );
    }
}

/// One audit: the report (proxy findings, --verify, the baseline applied), its outcome,
/// and the --write-baseline file to write with it.
type Once = (FindingsReport, Outcome, Option<(PathBuf, String)>);

fn once(a: &AuditArgs, base: &super::baseline::Loaded) -> anyhow::Result<Once> {
    let started = Instant::now();
    let profile = resolve_profile(a)?;
    let roots = audited(a)?;
    let mut r = build_report_in(profile, &roots, &a.skip, a.netns)?;
    // A proxy's checks belong to the proxy role: run when it applies or when asked
    // (--root names where the configs are); else a running proxy is only named.
    let asked = r.profile.role == Role::Proxy || a.root.is_some();
    if !a.no_proxy_config && asked {
        r.findings.extend(proxy_findings(a, &r.profile)?);
        r.summary = crate::findings::Summary::of(&r.findings);
    } else if !a.no_proxy_config {
        let running = crate::lint::host::running(&a.procfs);
        if !running.is_empty() {
            let note = format!(
                "{} running here, not audited (role {}; --role proxy or --root DIR audits it)",
                running.join(" and "),
                r.profile.role.as_str()
            );
            r.target = Some(match r.target.take() {
                Some(t) => format!("{t}; {note}"),
                None => note,
            });
        }
    }
    if a.verify {
        // `audit --verify` is composed here: the audit never calls verify.
        let opts = crate::verify::VerifyOptions {
            timeout: a.verify_timeout,
            // Memory per connection measured at the workload's size, bounded for a live run.
            connections: r.profile.connections.clamp(100, DEFAULT_CONNECTIONS),
            ..super::verify::default_options()
        };
        crate::verify::attach(&mut r.findings, &opts)?;
        if let Some(pid) = roots.pid {
            label_reference(&mut r.findings, pid);
        }
        // With a profile, the delivery it implies is measured too (issue 12).
        if a.workload.profile.is_some() {
            let d = super::delivery::for_profile(&r.profile, a.verify_timeout)?;
            r.findings.extend(d);
            r.summary = crate::findings::Summary::of(&r.findings);
        }
        // The header's duration is the whole run, the live experiments included.
        r.duration_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
    }
    let host = super::baseline::host_subject(super::baseline::hostname(&a.procfs));
    let written = base.apply(&a.baseline, &mut r.findings, host)?;
    r.summary = crate::findings::Summary::of(&r.findings);
    let outcome = outcome(
        &r.findings,
        a.fail_on,
        &audit::checks::required_ids(),
        &a.skip,
    );
    Ok((r, outcome, written))
}
