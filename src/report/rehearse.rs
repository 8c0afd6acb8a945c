//! `rtcheck rehearse` as one [`Doc`]: the verdict, who was connected, the wave plotted per
//! 100 ms (one line per reconnect policy) and the server's RSS through it (html), each
//! run's figures side by side (one column per policy), a failed restart command's output,
//! the findings with their fixes and the notes. Written once for text, markdown and html.
use crate::findings::{Finding, Status};
use crate::rehearse::model::{RehearseReport, Run};
use crate::report::doc::{
    code, num, status, strong, t, Block, Colour, Column, Doc, Figure, Item, Row, Scale, Series,
    Shape, Span, Table, Tone, Verdict,
};
use rtcheck_base::units::{fmt_bytes, fmt_thousands};

/// Runs are told apart by colour in the same order on both plots.
const COLOURS: [Colour; 4] = [Colour::Blue, Colour::Red, Colour::Green, Colour::Grey];

pub fn rehearse_doc(r: &RehearseReport, thresholds: &[Finding]) -> anyhow::Result<Doc> {
    let mut blocks = vec![setup(r)];
    blocks.extend(plots(r));
    blocks.push(figures(&r.runs));
    for run in r.runs.iter().filter(|x| !x.hook.ok) {
        blocks.push(Block::Para {
            id: None,
            spans: vec![t("the restart command failed: "), code(&run.hook.command)],
        });
        // The tail: what a failed `docker compose up` says last is why.
        let lines: Vec<&str> = run.hook.output.lines().collect();
        blocks.push(Block::Pre(
            lines[lines.len().saturating_sub(20)..].join("\n"),
        ));
    }
    blocks.extend(r.findings.iter().chain(thresholds).map(item));
    if !r.notes.is_empty() {
        let notes = r.notes.iter().map(|n| vec![t(format!("note: {n}"))]);
        blocks.push(Block::List(notes.collect()));
    }
    Ok(Doc {
        title: "rtcheck rehearse".into(),
        verdict: verdict(r, thresholds),
        blocks,
        json: serde_json::to_string(r)?,
    })
}

/// Nothing rehearsed (no client dropped) or invalid first (nothing is judged on it),
/// then failures, then warnings.
fn verdict(r: &RehearseReport, thresholds: &[Finding]) -> Verdict {
    let all = r.findings.iter().chain(thresholds);
    let fails = all.clone().filter(|f| f.status == Status::Fail).count();
    let warns = all.filter(|f| f.status == Status::Warn).count();
    let idle: Vec<&str> = (r.runs.iter())
        .filter(|x| x.connected > 0 && x.nothing_rehearsed())
        .map(|x| x.name.as_str())
        .collect();
    let (text, tone) = match (r.valid, fails, warns) {
        _ if !idle.is_empty() => (
            format!(
                "{} ({})",
                crate::rehearse::model::NOTHING_REHEARSED,
                idle.join(", ")
            ),
            Tone::Bad,
        ),
        (false, ..) => (format!("invalid: {}", r.notes.join("; ")), Tone::Bad),
        (true, 0, 0) => ("the clients survived the restart".into(), Tone::Good),
        (true, 0, w) => (format!("survived, {w} warning(s)"), Tone::Warn),
        (true, f, _) => (format!("{f} failure(s)"), Tone::Bad),
    };
    Verdict {
        text: vec![t("rtcheck rehearse: "), t(text)],
        tone,
    }
}

fn setup(r: &RehearseReport) -> Block {
    Block::Para {
        id: Some("setup".into()),
        spans: vec![
            num("connections", fmt_thousands(r.connections)),
            t(format!(" {} client(s) on ", r.transport)),
            code(&r.url),
        ],
    }
}

/// A series' points, a gap where None.
type Points = Vec<Option<(f64, f64)>>;

