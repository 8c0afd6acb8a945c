//! What text keeps apart from [`crate::report::doc`]: the guided run's screen, the
//! bench reports' millisecond format and the table layout.
pub mod bench;
pub mod guided;
pub mod table;

/// A private-use character: no whitespace or control for `wrap`, one column, never in a
/// value; it stands for a space that must not break.
const GLUE: char = '\u{e000}';

/// Spaces inside a `backquoted` span (a command) glued, when the span fits in `max`
/// columns: a command is copied from one line, never split across two.
fn glue_code(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len());
    let mut parts = text.split('`');
    out.push_str(parts.next().unwrap_or_default());
    for (i, part) in parts.enumerate() {
        out.push('`');
        // Odd pieces (0-based i even) are inside backquotes.
        if i % 2 == 0 && part.chars().count() + 2 <= max {
            out.push_str(&part.replace(' ', &GLUE.to_string()));
        } else {
            out.push_str(part);
        }
    }
    out
}

/// Where a word too long for a line breaks: right after one of these, so each piece of a
/// path (`/sys/fs/cgroup/`), a flag (`--save=`) or a list ends at its separator and reads
/// as unfinished; joined again, the pieces are the word. A closing backquote ends a
/// `command` kept whole by [`wrap`] when punctuation follows it (`` `cmd`), ``).
const BREAKS: [char; 6] = ['/', '-', '_', '=', ',', '`'];

/// How many of `word`'s characters go on a line with `room` columns left: all when they
/// fit; else up to and including the last separator within `room` (never the first
/// character alone); a word with no separator there is hard-cut at `room` (at least 1).
fn head_len(word: &[char], room: usize) -> usize {
    let room = room.max(1);
    if word.len() <= room {
        return word.len();
    }
    let sep = word[1..room].iter().rposition(|c| BREAKS.contains(c));
    sep.map_or(room, |i| i + 2)
}

/// The words of `text`, each with the gap before it as written when that gap is spaces
/// only (two spaces inside a command are copied as given), else one space (a newline or
/// tab is a break like any other). The gap before the first word is not kept.
fn words_with_gaps(text: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut rest = text.trim_start();
    std::iter::from_fn(move || {
        let trimmed = rest.trim_start();
        let gap = &rest[..rest.len() - trimmed.len()];
        if trimmed.is_empty() {
            return None;
        }
        let end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let (word, after) = trimmed.split_at(end);
        rest = after;
        let gap = match gap.is_empty() || !gap.chars().all(|c| c == ' ') {
            true => " ",
            false => gap,
        };
        Some((gap, word))
    })
}

/// `word` in pieces of at most `room` columns, each but the last ending at a separator
/// where the word has one within reach (see [`wrap`]'s policy).
pub fn break_word(word: &str, room: usize) -> Vec<String> {
    let mut word: Vec<char> = word.chars().collect();
    let mut out = Vec::new();
    while !word.is_empty() {
        let n = head_len(&word, room);
        out.push(word.drain(..n).collect());
    }
    out
}

/// Word-wrap `text` to `width` columns: the first line after `first`, the rest after
/// `rest` (a hanging indent). A `command` in backquotes stays on one line when it fits
/// one. A word longer than a whole line (a path, a flag) breaks as [`break_word`] says:
/// after a separator, so no piece of a path the user may copy is corrupted.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let room = width.saturating_sub(rest.chars().count());
    let text = glue_code(&super::plain(text), room);
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for (gap, word) in words_with_gaps(&text) {
        let len = line.chars().count();
        if !empty && len + gap.chars().count() + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push_str(gap);
        }
        let mut word: Vec<char> = word.chars().collect();
        // Too long even for a fresh line: fill this line up to a separator, continue on
        // the next.
        while line.chars().count() + word.len() > width {
            let room = width.saturating_sub(line.chars().count());
            let n = head_len(&word, room);
            line.extend(word.drain(..n));
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
        }
        line.extend(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out.replace(GLUE, " ")
}

