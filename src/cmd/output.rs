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

/// A progress bar of `steps` on stderr for a run over a second: drawn on a terminal only,
/// hidden in pipes and CI logs (the report is the output there).
pub fn steps_bar(prefix: &'static str, steps: u64) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(steps);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{prefix} [{bar:20}] {pos}/{len} {msg}")
            .expect("static template")
            .progress_chars("=> "),
    );
    pb.set_prefix(prefix);
    pb
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

/// A command's format set: the marker type its `OutputArgs` takes, and an enum of exactly
/// its formats to match on (`of`), so a renderer lists every format it writes and no
/// `_ =>` prints text for a format added later. `not` names every other format: adding a
/// `Format` fails to compile here until each set says whether it writes it.
macro_rules! format_set {
    ($(#[$doc:meta])* $name:ident, $choice:ident = [$($f:ident),+] not [$($x:ident),*]) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $name;
        impl FormatSet for $name {
            const LIST: &'static [Format] = &[$(Format::$f),+];
        }
        #[doc = concat!("The formats of [`", stringify!($name), "`].")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $choice {
            $($f),+
        }
        impl $choice {
            /// `f` as one of this set's formats; one outside it is an error (the
            /// `--format` and `--report` parsers already refuse it).
            pub fn of(f: Format) -> anyhow::Result<$choice> {
                match f {
                    $(Format::$f => Ok($choice::$f),)+
                    $(Format::$x => Err(not_in_set(f)),)*
                }
            }
        }
    };
}

fn not_in_set(f: Format) -> anyhow::Error {
    anyhow::anyhow!("this command does not write the {} format", f.as_str())
}

format_set!(
    /// evidence, checklist, hops: the human and serde formats.
    HumanFormats, HumanFormat = [Text, Json, Yaml, Markdown]
        not [Junit, Github, Html, Sarif, Prometheus]
);
format_set!(
    /// choose: the human and serde formats, and an HTML page.
    ChooseFormats, ChooseFormat = [Text, Json, Yaml, Markdown, Html]
        not [Junit, Github, Sarif, Prometheus]
);
format_set!(
    /// verify and lint: every format, CI formats (junit, github, sarif) and HTML.
    AllFormats, AllFormat = [Text, Json, Yaml, Markdown, Junit, Github, Html, Sarif]
        not [Prometheus]
);
format_set!(
    /// audit, review and probe: every format, and Prometheus gauges for a fleet's
    /// node_exporter.
    GaugeFormats, GaugeFormat = [Text, Json, Yaml, Markdown, Junit, Github, Html, Sarif, Prometheus]
        not []
);
format_set!(
    /// budget and load: their own report in the human and serde formats, findings (and
    /// `--threshold`s) in junit and github, and an HTML page.
    FindingsFormats, FindingsFormat = [Text, Json, Yaml, Markdown, Junit, Github, Html]
        not [Sarif, Prometheus]
);
format_set!(
    /// bench fanout and bench idle: their report in text, JSON, Markdown and HTML; each
    /// result's validity and each `--threshold` as a testcase (junit) or annotation (github).
    BenchFormats, BenchFormat = [Text, Json, Markdown, Junit, Github, Html]
        not [Yaml, Sarif, Prometheus]
);
format_set!(
    /// bench cluster: the human and serde formats, an HTML page, and each result's validity
    /// and each `--threshold` as a testcase (junit) or annotation (github).
    ClusterFormats, ClusterFormat = [Text, Json, Yaml, Markdown, Junit, Github, Html]
        not [Sarif, Prometheus]
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

/// One `--report FORMAT=PATH`: another rendering of the same run, written to PATH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportSpec {
    pub format: Format,
    pub path: PathBuf,
}

/// The formats of a set as `--format` spells them (`text, json, ...`).
fn format_names<F: FormatSet>() -> Vec<String> {
    use clap::ValueEnum;
    F::LIST
        .iter()
        .filter_map(|f| f.to_possible_value())
        .map(|v| v.get_name().to_string())
        .collect()
}

