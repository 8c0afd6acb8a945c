//! `rtcheck budget` as one [`Doc`]: the four ways (sequential/parallel x new/reused)
//! computed from the hops, beside the live run when there is one; the hops, the tail,
//! deadline and hedge, the findings. An invalid live run shows its reason, never its
//! numbers. Written once for text, markdown and html.
use crate::budget::model::{BudgetReport, Hop, Live};
use crate::report::doc::{
    num, strong, t, Block, Colour, Column, Doc, Plot, PlotSeries, Row, Span, Table, Tone, Verdict,
};

/// The four ways: label, short label (plot), JSON key (the same key in the report,
/// `live` and `live.computed`).
const WAYS: [(&str, &str, &str); 4] = [
    ("sequential", "seq new", "sequential_ms"),
    ("parallel", "par new", "parallel_ms"),
    ("seq reused", "seq reused", "sequential_reused_ms"),
    ("par reused", "par reused", "parallel_reused_ms"),
];

fn ms(path: impl Into<String>, v: f64) -> Span {
    num(path, format!("{v:.1}"))
}

pub fn doc(r: &BudgetReport) -> anyhow::Result<Doc> {
    let live = r.live.as_ref().filter(|l| l.invalid.is_none());
    let mut blocks = vec![ways(r, live), plot(r, live)];
    blocks.extend(tail(r));
    blocks.push(Block::Section("Hops".into()));
    blocks.push(hops("hops", "hops", &r.hops));
    if let Some(l) = &r.live {
        blocks.extend(live_blocks(l));
    }
    blocks.push(Block::Findings(r.findings.clone()));
    blocks.push(Block::Note(format!("model: {}", r.model)));
    Ok(Doc {
        title: "rtcheck budget".into(),
        verdict: verdict(r),
        blocks,
        json: crate::report::json::render(r)?,
    })
}

fn verdict(r: &BudgetReport) -> Verdict {
    if let Some(why) = r.live.as_ref().and_then(|l| l.invalid.as_deref()) {
        return Verdict {
            text: vec![t(format!("INVALID live run: {why}"))],
            tone: Tone::Bad,
        };
    }
    let n = r.hops.len();
    Verdict {
        text: vec![
            t(format!(
                "{n} hop{}: sequential ",
                if n == 1 { "" } else { "s" }
            )),
            ms("sequential_ms", r.sequential_ms),
            t(" ms, parallel "),
            ms("parallel_ms", r.parallel_ms),
            t(" ms (slowest hop "),
            strong(&r.slowest_hop.name),
            t(", "),
            ms("slowest_hop.ms", r.slowest_hop.ms),
            t(" ms)"),
        ],
        tone: Tone::worst(r.findings.iter().map(|f| f.status)),
    }
}

fn ways(r: &BudgetReport, live: Option<&Live>) -> Block {
    let computed = [
        r.sequential_ms,
        r.parallel_ms,
        r.sequential_reused_ms,
        r.parallel_reused_ms,
    ];
    let mut columns = vec![Column::text("way"), Column::num("computed", "ms")];
    if live.is_some() {
        columns.push(Column::num("live", "ms"));
        columns.push(Column::num("live, from its hops", "ms"));
    }
    let rows = WAYS
        .iter()
        .enumerate()
        .map(|(i, (label, _, key))| {
            let mut cells = vec![t(*label), ms(*key, computed[i])];
            if let Some(l) = live {
                let c = &l.computed;
                let m = [
                    l.sequential_ms,
                    l.parallel_ms,
                    l.sequential_reused_ms,
                    l.parallel_reused_ms,
                ];
                let x = [
                    c.sequential_ms,
                    c.parallel_ms,
                    c.sequential_reused_ms,
                    c.parallel_reused_ms,
                ];
                cells.push(ms(format!("live.{key}"), m[i]));
                cells.push(ms(format!("live.computed.{key}"), x[i]));
            }
            Row {
                key: Some((*key).into()),
                cells,
            }
        })
        .collect();
    Block::Table(Table {
        id: "ways".into(),
        columns,
        rows,
    })
}

fn plot(r: &BudgetReport, live: Option<&Live>) -> Block {
    let mut series = vec![PlotSeries {
        name: "computed".into(),
        colour: Colour::Blue,
        values: vec![
            r.sequential_ms,
            r.parallel_ms,
            r.sequential_reused_ms,
            r.parallel_reused_ms,
        ],
    }];
    if let Some(l) = live {
        let c = &l.computed;
        series.push(PlotSeries {
            name: "live, measured".into(),
            colour: Colour::Green,
            values: vec![
                l.sequential_ms,
                l.parallel_ms,
                l.sequential_reused_ms,
                l.parallel_reused_ms,
            ],
        });
        series.push(PlotSeries {
            name: "live, computed".into(),
            colour: Colour::Grey,
            values: vec![
                c.sequential_ms,
                c.parallel_ms,
                c.sequential_reused_ms,
                c.parallel_reused_ms,
            ],
        });
    }
    Block::Plot(Plot {
        id: "ways".into(),
        caption: "the request's time the four ways: sequential or parallel calls, new or reused connections".into(),
        axes: ("way".into(), "ms".into()),
        categories: WAYS.iter().map(|w| w.1.to_string()).collect(),
        series,
    })
}

