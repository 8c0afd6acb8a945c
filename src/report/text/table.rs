//! The one table policy every text renderer goes through: a table fits the width without
//! cutting a word, or the same rows are laid out vertically. Ids and commands (`keep`) are
//! never wrapped; every other cell keeps its longest word whole, so no number is split; only
//! a `prose` column may break a path too long for it, after a separator as [`wrap`] does.
use super::{break_word, wrap, GLUE};
use crate::findings::Status;
use crate::report::Palette;
use comfy_table::{Attribute, Cell, CellAlignment, Color, ColumnConstraint, Table, Width};

/// The colour of a cell. comfy-table paints it after layout, so widths ignore escape codes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tone {
    Good,
    Warn,
    Bad,
    Dim,
}

impl Tone {
    pub fn of(st: Status) -> Tone {
        match st {
            Status::Pass => Tone::Good,
            Status::Warn => Tone::Warn,
            Status::Fail => Tone::Bad,
            Status::Skip | Status::Suppressed => Tone::Dim,
        }
    }

    /// The same colours as [`Palette::good`], `warn`, `bad` and `dim`.
    fn cell(self, c: Cell) -> Cell {
        match self {
            Tone::Good => c.fg(Color::Green),
            Tone::Warn => c.fg(Color::Yellow),
            Tone::Bad => c.fg(Color::Red).add_attribute(Attribute::Bold),
            Tone::Dim => c.add_attribute(Attribute::Dim),
        }
    }

    fn paint(self, p: &Palette, s: &str) -> String {
        match self {
            Tone::Good => p.good(s),
            Tone::Warn => p.warn(s),
            Tone::Bad => p.bad(s),
            Tone::Dim => p.dim(s),
        }
    }
}

/// The frame around the cells.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Frame {
    /// Every cell boxed (most tables).
    #[default]
    Grid,
    /// Only a rule under the header: every column goes to content (lists of checks).
    Rule,
    /// No header row and no lines at all (probe's per-URL lists).
    Bare,
}

impl Frame {
    fn preset(self) -> &'static str {
        match self {
            Frame::Grid => comfy_table::presets::UTF8_FULL_CONDENSED,
            Frame::Rule => "     ─             ",
            Frame::Bare => comfy_table::presets::NOTHING,
        }
    }
}

/// How a table is laid out beyond its cells. `Layout::default()` is a grid where every
/// column keeps its longest word whole.
#[derive(Clone, Copy, Debug, Default)]
pub struct Layout<'a> {
    /// Columns never wrapped at all: ids, commands.
    pub keep: &'a [usize],
    /// Number columns, right-aligned.
    pub right: &'a [usize],
    /// A column of free text whose too-long paths break after a separator rather than send
    /// the whole table vertical.
    pub prose: Option<usize>,
    pub frame: Frame,
    /// Coloured cells: (row, column, tone).
    pub tones: &'a [(usize, usize, Tone)],
    /// Colours on (a terminal that wants them).
    pub colour: bool,
}

impl Layout<'_> {
    /// The tone of row `n`, column `i`, if it has one.
    fn tone(&self, n: usize, i: usize) -> Option<Tone> {
        self.tones
            .iter()
            .find(|x| (x.0, x.1) == (n, i))
            .map(|x| x.2)
    }
}

/// A findings table (audit, probe): `status`, `check` (an id, kept whole), `observed`
/// (prose), the status coloured by its tone.
pub fn findings(statuses: &[Status], rows: &[Vec<String>], frame: Frame, pal: &Palette) -> String {
    let tones: Vec<_> = statuses
        .iter()
        .enumerate()
        .map(|(n, st)| (n, 0, Tone::of(*st)))
        .collect();
    let layout = Layout {
        keep: &[1],
        prose: Some(2),
        frame,
        tones: &tones,
        colour: pal.enabled,
        ..Default::default()
    };
    fit(&["status", "check", "observed"], rows, pal.width, &layout)
}

/// The narrowest a prose column gets before the table goes vertical instead.
const MIN_PROSE: usize = 16;

/// `rows` under `header` fitted to `width` by `layout`'s rules (see the module's policy).
pub fn fit(header: &[&str], rows: &[Vec<String>], width: usize, layout: &Layout) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| glue_units(c)).collect())
        .collect();
    fit_glued(header, &rows, width, layout).replace(GLUE, " ")
}

/// Units a number is printed with; the space between them never breaks a line.
const UNITS: [&str; 24] = [
    "s", "ms", "µs", "us", "ns", "min", "h", "d", "B", "kB", "KB", "KiB", "MB", "MiB", "GB", "GiB",
    "%", "x", "fds", "conns", "bytes", "ports", "msgs", "pages",
];

