//! The palette renderers paint with; whether it is enabled is decided once, in
//! `crate::cmd::output::color_enabled`.

/// Colours for statuses and emphasis; a disabled palette returns text unchanged.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    pub enabled: bool,
}

impl Palette {
    pub fn new(enabled: bool) -> Self {
        Palette { enabled }
    }
    pub fn plain() -> Self {
        Palette { enabled: false }
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
    pub fn status(&self, st: crate::report::Status) -> String {
        use crate::report::Status::*;
        let s = st.as_str();
        match st {
            Pass => self.good(s),
            Warn => self.warn(s),
            Fail => self.bad(s),
            Skip => self.dim(s),
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
