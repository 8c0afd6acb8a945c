//! One document model for the human formats. A report kind builds a [`Doc`] once (its
//! verdict, paragraphs, typed tables, findings, plots); `text`, `markdown` and `html` are
//! three backends of any `Doc`, so a sentence is written once and reads the same in all
//! three, and a new human format is one more backend. Machine formats (json, yaml, junit,
//! github, sarif, prometheus) keep their own models.
//!
//! Kinds built this way: `budget` ([`crate::report::budget`]), `bench cluster`
//! ([`crate::report::cluster`]), `load` ([`crate::report::load`]), `verify`
//! ([`crate::report::verify`]), `verify delivery` ([`crate::report::delivery`]), `choose`
//! ([`crate::report::choose`]), `review` ([`crate::report::review`]), `hops`
//! ([`crate::report::hops`]), `evidence` and `checklist` ([`crate::report::evidence`]),
//! `bench fanout` ([`crate::report::fanout`]), `audit`, `lint` and `review`
//! ([`crate::report::audit`]), `probe` ([`crate::report::probe`]), `rehearse`
//! ([`crate::report::rehearse`]), `bench idle` ([`crate::report::idle`]), `bench idle
//! --server` ([`crate::report::conncost`]) and `bench plan` ([`crate::report::plan`]).
//! Every human report is a `Doc` but the guided run's one-screen summary
//! ([`crate::report::text::guided`]), interactive and text only.
pub mod html;
pub mod markdown;
pub mod text;

pub use crate::bench::model::Check;
use crate::findings::{Finding, Status};

/// The whole report: a title, the verdict first, then the blocks in reading order.
#[derive(Debug, Clone)]
pub struct Doc {
    pub title: String,
    pub verdict: Verdict,
    pub blocks: Vec<Block>,
    /// The report's JSON, carried inert by the html page (numbers and data travel together).
    pub json: String,
}

/// The verdict line and how it reads: good, needs care, bad, or plain information.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Good,
    Warn,
    Bad,
    Plain,
}

