//! `rtcheck bench idle` as one [`Doc`]: the verdict (every protocol valid, WebSocket under
//! the target), the run, RSS per idle connection per protocol (an invalid protocol shows
//! its reasons, never numbers), the server's RSS against connections (html), each
//! protocol's notes and the seed's figure. Written once for text, markdown and html.
use crate::bench::model::{IdleReport, IdleResult};
use crate::evidence::fmt_num;
use crate::findings::Status;
use crate::report::doc::{
    num, status, t, Block, Colour, Column, Doc, Figure, Row, Scale, Series, Shape, Span, Table,
    Tone, Verdict,
};

pub fn idle_doc(rep: &IdleReport) -> anyhow::Result<Doc> {
    let mut blocks = vec![setup(rep), table(rep)];
    blocks.extend(plot(rep));
    let notes: Vec<Vec<Span>> = (rep.results.iter())
        .flat_map(|r| {
            r.notes
                .iter()
                .map(|n| vec![t(format!("{}: {n}", r.protocol))])
        })
        .collect();
    if !notes.is_empty() {
        blocks.push(Block::List(notes));
    }
    let seed = &rep.reference;
    blocks.push(Block::Para {
        id: Some("seed".into()),
        spans: vec![t(format!(
            "seed ({}): {} ({})",
            seed.id, seed.claim, seed.source
        ))],
    });
    Ok(Doc {
        title: "rtcheck bench idle".into(),
        verdict: verdict(rep),
        blocks,
        json: crate::report::json::render(rep)?,
    })
}

/// A WebSocket connection costing more than the target fails (the target is for it).
fn over(rep: &IdleReport, r: &IdleResult) -> bool {
    r.protocol == "ws"
        && (r.bytes_per_connection).is_some_and(|b| b > rep.target_bytes_per_connection as f64)
}

/// The row's status: the target is for WebSocket alone, another protocol is not judged
/// ("-", the setup line says there is no target for it).
fn judged(rep: &IdleReport, r: &IdleResult) -> Span {
    match (r.protocol == "ws", over(rep, r)) {
        (false, _) => t("-"),
        (true, true) => status(Status::Fail),
        (true, false) => status(Status::Pass),
    }
}

fn verdict(rep: &IdleReport) -> Verdict {
    let invalid: Vec<&str> = (rep.results.iter().filter(|r| !r.valid))
        .map(|r| r.protocol.as_str())
        .collect();
    let over: Vec<&str> = (rep.results.iter().filter(|r| over(rep, r)))
        .map(|r| r.protocol.as_str())
        .collect();
    let n = rep.results.len();
    let (text, tone) = match (rep.valid, invalid.is_empty(), over.is_empty()) {
        (_, false, _) => (
            format!("INVALID: {} (no number shown for it)", invalid.join(", ")),
            Tone::Bad,
        ),
        (false, true, _) => ("INVALID: see the notes".to_string(), Tone::Bad),
        (true, true, false) => (
            format!(
                "every result valid ({n} protocols); {} fail: over the target",
                over.join(", ")
            ),
            Tone::Bad,
        ),
        (true, true, true) => (format!("every result valid ({n} protocols)"), Tone::Good),
    };
    Verdict {
        text: vec![t(format!("rtcheck bench idle: {text}"))],
        tone,
    }
}

fn setup(rep: &IdleReport) -> Block {
    Block::Para {
        id: Some("setup".into()),
        spans: vec![
            t("server RSS per idle connection, "),
            num("connections", fmt_num(rep.connections as f64)),
            t(" connections (target: at most "),
            num(
                "target_bytes_per_connection",
                fmt_num(rep.target_bytes_per_connection as f64),
            ),
            t(format!(" B per WebSocket{})", unjudged(rep))),
        ],
    }
}

/// "; no target for sse" when a protocol other than WebSocket was measured.
fn unjudged(rep: &IdleReport) -> String {
    let others: Vec<&str> = (rep.results.iter())
        .filter(|r| r.protocol != "ws")
        .map(|r| r.protocol.as_str())
        .collect();
    match others.is_empty() {
        true => String::new(),
        false => format!("; no target for {}", others.join(", ")),
    }
}

/// RSS in bytes, as the JSON has it: a number on the html page is the JSON's own.
fn table(rep: &IdleReport) -> Block {
    let rows = rep.results.iter().enumerate().map(|(i, r)| {
        let p = |k: &str| format!("results.{i}.{k}");
        let mut cells = vec![t(&r.protocol)];
        match (r.valid, r.bytes_per_connection) {
            (true, Some(b)) => cells.extend([
                num(p("connected"), fmt_num(r.connected as f64)),
                num(p("rss_before_bytes"), fmt_num(r.rss_before_bytes as f64)),
                num(p("rss_after_bytes"), fmt_num(r.rss_after_bytes as f64)),
                num(p("bytes_per_connection"), fmt_num(b.round())),
                judged(rep, r),
            ]),
            _ => cells.push(Span::Withheld(match r.notes.is_empty() {
                true => "nothing measured".into(),
                false => r.notes.join("; "),
            })),
        }
        Row {
            key: Some(r.protocol.clone()),
            cells,
        }
    });
    Block::Table(Table {
        id: "idle".into(),
        columns: vec![
            Column::text("protocol"),
            Column::count("connected"),
            Column::num("RSS before", "B"),
            Column::num("RSS after", "B"),
            Column::num("per conn", "B"),
            Column::text("status"),
        ],
        rows: rows.collect(),
    })
}

