//! `rtcheck choose`: fill a Profile (answers file, flags, prompts), run `decide` and
//! `sizing`, render, and optionally save the profile next to the report.
use super::output::{ChooseFormat, ChooseFormats, OutputArgs};
use super::workload::{EditArg, PathFlags};
use super::{parse_count, prompts, Ctx};
use crate::choose::{decide, missing_answers, Recommendation};
use crate::profile::{Loss, Profile, Upstream};
use crate::report::{Format, Palette};
use rtcheck_base::units::parse_duration;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const EXAMPLES: &str = "\
Examples:
  ask the questions (on a terminal):
    rtcheck choose

    rtcheck choose --visible-within 200ms --upstream sparse --loss shared \\
      --machines 2
    rtcheck choose --visible-within 2m --upstream none --loss replaceable \\
      --format json
    rtcheck choose --visible-within 100ms --binary --loss per-user \\
      --max-disconnect 10s
    rtcheck choose --answers answers.yaml --save profile.yaml
    rtcheck choose --visible-within 1s --upstream sparse --loss shared \\
      --path cloudflare,aws-alb,nginx
  reuse the saved profile:
    rtcheck audit --profile profile.yaml

Answers file (YAML, same names in snake_case; flags override it):
  visible_within: 200ms      # Q1: below 5s push, from 5s up polling
  upstream: sparse           # Q2: none | sparse | dense
  binary: false              # Q2: binary payloads mean WebSocket
  loss: shared               # Q3: replaceable | shared | per-user
  connections: 20000         # Q4 (default 10000)
  machines: 2                # Q4 (default 1)
  rate: 10                   # messages/s per client (default 10)
  size: 1024                 # bytes per message (default 1024)
  max_disconnect: 3s         # longest disconnect losing nothing (default 3s)
  path: [cloudflare, aws-alb, nginx]   # hops, outermost first (`rtcheck hops`)
                             # [direct] for none; a configured value:
                             # [cloudflare, {aws-alb: {idle: 300s}}, nginx]
  ping: 25s                  # the server's own heartbeat (WebSocket ping or SSE
                             # comment); audit's tcp-keepalive passes under it

Without a terminal every required answer (visible_within, upstream or --binary, loss) must be
given; otherwise rtcheck exits 2 naming the missing ones.";

#[derive(Debug, clap::Args)]
#[command(
    after_help = EXAMPLES,
    edit_arg("path", |a| a.help(
        "The hops between the users and the server, outermost first (`rtcheck hops` lists \
         them; `direct` for none): the heartbeat, lifetime cap and exclusions they force"
    )),
    edit_arg("overrides", |a| a.help(
        "A value configured on a hop of the path instead of its documented default: \
         HOP.FIELD=DURATION (aws-alb.idle=300s; fields idle, lifetime, first_byte)"
    ))
)]
pub struct ChooseArgs {
    /// Q1: how soon a change must be visible (e.g. 200ms, 5s, 2m).
    #[arg(long, value_name = "DUR", value_parser = parse_positive_duration)]
    pub visible_within: Option<Duration>,
    /// Q2: client-to-server traffic.
    #[arg(long, value_enum)]
    pub upstream: Option<Upstream>,
    /// Q2: payloads are binary (means WebSocket).
    #[arg(long)]
    pub binary: bool,
    /// Q3: what losing one message means.
    #[arg(long, value_enum)]
    pub loss: Option<Loss>,
    /// Q4: concurrent connections in total [default: 10000].
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub connections: Option<u64>,
    /// Q4: machines serving them [default: 1].
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub machines: Option<u64>,
    /// Messages per second sent to each client [default: 10].
    #[arg(long, value_name = "MSGS_PER_S", value_parser = super::parse_rate, allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// Bytes per message, units allowed (512, 4KiB, 1MB) [default: 1024].
    #[arg(long, value_name = "SIZE", value_parser = super::parse_message_size, allow_negative_numbers = true)]
    pub size: Option<u64>,
    /// Longest client disconnect that must not lose data [default: 3s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub max_disconnect: Option<Duration>,
    #[command(flatten)]
    pub hops: PathFlags,
    /// The realtime library the app runs (socketio, signalr, phoenix, actioncable,
    /// graphql-ws, stomp, sockjs, mqtt): its documented heartbeat is checked against the
    /// path's idle chain (with --path or the answers' `path:`).
    #[arg(long, value_name = "NAME", value_parser = super::reach::parse_app_protocol)]
    pub app_protocol: Option<rtcheck_wire::appproto::AppProtocol>,
    /// Read answers from a YAML file (keys as in the flags, snake_case).
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Save the full profile used (answers, defaults and the recommended transport) for `audit --profile`.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs<ChooseFormats>,
    /// Never prompt, even on a terminal: fail naming the missing answers instead.
    #[arg(long)]
    pub no_input: bool,
    /// Measure the recommended delivery live on loopback (`verify delivery` with this
    /// profile) and add its findings to the report; a failing one gives exit 1.
    #[arg(long)]
    pub verify: bool,
    /// Time bound for --verify.
    #[arg(long, value_name = "DURATION", default_value = "3m", value_parser = parse_duration)]
    pub verify_timeout: Duration,
}

fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err("must be greater than 0".into()),
        d => Ok(d),
    }
}

/// The library's documented heartbeat against the declared path (or why it cannot be
/// checked): a Socket.IO app's server pings every 25 s; does the idle chain hold it?
fn library_note(
    rec: &crate::choose::Recommendation,
    app: rtcheck_wire::appproto::AppProtocol,
) -> String {
    let fit = rec
        .chain
        .as_ref()
        .and_then(|c| crate::hops::library::fit(c, app));
    match (fit, &rec.chain) {
        (Some(f), _) => format!("Library: {} ({}, read {}).", f.sentence, f.source, f.read),
        (None, Some(_)) => format!("Library: {} has no heartbeat of its own.", app.name()),
        (None, None) => format!(
            "Library: {}'s heartbeat is checked against a path: declare it (--path, `path:`).",
            app.name()
        ),
    }
}

/// Fields that can default, in output order, with the flag that sets them.
const DEFAULTABLE: &[(&str, &str)] = &[
    ("connections", "--connections"),
    ("machines", "--machines"),
    ("rate", "--rate"),
    ("size", "--size"),
    ("max_disconnect", "--max-disconnect"),
];

/// The profile from --answers and flags, plus the names of the fields given explicitly.
pub fn profile_from_args(a: &ChooseArgs) -> anyhow::Result<(Profile, Vec<String>)> {
    let mut given: Vec<String> = Vec::new();
    let mut p = match &a.answers {
        Some(path) => {
            let text = rtcheck_base::input::yaml("--answers", path)?;
            let p = Profile::from_yaml(&text, &path.display().to_string())?;
            // from_yaml validated the text; the keys present tell what was answered.
            if let Ok(serde_yaml::Value::Mapping(m)) = serde_yaml::from_str(&text) {
                given.extend(m.keys().filter_map(|k| k.as_str().map(String::from)));
            }
            p
        }
        None => Profile::default(),
    };
    let mut set = |name: &str| given.push(name.to_string());
    if let Some(v) = a.visible_within {
        p.visible_within = Some(v);
        set("visible_within");
    }
    if let Some(v) = a.upstream {
        p.upstream = Some(v);
        set("upstream");
    }
    if a.binary {
        p.binary = true;
        set("binary");
    }
    if let Some(v) = a.loss {
        p.loss = Some(v);
        set("loss");
    }
    if let Some(v) = a.connections {
        p.connections = v;
        set("connections");
    }
    if let Some(v) = a.machines {
        p.machines = v;
        set("machines");
    }
    if let Some(v) = a.rate {
        p.rate = v;
        set("rate");
    }
    if let Some(v) = a.size {
        p.size = v;
        set("size");
    }
    if let Some(v) = a.max_disconnect {
        p.max_disconnect = v;
        set("max_disconnect");
    }
    if let Some(ids) = &a.hops.path {
        p.path = Some(
            ids.0
                .iter()
                .map(|id| crate::hops::chain::PathEntry {
                    id: id.clone(),
                    set: Default::default(),
                })
                .collect(),
        );
        set("path");
    }
    apply_overrides(&mut p, &a.hops.overrides)?;
    let origin = a
        .answers
        .as_ref()
        .map(|p| format!("{} (with flags)", p.display()))
        .unwrap_or_else(|| "flags".into());
    p.validate().map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    Ok((p, given))
}

/// `--override HOP.FIELD=DUR` onto the profile's path (from --path or the answers file).
fn apply_overrides(p: &mut Profile, overrides: &[String]) -> anyhow::Result<()> {
    if overrides.is_empty() {
        return Ok(());
    }
    let entries = p
        .path
        .as_mut()
        .ok_or_else(|| anyhow::anyhow!("--override needs --path (or `path:` in --answers)"))?;
    let mut over = crate::hops::chain::Overrides::new();
    for o in overrides {
        crate::hops::chain::parse_override(o, &mut over)
            .map_err(|e| anyhow::anyhow!("--override {e}"))?;
    }
    for (id, set) in over {
        let e = entries
            .iter_mut()
            .find(|e| e.id == id)
            .ok_or_else(|| anyhow::anyhow!("--override: `{id}` is not on the path"))?;
        e.set.idle = set.idle.or(e.set.idle);
        e.set.lifetime = set.lifetime.or(e.set.lifetime);
        e.set.first_byte = set.first_byte.or(e.set.first_byte);
    }
    Ok(())
}

/// `answers`: the --answers file, named first (it is where the answers were looked for).
fn missing_message(missing: &[&str], answers: Option<&std::path::Path>) -> String {
    let named: Vec<String> = missing
        .iter()
        .map(|m| match *m {
            "visible_within" => "visible_within (--visible-within DUR)".to_string(),
            "upstream" => "upstream (--upstream none|sparse|dense, or --binary)".to_string(),
            "loss" => "loss (--loss replaceable|shared|per-user)".to_string(),
            other => other.to_string(),
        })
        .collect();
    match answers {
        Some(f) => format!(
            "--answers {}: missing answers: {}; add them to the file or give them as flags (no terminal to ask on)",
            f.display(),
            named.join(", ")
        ),
        None => format!(
            "missing answers: {}; give them as flags or in --answers FILE (no terminal to ask on)",
            named.join(", ")
        ),
    }
}