/// Parse `FORMAT=PATH`, FORMAT one of `F`'s formats. An error is clap's one line naming
/// `--report` (exit 2) with the allowed list, the same for every command.
pub fn parse_report<F: FormatSet>(s: &str) -> Result<ReportSpec, String> {
    use clap::ValueEnum;
    let allowed = || format!("(allowed: {})", format_names::<F>().join(", "));
    let Some((name, path)) = s.split_once('=') else {
        return Err(format!(
            "expected FORMAT=PATH, e.g. json=report.json {}",
            allowed()
        ));
    };
    let format = <Format as ValueEnum>::from_str(name.trim(), true)
        .ok()
        .filter(|f| F::LIST.contains(f))
        .ok_or_else(|| format!("format '{name}' is not one of this command's {}", allowed()))?;
    if path.is_empty() {
        return Err(format!("{name}=: the PATH is empty"));
    }
    Ok(ReportSpec {
        format,
        path: PathBuf::from(path),
    })
}

/// Two outputs naming one path would overwrite each other: refused before anything is written.
fn check_distinct(paths: &[&Path]) -> anyhow::Result<()> {
    for (i, p) in paths.iter().enumerate() {
        if p.as_os_str() != "-" && paths[..i].contains(p) {
            anyhow::bail!(
                "--report/-o: {} is given twice (one path per report)",
                p.display()
            );
        }
    }
    Ok(())
}

/// The one escaping rule at the edge of every human and CI format: whatever text from
/// outside a renderer let through (an nginx name, a baseline id, a server's event id),
/// no control character but layout (and the palette's colours in text) is written.
/// JSON, YAML and SARIF escape in their serializer; HTML in its own escaping.
fn inert(f: Format, s: String) -> String {
    use rtcheck_base::escape::inert_lines;
    match f {
        Format::Text => inert_lines(&s, true).into_owned(),
        Format::Markdown | Format::Github | Format::Junit | Format::Prometheus => {
            inert_lines(&s, false).into_owned()
        }
        Format::Json | Format::Yaml | Format::Html | Format::Sarif => s,
    }
}

/// `--format`, `-o` and `--report`, flattened into every command with a report.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs<F: FormatSet> {
    /// Output format.
    #[arg(long, value_parser = format_parser::<F>(), default_value = "text")]
    pub format: Format,
    /// Write to FILE instead of stdout (`-` is stdout). A regular file is replaced
    /// atomically; a device, FIFO or symlink target is written, never replaced.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the report as FORMAT to PATH (repeatable): one run, several reports.
    /// Every file is written atomically, and none lands unless all of them can.
    #[arg(long = "report", value_name = "FORMAT=PATH", value_parser = parse_report::<F>)]
    pub reports: Vec<ReportSpec>,
    #[arg(skip)]
    _formats: PhantomData<F>,
}

impl<F: FormatSet> OutputArgs<F> {
    pub fn new(format: Format, output: Option<PathBuf>) -> Self {
        OutputArgs {
            format,
            output,
            reports: Vec::new(),
            _formats: PhantomData,
        }
    }

    /// The palette for this output under `--color`.
    pub fn palette(&self, color: ColorChoice) -> Palette {
        let sink = Sink::of(self.output.as_deref());
        Palette::new(color_enabled(color, sink, no_color_env())).with_width(width_for(sink))
    }

    /// Refuse `--report`/`-o` naming one path twice; cheap, so a command calls it before a
    /// long run (`emit_with` checks again).
    pub fn validate(&self) -> anyhow::Result<()> {
        let mut paths: Vec<&Path> = self.output.iter().map(|p| p.as_path()).collect();
        paths.extend(self.reports.iter().map(|r| r.path.as_path()));
        let dash = Path::new("-");
        let to_stdout = usize::from(self.output.as_deref().is_none_or(|p| p == dash))
            + self.reports.iter().filter(|r| r.path == dash).count();
        if to_stdout > 1 {
            anyhow::bail!(
                "--report/-o: {to_stdout} reports to stdout would run together; give all but one a file"
            );
        }
        check_distinct(&paths)
    }

    /// Render the run once per output (`--format` to stdout or `-o`, each `--report` to
    /// its file) and write them all together: see [`Self::write_with`].
    pub fn emit_with(
        &self,
        color: ColorChoice,
        render: impl Fn(Format, Palette) -> anyhow::Result<String>,
    ) -> anyhow::Result<()> {
        self.write_with(color, &[], render)
    }

