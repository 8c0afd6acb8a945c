//! The interactive walk (dialoguer on stderr): per item its title, why in one line and the
//! measured number, then yes / no / not applicable / later; values are asked, type-checked
//! (re-asked when malformed) and checked against the rule before a yes is recorded.
use crate::checklist::{Checklist, Item};
use crate::cmd::output::{self, ColorChoice, Sink};
use crate::findings::Status;
use crate::profile::Profile;
use crate::report::Palette;
use crate::review::answers::{self, Answer, Answers, Entry};
use crate::review::evaluate::{check, rule_fingerprint};
use crate::review::items::{self, Spec};
use dialoguer::theme::{ColorfulTheme, SimpleTheme, Theme};
use dialoguer::{Input, Select};
use std::collections::BTreeMap;
use std::path::Path;

const CHOICES: [&str; 4] = ["yes", "no", "not applicable", "later"];

fn err(e: dialoguer::Error) -> anyhow::Error {
    let _ = dialoguer::console::Term::stderr().show_cursor();
    let dialoguer::Error::IO(io) = &e;
    if io.kind() == std::io::ErrorKind::Interrupted {
        // Ctrl-C at a menu (raw mode: no SIGINT); same words and exit 130 as the handler.
        rtcheck_base::os::signal::Interrupted(rtcheck_base::os::signal::sigint_message()).into()
    } else {
        anyhow::anyhow!("prompt: {e}")
    }
}

/// The prompts draw on stderr, a terminal whenever they run.
fn colour(c: ColorChoice) -> bool {
    output::color_enabled(c, Sink::Terminal, output::no_color_env())
}

/// Title, why in one line, the measured number, and what can measure it.
/// Word-wrapped to the terminal (issue 27, item 3): no word is split at its edge.
fn show(item: &Item, n: usize, total: usize, pal: &Palette) {
    use crate::cmd::prompts::wrapped;
    eprintln!();
    let title = format!("[{n}/{total}] {}", item.title);
    eprint!("{}", pal.bold(&wrapped(&title, "", "      ")));
    eprint!("{}", wrapped(&item.why, "  why: ", "       "));
    if let Some(e) = item.evidence.first() {
        let ev = crate::evidence::get(e);
        let line = format!("{} ({e})", ev.values_display());
        eprint!("{}", wrapped(&line, "  measured: ", "            "));
    }
    if let Some(h) = items::measure_hint(&item.id) {
        eprint!("{}", pal.dim(&wrapped(&h, "  measure it: ", "    ")));
    }
}

/// After each answer: write every answer so far to `save` (atomically: Ctrl-C or a crash
/// leaves the previous complete file), and set what Ctrl-C will say.
fn save_as_you_go(ans: &Answers, given: usize, save: Option<&Path>) -> anyhow::Result<()> {
    if let Some(path) = save {
        rtcheck_base::outfile::write_atomic(path, ans.to_yaml().as_bytes())?;
    }
    set_interrupt_message(ans, given, save);
    Ok(())
}

