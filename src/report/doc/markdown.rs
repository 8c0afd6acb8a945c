//! The markdown backend of a [`Doc`]: a title, the verdict in bold, sections as `##`,
//! tables with numbers right-aligned and units in the header, findings as a list.
use super::{plain, Block, Doc, Span, Table};
use crate::findings::Finding;

pub fn render(doc: &Doc) -> String {
    let mut s = format!(
        "# {}\n\n**{}**\n",
        doc.title,
        inert(&plain(&doc.verdict.text))
    );
    for b in &doc.blocks {
        match b {
            Block::Section(name) | Block::Part { title: name, .. } => {
                s.push_str(&format!("\n## {}\n", inert(name)))
            }
            Block::Para { spans, .. } => s.push_str(&format!("\n{}\n", inline(spans))),
            Block::Note(text) => s.push_str(&format!("\n_{}_\n", inert(text).replace('_', "\\_"))),
            Block::Table(t) | Block::Wide(t) => s.push_str(&table(t)),
            Block::Invalid { why, .. } => s.push_str(&format!("\n**Invalid**: {}\n", inert(why))),
            Block::Findings(fs) if !fs.is_empty() => {
                s.push('\n');
                fs.iter().for_each(|f| s.push_str(&finding(f)));
            }
            Block::List(items) => {
                s.push('\n');
                items
                    .iter()
                    .for_each(|i| s.push_str(&format!("- {}\n", inline(i))));
            }
            Block::Checks(cs) => {
                let failed: Vec<String> = cs
                    .iter()
                    .filter(|c| c.status != crate::findings::Status::Pass)
                    .map(|c| format!("- **{}** {}: {}\n", c.status.as_str(), c.name, c.detail))
                    .collect();
                if !failed.is_empty() {
                    s.push_str(&format!("\n{}", failed.concat()));
                }
            }
            Block::Findings(_)
            | Block::Plot(_)
            | Block::Figure(_)
            | Block::Cards(_)
            | Block::Anchored(_) => {}
            Block::Setting { label, text } => {
                let label = match label.is_empty() {
                    true => String::new(),
                    false => format!("{label}: "),
                };
                s.push_str(&format!("\n{}{}\n", inert(&label), code(&inert(text))));
            }
            // A fence of its own: the output's backquotes cannot close it.
            Block::Pre(text) => {
                let lines: Vec<String> = text.lines().map(inert).collect();
                let body = lines.join("\n").replace("```", "'''");
                s.push_str(&format!("\n```\n{body}\n```\n"));
            }
            Block::Item(i) => {
                s.push_str(&format!("\n- {}\n", inline(&i.head)));
                i.lines
                    .iter()
                    .for_each(|l| s.push_str(&format!("  - {}\n", inline(l))));
            }
        }
    }
    s
}

/// Spans as one markdown line; text from outside made inert (a newline or escape in a
/// reason cannot start a line of its own).
fn inline(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|s| match s {
            Span::Strong(x) => format!("**{}**", inert(x)),
            Span::Withheld(why) => format!("**INVALID**: {}", inert(why)),
            Span::Status(st) => format!("**{}**", st.as_str()),
            Span::Code(x) => code(&inert(x)),
            other => inert(&plain(std::slice::from_ref(other))),
        })
        .collect()
}

fn inert(s: &str) -> String {
    crate::report::plain(s).into_owned()
}

/// Inline code that holds any backquote: a longer fence around it.
fn code(s: &str) -> String {
    match s.contains('`') {
        true => format!("`` {s} ``"),
        false => format!("`{s}`"),
    }
}

/// A cell never breaks the table: pipes escaped, lines joined.
fn cell(s: &str) -> String {
    inert(&s.replace('\n', " ")).replace('|', "\\|")
}

fn table(t: &Table) -> String {
    let head: Vec<String> = t.columns.iter().map(|c| cell(&c.header())).collect();
    let align: Vec<&str> = t
        .columns
        .iter()
        .map(|c| if c.unit.is_some() { "---:" } else { "---" })
        .collect();
    let mut s = format!("\n| {} |\n|{}|\n", head.join(" | "), align.join("|"));
    for r in &t.rows {
        let mut cells: Vec<String> = r
            .cells
            .iter()
            .map(|c| match c {
                // A status column is read down, not picked out: plain, as every other cell.
                Span::Status(st) => st.as_str().to_string(),
                c => cell(&inline(std::slice::from_ref(c))),
            })
            .collect();
        cells.resize(t.columns.len(), String::new());
        s.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    s
}

fn finding(f: &Finding) -> String {
    format!(
        "- **{}** `{}`: {}\n",
        f.status.as_str(),
        f.id,
        cell(&f.observed)
    )
}
