//! `rtcheck verify delivery`: the delivery flags (flattened into `verify`), resolved
//! against the profile, the experiment, and its renderers.
use super::Ctx;
use crate::delivery::{self, DeliveryOptions, DeliveryReport};
use crate::findings::FailOn;
use crate::profile::Profile;
use crate::report::{FindingsReport, Format, Palette};
use anyhow::anyhow;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Clients per run when `--connections` is not given (the profile's connections size
/// the memory, they are not all opened).
pub const DEFAULT_CLIENTS: u64 = 10;

#[derive(Debug, Clone, clap::Args)]
pub struct DeliveryFlags {
    /// delivery: snapshot, seq-ring, session-ack or all.
    #[arg(long, default_value = "all", value_parser = ["snapshot", "seq-ring", "session-ack", "all"])]
    pub delivery: String,
    /// delivery: workload profile (rate, size, max_disconnect) from `choose --save`.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// delivery: transport of the clients.
    #[arg(long, default_value = "sse", value_parser = ["sse", "websocket", "poll"])]
    pub transport: String,
    /// delivery: messages per second (default: the profile's rate).
    #[arg(long, value_name = "MSGS_PER_S")]
    pub rate: Option<f64>,
    /// delivery: bytes per message (default: the profile's size).
    #[arg(long, value_name = "BYTES", value_parser = crate::net::config::parse_size)]
    pub size: Option<u64>,
    /// delivery: how long clients stay away (default: the profile's max_disconnect).
    #[arg(long, value_name = "DUR", value_parser = crate::units::parse_duration)]
    pub max_disconnect: Option<Duration>,
    /// delivery: server ring, bytes (100KiB) or messages (1024); default: max_disconnect
    /// x rate plus one second.
    #[arg(long, value_name = "SIZE")]
    pub ring: Option<String>,
    /// delivery: session TTL for session-ack (default: twice the longer of max_disconnect and
    /// the ring's span).
    #[arg(long, value_name = "DUR", value_parser = crate::units::parse_duration)]
    pub session_ttl: Option<Duration>,
    /// delivery: measure another server on loopback (http://127.0.0.1:PORT).
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// delivery: lowest finding status that exits 1.
    #[arg(long, value_enum, default_value_t = FailOn::Fail)]
    pub fail_on: FailOn,
    /// delivery: fail (exit 1) when a figure crosses EXPR, e.g. 'lost_silently == 0' (every
    /// run), 'resume_ms.max < 2s': keys of the JSON report, at the top or in each of
    /// `runs`; an unknown name is exit 2. Repeatable.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = crate::findings::threshold::parse)]
    pub thresholds: Vec<crate::findings::threshold::Threshold>,
    #[command(flatten)]
    pub baseline: super::baseline::BaselineArgs,
}

/// `--ring`: a bare number is messages, a size with a unit is bytes (rounded up to
/// whole messages of `size`).
pub fn ring_messages(s: &str, size: u64) -> anyhow::Result<u64> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map_err(|_| anyhow!("--ring {t}: too large"));
    }
    let bytes = crate::net::config::parse_size(t).map_err(|e| anyhow!("--ring: {e}"))?;
    Ok(bytes.div_ceil(size.max(1)))
}

/// `http://HOST:PORT[/]` on loopback.
pub fn server_addr(url: &str) -> anyhow::Result<SocketAddr> {
    let shown = crate::redact::url(url);
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("--server {shown}: expected http://HOST:PORT"))?;
    let hp = rest.trim_end_matches('/');
    let a = crate::sys::addr::parse_host_port(hp).ok_or_else(|| {
        anyhow!("--server {shown}: expected http://HOST:PORT with an IP or localhost")
    })?;
    crate::sys::addr::ensure_loopback(&a)?;
    Ok(a)
}

/// Flags over the profile over the defaults.
pub fn options(
    f: &DeliveryFlags,
    connections: Option<u64>,
    timeout: Duration,
) -> anyhow::Result<DeliveryOptions> {
    let p = match &f.profile {
        Some(path) => Profile::load("--profile", path)?,
        None => Profile::default(),
    };
    let rate = f.rate.unwrap_or(p.rate);
    let size = f.size.unwrap_or(p.size);
    let max_disconnect = f.max_disconnect.unwrap_or(p.max_disconnect);
    let ring_messages = match &f.ring {
        Some(s) => ring_messages(s, size)?,
        None => delivery::default_ring_messages(rate, max_disconnect),
    };
    let delivery = match f.delivery.as_str() {
        "all" => delivery::MODES.iter().map(|m| m.to_string()).collect(),
        m => vec![m.to_string()],
    };
    Ok(DeliveryOptions {
        delivery,
        transport: f.transport.clone(),
        connections: connections.unwrap_or(DEFAULT_CLIENTS),
        rate,
        size,
        max_disconnect,
        ring_messages,
        session_ttl: f.session_ttl.unwrap_or_else(|| {
            let span = Duration::from_secs_f64(ring_messages as f64 / rate.max(1e-3));
            delivery::default_session_ttl(max_disconnect, span.min(Duration::from_secs(86_400)))
        }),
        profile_connections: p.connections,
        server: f.server.as_deref().map(server_addr).transpose()?,
        timeout,
    })
}

