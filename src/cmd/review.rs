//! `rtcheck review`: read the profile, answers and evidence, prompt on a terminal (the walk
//! is in `review/prompts.rs`), evaluate with the domain (`crate::review`), render, and write
//! `--save` and `-o` together.
use super::output::{GaugeFormat, GaugeFormats, OutputArgs};
use super::Ctx;
use crate::findings::FailOn;
use crate::profile::Profile;
use crate::report::{self, FindingsReport, Format, Palette, ReviewReport};
use crate::review::{answers, evaluate, measured};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

mod prompts;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Answers file (YAML), written by --save and read by --answers:
  answers:
    - id: ping-interval
      answer: yes              # yes, no, na (with a reason), later
      value: {ping: 25s, pong_wait: 30s, idle_timeout: 60s}
      when: 2026-12-01T10:00:00Z

Examples:
  walk the items on a terminal:
    rtcheck review --profile profile.yaml --save review.yaml
  again: asks only what is open:
    rtcheck review --save review.yaml
  CI: never prompts; PR comment:
    rtcheck review --answers review.yaml --format markdown

    rtcheck review --answers review.yaml --format junit -o review.xml \\
      --fail-on warn
    rtcheck review --answers review.yaml --evidence bench.json \\
      --evidence verify.json
    rtcheck review --only ping-interval,bounded-queue

Exit codes: 0 nothing at or above --fail-on, 1 something is, 2 usage or runtime error.")]
pub struct ReviewArgs {
    /// Workload profile (from `rtcheck choose --save`): chooses the items and sizes the rules.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Answers file (YAML); never prompts (CI).
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Write the answers (YAML) to FILE, each as soon as it is given (Ctrl-C keeps them);
    /// read it first when it exists, so a second run asks only what is unanswered, marked
    /// later, or whose rule changed. Without it, a walk on a terminal saves to
    /// $XDG_STATE_HOME/rtcheck/review-answers.yaml (~/.local/state/...) and resumes from it.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Checklists to walk.
    #[arg(long, value_name = "NAME", value_delimiter = ',', default_values_t = crate::review::CHECKLISTS.iter().map(|s| s.to_string()))]
    pub checklist: Vec<String>,
    /// Review only these item ids.
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    pub only: Vec<String>,
    /// JSON output of `verify`, `audit --verify`, `bench fanout`, `probe` or `verify
    /// delivery`: marks the matching items measured (repeatable).
    #[arg(long, value_name = "FILE")]
    pub evidence: Vec<PathBuf>,
    // markdown is a summary fit for a PR comment; junit and github for CI.
    #[command(flatten)]
    pub out: OutputArgs<GaugeFormats>,
    #[command(flatten)]
    pub baseline: super::baseline::BaselineArgs,
    /// Lowest status that makes the exit code 1 (no and broken rules fail; later and
    /// unanswered warn).
    #[arg(long, value_enum, default_value_t = FailOn::Fail)]
    pub fail_on: FailOn,
}

fn load_profile(a: &ReviewArgs) -> anyhow::Result<Profile> {
    let p = match &a.profile {
        Some(path) => Profile::load("--profile", path)?,
        None => Profile::default(),
    };
    p.validate().map_err(|e| anyhow::anyhow!("profile: {e}"))?;
    Ok(p)
}

/// The renderer for `format`: the review's own model for text, markdown, json and yaml; the
/// CI formats and html take its findings report.
pub fn render(
    r: &ReviewReport,
    format: Format,
    fail_on: FailOn,
    pal: Palette,
) -> anyhow::Result<String> {
    Ok(match GaugeFormat::of(format)? {
        GaugeFormat::Text => report::doc::text::render(&report::review::doc(r)?, &pal),
        GaugeFormat::Json => report::json::render(r)?,
        GaugeFormat::Yaml => report::yaml::render(r)?,
        GaugeFormat::Markdown => report::doc::markdown::render(&report::review::doc(r)?),
        GaugeFormat::Junit => report::junit::render(&r.report, fail_on)?,
        GaugeFormat::Github => report::github::render(&r.report),
        GaugeFormat::Html => report::doc::html::render(&report::audit::audit_page(&r.report)?),
        GaugeFormat::Sarif => report::sarif::render(&r.report)?,
        GaugeFormat::Prometheus => {
            report::prometheus::render(&r.report, report::prometheus::unix_now())
        }
    })
}

/// Where the answers are saved as they are given: `--save`, else, for a walk on a terminal
/// (no `--answers`), the state file `$XDG_STATE_HOME/rtcheck/review-answers.yaml`
/// (`~/.local/state/...`), so Ctrl-C loses nothing and a plain `rtcheck review` resumes.
fn save_path(a: &ReviewArgs) -> Option<PathBuf> {
    if a.save.is_some() || a.answers.is_some() || !crate::cmd::prompts::can_prompt() {
        return a.save.clone();
    }
    state_file()
}

