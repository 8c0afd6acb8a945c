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
            _ => continue,
        };
        let mut msg = format!("{}\nexpected: {}\nrule: {}", f.observed, f.expected, f.rule);
        if !f.fix.summary.is_empty() {
            msg.push_str(&format!("\nfix: {}", f.fix.summary));
        }
        if let Some(c) = f.fix.runtime.first() {
            msg.push_str(&format!("\nnow: {c}"));
        }
        if let Some(v) = &f.verify {
            msg.push_str(&format!("\nverify: rtcheck verify {v}"));
        }
        out.push_str(&format!(
            "::{level} title={}::{}\n",
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
}
