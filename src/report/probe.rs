//! `rtcheck probe` as one [`Doc`] for text and markdown: the verdict first (PASS, WARN,
//! FAIL, or no verdict when nothing was measured), a warning when certificates were not
//! verified, one table per URL (status, check, what was measured on the path), then what
//! needs action (fail and warn: what is needed, the rule, the evidence, the fix and the
//! config lines to write, whole) and how long it took. The html page ([`probe_page`])
//! draws a card per check in each URL's part instead of the items.
use crate::findings::{Finding, Status};
use crate::report::doc::{code, num, status, strong, t, Block, Card, Column, Doc, Item, Row};
use crate::report::doc::{Table, Tone, Verdict};
use crate::report::FindingsReport;

pub fn probe_doc(r: &FindingsReport) -> anyhow::Result<Doc> {
    let mut blocks = Vec::new();
    if r.target
        .as_deref()
        .is_some_and(|t| t.contains("NOT VERIFIED"))
    {
        blocks.push(Block::Para {
            id: Some("insecure".into()),
            spans: vec![strong("TLS certificates were NOT verified (--insecure)")],
        });
    }
    let urls = urls(r);
    for (n, u) in urls.iter().enumerate() {
        blocks.push(part(u));
        blocks.push(Block::Table(url_table(n, u, r)));
    }
    let acts = |f: &&Finding| matches!(f.status, Status::Fail | Status::Warn);
    for f in r.findings.iter().filter(acts) {
        let n = urls.iter().position(|u| *u == url(f)).unwrap_or(0);
        blocks.extend(item(n, f));
    }
    blocks.push(Block::Note(format!(
        "probed in {:.1} s",
        r.duration_ms / 1000.0
    )));
    Ok(Doc {
        title: "rtcheck probe".into(),
        verdict: verdict(r),
        blocks,
        json: crate::report::json::render(r)?,
    })
}

/// The html page: the counts and the time tagged with their JSON paths, a warning when
/// certificates were not verified, then per URL a part with its checks at a glance and a
/// card per check, most severe first (an id repeats per URL: `finding-{n}-{id}`).
pub fn probe_page(r: &FindingsReport) -> anyhow::Result<Doc> {
    let mut spans = crate::report::counts::findings_head(&r.summary);
    spans.extend([
        t(" skip; probed in "),
        num("duration_ms", format!("{:.0}", r.duration_ms)),
        t(" ms"),
    ]);
    let mut blocks = vec![Block::Para {
        id: Some("summary".into()),
        spans,
    }];
    if let Some(target) = r.target.as_deref().filter(|t| t.contains("NOT VERIFIED")) {
        blocks.push(Block::Invalid {
            id: "insecure".into(),
            why: format!("TLS certificates were NOT verified (--insecure): {target}"),
        });
    }
    for (n, u) in urls(r).iter().enumerate() {
        blocks.push(part(u));
        blocks.push(Block::Table(url_table(n, u, r)));
        let mut mine: Vec<(usize, &Finding)> = (r.findings.iter().enumerate())
            .filter(|(_, f)| url(f) == *u)
            .collect();
        mine.sort_by_key(|(i, f)| (std::cmp::Reverse(f.status), *i));
        let cards = mine.into_iter().map(|(index, f)| Card {
            index,
            anchor: format!("{n}-{}", f.id),
            finding: f.clone(),
        });
        blocks.push(Block::Anchored(cards.collect()));
    }
    Ok(Doc {
        title: "rtcheck probe".into(),
        verdict: verdict(r),
        blocks,
        json: crate::report::json::render(r)?,
    })
}

/// A URL's part of the report, headed by the URL.
fn part(u: &str) -> Block {
    Block::Part {
        key: u.to_string(),
        title: match u.is_empty() {
            true => "other findings".into(),
            false => u.to_string(),
        },
    }
}

/// Probe titles end with ": URL" (the redacted URL); a finding without one has "".
fn url(f: &Finding) -> &str {
    crate::probe::url_of(f).unwrap_or("")
}

/// The title without its URL.
fn what(f: &Finding) -> &str {
    match crate::probe::url_of(f) {
        Some(u) => f.title[..f.title.len() - u.len()].trim_end_matches([':', ' ']),
        None => &f.title,
    }
}

/// The URLs in the order the report first names them.
fn urls(r: &FindingsReport) -> Vec<&str> {
    let mut urls: Vec<&str> = Vec::new();
    for f in &r.findings {
        if !urls.contains(&url(f)) {
            urls.push(url(f));
        }
    }
    urls
}

/// The verdict word, then the counts in the order every format uses. Nothing measured is
/// no verdict, never PASS.
fn verdict(r: &FindingsReport) -> Verdict {
    let s = &r.summary;
    let none = (r.findings.iter()).any(|f| f.id == crate::probe::NOTHING_MEASURED);
    let (word, tone) = if none {
        ("NO VERDICT (nothing measured)", Tone::Bad)
    } else if s.fail > 0 {
        ("FAIL", Tone::Bad)
    } else if s.warn > 0 {
        ("WARN", Tone::Warn)
    } else {
        ("PASS", Tone::Good)
    };
    Verdict {
        text: vec![t(format!(
            "rtcheck probe {word}: {}",
            crate::report::counts::findings_line(s)
        ))],
        tone,
    }
}