/// The reconnect wave per 100 ms from the first drop, and the server's RSS when sampled.
fn plots(r: &RehearseReport) -> Vec<Block> {
    let series = |points: &dyn Fn(&Run) -> Points| -> Vec<Series> {
        (r.runs.iter().enumerate())
            .map(|(i, run)| Series {
                name: run.name.clone(),
                colour: COLOURS[i % COLOURS.len()],
                points: points(run),
            })
            .collect()
    };
    let wave = series(&|run| {
        let per = run.wave.connects_per_100ms.iter().enumerate();
        per.map(|(b, n)| Some((b as f64 * 100.0, *n as f64)))
            .collect()
    });
    let figure = |id: &str, caption: &str, axes: (&str, &str), y, series| {
        Block::Figure(Figure {
            id: id.into(),
            caption: caption.into(),
            axes: (axes.0.into(), axes.1.into()),
            y,
            shape: Shape::Lines,
            series,
        })
    };
    let mut out = vec![figure(
        "wave",
        "reconnects per 100 ms, from the first drop",
        ("ms after the first drop", "connects per 100 ms"),
        Scale::Count,
        wave,
    )];
    if r.runs.iter().any(|x| !x.server.series.is_empty()) {
        let rss = series(&|run| run.server.series.iter().map(|p| Some((p.0, p.1))).collect());
        out.push(figure(
            "rss",
            "server RSS through the rehearsal",
            ("ms after the restart began", "RSS MB"),
            Scale::Value,
            rss,
        ));
    }
    out
}

/// A figure's label and its cell in each run.
type Fig = (&'static str, Vec<Span>);

/// The figures of every run side by side: one row per figure, one column per run.
fn figures(runs: &[Run]) -> Block {
    let mut columns = vec![Column::text("figure")];
    columns.extend(runs.iter().map(|r| Column::count(&r.name)));
    let rows = [reach(runs), wave(runs), server(runs), delivery(runs)]
        .into_iter()
        .flatten()
        .chain(optional(runs))
        .map(|(label, cells)| Row {
            key: Some(label.into()),
            cells: std::iter::once(t(label)).chain(cells).collect(),
        });
    Block::Table(Table {
        id: "figures".into(),
        columns,
        rows: rows.collect(),
    })
}

/// One cell per run; `f` gets the run's path in the report's JSON (`runs.0`).
fn col(runs: &[Run], f: impl Fn(&str, &Run) -> Span) -> Vec<Span> {
    let each = runs.iter().enumerate();
    each.map(|(i, r)| f(&format!("runs.{i}"), r)).collect()
}

fn count(path: &str, key: &str, v: u64) -> Span {
    num(format!("{path}.{key}"), fmt_thousands(v))
}

/// A tagged number is the JSON's own, bare (its unit is in the row's label).
fn ms(path: &str, key: &str, v: Option<f64>) -> Span {
    v.map_or(t("-"), |v| num(format!("{path}.{key}"), format!("{v:.0}")))
}

/// Two numbers in one cell: said, not tagged.
fn of(n: u64, of: u64) -> Span {
    t(format!("{n} of {of}"))
}

/// Who was there, who dropped, who came back and how soon.
fn reach(runs: &[Run]) -> Vec<Fig> {
    let hook = |_: &str, r: &Run| match r.hook.ok {
        true => t(format!("ok, {:.0} ms", r.hook.took_ms)),
        false => t("FAILED"),
    };
    vec![
        (
            "connected",
            col(runs, |p, r| count(p, "connected", r.connected)),
        ),
        (
            "away at restart",
            col(runs, |p, r| count(p, "away_at_restart", r.away_at_restart)),
        ),
        ("restart command", col(runs, hook)),
        (
            "dropped",
            col(runs, |p, r| count(p, "wave.dropped", r.wave.dropped)),
        ),
        (
            "drain signal",
            col(runs, |_, r| of(r.drain.signalled(), r.wave.dropped)),
        ),
        (
            "drain lead p50 (ms)",
            col(runs, |p, r| ms(p, "drain.lead_p50_ms", r.drain.lead_p50_ms)),
        ),
        ("back", col(runs, |_, r| of(r.wave.back, r.wave.dropped))),
        (
            "back 50 % (ms)",
            col(runs, |p, r| ms(p, "back_50_ms", r.back_50_ms)),
        ),
        (
            "back 95 % (ms)",
            col(runs, |p, r| ms(p, "back_95_ms", r.back_95_ms)),
        ),
        (
            "back 100 % (ms)",
            col(runs, |p, r| ms(p, "back_100_ms", r.back_100_ms)),
        ),
    ]
}

/// How the wave came: its peak, its spread, each client's downtime, refused connects.
fn wave(runs: &[Run]) -> Vec<Fig> {
    let f0 = |p: &str, k: &str, v: f64| num(format!("{p}.{k}"), format!("{v:.0}"));
    let failed = |_: &str, r: &Run| {
        let v: Vec<String> = (r.failed_connects.iter().filter(|(_, n)| **n > 0))
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        match v.is_empty() {
            true => t("0"),
            false => t(v.join(", ")),
        }
    };
    vec![
        (
            "peak connects/s",
            col(runs, |p, r| {
                f0(p, "peak_connects_per_s", r.peak_connects_per_s)
            }),
        ),
        (
            "mean connects/s",
            col(runs, |p, r| {
                f0(p, "wave.mean_connects_per_s", r.wave.mean_connects_per_s)
            }),
        ),
        (
            "in busiest 100 ms (%)",
            col(runs, |p, r| {
                f0(p, "wave.in_peak_100ms_pct", r.wave.in_peak_100ms_pct)
            }),
        ),
        (
            "downtime p50 (ms)",
            col(runs, |p, r| {
                ms(p, "wave.downtime_p50_ms", r.wave.downtime_p50_ms)
            }),
        ),
        (
            "downtime max (ms)",
            col(runs, |p, r| {
                ms(p, "wave.downtime_max_ms", r.wave.downtime_max_ms)
            }),
        ),
        ("failed connects", col(runs, failed)),
    ]
}

/// The host's accept queue and the server process through the restart.
fn server(runs: &[Run]) -> Vec<Fig> {
    let opt = |p: &str, k: &str, v: Option<u64>| v.map_or(t("-"), |v| count(p, k, v));
    let rss = |p: &str, r: &Run| {
        (r.server.rss_peak_mb).map_or(t("-"), |v| {
            num(format!("{p}.server.rss_peak_mb"), format!("{v:.1}"))
        })
    };
    vec![
        (
            "ListenOverflows",
            col(runs, |p, r| {
                opt(p, "listen.listen_overflows", r.listen.listen_overflows)
            }),
        ),
        (
            "ListenDrops",
            col(runs, |p, r| {
                opt(p, "listen.listen_drops", r.listen.listen_drops)
            }),
        ),
        ("server RSS peak (MB)", col(runs, rss)),
        (
            "server fds peak",
            col(runs, |p, r| opt(p, "server.fds_peak", r.server.fds_peak)),
        ),
    ]
}

/// What the clients received across the restart.
fn delivery(runs: &[Run]) -> Vec<Fig> {
    let d = |k: &'static str, v: fn(&Run) -> u64| {
        move |p: &str, r: &Run| count(p, &format!("delivery.{k}"), v(r))
    };
    let replayed = |_: &str, r: &Run| {
        let (m, b) = (r.delivery.replay_messages, r.delivery.replay_bytes);
        t(format!("{} msgs, {}", fmt_thousands(m), fmt_bytes(b)))
    };
    vec![
        ("replayed", col(runs, replayed)),
        ("lost", col(runs, d("lost", |r| r.delivery.lost))),
        (
            "lost silently",
            col(runs, d("lost_silently", |r| r.delivery.lost_silently)),
        ),
        (
            "duplicated",
            col(runs, d("duplicated", |r| r.delivery.duplicated)),
        ),
        (
            "out of order",
            col(runs, d("out_of_order", |r| r.delivery.out_of_order)),
        ),
    ]
}

