//! GitHub Actions workflow annotations (::error / ::warning) for findings: fail becomes
//! an error, warn a warning, and one ::notice line carries the summary.
use crate::findings::Status;
use crate::report::FindingsReport;

/// Data escaping of workflow commands, as GitHub's toolkit does it (`%`, CR, LF), and the
/// one rule for every other control character (`\x1b`): an annotation stays one line and
/// writes nothing a terminal or log viewer acts on.
fn data(s: &str) -> String {
    let s = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    rtcheck_base::escape::plain(&s).into_owned()
}

/// Property escaping (title=...): also ':' and ','.
fn prop(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub shows at most this many annotations of one level per step; the rest are dropped
/// silently. Past it, the last slot carries every remaining finding, grouped.
pub const PER_LEVEL: usize = 10;

/// One finding's annotation message: observed, expected, rule, fix, commands.
fn message(f: &crate::findings::Finding) -> String {
    let mut msg = format!("{}\nexpected: {}\nrule: {}", f.observed, f.expected, f.rule);
    if f.status == Status::Suppressed {
        let why = f.reason.as_deref().unwrap_or("accepted by the baseline");
        msg = format!("suppressed: {why}\n{msg}");
    }
    if !f.fix.summary.is_empty() {
        msg.push_str(&format!("\nfix: {}", f.fix.summary));
    }
    if let Some(c) = f.fix.runtime.first() {
        msg.push_str(&format!("\nnow: {c}"));
    }
    // A finding in a file: the lines to write there, in that product's syntax.
    if f.location.is_some() {
        for l in &f.fix.persistent {
            msg.push_str(&format!("\nchange: {l}"));
        }
    }
    if let Some(v) = &f.verify {
        msg.push_str(&format!("\nverify: rtcheck verify {v}"));
    }
    if let Some(v) = &f.verification {
        msg.push_str(&format!(
            "\nmeasured live: {} ({})",
            crate::report::verify::measured(v),
            v.verdict
        ));
    }
    msg
}

fn annotation(r: &FindingsReport, level: &str, f: &crate::findings::Finding) -> String {
    // A finding in a file (lint) is annotated on that file and line.
    let place = f.location.as_ref().map_or(String::new(), |l| {
        format!("file={},line={},", prop(&l.file), l.line)
    });
    format!(
        "::{level} {place}title={}::{}\n",
        prop(&format!(
            "rtcheck {} {} ({})",
            r.kind,
            f.id,
            f.status.as_str()
        )),
        data(&message(f))
    )
}

/// The findings of one level past what GitHub shows: one annotation, a line each.
fn grouped(r: &FindingsReport, level: &str, rest: &[&crate::findings::Finding]) -> String {
    let lines: Vec<String> = rest
        .iter()
        .map(|f| {
            let at = f
                .location
                .as_ref()
                .map_or(String::new(), |l| format!(" ({}:{})", l.file, l.line));
            format!("{}{at}: {}", f.id, f.fix.summary)
        })
        .collect();
    format!(
        "::{level} title={}::{}\n",
        prop(&format!(
            "rtcheck {}: {} more {}",
            r.kind,
            rest.len(),
            match level {
                "error" => "failures",
                "warning" => "warnings",
                _ => "suppressed findings",
            }
        )),
        data(&format!(
            "{}\nEvery finding in full: --report markdown=$GITHUB_STEP_SUMMARY writes the report to the step summary.",
            lines.join("\n")
        ))
    )
}

pub fn render(r: &FindingsReport) -> String {
    let mut out = String::new();
    for (level, status) in [
        ("error", Status::Fail),
        ("warning", Status::Warn),
        ("notice", Status::Suppressed),
    ] {
        let all: Vec<_> = r.findings.iter().filter(|f| f.status == status).collect();
        // All of them when they fit; else PER_LEVEL - 1 and one grouped for the rest.
        let shown = if all.len() <= PER_LEVEL {
            all.len()
        } else {
            PER_LEVEL - 1
        };
        for f in &all[..shown] {
            out.push_str(&annotation(r, level, f));
        }
        if shown < all.len() {
            out.push_str(&grouped(r, level, &all[shown..]));
        }
    }
    let s = &r.summary;
    out.push_str(&format!(
        "::notice title={}::{}\n",
        prop(&format!("rtcheck {}", r.kind)),
        data(&format!(
            "{} fail, {} warn, {} pass, {} skip",
            s.fail, s.warn, s.pass, s.skip
        ))
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_workflow_command_syntax() {
        assert_eq!(data("50%\nnext"), "50%25%0Anext");
        assert_eq!(prop("a: b, c"), "a%3A b%2C c");
        // Every other control character shows as an escape; `%` of the escape is not
        // re-encoded, and a CR cannot end the command early.
        assert_eq!(
            data("x\x1b[2J\x07\0\r::error::y"),
            "x\\x1b[2J\\x07\\x00%0D::error::y"
        );
        assert_eq!(prop("f,\x1b:1"), "f%2C\\x1b%3A1");
    }

    /// Issue 27: `review --format github` gave 48 warnings and GitHub showed 10. At most
    /// PER_LEVEL per level, the last one grouping every other, none lost.
    #[test]
    fn past_ten_per_level_the_rest_are_grouped_in_one_annotation() {
        let finding = |id: String, status: &str| -> crate::findings::Finding {
            serde_json::from_str(&format!(
                r#"{{"id":"{id}","title":"t","status":"{status}","observed":"o","expected":"e",
                    "rule":"r","evidence":[],"fix":{{"summary":"do {id}"}}}}"#
            ))
            .unwrap()
        };
        let mut fs: Vec<_> = (0..48).map(|i| finding(format!("w{i}"), "warn")).collect();
        fs.extend((0..3).map(|i| finding(format!("e{i}"), "fail")));
        let r = FindingsReport::new("review", Default::default(), None, fs, 0.0);
        let out = render(&r);
        let count = |p: &str| out.lines().filter(|l| l.starts_with(p)).count();
        assert_eq!(count("::error "), 3, "{out}");
        assert_eq!(count("::warning "), PER_LEVEL, "{out}");
        let group = out
            .lines()
            .find(|l| l.contains("39 more warnings"))
            .unwrap_or_else(|| panic!("{out}"));
        for i in 9..48 {
            assert!(
                group.contains(&format!("w{i}: do w{i}%0A")),
                "w{i}: {group}"
            );
        }
        assert!(!group.contains("w8:"), "{group}");
        // Exactly ten: no group.
        let fs: Vec<_> = (0..10).map(|i| finding(format!("w{i}"), "warn")).collect();
        let out = render(&FindingsReport::new(
            "review",
            Default::default(),
            None,
            fs,
            0.0,
        ));
        assert_eq!(
            out.lines().filter(|l| l.starts_with("::warning ")).count(),
            10
        );
        assert!(!out.contains("more warnings"), "{out}");
    }

    #[test]
    fn a_finding_in_a_file_is_annotated_on_its_line() {
        let mut f: crate::findings::Finding = serde_json::from_str(
            r#"{"id":"x","title":"t","status":"fail","observed":"o","expected":"e","rule":"r",
                "evidence":[],"fix":{"summary":"s"}}"#,
        )
        .unwrap();
        f.location = Some(crate::findings::SourceLocation {
            file: "deploy/nginx.conf".into(),
            line: 12,
            block: None,
        });
        let r = FindingsReport::new("lint", Default::default(), None, vec![f], 0.0);
        let out = render(&r);
        assert!(
            out.starts_with("::error file=deploy/nginx.conf,line=12,title=rtcheck lint x"),
            "{out}"
        );
    }
}
