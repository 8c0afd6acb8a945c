//! text rendering of `rtcheck evidence` and `rtcheck checklist`: tables on a terminal.
use super::{fit_table, wrap};
use crate::catalog::{EvidenceView, ItemView};
use crate::checklist::Checklist;
use crate::report::Palette;

pub fn evidence_list(all: &[EvidenceView], p: &Palette) -> String {
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|e| {
            let values = e.values.iter().map(|v| {
                let d = if v.derived { " (derived)" } else { "" };
                format!("{} {}{d}", v.name, v.display())
            });
            vec![
                e.id.clone(),
                values.collect::<Vec<_>>().join("\n"),
                e.claim.clone(),
                e.source.describe(),
            ]
        })
        .collect();
    let t = fit_table(&["id", "values", "claim", "source"], &rows, p.width, &[0]);
    format!(
        "{t}\n{}\n",
        p.dim(&format!(
            "{} entries. Show one with `rtcheck evidence ID`.",
            all.len()
        ))
    )
}

/// `rtcheck evidence --sources`: what the series is, then one reference per article (its
/// title, its place in its series, what it was measured on), the way a paper lists them.
pub fn sources(all: &[crate::evidence::SourceView], p: &Palette) -> String {
    let w = p.width;
    let mut s = wrap(crate::evidence::SERIES, w, "", "");
    let pad = "     ";
    for x in all {
        s.push('\n');
        s.push_str(&bold_first(
            wrap(&format!("\"{}\"", x.title), w, &format!("{}  ", x.id), pad),
            &x.id,
            p,
        ));
        s.push_str(&wrap(&x.series, w, pad, pad));
        s.push_str(&wrap(&format!("measured: {}", x.measured), w, pad, pad));
        let n = x.entries.len();
        let cited = format!(
            "cited by {n} {} (`rtcheck evidence` lists them)",
            if n == 1 { "entry" } else { "entries" }
        );
        s.push_str(&p.dim(&wrap(&cited, w, pad, pad)));
    }
    s.push('\n');
    s.push_str(&p.dim(&wrap(
        "rtcheck cites them as \"TITLE\", part N; `rtcheck evidence ID` shows one number with its claim, context, conditions and source.",
        w,
        "",
        "",
    )));
    s
}

/// `text` (wrapped, so plain) with its leading `id` in bold again.
fn bold_first(text: String, id: &str, p: &Palette) -> String {
    match text.strip_prefix(id) {
        Some(rest) => format!("{}{rest}", p.bold(id)),
        None => text,
    }
}

/// "50,000 msg/s (derived: 10,000 clients x 5 rounds/s ...)" for a derived value.
fn shown(v: &crate::evidence::Value) -> String {
    match (&v.how, v.derived) {
        (Some(how), true) => format!("{} (derived: {how})", v.display()),
        _ => v.display(),
    }
}

pub fn evidence_one(e: &EvidenceView, p: &Palette) -> String {
    let w = p.width;
    let mut s = bold_first(wrap(&e.claim, w, &format!("{}  ", e.id), "  "), &e.id, p);
    s.push('\n');
    let rows: Vec<Vec<String>> = e
        .values
        .iter()
        .map(|v| vec![v.name.clone(), shown(v)])
        .collect();
    s.push_str(&format!(
        "{}\n",
        fit_table(&["value", "measured"], &rows, w, &[0])
    ));
    let pad = " ".repeat(12);
    s.push_str(&wrap(&e.context, w, "context     ", &pad));
    if !e.conditions.is_empty() {
        s.push_str(&wrap(&e.conditions, w, "conditions  ", &pad));
    }
    s.push_str(&wrap(&e.citation, w, "source      ", &pad));
    if !e.series.is_empty() {
        s.push_str(&p.dim(&wrap(&format!("({})", e.series), w, &pad, &pad)));
    }
    let cited = if e.cited_by.is_empty() {
        "(no checklist item; used by rtcheck's own rules)".to_string()
    } else {
        e.cited_by.join(", ")
    };
    s.push_str(&wrap(&cited, w, "cited by    ", &pad));
    s.push_str(&p.dim(&wrap(
        "Absolute numbers differ per host; the mechanisms and orders of magnitude do not. The five articles: `rtcheck evidence --sources`.",
        w,
        "",
        "",
    )));
    s
}

pub fn checklists(all: &[Checklist], p: &Palette) -> String {
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                c.items.len().to_string(),
                c.groups().join(", "),
                c.title.clone(),
            ]
        })
        .collect();
    let t = fit_table(
        &["checklist", "items", "groups", "title"],
        &rows,
        p.width,
        &[0, 1],
    );
    format!(
        "{t}\n{}",
        p.dim(&wrap(
            "Show one with `rtcheck checklist NAME`, an item with `rtcheck checklist ITEM-ID`.",
            p.width,
            "",
            ""
        ))
    )
}

pub fn checklist(c: &Checklist, p: &Palette) -> String {
    let mut s = bold_first(
        wrap(&c.title, p.width, &format!("{}  ", c.name), "  "),
        &c.name,
        p,
    );
    s.push_str(&wrap(&c.description, p.width, "", ""));
    s.push('\n');
    let rows: Vec<Vec<String>> = c
        .items
        .iter()
        .map(|i| {
            vec![
                i.id.clone(),
                i.group.clone(),
                i.title.clone(),
                i.evidence.join("\n"),
                i.verify.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let header = ["id", "group", "title", "evidence", "verify"];
    s.push_str(&format!(
        "{}\n",
        fit_table(&header, &rows, p.width, &[0, 3, 4])
    ));
    s.push_str(&p.dim(&format!(
        "{} items. Show one with `rtcheck checklist ITEM-ID`.",
        c.items.len()
    )));
    s.push('\n');
    s
}

pub fn item(v: &ItemView, p: &Palette) -> String {
    let w = p.width;
    let mut s = bold_first(wrap(&v.title, w, &format!("{}  ", v.id), "  "), &v.id, p);
    s.push_str(&format!("checklist {} / {}\n\n", v.checklist, v.group));
    let pad = " ".repeat(10);
    s.push_str(&wrap(&v.why, w, "why       ", &pad));
    s.push_str(&wrap(&v.fix, w, "fix       ", &pad));
    if let Some(name) = &v.verify {
        s.push_str(&format!("verify    rtcheck verify {name}\n"));
    }
    s.push('\n');
    let rows: Vec<Vec<String>> = v
        .evidence
        .iter()
        .map(|e| vec![e.id.clone(), e.value.replace("; ", "\n"), e.source.clone()])
        .collect();
    s.push_str(&format!(
        "{}\n",
        fit_table(&["evidence", "measured", "source"], &rows, w, &[0])
    ));
    s
}
