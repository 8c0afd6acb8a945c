//! The one escaping rule for text from outside (a config's names, a file's excerpt, a
//! peer's header or event id) in every human and CI format and on stderr: every control
//! character (newline, ESC, BEL, NUL, C1, DEL) becomes a visible escape such as `\n` or
//! `\x1b`, so it cannot start a line (`::error` in a CI log), move the cursor or retitle a
//! terminal. [`excerpt`] also bounds the length: an error quotes at most a short piece.
use std::borrow::Cow;

/// `s` with every control character shown as an escape (`\n`, `\t`, `\x1b`, `\u{9b}`...).
pub fn plain(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if c.is_control() && (c as u32) < 0x100 => {
                o.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => o.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => o.push(c),
        }
    }
    Cow::Owned(o)
}

/// A whole rendered report made inert: [`plain`] for every control character but the
/// newlines and tabs that lay it out; with `keep_sgr`, also the colour sequences
/// (`ESC [ digits ; m`) a palette wrote. Anything else from outside (`ESC [2J`, an OSC
/// title, BEL, NUL) shows as an escape, whatever renderer let it through.
pub fn inert_lines(s: &str, keep_sgr: bool) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' && keep_sgr {
            if let Some(n) = sgr_len(rest) {
                o.push_str(&rest[..n]);
                rest = &rest[n..];
                continue;
            }
        }
        if c == '\n' || c == '\t' {
            o.push(c);
        } else {
            o.push_str(&plain(&rest[..c.len_utf8()]));
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(o)
}

/// Length of a colour sequence `ESC [ (digits | ;)* m` at the start of `s`.
fn sgr_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.get(1) != Some(&b'[') {
        return None;
    }
    let params = b[2..]
        .iter()
        .take(32)
        .take_while(|c| c.is_ascii_digit() || **c == b';')
        .count();
    (b.get(2 + params) == Some(&b'm')).then_some(3 + params)
}

/// Longest excerpt of a user's file an error quotes, in characters.
pub const EXCERPT_CHARS: usize = 60;

/// [`plain`] of at most `max` characters of `s`; a longer text is cut and says how much
/// was left out, so an unterminated 8 MiB token is never echoed whole.
pub fn excerpt(s: &str, max: usize) -> String {
    let mut chars = s.char_indices();
    match chars.nth(max) {
        None => plain(s).into_owned(),
        Some((cut, _)) => format!("{}... ({} more bytes)", plain(&s[..cut]), s.len() - cut),
    }
}

/// A library's error message made fit to print: control characters escaped and every
/// backquoted or double-quoted piece (what it quotes from the input) cut to
/// [`EXCERPT_CHARS`].
pub fn bound_quotes(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len().min(1024));
    let mut rest = msg;
    while let Some(open) = rest.find(['`', '"']) {
        let q = &rest[open..open + 1];
        out.push_str(&plain(&rest[..=open]));
        let inner = &rest[open + 1..];
        let close = inner.find(q).unwrap_or(inner.len());
        out.push_str(&excerpt(&inner[..close], EXCERPT_CHARS));
        out.push_str(if close < inner.len() { q } else { "" });
        rest = inner.get(close + 1..).unwrap_or("");
    }
    out.push_str(&plain(rest));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible_escapes() {
        assert_eq!(plain("ok text"), "ok text");
        assert_eq!(
            plain("a\n::error title=x::y\x1b[2J\u{9b}\x7f\x07\0"),
            "a\\n::error title=x::y\\x1b[2J\\x9b\\x7f\\x07\\x00"
        );
    }

    #[test]
    fn a_report_keeps_its_layout_and_colours_only() {
        let r = "\x1b[1mfail\x1b[0m nginx\x1b]0;pwned\x07 x\x1b[2J\0\n\tnext\r\n";
        assert_eq!(
            inert_lines(r, true),
            "\x1b[1mfail\x1b[0m nginx\\x1b]0;pwned\\x07 x\\x1b[2J\\x00\n\tnext\\r\n"
        );
        assert!(!inert_lines(r, false).contains('\x1b'));
        assert_eq!(inert_lines("a\nb", false), "a\nb");
    }

    #[test]
    fn excerpts_are_bounded() {
        assert_eq!(excerpt("short", 60), "short");
        let big = "x".repeat(8 << 20);
        let e = excerpt(&big, EXCERPT_CHARS);
        assert!(e.len() < 100, "{}", e.len());
        assert!(e.ends_with(&format!("({} more bytes)", (8 << 20) - 60)));
        assert_eq!(excerpt("é\x1bé", 2), "é\\x1b... (2 more bytes)");
        let long = format!("unknown field `{}`, expected `a`", "k".repeat(10_000));
        let b = bound_quotes(&long);
        assert!(b.len() < 150 && b.ends_with(", expected `a`"), "{b}");
        assert_eq!(bound_quotes("bad \"x\x07\" here"), "bad \"x\\x07\" here");
    }
}
