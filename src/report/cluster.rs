//! `rtcheck bench cluster` as one [`Doc`]: the setup, latency and delivery per scenario
//! (an invalid scenario shows its reasons, never its numbers), latency and duplicate bars,
//! then per scenario its counts, ghosts over time after a node kill, notes and checks, and
//! the seed's figures. Written once for text, markdown and html.
use crate::bench::cluster::model::{ClusterReport, ClusterScenario};
use crate::evidence::fmt_num;
use crate::report::doc::{
    num, t, Block, Colour, Column, Doc, Figure, Row, Scale, Series, Shape, Span, Table, Tone,
    Verdict,
};

pub fn cluster_doc(rep: &ClusterReport) -> anyhow::Result<Doc> {
    let mut blocks = vec![setup(rep), Block::Section("Scenarios".into())];
    blocks.push(Block::Para {
        id: None,
        spans: vec![t(
            "latency: receive - scheduled send, first copies of each message",
        )],
    });
    blocks.push(latency_table(rep));
    blocks.extend(latency_plot(rep));
    blocks.push(delivery_table(rep));
    blocks.extend(duplicates_plot(rep));
    for (i, s) in rep.scenarios.iter().enumerate() {
        blocks.extend(scenario(i, s));
    }
    if !rep.reference.is_empty() {
        blocks.push(Block::Section(format!(
            "What the article measured ({})",
            sources(rep)
        )));
        let items = rep.reference.iter();
        let items = items.map(|e| vec![t(format!("{}: {} ({})", e.id, e.claim, e.value))]);
        blocks.push(Block::List(items.collect()));
    }
    Ok(Doc {
        title: "rtcheck bench cluster".into(),
        verdict: verdict(rep),
        blocks,
        json: crate::report::json::render(rep)?,
    })
}

fn verdict(rep: &ClusterReport) -> Verdict {
    let bad: Vec<&str> = (rep.scenarios.iter().filter(|r| !r.valid))
        .map(|r| r.name.as_str())
        .collect();
    let total = rep.scenarios.len();
    match bad.len() {
        0 => Verdict {
            text: vec![t(format!("every result valid ({total} scenarios)"))],
            tone: Tone::Good,
        },
        n => Verdict {
            text: vec![t(format!(
                "INVALID: {} ({n} of {total} scenarios); their numbers are withheld",
                bad.join(", ")
            ))],
            tone: Tone::Bad,
        },
    }
}

fn setup(rep: &ClusterReport) -> Block {
    let n = |path: &str, v: u64| num(path, v.to_string());
    Block::Para {
        id: Some("setup".into()),
        spans: vec![
            n("nodes", rep.nodes),
            t(" nodes, "),
            n("connections", rep.connections),
            t(" clients spread over them, "),
            n("rounds", rep.rounds),
            t(" rounds x "),
            n("size", rep.size),
            t(" B at "),
            num("rate", fmt_num(rep.rate)),
            t(format!(
                "/s from node a; Redis: {}; presence TTL ",
                rep.redis
            )),
            num("presence_ttl_s", fmt_num(rep.presence_ttl_s)),
            t(" s; "),
            n("host_cores", rep.host_cores),
            t(" cores shared by the nodes, Redis and the clients"),
        ],
    }
}

/// A row of a scenario: its name, then its cells, or the reason they are withheld.
fn row(s: &ClusterScenario, cells: impl FnOnce() -> Vec<Span>) -> Row {
    let mut v = vec![t(&s.name)];
    match s.valid {
        true => v.extend(cells()),
        false => v.push(Span::Withheld(s.notes.join("; "))),
    }
    Row {
        key: Some(s.name.clone()),
        cells: v,
    }
}

fn ms(path: String, v: Option<f64>) -> Span {
    v.map_or(t("-"), |x| {
        num(path, crate::report::text::bench::ms(Some(x)))
    })
}

fn delta(path: String, v: Option<f64>) -> Span {
    v.map_or(t("-"), |x| num(path, format!("{x:+.1}")))
}

