//! text renderers, one file per result kind.
pub mod audit;
pub mod bench;
pub mod budget;
pub mod choose;
pub mod cluster;
pub mod delivery;
pub mod evidence;
pub mod hops;
pub mod load;
pub mod probe;
pub mod review;
pub mod verify;

/// Word-wrap `text` to `width` columns: the first line after `first`, the rest after
/// `rest` (a hanging indent). A word longer than a whole line (a path) is cut across lines.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in super::plain(text).split_whitespace() {
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
        assert_eq!(first_sentence("One. Two."), "One.");
        assert_eq!(first_sentence("Only one"), "Only one");
    }
}
