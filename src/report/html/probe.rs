//! HTML for `rtcheck probe`: the verdict, then per URL a table of its checks (status,
//! check, what was measured) and a card per finding (observed, expected, rule, numbers,
//! fix, evidence), most severe first. Built from the common findings model only, so any
//! finding added to a probe report (browser checks included) renders as it is.
use super::{esc, card::card, num, page, status};
use crate::findings::{Finding, Status};
use crate::report::FindingsReport;

/// Probe titles end with ": URL" (the redacted URL); a finding without one is grouped
/// under "".
fn url_of(f: &Finding) -> &str {
    f.title.rsplit_once(": ").map_or("", |(_, u)| u)
}

pub fn render(r: &FindingsReport) -> anyhow::Result<String> {
    let json = crate::report::json::render(r)?;
    let s = &r.summary;
    let none = r
        .findings
        .iter()
        .any(|f| f.id == crate::probe::NOTHING_MEASURED);
    let (word, class) = if none {
        ("NO VERDICT (nothing measured)", "bad")
    } else if s.fail > 0 {
        ("FAIL", "bad")
    } else if s.warn > 0 {
        ("WARN", "warn")
    } else {
        ("PASS", "")
    };
    let verdict = format!(
        "{word}: {} fail, {} warn, {} pass, {} skip",
        s.fail, s.warn, s.pass, s.skip
    );
    let mut b = format!(
        "<p id=\"summary\">{} fail, {} warn, {} pass, {} skip &middot; probed in {} ms</p>\n",
        num("summary.fail", &s.fail.to_string()),
        num("summary.warn", &s.warn.to_string()),
        num("summary.pass", &s.pass.to_string()),
        num("summary.skip", &s.skip.to_string()),
        num("duration_ms", &format!("{:.0}", r.duration_ms)),
    );
    if let Some(t) = r.target.as_deref().filter(|t| t.contains("NOT VERIFIED")) {
        b.push_str(&format!(
            "<div class=\"invalid\">TLS certificates were NOT verified (--insecure): {}</div>\n",
            esc(t)
        ));
    }
    let mut urls: Vec<&str> = Vec::new();
    for f in &r.findings {
        if !urls.contains(&url_of(f)) {
            urls.push(url_of(f));
        }
    }
    for (n, u) in urls.iter().enumerate() {
        b.push_str(&section(n, u, r));
    }
    Ok(page("rtcheck probe", &verdict, class, &b, &json))
}

/// One URL: its checks at a glance, then their cards (most severe first).
fn section(n: usize, url: &str, r: &FindingsReport) -> String {
    let mine: Vec<(usize, &Finding)> = r
        .findings
        .iter()
        .enumerate()
        .filter(|(_, f)| url_of(f) == url)
        .collect();
    let title = if url.is_empty() {
        "other findings"
    } else {
        url
    };
    let mut b = format!(
        "<section class=\"url\" data-url=\"{}\"><h2>{}</h2>\n<table class=\"checks\"><tr><th>status</th><th>check</th><th>observed</th></tr>\n",
        esc(url),
        esc(title)
    );
    for (_, f) in &mine {
        let observed = match (f.status, &f.reason) {
            (Status::Skip | Status::Suppressed, Some(reason)) => reason.as_str(),
            _ => f.observed.as_str(),
        };
        b.push_str(&format!(
            "<tr data-id=\"{}\" data-status=\"{}\"><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&f.id),
            f.status.as_str(),
            status(f.status),
            esc(&f.id),
            esc(observed)
        ));
    }
    b.push_str("</table>\n");
    let mut order = mine;
    order.sort_by_key(|(i, f)| (std::cmp::Reverse(f.status), *i));
    for (i, f) in order {
        b.push_str(&card(i, f, &format!("{n}-{}", f.id)));
    }
    b.push_str("</section>\n");
    b
}
