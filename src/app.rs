//! Parse, dispatch, and map errors to exit codes (0 ok, 1 findings, 2 usage/runtime error).
use crate::cmd::{self, Cli, Command, Ctx};
use clap::{CommandFactory, FromArgMatches};

use std::process::ExitCode;

pub fn main() -> ExitCode {
    let cli = match help_width(Cli::command())
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    let ctx = Ctx { color: cli.color };
    match run(cli.command, ctx) {
        Ok(code) => code,
        Err(e)
            if e.downcast_ref::<rtcheck_base::os::signal::Interrupted>()
                .is_some() =>
        {
            eprintln!("rtcheck: {e}");
            cmd::exit::interrupted()
        }
        Err(e) => {
            // One line: the chain joined, most specific last.
            let msg = e
                .chain()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(": ");
            eprintln!("rtcheck: error: {}", scrubbed(&msg));
            cmd::exit::usage()
        }
    }
}

/// Help wraps to the terminal (clap asks stdout), else to $COLUMNS, else to 80 columns, the
/// width every text output fits when piped (clap's own fallback is 100).
fn help_width(cmd: clap::Command) -> clap::Command {
    use std::io::IsTerminal;
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok());
    let cmd = reflow_after_help(cmd);
    if std::io::stdout().is_terminal() || columns.is_some() {
        cmd
    } else {
        cmd.term_width(crate::report::output::DEFAULT_WIDTH)
    }
}

/// Prose in `after_help` is written broken at ~90 columns; clap wraps each written line on
/// its own, so at 80 a sentence came out ragged ("was not" / "measured"). Join the lines
/// of each prose paragraph and let clap wrap them; indented lines (lists, examples,
/// YAML) stay as written.
fn reflow_after_help(mut cmd: clap::Command) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for n in names {
        cmd = cmd.mut_subcommand(n, reflow_after_help);
    }
    match cmd.get_after_help().map(|h| reflow(&h.to_string())) {
        Some(h) => cmd.after_help(h),
        None => cmd,
    }
}

/// Pure: join a column-0 line to the column-0 line before it, unless that one is empty or
/// a heading (ends with ':'), or this one starts a labelled paragraph ("Exit codes: ...").
pub fn reflow(text: &str) -> String {
    let labelled = |l: &str| {
        l.find(": ").is_some_and(|i| {
            i <= 24
                && l[..i]
                    .chars()
                    .all(|c| c.is_alphanumeric() || " .-_/".contains(c))
        })
    };
    let mut out = String::new();
    let mut prev = "";
    for line in text.lines() {
        let prose = |l: &str| !l.is_empty() && !l.starts_with(' ');
        if prose(prev) && prose(line) && !prev.ends_with(':') && !labelled(line) {
            out.push(' ');
        } else if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
        prev = line;
    }
    out
}

/// `msg` without any secret given on the command line (an error a library built from a
/// URL); every message rtcheck words itself is redacted already.
fn scrubbed(msg: &str) -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let secrets = rtcheck_base::redact::secrets_in_args(&args);
    let msg =
        rtcheck_base::redact::scrub(msg, &secrets.iter().map(String::as_str).collect::<Vec<_>>());
    // The one escaping rule on stderr too: a file name or a config's word holding ESC or a
    // newline cannot move the cursor or start a second line.
    rtcheck_base::escape::plain(&msg).into_owned()
}

/// clap errors as one line (the standard for bad input); help and version as clap prints them.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            cmd::exit::usage()
        }
        _ => {
            let msg = secret_free(&e).unwrap_or_else(|| one_line(&e.to_string()));
            let tip = suggestion(&e).unwrap_or_else(|| "see --help".into());
            eprintln!("rtcheck: error: {} ({tip})", scrubbed(&msg));
            cmd::exit::usage()
        }
    }
}

/// Flags whose values may be secrets: clap would echo a refused value (`invalid value
/// 'Bearer s3cret' for '--header'`); the message then names the flag and the reason only
/// (a `--publish` POST URL's userinfo or query: its reason shows the URL redacted).
const SECRET_FLAGS: &[&str] = &["--header", "--control-token", "--publish"];

