//! The gate findings of a run whose own report has no findings table (bench fanout, bench
//! cluster, verify delivery's text): each `--threshold` and each baseline problem or
//! suppressed finding gets its own line in every human format, so a crossed threshold is
//! never only an exit code.
use crate::findings::{Finding, Status};
use crate::report::{plain, Palette};

/// The line of one gate finding: status, what it is, what was seen (or why accepted).
fn line(f: &Finding) -> String {
    let what = if f.status == Status::Suppressed {
        f.reason.as_deref().unwrap_or("accepted by the baseline")
    } else {
        &f.observed
    };
    format!("{} {}: {}", f.status.as_str(), f.title, plain(what))
}

/// Text: a blank line, then one wrapped line per finding (nothing when there are none).
pub fn text(findings: &[Finding], pal: Palette) -> String {
    let mut out = String::new();
    for f in findings {
        let l = crate::report::text::wrap(&line(f), pal.width, "", "    ");
        out.push_str(&l.replacen(f.status.as_str(), &pal.status(f.status), 1));
    }
    if !out.is_empty() {
        out.insert(0, '\n');
    }
    out
}

/// Markdown: a list, one item per finding.
pub fn markdown(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        out.push_str(&format!("- {}\n", line(f).replace('|', "\\|")));
    }
    if !out.is_empty() {
        out.insert_str(0, "\n### Gates\n\n");
    }
    out
}

/// HTML: a list inserted before `</body>` of a rendered page.
pub fn html(page: String, findings: &[Finding]) -> String {
    if findings.is_empty() {
        return page;
    }
    let items: String = findings
        .iter()
        .map(|f| {
            format!(
                "<li data-id=\"{}\" data-status=\"{}\">{}</li>",
                crate::report::html::esc(&f.id),
                f.status.as_str(),
                crate::report::html::esc(&line(f))
            )
        })
        .collect();
    let block = format!("<section class=\"gates\"><h2>Gates</h2><ul>{items}</ul></section>\n");
    match page.rfind("</body>") {
        Some(i) => format!("{}{block}{}", &page[..i], &page[i..]),
        None => page + &block,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gate_has_its_own_line() {
        let mut f = crate::findings::baseline::tests_finding("threshold:p99<50ms");
        f.title = "threshold p99 < 50ms".into();
        f.observed = "A.p99_ms = 61".into();
        let t = text(std::slice::from_ref(&f), Palette::plain());
        assert_eq!(t, "\nfail threshold p99 < 50ms: A.p99_ms = 61\n");
        assert!(markdown(std::slice::from_ref(&f)).contains("- fail threshold p99 < 50ms"));
        let h = html("<html><body>x</body></html>".into(), &[f]);
        assert!(
            h.contains("data-status=\"fail\">fail threshold p99 &lt; 50ms"),
            "{h}"
        );
        assert!(h.ends_with("</section>\n</body></html>"), "{h}");
    }
}
