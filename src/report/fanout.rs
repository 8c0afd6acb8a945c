//! `rtcheck bench fanout` as one [`Doc`]: the verdict, the set-up, one compact latency
//! table (an invalid scenario shows its reasons, never its numbers), then per scenario its
//! checks, shape and notes; html adds each scenario's distribution against the floor F and
//! its rounds, markdown and html the full tables. Written once for text, markdown and html.
use crate::bench::model::{BenchReport, ScenarioResult};
use crate::evidence::fmt_num;
use crate::findings::Status;
use crate::report::doc::{
    num, status, strong, t, Block, Colour, Column, Doc, Figure, Item, Row, Scale, Series, Shape,
    Span, Table, Tone, Verdict,
};
use crate::report::text::bench::ms as fmt_ms;

/// `explain`: every check, the full tables in text too, the seed's figures.
pub fn bench_doc(rep: &BenchReport, explain: bool) -> anyhow::Result<Doc> {
    let mut blocks = vec![setup(rep)];
    if let Some(sp) = &rep.app_protocol {
        let line = format!("protocol spoken: {} ({})", sp.protocol, sp.why);
        blocks.push(Block::Para {
            id: Some("protocol".into()),
            spans: vec![t(line)],
        });
    }
    blocks.push(Block::Section(
        "Latency (receive - scheduled send, healthy clients)".into(),
    ));
    blocks.push(Block::Table(latency_table(rep, false)));
    if let Some(n) = noisy_floor(rep) {
        blocks.push(Block::Para {
            id: Some("floor-noisy".into()),
            spans: vec![t(n)],
        });
    }
    // The full tables: in text only under --explain (they do not fit 80 columns).
    let full = |name: &str, table: Table| {
        let table = match explain {
            true => Block::Table(table),
            false => Block::Wide(table),
        };
        [Block::Section(name.into()), table]
    };
    blocks.extend(full("Latency in full", latency_table(rep, true)));
    blocks.extend(full("Server and hosts", server_table(rep)));
    blocks.push(Block::Section("Scenarios".into()));
    let floor = rep.scenarios.iter().find(|s| s.name == "F" && s.valid);
    for (i, s) in rep.scenarios.iter().enumerate() {
        blocks.extend(scenario(i, s, floor, explain));
    }
    if !explain {
        blocks.push(Block::Note(
            "Every check, the full latency and server tables and the seed's figures: --explain."
                .into(),
        ));
    }
    Ok(Doc {
        title: "rtcheck bench fanout".into(),
        verdict: verdict(rep),
        blocks,
        json: crate::report::json::render(rep)?,
    })
}

/// Every result valid, or which are not (and that their numbers are withheld).
fn verdict(rep: &BenchReport) -> Verdict {
    let bad: Vec<&str> = (rep.scenarios.iter().filter(|s| !s.valid))
        .map(|s| s.name.as_str())
        .collect();
    let total = rep.scenarios.len();
    let (text, tone) = match (total, bad.len()) {
        (0, _) => ("INVALID: no scenario ran".to_string(), Tone::Bad),
        (_, 0) => (
            format!("every result valid ({total} scenarios)"),
            Tone::Good,
        ),
        (_, n) => (
            format!(
                "INVALID: {} ({n} of {total} scenarios); their numbers are withheld",
                bad.join(", ")
            ),
            Tone::Bad,
        ),
    };
    Verdict {
        text: vec![t(format!("rtcheck bench fanout: {text}"))],
        tone,
    }
}

fn setup(rep: &BenchReport) -> Block {
    let n = |path: &str, v: u64| num(path, fmt_num(v as f64));
    Block::Para {
        id: Some("setup".into()),
        spans: vec![
            n("connections", rep.connections),
            t(" connections ("),
            n("slow", rep.slow),
            t(" slow), "),
            n("rounds", rep.rounds),
            t(" rounds x "),
            n("size", rep.size),
            t(" B at "),
            num("rate", fmt_num(rep.rate)),
            t(format!("/s, server {}, ", rep.server)),
            n("host_cores", rep.host_cores),
            t(" cores (server and load generator share them)"),
        ],
    }
}

fn ms(path: String, v: Option<f64>) -> Span {
    v.map_or(t("-"), |x| num(path, fmt_ms(Some(x))))
}

fn count(path: String, v: Option<u64>) -> Span {
    v.map_or(t("-"), |x| num(path, fmt_num(x as f64)))
}

