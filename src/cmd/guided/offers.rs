//! The guided run's offers after the audit: probe a URL the user types (issue 11) and walk
//! the application checklist (issue 16). Each builds its command's own flags, so it runs
//! with the same defaults as `rtcheck probe` and `rtcheck review`.
use super::{ask_path, confirm, format_for};
use crate::cmd::{probe, review, Ctx};
use crate::findings::FailOn;
use crate::outfile;
use crate::probe::target::Target;
use crate::profile::Profile;
use crate::report::Format;
use clap::Parser;
use dialoguer::Input;
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
pub fn probe(profile: &Profile, ctx: Ctx) -> anyhow::Result<bool> {
    eprintln!("probe checks the path between your users and your server (proxy upgrade, SSE buffering, resume, ...) with a handful of connections; it never loads the server.");
    let url: String = Input::new()
        .with_prompt("URL to probe (ws://, wss://, http://, https://)")
        .validate_with(|s: &String| -> Result<(), String> { Target::parse(s.trim()).map(|_| ()) })
        // The typed line may hold a token: show the redacted URL instead.
        .report(false)
        .interact_text()
        .map_err(|e| anyhow::anyhow!("prompt: {e}"))?;
    let url = url.trim().to_string();
    let shown = Target::parse(&url).map_err(|e| anyhow::anyhow!(e))?;
    eprintln!("probing {shown}");
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
    if confirm("Save the probe report (.json, .xml = JUnit, .md, anything else = text)?")? {
        let path = ask_path("Probe report file", "rtcheck-probe.json")?;
        let format = format_for(&path);
        let text = probe::render(&r, format, FailOn::Fail, ctx.palette_for(Some(&path)))?;
        outfile::write_atomic(&path, text.as_bytes())?;
        eprintln!("saved {} ({})", path.display(), format.as_str());
    }
    Ok(probe::tripped(&a, &r))
}

/// Walk the application checklist for `profile`, answers kept in a file the user names (a
/// later run asks only what is open); true when an answer is a failing finding.
pub fn review(profile: &Profile, ctx: Ctx) -> anyhow::Result<bool> {
    eprintln!("review walks the application items no host audit can read (write deadline, queues, ring, sequence numbers, ...); the answers go to a YAML file, so a later run asks only what is still open.");
    let path = ask_path(
        "Answers file (read first when it exists)",
        "rtcheck-review.yaml",
    )?;
    let argv: [OsString; 3] = ["review".into(), "--save".into(), path.into()];
    let a = ReviewCli::try_parse_from(argv)?.a;
    review::run_with(&a, profile.clone(), true, ctx)
}
