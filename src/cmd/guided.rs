//! `rtcheck` with no subcommand: on a terminal, walk `choose`, audit this host for that
//! profile, then offer to save the profile and the report. Without a terminal: usage, exit 2
//! (a CI job that forgot its subcommand must fail loudly, not hang on a prompt).
use super::{audit, choose, prompts, Cli, Ctx};
use crate::audit::Roots;
use crate::findings::FailOn;
use crate::outfile;
use crate::profile::{Profile, Role};
use crate::report::Format;
use clap::CommandFactory;
use dialoguer::{Confirm, Input, Select};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(ctx: Ctx) -> anyhow::Result<ExitCode> {
    if !prompts::can_prompt() {
        let help = Cli::command().render_help();
        eprintln!("{help}");
        eprintln!("rtcheck: error: no subcommand and no terminal to ask on; run `rtcheck choose`, `rtcheck audit`, ... (see above)");
        return Ok(ExitCode::from(2));
    }
    eprintln!("rtcheck guided run: four questions, then an audit of this host for your answer.\n");
    let profile = prompts::prompt_profile_with(Profile::default(), ctx.color)?;
    let mut rec = crate::choose::decide(&profile).map_err(|e| anyhow::anyhow!(e))?;
    rec.notes
        .push("Profile from the guided run; `rtcheck choose --help` shows every flag.".into());
    // Printed on the terminal the prompts ran on.
    let screen = ctx.palette_for(None);
    println!("{}", choose::render(&rec, Format::Text, &screen)?);

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

    let roots = Roots {
        procfs: PathBuf::from("/proc"),
        sysfs: PathBuf::from("/sys"),
        pid: None,
    };
    let report = audit::build_report(profile.clone(), &roots, &[])?;
    println!(
        "{}",
        audit::render(&report, Format::Text, FailOn::Fail, screen)?
    );

    if confirm("Save the profile (reuse with `rtcheck audit --profile FILE`)?")? {
        let path = ask_path("Profile file", "rtcheck-profile.yaml")?;
        outfile::write_atomic(&path, profile.to_yaml().as_bytes())?;
        eprintln!("saved {}", path.display());
    }
    if confirm("Save the audit report (.json, .xml = JUnit, .md, anything else = text)?")? {
        let path = ask_path("Report file", "rtcheck-audit.md")?;
        let format = format_for(&path);
        let text = audit::render(&report, format, FailOn::Fail, ctx.palette_for(Some(&path)))?;
        outfile::write_atomic(&path, text.as_bytes())?;
        eprintln!("saved {} ({})", path.display(), format.as_str());
    }
    Ok(if FailOn::Fail.trips(&report.summary) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
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
}
