//! The palette renderers paint with; whether it is enabled is decided once, in
//! `crate::cmd::output::color_enabled`.

/// Width of text output when it does not go to a terminal (files, pipes, CI logs).
pub const DEFAULT_WIDTH: usize = 80;

/// Colours for statuses and emphasis, and the width text output fits in; a disabled
/// palette returns text unchanged.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    pub enabled: bool,
    /// Columns the text renderers wrap and size tables to.
    pub width: usize,
}

impl Palette {
    pub fn new(enabled: bool) -> Self {
        Palette {
            enabled,
            width: DEFAULT_WIDTH,
        }
    }
    pub fn plain() -> Self {
        Palette::new(false)
    }
    /// The same palette fitted to `width` columns (at least 40, so tables stay readable).
    pub fn with_width(self, width: usize) -> Self {
        Palette {
            width: width.max(40),
            ..self
        }
    }
    fn paint(&self, s: &str, f: impl Fn(&str) -> String) -> String {
        if self.enabled {
            f(s)
        } else {
            s.to_string()
        }
    }
    pub fn good(&self, s: &str) -> String {
        use owo_colors::OwoColorize;
        self.paint(s, |s| s.green().to_string())
    }
    pub fn warn(&self, s: &str) -> String {
        use owo_colors::OwoColorize;
        self.paint(s, |s| s.yellow().to_string())
    }
    pub fn bad(&self, s: &str) -> String {
        use owo_colors::OwoColorize;
        self.paint(s, |s| s.red().bold().to_string())
    }
    pub fn dim(&self, s: &str) -> String {
        use owo_colors::OwoColorize;
        self.paint(s, |s| s.dimmed().to_string())
    }
    pub fn bold(&self, s: &str) -> String {
        use owo_colors::OwoColorize;
        self.paint(s, |s| s.bold().to_string())
    }
    pub fn status(&self, st: crate::findings::Status) -> String {
        use crate::findings::Status::*;
        let s = st.as_str();
        match st {
            Pass => self.good(s),
            Warn => self.warn(s),
            Fail => self.bad(s),
            Skip | Suppressed => self.dim(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palette_disabled_is_plain() {
        let p = Palette::plain();
        assert_eq!(p.bad("fail"), "fail");
        let c = Palette::new(true);
        assert_ne!(c.bad("fail"), "fail");
    }
}
