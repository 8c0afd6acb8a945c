//! The guided run's offers after the audit: probe a URL the user types (issue 11) and walk
//! the application checklist (issue 16). Each builds its command's own flags, so it runs
//! with the same defaults as `rtcheck probe` and `rtcheck review`.
use super::kept::Kept;
use crate::cmd::prompts::{self, confirm, prompt_error, say};
use crate::cmd::{probe, review, Ctx};
use crate::findings::FailOn;
use crate::probe::target::Target;
use crate::profile::Profile;
use crate::report::Format;
use clap::Parser;
use dialoguer::Input;
use rtcheck_base::outfile;
use std::ffi::OsString;

#[derive(Parser)]
#[command(name = "probe")]
struct ProbeCli {
    #[command(flatten)]
    a: probe::ProbeArgs,
}

#[derive(Parser)]
#[command(name = "review")]
struct ReviewCli {
    #[command(flatten)]
    a: review::ReviewArgs,
}

/// Ask for a URL, probe it, print the report, offer to save it; true when a check failed.
pub(super) fn probe(profile: &Profile, ctx: Ctx, kept: &mut Kept) -> anyhow::Result<bool> {
    say("probe checks the path between your users and your server (proxy upgrade, SSE buffering, resume, ...) with a handful of connections; it never loads the server. The URL is ws://, wss://, http:// or https://.");
    let url: String = Input::new()
        .with_prompt("URL to probe")
        .validate_with(|s: &String| -> Result<(), String> { Target::parse(s.trim()).map(|_| ()) })
        // The typed line may hold a token: show the redacted URL instead.
        .report(false)
        .interact_text()
        .map_err(prompt_error)?;
    let url = url.trim().to_string();
    let shown = Target::parse(&url).map_err(|e| anyhow::anyhow!(e))?;
    eprintln!(
        "probing {}",
        rtcheck_base::escape::plain(&shown.to_string())
    );
    let idle = confirm("Also hold a connection idle for 75 s (idle-timeout, heartbeat)?")?;
    let mut argv = vec!["probe"];
    if !idle {
        argv.push("--quick");
    }
    argv.push(&url);
    let a = ProbeCli::try_parse_from(argv)?.a;
    let r = probe::report(&a, profile.clone())?;
    let screen = ctx.palette_for(None);
    println!(
        "\n{}",
        probe::render(&r, Format::Text, FailOn::Fail, screen)?
    );
    // The probe replaced the Ctrl-C handler with its own: take the prompts back.
    kept.arm();
    if confirm("Save the probe report?")? {
        say(prompts::REPORT_EXTENSIONS);
        if let Some(path) = prompts::ask_save_path("Probe report file", "rtcheck-probe.json")? {
            let (format, how) = prompts::report_format(&path);
            let text = probe::render(&r, format, FailOn::Fail, ctx.palette_for(Some(&path)))?;
            outfile::write_atomic(&path, text.as_bytes())?;
            eprintln!("saved {} ({how})", path.display());
            kept.saved(format!("probe report {}", path.display()));
        }
    }
    Ok(probe::tripped(&a, &r))
}

/// Walk the application checklist for `profile`, answers kept in a file the user names (a
/// later run asks only what is open); true when an answer is a failing finding.
pub fn review(profile: &Profile, ctx: Ctx) -> anyhow::Result<bool> {
    say("review walks the application items no host audit can read (write deadline, queues, ring, sequence numbers, ...); the answers go to a YAML file, so a later run asks only what is still open. An answers file that exists is read first.");
    // An existing answers file is the point (the walk resumes it), so no overwrite question.
    // The same state file as a plain `rtcheck review`, so either one resumes the other.
    let default = review::state_file()
        .unwrap_or_else(|| "rtcheck-review.yaml".into())
        .display()
        .to_string();
    let path: String = Input::new()
        .with_prompt("Answers file")
        .default(default)
        .interact_text()
        .map_err(prompt_error)?;
    let path = std::path::PathBuf::from(path.trim());
    let argv: [OsString; 3] = ["review".into(), "--save".into(), path.into()];
    let a = ReviewCli::try_parse_from(argv)?.a;
    review::run_with(&a, profile.clone(), true, ctx)
}