fn latency_table(rep: &ClusterReport) -> Block {
    let rows = rep.scenarios.iter().enumerate().map(|(i, s)| {
        let p = |k: &str| format!("scenarios.{i}.{k}");
        row(s, || {
            vec![
                num(p("nodes"), s.nodes.to_string()),
                ms(p("p50_ms"), s.p50_ms),
                ms(p("p99_ms"), s.p99_ms),
                ms(p("p999_ms"), s.p999_ms),
                delta(p("delta_p50_ms"), s.delta_p50_ms),
                delta(p("delta_p99_ms"), s.delta_p99_ms),
            ]
        })
    });
    Block::Table(Table {
        id: "scenarios".into(),
        columns: vec![
            Column::text("scenario"),
            Column::count("nodes"),
            Column::num("p50", "ms"),
            Column::num("p99", "ms"),
            Column::num("p99.9", "ms"),
            Column::num("Δp50 vs single", "ms"),
            Column::num("Δp99 vs single", "ms"),
        ],
        rows: rows.collect(),
    })
}

pub fn order(r: &ClusterScenario) -> &'static str {
    match r.order_hash_agree {
        Some(true) => "agree",
        Some(false) => "DIFFER",
        None => "-",
    }
}

/// The nodes that sent second copies: `a 60, b 2` (none: `-`).
fn by_node(r: &ClusterScenario) -> String {
    let by: Vec<String> = (r.duplicates_by_node.iter())
        .map(|(n, c)| format!("{n} {c}"))
        .collect();
    match by.is_empty() {
        true => "-".into(),
        false => by.join(", "),
    }
}

/// Losses and duplicates per scenario (received, reconnects and the order hash are in
/// each scenario's counts: more columns would not fit 80).
fn delivery_table(rep: &ClusterReport) -> Block {
    let rows = rep.scenarios.iter().enumerate().map(|(i, s)| {
        let n = |k: &str, v: u64| num(format!("scenarios.{i}.{k}"), v.to_string());
        row(s, || {
            vec![
                n("lost", s.lost),
                n("lost_silently", s.lost_silently),
                n("gap_reported", s.gap_reported),
                n("duplicates", s.duplicates),
                t(by_node(s)),
            ]
        })
    });
    Block::Table(Table {
        id: "delivery".into(),
        columns: vec![
            Column::text("scenario"),
            Column::count("lost"),
            Column::count("lost silently"),
            Column::count("gap reported"),
            Column::count("dups"),
            Column::text("dups by node"),
        ],
        rows: rows.collect(),
    })
}

fn valid(rep: &ClusterReport) -> Vec<&ClusterScenario> {
    rep.scenarios.iter().filter(|s| s.valid).collect()
}

fn bars(
    id: &str,
    caption: &str,
    axes: (&str, &str),
    y: Scale,
    names: &[&ClusterScenario],
) -> Figure {
    Figure {
        id: id.into(),
        caption: caption.into(),
        axes: (axes.0.into(), axes.1.into()),
        y,
        shape: Shape::Bars {
            categories: names.iter().map(|s| s.name.clone()).collect(),
        },
        series: Vec::new(),
    }
}

/// p50/p99/p99.9 bars per valid scenario on a log scale, single first.
fn latency_plot(rep: &ClusterReport) -> Option<Block> {
    let v: Vec<&ClusterScenario> = (valid(rep).into_iter())
        .filter(|s| s.p50_ms.is_some())
        .collect();
    if v.is_empty() {
        return None;
    }
    let pick = |f: fn(&ClusterScenario) -> Option<f64>| -> Vec<Option<(f64, f64)>> {
        let at = v.iter().enumerate();
        at.map(|(x, s)| f(s).map(|y| (x as f64, y))).collect()
    };
    let mut f = bars(
        "latency",
        "latency per scenario (receive - scheduled time), on a log scale (a Redis restart's seconds-long tail beside the sub-millisecond baseline): the single-node baseline beside the Redis scenarios; invalid scenarios left out",
        ("scenario", "ms (log scale)"),
        Scale::LogMs,
        &v,
    );
    let series = |name: &str, colour, f| Series {
        name: name.into(),
        colour,
        points: pick(f),
    };
    f.series = vec![
        series("p50", Colour::Green, |s| s.p50_ms),
        series("p99", Colour::Blue, |s| s.p99_ms),
        series("p99.9", Colour::Red, |s| s.p999_ms),
    ];
    Some(Block::Figure(f))
}

