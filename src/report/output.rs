//! Colour decisions (files are written by `crate::outfile`).
use std::io::IsTerminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// `always` wins over NO_COLOR (explicit flag beats environment); `auto` honours
    /// NO_COLOR (any non-empty value) and colours only a terminal.
    pub fn enabled_for_stdout(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
                !no_color && std::io::stdout().is_terminal()
            }
        }
    }
}

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
