//! text rendering of `rtcheck evidence` and `rtcheck checklist`: tables on a terminal.
use crate::catalog::{EvidenceView, ItemView};
use crate::checklist::Checklist;
use crate::report::Palette;
use comfy_table::{presets, ContentArrangement, Table};

/// Width for tables that do not go to a terminal: $COLUMNS, else 120.
fn pipe_width() -> u16 {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok())
        .filter(|w| *w >= 40)
        .unwrap_or(120)
}

/// A table that wraps to the terminal width, or to a fixed width when piped or written
/// to a file (otherwise long claims make lines hundreds of columns wide).
pub fn table(header: &[&str]) -> Table {
    use std::io::IsTerminal;
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().map(|h| h.to_string()));
    if !std::io::stdout().is_terminal() {
        t.set_width(pipe_width());
    }
    t
}

pub fn evidence_list(all: &[EvidenceView], p: &Palette) -> String {
    let mut t = table(&["id", "values", "claim", "source"]);
    for e in all {
        t.add_row(vec![
            e.id.clone(),
            e.values
                .iter()
                .map(|v| {
                    let d = if v.derived { " (derived)" } else { "" };
                    format!("{} {}{d}", v.name, v.display())
                })
                .collect::<Vec<_>>()
                .join("\n"),
            e.claim.clone(),
            e.source.describe(),
        ]);
    }
    format!(
        "{t}\n{}\n",
        p.dim(&format!(
            "{} entries. Show one with `rtcheck evidence ID`.",
            all.len()
        ))
    )
}

/// `rtcheck evidence --sources`: one row per article.
pub fn sources(all: &[crate::evidence::SourceView], p: &Palette) -> String {
    let mut t = table(&["seed", "title", "file", "parts cited"]);
    for s in all {
        t.add_row(vec![
            s.id.clone(),
            format!("{}\n{}", s.title, s.series),
            s.file.clone(),
            s.parts_cited.join(", "),
        ]);
    }
    format!(
        "{t}\n{}\n",
        p.dim("The articles are Vietnamese; findings cite them as \"TITLE (seed ID), part N\".")
    )
}

/// "50,000 msg/s (derived: 10,000 clients x 5 rounds/s ...)" for a derived value.
fn shown(v: &crate::evidence::Value) -> String {
    match (&v.how, v.derived) {
        (Some(how), true) => format!("{} (derived: {how})", v.display()),
        _ => v.display(),
    }
}

pub fn evidence_one(e: &EvidenceView, p: &Palette) -> String {
    let mut s = format!("{}  {}\n\n", p.bold(&e.id), e.claim);
    let mut t = table(&["value", "measured"]);
    for v in &e.values {
        t.add_row(vec![v.name.clone(), shown(v)]);
    }
    s.push_str(&format!("{t}\n"));
    s.push_str(&format!("context   {}\n", e.context));
    s.push_str(&format!("source    {}\n", e.source.describe()));
    let cited = if e.cited_by.is_empty() {
        "(no checklist item; used by rtcheck's own rules)".to_string()
    } else {
        e.cited_by.join(", ")
    };
    s.push_str(&format!("cited by  {cited}\n"));
    s
}

pub fn checklists(all: &[Checklist], p: &Palette) -> String {
    let mut t = table(&["checklist", "items", "groups", "title"]);
    for c in all {
        t.add_row(vec![
            c.name.clone(),
            c.items.len().to_string(),
            c.groups().join(", "),
            c.title.clone(),
        ]);
    }
    format!(
        "{t}\n{}\n",
        p.dim("Show one with `rtcheck checklist NAME`, an item with `rtcheck checklist ITEM-ID`.")
    )
}

pub fn checklist(c: &Checklist, p: &Palette) -> String {
    let mut s = format!("{}  {}\n{}\n\n", p.bold(&c.name), c.title, c.description);
    let mut t = table(&["group", "id", "title", "evidence", "verify"]);
    for i in &c.items {
        t.add_row(vec![
            i.group.clone(),
            i.id.clone(),
            i.title.clone(),
            i.evidence.join("\n"),
            i.verify.clone().unwrap_or_default(),
        ]);
    }
    s.push_str(&format!("{t}\n"));
    s.push_str(&p.dim(&format!(
        "{} items. Show one with `rtcheck checklist ITEM-ID`.",
        c.items.len()
    )));
    s.push('\n');
    s
}

pub fn item(v: &ItemView, p: &Palette) -> String {
    let mut s = format!("{}  {}\n", p.bold(&v.id), v.title);
    s.push_str(&format!("checklist {} / {}\n\n", v.checklist, v.group));
    s.push_str(&format!("why       {}\n", v.why));
    s.push_str(&format!("fix       {}\n", v.fix));
    if let Some(name) = &v.verify {
        s.push_str(&format!("verify    rtcheck verify {name}\n"));
    }
    s.push('\n');
    let mut t = table(&["evidence", "measured", "source"]);
    for e in &v.evidence {
        t.add_row(vec![
            e.id.clone(),
            e.value.replace("; ", "\n"),
            e.source.clone(),
        ]);
    }
    s.push_str(&format!("{t}\n"));
    s
}
