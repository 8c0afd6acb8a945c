//! `rtcheck` with no subcommand: on a terminal, walk `choose`, audit this host for that
//! profile, then offer to save the profile and the report, to probe a URL and to walk the
//! review. Without a terminal: usage, exit 2 (a CI job that forgot its subcommand must fail
//! loudly, not hang on a prompt).
use super::prompts::{self, confirm, prompt_error, say};
use super::{audit, Ctx};
use crate::audit::Roots;
use crate::findings::FailOn;
use crate::profile::{Profile, Role};
use crate::report::Format;
use dialoguer::{Input, Select};
use rtcheck_base::os::signal::Interrupted;
use rtcheck_base::outfile;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod kept;
mod offers;

use kept::Kept;

pub fn run(ctx: Ctx) -> anyhow::Result<ExitCode> {
    if !prompts::can_prompt() {
        // One line (the standard for bad input); the commands are a `--help` away.
        eprintln!(
            "rtcheck: error: no subcommand and no terminal to ask on: run `rtcheck choose`, `rtcheck audit`, ... (see `rtcheck --help`)"
        );
        return Ok(super::exit::usage());
    }
    // Ctrl-C anywhere in the run says what was kept and exits 130 (issue 27, item 10).
    let mut kept = Kept::default();
    kept.arm();
    say("rtcheck guided run: four questions, then an audit of this host for your answer.");
    eprintln!();
    let profile = prompts::prompt_profile_with(Profile::default(), ctx.color)?;
    let mut rec = crate::choose::decide(&profile).map_err(|e| anyhow::anyhow!(e))?;
    rec.notes
        .push("Profile from the guided run; `rtcheck choose --help` shows every flag.".into());
    // Printed on the terminal the prompts ran on: the verdict in a few lines, so it is
    // still on screen when the next question comes.
    let screen = ctx.palette_for(None);
    println!("\n{}", screen.bold("Recommendation"));
    print!("{}", crate::report::text::guided::brief(&rec, &screen));
    println!();

    let roles = [Role::Server, Role::Proxy, Role::Loadgen];
    say("The audit checks this host for the part it plays in that design.");
    // Short: the menu's answer line is "PROMPT: ITEM" and must fit too.
    let role_idx = Select::new()
        .with_prompt("What does this host do?")
        .items(&[
            "server: terminates the client connections",
            "proxy: forwards them (one outbound port each)",
            "loadgen: opens them (one outbound port each)",
        ])
        .default(0)
        .interact()
        .map_err(prompt_error)?;
    rec.profile.role = roles[role_idx];
    let profile = rec.profile.clone();
    let pid = ask_pid()?;

    let roots = Roots {
        procfs: PathBuf::from("/proc"),
        sysfs: PathBuf::from("/sys"),
        pid,
        group: None,
        others: vec![],
    };
    let report = audit::build_report(profile.clone(), &roots, &[])?;
    println!(
        "\n{}",
        audit::render(&report, Format::Text, FailOn::Fail, screen, false)?
    );
    // What matters on one screen, last, where the eye is when the run ends: each decision
    // with its why, the sizing, the must-haves that apply, then the audit's verdict.
    println!("{}", screen.bold("Summary"));
    print!("{}", crate::report::text::guided::summary(&rec, &screen));
    println!(
        "{} {}",
        screen.bold("Audit:"),
        crate::report::audit::verdict_text(&report, &screen).trim()
    );
    say("Full reasoning and every number: `rtcheck choose --answers PROFILE` (save the profile now).");

    offer_saves(&rec, &report, ctx, &mut kept)?;
    let mut failed = FailOn::Fail.trips(&report.summary);
    if confirm("Probe a deployed endpoint (proxy + server) from here (rtcheck probe)?")? {
        // A URL that cannot be probed is one line, not the end of the run: the review
        // is still offered, and the exit code says something failed. Ctrl-C ends the run.
        match offers::probe(&profile, ctx, &mut kept) {
            Ok(f) => failed |= f,
            Err(e) if e.downcast_ref::<Interrupted>().is_some() => return Err(kept.stop(e)),
            Err(e) => {
                eprintln!(
                    "rtcheck: probe: {}",
                    rtcheck_base::escape::plain(&format!("{e:#}"))
                );
                failed = true;
            }
        }
        kept.arm();
    }
    if confirm("Walk the application checklist now (rtcheck review)?")? {
        failed |= offers::review(&profile, ctx)?;
    }
    Ok(super::exit::verdict(failed, false))
}

/// Offer to save the profile and the audit report, each asking before it overwrites a
/// file; the report's format follows the extension, said when saved (issue 27, item 9).
fn offer_saves(
    rec: &crate::choose::Recommendation,
    report: &crate::report::model::FindingsReport,
    ctx: Ctx,
    kept: &mut Kept,
) -> anyhow::Result<()> {
    if confirm("Save the profile (reuse with `rtcheck audit --profile FILE`)?")? {
        if let Some(path) = prompts::ask_save_path("Profile file", "rtcheck-profile.yaml")? {
            outfile::write_atomic(&path, super::choose::saved_profile(rec, &path).as_bytes())?;
            eprintln!("saved {}", path.display());
            kept.saved(format!("profile {}", path.display()));
        }
    }
    if confirm("Save the audit report?")? {
        say(prompts::REPORT_EXTENSIONS);
        if let Some(path) = prompts::ask_save_path("Report file", "rtcheck-audit.md")? {
            let (format, how) = prompts::report_format(&path);
            let text = audit::render(
                report,
                format,
                FailOn::Fail,
                ctx.palette_for(Some(&path)),
                false,
            )?;
            outfile::write_atomic(&path, text.as_bytes())?;
            eprintln!("saved {} ({how})", path.display());
            kept.saved(format!("audit report {}", path.display()));
        }
    }
    Ok(())
}

/// The process whose open-files limit `fd-limit` audits: the running service when the
/// user gives its PID, else rtcheck's own process (what a service started from this shell
/// gets), said before asking.
fn ask_pid() -> anyhow::Result<Option<u32>> {
    say("fd-limit audits one process's open-files limit. Give your service's PID, or leave it empty to audit rtcheck's own process (the limit a service started from this shell would get).");
    let s: String = Input::new()
        .with_prompt("Service PID (empty: this shell's limits)")
        .allow_empty(true)
        .validate_with(|s: &String| -> Result<(), String> { parse_pid(s).map(|_| ()) })
        .interact_text()
        .map_err(prompt_error)?;
    parse_pid(&s).map_err(|e| anyhow::anyhow!(e))
}

/// Empty, or the PID of a running process (its /proc entry exists).
fn parse_pid(s: &str) -> Result<Option<u32>, String> {
    let t = s.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let pid: u32 = t
        .parse()
        .map_err(|_| format!("`{t}` is not a process id (a whole number, or empty)"))?;
    if !Path::new("/proc").join(pid.to_string()).exists() {
        return Err(format!("no process {pid} (/proc/{pid} does not exist)"));
    }
    Ok(Some(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_answer_is_empty_or_a_running_process() {
        assert_eq!(parse_pid(" "), Ok(None));
        let me = std::process::id();
        assert_eq!(parse_pid(&me.to_string()), Ok(Some(me)));
        assert!(parse_pid("abc").unwrap_err().contains("not a process id"));
        assert!(parse_pid("4294967295").unwrap_err().contains("no process"));
    }
}