impl Tone {
    /// The tone of the worst status among findings (none: plain).
    pub fn worst(statuses: impl IntoIterator<Item = Status>) -> Tone {
        match statuses.into_iter().max() {
            Some(Status::Fail) => Tone::Bad,
            Some(Status::Warn) => Tone::Warn,
            _ => Tone::Plain,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Verdict {
    pub text: Vec<Span>,
    pub tone: Tone,
}

/// A piece of inline text. Numbers carry their path in the report's JSON (`a.0.b`) so the
/// html page tags them and a reader finds the machine value they came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Span {
    Text(String),
    /// Emphasised (a hop's name in the verdict): bold in text and markdown.
    Strong(String),
    Num {
        shown: String,
        path: String,
    },
    /// A table cell standing for the rest of its row when a part was not measured validly:
    /// the reason, never numbers. Html spans it over the remaining columns; text, narrow,
    /// shows only "INVALID" (the kind says why in a [`Block::Invalid`] of its own).
    Withheld(String),
    /// A check's status (pass, warn, fail, ...): coloured in text and html.
    Status(Status),
    /// A command or config line to copy: text keeps it whole (broken only between words
    /// past the width), markdown and html set it as code.
    Code(String),
}

/// Shorthands for building spans.
pub fn t(s: impl Into<String>) -> Span {
    Span::Text(s.into())
}
pub fn strong(s: impl Into<String>) -> Span {
    Span::Strong(s.into())
}
pub fn status(st: Status) -> Span {
    Span::Status(st)
}
pub fn code(s: impl Into<String>) -> Span {
    Span::Code(s.into())
}
pub fn num(path: impl Into<String>, shown: impl Into<String>) -> Span {
    Span::Num {
        shown: shown.into(),
        path: path.into(),
    }
}

/// The spans as plain text (what text and markdown print, less emphasis).
pub fn plain(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|s| match s {
            Span::Text(x) | Span::Strong(x) | Span::Code(x) => x.clone(),
            Span::Num { shown, .. } => shown.clone(),
            Span::Withheld(why) => format!("INVALID: {why}"),
            Span::Status(st) => st.as_str().to_string(),
        })
        .collect()
}

#[derive(Debug, Clone)]
pub enum Block {
    /// A section heading (h2).
    Section(String),
    /// A paragraph; `id` names it on the html page.
    Para {
        id: Option<String>,
        spans: Vec<Span>,
    },
    /// Secondary text (the model a figure comes from): dim in text.
    Note(String),
    Table(Table),
    /// A part that was not measured validly: its reason, never numbers.
    Invalid {
        id: String,
        why: String,
    },
    /// Findings, as the report's `findings` array holds them.
    Findings(Vec<Finding>),
    /// A plot: drawn on the html page; text and markdown have the table beside it.
    Plot(Plot),
    /// A figure of any scale and shape (log ms, counts, lines over x): html only, like
    /// [`Block::Plot`].
    Figure(Figure),
    /// A table too wide for 80 columns (every key of a run): html and markdown draw it;
    /// text leaves it out, as it does plots, for the narrower table the kind puts beside it.
    Wide(Table),
    /// Findings the kind's own blocks already say in words (delivery: one per run, restating
    /// the run's line): html draws them as cards; text and markdown leave them out.
    Cards(Vec<Finding>),
    /// Cards, as [`Block::Cards`], each with its index in the report's `findings` and an
    /// element id of its own (a check id that repeats, one per URL, stays unique).
    Anchored(Vec<Card>),
    /// A section heading that also opens a part of the page (html: a `section` keyed by
    /// `key`, up to the next part): a probed URL and its checks.
    Part {
        key: String,
        title: String,
    },
    /// A bulleted list (notes, a seed's figures).
    List(Vec<Vec<Span>>),
    /// A run's validity checks: text and markdown list those that did not pass, html
    /// folds all of them under the verdict.
    Checks(Vec<Check>),
    /// One item of a list that reads as a unit (a check to act on): its head line, then
    /// lines under it. Text sets it off by a blank line and indents the lines; markdown
    /// makes it a list item; html a card (`id` names it, `tone` colours its edge).
    Item(Item),
    /// A setting or command to copy into a config or a shell, under its label (`setting`;
    /// empty: none): text wraps it only between whole directives, markdown and html set it
    /// as code.
    Setting {
        label: String,
        text: String,
    },
    /// What a command printed, line for line (a failed hook's output): text sets each line
    /// after `  | `, markdown in a fence, html in `<pre>`.
    Pre(String),
}

#[derive(Debug, Clone)]
pub struct Card {
    /// Its index in the report's `findings` (the JSON path of its numbers).
    pub index: usize,
    /// The card's element id is `finding-{anchor}`.
    pub anchor: String,
    pub finding: Finding,
}

#[derive(Debug, Clone)]
pub struct Item {
    pub id: Option<String>,
    pub tone: Tone,
    pub head: Vec<Span>,
    pub lines: Vec<Vec<Span>>,
}

/// A table with typed columns: numbers are right-aligned and carry a unit in the header.
#[derive(Debug, Clone)]
pub struct Table {
    /// The html element id.
    pub id: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    /// "ms", "%", ...: numbers in this column are in this unit.
    pub unit: Option<&'static str>,
    /// How text lays the column out when the table is too wide.
    pub wrap: Wrap,
}

/// How a text column gives way to the width: between words, never (an id), or as prose
/// whose long paths break after a separator rather than send the table vertical.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrap {
    Words,
    Never,
    Prose,
}

