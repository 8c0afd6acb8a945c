//! Colour decisions and output files that are never half-written.
use std::io::{IsTerminal, Write};
use std::path::Path;

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

/// Write `content` to `path` atomically (temp file in the same directory, then rename),
/// or to stdout when `path` is None. A failed run never leaves a partial file.
pub fn emit(content: &str, path: Option<&Path>) -> anyhow::Result<()> {
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth a message.
            match out.write_all(content.as_bytes()).and_then(|_| out.flush()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => r.map_err(|e| anyhow::anyhow!("stdout: {e}")),
            }
        }
        Some(p) => write_atomic(p, content.as_bytes()),
    }
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_all_atomic(&[(path, bytes)])
}

/// Several files that belong together (a saved profile and a report): every temp file is
/// written first, and only when all succeeded are they renamed into place, so a failed run
/// leaves none of them behind.
pub fn write_all_atomic(files: &[(&Path, &[u8])]) -> anyhow::Result<()> {
    let mut temps = Vec::new();
    let mut failure = None;
    for (path, bytes) in files {
        match write_temp(path, bytes) {
            Ok(tmp) => temps.push((tmp, *path)),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    if failure.is_none() {
        for (tmp, path) in &temps {
            if let Err(e) = std::fs::rename(tmp, path) {
                failure = Some(anyhow::anyhow!("{}: cannot write: {e}", path.display()));
                break;
            }
        }
    }
    for (tmp, _) in &temps {
        let _ = std::fs::remove_file(tmp);
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Write `bytes` to a temp file beside `path`; returns the temp path.
fn write_temp(path: &Path, bytes: &[u8]) -> anyhow::Result<std::path::PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| anyhow::anyhow!("{}: not a file path", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let res = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow::anyhow!("{}: cannot write: {e}", path.display()));
    }
    Ok(tmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_fails_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let bad = dir.path().join("missing-dir").join("x.json");
        let e = write_atomic(&bad, b"x").unwrap_err().to_string();
        assert!(e.contains("missing-dir"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn palette_disabled_is_plain() {
        let p = Palette::plain();
        assert_eq!(p.bad("fail"), "fail");
        let c = Palette::new(true);
        assert_ne!(c.bad("fail"), "fail");
    }
}
