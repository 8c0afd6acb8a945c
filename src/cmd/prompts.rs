//! Interactive prompts (dialoguer) that fill a Profile, and the pieces every prompt shares:
//! prose word-wrapped to the terminal, Ctrl-C as `Interrupted` (exit 130), asking where to
//! save (never overwriting without asking) and the report format a file name asks for.
//! Reused by `choose`, the guided run and `review`.
use super::output::{self, ColorChoice, Sink};
use super::parse_count;
use crate::hops::chain::PathEntry;
use crate::profile::{Loss, Profile, Upstream};
use crate::report::Format;
use dialoguer::theme::{ColorfulTheme, SimpleTheme, Theme};
use dialoguer::{Confirm, Input, MultiSelect, Select, Sort};
use rtcheck_base::units::{fmt_duration, parse_duration};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Suggested answer when the profile has none: the framework has no default, a prompt needs one.
const SUGGESTED_VISIBLE: Duration = Duration::from_secs(1);

/// True when prompts can run: stdin and stderr (where dialoguer draws) are terminals.
pub fn can_prompt() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Ask every question, offering `defaults` as the default answers. Prompts go to stderr,
/// coloured unless NO_COLOR is set.
pub fn prompt_profile(defaults: Profile) -> anyhow::Result<Profile> {
    prompt(defaults, false, ColorChoice::Auto)
}

/// Same as [`prompt_profile`] with an explicit `--color` choice.
pub fn prompt_profile_with(defaults: Profile, color: ColorChoice) -> anyhow::Result<Profile> {
    prompt(defaults, false, color)
}

/// Ask only the required answers that `p` lacks (flags or --answers gave the rest).
pub fn prompt_missing(p: Profile, color: ColorChoice) -> anyhow::Result<Profile> {
    prompt(p, true, color)
}

/// Prompts draw on stderr, which is a terminal whenever they run.
fn colour_enabled(c: ColorChoice) -> bool {
    output::color_enabled(c, Sink::Terminal, output::no_color_env())
}

/// The columns prompts are drawn in: stderr's terminal (where dialoguer draws), else 80.
pub fn width() -> usize {
    dialoguer::console::Term::stderr()
        .size_checked()
        .map(|(_, cols)| cols as usize)
        .filter(|c| *c > 0)
        .unwrap_or(crate::report::output::DEFAULT_WIDTH)
}

/// `text` word-wrapped to the prompt terminal under a hanging indent: the terminal never
/// breaks a word ("ups / tream"), because no line reaches its edge.
pub fn wrapped(text: &str, first: &str, rest: &str) -> String {
    crate::report::text::wrap(text, width(), first, rest)
}

/// What Ctrl-C prints after `rtcheck: ` (what was kept), word-wrapped to the terminal like
/// every prompt, so the terminal never splits a word or a path at its edge.
pub fn set_interrupt_line(msg: &str) {
    rtcheck_base::os::signal::set_sigint_message(&after_prefix(msg));
}

/// A one-line notice (`rtcheck: note: ...`) on stderr, word-wrapped.
pub fn note(msg: &str) {
    eprintln!("rtcheck: {}", after_prefix(msg));
}

/// `msg` wrapped as if it followed `rtcheck: `, continuation lines indented two spaces.
fn after_prefix(msg: &str) -> String {
    let w = wrapped(&format!("rtcheck: {msg}"), "", "  ");
    let w = w.trim_end();
    // A terminal too narrow to keep "rtcheck: " on a line: the message as it is.
    w.strip_prefix("rtcheck: ").unwrap_or(msg).to_string()
}

/// Prose before a prompt, on stderr, word-wrapped.
pub fn say(text: &str) {
    eprint!("{}", wrapped(text, "", ""));
}

fn explain(color: bool, text: &str) {
    use owo_colors::OwoColorize;
    let text = wrapped(text, "", "");
    if color {
        eprint!("{}", text.dimmed());
    } else {
        eprint!("{text}");
    }
}

