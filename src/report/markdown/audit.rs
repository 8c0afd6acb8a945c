//! Markdown rendering of a findings report (audit, verify), for a CI step summary
//! (`>> $GITHUB_STEP_SUMMARY`).
use crate::report::{FindingsReport, Status};

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn icon(s: Status) -> &'static str {
    match s {
        Status::Pass => "✅ pass",
        Status::Warn => "⚠️ warn",
        Status::Fail => "❌ fail",
        Status::Skip => "⏭️ skip",
    }
}

pub fn render(r: &FindingsReport) -> String {
    let p = &r.profile;
    let s = &r.summary;
    let mut out = format!(
        "## rtcheck {}: {} {} connections, role {}\n\n**{} fail, {} warn, {} pass, {} skip** in {} ms{}\n\n",
        r.kind,
        crate::evidence::fmt_num(p.connections as f64),
        p.transport.map(|t| t.as_str()).unwrap_or("websocket"),
        p.role.as_str(),
        s.fail,
        s.warn,
        s.pass,
        s.skip,
        r.duration_ms,
        r.target.as_deref().map(|t| format!(" ({t})")).unwrap_or_default()
    );
    out.push_str("| status | check | observed | expected |\n|---|---|---|---|\n");
    for f in &r.findings {
        let observed = match (&f.status, &f.reason) {
            (Status::Skip, Some(reason)) => reason.clone(),
            _ => f.observed.clone(),
        };
        out.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            icon(f.status),
            f.id,
            cell(&observed),
            cell(&f.expected)
        ));
    }
    for f in r
        .findings
        .iter()
        .filter(|f| matches!(f.status, Status::Warn | Status::Fail))
    {
        out.push_str(&format!(
            "\n### {} `{}`: {}\n\n",
            icon(f.status),
            f.id,
            f.title
        ));
        out.push_str(&format!(
            "- **observed:** {}\n- **expected:** {}\n- **rule:** {}\n",
            f.observed, f.expected, f.rule
        ));
        for e in &f.evidence {
            out.push_str(&format!(
                "- **evidence** `{}`: {} ({})\n",
                e.id, e.value, e.source
            ));
        }
        out.push_str(&format!("- **fix:** {}\n", f.fix.summary));
        if !f.fix.runtime.is_empty() || !f.fix.persistent.is_empty() {
            out.push_str("\n```sh\n# now\n");
            for c in &f.fix.runtime {
                out.push_str(c);
                out.push('\n');
            }
            out.push_str("# persistent\n");
            for c in &f.fix.persistent {
                out.push_str(c);
                out.push('\n');
            }
            out.push_str("```\n");
        }
        if let Some(v) = &f.verify {
            out.push_str(&format!("\nLive demonstration: `rtcheck verify {v}`\n"));
        }
    }
    out
}
