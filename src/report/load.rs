//! `rtcheck load` as one [`Doc`]: the verdict (every level valid, the knee), the run's
//! setup, the levels (an invalid level is a row with its reasons, never numbers),
//! throughput and p99 against concurrency with the knee marked, the order of reaction and
//! the findings. Written once for text, markdown and html.
use crate::evidence::fmt_num;
use crate::load::model::{Level, LoadReport};
use crate::report::doc::{
    num, t, Block, Colour, Column, Doc, Figure, Row, Scale, Series, Shape, Span, Table, Tone,
    Verdict,
};
use crate::report::html::fmt_ms;

pub fn load_doc(r: &LoadReport) -> anyhow::Result<Doc> {
    let mut blocks = vec![setup(r), knee(r), Block::Section("Levels".into())];
    blocks.push(Block::Note(format!(
        "errors count answers later than the timeout ({} ms) beside failures; W = C/X is Little's law (closed loop), to agree with the mean within {}%; saturation is the target's busy workers (--metrics); loadgen CPU is the load generator's own",
        fmt_num(r.timeout_ms),
        fmt_num(r.littles_law_tolerance_pct)
    )));
    blocks.push(latency_table(r));
    blocks.push(load_table(r));
    blocks.extend(plots(r));
    blocks.push(Block::Section("Order of reaction".into()));
    blocks.push(reaction(r));
    blocks.push(Block::Findings(r.findings.clone()));
    Ok(Doc {
        title: "rtcheck load".into(),
        verdict: verdict(r),
        blocks,
        json: crate::report::json::render(r)?,
    })
}

fn verdict(r: &LoadReport) -> Verdict {
    let invalid: Vec<String> = (r.levels.iter().filter(|l| !l.valid))
        .map(|l| format!("C = {}", l.concurrency))
        .collect();
    if !invalid.is_empty() {
        return Verdict {
            text: vec![t(format!(
                "INVALID: {} (no numbers shown for them)",
                invalid.join(", ")
            ))],
            tone: Tone::Bad,
        };
    }
    let knee = r
        .knee
        .as_ref()
        .map_or("no knee within the sweep".into(), |k| {
            format!("knee at C = {}", k.concurrency)
        });
    Verdict {
        text: vec![t(format!("every level valid ({}); {knee}", r.levels.len()))],
        tone: Tone::worst(r.findings.iter().map(|f| f.status)),
    }
}

fn setup(r: &LoadReport) -> Block {
    Block::Para {
        id: Some("setup".into()),
        spans: vec![
            t(format!(
                "{} {}: {} loop, latency from the {}; {} level(s) x ",
                r.method,
                r.url,
                r.mode,
                r.latency_from,
                r.levels.len()
            )),
            num("step_ms", fmt_num(r.step_ms)),
            t(" ms, timeout "),
            num("timeout_ms", fmt_num(r.timeout_ms)),
            t(" ms, Little's law within "),
            num(
                "littles_law_tolerance_pct",
                fmt_num(r.littles_law_tolerance_pct),
            ),
            t(format!(
                "%; client TCP_NODELAY {}, engine {}",
                if r.client_tcp_nodelay { "on" } else { "off" },
                r.client_engine.as_str()
            )),
        ],
    }
}

fn knee(r: &LoadReport) -> Block {
    let spans = match &r.knee {
        Some(k) => vec![
            t("knee at C = "),
            num("knee.concurrency", k.concurrency.to_string()),
            t(": "),
            num("knee.throughput_rps", format!("{:.1}", k.throughput_rps)),
            t(" req/s, p99 "),
            num("knee.p99_ms", fmt_ms(k.p99_ms)),
            t(" ms; from there to C = "),
            num("knee.last_concurrency", k.last_concurrency.to_string()),
            t(" throughput grew "),
            num(
                "knee.throughput_gain_pct",
                format!("{:.1}", k.throughput_gain_pct),
            ),
            t("% while p99 grew x"),
            num("knee.p99_factor", format!("{:.2}", k.p99_factor)),
        ],
        None => vec![t(
            "no knee within the sweep: throughput kept growing or the tail did not multiply",
        )],
    };
    Block::Para {
        id: Some("knee".into()),
        spans,
    }
}

/// A level's row: its concurrency (the knee marked), then its cells or why they are
/// withheld.
fn row(r: &LoadReport, l: &Level, cells: impl FnOnce() -> Vec<Span>) -> Row {
    let knee = r.knee.as_ref().map(|k| k.concurrency) == Some(l.concurrency);
    let c = match knee {
        true => format!("{} (knee)", l.concurrency),
        false => l.concurrency.to_string(),
    };
    let mut v = vec![t(c)];
    match l.valid {
        true => v.extend(cells()),
        false => v.push(Span::Withheld(l.invalid.join("; "))),
    }
    Row {
        key: Some(l.concurrency.to_string()),
        cells: v,
    }
}

