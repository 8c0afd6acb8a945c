//! `rtcheck review` as one [`Doc`]: the verdict first, then what needs action (fail, warn)
//! with the computed consequence, the rule and the fix, the items still to answer, one
//! line per settled item, the notes and what was left out. Written once for text and
//! markdown (html keeps the findings page every findings report shares).
use crate::findings::{Finding, Status};
use crate::report::doc::{status, strong, t, Block, Doc, Item, Span, Tone, Verdict};
use crate::report::ReviewReport;
use crate::review::Source;

pub fn doc(r: &ReviewReport) -> anyhow::Result<Doc> {
    let mut blocks = vec![Block::Note(format!(
        "{} items: {} measured, {} declared, {} unanswered",
        r.items.len(),
        r.count(Source::Measured),
        r.count(Source::Declared),
        r.count(Source::Unanswered)
    ))];
    blocks.extend(r.needs_action().into_iter().map(action));
    blocks.extend(to_answer(r));
    blocks.extend(settled(r));
    blocks.extend(r.notes.iter().map(|n| Block::Para {
        id: None,
        spans: vec![t(format!("note: {n}"))],
    }));
    if !r.left_out.is_empty() {
        let ids: Vec<&str> = r.left_out.iter().map(|l| l.id.as_str()).collect();
        blocks.push(Block::Note(format!(
            "left out for this profile or to `rtcheck audit`: {}",
            ids.join(", ")
        )));
    }
    Ok(Doc {
        title: "rtcheck review".into(),
        verdict: verdict(r),
        blocks,
        json: crate::report::json::render(r)?,
    })
}

fn verdict(r: &ReviewReport) -> Verdict {
    use crate::report::counts::{findings_head, suppressed_count};
    let s = &r.report.summary;
    let mut text = vec![t("rtcheck review: ")];
    text.extend(findings_head(s));
    text.push(t(format!(" n/a{}", suppressed_count(s))));
    Verdict {
        text,
        tone: Tone::worst(r.needs_action().iter().map(|f| f.status)),
    }
}

/// A check to act on: its title, the consequence computed for the answers (a command at
/// its end kept whole), the rule, the fix and the evidence behind it.
fn action(f: &Finding) -> Block {
    let mut lines = vec![vec![t(&f.observed)]];
    if f.expected != "done" {
        lines.push(vec![t(format!("rule: {}", f.expected))]);
    }
    lines.push(vec![t(format!("fix: {}", f.fix.summary))]);
    if let Some(e) = f.evidence.first() {
        lines.push(vec![t(format!("evidence {}: {}", e.id, e.value))]);
    }
    Block::Item(Item {
        id: Some(format!("finding-{}", f.id)),
        tone: Tone::worst([f.status]),
        head: vec![
            status(f.status),
            t(" "),
            strong(&f.id),
            t(": "),
            t(&f.title),
        ],
        lines,
    })
}

/// Unanswered items are questions, not verdicts: listed apart, each with what it asks.
fn to_answer(r: &ReviewReport) -> Vec<Block> {
    let open = r.unanswered_ids();
    let items: Vec<&Finding> = r
        .report
        .findings
        .iter()
        .filter(|f| open.contains(&f.id.as_str()))
        .collect();
    if items.is_empty() {
        return vec![];
    }
    let mut v = vec![Block::Section(format!(
        "{} to answer (unanswered, later or rule changed)",
        items.len()
    ))];
    v.extend(items.into_iter().map(|f| Block::Para {
        id: None,
        spans: vec![strong(&f.id), t(format!(": {}", f.observed))],
    }));
    v
}

/// One line per settled item: its status, id and answer (or why it does not apply).
fn settled(r: &ReviewReport) -> Vec<Block> {
    let items: Vec<&Finding> = r
        .report
        .findings
        .iter()
        .filter(|f| matches!(f.status, Status::Pass | Status::Skip | Status::Suppressed))
        .collect();
    if items.is_empty() {
        return vec![];
    }
    let mut v = vec![Block::Section("Settled".into())];
    v.extend(items.into_iter().map(|f| {
        let tail = match f.status {
            Status::Skip => format!("n/a: {}", f.reason.as_deref().unwrap_or("")),
            // The status word already says suppressed: the baseline's reason follows.
            Status::Suppressed => f.reason.clone().unwrap_or_default(),
            _ => f.observed.clone(),
        };
        let spans: Vec<Span> = vec![status(f.status), t(format!(" {}: {tail}", f.id))];
        Block::Para { id: None, spans }
    }));
    v
}
