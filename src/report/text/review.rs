//! Text rendering of `rtcheck review`: the verdict first, then what needs action (fail,
//! warn) with the computed consequence and the fix, then one line per settled item.
use crate::findings::Status;
use crate::report::Palette;
use crate::report::ReviewReport;
use crate::review::Source;

fn counts(r: &ReviewReport) -> String {
    format!(
        "{} measured, {} declared, {} unanswered",
        r.count(Source::Measured),
        r.count(Source::Declared),
        r.count(Source::Unanswered)
    )
}

/// `text` wrapped with `indent` before every line, two columns short of the width (the
/// shared policy: `report::text::wrap`).
fn wrap(text: &str, indent: &str, pal: &Palette) -> String {
    super::wrap(text, pal.width.saturating_sub(2), indent, indent)
}

pub fn render(r: &ReviewReport, pal: Palette) -> String {
    let s = &r.report.summary;
    let mut out = pal.bold(&format!(
        "rtcheck review: {} fail, {} warn, {} pass, {} n/a{}",
        s.fail,
        s.warn,
        s.pass,
        s.skip,
        super::audit::suppressed_count(s)
    ));
    out.push('\n');
    out.push_str(&pal.dim(&format!("{} items: {}", r.items.len(), counts(r))));
    out.push('\n');
    let open = r.unanswered_ids();
    let action = r.needs_action();
    for f in action {
        out.push('\n');
        // Wrapped, never clipped: the title and the ids in it are read whole.
        let head = format!("{} {}: ", pal.status(f.status), pal.bold(&f.id));
        out.push_str(&super::wrap(&f.title, pal.width, &head, "    "));
        // A consequence ending in a command prints it on lines of its own.
        out.push_str(&super::wrap_note(
            &f.observed,
            pal.width.saturating_sub(2),
            "  ",
            "  ",
        ));
        if f.expected != "done" {
            out.push_str(&wrap(&format!("rule: {}", f.expected), "  ", &pal));
        }
        out.push_str(&wrap(&format!("fix: {}", f.fix.summary), "  ", &pal));
        if let Some(e) = f.evidence.first() {
            out.push_str(&pal.dim(&wrap(
                &format!("evidence {}: {}", e.id, e.value),
                "  ",
                &pal,
            )));
        }
    }
    let to_answer: Vec<_> = r
        .report
        .findings
        .iter()
        .filter(|f| open.contains(&f.id.as_str()))
        .collect();
    if !to_answer.is_empty() {
        out.push('\n');
        out.push_str(&pal.warn(&format!(
            "{} to answer (unanswered, later or rule changed):",
            to_answer.len()
        )));
        out.push('\n');
        for f in to_answer {
            let head = format!("  {}: ", f.id);
            out.push_str(&super::wrap(&f.observed, pal.width, &head, "      "));
        }
    }
    let settled: Vec<_> = r
        .report
        .findings
        .iter()
        .filter(|f| matches!(f.status, Status::Pass | Status::Skip | Status::Suppressed))
        .collect();
    if !settled.is_empty() {
        out.push('\n');
        for f in settled {
            let tail = match f.status {
                Status::Skip => format!("n/a: {}", f.reason.as_deref().unwrap_or("")),
                Status::Suppressed => f.reason.clone().unwrap_or_default(),
                _ => f.observed.clone(),
            };
            let head = format!("{} {}: ", f.status.as_str(), f.id);
            let line = super::wrap(&tail, pal.width, &head, "    ");
            out.push_str(&line.replacen(f.status.as_str(), &pal.status(f.status), 1));
        }
    }
    for n in &r.notes {
        out.push('\n');
        out.push_str(&wrap(&format!("note: {n}"), "", &pal));
    }
    if !r.left_out.is_empty() {
        out.push('\n');
        let ids: Vec<&str> = r.left_out.iter().map(|l| l.id.as_str()).collect();
        out.push_str(&pal.dim(&wrap(
            &format!(
                "left out for this profile or to `rtcheck audit`: {}",
                ids.join(", ")
            ),
            "",
            &pal,
        )));
    }
    out
}