fn secret_free(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        e.kind(),
        ErrorKind::ValueValidation | ErrorKind::InvalidValue
    ) {
        return None;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = arg.split([' ', '=']).next().unwrap_or("");
    if !SECRET_FLAGS.contains(&flag) {
        return None;
    }
    let why = std::error::Error::source(e).map_or(String::new(), |s| format!(": {s}"));
    Some(format!("invalid value for '{arg}'{why}"))
}

/// clap's "did you mean" for a misspelled flag or subcommand (its `suggestions`
/// feature), kept when the message is cut to one line.
fn suggestion(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    [ContextKind::SuggestedArg, ContextKind::SuggestedSubcommand]
        .into_iter()
        .find_map(|k| match e.get(k)? {
            ContextValue::String(s) => Some(s.clone()),
            // clap lists the most similar last.
            ContextValue::Strings(v) => v.last().cloned(),
            _ => None,
        })
        .map(|s| format!("did you mean `{s}`?"))
}

/// First meaningful line of a clap message, without its `error: ` prefix, plus the
/// `[possible values: ...]` hint when clap gave one (it is what the user needs next).
pub fn one_line(msg: &str) -> String {
    let mut lines = msg.lines().skip_while(|l| l.trim().is_empty());
    let first = lines.next().unwrap_or("");
    let mut line = first.trim().trim_start_matches("error: ").to_string();
    // "the following required arguments were not provided:" lists them on the next lines.
    if line.ends_with(':') {
        let named: Vec<&str> = lines.map(str::trim).take_while(|l| !l.is_empty()).collect();
        line.push(' ');
        line.push_str(&named.join(", "));
    }
    if let Some(hint) = msg
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("[possible values"))
    {
        line.push(' ');
        line.push_str(hint);
    }
    line
}

/// The command tree without hidden flags and subcommands (internal plumbing such as
/// `bench loadgen` and `--child`), so completions offer only what `--help` shows.
fn visible_only(cmd: &'static clap::Command) -> clap::Command {
    let mut out = clap::Command::new(cmd.get_name());
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        out = out.arg(a.clone());
    }
    for s in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out = out.subcommand(visible_only(s));
    }
    out
}

pub fn run(command: Option<Command>, ctx: Ctx) -> anyhow::Result<ExitCode> {
    match command {
        None => cmd::guided::run(ctx),
        Some(Command::Choose(a)) => cmd::choose::run(a, ctx),
        Some(Command::Audit(a)) => cmd::audit::run(a, ctx),
        Some(Command::Evidence(a)) => cmd::catalog::run_evidence(a, ctx),
        Some(Command::Checklist(a)) => cmd::catalog::run_checklist(a, ctx),
        // serve prints no report: it takes its own flags only, no command-layer context.
        Some(Command::Serve(a)) => cmd::serve::run(a),
        Some(Command::Bench(a)) => cmd::bench::run(a, ctx),
        Some(Command::Verify(a)) => cmd::verify::run(a, ctx),
        Some(Command::Explain(a)) => cmd::explain::run(a, ctx),
        Some(Command::Hops(a)) => cmd::hops::run(a, ctx),
        Some(Command::Probe(a)) => cmd::probe::run(a, ctx),
        Some(Command::Lint(a)) => cmd::lint::run(a, ctx),
        Some(Command::Review(a)) => cmd::review::run(a, ctx),
        Some(Command::Budget(a)) => cmd::budget::run(a, ctx),
        Some(Command::Load(a)) => cmd::load::run(a, ctx),
        Some(Command::Rehearse(a)) => cmd::rehearse::run(a, ctx),
        Some(Command::Completions { shell }) => {
            // Leaked once: the names borrowed into the copy must be 'static, and the
            // process prints the script and exits.
            let full: &'static clap::Command = Box::leak(Box::new(Cli::command()));
            let mut cmd = visible_only(full);
            clap_complete::generate(shell, &mut cmd, "rtcheck", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[cfg(test)]
mod reflow_tests {
    #[test]
    fn prose_lines_join_lists_and_headings_stay() {
        let t = "Exit codes: 0 ok, 1 a check was not\nmeasured.\n\nExamples:\n  a:\n    rtcheck x\nLast: one\nline\nExit codes: 0";
        assert_eq!(
            super::reflow(t),
            "Exit codes: 0 ok, 1 a check was not measured.\n\nExamples:\n  a:\n    rtcheck x\nLast: one line\nExit codes: 0"
        );
    }
}
