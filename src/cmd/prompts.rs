//! Interactive prompts (dialoguer) that fill a Profile. Reused by the guided run.
use super::output::{self, ColorChoice, Sink};
use super::parse_count;
use crate::hops::chain::PathEntry;
use crate::profile::{Loss, Profile, Upstream};
use crate::units::{fmt_duration, parse_duration};
use dialoguer::theme::{ColorfulTheme, SimpleTheme, Theme};
use dialoguer::{Confirm, Input, MultiSelect, Select, Sort};
use std::io::IsTerminal;
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

fn explain(color: bool, text: &str) {
    use owo_colors::OwoColorize;
    if color {
        eprintln!("{}", text.dimmed());
    } else {
        eprintln!("{text}");
    }
}

fn prompt(mut p: Profile, only_missing: bool, color: ColorChoice) -> anyhow::Result<Profile> {
    if !can_prompt() {
        anyhow::bail!("prompts need a terminal (give the answers as flags or with --answers FILE)");
    }
    // Ctrl-C: show the cursor again and exit 130 without saving anything.
    crate::sys::signal::exit_on_sigint_showing_cursor();
    let color = colour_enabled(color);
    let colorful = ColorfulTheme::default();
    let simple = SimpleTheme;
    let theme: &dyn Theme = if color { &colorful } else { &simple };
    let err = |e: dialoguer::Error| {
        // Ctrl-C inside a Select leaves the cursor hidden; give it back before exiting.
        let _ = dialoguer::console::Term::stderr().show_cursor();
        let dialoguer::Error::IO(io) = &e;
        if io.kind() == std::io::ErrorKind::Interrupted {
            anyhow::anyhow!("prompt interrupted; nothing saved")
        } else {
            anyhow::anyhow!("prompt: {e}")
        }
    };

    if !only_missing || p.visible_within.is_none() {
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
            &p,
            "visible_within",
            parse_visible,
            |p, v| p.visible_within = Some(v),
        )
        .map_err(err)?;
        p.visible_within = Some(v);
    }

    if !only_missing || (p.upstream.is_none() && !p.binary) {
        explain(color, "Q2 upstream: how much does the client send to the server? none (display only), sparse (clicks, forms), dense (chat, game input).");
        let items = ["none", "sparse", "dense"];
        let def = match p.upstream {
            Some(Upstream::None) => 0,
            Some(Upstream::Dense) => 2,
            _ => 1,
        };
        let i = Select::with_theme(theme)
            .with_prompt("Upstream")
            .items(&items)
            .default(def)
            .interact()
            .map_err(err)?;
        p.upstream = Some([Upstream::None, Upstream::Sparse, Upstream::Dense][i]);
        explain(color, "Q2 binary: are the payloads binary (audio, protobuf frames)? Binary or dense upstream means WebSocket.");
        p.binary = Confirm::with_theme(theme)
            .with_prompt("Binary payloads?")
            .default(p.binary)
            .interact()
            .map_err(err)?;
    }

    if !only_missing || p.loss.is_none() {
        explain(color, "Q3 loss: what happens if one message is lost?");
        let items = [
            "replaceable: newer replaces older (prices, positions, online counts)",
            "shared: must not lose, everyone sees the same stream",
            "per-user: must not lose, data is per user",
        ];
        let def = match p.loss {
            Some(Loss::Shared) => 1,
            Some(Loss::PerUser) => 2,
            _ => 0,
        };
        let i = Select::with_theme(theme)
            .with_prompt("If one message is lost")
            .items(&items)
            .default(def)
            .interact()
            .map_err(err)?;
        p.loss = Some([Loss::Replaceable, Loss::Shared, Loss::PerUser][i]);
    }

    if only_missing {
        return Ok(p);
    }

    explain(
        color,
        "Q4 scale: concurrent connections in total, and machines serving them.",
    );
    let def = p.connections.to_string();
    p.connections = ask(
        theme,
        "Connections",
        def,
        &p,
        "connections",
        parse_count,
        |p, v| p.connections = v,
    )
    .map_err(err)?;
    let def = p.machines.to_string();
    p.machines = ask(
        theme,
        "Machines",
        def,
        &p,
        "machines",
        parse_count,
        |p, v| p.machines = v,
    )
    .map_err(err)?;

    explain(color, "Sizing: messages per second to each client, bytes per message (units allowed: 512, 4KiB), longest disconnect that must not lose data.");
    let def = crate::evidence::fmt_num(p.rate).replace(',', "");
    p.rate = ask(
        theme,
        "Messages per second per client",
        def,
        &p,
        "rate",
        super::parse_rate,
        |p, v| p.rate = v,
    )
    .map_err(err)?;
    let def = p.size.to_string();
    p.size = ask(
        theme,
        "Bytes per message",
        def,
        &p,
        "size",
        super::parse_message_size,
        |p, v| p.size = v,
    )
    .map_err(err)?;
    let def = fmt_duration(p.max_disconnect);
    p.max_disconnect = ask(
        theme,
        "Max disconnect",
        def,
        &p,
        "max_disconnect",
        parse_duration,
        |p, v| p.max_disconnect = v,
    )
    .map_err(err)?;
    let current = p.path.take();
    p.path = ask_path(theme, color, current).map_err(err)?;
    Ok(p)
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
    items.extend(hops.iter().map(|h| format!("{:<20} {}", h.id, h.name)));
    let declared: Vec<String> = current.iter().flatten().map(|e| e.id.clone()).collect();
    let mut defaults = vec![declared.iter().any(|d| d == "direct" || d == "none")];
    defaults.extend(hops.iter().map(|h| declared.contains(&h.id)));
    let picked = MultiSelect::with_theme(theme)
        .with_prompt("Hops between users and server")
        .items(&items)
        .defaults(&defaults)
        .interact()?;
    let mut ids: Vec<String> = picked
        .iter()
        .filter(|i| **i > 0)
        .map(|i| hops[i - 1].id.clone())
        .collect();
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
