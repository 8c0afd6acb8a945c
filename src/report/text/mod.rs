//! text renderers, one file per result kind.
pub mod audit;
pub mod bench;
pub mod budget;
pub mod choose;
pub mod cluster;
pub mod delivery;
pub mod evidence;
pub mod guided;
pub mod hops;
pub mod load;
pub mod probe;
pub mod review;
pub mod verify;

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

/// Word-wrap `text` to `width` columns: the first line after `first`, the rest after
/// `rest` (a hanging indent). A `command` in backquotes stays on one line when it fits
/// one; a word longer than a whole line (a path) is cut across lines.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let room = width.saturating_sub(rest.chars().count());
    let text = glue_code(&super::plain(text), room);
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        let len = line.chars().count();
        if !empty && len + 1 + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        let mut word: Vec<char> = word.chars().collect();
        // Too long even for a fresh line: fill this line, continue on the next.
        while line.chars().count() + word.len() > width {
            let room = width.saturating_sub(line.chars().count()).max(1);
            line.extend(word.drain(..room.min(word.len())));
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

/// A table of `rows` under `header` that fits `width` columns without cutting a word, or,
/// when it cannot, the same rows laid out vertically (the first cell as a heading, then
/// `header  value` lines, wrapped). Columns in `keep` (ids, commands) are never wrapped at
/// all; every other column keeps its longest word whole, so no number or id is split.
pub fn fit_table(header: &[&str], rows: &[Vec<String>], width: usize, keep: &[usize]) -> String {
    use comfy_table::{presets, ColumnConstraint, ContentArrangement, Table, Width};
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width.min(u16::MAX as usize) as u16)
        .set_header(header.iter().map(|h| h.to_string()));
    for r in rows {
        t.add_row(r.clone());
    }
    let longest = |i: usize, words: bool| {
        let cells = rows.iter().filter_map(|r| r.get(i)).map(String::as_str);
        let hd = header.get(i).map_or(0, |h| h.chars().count());
        cells
            .flat_map(|c| {
                let parts: Vec<&str> = if words {
                    c.split_whitespace().collect()
                } else {
                    c.lines().collect()
                };
                parts
            })
            .map(|w| w.chars().count())
            .fold(hd, usize::max)
    };
    for i in 0..header.len() {
        // A lower boundary counts the column's padding (1 + 1) too.
        let min = (longest(i, !keep.contains(&i)) + 2).min(u16::MAX as usize) as u16;
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(min)));
        }
    }
    let text = t.to_string();
    if text.lines().all(|l| l.chars().count() <= width) {
        return text;
    }
    vertical(header, rows, width)
}

/// Rows one after another: the first cell, then each other non-empty cell as `name  value`.
fn vertical(header: &[&str], rows: &[Vec<String>], width: usize) -> String {
    let pad = header.iter().skip(1).map(|h| h.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (n, r) in rows.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        out.push_str(&wrap(&r[0].replace('\n', " "), width, "", "  "));
        for (h, cell) in header.iter().zip(r).skip(1) {
            let mut first = format!("  {h:<pad$}  ");
            let rest = " ".repeat(first.len());
            for line in cell.lines().filter(|l| !l.trim().is_empty()) {
                out.push_str(&wrap(line, width, &first, &rest));
                first.clone_from(&rest);
            }
        }
    }
    out.trim_end().to_string()
}

/// [`wrap`] for a `; `-separated list of values (`rss_10k 280.0 MB; fds 10,002 fds`): a line
/// breaks only between values, never between a number and its name or unit.
pub fn wrap_values(text: &str, width: usize, first: &str, rest: &str) -> String {
    let glued = text
        .replace(' ', &GLUE.to_string())
        .replace(&format!(";{GLUE}"), "; ");
    wrap(&glued, width, first, rest).replace(GLUE, " ")
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
        assert_eq!(first_sentence("Only one"), "Only one");
    }
}