/// A prompt's error. Ctrl-C in a menu comes back as an `Interrupted` read (raw mode sends
/// no SIGINT): it becomes [`rtcheck_base::os::signal::Interrupted`] with the line
/// `set_sigint_message` set (what was kept), so `app` says it and exits 130, as the
/// SIGINT handler does inside a text prompt.
pub fn prompt_error(e: dialoguer::Error) -> anyhow::Error {
    // Ctrl-C inside a Select leaves the cursor hidden; give it back first.
    let _ = dialoguer::console::Term::stderr().show_cursor();
    let dialoguer::Error::IO(io) = &e;
    if io.kind() == std::io::ErrorKind::Interrupted {
        rtcheck_base::os::signal::Interrupted(rtcheck_base::os::signal::sigint_message()).into()
    } else {
        anyhow::anyhow!("prompt: {e}")
    }
}

/// A yes/no question, no by default.
pub fn confirm(q: &str) -> anyhow::Result<bool> {
    Confirm::new()
        .with_prompt(q)
        .default(false)
        .interact()
        .map_err(prompt_error)
}

/// A file to save to, `default` offered. An existing file is overwritten only when the
/// user says so; they can also give another name or not save (None).
pub fn ask_save_path(q: &str, default: &str) -> anyhow::Result<Option<PathBuf>> {
    let mut offered = default.to_string();
    loop {
        let typed: String = Input::new()
            .with_prompt(q)
            .default(offered.clone())
            .interact_text()
            .map_err(prompt_error)?;
        let path = PathBuf::from(typed.trim());
        if path.is_dir() {
            say(&format!(
                "{} is a directory; give a file name.",
                path.display()
            ));
            continue;
        }
        if !path.exists() {
            return Ok(Some(path));
        }
        say(&format!("{} already exists.", path.display()));
        let choice = Select::new()
            .with_prompt("Overwrite it?")
            .items(&[
                "no, give another name",
                "yes, overwrite it",
                "no, do not save",
            ])
            .default(0)
            .interact()
            .map_err(prompt_error)?;
        match choice {
            0 => offered = typed.trim().to_string(),
            1 => return Ok(Some(path)),
            _ => return Ok(None),
        }
    }
}

/// The extensions a saved report's format follows, as said before asking for the file.
pub const REPORT_EXTENSIONS: &str =
    "The format follows the extension: .html, .json, .md, .yaml, .xml (JUnit), .sarif; anything else is text.";

/// The report format a file name asks for, and how it was picked (said when saved).
pub fn report_format(path: &Path) -> (Format, String) {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let f = match ext.to_ascii_lowercase().as_str() {
        "json" => Format::Json,
        "yaml" | "yml" => Format::Yaml,
        "md" | "markdown" => Format::Markdown,
        "html" | "htm" => Format::Html,
        "xml" => Format::Junit,
        "sarif" => Format::Sarif,
        "txt" | "text" | "log" => Format::Text,
        "" => return (Format::Text, "text: the name has no extension".into()),
        other => {
            return (
                Format::Text,
                format!("text: .{other} is not a report format"),
            )
        }
    };
    (f, format!("{}, from the extension .{ext}", f.as_str()))
}

fn prompt(mut p: Profile, only_missing: bool, color: ColorChoice) -> anyhow::Result<Profile> {
    if !can_prompt() {
        anyhow::bail!("prompts need a terminal (give the answers as flags or with --answers FILE)");
    }
    // Ctrl-C: show the cursor again and exit 130 without saving anything.
    rtcheck_base::os::signal::exit_on_sigint_showing_cursor();
    let color = colour_enabled(color);
    let colorful = ColorfulTheme::default();
    let simple = SimpleTheme;
    let theme: &dyn Theme = if color { &colorful } else { &simple };
    let ask_all = !only_missing;
    if ask_all || p.visible_within.is_none() {
        ask_freshness(theme, color, &mut p).map_err(prompt_error)?;
    }
    if ask_all || (p.upstream.is_none() && !p.binary) {
        ask_upstream(theme, color, &mut p).map_err(prompt_error)?;
    }
    if ask_all || p.loss.is_none() {
        ask_loss(theme, color, &mut p).map_err(prompt_error)?;
    }
    if only_missing {
        return Ok(p);
    }
    ask_scale(theme, color, &mut p).map_err(prompt_error)?;
    ask_sizing(theme, color, &mut p).map_err(prompt_error)?;
    let current = p.path.take();
    p.path = ask_path(theme, color, current).map_err(prompt_error)?;
    Ok(p)
}

