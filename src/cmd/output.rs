//! The output flags every command with a report shares (`--format`, `-o`), the formats each
//! command supports, and the one place that decides colour.
use crate::report::{Format, Palette};
use std::io::IsTerminal;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// Where rendered output goes, as far as colour is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// A terminal (stdout on a tty, or the prompts on stderr).
    Terminal,
    /// A pipe or a redirect.
    Pipe,
    /// `-o FILE` (any path but `-`): never coloured under `auto`.
    File,
}

impl Sink {
    /// The sink of a report written to `output` (None or `-` is stdout).
    pub fn of(output: Option<&Path>) -> Sink {
        match output {
            Some(p) if p.as_os_str() != "-" => Sink::File,
            _ if std::io::stdout().is_terminal() => Sink::Terminal,
            _ => Sink::Pipe,
        }
    }
}

/// The one colour decision: `always` wins over NO_COLOR (explicit flag beats environment);
/// `auto` colours a terminal only, never a file or a pipe, and honours NO_COLOR (any
/// non-empty value).
pub fn color_enabled(choice: ColorChoice, sink: Sink, no_color_env: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => !no_color_env && sink == Sink::Terminal,
    }
}

/// Columns of the terminal on stdout; None when stdout is not a terminal.
fn stdout_columns() -> Option<usize> {
    // SAFETY: TIOCGWINSZ fills a winsize struct we own; fd 1 may be anything, and any
    // failure is just "not a terminal".
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (r == 0 && ws.ws_col > 0).then_some(ws.ws_col as usize)
}

/// The width text output fits: the terminal's on a terminal, 80 columns anywhere else
/// (files, pipes, CI logs), so the same report reads the same in every log.
pub fn width_for(sink: Sink) -> usize {
    match sink {
        Sink::Terminal => stdout_columns().unwrap_or(crate::report::output::DEFAULT_WIDTH),
        _ => crate::report::output::DEFAULT_WIDTH,
    }
}

/// NO_COLOR set to a non-empty value.
pub fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// The formats a command supports, as a type (so the list lives in one place per command
/// and `--help` and the error name exactly these).
pub trait FormatSet: Clone + std::fmt::Debug + Send + Sync + 'static {
    const LIST: &'static [Format];
}

macro_rules! format_set {
    ($(#[$doc:meta])* $name:ident = [$($f:ident),+]) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $name;
        impl FormatSet for $name {
            const LIST: &'static [Format] = &[$(Format::$f),+];
        }
    };
}

format_set!(
    /// evidence, checklist: the human and serde formats.
    HumanFormats = [Text, Json, Yaml, Markdown]
);
format_set!(
    /// choose: the human and serde formats, and an HTML page.
    ChooseFormats = [Text, Json, Yaml, Markdown, Html]
);
format_set!(
    /// audit, verify, review, probe, lint: every format, CI formats (junit, github, sarif) and HTML.
    AllFormats = [Text, Json, Yaml, Markdown, Junit, Github, Html, Sarif]
);

format_set!(
    /// budget and load: their own report in the human and serde formats, findings in junit,
    /// and an HTML page.
    FindingsFormats = [Text, Json, Yaml, Markdown, Junit, Html]
);
format_set!(
    /// bench fanout and bench idle.
    BenchFormats = [Text, Json, Markdown, Html]
);
format_set!(
    /// bench cluster: the human and serde formats, and an HTML page.
    ClusterFormats = [Text, Json, Yaml, Markdown, Html]
);

/// `--format` parser offering only `F`'s formats: an unsupported one is clap's one-line
/// "invalid value ... [possible values: ...]" (exit 2), the same for every command.
pub fn format_parser<F: FormatSet>() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser;
    use clap::ValueEnum;
    let values: Vec<clap::builder::PossibleValue> = F::LIST
        .iter()
        .filter_map(|f| f.to_possible_value())
        .collect();
    clap::builder::PossibleValuesParser::new(values)
        .map(|s| <Format as ValueEnum>::from_str(&s, false).unwrap_or(Format::Text))
}

/// `--format` and `-o`, flattened into every command with a report.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs<F: FormatSet> {
    /// Output format.
    #[arg(long, value_parser = format_parser::<F>(), default_value = "text")]
    pub format: Format,
    /// Write to FILE instead of stdout (`-` is stdout). A regular file is replaced
    /// atomically; a device, FIFO or symlink target is written, never replaced.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[arg(skip)]
    _formats: PhantomData<F>,
}

impl<F: FormatSet> OutputArgs<F> {
    pub fn new(format: Format, output: Option<PathBuf>) -> Self {
        OutputArgs {
            format,
            output,
            _formats: PhantomData,
        }
    }

    /// The palette for this output under `--color`.
    pub fn palette(&self, color: ColorChoice) -> Palette {
        let sink = Sink::of(self.output.as_deref());
        Palette::new(color_enabled(color, sink, no_color_env())).with_width(width_for(sink))
    }

    /// Write the rendered report to stdout or `-o`.
    pub fn emit(&self, content: &str) -> anyhow::Result<()> {
        crate::outfile::emit(content, self.output.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_never_colours_a_file_or_a_pipe() {
        use ColorChoice::*;
        assert!(color_enabled(Auto, Sink::Terminal, false));
        assert!(!color_enabled(Auto, Sink::File, false));
        assert!(!color_enabled(Auto, Sink::Pipe, false));
        assert!(!color_enabled(Auto, Sink::Terminal, true));
        assert!(color_enabled(Always, Sink::File, true));
        assert!(!color_enabled(Never, Sink::Terminal, false));
        assert_eq!(Sink::of(Some(Path::new("out.txt"))), Sink::File);
        assert_ne!(Sink::of(Some(Path::new("-"))), Sink::File);
    }

    #[test]
    fn each_command_lists_only_its_formats() {
        use clap::Parser;
        #[derive(Parser)]
        struct W {
            #[command(flatten)]
            o: OutputArgs<BenchFormats>,
        }
        let w = W::try_parse_from(["x", "--format", "markdown", "-o", "-"]).unwrap();
        assert_eq!(w.o.format, Format::Markdown);
        let e = W::try_parse_from(["x", "--format", "yaml"])
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("[possible values: text, json, markdown, html]"),
            "{e}"
        );
    }
}