/// What Ctrl-C says after `given` answers this run.
fn set_interrupt_message(ans: &Answers, given: usize, save: Option<&Path>) {
    let msg = match save {
        None => format!(
            "prompt interrupted; {} not saved (--save FILE saves each answer as you go)",
            plural(given, "answer")
        ),
        Some(path) => format!(
            "prompt interrupted; {} saved to {} ({} in the file; the next run asks only \
             what is open)",
            plural(given, "answer"),
            path.display(),
            ans.answers.len()
        ),
    };
    crate::cmd::prompts::set_interrupt_line(&msg);
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// Ask every item of `todo`, starting from `ans`; returns the updated answers. With `save`,
/// every answer is written to it as soon as it is given.
pub fn walk(
    todo: &[(&Checklist, &Item)],
    mut ans: Answers,
    p: &Profile,
    color: ColorChoice,
    save: Option<&Path>,
) -> anyhow::Result<Answers> {
    set_interrupt_message(&ans, 0, save);
    rtcheck_base::os::signal::exit_on_sigint_showing_cursor();
    let color = colour(color);
    let colorful = ColorfulTheme::default();
    let simple = SimpleTheme;
    let theme: &dyn Theme = if color { &colorful } else { &simple };
    let pal = Palette::new(color);
    for (n, (_, item)) in todo.iter().enumerate() {
        show(item, n + 1, todo.len(), &pal);
        let prev = ans.get(&item.id).cloned();
        let i = Select::with_theme(theme)
            .with_prompt("Done?")
            .items(&CHOICES)
            .default(0)
            .interact()
            .map_err(err)?;
        let answer = [Answer::Yes, Answer::No, Answer::Na, Answer::Later][i];
        let mut entry = Entry {
            id: item.id.clone(),
            answer,
            value: BTreeMap::new(),
            reason: None,
            when: Some(answers::now()),
            rule: Some(rule_fingerprint(item)),
        };
        match answer {
            Answer::Na => {
                let r: String = Input::with_theme(theme)
                    .with_prompt("Why not applicable")
                    .validate_with(|s: &String| {
                        if s.trim().is_empty() {
                            Err("a reason, one line")
                        } else {
                            Ok(())
                        }
                    })
                    .interact_text()
                    .map_err(err)?;
                entry.reason = Some(r.trim().to_string());
            }
            Answer::Yes => {
                if let Some(spec) = items::spec(&item.id) {
                    entry.value = ask_values(theme, spec, prev.as_ref(), p, &pal)?;
                }
            }
            _ => {}
        }
        ans.put(entry);
        save_as_you_go(&ans, n + 1, save)?;
    }
    Ok(ans)
}

/// Ask the values until they meet the rule, or the user keeps them (then the review
/// records the broken rule as a finding).
fn ask_values(
    theme: &dyn Theme,
    spec: &Spec,
    prev: Option<&Entry>,
    p: &Profile,
    pal: &Palette,
) -> anyhow::Result<BTreeMap<String, serde_yaml::Value>> {
    let mut last: BTreeMap<String, String> = prev
        .map(|e| {
            e.value
                .iter()
                .map(|(k, v)| (k.clone(), scalar(v)))
                .collect()
        })
        .unwrap_or_default();
    loop {
        let mut typed = BTreeMap::new();
        let mut raw = BTreeMap::new();
        for vs in spec.values {
            let mut input = Input::<String>::with_theme(theme)
                .with_prompt(if vs.required {
                    vs.prompt.to_string()
                } else {
                    format!("{} (optional)", vs.prompt)
                })
                .allow_empty(!vs.required)
                .validate_with(move |s: &String| -> Result<(), String> {
                    if s.trim().is_empty() && !vs.required {
                        return Ok(());
                    }
                    answers::parse_text(vs.kind, s).map(|_| ())
                });
            if let Some(d) = last.get(vs.name) {
                input = input.default(d.clone());
            }
            let s = input.interact_text().map_err(err)?;
            if s.trim().is_empty() {
                continue;
            }
            let v = answers::parse_text(vs.kind, &s).map_err(|e| anyhow::anyhow!(e))?;
            last.insert(vs.name.to_string(), s.trim().to_string());
            raw.insert(vs.name.to_string(), v.to_yaml());
            typed.insert(vs.name.to_string(), v);
        }
        let Ok(o) = check(spec, &typed, p) else {
            return Ok(raw);
        };
        match o.status {
            Status::Pass => {
                let ok = crate::cmd::prompts::wrapped(&o.consequence, "  ok: ", "      ");
                eprint!("{}", ok.replacen("ok:", &pal.good("ok:"), 1));
                return Ok(raw);
            }
            st => {
                let head = format!("  {} ", st.as_str());
                let text = crate::cmd::prompts::wrapped(&o.consequence, &head, "      ");
                eprint!("{}", text.replacen(st.as_str(), &pal.status(st), 1));
                eprint!(
                    "{}",
                    crate::cmd::prompts::wrapped(&o.expected, "  rule: ", "        ")
                );
                let keep = Select::with_theme(theme)
                    .with_prompt("Values break the rule")
                    .items(&["enter them again", "keep them (recorded as a finding)"])
                    .default(0)
                    .interact()
                    .map_err(err)?;
                if keep == 1 {
                    return Ok(raw);
                }
            }
        }
    }
}

fn scalar(v: &serde_yaml::Value) -> String {
    match v {
        serde_yaml::Value::String(s) => s.clone(),
        serde_yaml::Value::Number(n) => n.to_string(),
        other => serde_yaml::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}