/// Q1: how soon a change must be visible.
fn ask_freshness(theme: &dyn Theme, color: bool, p: &mut Profile) -> Result<(), dialoguer::Error> {
    explain(
        color,
        &format!(
            "Q1 freshness: how soon must a change be visible to the user? Below {} needs push; from {} up, polling does (e.g. 200ms, 5s, 2m).",
            fmt_duration(crate::choose::decide::POLLING_FROM),
            fmt_duration(crate::choose::decide::POLLING_FROM)
        ),
    );
    let def = fmt_duration(p.visible_within.unwrap_or(SUGGESTED_VISIBLE));
    let v = ask(
        theme,
        "Visible within",
        def,
        p,
        "visible_within",
        parse_visible,
        |p, v| p.visible_within = Some(v),
    )?;
    p.visible_within = Some(v);
    Ok(())
}

/// The upstream choices, in menu order.
const UPSTREAMS: [Upstream; 3] = [Upstream::None, Upstream::Sparse, Upstream::Dense];

/// Pure: the upstream menu's default: the profile's answer, else sparse.
fn upstream_default(p: &Profile) -> usize {
    let given = p.upstream.unwrap_or(Upstream::Sparse);
    UPSTREAMS.iter().position(|u| *u == given).unwrap_or(1)
}

/// Q2: how much the client sends, and whether payloads are binary.
fn ask_upstream(theme: &dyn Theme, color: bool, p: &mut Profile) -> Result<(), dialoguer::Error> {
    explain(color, "Q2 upstream: how much does the client send to the server? none (display only), sparse (clicks, forms), dense (chat, game input).");
    let i = Select::with_theme(theme)
        .with_prompt("Upstream")
        .items(&["none", "sparse", "dense"])
        .default(upstream_default(p))
        .interact()?;
    p.upstream = Some(UPSTREAMS[i]);
    explain(color, "Q2 binary: are the payloads binary (audio, protobuf frames)? Binary or dense upstream means WebSocket.");
    p.binary = Confirm::with_theme(theme)
        .with_prompt("Binary payloads?")
        .default(p.binary)
        .interact()?;
    Ok(())
}

/// The loss choices, in menu order.
const LOSSES: [Loss; 3] = [Loss::Replaceable, Loss::Shared, Loss::PerUser];

/// Pure: the loss menu's default: the profile's answer, else replaceable.
fn loss_default(p: &Profile) -> usize {
    let given = p.loss.unwrap_or(Loss::Replaceable);
    LOSSES.iter().position(|l| *l == given).unwrap_or(0)
}

/// Q3: what losing one message costs.
fn ask_loss(theme: &dyn Theme, color: bool, p: &mut Profile) -> Result<(), dialoguer::Error> {
    explain(color, "Q3 loss: what happens if one message is lost? Replaceable: a newer one replaces it (prices, positions, online counts). Shared: it must not be lost, and everyone sees the same stream. Per-user: it must not be lost, and the data is per user.");
    // Short: the menu's answer line is "PROMPT: ITEM" and must fit too.
    let items = [
        "replaceable: newer replaces older",
        "shared: must not lose, one stream for all",
        "per-user: must not lose, data per user",
    ];
    let i = Select::with_theme(theme)
        .with_prompt("If one message is lost")
        .items(&items)
        .default(loss_default(p))
        .interact()?;
    p.loss = Some(LOSSES[i]);
    Ok(())
}