pub fn run(a: ChooseArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    let (mut p, mut given) = profile_from_args(&a)?;
    let missing = missing_answers(&p);
    let asked = !missing.is_empty();
    if asked {
        if a.no_input || !prompts::can_prompt() {
            anyhow::bail!(missing_message(&missing, a.answers.as_deref()));
        }
        if given.is_empty() {
            // Nothing answered yet: the full walk, every question with its default.
            p = prompts::prompt_profile_with(p, ctx.color)?;
            given.extend(DEFAULTABLE.iter().map(|(n, _)| n.to_string()));
        } else {
            p = prompts::prompt_missing(p, ctx.color)?;
        }
        p.validate().map_err(|e| anyhow::anyhow!("answers: {e}"))?;
    }
    let mut rec = decide(&p).map_err(|e| anyhow::anyhow!(e))?;
    if let Some(app) = a.app_protocol {
        rec.notes.push(library_note(&rec, app));
    }
    for (name, flag) in DEFAULTABLE {
        if !given.iter().any(|g| g == name) {
            rec.defaulted.push(name.to_string());
            // A snapshot design replays nothing: rate, size and disconnect size nothing.
            let unused = matches!(*name, "rate" | "size" | "max_disconnect");
            if unused && rec.delivery == rtcheck_wire::delivery::Delivery::Snapshot {
                continue;
            }
            let value = match *name {
                "connections" => crate::evidence::fmt_num(p.connections as f64),
                "machines" => p.machines.to_string(),
                "rate" => format!("{} msg/s", crate::evidence::fmt_num(p.rate)),
                "size" => format!("{} B", p.size),
                _ => rtcheck_base::units::fmt_duration(p.max_disconnect),
            };
            rec.notes.push(format!(
                "{name} = {value} is the default; set {flag} for your workload."
            ));
        }
    }
    if a.verify {
        // Composed here: choose's domain never runs an experiment.
        rec.findings = super::delivery::for_profile(&rec.profile, a.verify_timeout)?;
    }
    let tripped = crate::findings::FailOn::Fail.trips(&crate::findings::Summary::of(&rec.findings));
    let code = super::exit::verdict(tripped, false);
    let saved = a
        .save
        .as_deref()
        .map(|path| saved_profile(&rec, path))
        .unwrap_or_default();
    // --save, --output and every --report land together or not at all.
    let save: Vec<(&std::path::Path, &[u8])> = a
        .save
        .iter()
        .map(|s| (s.as_path(), saved.as_bytes()))
        .collect();
    a.out
        .write_with(ctx.color, &save, |f, p| render(&rec, f, &p))?;
    if asked && a.save.is_none() {
        offer_to_save(&rec)?;
    }
    Ok(code)
}

/// After an interactive walk, the answers are worth keeping (issue 27, item 6): offer to
/// save the profile, as `--save` would, asking before overwriting a file.
fn offer_to_save(rec: &Recommendation) -> anyhow::Result<()> {
    prompts::set_interrupt_line(
        "choose interrupted; the recommendation is above, the profile was not saved",
    );
    if !prompts::confirm("Save the profile (reuse with `rtcheck audit --profile FILE`)?")? {
        return Ok(());
    }
    if let Some(path) = prompts::ask_save_path("Profile file", "rtcheck-profile.yaml")? {
        rtcheck_base::outfile::write_atomic(&path, saved_profile(rec, &path).as_bytes())?;
        eprintln!("saved {}", path.display());
    }
    Ok(())
}

/// The profile file `--save` writes (and the interactive offers): the recommendation in a
/// comment, then the full profile `audit --profile` reads.
pub fn saved_profile(rec: &Recommendation, path: &std::path::Path) -> String {
    format!(
        "# rtcheck choose: {} + {} + {}; reuse with `rtcheck audit --profile {}`\n{}",
        rec.transport.name(),
        rec.delivery.name(),
        rec.topology.as_str(),
        path.display(),
        rec.profile.to_yaml()
    )
}

/// The renderer for `format` (one of [`ChooseFormats`]).
pub fn render(rec: &Recommendation, format: Format, p: &Palette) -> anyhow::Result<String> {
    use crate::report::doc;
    Ok(match ChooseFormat::of(format)? {
        ChooseFormat::Text => doc::text::render(&crate::report::choose::doc(rec)?, p),
        ChooseFormat::Json => crate::report::json::render(rec)?,
        ChooseFormat::Yaml => crate::report::yaml::render(rec)?,
        ChooseFormat::Markdown => doc::markdown::render(&crate::report::choose::doc(rec)?),
        ChooseFormat::Html => doc::html::render(&crate::report::choose::doc(rec)?),
    })
}
