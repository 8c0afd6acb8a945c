//! Markdown summary of `rtcheck review`, fit for a PR comment: the verdict, a table of what
//! needs action with its consequence, then the settled items folded away.
use crate::findings::Status;
use crate::report::ReviewReport;
use crate::review::Source;

fn cell(s: &str) -> String {
    crate::report::plain(&s.replace('\n', " ")).replace('|', "\\|")
}

fn icon(s: Status) -> &'static str {
    match s {
        Status::Pass => "✅",
        Status::Warn => "⚠️",
        Status::Fail => "❌",
        Status::Skip => "➖",
        Status::Suppressed => "🔕",
    }
}

pub fn render(r: &ReviewReport) -> String {
    let s = &r.report.summary;
    let mut out = format!(
        "## rtcheck review\n\n**{} fail, {} warn, {} pass, {} n/a{}** ({} measured, {} declared, {} unanswered)\n\n",
        s.fail,
        s.warn,
        s.pass,
        s.skip,
        crate::report::text::audit::suppressed_count(s),
        r.count(Source::Measured),
        r.count(Source::Declared),
        r.count(Source::Unanswered)
    );
    let open = r.unanswered_ids();
    let action = r.needs_action();
    if !action.is_empty() {
        out.push_str("| | item | consequence | fix |\n|---|---|---|---|\n");
        for f in action {
            out.push_str(&format!(
                "| {} | `{}` {} | {} | {} |\n",
                icon(f.status),
                f.id,
                cell(&f.title),
                cell(&f.observed),
                cell(&f.fix.summary)
            ));
        }
        out.push('\n');
    }
    if !open.is_empty() {
        out.push_str(&format!(
            "<details><summary>{} to answer (unanswered, later or rule changed)</summary>\n\n",
            open.len()
        ));
        for f in r
            .report
            .findings
            .iter()
            .filter(|f| open.contains(&f.id.as_str()))
        {
            out.push_str(&format!(
                "- `{}` {}: {}\n",
                f.id,
                cell(&f.title),
                cell(&f.observed)
            ));
        }
        out.push_str("\n</details>\n\n");
    }
    let settled: Vec<_> = r
        .report
        .findings
        .iter()
        .filter(|f| matches!(f.status, Status::Pass | Status::Skip | Status::Suppressed))
        .collect();
    if !settled.is_empty() {
        out.push_str(&format!(
            "<details><summary>{} settled items</summary>\n\n| | item | answer |\n|---|---|---|\n",
            settled.len()
        ));
        for f in settled {
            let what = match f.status {
                Status::Skip => format!("n/a: {}", f.reason.as_deref().unwrap_or("")),
                Status::Suppressed => {
                    format!("suppressed: {}", f.reason.as_deref().unwrap_or(""))
                }
                _ => f.observed.clone(),
            };
            out.push_str(&format!(
                "| {} | `{}` | {} |\n",
                icon(f.status),
                f.id,
                cell(&what)
            ));
        }
        out.push_str("\n</details>\n");
    }
    for note in &r.notes {
        out.push_str(&format!("\n> {}\n", cell(note)));
    }
    out
}