/// The ratio to the floor F (`x1.20`), or "F noisy" when F measured a higher percentile
/// than the scenario it bounds: a ratio below 1 would read as if the scenario beat what
/// the host can do at best.
fn ratio(path: String, v: Option<f64>) -> Vec<Span> {
    match v {
        None => vec![t("-")],
        Some(x) if x < 1.0 => vec![t("F noisy")],
        Some(x) => vec![t("x"), num(path, format!("{x:.2}"))],
    }
}

/// A cell of several parts (`12/12`, `x1.20`, `1.5 / 3.0`) as one plain span: a table
/// holds one span per cell (the parts' numbers are tagged in the tables beside it).
fn joined(spans: Vec<Span>) -> Span {
    match spans.len() {
        1 => spans.into_iter().next().unwrap_or(t("-")),
        _ => t(crate::report::doc::plain(&spans)),
    }
}

/// A row of a scenario: its name, then its cells, or the reason they are withheld.
fn row(s: &ScenarioResult, cells: impl FnOnce() -> Vec<Span>) -> Row {
    let mut v = vec![t(&s.name)];
    match s.valid {
        true => v.extend(cells()),
        false => v.push(Span::Withheld(match s.notes.is_empty() {
            true => "INVALID".into(),
            false => s.notes.join("; "),
        })),
    }
    Row {
        key: Some(s.name.clone()),
        cells: v,
    }
}

fn rounds(i: usize, s: &ScenarioResult) -> Span {
    joined(vec![
        num(
            format!("scenarios.{i}.rounds_completed"),
            s.rounds_completed.to_string(),
        ),
        t("/"),
        num(
            format!("scenarios.{i}.rounds_total"),
            s.rounds_total.to_string(),
        ),
    ])
}

/// Which latency table a column is in: the compact one text shows, the full one
/// (markdown, html, text under --explain), or both.
#[derive(Clone, Copy, PartialEq)]
enum In {
    Both,
    Compact,
    Full,
}

type Cell = fn(usize, &ScenarioResult) -> Span;

/// The JSON path of scenario `i`'s `k`, which tags its number.
fn key(i: usize, k: &str) -> String {
    format!("scenarios.{i}.{k}")
}

/// Both latency tables' columns in order, one list: the compact table cannot drift
/// from the full one.
fn latency_columns() -> [(In, Column, Cell); 11] {
    [
        (In::Both, Column::num("p50", "ms"), |i, s| {
            ms(key(i, "p50_ms"), s.p50_ms)
        }),
        (In::Both, Column::num("p99", "ms"), |i, s| {
            ms(key(i, "p99_ms"), s.p99_ms)
        }),
        (In::Both, Column::num("p99.9", "ms"), |i, s| {
            ms(key(i, "p999_ms"), s.p999_ms)
        }),
        (In::Both, Column::num("max", "ms"), |i, s| {
            ms(key(i, "max_ms"), s.max_ms)
        }),
        (In::Full, Column::count(">100ms"), |i, s| {
            count(key(i, "over_100ms"), s.over_100ms)
        }),
        (In::Both, Column::count(">1s"), |i, s| {
            count(key(i, "over_1s"), s.over_1s)
        }),
        (In::Both, Column::count("rounds"), rounds),
        (In::Compact, Column::count("drops"), |i, s| {
            count(key(i, "drops"), s.drops)
        }),
        (
            In::Full,
            Column::num("last client med/max", "ms"),
            |i, s| {
                pair(
                    ms(key(i, "last_client_median_ms"), s.last_client_median_ms),
                    ms(key(i, "last_client_max_ms"), s.last_client_max_ms),
                )
            },
        ),
        (In::Both, Column::count("p99/F"), |i, s| {
            joined(ratio(key(i, "p99_vs_floor"), s.p99_vs_floor))
        }),
        (In::Full, Column::count("p99.9/F"), |i, s| {
            joined(ratio(key(i, "p999_vs_floor"), s.p999_vs_floor))
        }),
    ]
}

/// The compact latency table (`latency`) or the full one (`latency-full`).
fn latency_table(rep: &BenchReport, full: bool) -> Table {
    let wanted = |w: In| w == In::Both || (w == In::Full) == full;
    let (columns, cells): (Vec<Column>, Vec<Cell>) = latency_columns()
        .into_iter()
        .filter(|(w, ..)| wanted(*w))
        .map(|(_, c, cell)| (c, cell))
        .unzip();
    let rows = rep
        .scenarios
        .iter()
        .enumerate()
        .map(|(i, s)| row(s, || cells.iter().map(|cell| cell(i, s)).collect()));
    Table {
        id: if full { "latency-full" } else { "latency" }.into(),
        columns: std::iter::once(Column::text("scenario"))
            .chain(columns)
            .collect(),
        rows: rows.collect(),
    }
}

