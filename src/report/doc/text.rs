//! The text backend of a [`Doc`]: the verdict first, then each block fitted to the
//! palette's width (tables through `table::fit`, never a cut id or number; plots are left
//! to the html page, their numbers are in the tables).
use super::{plain, Block, Doc, Span, Table, Tone, Wrap};
use crate::findings::{Finding, Status};
use crate::report::text::table::{fit, Frame, Layout};
use crate::report::text::{wrap, wrap_command, wrap_note, wrap_setting};
use crate::report::Palette;

/// A section's heading: `name:`, but a name that ends in a URL gets no colon (copying the
/// URL from the terminal would copy the colon with it).
fn heading(name: &str) -> String {
    let last = name.split_whitespace().last().unwrap_or_default();
    match last.contains("://") {
        true => name.to_string(),
        false => format!("{name}:"),
    }
}

pub fn render(doc: &Doc, p: &Palette) -> String {
    let mut s = verdict(doc, p);
    for (i, b) in doc.blocks.iter().enumerate() {
        match b {
            Block::Section(_) | Block::Part { .. } if !shows(&doc.blocks[i + 1..]) => {}
            Block::Section(name) | Block::Part { title: name, .. } => {
                s.push('\n');
                for l in wrap(&heading(name), p.width, "", "  ").lines() {
                    s.push_str(&format!("{}\n", p.bold(l)));
                }
            }
            Block::Para { spans, .. } => s.push_str(&para(spans, p)),
            Block::Note(text) => {
                s.push('\n');
                for l in wrap(text, p.width, "", "  ").lines() {
                    s.push_str(&format!("{}\n", p.dim(l)));
                }
            }
            Block::Table(t) => s.push_str(&table(t, p)),
            Block::Invalid { why, .. } => s.push_str(
                &wrap(&format!("INVALID: {why}"), p.width, "  ", "    ").replacen(
                    "INVALID:",
                    &p.bad("INVALID:"),
                    1,
                ),
            ),
            Block::Findings(fs) => fs.iter().for_each(|f| s.push_str(&finding(f, p))),
            Block::List(items) => {
                s.push('\n');
                for i in items {
                    s.push_str(&painted(i, p, "  - ", "    "));
                }
            }
            Block::Checks(cs) => {
                s.push('\n');
                for c in cs.iter().filter(|c| c.status != Status::Pass) {
                    let head = format!("  {} ", p.status(c.status));
                    let text = format!("{}: {}", c.name, c.detail);
                    s.push_str(&wrap(&text, p.width, &head, "       "));
                }
            }
            Block::Plot(_)
            | Block::Figure(_)
            | Block::Wide(_)
            | Block::Cards(_)
            | Block::Anchored(_) => {}
            Block::Setting { label, text } => {
                let label = match label.is_empty() {
                    true => "    ".to_string(),
                    false => format!("    {label}: "),
                };
                s.push_str(&wrap_setting(&label, text, p.width));
            }
            Block::Pre(text) => {
                s.push('\n');
                for l in text.lines() {
                    s.push_str(&wrap(l, p.width, "  | ", "  | "));
                }
            }
            Block::Item(i) => {
                s.push('\n');
                s.push_str(&painted(&i.head, p, "", "    "));
                i.lines
                    .iter()
                    .for_each(|l| s.push_str(&painted(l, p, "  ", "  ")));
            }
        }
    }
    // One blank line between blocks, however they end and begin.
    while s.contains("\n\n\n") {
        s = s.replace("\n\n\n", "\n\n");
    }
    s
}

/// Whether text shows anything of a section (the blocks up to the next one): a heading
/// over only plots, wide tables and cards is left out with them.
fn shows(rest: &[Block]) -> bool {
    let heading = |b: &&Block| matches!(b, Block::Section(_) | Block::Part { .. });
    let section = rest.iter().take_while(|b| !heading(b));
    let hidden = |b: &Block| {
        matches!(
            b,
            Block::Plot(_)
                | Block::Figure(_)
                | Block::Wide(_)
                | Block::Cards(_)
                | Block::Anchored(_)
        )
    };
    section.into_iter().any(|b| !hidden(b))
}

/// The verdict, wrapped with a hanging indent and painted by its tone (after wrapping, so
/// escapes take no columns).
fn verdict(doc: &Doc, p: &Palette) -> String {
    if doc.verdict.tone == Tone::Plain {
        // A plain verdict (a catalogue entry's id and title) keeps its emphasis.
        return painted(&doc.verdict.text, p, "", "  ");
    }
    let text = wrap(&plain(&doc.verdict.text), p.width, "", "  ");
    let paint = |l: &str| match doc.verdict.tone {
        Tone::Good => p.good(l),
        Tone::Warn => p.warn(l),
        Tone::Bad | Tone::Plain => p.bad(l),
    };
    text.lines().map(|l| paint(l) + "\n").collect()
}

/// A paragraph wrapped plain (so escapes take no columns and are never made inert), then
/// its emphasis and status words painted where they landed.
fn para(spans: &[Span], p: &Palette) -> String {
    painted(spans, p, "  ", "  ")
}