/// Rows only some runs measure: --http2's GOAWAY before the stream's end, --publish's
/// messages (and with --publish ws, those written just before a failure, still owed).
fn optional(runs: &[Run]) -> Vec<Fig> {
    let mut rows = Vec::new();
    if runs.iter().any(|r| r.drain.goaway.is_some()) {
        let goaway = |_: &str, r: &Run| match r.drain.goaway {
            Some(g) => {
                let lead = r
                    .drain
                    .goaway_lead_p50_ms
                    .map_or("-".into(), |v| format!("{v:.0} ms"));
                t(format!("{g} of {}, {lead}", r.wave.dropped))
            }
            None => t("-"),
        };
        rows.push(("GOAWAY first", col(runs, goaway)));
    }
    if runs.iter().any(|r| r.publisher.is_some()) {
        let published = |_: &str, r: &Run| match &r.publisher {
            Some(s) => t(format!(
                "{} sent, {} failed",
                fmt_thousands(s.sent),
                fmt_thousands(s.failed)
            )),
            None => t("-"),
        };
        rows.push(("published", col(runs, published)));
        if runs.iter().any(|r| r.unconfirmed > 0) {
            let unconfirmed = |p: &str, r: &Run| count(p, "unconfirmed", r.unconfirmed);
            rows.push(("unconfirmed", col(runs, unconfirmed)));
        }
    }
    rows
}