impl Column {
    pub fn text(name: &str) -> Column {
        Column {
            name: name.into(),
            unit: None,
            wrap: Wrap::Words,
        }
    }
    /// An id or a command: never wrapped, never cut.
    pub fn id(name: &str) -> Column {
        Column {
            wrap: Wrap::Never,
            ..Column::text(name)
        }
    }
    /// Free text (an observed value): the column that gives way first.
    pub fn prose(name: &str) -> Column {
        Column {
            wrap: Wrap::Prose,
            ..Column::text(name)
        }
    }
    pub fn num(name: &str, unit: &'static str) -> Column {
        Column {
            name: name.into(),
            unit: Some(unit),
            wrap: Wrap::Words,
        }
    }
    /// A count: right-aligned like a number, no unit in the header.
    pub fn count(name: &str) -> Column {
        Column {
            name: name.into(),
            unit: Some(""),
            wrap: Wrap::Words,
        }
    }
    /// The header as printed: the name, then the unit in parentheses.
    pub fn header(&self) -> String {
        match self.unit {
            Some(u) if !u.is_empty() => format!("{} ({u})", self.name),
            _ => self.name.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Row {
    /// A key for the html row (`data-row`), when a reader needs to find it.
    pub key: Option<String>,
    pub cells: Vec<Span>,
}

/// A bar plot: categories on x, one bar per series in each.
#[derive(Debug, Clone)]
pub struct Plot {
    pub id: String,
    pub caption: String,
    pub axes: (String, String),
    pub categories: Vec<String>,
    pub series: Vec<PlotSeries>,
}

#[derive(Debug, Clone)]
pub struct PlotSeries {
    pub name: String,
    pub colour: Colour,
    pub values: Vec<f64>,
}

/// A figure: bars per category or lines over x, on the y scale its numbers need.
#[derive(Debug, Clone)]
pub struct Figure {
    pub id: String,
    pub caption: String,
    pub axes: (String, String),
    pub y: Scale,
    pub shape: Shape,
    pub series: Vec<Series>,
}

/// What the y axis holds: milliseconds (linear or log10, for a seconds-long tail beside a
/// sub-millisecond baseline) or whole counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Ms,
    LogMs,
    Count,
    /// Any other quantity (MB ...), linear from 0.
    Value,
}

#[derive(Debug, Clone)]
pub enum Shape {
    /// One group of bars per category; a point's x is its category's index.
    Bars { categories: Vec<String> },
    /// Lines over a linear x, with markers at the points.
    Lines,
    /// Lines over x on a log2 axis (concurrency 1, 2, 4 ... 64), markers at the points.
    LinesLog2,
    /// Latency by percentile: x is the percentile (50 .. 99.99, drawn on a log "nines"
    /// axis), y in ms on a log axis whatever `y` says.
    Percentiles,
}

/// One named series of a [`Figure`]: (x, y) points, None leaving a gap (or no bar).
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub colour: Colour,
    pub points: Vec<Option<(f64, f64)>>,
}

/// The palette plots share across reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    Blue,
    Green,
    Grey,
    Red,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_go_in_the_header_and_spans_flatten() {
        assert_eq!(Column::num("RTT", "ms").header(), "RTT (ms)");
        assert_eq!(Column::text("hop").header(), "hop");
        assert_eq!(Column::count("req/s").header(), "req/s");
        assert!(Column::count("req/s").unit.is_some(), "right-aligned");
        assert_eq!(plain(&[t("a "), strong("b"), num("x", "1.0")]), "a b1.0");
        assert_eq!(
            Tone::worst([Status::Pass, Status::Warn]),
            Tone::Warn,
            "worst of pass and warn"
        );
        assert_eq!(Tone::worst([]), Tone::Plain);
    }

    /// On a terminal, emphasis and status words are painted after wrapping: real escapes,
    /// never the inert `\x1b` text, and the words where they were.
    #[test]
    fn a_paragraph_is_painted_after_it_is_wrapped() {
        let d = Doc {
            title: "t".into(),
            verdict: Verdict {
                text: vec![t("v")],
                tone: Tone::Plain,
            },
            blocks: vec![Block::Para {
                id: None,
                spans: vec![
                    status(Status::Fail),
                    t(" "),
                    strong("queue-depth"),
                    t(": x"),
                ],
            }],
            json: "{}".into(),
        };
        let p = crate::report::Palette::new(true);
        let text = text::render(&d, &p);
        assert!(text.contains(&p.bold("queue-depth")), "{text:?}");
        assert!(text.contains(&p.status(Status::Fail)), "{text:?}");
        assert!(!text.contains("\\x1b"), "{text:?}");
        let plain = text::render(&d, &crate::report::Palette::plain());
        assert!(plain.contains("  fail queue-depth: x\n"), "{plain}");
        assert!(markdown::render(&d).contains("**fail** **queue-depth**: x"));
        assert!(html::render(&d).contains("class=\"status s-fail\""));
    }

