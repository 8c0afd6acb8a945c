//! A verify measurement as people read it ("253 connections", "2.6 MB"), shared by the
//! reports that show one (verify's own is a `report::doc::Doc`: `report::verify`).
use crate::findings::Verification;

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
}
