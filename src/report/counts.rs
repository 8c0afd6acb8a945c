//! The counts a findings report heads with (audit, lint, probe, review): fail, warn,
//! pass and skip in the order every format uses, written once.
use crate::findings::Summary;
use crate::report::doc::{num, t, Span};

/// The counts as spans, each number tagged with its JSON path (`summary.fail`...), up to
/// the skip count: the caller adds what follows it (" skip", " n/a", the time taken).
pub fn findings_head(s: &Summary) -> Vec<Span> {
    let n = |k: &str, v: usize| num(format!("summary.{k}"), v.to_string());
    vec![
        n("fail", s.fail),
        t(" fail, "),
        n("warn", s.warn),
        t(" warn, "),
        n("pass", s.pass),
        t(" pass, "),
        n("skip", s.skip),
    ]
}

/// The counts as plain text: `F fail, W warn, P pass, S skip[, N suppressed]`.
pub fn findings_line(s: &Summary) -> String {
    format!(
        "{} fail, {} warn, {} pass, {} skip{}",
        s.fail,
        s.warn,
        s.pass,
        s.skip,
        suppressed_count(s)
    )
}

/// `, N suppressed` when the baseline accepted any (nothing otherwise: most runs have none).
pub fn suppressed_count(s: &Summary) -> String {
    match s.suppressed {
        0 => String::new(),
        n => format!(", {n} suppressed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc::Span;

    #[test]
    fn the_counts_in_order_tagged_and_plain() {
        let s = Summary {
            fail: 1,
            warn: 2,
            pass: 3,
            skip: 4,
            suppressed: 0,
        };
        assert_eq!(findings_line(&s), "1 fail, 2 warn, 3 pass, 4 skip");
        let head = findings_head(&s);
        assert_eq!(head.len(), 7);
        assert_eq!(head[0], num("summary.fail", "1"));
        assert_eq!(head[6], num("summary.skip", "4"));
        assert_eq!(head[1], t(" fail, "));
        assert!(!matches!(head[6], Span::Text(_)));
        let s = Summary { suppressed: 5, ..s };
        assert_eq!(
            findings_line(&s),
            "1 fail, 2 warn, 3 pass, 4 skip, 5 suppressed"
        );
        assert_eq!(suppressed_count(&s), ", 5 suppressed");
    }
}