    #[test]
    fn an_item_is_a_head_with_its_lines_in_every_backend() {
        let d = Doc {
            title: "t".into(),
            verdict: Verdict {
                text: vec![t("v")],
                tone: Tone::Plain,
            },
            blocks: vec![Block::Item(Item {
                id: Some("finding-q".into()),
                tone: Tone::Bad,
                head: vec![status(Status::Fail), t(" "), strong("q"), t(": queue")],
                lines: vec![
                    vec![t("64 x 1 KB tolerates 64 ms")],
                    vec![t("fix: raise it: sudo sysctl -w net.core.somaxconn=4096")],
                ],
            })],
            json: "{}".into(),
        };
        let text = text::render(&d, &crate::report::Palette::plain());
        assert!(
            text.contains("\n\nfail q: queue\n  64 x 1 KB tolerates 64 ms\n  fix: "),
            "{text}"
        );
        assert!(
            text.contains("sudo sysctl -w net.core.somaxconn=4096"),
            "{text}"
        );
        let md = markdown::render(&d);
        assert!(
            md.contains("- **fail** **q**: queue\n  - 64 x 1 KB tolerates 64 ms\n"),
            "{md}"
        );
        let page = html::render(&d);
        assert!(
            page.contains("<div class=\"card fail\" id=\"finding-q\">"),
            "{page}"
        );
    }

    #[test]
    fn a_setting_is_copied_whole_in_every_backend() {
        let d = Doc {
            title: "t".into(),
            verdict: Verdict {
                text: vec![t("v")],
                tone: Tone::Plain,
            },
            blocks: vec![Block::Setting {
                label: "setting".into(),
                text: "proxy_buffering off; proxy_read_timeout 3600s".into(),
            }],
            json: "{}".into(),
        };
        let p = crate::report::Palette::plain().with_width(40);
        let text = text::render(&d, &p);
        assert!(
            text.contains(
                "    setting: proxy_buffering off;\n             proxy_read_timeout 3600s\n"
            ),
            "{text}"
        );
        let md = markdown::render(&d);
        assert!(
            md.contains("setting: `proxy_buffering off; proxy_read_timeout 3600s`"),
            "{md}"
        );
        assert!(html::render(&d).contains("<code>proxy_buffering off;"));
    }

    /// A command's output keeps its lines (marked in text), fenced in markdown whatever
    /// it holds, escaped in html.
    #[test]
    fn output_keeps_its_lines_in_every_backend() {
        let mut d = sample();
        d.blocks = vec![Block::Pre("pull: ```x```\n<image> not found".into())];
        let text = text::render(&d, &crate::report::Palette::plain());
        assert!(
            text.contains("  | pull: ```x```\n  | <image> not found\n"),
            "{text}"
        );
        let md = markdown::render(&d);
        assert!(
            md.contains("\n```\npull: '''x'''\n<image> not found\n```\n"),
            "{md}"
        );
        let page = html::render(&d);
        assert!(page.contains("<pre>pull: ```x```\n&lt;image&gt; not found</pre>"));
    }

