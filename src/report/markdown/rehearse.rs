//! markdown rendering of `rtcheck rehearse` (PR comments, BENCHMARKS.md): the verdict,
//! the runs side by side, the findings.
use crate::findings::Finding;
use crate::rehearse::model::RehearseReport;
use crate::report::text::rehearse::{figures, verdict};

fn cell(s: &str) -> String {
    crate::report::plain(s).replace('|', "\\|")
}

pub fn render(r: &RehearseReport, thresholds: &[Finding]) -> String {
    let (v, _) = verdict(r, thresholds);
    let mut out = format!(
        "### rtcheck rehearse: {}\n\n{} {} client(s) on `{}`.\n\n| figure |",
        cell(&v),
        r.connections,
        r.transport,
        cell(&r.url)
    );
    for run in &r.runs {
        out.push_str(&format!(" {} |", cell(&run.name)));
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(r.runs.len()));
    out.push('\n');
    for (label, vals) in figures(&r.runs) {
        out.push_str(&format!("| {label} |"));
        for v in vals {
            out.push_str(&format!(" {} |", cell(&v)));
        }
        out.push('\n');
    }
    out.push_str("\n| status | id | observed | fix |\n|---|---|---|---|\n");
    for f in r.findings.iter().chain(thresholds) {
        out.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            f.status.as_str(),
            cell(&f.id),
            cell(&f.observed),
            cell(if f.status == crate::findings::Status::Pass {
                ""
            } else {
                &f.fix.summary
            })
        ));
    }
    for run in r.runs.iter().filter(|x| !x.hook.ok) {
        out.push_str(&format!(
            "\nThe restart command `{}` failed:\n\n```\n{}\n```\n",
            cell(&run.hook.command),
            crate::report::plain(&run.hook.output).replace("```", "'''")
        ));
    }
    out
}
