//! `rtcheck verify` (the loopback experiments) as one [`Doc`]: the verdict (how many
//! measurements were valid), one row per experiment (what it measured, valid or not, the
//! audit check it backs), then per experiment its verdict and, with `explain` or when
//! invalid, its reference, finding and the run's details. Written once for text,
//! markdown and html ([`verify_page`] adds the numbers beside their references).
//! [`measured`] is how every report shows a measurement.
use crate::findings::Verification;
use crate::report::doc::{code, num, t, Block, Column, Doc, Row, Table, Tone, Verdict};
use crate::report::VerifyReport;

/// "253 connections", "2.6 MB", "4.93 s"; "no number" for an invalid run.
pub fn measured(v: &Verification) -> String {
    match v.measured {
        None => "no number".into(),
        Some(x) => match v.unit.as_str() {
            "B" => rtcheck_base::units::fmt_bytes(x.max(0.0) as u64),
            "s" => format!("{x:.2} s"),
            u => format!("{} {u}", crate::evidence::fmt_num(x.round())),
        },
    }
}

/// `explain`: every experiment's reference, finding and details, not only an invalid one's.
pub fn verify_doc(r: &VerifyReport, explain: bool) -> anyhow::Result<Doc> {
    let mut blocks = vec![table(r)];
    for v in &r.verifications {
        blocks.extend(one(v, explain));
    }
    if !explain {
        blocks.push(Block::Note(
            "Reference, finding and the run's details: --explain.".into(),
        ));
    }
    Ok(Doc {
        title: "rtcheck verify (loopback)".into(),
        verdict: verdict(r),
        blocks,
        json: crate::report::json::render(r)?,
    })
}

/// The html page: the counts and each measurement beside its reference, tagged with their
/// JSON paths, then the report as text and markdown have it, every part explained.
pub fn verify_page(r: &VerifyReport) -> anyhow::Result<Doc> {
    let mut doc = verify_doc(r, true)?;
    doc.blocks.splice(0..0, [counts(r), references(r)]);
    Ok(doc)
}

fn counts(r: &VerifyReport) -> Block {
    let s = &r.summary;
    Block::Table(Table {
        id: "summary".into(),
        columns: vec![
            Column::count("measurements"),
            Column::count("valid"),
            Column::count("invalid"),
            Column::num("took", "ms"),
        ],
        rows: vec![Row {
            key: None,
            cells: vec![
                num("summary.total", s.total.to_string()),
                num("summary.valid", s.valid.to_string()),
                num("summary.invalid", s.invalid.to_string()),
                num("duration_ms", r.duration_ms.to_string()),
            ],
        }],
    })
}

/// Each measurement beside the reference it is read against; an invalid one has none.
fn references(r: &VerifyReport) -> Block {
    let rows = r.verifications.iter().enumerate().map(|(i, v)| {
        let shown = match (v.valid, v.measured) {
            (true, Some(m)) => num(
                format!("verifications.{i}.measured"),
                crate::evidence::fmt_num(m),
            ),
            (true, None) => t("no number"),
            (false, _) => t("invalid: no number"),
        };
        Row {
            key: Some(v.name.clone()),
            cells: vec![code(&v.name), shown, t(&v.unit), t(&v.reference)],
        }
    });
    Block::Table(Table {
        id: "references".into(),
        columns: vec![
            Column::id("experiment"),
            Column::text("measured"),
            Column::text("unit"),
            Column::prose("reference"),
        ],
        rows: rows.collect(),
    })
}

fn verdict(r: &VerifyReport) -> Verdict {
    let s = &r.summary;
    Verdict {
        text: vec![t(format!(
            "{} measurement(s): {} valid, {} invalid, in {:.1} s (loopback only)",
            s.total,
            s.valid,
            s.invalid,
            r.duration_ms as f64 / 1000.0
        ))],
        tone: if s.invalid > 0 { Tone::Bad } else { Tone::Good },
    }
}

fn table(r: &VerifyReport) -> Block {
    let rows = r.verifications.iter().map(|v| Row {
        key: Some(v.name.clone()),
        cells: vec![
            t(&v.name),
            t(measured(v)),
            t(if v.valid { "yes" } else { "NO" }),
            t(format!("{:.1}", v.duration_ms as f64 / 1000.0)),
            t(crate::verify::finding_for(&v.name).unwrap_or("-")),
        ],
    });
    Block::Table(Table {
        id: "verifications".into(),
        columns: vec![
            Column::text("experiment"),
            Column::text("measured"),
            Column::text("valid"),
            Column::num("took", "s"),
            Column::text("audit check"),
        ],
        rows: rows.collect(),
    })
}

