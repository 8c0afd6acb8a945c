//! text rendering of verify results: one block per measurement, beside its reference.
use crate::findings::Verification;
use crate::report::Palette;
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

/// One verification: the measurement and its verdict; the reference, the finding and the
/// run's details when `explain` is set or the run was invalid (then they say why).
pub fn render_one(v: &Verification, p: &Palette, explain: bool) -> String {
    use super::wrap;
    let mut s = String::new();
    let status = if v.valid {
        p.good("valid")
    } else {
        p.bad("INVALID")
    };
    s.push_str(&format!(
        "{}  {}  [{status}, {:.1} s]\n",
        p.bold(&v.name),
        p.bold(&measured(v)),
        v.duration_ms as f64 / 1000.0
    ));
    let w = p.width;
    let ind = "             ";
    let full = explain || !v.valid;
    if full {
        s.push_str(&wrap(&v.reference, w, "  reference: ", ind));
        s.push_str(&format!(
            "  finding:   audit check {} (evidence {})\n",
            crate::verify::finding_for(&v.name).unwrap_or("-"),
            crate::verify::evidence_id(&v.name).unwrap_or("-")
        ));
    }
    let verdict = wrap(&v.verdict, w, "  verdict:   ", ind);
    s.push_str(&if v.valid { verdict } else { p.bad(&verdict) });
    if full {
        for d in &v.details {
            s.push_str(&wrap(d, w, &format!("  {} ", p.dim("-")), "    "));
        }
    }
    s
}

pub fn render(r: &VerifyReport, p: &Palette, explain: bool) -> String {
    let mut s = String::new();
    for v in &r.verifications {
        s.push_str(&render_one(v, p, explain));
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
    if !explain {
        s.push_str("Reference, finding and the run's details: --explain.\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn report_lists_each_block_and_the_summary() {
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
        let r = VerifyReport::new(
            vec!["fd-limit".into(), "tcp-wmem".into()],
            vec![
                v("fd-limit", Some(253.0), "connections", true),
                v("tcp-wmem", None, "B", false),
            ],
            options,
            std::time::Instant::now(),
        );
        let t = render(&r, &Palette::plain(), true);
        assert!(
            t.starts_with("fd-limit  253 connections  [valid, 1.5 s]\n"),
            "{t}"
        );
        assert!(t.contains("tcp-wmem  no number  [INVALID, 1.5 s]\n"), "{t}");
        assert!(t.contains("  finding:   audit check fd-limit (evidence ulimit-n)\n"));
        assert!(
            t.ends_with("2 measurement(s): 1 valid, 1 invalid, in 0.0 s (loopback only)\n"),
            "{t}"
        );
        let short = render(&r, &Palette::plain(), false);
        assert!(
            short.starts_with(
                "fd-limit  253 connections  [valid, 1.5 s]\n  verdict:   confirms\n\n"
            ),
            "{t}"
        );
        let md = crate::report::markdown::verify::render(&r);
        let rows: Vec<&str> = md
            .lines()
            .filter(|l| l.starts_with("| tcp-wmem |"))
            .collect();
        assert_eq!(
            rows,
            vec!["| tcp-wmem | no number | ref | invalid: why | **no** | tcp-wmem |"]
        );
        assert_eq!(crate::report::markdown::verify::cell("a|b\nc"), "a\\|b c");
    }
}
