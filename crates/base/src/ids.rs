//! `check_ids!`: the id enum of one table, in the leaf crate so that any layer's table
//! (audit's and probe's checks, review's items, the hops) makes its ids the same way.

/// The id enum of one table of checks (audit's, probe's): a variant per id, `as_str` (the
/// contract text findings carry), `ALL` in declaration order and `parse`. A table and
/// its callers name an id by variant, so a typo does not compile; a new check is one
/// added line (add, never reorder or rename: the texts are what users grep and suppress).
#[macro_export]
macro_rules! check_ids {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($var:ident = $id:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name { $($var),* }
        impl $name {
            pub const ALL: &[$name] = &[$($name::$var),*];
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$var => $id),* }
            }
            pub fn parse(s: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|i| i.as_str() == s)
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
