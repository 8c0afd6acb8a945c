//! `rtcheck` with no subcommand: on a terminal, walk `choose`, audit this host for that
//! profile, then offer to save the profile and the report, to probe a URL and to walk the
//! review. Without a terminal: usage, exit 2 (a CI job that forgot its subcommand must fail
//! loudly, not hang on a prompt).
use super::{audit, prompts, Ctx};
use crate::audit::Roots;
use crate::findings::FailOn;
use crate::outfile;
use crate::profile::{Profile, Role};
use crate::report::Format;
use dialoguer::{Confirm, Input, Select};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod offers;

pub fn run(ctx: Ctx) -> anyhow::Result<ExitCode> {
    if !prompts::can_prompt() {
        // One line (the standard for bad input); the commands are a `--help` away.
        eprintln!(
            "rtcheck: error: no subcommand and no terminal to ask on: run `rtcheck choose`, `rtcheck audit`, ... (see `rtcheck --help`)"
        );
        return Ok(ExitCode::from(2));
    }
    eprintln!("rtcheck guided run: four questions, then an audit of this host for your answer.\n");
    let profile = prompts::prompt_profile_with(Profile::default(), ctx.color)?;
    let mut rec = crate::choose::decide(&profile).map_err(|e| anyhow::anyhow!(e))?;
    rec.notes
        .push("Profile from the guided run; `rtcheck choose --help` shows every flag.".into());
    // Printed on the terminal the prompts ran on: the verdict in a few lines, so it is
    // still on screen when the next question comes.
    let screen = ctx.palette_for(None);
    println!("\n{}", screen.bold("Recommendation"));
    print!("{}", crate::report::text::choose::brief(&rec, &screen));
    println!(
        "{}\n",
        screen.dim("Full reasoning, sizing and the six must-haves: `rtcheck choose --answers PROFILE` (save the profile at the end).")
    );

    let roles = [Role::Server, Role::Proxy, Role::Loadgen];
    let role_idx = Select::new()
        .with_prompt("What does this host do (for the audit)?")
        .items(&[
            "server: terminates the client connections",
            "proxy: forwards them (one outbound port each)",
            "loadgen: opens them (one outbound port each)",
        ])
        .default(0)
        .interact()
        .map_err(|e| anyhow::anyhow!("prompt: {e}"))?;
    let mut profile = rec.profile.clone();
    profile.role = roles[role_idx];
    let pid = ask_pid()?;

    let roots = Roots {
        procfs: PathBuf::from("/proc"),
        sysfs: PathBuf::from("/sys"),
        pid,
    };
    let report = audit::build_report(profile.clone(), &roots, &[])?;
    println!(
        "\n{}",
        audit::render(&report, Format::Text, FailOn::Fail, screen, false)?
    );
    // The two verdicts together, last, where the eye is when the run ends.
    println!(
        "{} transport {}, delivery {}, topology {}; audit: {}",
        screen.bold("Summary:"),
        screen.bold(rec.transport.as_str()),
        rec.delivery.as_str(),
        rec.topology.as_str(),
        crate::report::text::audit::summary_line(&report, screen).trim_end()
    );

    if confirm("Save the profile (reuse with `rtcheck audit --profile FILE`)?")? {
        let path = ask_path("Profile file", "rtcheck-profile.yaml")?;
        outfile::write_atomic(&path, profile.to_yaml().as_bytes())?;
        eprintln!("saved {}", path.display());
    }
    if confirm("Save the audit report (.json, .xml = JUnit, .md, anything else = text)?")? {
        let path = ask_path("Report file", "rtcheck-audit.md")?;
        let format = format_for(&path);
        let text = audit::render(
            &report,
            format,
            FailOn::Fail,
            ctx.palette_for(Some(&path)),
            false,
        )?;
        outfile::write_atomic(&path, text.as_bytes())?;
        eprintln!("saved {} ({})", path.display(), format.as_str());
    }
    let mut failed = FailOn::Fail.trips(&report.summary);
    if confirm("Probe a deployed endpoint (proxy + server) from here (rtcheck probe)?")? {
        // A URL that cannot be probed is one line, not the end of the run: the review
        // is still offered, and the exit code says something failed.
        failed |= offers::probe(&profile, ctx).unwrap_or_else(|e| {
            eprintln!("rtcheck: probe: {e:#}");
            true
        });
    }
    if confirm("Walk the application checklist now (rtcheck review)?")? {
        failed |= offers::review(&profile, ctx)?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The process whose open-files limit `fd-limit` audits: the running service when the
/// user gives its PID, else rtcheck's own process (what a service started from this shell
/// gets), said before asking.
fn ask_pid() -> anyhow::Result<Option<u32>> {
    eprintln!("fd-limit audits one process's open-files limit. Give your service's PID, or leave it empty to audit rtcheck's own process (the limit a service started from this shell would get).");
    let s: String = Input::new()
        .with_prompt("Service PID (empty: this shell's limits)")
        .allow_empty(true)
        .validate_with(|s: &String| -> Result<(), String> { parse_pid(s).map(|_| ()) })
        .interact_text()
        .map_err(|e| anyhow::anyhow!("prompt: {e}"))?;
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

fn confirm(q: &str) -> anyhow::Result<bool> {
    Confirm::new()
        .with_prompt(q)
        .default(false)
        .interact()
        .map_err(|e| anyhow::anyhow!("prompt: {e}"))
}

fn ask_path(q: &str, default: &str) -> anyhow::Result<PathBuf> {
    let s: String = Input::new()
        .with_prompt(q)
        .default(default.to_string())
        .interact_text()
        .map_err(|e| anyhow::anyhow!("prompt: {e}"))?;
    Ok(PathBuf::from(s))
}

/// Report format from the file name the user typed.
pub fn format_for(path: &Path) -> Format {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => Format::Json,
        Some("xml") => Format::Junit,
        Some("md") | Some("markdown") => Format::Markdown,
        Some("yaml") | Some("yml") => Format::Yaml,
        _ => Format::Text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_format_follows_the_extension() {
        assert_eq!(format_for(Path::new("a.json")), Format::Json);
        assert_eq!(format_for(Path::new("ci/audit.xml")), Format::Junit);
        assert_eq!(format_for(Path::new("r.md")), Format::Markdown);
        assert_eq!(format_for(Path::new("r.txt")), Format::Text);
    }

    #[test]
    fn pid_answer_is_empty_or_a_running_process() {
        assert_eq!(parse_pid(" "), Ok(None));
        let me = std::process::id();
        assert_eq!(parse_pid(&me.to_string()), Ok(Some(me)));
        assert!(parse_pid("abc").unwrap_err().contains("not a process id"));
        assert!(parse_pid("4294967295").unwrap_err().contains("no process"));
    }
}
