//! Markdown rendering of a probe report (for a CI step summary): the verdict, one table
//! per URL, then the fix of everything not passing.
use crate::findings::{Finding, Status};
use crate::report::FindingsReport;

fn cell(s: &str) -> String {
    crate::report::plain(&s.replace('\n', " ")).replace('|', "\\|")
}

fn icon(s: Status) -> &'static str {
    match s {
        Status::Pass => "✅ pass",
        Status::Warn => "⚠️ warn",
        Status::Fail => "❌ fail",
        Status::Skip => "⏭️ skip",
        Status::Suppressed => "🔕 suppressed",
    }
}

/// Probe titles end with ": URL" (redacted).
fn split_title(f: &Finding) -> (&str, &str) {
    f.title.rsplit_once(": ").unwrap_or((f.title.as_str(), ""))
}

pub fn render(r: &FindingsReport) -> String {
    let s = &r.summary;
    let mut out = format!(
        "## rtcheck probe\n\n**{} fail, {} warn, {} pass, {} skip{}** in {:.1} s\n",
        s.fail,
        s.warn,
        s.pass,
        s.skip,
        crate::report::audit::suppressed_count(s),
        r.duration_ms / 1000.0
    );
    if r.findings
        .iter()
        .any(|f| f.id == crate::probe::NOTHING_MEASURED)
    {
        out.push_str("\n**No verdict: nothing was measured.**\n");
    }
    if r.target
        .as_deref()
        .is_some_and(|t| t.contains("NOT VERIFIED"))
    {
        out.push_str("\n**TLS certificates were NOT verified (--insecure).**\n");
    }
    let mut urls: Vec<&str> = Vec::new();
    for f in &r.findings {
        let u = split_title(f).1;
        if !urls.contains(&u) {
            urls.push(u);
        }
    }
    for u in urls {
        out.push_str(&format!(
            "\n### `{u}`\n\n| status | check | measured on the path |\n|---|---|---|\n"
        ));
        for f in r.findings.iter().filter(|f| split_title(f).1 == u) {
            let observed = match (&f.status, &f.reason) {
                (Status::Skip | Status::Suppressed, Some(reason)) => reason,
                _ => &f.observed,
            };
            out.push_str(&format!(
                "| {} | `{}` | {} |\n",
                icon(f.status),
                f.id,
                cell(observed)
            ));
        }
    }
    for f in r
        .findings
        .iter()
        .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
    {
        let (title, url) = split_title(f);
        out.push_str(&format!(
            "\n#### {} `{}` ({url}): {title}\n\n- **expected:** {}\n- **rule:** {}\n",
            icon(f.status),
            f.id,
            cell(&f.expected),
            cell(&f.rule)
        ));
        for e in &f.evidence {
            out.push_str(&format!(
                "- **evidence:** `{}` {} ({})\n",
                e.id,
                cell(&e.value),
                cell(&e.source)
            ));
        }
        if !f.fix.summary.is_empty() {
            out.push_str(&format!("- **fix:** {}\n", cell(&f.fix.summary)));
        }
        if !f.fix.persistent.is_empty() {
            out.push_str("\n```\n");
            for c in &f.fix.persistent {
                out.push_str(c);
                out.push('\n');
            }
            out.push_str("```\n");
        }
    }
    out
}
