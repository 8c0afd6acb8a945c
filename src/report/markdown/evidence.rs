//! markdown rendering of `rtcheck evidence` and `rtcheck checklist`.
use crate::catalog::{EvidenceView, ItemView};
use crate::checklist::Checklist;

/// Escape a table cell: pipes and newlines would break the row.
pub fn cell(s: &str) -> String {
    crate::report::plain(&s.replace('\n', "<br>")).replace('|', "\\|")
}

pub fn evidence_list(all: &[EvidenceView]) -> String {
    let mut s = String::from("| id | values | claim | source |\n|---|---|---|---|\n");
    for e in all {
        let values = e
            .values
            .iter()
            .map(|v| format!("{} {}", v.name, v.display()))
            .collect::<Vec<_>>()
            .join("<br>");
        s.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            e.id,
            cell(&values),
            cell(&e.claim),
            cell(&e.source.describe())
        ));
    }
    s
}

/// `rtcheck evidence --sources`: what the series is, then one reference per article.
pub fn sources(all: &[crate::evidence::SourceView]) -> String {
    let mut s = format!("{}\n\n", crate::evidence::SERIES);
    for x in all {
        s.push_str(&format!(
            "- **{}** \"{}\": {}; measured: {} (cited by {} entries)\n",
            x.id,
            crate::report::plain(&x.title),
            crate::report::plain(&x.series),
            crate::report::plain(&x.measured),
            x.entries.len()
        ));
    }
    s
}

pub fn evidence_one(e: &EvidenceView) -> String {
    let mut s = format!(
        "### `{}`\n\n{}\n\n| value | measured |\n|---|---|\n",
        e.id, e.claim
    );
    for v in &e.values {
        let shown = match (&v.how, v.derived) {
            (Some(how), true) => format!("{} (derived: {how})", v.display()),
            _ => v.display(),
        };
        s.push_str(&format!("| {} | {} |\n", cell(&v.name), cell(&shown)));
    }
    s.push_str(&format!(
        "\n- context: {}\n- conditions: {}\n- source: {} ({})\n",
        e.context, e.conditions, e.citation, e.series
    ));
    if !e.cited_by.is_empty() {
        s.push_str(&format!("- cited by: {}\n", e.cited_by.join(", ")));
    }
    s
}

pub fn checklist(c: &Checklist) -> String {
    let mut s = format!("## {} (`{}`)\n\n{}\n", c.title, c.name, c.description);
    for g in c.groups() {
        s.push_str(&format!(
            "\n### {g}\n\n| id | item | why | fix | evidence |\n|---|---|---|---|---|\n"
        ));
        for i in c.items.iter().filter(|i| i.group == g) {
            let mut ev = i
                .evidence
                .iter()
                .map(|e| format!("`{e}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if let Some(v) = &i.verify {
                ev.push_str(&format!("<br>verify: `{v}`"));
            }
            s.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                i.id,
                cell(&i.title),
                cell(&i.why),
                cell(&i.fix),
                ev
            ));
        }
    }
    s
}

pub fn item(v: &ItemView) -> String {
    let mut s = format!(
        "### {} (`{}`)\n\n- checklist: {} / {}\n- why: {}\n- fix: {}\n",
        v.title, v.id, v.checklist, v.group, v.why, v.fix
    );
    if let Some(name) = &v.verify {
        s.push_str(&format!("- verify: `rtcheck verify {name}`\n"));
    }
    s.push_str("\n| evidence | measured | source |\n|---|---|---|\n");
    for e in &v.evidence {
        s.push_str(&format!(
            "| `{}` | {} | {} |\n",
            e.id,
            cell(&e.value),
            cell(&e.source)
        ));
    }
    s
}
