//! GitHub Actions workflow annotations (::error / ::warning) for findings: fail becomes
//! an error, warn a warning, and one ::notice line carries the summary.
use crate::report::{FindingsReport, Status};

/// Data escaping of workflow commands.
fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Property escaping (title=...): also ':' and ','.
fn prop(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

pub fn render(r: &FindingsReport) -> String {
    let mut out = String::new();
    for f in &r.findings {
        let level = match f.status {
            Status::Fail => "error",
            Status::Warn => "warning",
            Status::Suppressed => "notice",
            _ => continue,
        };
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
                crate::report::text::verify::measured(v),
                v.verdict
            ));
        }
        // A finding in a file (lint) is annotated on that file and line.
        let place = f.location.as_ref().map_or(String::new(), |l| {
            format!("file={},line={},", prop(&l.file), l.line)
        });
        out.push_str(&format!(
            "::{level} {place}title={}::{}\n",
            prop(&format!(
                "rtcheck {} {} ({})",
                r.kind,
                f.id,
                f.status.as_str()
            )),
            data(&msg)
        ));
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
