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

/// Wrap `text` at `width` columns with `indent` before every line.
fn wrap(text: &str, indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for w in crate::report::plain(text).split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + w.len() > width {
            out.push_str(&format!("{indent}{line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.is_empty() {
        out.push_str(&format!("{indent}{line}\n"));
    }
    out
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
        out.push_str(&wrap(&f.observed, "  ", 78));
        if f.expected != "done" {
            out.push_str(&wrap(&format!("rule: {}", f.expected), "  ", 78));
        }
        out.push_str(&wrap(&format!("fix: {}", f.fix.summary), "  ", 78));
        if let Some(e) = f.evidence.first() {
            out.push_str(&pal.dim(&wrap(&format!("evidence {}: {}", e.id, e.value), "  ", 78)));
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
        out.push_str(&wrap(&format!("note: {n}"), "", 78));
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
            78,
        )));
    }
    out
}