/// Two values in one cell: `median / max`.
fn pair(a: Span, b: Span) -> Span {
    joined(vec![a, t(" / "), b])
}

/// The server's own numbers (an invalid scenario's withheld like the rest).
fn server_table(rep: &BenchReport) -> Table {
    let rows = rep.scenarios.iter().enumerate().map(|(i, s)| {
        let p = |k: &str| format!("scenarios.{i}.{k}");
        let one =
            |k: &str, v: Option<f64>, d: usize| v.map_or(t("-"), |x| num(p(k), format!("{x:.d$}")));
        let growth = s.server_process.as_ref().map_or(t("-"), |x| {
            num(
                p("server_process.rss_growth_mb_per_s"),
                format!("{:+.2}", x.rss_growth_mb_per_s),
            )
        });
        row(s, || {
            vec![
                pair(
                    ms(p("hub_median_ms"), s.hub_median_ms),
                    ms(p("hub_max_ms"), s.hub_max_ms),
                ),
                count(p("drops"), s.drops),
                count(p("removed"), s.removed),
                one("server_rss_mb", s.server_rss_mb, 0),
                growth,
                one("server_cpu_s", s.server_cpu_s, 1),
                one("client_cpu_s", Some(s.client_cpu_s), 1),
                ms(p("round_start_drift_max_ms"), s.round_start_drift_max_ms),
            ]
        })
    });
    Table {
        id: "server".into(),
        columns: vec![
            Column::text("scenario"),
            Column::num("hub med/max", "ms"),
            Column::count("drops"),
            Column::count("removed"),
            Column::num("server peak RSS", "MB"),
            Column::num("RSS growth", "MB/s"),
            Column::num("server CPU", "s"),
            Column::num("client CPU", "s"),
            Column::num("start drift max", "ms"),
        ],
        rows: rows.collect(),
    }
}

/// A floor that measured a higher p99 than a scenario it bounds: said once, in words.
fn noisy_floor(rep: &BenchReport) -> Option<String> {
    let f = rep.scenarios.iter().find(|s| s.name == "F" && s.valid)?;
    let below: Vec<&str> = (rep.scenarios.iter())
        .filter(|s| s.valid && s.p99_vs_floor.is_some_and(|x| x < 1.0))
        .map(|s| s.name.as_str())
        .collect();
    (!below.is_empty()).then(|| {
        format!(
            "F noisy: the floor measured p99 {} ms, above {}; at this size the floor is noise, so no ratio to it is shown there. Re-run with more connections or rounds for a floor that bounds.",
            fmt_ms(f.p99_ms),
            below.join(", ")
        )
    })
}

/// A scenario: one item (its verdict, shape, the checks that did not pass or under
/// `explain` all, its notes, the seed's figures), then for a valid run its plots and
/// percentiles.
fn scenario(
    i: usize,
    s: &ScenarioResult,
    floor: Option<&ScenarioResult>,
    explain: bool,
) -> Vec<Block> {
    let word = if s.valid { "valid" } else { "INVALID" };
    let mut lines = Vec::new();
    let shape = s.shape.as_ref().map(|v| v.verdict.as_str());
    if let Some(v) = &s.shape {
        lines.push(vec![t(format!(
            "shape {} [evidence: {}]",
            v.verdict, v.evidence
        ))]);
    }
    for c in (s.checks.iter()).filter(|c| explain || c.status != Status::Pass) {
        lines.push(vec![
            status(c.status),
            t(format!(" {}: {}", c.name, c.detail)),
        ]);
    }
    for n in (s.notes.iter()).filter(|n| shape.is_none_or(|v| !n.starts_with(v))) {
        lines.push(vec![t(format!("note {n}"))]);
    }
    if let (true, Some(e)) = (explain, &s.reference) {
        lines.push(vec![t(format!(
            "seed {} ({}: Go + gorilla, 10,000 clients, 10 vCPU)",
            e.claim, e.source
        ))]);
    }
    let mut v = vec![Block::Item(Item {
        id: Some(format!("scenario-{}", s.name)),
        tone: if s.valid { Tone::Good } else { Tone::Bad },
        head: vec![strong(&s.name), t(format!(" {word}: {}", s.description))],
        lines,
    })];
    if s.valid {
        v.push(Block::Figure(distribution(s, floor)));
        v.push(Block::Figure(per_round(s)));
        v.push(Block::Wide(percentiles(i, s)));
    }
    v
}

