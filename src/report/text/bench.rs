//! The millisecond format bench reports share (`bench fanout`, `bench idle` and
//! `bench plan` are [`crate::report::doc::Doc`]s: [`crate::report::fanout`],
//! [`crate::report::idle`], [`crate::report::plan`]).

pub fn ms(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x >= 100.0 => crate::evidence::fmt_num(x.round()),
        Some(x) => format!("{x:.1}"),
    }
}
