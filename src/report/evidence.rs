//! `rtcheck evidence` and `rtcheck checklist` as [`Doc`]s: the evidence list, the sources,
//! one entry in full, the checklists, one checklist and one item. Written once for text
//! and markdown.
use crate::catalog::{EvidenceView, ItemView};
use crate::checklist::Checklist;
use crate::report::doc::{strong, t, Block, Column, Doc, Item, Row, Span, Table, Tone, Verdict};

fn plain_verdict(text: Vec<Span>) -> Verdict {
    Verdict {
        text,
        tone: Tone::Plain,
    }
}

fn para(spans: Vec<Span>) -> Block {
    Block::Para { id: None, spans }
}

fn line(s: impl Into<String>) -> Block {
    para(vec![t(s)])
}

/// A table of text cells; the first column is the row's key (an id, kept whole).
fn table(id: &str, header: &[&str], rows: Vec<Vec<String>>) -> Block {
    Block::Table(Table {
        id: id.into(),
        columns: header.iter().map(|h| Column::text(h)).collect(),
        rows: rows
            .into_iter()
            .map(|cells| Row {
                key: cells.first().cloned(),
                cells: cells.into_iter().map(t).collect(),
            })
            .collect(),
    })
}

pub fn list_doc(all: &[EvidenceView]) -> anyhow::Result<Doc> {
    let rows = all
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
    Ok(Doc {
        title: "rtcheck evidence".into(),
        verdict: plain_verdict(vec![t(format!(
            "{} entries. Show one with `rtcheck evidence ID`.",
            all.len()
        ))]),
        blocks: vec![table(
            "evidence",
            &["id", "values", "claim", "source"],
            rows,
        )],
        json: crate::report::json::render(&all)?,
    })
}

/// `--sources`: what the series is, then one reference per article (its title, its place
/// in its series, what it was measured on), the way a paper lists them.
pub fn sources_doc(all: &[crate::evidence::SourceView]) -> anyhow::Result<Doc> {
    let mut blocks: Vec<Block> = all
        .iter()
        .map(|x| {
            let n = x.entries.len();
            Block::Item(Item {
                id: Some(format!("source-{}", x.id)),
                tone: Tone::Plain,
                head: vec![strong(&x.id), t(format!("  \"{}\"", x.title))],
                lines: vec![
                    vec![t(&x.series)],
                    vec![t(format!("measured: {}", x.measured))],
                    vec![t(format!(
                        "cited by {n} {} (`rtcheck evidence` lists them)",
                        if n == 1 { "entry" } else { "entries" }
                    ))],
                ],
            })
        })
        .collect();
    blocks.push(Block::Note(
        "rtcheck cites them as \"TITLE\", part N; `rtcheck evidence ID` shows one number with its claim, context, conditions and source.".into(),
    ));
    Ok(Doc {
        title: "rtcheck evidence --sources".into(),
        verdict: plain_verdict(vec![t(crate::evidence::SERIES)]),
        blocks,
        json: crate::report::json::render(&all)?,
    })
}

/// "50,000 msg/s (derived: 10,000 clients x 5 rounds/s ...)" for a derived value.
fn shown(v: &crate::evidence::Value) -> String {
    match (&v.how, v.derived) {
        (Some(how), true) => format!("{} (derived: {how})", v.display()),
        _ => v.display(),
    }
}

/// One entry: its claim, the values measured, context, conditions, source, who cites it.
pub fn one_doc(e: &EvidenceView) -> anyhow::Result<Doc> {
    let rows = e
        .values
        .iter()
        .map(|v| vec![v.name.clone(), shown(v)])
        .collect();
    let mut blocks = vec![
        table("values", &["value", "measured"], rows),
        line(format!("context: {}", e.context)),
    ];
    if !e.conditions.is_empty() {
        blocks.push(line(format!("conditions: {}", e.conditions)));
    }
    let series = match e.series.is_empty() {
        true => String::new(),
        false => format!(" ({})", e.series),
    };
    blocks.push(line(format!("source: {}{series}", e.citation)));
    blocks.push(line(match e.cited_by.is_empty() {
        true => "cited by: no checklist item; used by rtcheck's own rules".to_string(),
        false => format!("cited by: {}", e.cited_by.join(", ")),
    }));
    blocks.push(Block::Note(
        "Absolute numbers differ per host; the mechanisms and orders of magnitude do not. The five articles: `rtcheck evidence --sources`.".into(),
    ));
    Ok(Doc {
        title: format!("rtcheck evidence {}", e.id),
        verdict: plain_verdict(vec![strong(&e.id), t(format!(": {}", e.claim))]),
        blocks,
        json: crate::report::json::render(e)?,
    })
}