/// The one review state, `$XDG_STATE_HOME/rtcheck/review-answers.yaml`: a plain
/// `rtcheck review` and the guided run's walk resume the same answers.
pub fn state_file() -> Option<PathBuf> {
    let dir = match std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".local/state"),
    }
    .join("rtcheck");
    // No state directory (a read-only home): the walk runs, unsaved, and says so on Ctrl-C.
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join("review-answers.yaml"))
}

/// Previous answers: --answers, else the save file (`save_path`) when it exists.
fn previous_answers(a: &ReviewArgs, save: Option<&Path>) -> anyhow::Result<answers::Answers> {
    let known = crate::review::known_ids();
    Ok(match (&a.answers, save) {
        (Some(p), _) => answers::load("--answers", p, &known)?,
        (None, Some(s)) if s.exists() => {
            if a.save.is_none() {
                crate::cmd::prompts::note(&format!(
                    "note: resuming the answers saved in {} (--save FILE to choose the file)",
                    s.display()
                ));
            }
            answers::load("--save", s, &known)?
        }
        _ => answers::Answers::default(),
    })
}

/// On a terminal, ask what is open (unanswered, later, rule changed, not measured).
fn ask_open(
    a: &ReviewArgs,
    save: Option<&Path>,
    selected: &crate::review::Selected,
    ans: answers::Answers,
    ms: &[measured::Measurement],
    profile: &Profile,
    ctx: Ctx,
) -> anyhow::Result<answers::Answers> {
    let todo: Vec<_> = selected
        .iter()
        // A measured item needs no declaration.
        .filter(|(_, i)| measured::for_item(&i.id, ms).is_none())
        .filter(|(_, i)| evaluate::needs_asking(i, ans.get(&i.id)))
        .copied()
        .collect();
    if a.answers.is_some() || todo.is_empty() {
        return Ok(ans);
    }
    if !crate::cmd::prompts::can_prompt() {
        anyhow::bail!(
            "{} item(s) to answer and no terminal: give --answers FILE (write one with --save on a terminal)",
            todo.len()
        );
    }
    let ans = prompts::walk(&todo, ans, profile, ctx.color, save)?;
    match save {
        None => eprintln!("rtcheck: note: answers not saved (add --save FILE to keep them)"),
        Some(s) if a.save.is_none() => {
            eprintln!("rtcheck: note: answers saved to {}", s.display())
        }
        Some(_) => {}
    }
    Ok(ans)
}

pub fn run(a: ReviewArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    let profile = load_profile(&a)?;
    let given = a.profile.is_some();
    Ok(super::exit::verdict(
        run_with(&a, profile, given, ctx)?,
        false,
    ))
}

/// The review for `profile` (from `--profile`, or the guided run's answers): ask what is
/// open, write the report and `--save`; true when `--fail-on` trips.
pub fn run_with(
    a: &ReviewArgs,
    profile: Profile,
    profile_given: bool,
    ctx: Ctx,
) -> anyhow::Result<bool> {
    let start = Instant::now();
    let base = a.baseline.load(&[])?;
    let (selected, left_out) = crate::review::select(&a.checklist, &a.only, &profile)?;
    let mut ms = Vec::new();
    for f in &a.evidence {
        ms.extend(measured::load(f)?);
    }
    let save = save_path(a);
    let save = save.as_deref();
    let ans = ask_open(
        a,
        save,
        &selected,
        previous_answers(a, save)?,
        &ms,
        &profile,
        ctx,
    )?;
    let (mut findings, items) = evaluate::evaluate(&selected, &ans, &ms, &profile);
    // A review is about the design, not a host or a file: entries match by check id.
    let written = base.apply(&a.baseline, &mut findings, |_| Default::default())?;
    let ms_total = start.elapsed().as_secs_f64() * 1000.0;
    let r = ReviewReport {
        notes: crate::review::notes(&profile, profile_given),
        report: FindingsReport::new("review", profile, None, findings, ms_total),
        items,
        left_out,
    };
    let saved = ans.to_yaml();
    let mut save: Vec<(&std::path::Path, &[u8])> =
        save.iter().map(|s| (*s, saved.as_bytes())).collect();
    save.extend(written.iter().map(|(p, t)| (p.as_path(), t.as_bytes())));
    a.out
        .write_with(ctx.color, &save, |f, p| render(&r, f, a.fail_on, p))?;
    Ok(a.fail_on.trips(&r.report.summary))
}