/// `cell` with the space between a number and its unit ("0.2 s", "1,024 fds", "30 MB/s")
/// glued, so no layout puts them on two lines.
fn glue_units(cell: &str) -> String {
    let number = |w: &str| {
        let w = w.trim_start_matches(['~', '<', '>', '≤', '≥', '+', '-', '(']);
        w.starts_with(|c: char| c.is_ascii_digit())
            && w.chars().all(|c| c.is_ascii_digit() || ".,".contains(c))
    };
    let unit = |w: &str| {
        let w = w.trim_end_matches([',', ';', ')', '.', ':']);
        UNITS.contains(&w) || (w.ends_with("/s") && w.len() <= 8)
    };
    let lines = cell.lines().map(|l| {
        let words: Vec<&str> = l.split(' ').collect();
        let mut out = String::with_capacity(l.len());
        for (i, w) in words.iter().enumerate() {
            if i > 0 {
                let join = number(words[i - 1]) && unit(w);
                out.push(if join { GLUE } else { ' ' });
            }
            out.push_str(w);
        }
        out
    });
    lines.collect::<Vec<_>>().join("\n")
}

fn fit_glued(header: &[&str], rows: &[Vec<String>], width: usize, layout: &Layout) -> String {
    let mins = min_widths(header, rows, layout);
    let mut text = render(header, rows, width, layout, &mins);
    if let Some(p) = layout.prose.filter(|_| !fits(&text, width)) {
        let others: usize = mins
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != p)
            .map(|x| x.1)
            .sum();
        let room = width.saturating_sub(others + overhead(layout.frame, header.len()));
        if room >= MIN_PROSE {
            let rows = break_long_words(rows, p, room);
            let mins = min_widths(header, &rows, layout);
            text = render(header, &rows, width, layout, &mins);
        }
    }
    if fits(&text, width) {
        return text;
    }
    vertical(header, rows, width, layout)
}

fn fits(text: &str, width: usize) -> bool {
    text.lines().all(|l| visible_width(l) <= width)
}

/// Columns `line` takes on a terminal: its characters without the colour escapes
/// (`ESC [ ... m`) comfy-table put around styled cells.
fn visible_width(line: &str) -> usize {
    let mut n = 0;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|c| c.is_ascii_alphabetic());
        } else {
            n += 1;
        }
    }
    n
}

/// Each column's narrowest width: its longest line in `keep`, else its longest word
/// (words as comfy-table splits them, on spaces), the header's lines included unless the
/// frame hides it.
fn min_widths(header: &[&str], rows: &[Vec<String>], layout: &Layout) -> Vec<usize> {
    let keep = layout.keep;
    let shown = layout.frame != Frame::Bare;
    let widest = |text: &str, whole: bool| {
        text.lines()
            .flat_map(|l| {
                if whole {
                    vec![l]
                } else {
                    l.split(' ').collect()
                }
            })
            .map(|w| w.chars().count())
            .max()
            .unwrap_or(0)
    };
    (0..header.len())
        .map(|i| {
            let cells = rows.iter().filter_map(|r| r.get(i));
            cells
                .map(|c| widest(c, keep.contains(&i)))
                .fold(if shown { widest(header[i], true) } else { 0 }, usize::max)
        })
        .collect()
}

/// Columns taken by the frame and the padding of `n` columns, measured on a one-letter table.
fn overhead(frame: Frame, n: usize) -> usize {
    let mut t = Table::new();
    t.load_preset(frame.preset()).force_no_tty();
    t.add_row(vec!["x"; n]);
    let line = t.to_string();
    let widest = line.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    widest.saturating_sub(n)
}

/// The rows with every path (a word with a `/`) of column `col` longer than `room` broken
/// after a separator, one piece a line. Other words stay whole: a number split at its
/// thousands commas would read as two.
fn break_long_words(rows: &[Vec<String>], col: usize, room: usize) -> Vec<Vec<String>> {
    let cell = |c: &str| {
        let lines = c.lines().map(|l| {
            let path = |w: &str| w.chars().count() > room && w.contains('/');
            let words = l.split(' ').map(|w| match path(w) {
                true => break_word(w, room).join("\n"),
                false => w.to_string(),
            });
            words.collect::<Vec<_>>().join(" ")
        });
        lines.collect::<Vec<_>>().join("\n")
    };
    let row = |r: &Vec<String>| {
        let cells = r.iter().enumerate();
        cells
            .map(|(i, c)| if i == col { cell(c) } else { c.clone() })
            .collect()
    };
    rows.iter().map(row).collect()
}