    /// A findings table keeps its ids whole and gives way in its prose; a command is
    /// code in markdown and html; a percentile figure is drawn.
    #[test]
    fn ids_stay_whole_commands_are_code_and_percentiles_are_drawn() {
        let long = "a value with many words that must wrap somewhere inside its own column /a/long/path/to/somewhere";
        let mut d = sample();
        d.blocks = vec![
            Block::Table(Table {
                id: "findings".into(),
                columns: vec![
                    Column::text("status"),
                    Column::id("check"),
                    Column::prose("observed"),
                ],
                rows: vec![Row {
                    key: None,
                    cells: vec![
                        status(Status::Warn),
                        t("delivery-snapshot-clean-reconnect"),
                        t(long),
                    ],
                }],
            }),
            Block::Para {
                id: None,
                spans: vec![t("now: "), code("sudo sysctl -w net.core.somaxconn=4096")],
            },
            Block::Figure(Figure {
                id: "distribution-A".into(),
                caption: "A".into(),
                axes: ("percentile".into(), "ms".into()),
                y: Scale::LogMs,
                shape: Shape::Percentiles,
                series: vec![Series {
                    name: "A".into(),
                    colour: Colour::Blue,
                    points: vec![Some((50.0, 1.0)), Some((99.0, 4.0)), Some((99.9, 9.0))],
                }],
            }),
        ];
        let text = text::render(&d, &crate::report::Palette::plain().with_width(60));
        assert!(text.contains("delivery-snapshot-clean-reconnect"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
        assert!(
            text.contains("sudo sysctl -w net.core.somaxconn=4096"),
            "{text}"
        );
        let md = markdown::render(&d);
        assert!(
            md.contains("now: `sudo sysctl -w net.core.somaxconn=4096`"),
            "{md}"
        );
        let page = html::render(&d);
        assert!(page.contains("<code>sudo sysctl"), "{page}");
        assert!(page.contains("data-plot=\"distribution-A\""), "{page}");
        assert!(page.contains("99.99"), "a nines tick: {page}");
    }

    fn sample() -> Doc {
        Doc {
            title: "rtcheck sample".into(),
            verdict: Verdict {
                text: vec![t("2 hops: "), num("total_ms", "232.0"), t(" ms")],
                tone: Tone::Warn,
            },
            blocks: vec![
                Block::Section("Hops".into()),
                Block::Table(Table {
                    id: "hops".into(),
                    columns: vec![Column::text("hop"), Column::num("RTT", "ms")],
                    rows: vec![Row {
                        key: Some("a".into()),
                        cells: vec![t("a|b"), num("hops.0.rtt_ms", "24.0")],
                    }],
                }),
                Block::Invalid {
                    id: "live-invalid".into(),
                    why: "hop 2: refused".into(),
                },
            ],
            json: "{}".into(),
        }
    }

    /// The same sentence and figures in all three backends.
    #[test]
    fn one_doc_reads_the_same_in_text_markdown_and_html() {
        let d = sample();
        let text = text::render(&d, &crate::report::Palette::plain());
        assert!(text.starts_with("2 hops: 232.0 ms\n"), "{text}");
        assert!(text.contains("RTT (ms)") && text.contains("24.0"), "{text}");
        assert!(text.contains("INVALID: hop 2: refused"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        let md = markdown::render(&d);
        assert!(md.contains("**2 hops: 232.0 ms**"), "{md}");
        assert!(
            md.contains("| hop | RTT (ms) |\n|---|---:|\n| a\\|b | 24.0 |"),
            "{md}"
        );
        let page = html::render(&d);
        assert!(page.contains("data-path=\"hops.0.rtt_ms\""), "{page}");
        assert!(page.contains("<tr data-row=\"a\"><td>a|b</td><td class=\"n\">"));
        assert!(page.contains("class=\"verdict warn\""), "{page}");
        assert!(page.contains("id=\"live-invalid\""), "{page}");
    }

    /// The blocks bench cluster added: a withheld row, a list, checks, a figure on a log
    /// scale; each backend draws them its way and no format shows a withheld number.
    #[test]
    fn withheld_rows_lists_checks_and_figures_in_every_backend() {
        let fail = Check {
            name: "samples accounted".into(),
            status: Status::Fail,
            detail: "3 unexplained".into(),
        };
        let pass = Check {
            status: Status::Pass,
            name: "cleanup".into(),
            ..fail.clone()
        };
        let mut d = sample();
        d.blocks = vec![
            Block::Table(Table {
                id: "s".into(),
                columns: vec![
                    Column::text("scenario"),
                    Column::count("lost"),
                    Column::num("p50", "ms"),
                ],
                rows: vec![
                    Row {
                        key: Some("a".into()),
                        cells: vec![t("a"), num("s.0.lost", "3"), num("s.0.p50", "1.5")],
                    },
                    Row {
                        key: Some("b".into()),
                        cells: vec![t("b"), Span::Withheld("clients never connected".into())],
                    },
                ],
            }),
            Block::List(vec![vec![t("node c killed")]]),
            Block::Checks(vec![fail, pass]),
            Block::Figure(Figure {
                id: "latency".into(),
                caption: "latency".into(),
                axes: ("scenario".into(), "ms (log scale)".into()),
                y: Scale::LogMs,
                shape: Shape::Bars {
                    categories: vec!["a".into()],
                },
                series: vec![Series {
                    name: "p50".into(),
                    colour: Colour::Green,
                    points: vec![Some((0.0, 1.5))],
                }],
            }),
        ];
        let text = text::render(&d, &crate::report::Palette::plain());
        assert!(text.contains("lost") && !text.contains("lost ("), "{text}");
        let b = text
            .lines()
            .find(|l| l.trim_start().starts_with("b "))
            .unwrap();
        assert!(b.contains("INVALID") && !b.contains("never"), "{text}");
        assert!(text.contains("  - node c killed\n"), "{text}");
        assert!(
            text.contains("fail samples accounted: 3 unexplained"),
            "{text}"
        );
        assert!(
            !text.contains("cleanup"),
            "passing checks stay out of text: {text}"
        );
        let md = markdown::render(&d);
        assert!(
            md.contains("| b | **INVALID**: clients never connected |  |\n"),
            "{md}"
        );
        assert!(
            md.contains("- node c killed\n") && !md.contains("cleanup"),
            "{md}"
        );
        let page = html::render(&d);
        assert!(page.contains(
            "<tr class=\"invalid\" data-row=\"b\"><td>b</td><td colspan=\"2\">INVALID: clients never connected</td></tr>"
        ));
        assert!(page.contains("data-plot=\"latency\""), "{page}");
        assert!(page.contains("cleanup") && page.contains("node c killed"));
    }

    /// Cards and wide tables: html draws both, markdown the table, text neither (and no
    /// heading over a section it shows nothing of); a status is coloured in text.
    #[test]
    fn cards_and_wide_tables_stay_out_of_text_with_their_headings() {
        let card = Finding {
            location: None,
            id: "delivery-run-1".into(),
            title: String::new(),
            status: Status::Pass,
            observed: "restated".into(),
            expected: String::new(),
            rule: String::new(),
            reason: None,
            evidence: vec![],
            fix: Default::default(),
            verify: None,
            verification: None,
            numbers: Default::default(),
        };
        let wide = Table {
            id: "options".into(),
            columns: vec![Column::text("key"), Column::text("value")],
            rows: vec![Row {
                key: None,
                cells: vec![t("rate"), num("options.rate", "50")],
            }],
        };
        let mut d = sample();
        d.blocks = vec![
            Block::List(vec![vec![Span::Status(Status::Fail), t(" run 1")]]),
            Block::Cards(vec![card]),
            Block::Section("Options".into()),
            Block::Wide(wide),
        ];
        let text = text::render(&d, &crate::report::Palette::plain());
        assert!(text.contains("  - fail run 1\n"), "{text}");
        assert!(
            !text.contains("Options") && !text.contains("restated"),
            "{text}"
        );
        assert!(!text.contains("rate"), "{text}");
        let md = markdown::render(&d);
        assert!(
            md.contains("## Options") && md.contains("| rate | 50 |"),
            "{md}"
        );
        assert!(!md.contains("restated"), "{md}");
        let page = html::render(&d);
        assert!(page.contains("restated") && page.contains("data-path=\"options.rate\""));
        assert!(
            page.contains("<div class=\"wide\"><table id=\"options\">"),
            "{page}"
        );
    }
}
