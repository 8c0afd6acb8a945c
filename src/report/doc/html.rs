//! The html backend of a [`Doc`]: the page shell of `report::html` (verdict first, inline
//! CSS and SVG, the report's JSON carried inert), numbers tagged with their JSON path,
//! findings as the cards every page uses, plots drawn with plotters.
use super::{Block, Colour, Doc, Item, Plot, Span, Table, Tone};
use crate::report::html::plot::{self, Series};
use crate::report::html::{esc, findings::finding, num, page, status};

pub fn render(doc: &Doc) -> String {
    let mut b = String::new();
    let mut cards = 0;
    for block in &doc.blocks {
        match block {
            Block::Section(name) => b.push_str(&format!("<h2>{}</h2>\n", esc(name))),
            Block::Para { id, spans } => {
                let id = id.as_ref().map(|i| format!(" id=\"{}\"", esc(i)));
                b.push_str(&format!(
                    "<p{}>{}</p>\n",
                    id.unwrap_or_default(),
                    inline(spans)
                ))
            }
            Block::Note(text) => b.push_str(&format!("<p class=\"dim\">{}</p>\n", esc(text))),
            Block::Table(t) => b.push_str(&table(t)),
            Block::Invalid { id, why } => b.push_str(&format!(
                "<div class=\"invalid\" id=\"{}\"><b>invalid</b>: {}</div>\n",
                esc(id),
                esc(why)
            )),
            Block::Findings(fs) => {
                if !fs.is_empty() {
                    b.push_str("<h2>Findings</h2>\n");
                }
                for f in fs {
                    b.push_str(&finding(cards, f));
                    cards += 1;
                }
            }
            Block::Plot(p) => b.push_str(&format!("<div class=\"plots\">{}</div>\n", bars(p))),
            Block::Item(i) => b.push_str(&item(i)),
            Block::Setting { label, text } => {
                let label = match label.is_empty() {
                    true => String::new(),
                    false => format!("{}: ", esc(label)),
                };
                b.push_str(&format!(
                    "<p class=\"setting\">{label}<code>{}</code></p>\n",
                    esc(text)
                ))
            }
        }
    }
    let class = match doc.verdict.tone {
        Tone::Bad => "bad",
        Tone::Warn => "warn",
        Tone::Good | Tone::Plain => "",
    };
    let verdict = super::plain(&doc.verdict.text);
    page(&doc.title, &verdict, class, &b, &doc.json)
}

/// An item as a card: the head as its heading, each line a paragraph.
fn item(i: &Item) -> String {
    let id = i.id.as_ref().map(|i| format!(" id=\"{}\"", esc(i)));
    let lines: String = i
        .lines
        .iter()
        .map(|l| format!("<p>{}</p>", inline(l)))
        .collect();
    format!(
        "<div class=\"card {}\"{}><h3>{}</h3>{lines}</div>\n",
        tone_class(i.tone),
        id.unwrap_or_default(),
        inline(&i.head)
    )
}

fn tone_class(t: Tone) -> &'static str {
    match t {
        Tone::Bad => "fail",
        Tone::Warn => "warn",
        Tone::Good => "pass",
        Tone::Plain => "plain",
    }
}

fn inline(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|s| match s {
            Span::Text(x) => esc(x),
            Span::Strong(x) => format!("<b>{}</b>", esc(x)),
            Span::Num { shown, path } => num(path, shown),
            Span::Status(st) => status(*st),
        })
        .collect()
}

fn table(t: &Table) -> String {
    let mut s = format!("<table id=\"{}\"><tr>", esc(&t.id));
    for c in &t.columns {
        s.push_str(&format!("<th>{}</th>", esc(&c.header())));
    }
    s.push_str("</tr>\n");
    for r in &t.rows {
        match &r.key {
            Some(k) => s.push_str(&format!("<tr data-row=\"{}\">", esc(k))),
            None => s.push_str("<tr>"),
        }
        for (c, v) in t.columns.iter().zip(&r.cells) {
            let class = if c.unit.is_some() { " class=\"n\"" } else { "" };
            s.push_str(&format!(
                "<td{class}>{}</td>",
                inline(std::slice::from_ref(v))
            ));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

fn bars(p: &Plot) -> String {
    let colour = |c: Colour| match c {
        Colour::Blue => plot::BLUE_,
        Colour::Green => plot::GREEN_,
        Colour::Grey => plot::GREY_,
        Colour::Red => plot::RED_,
    };
    let series: Vec<Series> = p
        .series
        .iter()
        .map(|s| Series {
            name: &s.name,
            color: colour(s.colour),
            points: s
                .values
                .iter()
                .enumerate()
                .map(|(i, &y)| Some((i as f64, y)))
                .collect(),
        })
        .collect();
    let categories: Vec<&str> = p.categories.iter().map(String::as_str).collect();
    plot::bars(
        &p.id,
        &p.caption,
        (&p.axes.0, &p.axes.1),
        plot::Y::Ms,
        &categories,
        &series,
    )
}
