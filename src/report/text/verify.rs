//! text rendering of verify results: one block per measurement, beside its reference.
use crate::report::{Palette, Verification};
use crate::verify::VerifyReport;

/// "253 connections", "2.6 MB", "4.93 s"; "no number" for an invalid run.
pub fn measured(v: &Verification) -> String {
    match v.measured {
        None => "no number".into(),
        Some(x) => match v.unit.as_str() {
            "B" => crate::units::fmt_bytes(x.max(0.0) as u64),
            "s" => format!("{x:.2} s"),
            u => format!("{} {u}", crate::evidence::fmt_num(x.round())),
        },
    }
}

/// One verification as an indented block (also used under an audit finding).
pub fn render_one(v: &Verification, p: &Palette, indent: &str) -> String {
    let mut s = String::new();
    let status = if v.valid {
        p.good("valid")
    } else {
        p.bad("INVALID")
    };
    s.push_str(&format!(
        "{indent}{}  {}  [{status}, {:.1} s]\n",
        p.bold(&v.name),
        p.bold(&measured(v)),
        v.duration_ms as f64 / 1000.0
    ));
    s.push_str(&format!("{indent}  reference: {}\n", v.reference));
    s.push_str(&format!(
        "{indent}  finding:   audit check {} (evidence {})\n",
        crate::verify::finding_for(&v.name),
        crate::verify::evidence_id(&v.name)
    ));
    let verdict = if v.valid {
        v.verdict.clone()
    } else {
        p.bad(&v.verdict)
    };
    s.push_str(&format!("{indent}  verdict:   {verdict}\n"));
    for d in &v.details {
        s.push_str(&format!("{indent}  {} {}\n", p.dim("-"), d));
    }
    s
}

pub fn render(r: &VerifyReport, p: &Palette) -> String {
    let mut s = String::new();
    for v in &r.verifications {
        s.push_str(&render_one(v, p, ""));
        s.push('\n');
    }
    let sum = &r.summary;
    let tail = format!(
        "{} measurement(s): {} valid, {} invalid, in {:.1} s (loopback only)",
        sum.total,
        sum.valid,
        sum.invalid,
        r.duration_ms as f64 / 1000.0
    );
    s.push_str(&if sum.invalid > 0 { p.bad(&tail) } else { tail });
    s.push('\n');
    s
}