/// Q4: connections in total and the machines serving them.
fn ask_scale(theme: &dyn Theme, color: bool, p: &mut Profile) -> Result<(), dialoguer::Error> {
    explain(
        color,
        "Q4 scale: concurrent connections in total, and machines serving them.",
    );
    let def = p.connections.to_string();
    p.connections = ask(
        theme,
        "Connections",
        def,
        p,
        "connections",
        parse_count,
        |p, v| p.connections = v,
    )?;
    let def = p.machines.to_string();
    p.machines = ask(
        theme,
        "Machines",
        def,
        p,
        "machines",
        parse_count,
        |p, v| p.machines = v,
    )?;
    Ok(())
}

/// Sizing: rate, message size, longest disconnect.
fn ask_sizing(theme: &dyn Theme, color: bool, p: &mut Profile) -> Result<(), dialoguer::Error> {
    explain(color, "Sizing: messages per second to each client, bytes per message (units allowed: 512, 4KiB), longest disconnect that must not lose data.");
    let def = crate::evidence::fmt_num(p.rate).replace(',', "");
    let q = "Messages per second per client";
    p.rate = ask(theme, q, def, p, "rate", super::parse_rate, |p, v| {
        p.rate = v
    })?;
    let def = p.size.to_string();
    let parse = super::parse_message_size;
    p.size = ask(theme, "Bytes per message", def, p, "size", parse, |p, v| {
        p.size = v
    })?;
    let def = fmt_duration(p.max_disconnect);
    p.max_disconnect = ask(
        theme,
        "Max disconnect",
        def,
        p,
        "max_disconnect",
        parse_duration,
        |p, v| p.max_disconnect = v,
    )?;
    Ok(())
}

/// The hops between the users and the server: a multi-select of the catalogue ("none /
/// direct" first), then their order when there are several. Nothing selected leaves the
/// path undeclared; values declared in a loaded profile are kept for the hops kept.
fn ask_path(
    theme: &dyn Theme,
    color: bool,
    current: Option<Vec<PathEntry>>,
) -> Result<Option<Vec<PathEntry>>, dialoguer::Error> {
    explain(color, "Path: the hops between the users and the server (CDN, load balancer, ingress, proxy). Space selects, enter confirms; nothing selected leaves it undeclared. Their documented limits decide the heartbeat (`rtcheck hops`).");
    let hops = crate::hops::catalog();
    let mut items = vec!["none / direct (no hop)".to_string()];
    // One row each, within the terminal: the id whole, the name shortened at a word.
    let idw = hops.iter().map(|h| h.id.len()).max().unwrap_or(0);
    let room = width().saturating_sub(MENU_MARGIN + idw + 1);
    items.extend(
        hops.iter()
            .map(|h| format!("{:<idw$} {}", h.id, shortened(&h.name, room))),
    );
    let declared: Vec<String> = current.iter().flatten().map(|e| e.id.clone()).collect();
    let mut defaults = vec![declared.iter().any(|d| d == "direct" || d == "none")];
    defaults.extend(hops.iter().map(|h| declared.contains(&h.id)));
    // dialoguer's own echo joins the whole rows (ids and names) on one line: the ids
    // alone, wrapped to the terminal, instead.
    let picked = MultiSelect::with_theme(theme)
        .with_prompt("Hops between users and server")
        .items(&items)
        .defaults(&defaults)
        .report(false)
        .interact()?;
    let mut ids: Vec<String> = picked
        .iter()
        .filter(|i| **i > 0)
        .map(|i| hops[i - 1].id.clone())
        .collect();
    let echo = match (ids.is_empty(), picked.contains(&0)) {
        (false, _) => ids.join(", "),
        (true, true) => "none / direct".into(),
        (true, false) => "undeclared".into(),
    };
    eprint!(
        "{}",
        wrapped(&format!("Hops between users and server: {echo}"), "", "  ")
    );
    if ids.is_empty() {
        let direct = picked.contains(&0).then(|| vec![PathEntry::new("direct")]);
        return Ok(direct);
    }
    if ids.len() > 1 {
        explain(
            color,
            "Order them, outermost first (the CDN first, the proxy next to the server last).",
        );
        let order = Sort::with_theme(theme)
            .with_prompt("Outermost first")
            .items(&ids)
            .interact()?;
        ids = order.iter().map(|i| ids[*i].clone()).collect();
    }
    let kept = |id: &str| {
        current
            .iter()
            .flatten()
            .find(|e| e.id == id)
            .cloned()
            .unwrap_or_else(|| PathEntry::new(id))
    };
    Ok(Some(ids.iter().map(|id| kept(id)).collect()))
}