/// The server's RSS against connected clients, sampled while they connected.
fn plot(rep: &IdleReport) -> Option<Block> {
    let series: Vec<Series> = (rep.results.iter())
        .filter(|r| r.valid && !r.samples.is_empty())
        .map(|r| Series {
            name: r.protocol.clone(),
            colour: if r.protocol == "sse" {
                Colour::Green
            } else {
                Colour::Blue
            },
            points: (r.samples.iter())
                .map(|s| Some((s.connections as f64, s.rss_bytes as f64 / 1e6)))
                .collect(),
        })
        .collect();
    (!series.is_empty()).then(|| {
        Block::Figure(Figure {
            id: "rss".into(),
            caption: "server RSS (MB) against connected clients, sampled while they connected"
                .into(),
            axes: ("connections".into(), "RSS (MB)".into()),
            y: Scale::Value,
            shape: Shape::Lines,
            series,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::RssSample;
    use crate::report::doc::{html, markdown, text};

    fn result(protocol: &str, per: Option<f64>) -> IdleResult {
        IdleResult {
            protocol: protocol.into(),
            connections: 100,
            connected: if per.is_some() { 100 } else { 3 },
            rss_before_bytes: 10_000_000,
            rss_after_bytes: 10_000_000 + per.unwrap_or(0.0) as u64 * 100,
            bytes_per_connection: per,
            server_clients_seen: Some(100),
            valid: per.is_some(),
            notes: match per {
                Some(_) => vec![],
                None => vec!["3 of 100 connected".into()],
            },
            samples: vec![
                RssSample {
                    connections: 0,
                    rss_bytes: 10_000_000,
                },
                RssSample {
                    connections: 100,
                    rss_bytes: 10_700_000,
                },
            ],
        }
    }

    fn report(results: Vec<IdleResult>) -> IdleReport {
        IdleReport {
            command: "bench idle".into(),
            connections: 100,
            target_bytes_per_connection: 6000,
            valid: results.iter().all(|r| r.valid),
            results,
            reference: crate::evidence::reference("conn-ram"),
        }
    }

    /// The target is for WebSocket: an SSE row is not judged, never a pass.
    #[test]
    fn only_websocket_is_judged_against_the_target() {
        let d = idle_doc(&report(vec![
            result("ws", Some(700.0)),
            result("sse", Some(900.0)),
        ]))
        .unwrap();
        let txt = text::render(&d, &crate::report::Palette::plain());
        let row = |p: &str| {
            (txt.lines())
                .find(|l| l.trim_start().starts_with(p))
                .unwrap_or_else(|| panic!("{txt}"))
                .to_string()
        };
        assert!(row("ws ").ends_with("pass"), "{txt}");
        assert!(row("sse ").ends_with(" -"), "{txt}");
        assert!(txt.contains("no target for sse"), "{txt}");
        let narrow = text::render(&d, &crate::report::Palette::plain().with_width(60));
        assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
        let page = html::render(&d);
        assert_eq!(page.matches("class=\"status s-pass\"").count(), 1, "{page}");
        assert!(page.contains("no target for sse"), "{page}");
    }

    /// WebSocket over the target fails; an invalid protocol shows why, never numbers.
    #[test]
    fn over_the_target_fails_and_an_invalid_protocol_shows_no_number() {
        let d = idle_doc(&report(vec![result("ws", Some(7000.0))])).unwrap();
        let txt = text::render(&d, &crate::report::Palette::plain());
        assert!(
            txt.starts_with("rtcheck bench idle: every result valid (1 protocols); ws fail"),
            "{txt}"
        );
        let ws = txt
            .lines()
            .find(|l| l.trim_start().starts_with("ws "))
            .unwrap();
        assert!(ws.contains("7,000") && ws.ends_with("fail"), "{txt}");
        assert!(txt.contains("seed (conn-ram): "), "{txt}");
        let d = idle_doc(&report(vec![
            result("ws", Some(700.0)),
            result("sse", None),
        ]))
        .unwrap();
        let narrow = text::render(&d, &crate::report::Palette::plain().with_width(60));
        assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
        let txt = text::render(&d, &crate::report::Palette::plain());
        assert!(txt.starts_with("rtcheck bench idle: INVALID: sse"), "{txt}");
        let sse = txt
            .lines()
            .find(|l| l.trim_start().starts_with("sse "))
            .unwrap_or_else(|| panic!("{txt}"));
        assert!(sse.contains("INVALID") && !sse.contains("10.0"), "{txt}");
        assert!(txt.contains("sse: 3 of 100 connected"), "{txt}");
        assert!(txt.lines().all(|l| l.chars().count() <= 80), "{txt}");
        let md = markdown::render(&d);
        assert!(md.contains("| ws | 100 | "), "{md}");
        assert!(md.contains("| 700 | pass |"), "{md}");
        let page = html::render(&d);
        assert!(page.contains("data-plot=\"rss\""), "{page}");
        assert!(page.contains("data-path=\"results.0.bytes_per_connection\""));
    }
}
