//! Interactive prompts (dialoguer) that fill a Profile. Reused by the guided run.
use super::output::{self, ColorChoice, Sink};
use crate::profile::{Loss, Profile, Upstream};
use crate::units::{fmt_duration, parse_duration};
use dialoguer::theme::{ColorfulTheme, SimpleTheme, Theme};
use dialoguer::{Confirm, Input, Select};
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
        explain(color, "Q1 freshness: how soon must a change be visible to the user? Under 1s needs push, 60s or more is polling (e.g. 200ms, 5s, 2m).");
        let def = fmt_duration(p.visible_within.unwrap_or(SUGGESTED_VISIBLE));
        let s: String = Input::with_theme(theme)
            .with_prompt("Visible within")
            .default(def)
            .validate_with(|s: &String| -> Result<(), String> {
                match parse_duration(s)? {
                    d if d.is_zero() => Err("must be greater than 0".into()),
                    _ => Ok(()),
                }
            })
            .interact_text()
            .map_err(err)?;
        p.visible_within = Some(parse_duration(&s).map_err(|e| anyhow::anyhow!(e))?);
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
    p.connections = ask_count(theme, "Connections", p.connections).map_err(err)?;
    p.machines = ask_count(theme, "Machines", p.machines).map_err(err)?;

    explain(color, "Sizing: messages per second to each client, bytes per message, longest disconnect that must not lose data.");
    let rate: String = Input::with_theme(theme)
        .with_prompt("Messages per second per client")
        .default(crate::evidence::fmt_num(p.rate).replace(',', ""))
        .validate_with(|s: &String| -> Result<(), String> {
            match s.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => Ok(()),
                _ => Err("a positive number, e.g. 10 or 0.5".into()),
            }
        })
        .interact_text()
        .map_err(err)?;
    p.rate = rate.trim().parse()?;
    p.size = ask_count(theme, "Bytes per message", p.size).map_err(err)?;
    let s: String = Input::with_theme(theme)
        .with_prompt("Max disconnect")
        .default(fmt_duration(p.max_disconnect))
        .validate_with(|s: &String| parse_duration(s).map(|_| ()))
        .interact_text()
        .map_err(err)?;
    p.max_disconnect = parse_duration(&s).map_err(|e| anyhow::anyhow!(e))?;
    Ok(p)
}

fn ask_count(theme: &dyn Theme, prompt: &str, default: u64) -> Result<u64, dialoguer::Error> {
    let s: String = Input::with_theme(theme)
        .with_prompt(prompt)
        .default(default.to_string())
        .validate_with(|s: &String| -> Result<(), String> {
            match s.trim().replace(['_', ','], "").parse::<u64>() {
                Ok(0) => Err("must be at least 1".into()),
                Ok(_) => Ok(()),
                Err(_) => Err("a whole number, e.g. 10000".into()),
            }
        })
        .interact_text()?;
    Ok(s.trim().replace(['_', ','], "").parse().unwrap_or(default))
}