/// A shell command fitted to `width`: on one line when it fits; else broken between its
/// words (never inside quotes, a flag kept with its value) with ` \` ending each line, so
/// the lines still run when pasted; continuation lines go under `rest` plus two spaces. A
/// single word wider than a line stays whole: cutting it would change the command.
pub fn wrap_command(cmd: &str, width: usize, first: &str, rest: &str) -> String {
    let cmd = cmd.trim();
    if first.chars().count() + cmd.chars().count() <= width {
        return format!("{first}{cmd}\n");
    }
    let cont = format!("{rest}  ");
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    let room = width.saturating_sub(cont.chars().count() + 2);
    // A flag and its value too wide together for a line go as two pieces.
    let units = command_units(cmd).into_iter().flat_map(|u| {
        // Only a flag joined with its value: a quoted word is never split.
        let flag_first = u
            .split_once(' ')
            .is_some_and(|(f, _)| f.starts_with('-') && !f.contains(['\'', '"']));
        if u.chars().count() > room && flag_first {
            u.splitn(2, ' ').map(String::from).collect()
        } else {
            vec![u]
        }
    });
    for unit in units {
        // Room for the unit and the ` \` that ends a broken line.
        if !empty && line.chars().count() + 1 + unit.chars().count() + 2 > width {
            out.push_str(&line);
            out.push_str(" \\\n");
            line.clone_from(&cont);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(&unit);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// A fix or setting line of `; `-separated parts: each shell command (alone, or after a
/// `LABEL: ` such as `aws-alb: ` or `<ARN>: `) fitted by [`wrap_command`], the other
/// parts wrapped between words. Parts keep their `;`.
pub fn wrap_parts(text: &str, width: usize, first: &str, rest: &str) -> String {
    let parts: Vec<&str> = text.split("; ").collect();
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        let lead = if i == 0 { first } else { rest };
        let part = if i + 1 < parts.len() {
            format!("{part};")
        } else {
            part.to_string()
        };
        let (label, body) = match part.split_once(": ") {
            Some((l, b)) if !l.contains(' ') && super::is_shell_command(b) => {
                (format!("{l}: "), b.to_string())
            }
            _ => (String::new(), part.clone()),
        };
        if super::is_shell_command(&body) {
            out.push_str(&wrap_command(&body, width, &format!("{lead}{label}"), rest));
        } else {
            out.push_str(&wrap(&part, width, lead, rest));
        }
    }
    out
}

/// Prose that ends in a command (`...; to raise it: aws elbv2 ...`): the prose wrapped
/// between words, the command part under it through [`wrap_parts`], so it still runs when
/// pasted. Prose without one is [`wrap`].
pub fn wrap_note(text: &str, width: usize, first: &str, rest: &str) -> String {
    // On one line it is whole already: no break to place.
    if first.chars().count() + text.chars().count() <= width && !text.contains('\n') {
        return wrap(text, width, first, rest);
    }
    let at = text
        .match_indices(": ")
        .map(|(i, _)| i)
        .find(|&i| super::is_shell_command(&text[i + 2..]));
    match at {
        Some(i) => {
            let mut out = wrap(&text[..=i], width, first, rest);
            out.push_str(&wrap_parts(&text[i + 2..], width, rest, rest));
            out
        }
        None => wrap(text, width, first, rest),
    }
}

/// Whether a `; `-separated line holds a shell command (then [`wrap_parts`] lays it out).
pub fn has_command(text: &str) -> bool {
    text.split("; ").any(|p| {
        super::is_shell_command(p)
            || p.split_once(": ")
                .is_some_and(|(l, b)| !l.contains(' ') && super::is_shell_command(b))
    })
}

/// The shell words of `cmd` (quotes kept as written), a `--flag` joined with the value
/// after it: the pieces a command may be broken between.
fn command_units(cmd: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in cmd.chars() {
        match (quote, c) {
            _ if escaped => escaped = false,
            (_, '\\') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                continue;
            }
            _ => {}
        }
        word.push(c);
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut units: Vec<String> = Vec::new();
    for w in words {
        let joins = units.last().is_some_and(|u: &String| {
            let last = u.rsplit(' ').next().unwrap_or("");
            last.starts_with('-') && !last.contains('=') && !u.contains(' ')
        }) && !w.starts_with('-')
            && !matches!(w.as_str(), "|" | "&&" | ";" | "||");
        match units.last_mut() {
            Some(u) if joins => {
                u.push(' ');
                u.push_str(&w);
            }
            _ => units.push(w),
        }
    }
    units
}

/// A setting to type into a config or a shell: wrapped only between its `; `-separated
/// directives, each whole (copied as is); one wider than a line wraps between words, unless
/// it is a shell command (then it stays whole, on a line of its own). Prose (it starts
/// with a capital: "Compression Rules / ...") wraps between words.
pub fn wrap_setting(label: &str, text: &str, width: usize) -> String {
    let rest = " ".repeat(label.chars().count());
    if has_command(text) {
        return wrap_parts(text, width, label, &rest);
    }
    if text.starts_with(|c: char| c.is_uppercase()) {
        return wrap(text, width, label, &rest);
    }
    let mut out = String::new();
    let mut line = label.to_string();
    let mut empty = true;
    let parts: Vec<&str> = text.split("; ").collect();
    for (i, d) in parts.iter().enumerate() {
        let d = if i + 1 < parts.len() {
            format!("{d};")
        } else {
            d.to_string()
        };
        if !empty && line.chars().count() + 1 + d.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line.clone_from(&rest);
            empty = true;
        }
        // Wider than a line by itself: a shell command stays whole (copied), anything
        // else (a directive and its explanation) wraps between words.
        let room = width.saturating_sub(line.chars().count() + 1);
        if d.chars().count() > room && !crate::report::is_shell_command(&d) {
            let first = if empty {
                line.clone()
            } else {
                format!("{line} ")
            };
            let wrapped = wrap(&d, width, &first, &rest);
            let (done, last) = wrapped
                .trim_end()
                .rsplit_once('\n')
                .unwrap_or(("", &wrapped));
            if !done.is_empty() {
                out.push_str(done);
                out.push('\n');
            }
            line = last.trim_end().to_string();
            empty = false;
            continue;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(&crate::report::plain(&d));
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// A table of `rows` under `header` that fits `width` columns without cutting a word, or,
/// when it cannot, the same rows laid out vertically (the first cell as a heading, then
/// `header  value` lines, wrapped). Columns in `keep` (ids, commands) are never wrapped at
/// all; every other column keeps its longest word whole, so no number or id is split.
/// [`table::fit`] takes the rest of a layout (number columns, colours, a prose column).
pub fn fit_table(header: &[&str], rows: &[Vec<String>], width: usize, keep: &[usize]) -> String {
    let layout = table::Layout {
        keep,
        ..Default::default()
    };
    table::fit(header, rows, width, &layout)
}

/// [`wrap`] for a `; `-separated list of values (`rss_10k 280.0 MB; fds 10,002 fds`): a line
/// breaks only between values, never between a number and its name or unit.
pub fn wrap_values(text: &str, width: usize, first: &str, rest: &str) -> String {
    let glued = text
        .replace(' ', &GLUE.to_string())
        .replace(&format!(";{GLUE}"), "; ");
    wrap(&glued, width, first, rest).replace(GLUE, " ")
}

/// `TITLE: verdict` as a report's first line(s): wrapped to the width with a hanging
/// indent, then coloured (the title bold, the verdict good or bad), so escapes take no
/// columns and a long list of invalid scenarios still fits.
pub fn verdict_line(
    title: &str,
    verdict: &str,
    good: bool,
    p: &crate::report::output::Palette,
) -> String {
    let plain = wrap(&format!("{title}: {verdict}"), p.width, "", "  ");
    let tone = |s: &str| if good { p.good(s) } else { p.bad(s) };
    let mut out = String::new();
    for (i, line) in plain.lines().enumerate() {
        match (i, line.strip_prefix(title)) {
            (0, Some(rest)) => {
                let rest = rest.strip_prefix(": ").unwrap_or(rest);
                out.push_str(&format!("{}: {}", p.bold(title), tone(rest)));
            }
            _ => out.push_str(&tone(line)),
        }
        out.push('\n');
    }
    out
}

/// The first sentence of `text` (up to ". " or the end), for one-line cells.
pub fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(i) => &text[..=i],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_command_breaks_between_words_with_continuations() {
        let cmd = "aws elbv2 modify-load-balancer-attributes --load-balancer-arn <ARN> --attributes Key=idle_timeout.timeout_seconds,Value=300";
        let out = wrap_command(cmd, 80, "    ", "    ");
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1, "{out}");
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{out}");
        assert!(
            lines[..lines.len() - 1].iter().all(|l| l.ends_with(" \\")),
            "{out}"
        );
        assert!(
            out.contains("--load-balancer-arn <ARN>"),
            "a flag keeps its value: {out}"
        );
        // Pasted back together, the same words.
        let joined = out
            .replace(" \\\n", " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(joined, cmd);
        // Quotes are never broken inside.
        let q = "printf 'net.core.somaxconn = 4096 and a long tail of words here\\n' | sudo tee /etc/sysctl.d/99-rtcheck-somaxconn.conf";
        let out = wrap_command(q, 60, "  keep: ", "        ");
        assert!(
            out.contains("'net.core.somaxconn = 4096 and a long tail of words here\\n'"),
            "{out}"
        );
        assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
        // Prose ending in a command: the command on lines of its own, runnable.
        let note = format!("aws-alb binds; to raise it: {cmd}; <ARN>: aws elbv2 describe-load-balancers --names <NAME> --output text");
        let out = wrap_note(&note, 80, "  - ", "    ");
        assert!(
            out.contains("\n    aws elbv2 modify-load-balancer-attributes"),
            "{out}"
        );
        assert!(
            out.contains("\n    <ARN>: aws elbv2 describe-load-balancers"),
            "{out}"
        );
        assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
        // A short one stays as it is.
        assert_eq!(
            wrap_command("ulimit -n 65536", 80, "$ ", "  "),
            "$ ulimit -n 65536\n"
        );
    }

    /// A command printed is copied as given: two spaces inside it stay two, on a line
    /// that fits and on each line of one that wraps; only a break drops its gap.
    #[test]
    fn wrap_keeps_runs_of_spaces_inside_a_command() {
        let line = "now: printf 'a  b' | sudo tee  /etc/x.conf";
        assert_eq!(wrap(line, 80, "  ", "  "), format!("  {line}\n"));
        let note = "now: sudo sysctl -w  net.core.somaxconn=4096";
        assert_eq!(wrap_note(note, 80, "  ", "  "), format!("  {note}\n"));
        // Broken: the gap at the break goes, the gaps within a line stay.
        let w = wrap("aaaa  bbbb  cccc  dddd", 12, "", "");
        assert_eq!(w, "aaaa  bbbb\ncccc  dddd\n");
        // The edges are trimmed; only the gaps between words are kept.
        assert_eq!(wrap("  a  b  ", 80, "", ""), "a  b\n");
    }

    #[test]
    fn wrap_keeps_every_line_within_the_width_and_every_word() {
        let text = "a reconnect storm closes N and opens N inside TIME_WAIT's 60 s window";
        let w = wrap(text, 24, "  rule: ", "        ");
        assert!(w.lines().all(|l| l.chars().count() <= 24), "{w}");
        assert!(w.starts_with("  rule: a reconnect"), "{w}");
        let words: Vec<&str> = w.split_whitespace().filter(|x| *x != "rule:").collect();
        assert_eq!(words, text.split_whitespace().collect::<Vec<_>>());
        let path = format!("see {}", "/sys/fs".repeat(10));
        let w = wrap(&path, 30, "  ", "    ");
        assert!(w.lines().all(|l| l.chars().count() <= 30), "{w}");
        assert_eq!(
            w.split_whitespace().collect::<String>(),
            path.replace(' ', "")
        );
        // A command in backquotes is never split when it fits a line.
        let text = "unanswered (measure it: `rtcheck bench fanout --scenario C3`) now";
        for width in 30..80 {
            let w = wrap(text, width, "  writer-isolation: ", "      ");
            assert!(w.lines().all(|l| l.chars().count() <= width), "{w}");
            // It fits after the hanging indent from 42 columns on: then it is whole.
            let whole = w
                .lines()
                .any(|l| l.contains("`rtcheck bench fanout --scenario C3`"));
            assert_eq!(whole, width >= 42, "{width}: {w}");
        }
        assert_eq!(first_sentence("One. Two."), "One.");
        // A verdict too long for a line wraps under the title, every line within the width.
        let p = crate::report::output::Palette::plain().with_width(40);
        let v = verdict_line(
            "rtcheck bench cluster",
            "INVALID: 3 of 6 scenarios (a, b, c)",
            false,
            &p,
        );
        assert!(
            v.lines().count() > 1 && v.lines().all(|l| l.chars().count() <= 40),
            "{v}"
        );
        assert!(v.starts_with("rtcheck bench cluster: INVALID:"), "{v}");
        assert_eq!(first_sentence("Only one"), "Only one");
    }

    /// A path longer than a line breaks only after a separator, so every piece but the
    /// last ends in one and the pieces join back into the path; a word with no separator
    /// is the one thing hard-cut.
    #[test]
    fn a_too_long_word_breaks_after_a_separator() {
        let path = "/sys/fs/cgroup/system.slice/docker-0123456789abcdef.scope/memory.max";
        // From 26 columns on, every piece between separators fits the line after "  ".
        for width in 26..60 {
            let w = wrap(&format!("kept: {path}"), width, "rtcheck: ", "  ");
            assert!(w.lines().all(|l| l.chars().count() <= width), "{w}");
            let pieces: Vec<&str> = w.lines().skip(1).map(str::trim).collect();
            assert_eq!(pieces.concat(), path, "{width}: {w}");
            for p in &pieces[..pieces.len() - 1] {
                assert!(p.ends_with(BREAKS), "{width}: `{p}` cut mid-word: {w}");
            }
        }
        assert_eq!(
            break_word("--save=/tmp/run-1/report.json", 12),
            ["--save=/tmp/", "run-1/", "report.json"]
        );
        // No separator within reach: cut at the room, nothing lost.
        assert_eq!(break_word("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(break_word("a/bcdefghij", 4), ["a/", "bcde", "fghi", "j"]);
        assert_eq!(break_word("/abcdef", 4), ["/abc", "def"]);
        assert_eq!(break_word("short", 10), ["short"]);
    }

    /// A table too wide for its prose column's path keeps its columns: the path breaks
    /// after a `/` inside the cell; an id too wide for the table sends it vertical, whole.
    #[test]
    fn a_table_breaks_a_long_path_at_a_separator_and_keeps_ids_whole() {
        let path = "/sys/fs/cgroup/system.slice/docker-0123456789abcdef.scope/memory.max";
        let rows = vec![
            vec![
                "pass".into(),
                "memory".into(),
                format!("limit 512 MB at {path}"),
            ],
            vec![
                "warn".into(),
                "ephemeral-ports".into(),
                "28,232 usable".into(),
            ],
        ];
        let layout = table::Layout {
            keep: &[1],
            prose: Some(2),
            frame: table::Frame::Rule,
            ..Default::default()
        };
        let t = table::fit(&["status", "check", "observed"], &rows, 60, &layout);
        assert!(t.lines().all(|l| l.chars().count() <= 60), "{t}");
        assert!(
            t.lines().any(|l| l.contains(" memory ")),
            "not a table: {t}"
        );
        let cells: Vec<&str> = t
            .lines()
            .map(|l| l.split_whitespace().last().unwrap())
            .collect();
        assert!(
            cells
                .iter()
                .any(|c| c.starts_with("/sys/fs/cgroup/") && c.ends_with('/')),
            "{t}"
        );
        assert!(t.contains("28,232"), "{t}");
        // Too narrow for the columns: vertical, each id whole as a heading, the path
        // broken after its separators.
        let t = table::fit(&["status", "check", "observed"], &rows, 28, &layout);
        assert!(t.lines().all(|l| l.chars().count() <= 28), "{t}");
        assert!(t.lines().any(|l| l == "ephemeral-ports"), "{t}");
        assert!(t.lines().any(|l| l == "  status    warn"), "{t}");
        let observed: Vec<&str> = t.lines().map(str::trim).collect();
        assert!(observed.contains(&"system.slice/"), "{t}");
    }
}