fn latency_table(r: &LoadReport) -> Block {
    let rows = r.levels.iter().enumerate().map(|(i, l)| {
        let p = |k: &str| format!("levels.{i}.{k}");
        let f1 = |k: &str, v: f64| num(p(k), format!("{v:.1}"));
        row(r, l, || {
            vec![
                f1("throughput_rps", l.throughput_rps),
                num(p("p50_ms"), fmt_ms(l.p50_ms)),
                num(p("p99_ms"), fmt_ms(l.p99_ms)),
                num(p("max_ms"), fmt_ms(l.max_ms)),
                f1("mean_ms", l.mean_ms),
                l.littles_law_w_ms
                    .map_or(t("-"), |w| f1("littles_law_w_ms", w)),
                num(p("error_rate"), format!("{:.2}", l.error_rate)),
            ]
        })
    });
    Block::Table(Table {
        id: "levels".into(),
        columns: vec![
            Column::text("C"),
            Column::num("throughput", "req/s"),
            Column::num("p50", "ms"),
            Column::num("p99", "ms"),
            Column::num("max", "ms"),
            Column::num("mean", "ms"),
            Column::num("W = C/X", "ms"),
            Column::num("errors", "%"),
        ],
        rows: rows.collect(),
    })
}

/// What each level asked and what held it back: requests, errors by kind, the target's
/// saturation, the load generator's CPU.
fn load_table(r: &LoadReport) -> Block {
    let rows = r.levels.iter().enumerate().map(|(i, l)| {
        let p = |k: &str| format!("levels.{i}.{k}");
        let kinds: Vec<String> = (l.errors_by_kind.iter())
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let sat = l
            .saturation
            .as_ref()
            .map_or("-".into(), |s| match s.saturation_pct {
                Some(pct) => format!("{pct:.0}%"),
                None => format!("{:.1} busy", s.busy_mean),
            });
        row(r, l, || {
            vec![
                num(p("requests"), l.requests.to_string()),
                num(p("errors"), l.errors.to_string()),
                t(if kinds.is_empty() {
                    "-".into()
                } else {
                    kinds.join(", ")
                }),
                t(sat),
                num(p("loadgen_cpu_pct"), format!("{:.0}", l.loadgen_cpu_pct)),
            ]
        })
    });
    Block::Table(Table {
        id: "levels-load".into(),
        columns: vec![
            Column::text("C"),
            Column::count("requests"),
            Column::count("errors"),
            Column::text("errors by kind"),
            Column::text("saturation"),
            Column::num("loadgen CPU", "%"),
        ],
        rows: rows.collect(),
    })
}

/// Throughput and p99 against concurrency (log2 axis), an invalid level a gap in the
/// line, the knee a vertical red line.
fn plots(r: &LoadReport) -> Vec<Block> {
    let valid: Vec<&Level> = r.levels.iter().filter(|l| l.valid).collect();
    if valid.is_empty() {
        return vec![Block::Invalid {
            id: "plots".into(),
            why: "no valid level to plot".into(),
        }];
    }
    let line = |name: &str, colour, f: fn(&Level) -> f64| Series {
        name: name.into(),
        colour,
        points: (r.levels.iter())
            .map(|l| l.valid.then(|| (l.concurrency as f64, f(l))))
            .collect(),
    };
    let top = |f: fn(&Level) -> f64| valid.iter().map(|l| f(l)).fold(0.0, f64::max);
    let knee = |top: f64| {
        r.knee.as_ref().map(|k| Series {
            name: "knee".into(),
            colour: Colour::Red,
            points: vec![
                Some((k.concurrency as f64, 0.0)),
                Some((k.concurrency as f64, top)),
            ],
        })
    };
    let figure = |id: &str, caption: &str, y: &str, f: fn(&Level) -> f64, colour| {
        let mut series = vec![line(id, colour, f)];
        series.extend(knee(top(f)));
        Block::Figure(Figure {
            id: id.into(),
            caption: caption.into(),
            axes: ("concurrency".into(), y.into()),
            y: Scale::Ms,
            shape: Shape::LinesLog2,
            series,
        })
    };
    vec![
        figure(
            "throughput",
            "successful answers per second at each concurrency (a gap: an invalid level); the knee in red",
            "req/s",
            |l| l.throughput_rps,
            Colour::Blue,
        ),
        figure(
            "p99",
            "p99 latency at each concurrency (a gap: an invalid level); the knee in red",
            "p99 (ms)",
            |l| l.p99_ms,
            Colour::Green,
        ),
    ]
}