pub fn checklists_doc(all: &[Checklist]) -> anyhow::Result<Doc> {
    let rows = all
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
    Ok(Doc {
        title: "rtcheck checklist".into(),
        verdict: plain_verdict(vec![t(format!(
            "{} checklists. Show one with `rtcheck checklist NAME`, an item with `rtcheck checklist ITEM-ID`.",
            all.len()
        ))]),
        blocks: vec![table(
            "checklists",
            &["checklist", "items", "groups", "title"],
            rows,
        )],
        json: crate::report::json::render(&all)?,
    })
}

/// One checklist: per group, each item with its title, why, fix, evidence and verify.
pub fn checklist_doc(c: &Checklist) -> anyhow::Result<Doc> {
    let mut blocks = vec![line(&c.description)];
    for g in c.groups() {
        blocks.push(Block::Section(g.to_string()));
        for i in c.items.iter().filter(|i| i.group == g) {
            let mut lines = vec![
                vec![t(format!("why: {}", i.why))],
                vec![t(format!("fix: {}", i.fix))],
                vec![t(format!("evidence: {}", i.evidence.join(", ")))],
            ];
            if let Some(v) = &i.verify {
                lines.push(vec![t(format!("verify: `rtcheck verify {v}`"))]);
            }
            blocks.push(Block::Item(Item {
                id: Some(format!("item-{}", i.id)),
                tone: Tone::Plain,
                head: vec![strong(&i.id), t(format!(": {}", i.title))],
                lines,
            }));
        }
    }
    blocks.push(Block::Note(format!(
        "{} items. Show one with `rtcheck checklist ITEM-ID`.",
        c.items.len()
    )));
    Ok(Doc {
        title: format!("rtcheck checklist {}", c.name),
        verdict: plain_verdict(vec![strong(&c.name), t(format!(": {}", c.title))]),
        blocks,
        json: crate::report::json::render(c)?,
    })
}

/// One item: where it sits, why, the fix, how to verify it, the evidence behind it.
pub fn item_doc(v: &ItemView) -> anyhow::Result<Doc> {
    let mut blocks = vec![
        line(format!("checklist {} / {}", v.checklist, v.group)),
        line(format!("why: {}", v.why)),
        line(format!("fix: {}", v.fix)),
    ];
    if let Some(name) = &v.verify {
        blocks.push(line(format!("verify: `rtcheck verify {name}`")));
    }
    let rows = v
        .evidence
        .iter()
        .map(|e| vec![e.id.clone(), e.value.replace("; ", "\n"), e.source.clone()])
        .collect();
    blocks.push(table("evidence", &["evidence", "measured", "source"], rows));
    Ok(Doc {
        title: format!("rtcheck checklist {}", v.id),
        verdict: plain_verdict(vec![strong(&v.id), t(format!(": {}", v.title))]),
        blocks,
        json: crate::report::json::render(v)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc;
    use crate::report::Palette;

    #[test]
    fn every_view_reads_its_ids_and_fits_80_columns() {
        let all: Vec<EvidenceView> = crate::evidence::store()
            .entries
            .iter()
            .map(EvidenceView::of)
            .collect();
        let c = &crate::checklist::all()[0];
        let i = ItemView::of(c, &c.items[0]);
        let docs = [
            list_doc(&all).unwrap(),
            sources_doc(&crate::evidence::sources()).unwrap(),
            one_doc(&all[0]).unwrap(),
            checklists_doc(crate::checklist::all()).unwrap(),
            checklist_doc(c).unwrap(),
            item_doc(&i).unwrap(),
        ];
        for d in &docs {
            let text = doc::text::render(d, &Palette::plain());
            assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        }
        let one = doc::text::render(&docs[2], &Palette::plain());
        assert!(one.starts_with(&format!("{}: ", all[0].id)), "{one}");
        let md = doc::markdown::render(&docs[4]);
        assert!(md.contains(&format!("- **{}**: ", c.items[0].id)), "{md}");
        assert!(md.contains(&format!("fix: {}", c.items[0].fix)), "{md}");
    }
}
