//! A markdown table cell (verify's report itself is a `report::doc::Doc`:
//! `report::verify`).

pub fn cell(s: &str) -> String {
    crate::report::plain(&s.replace('\n', " ")).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cell_never_breaks_its_table() {
        assert_eq!(super::cell("a|b\nc"), "a\\|b c");
    }
}