fn pct_points(s: &ScenarioResult) -> Vec<Option<(f64, f64)>> {
    (s.percentiles.iter())
        .map(|p| Some((p.percentile, p.ms)))
        .collect()
}

/// Latency by percentile against the raw-TCP floor F.
fn distribution(s: &ScenarioResult, floor: Option<&ScenarioResult>) -> Figure {
    let mut series = vec![Series {
        name: s.name.clone(),
        colour: Colour::Blue,
        points: pct_points(s),
    }];
    let against = match floor {
        Some(f) if f.name != s.name => {
            series.push(Series {
                name: "F (floor)".into(),
                colour: Colour::Grey,
                points: pct_points(f),
            });
            "against the raw-TCP floor F"
        }
        Some(_) => "the raw-TCP floor itself",
        None => "no valid floor F in this run",
    };
    Figure {
        id: format!("distribution-{}", s.name),
        caption: format!("{}: latency by percentile (log axes), {against}", s.name),
        axes: ("percentile".into(), "latency (ms)".into()),
        y: Scale::LogMs,
        shape: Shape::Percentiles,
        series,
    }
}

/// Per round, the last client's latency and the hub's time (gaps: nobody received it).
fn per_round(s: &ScenarioResult) -> Figure {
    let at = |f: fn(&crate::bench::model::RoundPoint) -> Option<f64>| {
        (s.per_round.iter())
            .map(|r| f(r).map(|v| (r.round as f64, v)))
            .collect::<Vec<_>>()
    };
    let hub = at(|r| r.hub_ms);
    let has_hub = hub.iter().any(Option::is_some);
    // The hub first, so the last client's line is drawn on top where they meet.
    let mut series = Vec::new();
    if has_hub {
        series.push(Series {
            name: "hub".into(),
            colour: Colour::Green,
            points: hub,
        });
    }
    series.push(Series {
        name: "last client".into(),
        colour: Colour::Red,
        points: at(|r| r.last_client_ms),
    });
    let no_hub = if has_hub {
        ""
    } else {
        " (the server reports no hub time)"
    };
    Figure {
        id: format!("rounds-{}", s.name),
        caption: format!(
            "{}: per round, the last client's latency and the hub's time{no_hub} (gaps: nobody received the round)",
            s.name
        ),
        axes: ("round".into(), "ms".into()),
        y: Scale::Ms,
        shape: Shape::Lines,
        series,
    }
}