/// Spans wrapped under `first`/`rest` (a command at the end on lines of its own, whole),
/// then painted.
fn painted(spans: &[Span], p: &Palette, first: &str, rest: &str) -> String {
    let mut s = wrap_note(&plain(spans), p.width, first, rest);
    if !p.enabled {
        return s;
    }
    let mut at = 0;
    for span in spans {
        let (x, painted) = match span {
            Span::Strong(x) => (x.as_str(), p.bold(x)),
            Span::Status(st) => (st.as_str(), p.status(*st)),
            Span::Text(x) | Span::Code(x) | Span::Num { shown: x, .. } => {
                // Plain text moves the cursor past itself when it is there whole.
                at = s[at..].find(x.as_str()).map_or(at, |i| at + i + x.len());
                continue;
            }
            // Invalid parts are said plain (their reason is the words that matter).
            Span::Withheld(_) => continue,
        };
        if let Some(i) = s[at..].find(x).map(|i| at + i) {
            s.replace_range(i..i + x.len(), &painted);
            at = i + painted.len();
        }
    }
    s
}

fn table(t: &Table, p: &Palette) -> String {
    let header: Vec<String> = t.columns.iter().map(|c| c.header()).collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    // A withheld part reads "INVALID" (its reason is too long for a cell; the kind says
    // it in a block of its own) and the row is padded to the header.
    let mut tones = Vec::new();
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .enumerate()
        .map(|(n, r)| {
            let mut cells: Vec<String> = r
                .cells
                .iter()
                .enumerate()
                .map(|(i, c)| match c {
                    Span::Withheld(_) => {
                        tones.push((n, i, crate::report::text::table::Tone::Bad));
                        "INVALID".into()
                    }
                    Span::Status(st) => {
                        tones.push((n, i, crate::report::text::table::Tone::of(*st)));
                        st.as_str().into()
                    }
                    c => plain(std::slice::from_ref(c)),
                })
                .collect();
            cells.resize(t.columns.len(), String::new());
            cells
        })
        .collect();
    let right: Vec<usize> = (0..t.columns.len())
        .filter(|&i| t.columns[i].unit.is_some())
        .collect();
    // The first column (a row's name) and every id column stay whole.
    let keep: Vec<usize> = (0..t.columns.len())
        .filter(|&i| i == 0 || t.columns[i].wrap == Wrap::Never)
        .collect();
    let prose = (0..t.columns.len()).find(|&i| t.columns[i].wrap == Wrap::Prose);
    let layout = Layout {
        keep: &keep,
        prose,
        right: &right,
        frame: Frame::Rule,
        tones: &tones,
        colour: p.enabled,
    };
    let width = p.width.saturating_sub(2);
    let mut body = fit(&header, &rows, width, &layout);
    // fit keeps a header on its lines; when the table went vertical (no rule under a
    // header), try again with each header wrapped to its column's values.
    if !body.contains('─') {
        let narrow: Vec<String> = (header.iter().enumerate())
            .map(|(i, h)| wrap_header(h, rows.iter().filter_map(|r| r.get(i))))
            .collect();
        let narrow: Vec<&str> = narrow.iter().map(String::as_str).collect();
        let second = fit(&narrow, &rows, width, &layout);
        if second.contains('─') {
            body = second;
        }
    }
    let lines: String = body
        .lines()
        .map(|l| format!("  {}\n", l.trim_end()))
        .collect();
    format!("\n{lines}\n")
}

/// A header greedily on lines as wide as its column's widest value (or its longest word).
fn wrap_header<'a>(h: &str, cells: impl Iterator<Item = &'a String>) -> String {
    let widest = cells.flat_map(|c| c.lines()).map(|l| l.chars().count());
    let words = || h.split(' ');
    let room = widest
        .chain(words().map(|w| w.chars().count()))
        .max()
        .unwrap_or(0);
    let mut lines: Vec<String> = Vec::new();
    for w in words() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + w.chars().count() <= room => {
                l.push(' ');
                l.push_str(w);
            }
            _ => lines.push(w.to_string()),
        }
    }
    lines.join("\n")
}

fn finding(f: &Finding, p: &Palette) -> String {
    let mut s = format!("\n{} {}:\n", p.status(f.status), f.id);
    s.push_str(&wrap(
        &format!("{}; expected {}", f.observed, f.expected),
        p.width,
        "  ",
        "  ",
    ));
    if f.status != Status::Pass && !f.fix.summary.is_empty() {
        s.push_str(&wrap(
            &format!("fix: {}", f.fix.summary),
            p.width,
            "  ",
            "    ",
        ));
    }
    // A command stays whole to be copied (wrapped between words only past the width).
    for c in f.fix.runtime.iter().filter(|_| f.status != Status::Pass) {
        match crate::report::is_shell_command(c) {
            true => s.push_str(&wrap_command(c, p.width, "  - ", "    ")),
            false => s.push_str(&wrap(&format!("- {c}"), p.width, "  ", "    ")),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A heading ending in a URL is printed without a colon glued to the URL; any other
    /// heading keeps its colon.
    #[test]
    fn a_heading_ending_in_a_url_gets_no_colon() {
        assert_eq!(heading("ws://127.0.0.1:8080/ws"), "ws://127.0.0.1:8080/ws");
        assert_eq!(heading("probe https://h/events"), "probe https://h/events");
        assert_eq!(heading("findings"), "findings:");
        assert_eq!(heading("hops of the path"), "hops of the path:");
    }
}
