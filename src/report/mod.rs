//! One result model, one renderer module per output format.
//!
//! - `model`: findings, verifications, summaries shared by audit and verify.
//! - `json` / `yaml`: serde of the model (canonical machine output).
//! - `text`, `markdown`: human renderers; `junit`, `github`: CI renderers for findings.
//! - `output`: the palette (colour is decided in `cmd::output`, files written by `outfile`).
pub mod github;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod model;
pub mod output;
pub mod text;
pub mod yaml;

pub use model::*;
pub use output::Palette;

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
}