fn reaction(r: &LoadReport) -> Block {
    let rows = r.order_of_reaction.iter().enumerate().map(|(i, x)| {
        let at = x.concurrency.map_or(t("not within the sweep"), |c| {
            num(format!("order_of_reaction.{i}.concurrency"), c.to_string())
        });
        Row {
            key: Some(x.signal.clone()),
            cells: vec![t(&x.signal), at, t(&x.rule)],
        }
    });
    Block::Table(Table {
        id: "reaction".into(),
        columns: vec![
            Column::text("signal"),
            Column::count("first at C"),
            Column::text("rule"),
        ],
        rows: rows.collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::analysis::{self, tests::lvl};
    use crate::report::doc::{html, markdown, text};
    use crate::report::Palette;

    /// A sweep past a pool's capacity: throughput flat from C = 8, p99 multiplied.
    fn sweep() -> LoadReport {
        let levels = vec![
            lvl(1, 50.0, 20.0),
            lvl(2, 100.0, 20.0),
            lvl(4, 200.0, 20.0),
            lvl(8, 201.0, 40.0),
            lvl(16, 202.0, 80.0),
        ];
        let knee = analysis::knee(&levels);
        LoadReport {
            kind: "load".into(),
            url: "http://127.0.0.1:8080/work?ms=20".into(),
            method: "GET".into(),
            mode: "closed".into(),
            latency_from: "request start".into(),
            step_ms: 700.0,
            timeout_ms: 500.0,
            littles_law_tolerance_pct: 1000.0,
            order_of_reaction: analysis::order_of_reaction(&levels, knee.as_ref()),
            findings: vec![
                crate::load::findings::littles_law(&levels, 1000.0, true),
                crate::load::findings::knee(knee.as_ref(), &levels),
                crate::load::findings::nagle(&levels),
            ],
            levels,
            knee,
            client_tcp_nodelay: true,
            client_engine: crate::load::conn::Engine::Wire,
            duration_ms: 3500.0,
        }
    }

    /// Verdict first; the levels as tables fitted to 80 columns (not gone vertical), every
    /// number of a level shown once per table; the knee marked in every format.
    #[test]
    fn levels_fit_80_columns_with_the_knee_marked() {
        let r = sweep();
        let k = r.knee.as_ref().expect("a knee past capacity").concurrency;
        let doc = load_doc(&r).unwrap();
        let text = text::render(&doc, &Palette::plain().with_width(80));
        assert!(
            text.starts_with(&format!("every level valid (5); knee at C = {k}\n")),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(text.contains("timeout 500 ms"), "{text}");
        let knee_rows = text.lines().filter(|l| l.contains(&format!("{k} (knee)")));
        assert_eq!(knee_rows.count(), 2, "both level tables, as rows:\n{text}");
        for f in &r.findings {
            assert!(text.contains(f.id.as_str()), "{}: {text}", f.id);
        }
        let md = markdown::render(&doc);
        assert!(md.contains("| C | throughput (req/s) |"), "{md}");
        let page = html::render(&doc);
        assert!(page.contains(&format!("<td>{k} (knee)</td>")), "{page}");
        assert!(page.contains("data-plot=\"throughput\"") && page.contains("data-plot=\"p99\""));
    }

    /// An invalid level: the verdict names it and no number of it is tagged; its rows say
    /// why in markdown and html, INVALID in text.
    #[test]
    fn an_invalid_level_shows_its_reason_and_no_number() {
        let mut r = sweep();
        r.levels[1].valid = false;
        r.levels[1].invalid = vec!["loadgen saturated: CPU 99% of its threads".into()];
        r.knee = None;
        let doc = load_doc(&r).unwrap();
        let text = text::render(&doc, &Palette::plain());
        assert!(text.starts_with("INVALID: C = 2 (no numbers"), "{text}");
        let page = html::render(&doc);
        assert!(!page.contains("data-path=\"levels.1."), "{page}");
        assert!(page.contains(
            "<tr class=\"invalid\" data-row=\"2\"><td>2</td><td colspan=\"7\">INVALID: loadgen saturated"
        ));
        let md = markdown::render(&doc);
        assert!(md.contains("| 2 | **INVALID**: loadgen saturated"), "{md}");
    }
}