fn render(
    header: &[&str],
    rows: &[Vec<String>],
    width: usize,
    layout: &Layout,
    mins: &[usize],
) -> String {
    let mut t = Table::new();
    t.load_preset(layout.frame.preset())
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(width.min(u16::MAX as usize) as u16);
    if layout.colour {
        t.enforce_styling();
    } else {
        t.force_no_tty();
    }
    if layout.frame != Frame::Bare {
        t.set_header(header.iter().map(|h| h.to_string()));
    }
    for (n, r) in rows.iter().enumerate() {
        let tone = |i: usize| layout.tone(n, i);
        t.add_row(r.iter().enumerate().map(|(i, c)| match tone(i) {
            Some(tone) => tone.cell(Cell::new(c)),
            None => Cell::new(c),
        }));
    }
    for (i, min) in mins.iter().enumerate() {
        if let Some(c) = t.column_mut(i) {
            // A lower boundary counts the column's padding (1 + 1) too.
            let min = (min + 2).min(u16::MAX as usize) as u16;
            c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(min)));
            if layout.right.contains(&i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
    }
    // comfy-table pads a frameless table to the width: trailing blanks are noise.
    let lines = t.to_string();
    let lines: Vec<&str> = lines.lines().map(str::trim_end).collect();
    lines.join("\n")
}

/// Rows one after another: a heading (the first kept column, an id, else the first), then
/// each other non-empty cell as `name  value`, wrapped ([`wrap`] breaks a too-long path
/// after a separator). A kept value too long for its label's line goes whole on the next.
fn vertical(header: &[&str], rows: &[Vec<String>], width: usize, layout: &Layout) -> String {
    // A header over two lines reads as one: "lost/\nsilent" is "lost/silent".
    let label = |h: &str| h.replace("/\n", "/").replace('\n', " ");
    let lead = layout.keep.iter().copied().min().unwrap_or(0);
    let pad = (0..header.len())
        .filter(|i| *i != lead)
        .map(|i| label(header[i]).len());
    let pad = pad.max().unwrap_or(0);
    let pal = Palette::new(layout.colour);
    let mut out = String::new();
    for (n, r) in rows.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let tone = |i: usize| layout.tone(n, i);
        let head = wrap(&r[lead].replace('\n', " "), width, "", "  ");
        out.push_str(&painted(&head, 0, tone(lead), &pal));
        for (i, (h, cell)) in header.iter().zip(r).enumerate().filter(|x| x.0 != lead) {
            let mut first = format!("  {:<pad$}  ", label(h));
            let rest = " ".repeat(first.len());
            for line in cell.lines().filter(|l| !l.trim().is_empty()) {
                let whole = layout.keep.contains(&i);
                let text = if whole && first.len() + line.chars().count() > width {
                    format!("{}\n    {line}\n", first.trim_end())
                } else {
                    wrap(line, width, &first, &rest)
                };
                out.push_str(&painted(&text, rest.len(), tone(i), &pal));
                first.clone_from(&rest);
            }
        }
    }
    out.trim_end().to_string()
}

/// Each line of `text` with what follows its first `skip` columns (a label) in `tone`.
fn painted(text: &str, skip: usize, tone: Option<Tone>, pal: &Palette) -> String {
    let Some(tone) = tone.filter(|_| pal.enabled) else {
        return text.to_string();
    };
    let mut out = String::new();
    for l in text.lines() {
        let at = l.char_indices().nth(skip).map_or(l.len(), |(i, _)| i);
        out.push_str(&format!("{}{}\n", &l[..at], tone.paint(pal, &l[at..])));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A number and its unit stay on one line however narrow the column: "0.2 s" was
    /// broken into "0.2" and "s" on the next line.
    #[test]
    fn a_number_keeps_its_unit() {
        let rows = vec![vec![
            "idle".to_string(),
            "closed after 0.2 s of silence, 1,024 fds, 30 MB/s".into(),
        ]];
        for width in [24, 28, 32, 40, 80] {
            let t = fit(&["case", "observed"], &rows, width, &Layout::default());
            assert!(!t.contains(GLUE), "{t}");
            for (n, u) in [("0.2", "s"), ("1,024", "fds"), ("30", "MB/s")] {
                let pair = format!("{n} {u}");
                assert!(t.contains(&pair), "{width}: {pair} split:\n{t}");
            }
        }
        assert_eq!(glue_units("a 3 of 4"), "a 3 of 4");
        assert_eq!(glue_units("(5 s)"), format!("(5{GLUE}s)"));
    }

    /// Colour escapes take no columns: a coloured table that fits stays a table (it went
    /// vertical when they were counted), and the status cell is painted.
    #[test]
    fn coloured_cells_do_not_count_towards_the_width() {
        let rows = vec![vec![
            "fail".to_string(),
            "fd-limit".into(),
            "soft 1,024".into(),
        ]];
        let tones = [(0, 0, Tone::Bad)];
        let layout = Layout {
            keep: &[1],
            frame: Frame::Rule,
            tones: &tones,
            colour: true,
            ..Default::default()
        };
        let t = fit(&["status", "check", "observed"], &rows, 40, &layout);
        assert!(t.lines().any(|l| l.contains("fd-limit  soft 1,024")), "{t}");
        assert!(t.contains('\u{1b}'), "{t}");
        assert!(t.lines().all(|l| visible_width(l) <= 40), "{t}");
        assert_eq!(visible_width("\u{1b}[1;31mfail\u{1b}[0m x"), 6);
    }
}
