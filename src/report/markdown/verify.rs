//! markdown rendering of verify results: a summary table, then the details per measurement.
use crate::report::VerifyReport;

pub fn cell(s: &str) -> String {
    crate::report::plain(&s.replace('\n', " ")).replace('|', "\\|")
}

pub fn render(r: &VerifyReport) -> String {
    let mut s = String::from("## rtcheck verify (loopback)\n\n");
    s.push_str("| experiment | measured | reference | verdict | valid | audit check |\n");
    s.push_str("|---|---|---|---|---|---|\n");
    for v in &r.verifications {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            cell(&v.name),
            cell(&crate::report::text::verify::measured(v)),
            cell(&v.reference),
            cell(&v.verdict),
            if v.valid { "yes" } else { "**no**" },
            crate::verify::finding_for(&v.name).unwrap_or("-")
        ));
    }
    for v in &r.verifications {
        if v.details.is_empty() {
            continue;
        }
        s.push_str(&format!("\n### {}\n\n", v.name));
        for d in &v.details {
            s.push_str(&format!("- {}\n", cell(d)));
        }
    }
    s.push_str(&format!(
        "\n{} measurement(s): {} valid, {} invalid, in {:.1} s.\n",
        r.summary.total,
        r.summary.valid,
        r.summary.invalid,
        r.duration_ms as f64 / 1000.0
    ));
    s
}