/// Duplicates per valid scenario, one bar per node that delivered a second copy (no node
/// did anywhere: one bar of totals).
fn duplicates_plot(rep: &ClusterReport) -> Option<Block> {
    let v = valid(rep);
    if v.is_empty() {
        return None;
    }
    let mut nodes: Vec<&str> = (v.iter())
        .flat_map(|s| s.duplicates_by_node.keys().map(String::as_str))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let per = |f: &dyn Fn(&ClusterScenario) -> u64| -> Vec<Option<(f64, f64)>> {
        let at = v.iter().enumerate();
        at.map(|(x, s)| Some((x as f64, f(s) as f64))).collect()
    };
    const COLOURS: [Colour; 4] = [Colour::Red, Colour::Blue, Colour::Green, Colour::Grey];
    let mut f = bars(
        "duplicates",
        "duplicate copies per scenario, by the node that delivered the second copy (one path: 0)",
        ("scenario", "duplicates"),
        Scale::Count,
        &v,
    );
    f.series = match nodes.is_empty() {
        true => vec![Series {
            name: "all nodes".into(),
            colour: Colour::Grey,
            points: per(&|s| s.duplicates),
        }],
        false => (nodes.iter().enumerate())
            .map(|(k, &n)| Series {
                name: n.into(),
                colour: COLOURS[k % COLOURS.len()],
                points: per(&|s| s.duplicates_by_node.get(n).copied().unwrap_or(0)),
            })
            .collect(),
    };
    Some(Block::Figure(f))
}

/// A scenario's section: its counts (or why it is invalid), ghosts, notes and checks.
fn scenario(i: usize, s: &ClusterScenario) -> Vec<Block> {
    let mut v = vec![Block::Section(format!("{} ({})", s.name, s.description))];
    if !s.valid {
        v.push(Block::Invalid {
            id: format!("invalid-{}", s.name),
            why: format!("no number is shown for this run: {}", s.notes.join("; ")),
        });
        v.push(Block::Checks(s.checks.clone()));
        return v;
    }
    let n = |k: &str, x: u64| num(format!("scenarios.{i}.{k}"), x.to_string());
    v.push(Block::Para {
        id: Some(format!("counts-{}", s.name)),
        spans: vec![
            t("valid: "),
            n("received", s.received),
            t(" of "),
            n("expected", s.expected),
            t(" expected messages received ("),
            n("clients", s.clients),
            t(" clients, "),
            n("reconnects", s.reconnects),
            t(" reconnects); lost "),
            n("lost", s.lost),
            t(", of them silently "),
            n("lost_silently", s.lost_silently),
            t("; duplicates "),
            n("duplicates", s.duplicates),
            t(format!("; order hash: {}", order(s))),
        ],
    });
    v.extend(ghosts(i, s));
    if !s.notes.is_empty() {
        v.push(Block::List(s.notes.iter().map(|n| vec![t(n)]).collect()));
    }
    v.push(Block::Checks(s.checks.clone()));
    v
}

