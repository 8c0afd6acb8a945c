//! Enums with stable names (flag values, JSON keys): one table per enum, so the parser,
//! the help's list of values and the printed name cannot drift apart. The command layer
//! turns a [`Named`] into a flag's value parser; the crates below it stay free of clap.
pub trait Named: Sized + Copy + PartialEq + 'static {
    /// Every value, in the order help lists them.
    const ALL: &'static [Self];
    /// The stable name (kebab-case).
    fn name(self) -> &'static str;
    /// The value named `s`, exactly.
    fn from_name(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == s)
    }
    /// `a, b or c`: for an error that lists what is accepted.
    fn expected() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|v| v.name()).collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Two {
        A,
        B,
    }
    impl Named for Two {
        const ALL: &'static [Two] = &[Two::A, Two::B];
        fn name(self) -> &'static str {
            match self {
                Two::A => "a",
                Two::B => "b-b",
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for v in Two::ALL {
            assert_eq!(Two::from_name(v.name()), Some(*v));
        }
        assert_eq!(Two::from_name("B-B"), None);
        assert_eq!(Two::expected(), "a or b-b");
    }
}