/// A finding as a unit: its status, id and what was observed; a fix and its commands
/// when it did not pass.
fn item(f: &Finding) -> Block {
    let mut lines = Vec::new();
    if f.status != Status::Pass && !f.fix.summary.is_empty() {
        lines.push(vec![t(format!("fix: {}", f.fix.summary))]);
        lines.extend(f.fix.runtime.iter().map(|c| vec![code(c)]));
    }
    Block::Item(Item {
        id: Some(format!("finding-{}", f.id)),
        tone: Tone::worst([f.status]),
        head: vec![
            status(f.status),
            t(" "),
            strong(&f.id),
            t(": "),
            t(&f.observed),
        ],
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc::{html, markdown, text};

    /// A run whose restart hook dropped no client rehearsed nothing: never the good
    /// tone, whatever its findings, and the verdict names the likely causes.
    #[test]
    fn a_run_where_no_client_dropped_is_nothing_rehearsed_not_survived() {
        let mut idle = crate::rehearse::verdict::tests::run(false);
        idle.delivery.received = 5;
        let findings = crate::rehearse::verdict::judge(&idle);
        assert!(
            findings.iter().all(|f| f.status != Status::Fail),
            "{findings:?}"
        );
        let r = RehearseReport {
            command: "rehearse".into(),
            url: "ws://127.0.0.1:9/ws".into(),
            transport: "websocket".into(),
            app_protocol: None,
            connections: 1,
            valid: true,
            notes: vec![],
            runs: vec![idle],
            findings,
        };
        let v = verdict(&r, &[]);
        assert_eq!(v.tone, Tone::Bad);
        let txt = text::render(
            &rehearse_doc(&r, &[]).unwrap(),
            &crate::report::Palette::plain(),
        );
        assert!(
            txt.starts_with("rtcheck rehearse: nothing rehearsed"),
            "{txt}"
        );
        assert!(txt.contains("a proxy"), "{txt}");
        assert!(!txt.contains("survived"), "{txt}");
    }

    /// Two runs side by side, one whose restart command failed: the verdict first, the
    /// figures with their JSON paths, the command's output, a fix's command whole.
    #[test]
    fn runs_side_by_side_with_a_failed_hook_and_a_fix() {
        let ok = crate::rehearse::verdict::tests::run(true);
        let mut failed = crate::rehearse::verdict::tests::run(false);
        failed.name = "jitter".into();
        failed.hook.ok = false;
        failed.hook.command = "docker compose up -d hub".into();
        failed.hook.output = "pulling\nimage not found".into();
        let fix = "sudo sysctl -w net.core.somaxconn=4096 # a command long enough to wrap";
        let f = Finding {
            location: None,
            id: "restart-hook:jitter".into(),
            title: String::new(),
            status: Status::Fail,
            observed: "exit 4".into(),
            expected: String::new(),
            rule: String::new(),
            reason: None,
            evidence: vec![],
            fix: crate::findings::Fix {
                summary: "make the restart command succeed".into(),
                runtime: vec![fix.into()],
                persistent: vec![],
            },
            verify: None,
            verification: None,
            numbers: Default::default(),
        };
        let r = RehearseReport {
            command: "rehearse".into(),
            url: "ws://127.0.0.1:9/ws".into(),
            transport: "websocket".into(),
            app_protocol: None,
            connections: 1,
            valid: true,
            notes: vec!["settled".into()],
            runs: vec![ok, failed],
            findings: vec![f],
        };
        let d = rehearse_doc(&r, &[]).unwrap();
        let txt = text::render(&d, &crate::report::Palette::plain());
        assert!(txt.starts_with("rtcheck rehearse: 1 failure(s)\n"), "{txt}");
        assert!(txt.contains("  | image not found\n"), "{txt}");
        assert!(txt.contains(fix), "{txt}");
        assert!(txt.lines().all(|l| l.chars().count() <= 80), "{txt}");
        let back = txt.lines().find(|l| l.contains("back 50 % (ms)")).unwrap();
        assert!(back.contains(" 10 ") && back.ends_with('-'), "{txt}");
        let md = markdown::render(&d);
        assert!(
            md.contains("| figure | fixed | jitter |\n|---|---:|---:|"),
            "{md}"
        );
        assert!(
            md.contains("| restart command | ok, 1 ms | FAILED |"),
            "{md}"
        );
        assert!(md.contains("```\npulling\nimage not found\n```"), "{md}");
        let page = html::render(&d);
        assert!(page.contains("data-plot=\"wave\""), "{page}");
        assert!(page.contains("data-path=\"runs.1.connected\""), "{page}");
        assert!(page.contains("class=\"verdict bad\""), "{page}");
    }
}