/// As configured, the fan-out tail, the deadline, the hedge and the budget.
fn tail(r: &BudgetReport) -> Vec<Block> {
    let para = |id: &str, spans: Vec<Span>| Block::Para {
        id: Some(id.into()),
        spans,
    };
    let mut v = vec![
        para(
            "configured",
            vec![
                t("as configured (each hop's own reuse): sequential "),
                ms("as_configured.sequential_ms", r.as_configured.sequential_ms),
                t(" ms, parallel "),
                ms("as_configured.parallel_ms", r.as_configured.parallel_ms),
                t(" ms"),
            ],
        ),
        para(
            "tail",
            vec![
                t("fan-out tail: "),
                // In percent: the JSON holds the fraction, so the figure is not tagged.
                t(format!(
                    "{:.1}% of requests meet a hop at its p99 (1 - 0.99^{})",
                    r.tail_amplification * 100.0,
                    r.hops.len()
                )),
            ],
        ),
    ];
    if let Some(x) = &r.tail {
        v.push(para(
            "tail-p99",
            vec![
                t(format!("at the p99 of {}: parallel ", x.hop)),
                ms("tail.parallel_p99_ms", x.parallel_p99_ms),
                t(" ms"),
            ],
        ));
    }
    if let Some(d) = &r.deadline {
        v.push(para(
            "deadline",
            vec![
                t("deadline "),
                num("deadline.deadline_ms", format!("{:.0}", d.deadline_ms)),
                t(" ms per call: parallel "),
                ms("deadline.parallel_ms", d.parallel_ms),
                t(" ms, p99 "),
                ms("deadline.parallel_p99_ms", d.parallel_p99_ms),
                t(format!(
                    " ms; always cut: {}; tail cut: {}",
                    list(&d.always_cut),
                    list(&d.tail_cut)
                )),
            ],
        ));
    }
    if let Some(h) = &r.hedge {
        v.push(para(
            "hedge",
            vec![
                t("hedge after "),
                num("hedge.after_ms", format!("{:.0}", h.after_ms)),
                t(" ms: p99 "),
                ms("hedge.parallel_p99_ms", h.parallel_p99_ms),
                t(" ms for at most "),
                num(
                    "hedge.extra_calls_max_pct",
                    format!("{:.0}", h.extra_calls_max_pct),
                ),
                t("% extra calls"),
            ],
        ));
    }
    if let Some(b) = r.budget_ms {
        v.push(para(
            "budget",
            vec![t("budget: "), num("budget_ms", format!("{b:.0}")), t(" ms")],
        ));
    }
    v
}

fn hops(id: &str, path: &str, hops: &[Hop]) -> Block {
    let rows = hops
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let p = |k: &str| format!("{path}.{i}.{k}");
            Row {
                key: None,
                cells: vec![
                    t(&h.name),
                    ms(p("rtt_ms"), h.rtt_ms),
                    ms(p("server_time_ms"), h.server_time_ms),
                    h.p99_ms.map_or(t("-"), |v| ms(p("p99_ms"), v)),
                    t(if h.reuse { "yes" } else { "no" }),
                ],
            }
        })
        .collect();
    Block::Table(Table {
        id: id.into(),
        columns: vec![
            Column::text("hop"),
            Column::num("RTT", "ms"),
            Column::num("server time", "ms"),
            Column::num("p99", "ms"),
            Column::text("reused"),
        ],
        rows,
    })
}

fn live_blocks(l: &Live) -> Vec<Block> {
    let mut v = vec![
        Block::Section("Live run".into()),
        Block::Para {
            id: None,
            spans: vec![
                num("live.rounds", l.rounds.to_string()),
                t(format!(
                    " rounds (medians), TCP_NODELAY on the client {}; URLs: {}",
                    if l.tcp_nodelay { "on" } else { "off" },
                    l.urls.join(", ")
                )),
            ],
        },
    ];
    match &l.invalid {
        Some(why) => v.push(Block::Invalid {
            id: "live-invalid".into(),
            why: why.clone(),
        }),
        None => v.push(hops("live-hops", "live.hops", &l.hops)),
    }
    v
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}