/// One experiment: its verdict (an invalid run's is why it has no number); the reference,
/// the finding and the details when explained or invalid.
fn one(v: &Verification, explain: bool) -> Vec<Block> {
    let para = |s: String| Block::Para {
        id: None,
        spans: vec![t(s)],
    };
    let mut b = vec![Block::Section(v.name.clone())];
    match v.valid {
        true => b.push(para(format!("verdict: {}", v.verdict))),
        false => b.push(Block::Invalid {
            id: format!("invalid-{}", v.name),
            why: v.verdict.clone(),
        }),
    }
    if explain || !v.valid {
        b.push(para(format!("reference: {}", v.reference)));
        b.push(para(format!(
            "finding: audit check {} (evidence {})",
            crate::verify::finding_for(&v.name).unwrap_or("-"),
            crate::verify::evidence_id(&v.name).unwrap_or("-")
        )));
        if !v.details.is_empty() {
            b.push(Block::List(v.details.iter().map(|d| vec![t(d)]).collect()));
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc::{markdown, text};
    use crate::report::Palette;

    fn v(name: &str, measured: Option<f64>, unit: &str, valid: bool) -> Verification {
        Verification {
            name: name.into(),
            measured,
            unit: unit.into(),
            reference: "ref".into(),
            verdict: if valid { "confirms" } else { "invalid: why" }.into(),
            details: vec!["d1".into()],
            valid,
            duration_ms: 1500,
        }
    }

    fn report() -> VerifyReport {
        let secs = std::time::Duration::from_secs;
        let options = crate::verify::VerifyOptions {
            limit: None,
            closed: 1,
            opened: 1,
            connections: 1,
            ping: secs(1),
            pong_wait: secs(1),
            read_deadline: secs(1),
            rcvbuf: 256,
            message_size: 16,
            timeout: secs(1),
            progress: false,
        };
        VerifyReport::new(
            vec!["fd-limit".into(), "tcp-wmem".into()],
            vec![
                v("fd-limit", Some(253.0), "connections", true),
                v("tcp-wmem", None, "B", false),
            ],
            options,
            std::time::Instant::now(),
        )
    }

    /// A measurement in its unit: counts grouped, bytes scaled, seconds to two
    /// decimals; an invalid one has no number.
    #[test]
    fn numbers_print_with_their_units() {
        assert_eq!(
            measured(&v("a", Some(1019.0), "connections", true)),
            "1,019 connections"
        );
        assert_eq!(measured(&v("a", Some(2_177_024.0), "B", true)), "2.2 MB");
        assert_eq!(measured(&v("a", Some(4.987), "s", true)), "4.99 s");
        assert_eq!(measured(&v("a", None, "s", false)), "no number");
    }

    /// The page: each measurement beside its reference with its JSON path, an invalid
    /// one without a number, the counts tagged.
    #[test]
    fn page_shows_measurements_beside_their_references() {
        let page = crate::report::doc::html::render(&verify_page(&report()).unwrap());
        let refs = &page[page.find("id=\"references\"").unwrap()..];
        let row = |name: &str| {
            let at = &refs[refs.find(&format!("data-row=\"{name}\"")).unwrap()..];
            at[..at.find("</tr>").unwrap()].to_string()
        };
        let fd = row("fd-limit");
        assert!(
            fd.contains("data-path=\"verifications.0.measured\">253<"),
            "{fd}"
        );
        assert!(fd.contains(">ref<"), "{fd}");
        let wmem = row("tcp-wmem");
        assert!(!wmem.contains("data-path"), "{wmem}");
        assert!(page.contains("data-path=\"summary.invalid\">1<"), "{page}");
    }

    /// The verdict first; a row per experiment; an invalid one says why and shows its
    /// reference and details even without --explain; a valid one's only with it.
    #[test]
    fn report_lists_each_experiment_and_the_summary_first() {
        let r = report();
        let short = text::render(&verify_doc(&r, false).unwrap(), &Palette::plain());
        assert!(
            short.starts_with("2 measurement(s): 1 valid, 1 invalid, in 0.0 s (loopback only)\n"),
            "{short}"
        );
        let row = short.lines().find(|l| l.contains("fd-limit  ")).unwrap();
        assert!(
            row.contains("253 connections") && row.contains("yes"),
            "{short}"
        );
        assert!(short.contains("INVALID: invalid: why"), "{short}");
        assert!(short.contains("finding: audit check tcp-wmem"), "{short}");
        assert!(!short.contains("finding: audit check fd-limit"), "{short}");
        assert!(short.contains("--explain"), "{short}");
        let long = text::render(&verify_doc(&r, true).unwrap(), &Palette::plain());
        assert!(long.contains("finding: audit check fd-limit (evidence ulimit-n)"));
        assert!(
            long.contains("  - d1\n") && !long.contains("--explain"),
            "{long}"
        );
        assert!(long.lines().all(|l| l.chars().count() <= 80), "{long}");
        let md = markdown::render(&verify_doc(&r, true).unwrap());
        let rows: Vec<&str> = md
            .lines()
            .filter(|l| l.starts_with("| tcp-wmem |"))
            .collect();
        assert_eq!(
            rows,
            ["| tcp-wmem | no number | NO | 1.5 | tcp-wmem |"],
            "{md}"
        );
        assert!(md.contains("**Invalid**: invalid: why"), "{md}");
    }
}
