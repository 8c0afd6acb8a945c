//! `rtcheck bench idle --server` as one [`Doc`]: the verdict first, one table of what a
//! connection costs per variant (RSS and kernel socket memory apart, their sum,
//! connections per GB; an invalid variant shows its reasons, never numbers), then each
//! variant's processes, fit and prediction at N against the run at N, and the public
//! figures to compare with. Written once for text, markdown and html.
use crate::bench::conncost::{ConnCostReport, VariantResult, GOAL_PCT};
use crate::evidence::fmt_num;
use crate::report::doc::{num, t, Block, Column, Doc, Row, Span, Table, Tone, Verdict};
use rtcheck_base::units::fmt_bytes;

fn whole(x: f64) -> String {
    fmt_num(x.round())
}

pub fn conncost_doc(rep: &ConnCostReport) -> anyhow::Result<Doc> {
    let mut blocks = vec![setup(rep)];
    if let Some(sp) = &rep.app_protocol {
        blocks.push(Block::Para {
            id: Some("app-protocol".into()),
            spans: vec![t(format!("protocol spoken: {} ({})", sp.protocol, sp.why))],
        });
    }
    blocks.push(table(rep));
    let details: Vec<Vec<Span>> = rep.results.iter().flat_map(details).collect();
    blocks.push(Block::List(details));
    let ids: Vec<&str> = rep.references.iter().map(|e| e.id.as_str()).collect();
    blocks.push(Block::Para {
        id: Some("compare".into()),
        spans: vec![t(format!(
            "compare (rtcheck explain ID): {} (public reports, rtcheck's runs on known servers, the seed's Go figure)",
            ids.join(", ")
        ))],
    });
    Ok(Doc {
        title: "rtcheck bench idle --server".into(),
        verdict: verdict(rep),
        blocks,
        json: crate::report::json::render(rep)?,
    })
}

fn verdict(rep: &ConnCostReport) -> Verdict {
    let names = |f: &dyn Fn(&VariantResult) -> bool| -> Vec<&str> {
        (rep.results.iter().filter(|r| f(r)))
            .map(|r| r.variant.name())
            .collect()
    };
    let bad = names(&|r| !r.valid);
    let off = names(&|r| r.prediction.is_some_and(|p| !p.within_goal));
    let (n, at) = (rep.results.len(), whole(rep.target as f64));
    let (text, tone) = match (bad.is_empty(), off.is_empty()) {
        (false, _) => (
            format!("INVALID: {} (no figure for it)", bad.join(", ")),
            Tone::Bad,
        ),
        (true, false) => (
            format!(
                "every variant measured ({n}); the prediction at {at} misses by more than {GOAL_PCT}% for {}",
                off.join(", ")
            ),
            Tone::Warn,
        ),
        (true, true) => (
            format!("every variant measured ({n}); each prediction at {at} within {GOAL_PCT}%"),
            Tone::Good,
        ),
    };
    Verdict {
        text: vec![t(format!("rtcheck bench idle --server: {text}"))],
        tone,
    }
}

fn setup(rep: &ConnCostReport) -> Block {
    let n = |path: &str, v: u64| num(path, whole(v as f64));
    Block::Para {
        id: Some("setup".into()),
        spans: vec![
            t(format!(
                "{}: cost per connection ({}), from ",
                rep.server, rep.activity
            )),
            n("points.0", rep.points[0]),
            t(" and "),
            n("points.1", rep.points[1]),
            t(" connections; checked at "),
            n("target", rep.target),
        ],
    }
}

fn table(rep: &ConnCostReport) -> Block {
    let rows = rep.results.iter().enumerate().map(|(i, r)| {
        let p = |k: &str| format!("results.{i}.per_connection.{k}");
        let name = match (&r.negotiated, r.variant.name()) {
            (None, "deflate") => "deflate (declined)".to_string(),
            (_, n) => n.to_string(),
        };
        let mut cells = vec![t(name)];
        match &r.per_connection {
            Some(c) => cells.extend([
                num(p("total_bytes"), whole(c.total_bytes)),
                num(p("rss_bytes"), whole(c.rss_bytes)),
                num(p("socket_bytes"), whole(c.socket_bytes)),
                num(p("connections_per_gb"), whole(c.connections_per_gb)),
            ]),
            None => cells.push(Span::Withheld(match r.notes.is_empty() {
                true => "nothing measured".into(),
                false => r.notes.join("; "),
            })),
        }
        Row {
            key: Some(r.variant.name().into()),
            cells,
        }
    });
    Block::Table(Table {
        id: "variants".into(),
        columns: vec![
            Column::text("variant"),
            Column::num("per conn", "B"),
            Column::num("RSS", "B"),
            Column::num("socket mem", "B"),
            Column::count("conns/GB"),
        ],
        rows: rows.collect(),
    })
}

