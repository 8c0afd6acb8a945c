//! One result model, one renderer module per output format.
//!
//! - `model`: findings, verifications, summaries shared by audit and verify.
//! - `json` / `yaml`: serde of the model (canonical machine output).
//! - `text`, `markdown`: human renderers; `junit`, `github`: CI renderers for findings.
//! - `output`: colour decisions and atomic file output.
pub mod github;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod model;
pub mod output;
pub mod text;
pub mod yaml;

pub use model::*;
pub use output::{ColorChoice, Palette};

/// Output formats. Not every command supports every format; each command lists its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Text,
    Json,
    Yaml,
    Markdown,
    Junit,
    Github,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Yaml => "yaml",
            Format::Markdown => "markdown",
            Format::Junit => "junit",
            Format::Github => "github",
        }
    }

    /// Usage error when a command does not support this format.
    pub fn ensure_one_of(self, allowed: &[Format], command: &str) -> anyhow::Result<()> {
        if allowed.contains(&self) {
            Ok(())
        } else {
            let names: Vec<_> = allowed.iter().map(|f| f.as_str()).collect();
            Err(anyhow::anyhow!(
                "--format {}: not supported by `{command}` (use one of: {})",
                self.as_str(),
                names.join(", ")
            ))
        }
    }
}
