//! The html backend of a [`Doc`]: the page shell of `report::html` (verdict first, inline
//! CSS and SVG, the report's JSON carried inert), numbers tagged with their JSON path,
//! findings as the cards every page uses, plots drawn with plotters.
use super::{Block, Colour, Doc, Figure, Item, Plot, Scale, Shape, Span, Table, Tone};
use crate::report::html::plot;
use crate::report::html::{card::card, card::finding, checks, esc, notes, num, page, status};

pub fn render(doc: &Doc) -> String {
    let mut b = String::new();
    let mut cards = 0;
    // A part is open until the next one or the end of the page.
    let mut part = false;
    for block in &doc.blocks {
        match block {
            Block::Section(name) => b.push_str(&format!("<h2>{}</h2>\n", esc(name))),
            Block::Part { key, title } => {
                if part {
                    b.push_str("</section>\n");
                }
                part = true;
                b.push_str(&format!(
                    "<section class=\"part\" data-part=\"{}\"><h2>{}</h2>\n",
                    esc(key),
                    esc(title)
                ));
            }
            Block::Anchored(cs) => {
                for c in cs {
                    b.push_str(&card(c.index, &c.finding, &c.anchor));
                }
            }
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
            Block::Wide(t) => b.push_str(&format!("<div class=\"wide\">{}</div>\n", table(t))),
            Block::Invalid { id, why } => b.push_str(&format!(
                "<div class=\"invalid\" id=\"{}\"><b>invalid</b>: {}</div>\n",
                esc(id),
                esc(why)
            )),
            Block::Findings(fs) | Block::Cards(fs) => {
                if !fs.is_empty() {
                    b.push_str("<h2>Findings</h2>\n");
                }
                for f in fs {
                    b.push_str(&finding(cards, f));
                    cards += 1;
                }
            }
            Block::Plot(p) => b.push_str(&figure(&bars(p))),
            Block::Figure(f) => b.push_str(&figure(f)),
            Block::List(items) => {
                let items: Vec<String> = items.iter().map(|i| super::plain(i)).collect();
                b.push_str(&notes(&items));
                b.push('\n');
            }
            Block::Checks(cs) => b.push_str(&checks(cs)),
            Block::Item(i) => b.push_str(&item(i)),
            Block::Pre(text) => {
                // Line by line: `esc` makes a newline inert as it does any control.
                let lines: Vec<String> = text.lines().map(esc).collect();
                b.push_str(&format!("<pre>{}</pre>\n", lines.join("\n")))
            }
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
    if part {
        b.push_str("</section>\n");
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
            Span::Withheld(why) => format!("INVALID: {}", esc(why)),
            Span::Status(st) => status(*st),
            Span::Code(x) => format!("<code>{}</code>", esc(x)),
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
        // A withheld part spans the rest of its row, and the row reads as invalid.
        let invalid = r.cells.iter().any(|c| matches!(c, Span::Withheld(_)));
        s.push_str(if invalid {
            "<tr class=\"invalid\""
        } else {
            "<tr"
        });
        if let Some(k) = &r.key {
            s.push_str(&format!(" data-row=\"{}\"", esc(k)));
        }
        // A row led by a check's status carries it, as a card does.
        if let Some(Span::Status(st)) = r.cells.first() {
            s.push_str(&format!(" data-status=\"{}\"", st.as_str()));
        }
        s.push('>');
        for (i, (c, v)) in t.columns.iter().zip(&r.cells).enumerate() {
            let class = if c.unit.is_some() { " class=\"n\"" } else { "" };
            let cell = inline(std::slice::from_ref(v));
            match v {
                Span::Withheld(_) => s.push_str(&format!(
                    "<td colspan=\"{}\">{cell}</td>",
                    t.columns.len() - i
                )),
                _ => s.push_str(&format!("<td{class}>{cell}</td>")),
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

/// A bar plot in ms is a figure like any other.
fn bars(p: &Plot) -> Figure {
    Figure {
        id: p.id.clone(),
        caption: p.caption.clone(),
        axes: p.axes.clone(),
        y: Scale::Ms,
        shape: Shape::Bars {
            categories: p.categories.clone(),
        },
        series: p
            .series
            .iter()
            .map(|s| super::Series {
                name: s.name.clone(),
                colour: s.colour,
                points: (s.values.iter().enumerate())
                    .map(|(i, &y)| Some((i as f64, y)))
                    .collect(),
            })
            .collect(),
    }
}

fn figure(f: &Figure) -> String {
    let colour = |c: Colour| match c {
        Colour::Blue => plot::BLUE_,
        Colour::Green => plot::GREEN_,
        Colour::Grey => plot::GREY_,
        Colour::Red => plot::RED_,
    };
    // A percentile is drawn on the "nines" axis (50, 90, 99 ... evenly apart).
    let x = |p: Option<(f64, f64)>| match f.shape {
        Shape::Percentiles => p.map(|(x, y)| (plot::pct_axis(x), y)),
        _ => p,
    };
    let series: Vec<plot::Series> = (f.series.iter())
        .map(|s| plot::Series {
            name: &s.name,
            color: colour(s.colour),
            points: s.points.iter().map(|&p| x(p)).collect(),
        })
        .collect();
    let y = match f.y {
        Scale::Ms => plot::Y::Ms,
        Scale::LogMs => plot::Y::LogMs,
        Scale::Count => plot::Y::Count,
        Scale::Value => plot::Y::Value,
    };
    let axes = (f.axes.0.as_str(), f.axes.1.as_str());
    let svg = match &f.shape {
        Shape::Bars { categories } => {
            let categories: Vec<&str> = categories.iter().map(String::as_str).collect();
            plot::bars(&f.id, &f.caption, axes, y, &categories, &series)
        }
        // Markers only where they stay apart (a long run is a line).
        Shape::Lines => {
            let few = f.series.iter().all(|s| s.points.len() <= 100);
            plot::xy(&f.id, &f.caption, axes, y, &series, few)
        }
        Shape::Percentiles => plot::distribution(&f.id, &f.caption, &series),
        // Its y axis is linear, labelled as ms are.
        Shape::LinesLog2 => plot::xy_log2(&f.id, &f.caption, axes, &series),
    };
    format!("<div class=\"plots\">{svg}</div>\n")
}