    /// [`Self::emit_with`] plus `extra` files that belong to the run (`--save`): regular
    /// files are renamed into place only once every one of them is written, so a failure
    /// leaves none behind (`rtcheck_base::outfile::write_all_atomic`). A report file is coloured
    /// only under `--color always`, and is 80 columns wide, like `-o FILE`.
    pub fn write_with(
        &self,
        color: ColorChoice,
        extra: &[(&Path, &[u8])],
        render: impl Fn(Format, Palette) -> anyhow::Result<String>,
    ) -> anyhow::Result<()> {
        self.validate()?;
        let render = |f: Format, p: Palette| render(f, p).map(|s| inert(f, s));
        let main = render(self.format, self.palette(color))?;
        let file_palette = Palette::new(color_enabled(color, Sink::File, no_color_env()))
            .with_width(width_for(Sink::File));
        let rendered = self
            .reports
            .iter()
            .map(|r| render(r.format, file_palette))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let stdout = Path::new("-");
        let mut files: Vec<(&Path, &[u8])> = extra.to_vec();
        files.extend(
            self.reports
                .iter()
                .zip(&rendered)
                .map(|(r, c)| (r.path.as_path(), c.as_bytes())),
        );
        files.push((self.output.as_deref().unwrap_or(stdout), main.as_bytes()));
        rtcheck_base::outfile::write_all_atomic(&files)
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
    fn each_set_matches_exactly_its_list() {
        use clap::ValueEnum;
        fn check<F: FormatSet, C>(of: fn(Format) -> anyhow::Result<C>) {
            for f in Format::value_variants() {
                assert_eq!(of(*f).is_ok(), F::LIST.contains(f), "{f:?}");
            }
        }
        check::<HumanFormats, _>(HumanFormat::of);
        check::<ChooseFormats, _>(ChooseFormat::of);
        check::<AllFormats, _>(AllFormat::of);
        check::<GaugeFormats, _>(GaugeFormat::of);
        check::<FindingsFormats, _>(FindingsFormat::of);
        check::<BenchFormats, _>(BenchFormat::of);
        check::<ClusterFormats, _>(ClusterFormat::of);
    }

    #[test]
    fn report_takes_only_the_commands_formats() {
        use clap::Parser;
        #[derive(Parser)]
        struct W {
            #[command(flatten)]
            o: OutputArgs<BenchFormats>,
        }
        let w = W::try_parse_from([
            "x",
            "--report",
            "json=a.json",
            "--report",
            "markdown=b=c.md",
        ])
        .unwrap();
        assert_eq!(w.o.format, Format::Text);
        assert_eq!(w.o.reports.len(), 2);
        assert_eq!(w.o.reports[1].format, Format::Markdown);
        assert_eq!(w.o.reports[1].path, Path::new("b=c.md"));
        let e = W::try_parse_from(["x", "--report", "json="]).err().unwrap();
        assert!(e.to_string().contains("the PATH is empty"), "{e}");
        for bad in ["yaml=a.yaml", "a.json", "=a"] {
            let e = W::try_parse_from(["x", "--report", bad]).err().unwrap();
            assert_eq!(e.exit_code(), 2, "{bad}");
            let e = e.to_string();
            assert!(e.contains("--report"), "{e}");
            assert!(
                e.contains("text, json, markdown, junit, github, html"),
                "{bad}: {e}"
            );
        }
        let twice = W::try_parse_from(["x", "-o", "a", "--report", "json=a"]).unwrap();
        let e = twice.o.validate().unwrap_err().to_string();
        assert!(e.contains("a is given twice"), "{e}");
        for two in [
            vec!["x", "-o", "-", "--report", "json=-"],
            vec!["x", "--report", "json=-"],
            vec!["x", "-o", "f", "--report", "json=-", "--report", "html=-"],
        ] {
            let e = W::try_parse_from(&two).unwrap().o.validate().unwrap_err();
            assert!(e.to_string().contains("reports to stdout"), "{two:?}: {e}");
        }
        let one = W::try_parse_from(["x", "-o", "f", "--report", "json=-"]).unwrap();
        assert!(one.o.validate().is_ok());
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
            e.contains("[possible values: text, json, markdown, junit, github, html]"),
            "{e}"
        );
    }
}