/// `verify delivery` as `choose --verify` and `audit --verify` run it for a profile: the
/// delivery the profile's loss answer implies (every mode when it has none), its
/// transport, rate, size and max disconnect, [`DEFAULT_CLIENTS`] clients; the findings.
pub fn for_profile(
    p: &Profile,
    timeout: Duration,
) -> anyhow::Result<Vec<crate::findings::Finding>> {
    let delivery = match crate::review::items::design(p).0 {
        Some(d) => vec![d.as_str().to_string()],
        None => delivery::MODES.iter().map(|m| m.to_string()).collect(),
    };
    let transport = match p.transport {
        Some(crate::profile::Transport::Websocket) => "websocket",
        Some(crate::profile::Transport::Polling) => "poll",
        _ => "sse",
    };
    let ring_messages = delivery::default_ring_messages(p.rate, p.max_disconnect);
    let span = Duration::from_secs_f64(ring_messages as f64 / p.rate.max(1e-3));
    let o = DeliveryOptions {
        delivery,
        transport: transport.into(),
        connections: DEFAULT_CLIENTS,
        rate: p.rate,
        size: p.size,
        max_disconnect: p.max_disconnect,
        ring_messages,
        session_ttl: delivery::default_session_ttl(p.max_disconnect, span),
        profile_connections: p.connections,
        server: None,
        timeout,
    };
    o.validate()
        .map_err(|e| anyhow!("verify delivery for the profile: {e}"))?;
    crate::sys::signal::install_interrupt_handler();
    Ok(measure(&o)?.findings)
}

/// The experiment; after Ctrl-C any outcome is `Interrupted` (exit 130, no partial report).
fn measure(o: &DeliveryOptions) -> anyhow::Result<DeliveryReport> {
    use crate::sys::signal::{interrupted, Interrupted};
    const STOPPED: &str = "verify delivery interrupted; its server and clients were stopped";
    match delivery::measure(o) {
        Err(e) if interrupted() => Err(e.context(Interrupted(STOPPED))),
        r => {
            crate::sys::signal::check_interrupted(STOPPED)?;
            r
        }
    }
}

pub fn run(
    f: &DeliveryFlags,
    connections: Option<u64>,
    timeout: Duration,
    out: &super::OutputArgs<super::output::AllFormats>,
    ctx: Ctx,
) -> anyhow::Result<ExitCode> {
    out.validate()?;
    let base = f.baseline.load(&[])?;
    let o = options(f, connections, timeout)?;
    o.validate()?;
    crate::sys::signal::install_interrupt_handler();
    let mut r = measure(&o)?;
    let json = serde_json::to_value(&r)?;
    let found = crate::findings::threshold::evaluate(&f.thresholds, &json, &["runs"], None)
        .map_err(anyhow::Error::msg)?;
    let crossed = found
        .iter()
        .any(|t| t.status == crate::findings::Status::Fail);
    r.findings.extend(found);
    let written = base.apply(&f.baseline, &mut r.findings, |_| Default::default())?;
    r.summary = crate::findings::Summary::of(&r.findings);
    let extra: Vec<(&std::path::Path, &[u8])> = written
        .iter()
        .map(|(p, t)| (p.as_path(), t.as_bytes()))
        .collect();
    out.write_with(ctx.color, &extra, |f, p| render(&r, f, &p))?;
    Ok(if f.fail_on.trips(&r.summary) || crossed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn render(r: &DeliveryReport, format: Format, p: &Palette) -> anyhow::Result<String> {
    Ok(match format {
        Format::Text => {
            crate::report::text::delivery::render(r, p)
                + &crate::report::gates::text(&gate_findings(r, true), *p)
        }
        Format::Markdown => {
            crate::report::markdown::delivery::render(r)
                + &crate::report::gates::markdown(&gate_findings(r, false))
        }
        Format::Json => crate::report::json::render(r)?,
        Format::Yaml => crate::report::yaml::render(r)?,
        Format::Junit => crate::report::junit::render(&as_findings(r), FailOn::Fail)?,
        Format::Github => crate::report::github::render(&as_findings(r)),
        Format::Html => crate::report::html::delivery::render(r)?,
        Format::Sarif => crate::report::sarif::render(&as_findings(r))?,
        Format::Prometheus => anyhow::bail!("verify delivery has no prometheus format"),
    })
}

/// The findings delivery's own text has no line for: thresholds, baseline problems and
/// (`suppressed`: markdown lists them already, with their reason) accepted findings.
fn gate_findings(r: &DeliveryReport, suppressed: bool) -> Vec<crate::findings::Finding> {
    r.findings
        .iter()
        .filter(|f| {
            f.id.starts_with("threshold:")
                || f.id == crate::findings::baseline::ID
                || (suppressed && f.status == crate::findings::Status::Suppressed)
        })
        .cloned()
        .collect()
}

fn as_findings(r: &DeliveryReport) -> FindingsReport {
    FindingsReport::new(
        "verify",
        Profile::default(),
        Some(r.target.clone()),
        r.findings.clone(),
        r.duration_ms as f64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_is_messages_or_bytes() {
        assert_eq!(ring_messages("1024", 100).unwrap(), 1024);
        assert_eq!(ring_messages("100KiB", 1024).unwrap(), 100);
        assert_eq!(ring_messages("100KB", 1024).unwrap(), 98);
        assert!(ring_messages("lots", 1024).is_err());
    }

    #[test]
    fn servers_must_be_loopback_urls() {
        assert_eq!(server_addr("http://127.0.0.1:8080/").unwrap().port(), 8080);
        assert!(server_addr("http://localhost:1").is_ok());
        assert!(server_addr("127.0.0.1:80").is_err());
        let e = server_addr("http://10.0.0.1:80").unwrap_err().to_string();
        assert!(e.contains("not a loopback"), "{e}");
    }
}
