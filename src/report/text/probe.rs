//! Text rendering of a probe report: the verdict first, then one table per URL (status,
//! check, what was measured on the path), then the fix for everything not passing.
use crate::findings::{Finding, Status};
use crate::report::{FindingsReport, Palette};

/// Probe titles end with ": URL" (the redacted URL); split it off.
fn split_title(f: &Finding) -> (&str, &str) {
    f.title.rsplit_once(": ").unwrap_or((f.title.as_str(), ""))
}

/// Keeps a number and its unit on one line ("1.0 s", "4 KB"): the space between them
/// becomes a no-break space for the layout, and a plain space again after it.
const GLUE: char = '\u{a0}';
const UNITS: [&str; 6] = ["s", "ms", "B", "KB", "MB", "%"];

fn glue_units(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let mut out = String::with_capacity(text.len());
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            let number = words[i - 1].ends_with(|c: char| c.is_ascii_digit());
            let unit = w.trim_end_matches([',', ';', ')', ':', '.']);
            out.push(if number && UNITS.contains(&unit) {
                GLUE
            } else {
                ' '
            });
        }
        out.push_str(w);
    }
    out
}

/// `label` then `text` word-wrapped to the width, continuation lines under the text.
fn wrapped(label: &str, text: &str, width: usize) -> String {
    wrap_glued(label, &glue_units(text), width).replace(GLUE, " ")
}

fn wrap_glued(label: &str, text: &str, width: usize) -> String {
    let pad = " ".repeat(label.chars().count());
    let mut out = String::new();
    let mut line = label.to_string();
    let mut empty = true;
    // A peer's words (headers, reasons) are escaped: they cannot start a line.
    let text = crate::report::plain(text);
    for word in text.split([' ', '\n', '\t']).filter(|w| !w.is_empty()) {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = pad.clone();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// One URL's checks, one line each (status, id, what was measured), no header or lines.
fn url_table(found: &[&Finding], pal: Palette) -> String {
    use super::table::Frame;
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|f| {
            let observed = match (&f.status, &f.reason) {
                (Status::Skip | Status::Suppressed, Some(reason)) => reason.as_str(),
                _ => f.observed.as_str(),
            };
            let observed = crate::report::plain(observed);
            vec![
                f.status.as_str().to_string(),
                f.id.clone(),
                glue_units(&observed),
            ]
        })
        .collect();
    let statuses: Vec<Status> = found.iter().map(|f| f.status).collect();
    super::table::findings(&statuses, &rows, Frame::Bare, &pal)
}

pub fn render(r: &FindingsReport, pal: Palette) -> String {
    let s = &r.summary;
    let none = r
        .findings
        .iter()
        .any(|f| f.id == crate::probe::NOTHING_MEASURED);
    let verdict = if none {
        pal.bad("NO VERDICT (nothing measured)")
    } else if s.fail > 0 {
        pal.bad("FAIL")
    } else if s.warn > 0 {
        pal.warn("WARN")
    } else {
        pal.good("PASS")
    };
    let mut out = format!(
        "{} {verdict}: {} fail, {} warn, {} pass, {} skip{}\n",
        pal.bold("rtcheck probe"),
        s.fail,
        s.warn,
        s.pass,
        s.skip,
        crate::report::audit::suppressed_count(s)
    );
    let mut urls: Vec<&str> = Vec::new();
    for f in &r.findings {
        let u = split_title(f).1;
        if !urls.contains(&u) {
            urls.push(u);
        }
    }
    for u in &urls {
        out.push('\n');
        out.push_str(&pal.bold(u));
        out.push('\n');
        let found: Vec<&Finding> = r
            .findings
            .iter()
            .filter(|f| split_title(f).1 == *u)
            .collect();
        out.push_str(&url_table(&found, pal).replace(GLUE, " "));
        out.push('\n');
    }
    for f in r
        .findings
        .iter()
        .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
    {
        let (title, url) = split_title(f);
        out.push('\n');
        let w = pal.width;
        let head = super::wrap(
            &format!("{} {} ({url}): {title}", f.status.as_str(), f.id),
            w,
            "",
            "  ",
        );
        out.push_str(
            &head
                .replacen(f.status.as_str(), &pal.status(f.status), 1)
                .replacen(&f.id, &pal.bold(&f.id), 1),
        );
        out.push_str(&wrapped("  expected: ", &f.expected, w));
        out.push_str(&wrapped("  rule:     ", &f.rule, w));
        for e in &f.evidence {
            let text = format!("[{}] {} ({})", e.id, e.value, e.source);
            out.push_str(&wrapped("  evidence: ", &text, w));
        }
        if !f.fix.summary.is_empty() {
            out.push_str(&wrapped("  fix:      ", &f.fix.summary, w));
        }
        for c in &f.fix.persistent {
            // Config lines stay whole (copied, not read); a command breaks only between
            // words, with ` \` continuations.
            if super::has_command(c) {
                out.push_str(&super::wrap_parts(c, w, "    ", "    "));
            } else {
                out.push_str(&format!("    {c}\n"));
            }
        }
    }
    if let Some(t) = &r.target {
        if t.contains("NOT VERIFIED") {
            out.push('\n');
            out.push_str(&pal.bad("TLS certificates were NOT verified (--insecure)"));
            out.push('\n');
        }
    }
    out.push_str(&pal.dim(&format!("\nprobed in {:.1} s\n", r.duration_ms / 1000.0)));
    out
}

#[cfg(test)]
mod tests {
    use super::wrapped;

    #[test]
    fn a_number_keeps_its_unit() {
        let w = super::wrapped("  x: ", "first event after 1.0 s; then 4 KB", 22);
        assert!(w.contains("1.0 s") && w.contains("4 KB"), "{w}");
        assert!(!w.contains('\u{a0}'), "{w}");
        assert_eq!(super::glue_units("3 retries"), "3 retries");
    }

    #[test]
    fn wraps_under_the_label() {
        let w = wrapped("  rule:     ", &"word ".repeat(40), 40);
        assert!(w.lines().all(|l| l.chars().count() <= 40), "{w}");
        assert!(
            w.lines().skip(1).all(|l| l.starts_with("            word")),
            "{w}"
        );
        assert_eq!(w.split_whitespace().filter(|x| *x == "word").count(), 40);
    }
}