/// The scenario's latency at each percentile measured.
fn percentiles(i: usize, s: &ScenarioResult) -> Table {
    let mut columns = vec![Column::text("scenario")];
    let mut cells = vec![t(&s.name)];
    for (j, p) in s.percentiles.iter().enumerate() {
        columns.push(Column::num(&format!("p{}", p.percentile), "ms"));
        let path = format!("scenarios.{i}.percentiles.{j}.ms");
        cells.push(num(path, crate::report::html::fmt_ms(p.ms)));
    }
    Table {
        id: format!("percentiles-{}", s.name),
        columns,
        rows: vec![Row { key: None, cells }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc::{html, markdown, text};
    use crate::report::Palette;

    /// A real 60-client run of every scenario (its floor F is noisy: C3, G1, G3 beat it).
    fn small() -> BenchReport {
        let text = include_str!("../../tests/fixtures/bench/fanout-small.json");
        serde_json::from_str(text).unwrap()
    }

    fn text_at(rep: &BenchReport, width: usize, explain: bool) -> String {
        let doc = bench_doc(rep, explain).unwrap();
        text::render(&doc, &Palette::plain().with_width(width))
    }

    #[test]
    fn both_latency_tables_come_from_one_column_list() {
        let rep = small();
        let names = |t: &Table| t.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        let (c, f) = (latency_table(&rep, false), latency_table(&rep, true));
        assert_eq!((c.id.as_str(), f.id.as_str()), ("latency", "latency-full"));
        let compact = [
            "p50", "p99", "p99.9", "max", ">1s", "rounds", "drops", "p99/F",
        ];
        assert_eq!(names(&c)[1..], compact);
        let full = [
            "p50",
            "p99",
            "p99.9",
            "max",
            ">100ms",
            ">1s",
            "rounds",
            "last client med/max",
            "p99/F",
            "p99.9/F",
        ];
        assert_eq!(names(&f)[1..], full);
        // A valid scenario's row has a cell per column, in the column's order.
        for t in [&c, &f] {
            for (r, s) in t.rows.iter().zip(&rep.scenarios) {
                if s.valid {
                    assert_eq!(r.cells.len(), t.columns.len(), "{}", t.id);
                }
            }
        }
        let a = rep.scenarios.iter().position(|s| s.valid).unwrap();
        let p99 = crate::report::doc::plain(&c.rows[a].cells[2..3]);
        assert_eq!(p99, crate::report::doc::plain(&f.rows[a].cells[2..3]));
    }

    #[test]
    fn fanout_text_opens_with_the_verdict_and_fits_the_width() {
        let rep = small();
        for (width, explain) in [(80, false), (80, true), (120, false), (120, true)] {
            let text = text_at(&rep, width, explain);
            assert!(
                text.starts_with("rtcheck bench fanout: every result valid (8 scenarios)\n"),
                "{text}"
            );
            let wide: Vec<&str> = text.lines().filter(|l| l.chars().count() > width).collect();
            assert!(wide.is_empty(), "{width}: {wide:#?}\n{text}");
            // Passing checks only under --explain.
            let passes = text.lines().filter(|l| l.starts_with("  pass ")).count();
            assert_eq!(passes > 0, explain, "{text}");
            // The noisy floor is said, never shown as a ratio below 1.
            assert!(text.contains("F noisy"), "{text}");
            assert!(!text.contains("x0."), "{text}");
            // The full tables only under --explain.
            assert_eq!(text.contains("Server and hosts:"), explain, "{text}");
        }
    }

    /// A run that spoke a library protocol says which and why, within the width.
    #[test]
    fn the_protocol_spoken_is_said() {
        let mut rep = small();
        assert!(!text_at(&rep, 80, false).contains("protocol spoken"));
        rep.app_protocol = Some(crate::bench::appws::Spoken {
            protocol: "socketio".into(),
            why: "the query names Engine.IO (EIO=4)".into(),
        });
        let text = text_at(&rep, 80, false);
        let line = (text.lines())
            .find(|l| l.trim_start().starts_with("protocol spoken: "))
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(
            line.trim(),
            "protocol spoken: socketio (the query names Engine.IO (EIO=4))"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }

    /// C1 made invalid: the verdict names it, its failed check is said, and no format
    /// shows one of its numbers.
    #[test]
    fn failed_checks_are_shown_and_invalid_rows_withhold_numbers() {
        let mut rep = small();
        let c1 = rep.scenarios.iter_mut().find(|s| s.name == "C1").unwrap();
        c1.valid = false;
        c1.checks[0].status = Status::Fail;
        c1.checks[0].detail = "0 samples".into();
        c1.notes = vec!["INVALID: samples received: 0 samples".into()];
        let at = rep.scenarios.iter().position(|s| s.name == "C1").unwrap();
        rep.valid = false;
        let text = text_at(&rep, 80, false);
        assert!(
            text.starts_with("rtcheck bench fanout: INVALID: C1 (1 of 8 scenarios)"),
            "{text}"
        );
        assert!(
            text.contains("  fail samples received: 0 samples"),
            "{text}"
        );
        let row = (text.lines())
            .find(|l| l.trim_start_matches(['│', ' ']).starts_with("C1 "))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(row.contains("INVALID") && !row.contains("10/10"), "{row}");
        let doc = bench_doc(&rep, true).unwrap();
        let md = markdown::render(&doc);
        let md_row = (md.lines())
            .find(|l| l.starts_with("| C1 |"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(
            md_row.contains("**INVALID**: INVALID: samples received"),
            "{md_row}"
        );
        let page = html::render(&doc);
        assert!(
            !page.contains(&format!("data-path=\"scenarios.{at}.")),
            "{page}"
        );
        assert!(
            !page.contains("data-plot=\"distribution-C1\""),
            "no plot of it"
        );
        assert!(page.contains("data-plot=\"distribution-A\""), "{page}");
    }

    /// The markdown table's numbers are the report's, parsed back.
    #[test]
    fn markdown_rows_carry_the_runs_numbers() {
        let rep = small();
        let md = markdown::render(&bench_doc(&rep, false).unwrap());
        let a = rep.scenarios.iter().find(|s| s.name == "A").unwrap();
        let cells: Vec<String> = (md.lines())
            .find(|l| l.starts_with("| A |"))
            .unwrap_or_else(|| panic!("{md}"))
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().replace(',', ""))
            .collect();
        let p50: f64 = cells[1].parse().unwrap();
        assert!((p50 - a.p50_ms.unwrap()).abs() <= 0.05, "{cells:?}");
        assert_eq!(
            cells[6],
            format!("{}/{}", a.rounds_completed, a.rounds_total)
        );
        assert!(md.contains("| p99.9 (ms) |"), "{md}");
    }
}
