//! One result model, one renderer module per output format.
//!
//! - `model`: findings, verifications, summaries shared by audit and verify.
//! - `json` / `yaml`: serde of the model (canonical machine output).
//! - `text`, `markdown`, `html` (self-contained page with plots): human renderers; `junit`, `github`, `sarif`: CI renderers for findings.
//! - `output`: the palette (colour is decided in `cmd::output`, files written by `outfile`).
pub mod audit;
pub mod budget;
pub mod checks;
pub mod choose;
pub mod cluster;
pub mod conncost;
pub mod counts;
pub mod delivery;
pub mod doc;
pub mod evidence;
pub mod fanout;
pub mod gates;
pub mod github;
pub mod hops;
pub mod html;
pub mod idle;
pub mod json;
pub mod junit;
pub mod load;
pub mod model;
pub mod output;
pub mod plan;
pub mod probe;
pub mod prometheus;
pub mod rehearse;
pub mod review;
pub mod sarif;
pub mod text;
pub mod verify;
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
    Html,
    // SARIF 2.1.0 (code scanning). A plain comment: a doc comment would change --help.
    Sarif,
    // Prometheus text exposition: gauges for node_exporter's textfile collector (no doc
    // comment: clap would turn the one-line list of values into a long one).
    Prometheus,
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
            Format::Html => "html",
            Format::Sarif => "sarif",
            Format::Prometheus => "prometheus",
        }
    }
}

/// Whether a fix line is a shell command (copyable into a terminal) rather than prose
/// ("in the application: ...", "systemd unit, [Service]: ..."), so renderers keep prose out
/// of code blocks.
pub fn is_shell_command(line: &str) -> bool {
    const COMMANDS: &[&str] = &[
        "sudo",
        "printf",
        "ulimit",
        "docker",
        "ss",
        "echo",
        "sysctl",
        "systemctl",
        "taskset",
        "prlimit",
        "cat",
        "ip",
        "kubectl",
        "ethtool",
        "modprobe",
        "aws",
        "gcloud",
        "az",
        "heroku",
    ];
    let word = line.split_whitespace().next().unwrap_or("");
    COMMANDS.contains(&word)
}

/// Text from outside made inert for a human format: the one rule,
/// `rtcheck_base::escape::plain` (control characters as `\x1b`-style escapes).
pub use rtcheck_base::escape::plain;

#[cfg(test)]
mod tests {
    #[test]
    fn prose_is_not_a_command() {
        assert!(super::is_shell_command(
            "sudo sysctl -w net.core.somaxconn=10000"
        ));
        assert!(super::is_shell_command("ulimit -n 20000   # in the shell"));
        assert!(!super::is_shell_command(
            "in the application: ping every 20-30 s"
        ));
        assert!(!super::is_shell_command(
            "systemd unit, [Service]: LimitNOFILE=20000"
        ));
        assert!(!super::is_shell_command(
            "/etc/security/limits.conf: `<user> soft nofile`"
        ));
        assert!(!super::is_shell_command(
            "Kubernetes: resources.limits.cpu: 5"
        ));
    }
}