/// One URL's checks, one row each: status, id (whole), what was measured on the path (the
/// reason for a check that measured nothing).
fn url_table(n: usize, u: &str, r: &FindingsReport) -> Table {
    let rows = (r.findings.iter()).filter(|f| url(f) == u).map(|f| {
        let observed = match (f.status, &f.reason) {
            (Status::Skip | Status::Suppressed, Some(reason)) => reason,
            _ => &f.observed,
        };
        Row {
            key: Some(f.id.clone()),
            cells: vec![status(f.status), code(&f.id), t(observed)],
        }
    });
    Table {
        id: format!("checks-{n}"),
        columns: vec![
            Column::text("status"),
            Column::id("check"),
            Column::prose("measured on the path"),
        ],
        rows: rows.collect(),
    }
}

/// A check to act on: its head with the URL, what is needed, the rule, the evidence, the
/// fix, then the config lines to write (whole, to be copied).
fn item(n: usize, f: &Finding) -> Vec<Block> {
    let mut lines = vec![
        vec![t(format!("expected: {}", f.expected))],
        vec![t(format!("rule: {}", f.rule))],
    ];
    for e in &f.evidence {
        lines.push(vec![t(format!(
            "evidence: [{}] {} ({})",
            e.id, e.value, e.source
        ))]);
    }
    if !f.fix.summary.is_empty() {
        lines.push(vec![t(format!("fix: {}", f.fix.summary))]);
    }
    let mut v = vec![Block::Item(Item {
        id: Some(format!("finding-{n}-{}", f.id)),
        tone: Tone::worst([f.status]),
        head: vec![
            status(f.status),
            t(" "),
            strong(&f.id),
            t(format!(" ({}): {}", url(f), what(f))),
        ],
        lines,
    })];
    v.extend(f.fix.persistent.iter().map(|c| Block::Setting {
        label: String::new(),
        text: c.clone(),
    }));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc::{markdown, text};
    use crate::report::Palette;

    fn finding(id: &str, st: &str, url: &str, observed: &str) -> Finding {
        serde_json::from_value(serde_json::json!({
            "id": id, "title": format!("The check: {url}"), "status": st,
            "observed": observed, "expected": "e", "rule": "the rule", "evidence": [],
            "fix": {"summary": "Turn buffering off.",
                    "persistent": ["proxy_buffering off;"]}
        }))
        .unwrap()
    }

    fn report() -> FindingsReport {
        let (ws, sse) = (
            "ws://127.0.0.1:8080/ws",
            "http://127.0.0.1:8080/sse?token=***",
        );
        FindingsReport::new(
            "probe",
            crate::profile::Profile::default(),
            Some("2 URL(s)".into()),
            vec![
                finding("upgrade", "pass", ws, "101 after 1.0 ms"),
                finding("sse-buffering", "warn", sse, "first event after 1.0 s"),
                finding("reachable", "pass", sse, "200 in 2 ms"),
            ],
            1500.0,
        )
    }

    /// The verdict first, a table per URL with its own checks, the warning's item with its
    /// URL and the config line whole; within the width.
    #[test]
    fn probe_text_has_the_verdict_a_table_per_url_and_the_fix() {
        let r = report();
        for width in [60, 80] {
            let s = text::render(&probe_doc(&r).unwrap(), &Palette::plain().with_width(width));
            assert!(
                s.starts_with("rtcheck probe WARN: 0 fail, 1 warn, 2 pass, 0 skip\n"),
                "{s}"
            );
            assert!(s.lines().all(|l| l.chars().count() <= width), "{s}");
            let sse = s.find("http://127.0.0.1:8080/sse?token=***").unwrap();
            assert!(s.find("upgrade").unwrap() < sse, "{s}");
            assert!(s.contains("warn sse-buffering (http://127.0.0.1:8080/sse?token=***)"));
            assert!(s.contains("\n    proxy_buffering off;\n"), "{s}");
            assert!(s.contains("probed in 1.5 s"), "{s}");
        }
    }

    #[test]
    fn nothing_measured_is_no_verdict_and_markdown_has_the_same_rows() {
        let mut r = report();
        let md = markdown::render(&probe_doc(&r).unwrap());
        assert!(
            md.contains("| pass | `upgrade` | 101 after 1.0 ms |"),
            "{md}"
        );
        assert!(md.contains("`proxy_buffering off;`"), "{md}");
        r.findings = vec![finding(crate::probe::NOTHING_MEASURED, "fail", "", "x")];
        r.summary = crate::findings::Summary::of(&r.findings);
        let s = text::render(&probe_doc(&r).unwrap(), &Palette::plain());
        assert!(s.starts_with("rtcheck probe NO VERDICT"), "{s}");
    }

    /// The page: a part per URL, each row and card with its status, cards unique per URL
    /// and pointing at their own index in the JSON.
    #[test]
    fn probe_page_has_a_part_per_url_with_rows_and_cards() {
        let mut r = report();
        r.findings[2].numbers.insert("ms".into(), 2.0);
        let page = crate::report::doc::html::render(&probe_page(&r).unwrap());
        let sse = "http://127.0.0.1:8080/sse?token=***";
        let at = page.find(&format!("data-part=\"{sse}\"")).unwrap();
        let part = &page[at..at + page[at..].find("</section>").unwrap()];
        assert!(part.contains("<tr data-row=\"reachable\" data-status=\"pass\">"));
        assert!(part.contains("id=\"finding-1-sse-buffering\""), "{part}");
        assert!(
            part.contains("data-path=\"findings.2.numbers.ms\">2<"),
            "{part}"
        );
        assert!(!part.contains("finding-0-upgrade"), "{part}");
        assert!(page.contains("data-path=\"duration_ms\">1500<"), "{page}");
    }
}