/// Ghosts (presence online - clients held) against seconds since the kill, ttl vs events,
/// and per presence mode the ghosts left at the end and when they cleared.
fn ghosts(i: usize, s: &ClusterScenario) -> Vec<Block> {
    if s.ghosts.is_empty() {
        return Vec::new();
    }
    let series = (s.ghosts.iter()).map(|g| Series {
        name: g.presence.clone(),
        colour: match g.presence.as_str() {
            "ttl" => Colour::Green,
            _ => Colour::Red,
        },
        points: (g.samples.iter())
            .map(|x| Some((x.t_s, x.ghosts as f64)))
            .collect(),
    });
    let figure = Figure {
        id: format!("ghosts-{}", s.name),
        caption: format!(
            "{}: ghost users over time after one node was SIGKILLed (presence ttl vs events)",
            s.name
        ),
        axes: ("seconds after the kill".into(), "ghosts".into()),
        y: Scale::Count,
        shape: Shape::Lines,
        series: series.collect(),
    };
    let rows = s.ghosts.iter().enumerate().map(|(j, g)| {
        let p = |k: &str| format!("scenarios.{i}.ghosts.{j}.{k}");
        let last = g.samples.len().saturating_sub(1);
        let end = g.samples.last().map_or(t("-"), |x| {
            num(p(&format!("samples.{last}.ghosts")), x.ghosts.to_string())
        });
        let cleared = g
            .cleared_after_s
            .map_or(t("never"), |x| num(p("cleared_after_s"), format!("{x:.1}")));
        Row {
            key: Some(g.presence.clone()),
            cells: vec![t(&g.presence), end, cleared],
        }
    });
    let table = Table {
        id: format!("ghosts-{}", s.name),
        columns: vec![
            Column::text("presence"),
            Column::count("ghosts at the end"),
            Column::num("cleared after", "s"),
        ],
        rows: rows.collect(),
    };
    vec![Block::Figure(figure), Block::Table(table)]
}

/// The distinct citations of the report's references, in order ("TITLE", part 9; ...).
fn sources(rep: &ClusterReport) -> String {
    let mut v: Vec<&str> = Vec::new();
    for e in &rep.reference {
        if !v.contains(&e.source.as_str()) {
            v.push(&e.source);
        }
    }
    v.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc::{html, markdown, text};
    use crate::report::Palette;

    fn fixture() -> ClusterReport {
        let json = include_str!("../../tests/fixtures/bench/cluster.json");
        serde_json::from_str(json).unwrap()
    }

    /// A real run's JSON (every scenario, `redis-publisher-restart` the longest id): at 80
    /// columns no line is wider and every scenario id is whole on a line.
    #[test]
    fn every_scenario_id_stays_whole_at_80_columns() {
        let rep = fixture();
        let doc = cluster_doc(&rep).unwrap();
        let text = text::render(&doc, &Palette::plain().with_width(80));
        assert!(
            text.starts_with("every result valid (6 scenarios)\n"),
            "{text}"
        );
        for l in text.lines() {
            assert!(l.chars().count() <= 80, "{l}\n{text}");
        }
        for s in &rep.scenarios {
            let whole = |l: &&str| l.split([' ', ',']).any(|w| w == s.name);
            assert!(
                text.lines().filter(whole).count() >= 2,
                "{} cut:\n{text}",
                s.name
            );
        }
        // One wording in every format.
        let md = markdown::render(&doc);
        let page = html::render(&doc);
        for f in [&text, &md, &page] {
            assert!(f.contains("cores shared by the nodes, Redis and the clients"));
        }
    }

    /// An invalid scenario: the verdict names it, its row says why and no number of it is
    /// shown or tagged in any format.
    #[test]
    fn an_invalid_scenario_shows_its_reason_and_no_number() {
        let mut rep = fixture();
        let n = rep
            .scenarios
            .iter()
            .position(|s| s.name == "naive")
            .unwrap();
        rep.scenarios[n].valid = false;
        rep.scenarios[n].notes = vec!["7 samples unexplained".into()];
        let doc = cluster_doc(&rep).unwrap();
        let text = text::render(&doc, &Palette::plain());
        assert!(
            text.starts_with("INVALID: naive (1 of 6 scenarios)"),
            "{text}"
        );
        let page = html::render(&doc);
        assert!(
            !page.contains(&format!("data-path=\"scenarios.{n}.")),
            "{page}"
        );
        assert!(
            page.contains("<tr class=\"invalid\" data-row=\"naive\"><td>naive</td><td colspan=\"6\">INVALID: 7 samples unexplained</td></tr>"),
            "{page}"
        );
        assert!(!page.contains("ghosts-naive"));
        let md = markdown::render(&doc);
        assert!(
            md.contains("| naive | **INVALID**: 7 samples unexplained |"),
            "{md}"
        );
        let received = rep.scenarios[n].received.to_string();
        let row = md.lines().find(|l| l.starts_with("| naive |")).unwrap();
        assert!(!row.contains(&received), "{row}");
    }
}