/// A variant's processes, negotiation, fit error, prediction and notes: one item each.
fn details(r: &VariantResult) -> Vec<Vec<Span>> {
    let mut lines = vec![format!("measured {} ({})", r.url, r.found_by)];
    if let Some(e) = &r.negotiated {
        lines.push(format!("negotiated: {e}"));
    }
    if let Some(p) = &r.per_connection {
        lines.push(format!(
            "fds {:.2} per connection; fit error {:.1} KB",
            p.fds,
            p.error_bytes / 1000.0
        ));
    }
    if let Some(pr) = &r.prediction {
        lines.push(format!(
            "at {}: predicted {}, measured {} ({:.1}% off; goal {GOAL_PCT}%)",
            whole(pr.connections as f64),
            fmt_bytes(pr.predicted_bytes as u64),
            fmt_bytes(pr.measured_bytes as u64),
            pr.deviation_pct,
        ));
    }
    if r.received_per_client_per_s > 0.0 {
        lines.push(format!(
            "received {:.2} messages per client per second",
            r.received_per_client_per_s
        ));
    }
    lines.extend(r.notes.iter().cloned());
    let v = r.variant.name();
    lines
        .into_iter()
        .map(|l| vec![t(format!("{v}: {l}"))])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::conncost::{PerConnection, Prediction, Variant};
    use crate::report::doc::{markdown, text};

    fn variant(v: Variant, per: Option<PerConnection>, within: bool) -> VariantResult {
        VariantResult {
            variant: v,
            url: "ws://127.0.0.1:9/ws".into(),
            found_by: "pid 7 listening".into(),
            pids: vec![7],
            negotiated: None,
            readings: vec![],
            per_connection: per,
            prediction: per.map(|_| Prediction {
                connections: 1000,
                predicted_bytes: 4.0e6,
                measured_bytes: if within { 4.1e6 } else { 6.0e6 },
                deviation_pct: if within { 2.5 } else { 50.0 },
                within_goal: within,
            }),
            received_per_client_per_s: 0.0,
            heartbeats: None,
            valid: per.is_some(),
            notes: match per {
                Some(_) => vec![],
                None => vec!["the server's RSS was unreadable".into()],
            },
        }
    }

    /// A missed prediction is said in the verdict; a variant not measured shows why,
    /// never numbers; the declined deflate is named so.
    #[test]
    fn a_missed_prediction_and_an_unmeasured_variant() {
        let per = PerConnection {
            rss_bytes: 3000.0,
            socket_bytes: 1000.0,
            total_bytes: 4000.0,
            fds: 1.0,
            connections_per_gb: 250_000.0,
            error_bytes: 120.0,
        };
        let mut rep = ConnCostReport {
            command: "bench idle".into(),
            server: "ws://127.0.0.1:9/ws".into(),
            activity: "idle".into(),
            size: 0,
            points: [100, 500],
            target: 1000,
            results: vec![variant(Variant::Plain, Some(per), false)],
            valid: true,
            app_protocol: None,
            host: "h".into(),
            references: crate::bench::conncost::references(),
        };
        let txt = text::render(
            &conncost_doc(&rep).unwrap(),
            &crate::report::Palette::plain(),
        );
        let flat = txt.split_whitespace().collect::<Vec<_>>().join(" ");
        let verdict = "rtcheck bench idle --server: every variant measured (1); the prediction at 1,000 misses by more than 10% for plain ws://";
        assert!(flat.starts_with(verdict), "{txt}");
        assert!(txt.contains("4,000") && txt.contains("250,000"), "{txt}");
        assert!(txt.contains("plain: at 1,000: predicted 4.0 MB"), "{txt}");
        assert!(txt.contains("conn-ram"), "{txt}");
        rep.results.push(variant(Variant::Deflate, None, true));
        rep.valid = false;
        let d = conncost_doc(&rep).unwrap();
        let txt = text::render(&d, &crate::report::Palette::plain());
        assert!(
            txt.starts_with("rtcheck bench idle --server: INVALID: deflate"),
            "{txt}"
        );
        let row = txt
            .lines()
            .find(|l| l.contains("deflate (declined)"))
            .unwrap();
        assert!(row.contains("INVALID"), "{txt}");
        assert!(txt.lines().all(|l| l.chars().count() <= 80), "{txt}");
        let md = markdown::render(&d);
        assert!(
            md.contains("| deflate (declined) | **INVALID**: the server"),
            "{md}"
        );
    }
}