/// Columns a menu draws before an item ("  [ ] "), and one spare so no row reaches the edge.
const MENU_MARGIN: usize = 7;

/// `text` in at most `room` columns, cut after a whole word with "…" (a name, never an id).
fn shortened(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_string();
    }
    let mut out = String::new();
    for w in text.split_whitespace() {
        if out.chars().count() + usize::from(!out.is_empty()) + w.chars().count() + 1 > room {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    format!("{out}…")
}

/// `--visible-within`'s parser: a duration greater than zero (the profile bounds the rest).
fn parse_visible(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err("must be greater than 0".into()),
        d => Ok(d),
    }
}

/// Ask one answer, checked as it is typed with the flag's parser and the profile's bound
/// for `field` (the same messages as `choose --FLAG` and a profile file); a bad answer is
/// shown with its reason and asked again, so no answer typed before it is lost.
fn ask<T>(
    theme: &dyn Theme,
    prompt: &str,
    default: String,
    p: &Profile,
    field: &str,
    parse: fn(&str) -> Result<T, String>,
    set: fn(&mut Profile, T),
) -> Result<T, dialoguer::Error> {
    let check = |s: &String| -> Result<(), String> {
        let mut candidate = p.clone();
        set(&mut candidate, parse(s)?);
        candidate.field_error(field).map_or(Ok(()), Err)
    };
    let s: String = Input::with_theme(theme)
        .with_prompt(prompt)
        .default(default)
        .validate_with(check)
        .interact_text()?;
    // Validated above, so it parses.
    parse(&s).map_err(|e| dialoguer::Error::IO(std::io::Error::other(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A menu opens on the profile's answer, or on the suggested one when there is none.
    #[test]
    fn menus_open_on_the_profiles_answer() {
        let mut p = Profile::default();
        (p.upstream, p.loss) = (None, None);
        assert_eq!((upstream_default(&p), loss_default(&p)), (1, 0));
        for (i, u) in UPSTREAMS.iter().enumerate() {
            p.upstream = Some(*u);
            assert_eq!(upstream_default(&p), i);
        }
        for (i, l) in LOSSES.iter().enumerate() {
            p.loss = Some(*l);
            assert_eq!(loss_default(&p), i);
        }
        assert_eq!(UPSTREAMS[1], Upstream::Sparse);
        assert_eq!(LOSSES[2], Loss::PerUser);
    }

    #[test]
    fn report_format_follows_the_extension_and_says_how() {
        let f = |p: &str| report_format(Path::new(p));
        assert_eq!(f("a.json").0, Format::Json);
        assert_eq!(f("ci/audit.xml").0, Format::Junit);
        assert_eq!(f("r.md").0, Format::Markdown);
        assert_eq!(
            f("r.HTML"),
            (Format::Html, "html, from the extension .HTML".into())
        );
        assert_eq!(f("r.htm").0, Format::Html);
        assert_eq!(f("r.yml").0, Format::Yaml);
        assert_eq!(f("r.sarif").0, Format::Sarif);
        assert_eq!(f("r.txt").0, Format::Text);
        assert_eq!(
            f("r.pdf"),
            (Format::Text, "text: .pdf is not a report format".into())
        );
        assert_eq!(f("report").1, "text: the name has no extension");
    }

    #[test]
    fn a_name_is_shortened_at_a_word() {
        let name = "Envoy proxy (and Envoy Gateway / Gateway API defaults)";
        assert_eq!(shortened(name, 80), name);
        let s = shortened(name, 30);
        assert_eq!(s, "Envoy proxy (and Envoy…");
        assert!(s.chars().count() <= 30);
    }
}
