//! The text backend of a [`Doc`]: the verdict first, then each block fitted to the
//! palette's width (tables through `table::fit`, never a cut id or number; plots are left
//! to the html page, their numbers are in the tables).
use super::{plain, Block, Doc, Span, Table, Tone};
use crate::findings::{Finding, Status};
use crate::report::text::table::{fit, Frame, Layout};
use crate::report::text::{wrap, wrap_note, wrap_setting};
use crate::report::Palette;

pub fn render(doc: &Doc, p: &Palette) -> String {
    let mut s = verdict(doc, p);
    for b in &doc.blocks {
        match b {
            Block::Section(name) => s.push_str(&format!("\n{}\n", p.bold(&format!("{name}:")))),
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
            Block::Plot(_) => {}
            Block::Setting { label, text } => {
                let label = match label.is_empty() {
                    true => "    ".to_string(),
                    false => format!("    {label}: "),
                };
                s.push_str(&wrap_setting(&label, text, p.width));
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
            Span::Text(x) | Span::Num { shown: x, .. } => {
                // Plain text moves the cursor past itself when it is there whole.
                at = s[at..].find(x.as_str()).map_or(at, |i| at + i + x.len());
                continue;
            }
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
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            r.cells
                .iter()
                .map(|c| plain(std::slice::from_ref(c)))
                .collect()
        })
        .collect();
    let right: Vec<usize> = (0..t.columns.len())
        .filter(|&i| t.columns[i].unit.is_some())
        .collect();
    let layout = Layout {
        keep: &[0],
        right: &right,
        frame: Frame::Rule,
        colour: p.enabled,
        ..Default::default()
    };
    let body = fit(&header, &rows, p.width.saturating_sub(2), &layout);
    let lines: String = body
        .lines()
        .map(|l| format!("  {}\n", l.trim_end()))
        .collect();
    format!("\n{lines}\n")
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
    s
}
