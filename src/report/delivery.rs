//! `rtcheck verify delivery` as one [`Doc`]: the verdict (pass/warn/fail per run), the
//! setup, each run's status, verdict and counts in words (fits 80 columns), every key of
//! every run (built from the run's JSON, so a key or delivery mode added later gets its
//! column with no change here; html and markdown, too wide for text), the losses per run,
//! the ring and sessions against `choose`'s sizing, the seed's figures and the findings.
//! Written once for text, markdown and html.
use crate::findings::{Finding, Status};
use crate::report::doc::{
    num, t, Block, Colour, Column, Doc, Figure, Row, Scale, Series, Shape, Span, Table, Tone,
    Verdict,
};
use crate::verify::delivery::DeliveryReport;
use rtcheck_base::units::fmt_bytes;
use serde_json::Value;

/// Findings shown as gates after the report, not among its own: thresholds, the baseline
/// and accepted (suppressed) findings.
pub fn is_gate(f: &Finding) -> bool {
    f.id.starts_with("threshold:")
        || f.id == crate::findings::baseline::ID
        || f.status == Status::Suppressed
}

pub fn delivery_doc(r: &DeliveryReport) -> anyhow::Result<Doc> {
    let json = crate::report::json::render(r)?;
    let v: Value = serde_json::from_str(&json)?;
    let runs = v["runs"].as_array().map_or(&[][..], |a| a.as_slice());
    let mut blocks = vec![setup(r), Block::Section("Runs".into())];
    blocks.push(Block::List(runs_list(r)));
    blocks.push(Block::Wide(every_key(runs)));
    blocks.extend(losses(runs));
    blocks.extend(memory(r));
    blocks.push(Block::Para {
        id: Some("evidence".into()),
        spans: vec![t(evidence_line())],
    });
    // Each run's finding restates its line above: cards on the page only.
    let own = r.findings.iter().filter(|f| !is_gate(f));
    blocks.push(Block::Cards(own.cloned().collect()));
    blocks.push(Block::Section("Options".into()));
    blocks.push(Block::Wide(fields("options", &v["options"])));
    // Any other part of the report (sizing, publisher, ...) as the JSON has it.
    for (k, x) in v.as_object().into_iter().flatten() {
        if !SHOWN.contains(&k.as_str()) {
            blocks.push(Block::Section(k.replace('_', " ")));
            blocks.push(Block::Wide(fields(k, x)));
        }
    }
    Ok(Doc {
        title: "rtcheck verify delivery".into(),
        verdict: verdict(r),
        blocks,
        json,
    })
}

/// The counts (report::counts), or first why the report is invalid: nothing measured
/// never reads as a pass.
fn verdict(r: &DeliveryReport) -> Verdict {
    let s = &r.summary;
    let mut text = vec![t(format!("verify delivery ({}): ", r.target))];
    if let Some(why) = &r.invalid_reason {
        text.push(t(format!("{why}; ")));
    }
    text.extend(crate::report::counts::findings_head(s));
    text.push(t(format!(
        " skip{} in {:.1} s",
        crate::report::counts::suppressed_count(s),
        r.duration_ms as f64 / 1000.0
    )));
    Verdict {
        text,
        tone: match (r.valid, s.fail, s.warn) {
            (true, 0, 0) => Tone::Good,
            (true, 0, _) => Tone::Warn,
            _ => Tone::Bad,
        },
    }
}

/// Clients, transport, rate and size, the ring (or a foreign server's publish and resume),
/// the protocol spoken, the scope, the publisher and the server process.
fn setup(r: &DeliveryReport) -> Block {
    let o = &r.options;
    let transport = crate::verify::delivery::transport_flag(o.transport);
    let mut s = match &o.foreign {
        Some(f) => format!(
            "{} clients per run over {transport}, {} msg/s x {} B published by rtcheck ({}), clients resume with {}",
            o.connections, o.rate, o.size, f.publish, f.resume
        ),
        None => format!(
            "{} clients per run over {transport}, {} msg/s x {} B, ring {} messages ({} B)",
            o.connections,
            o.rate,
            o.size,
            o.ring_messages,
            o.ring_bytes()
        ),
    };
    if let Some(sp) = o.foreign.as_ref().and_then(|f| f.app_protocol.as_ref()) {
        s.push_str(&format!("; protocol spoken: {} ({})", sp.protocol, sp.why));
    }
    if let Some(scope) = &o.scope {
        s.push_str(&format!("; {scope}"));
    }
    if let Some(p) = &r.publisher {
        s.push_str(&format!(
            "; publisher: {} of {} sent, {} failed; timer late p99 {:.1} ms; the server held a send up to {:.0} ms",
            p.sent, p.timer_rounds, p.failed, p.timer_late_p99_ms, p.backlog_max_ms
        ));
    }
    if let Some(line) = server_line(r) {
        s.push_str(&format!("; {line}"));
    }
    Block::Para {
        id: Some("setup".into()),
        spans: vec![t(s)],
    }
}

/// Each run: its status, what it was, its verdict in words and its counts (every key is
/// in [`every_key`], too wide for text), and a session-ack run's session memory.
fn runs_list(r: &DeliveryReport) -> Vec<Vec<Span>> {
    let items = r.runs.iter().enumerate().map(|(i, run)| {
        let c = &run.counts;
        let when = match run.case.as_str() {
            crate::verify::delivery::run::RESTART => {
                format!("resets {}/{}", run.resets, run.clients)
            }
            _ => format!("away {} ms", run.away_ms),
        };
        let mut s = format!(
            " {} {} {} (#{}, {when}): {}; received {}, lost {} (silently {}), duplicated {}, out of order {}, gaps {}; resume p50 {:.0} ms, max {:.0} ms",
            run.delivery,
            run.disconnect,
            run.case,
            i + 1,
            run.verdict,
            c.received,
            c.lost,
            c.lost_silently,
            c.duplicated,
            c.out_of_order,
            c.gaps,
            run.resume_ms.p50,
            run.resume_ms.max
        );
        if run.delivery == "session-ack" {
            s.push_str(&format!(
                "; session {} per client (choose: {}); x {} clients: {}",
                fmt_bytes(run.session_bytes_per_client),
                fmt_bytes(r.sizing.session_bytes_per_client),
                r.sizing.connections,
                fmt_bytes(run.sessions_worst_case_bytes)
            ));
        }
        vec![Span::Status(run.status), t(s)]
    });
    items.collect()
}

/// The ring the server held beside `choose`'s sizing.
fn memory(r: &DeliveryReport) -> Option<Block> {
    let ring = r
        .runs
        .iter()
        .map(|r| r.ring_bytes)
        .max()
        .filter(|&b| b > 0)?;
    Some(Block::Para {
        id: Some("ring".into()),
        spans: vec![t(format!(
            "ring held by the server: {} in every encoding it keeps ({} of payload; choose's sizing for max_disconnect: {})",
            fmt_bytes(ring),
            fmt_bytes(r.options.ring_bytes()),
            fmt_bytes(r.sizing.ring_bytes)
        ))],
    })
}

/// Known columns first, in this order (flattened keys: `resume_ms.p50`).
const ORDER: &[&str] = &[
    "status",
    "delivery",
    "disconnect",
    "case",
    "away_ms",
    "clients",
    "received",
    "lost",
    "lost_silently",
    "duplicated",
    "out_of_order",
    "gaps",
    "resume_ms.p50",
    "resume_ms.max",
    "ring_bytes",
    "session_bytes_per_client",
];
/// Top-level keys with a place of their own.
const SHOWN: &[&str] = &[
    "kind",
    "target",
    "options",
    "runs",
    "findings",
    "summary",
    "duration_ms",
    "valid",
    "invalid_reason",
];
/// Not a column: the sentence, in the list of verdicts.
const LAST: &str = "verdict";

/// `a.b` for nested objects, in the JSON's own order.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = match prefix.is_empty() {
                    true => k.clone(),
                    false => format!("{prefix}.{k}"),
                };
                flatten(&key, x, out);
            }
        }
        x => out.push((prefix.to_string(), x.clone())),
    }
}

/// The columns of the runs: known ones present first, then the others as they appear.
fn columns(rows: &[Vec<(String, Value)>]) -> Vec<String> {
    let mut seen: Vec<&String> = Vec::new();
    for (k, _) in rows.iter().flatten() {
        if !seen.contains(&k) {
            seen.push(k);
        }
    }
    let known = ORDER.iter().filter(|k| seen.iter().any(|s| s == *k));
    let mut cols: Vec<String> = known.map(|k| k.to_string()).collect();
    let others = seen
        .iter()
        .filter(|k| !ORDER.contains(&k.as_str()) && k.as_str() != LAST);
    cols.extend(others.map(|k| k.to_string()));
    cols
}

/// One value: numbers tagged with their JSON path, a status as its status.
fn cell(path: String, key: &str, v: Option<&Value>) -> Span {
    match v {
        None | Some(Value::Null) => t("-"),
        Some(Value::Number(n)) if n.is_f64() => {
            num(path, format!("{:.1}", n.as_f64().unwrap_or(0.0)))
        }
        Some(Value::Number(n)) => num(path, n.to_string()),
        Some(Value::String(s)) if key == "status" => match s.as_str() {
            "pass" => Span::Status(Status::Pass),
            "warn" => Span::Status(Status::Warn),
            "fail" => Span::Status(Status::Fail),
            "skip" => Span::Status(Status::Skip),
            other => t(other),
        },
        Some(Value::String(s)) => t(s),
        Some(Value::Bool(b)) => t(if *b { "yes" } else { "no" }),
        Some(x) => t(x.to_string()),
    }
}

/// Every key of every run, a row per run keyed `delivery/disconnect/case`.
fn every_key(runs: &[Value]) -> Table {
    let rows: Vec<Vec<(String, Value)>> = (runs.iter())
        .map(|r| {
            let mut out = Vec::new();
            flatten("", r, &mut out);
            out
        })
        .collect();
    let cols = columns(&rows);
    let is_num = |k: &str| {
        rows.iter()
            .any(|r| r.iter().any(|(c, v)| c == k && v.is_number()))
    };
    let mut columns = vec![Column::text("#")];
    columns.extend(cols.iter().map(|c| {
        let name = c.replace('_', " ");
        match is_num(c) {
            true => Column::count(&name),
            false => Column::text(&name),
        }
    }));
    let rows = rows.iter().enumerate().map(|(i, row)| {
        let get = |k: &str| row.iter().find(|(c, _)| c == k).map(|(_, v)| v);
        let name: Vec<&str> = ["delivery", "disconnect", "case"]
            .iter()
            .filter_map(|k| get(k).and_then(Value::as_str))
            .collect();
        let mut cells = vec![t((i + 1).to_string())];
        cells.extend(
            cols.iter()
                .map(|c| cell(format!("runs.{i}.{c}"), c, get(c))),
        );
        Row {
            key: Some(name.join("/")),
            cells,
        }
    });
    Table {
        id: "runs".into(),
        columns,
        rows: rows.collect(),
    }
}

/// Per run (by its number in the tables): messages lost silently, announced by gap
/// markers, and duplicated, the counts that tell the delivery modes apart.
fn losses(runs: &[Value]) -> Option<Block> {
    const KINDS: [(&str, &str, Colour); 3] = [
        ("lost_silently", "lost silently", Colour::Red),
        ("gaps", "announced in gaps", Colour::Blue),
        ("duplicated", "duplicated", Colour::Grey),
    ];
    let series: Vec<Series> = (KINDS.iter())
        .filter(|(k, _, _)| runs.iter().any(|r| r[*k].is_number()))
        .map(|&(k, name, colour)| Series {
            name: name.into(),
            colour,
            points: (runs.iter().enumerate())
                .map(|(i, r)| r[k].as_f64().map(|v| (i as f64, v)))
                .collect(),
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    Some(Block::Figure(Figure {
        id: "losses".into(),
        caption: "messages lost silently, announced in gap markers, and duplicated, per run (# as in the table)".into(),
        axes: ("run".into(), "messages".into()),
        y: Scale::Count,
        shape: Shape::Bars {
            categories: (1..=runs.len()).map(|i| i.to_string()).collect(),
        },
        series,
    }))
}

/// A part of the report as a table of its keys (flattened), numbers tagged with their
/// path under `path`.
fn fields(path: &str, v: &Value) -> Table {
    let mut rows = Vec::new();
    flatten("", v, &mut rows);
    let p = |k: &str| match k.is_empty() {
        true => path.to_string(),
        false => format!("{path}.{k}"),
    };
    let rows = rows.iter().map(|(k, x)| {
        let shown = match x {
            Value::Array(a) => t(a
                .iter()
                .map(|e| e.as_str().map_or(e.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(", ")),
            Value::Number(n) if !n.is_f64() => num(p(k), n.to_string()),
            Value::Number(n) => num(
                p(k),
                crate::evidence::fmt_num(n.as_f64().unwrap_or(0.0)).replace(',', ""),
            ),
            Value::Null => t("-"),
            Value::String(s) => t(s),
            x => t(x.to_string()),
        };
        let name = if k.is_empty() { path } else { k };
        Row {
            key: None,
            cells: vec![t(name.replace('_', " ")), shown],
        }
    });
    Table {
        id: path.into(),
        columns: vec![Column::text("key"), Column::text("value")],
        rows: rows.collect(),
    }
}

/// The seed's figures behind the verdicts, read from data/evidence.yaml.
fn evidence_line() -> String {
    use crate::evidence::{fmt_num, num};
    // The seed's round figures as the seed wrote them (100 KB, 830 MB), not fmt_bytes's 100.0 KB.
    let kb = |id, name| format!("{} KB", fmt_num(num(id, name) / 1e3));
    format!(
        "evidence: seq-numbers ({} silent), ring-buffer ({} lost, {}, {} s), session-ack ({} per client per {} s), session-expiry ({} MB at {}), loss-dup-order",
        fmt_num(num("seq-numbers", "lost_silently")),
        fmt_num(num("ring-buffer", "lost")),
        kb("ring-buffer", "ring_bytes"),
        fmt_num(num("ring-buffer", "disconnect")),
        kb("session-ack", "bytes_per_client"),
        fmt_num(num("session-ack", "disconnect")),
        fmt_num(num("session-expiry", "bytes") / 1e6),
        fmt_num(num("session-expiry", "clients")),
    )
}

/// A foreign server's own figures through the runs, or why there are none.
fn server_line(r: &DeliveryReport) -> Option<String> {
    match (&r.server_process, &r.server_unmeasured) {
        (Some(sp), _) => Some(sp.line()),
        (None, Some(why)) => Some(format!("server process not measured: {why}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc::{html, markdown, text};
    use crate::report::Palette;

    #[test]
    fn the_seed_figures_come_from_the_evidence_file() {
        // The line the docs show, character for character.
        assert_eq!(
            evidence_line(),
            "evidence: seq-numbers (615 silent), ring-buffer (0 lost, 100 KB, 3 s), session-ack (83 KB per client per 3 s), session-expiry (830 MB at 10,000), loss-dup-order"
        );
    }

    fn run(mode: &str, extra: Option<(&str, Value)>) -> Value {
        let mut v = serde_json::json!({
            "delivery": mode, "disconnect": "clean", "case": "within-ring", "lost": 0,
            "resume_ms": {"p50": 1.25, "max": 2.0}, "verdict": "fine", "status": "pass"
        });
        if let Some((k, x)) = extra {
            v[k] = x;
        }
        v
    }

    /// A key or a mode added later gets a column and its numbers, tagged with their path;
    /// the status reads as a status; the row is keyed by the run.
    #[test]
    fn a_key_or_mode_added_later_gets_a_column_and_its_numbers() {
        let t = every_key(&[
            run("seq-ring", None),
            run("session-ack", Some(("acked", serde_json::json!(7)))),
        ]);
        let heads: Vec<String> = t.columns.iter().map(|c| c.header()).collect();
        assert_eq!(
            heads,
            [
                "#",
                "status",
                "delivery",
                "disconnect",
                "case",
                "lost",
                "resume ms.p50",
                "resume ms.max",
                "acked"
            ]
        );
        assert_eq!(
            t.rows[1].key.as_deref(),
            Some("session-ack/clean/within-ring")
        );
        assert_eq!(t.rows[1].cells[8], num("runs.1.acked", "7"));
        assert_eq!(t.rows[0].cells[6], num("runs.0.resume_ms.p50", "1.2"));
        assert_eq!(t.rows[0].cells[1], Span::Status(Status::Pass));
        let d = Doc {
            title: "x".into(),
            verdict: Verdict {
                text: vec![],
                tone: Tone::Plain,
            },
            blocks: vec![Block::Wide(t)],
            json: "{}".into(),
        };
        let page = html::render(&d);
        assert!(
            page.contains("data-row=\"session-ack/clean/within-ring\""),
            "{page}"
        );
        assert!(page.contains("class=\"status s-pass\">pass<"), "{page}");
        assert!(markdown::render(&d).contains("| 2 | pass | session-ack |"));
        assert!(!text::render(&d, &Palette::plain()).contains("session-ack"));
    }

    #[test]
    fn another_part_of_the_report_is_a_table_with_its_paths() {
        let t = fields(
            "sizing",
            &serde_json::json!({"ring_bytes": 20480, "per": {"session": 1.5}, "mode": "x"}),
        );
        assert_eq!(t.id, "sizing");
        let value = |k: &str| {
            let row = t.rows.iter().find(|r| r.cells[0] == Span::Text(k.into()));
            row.map(|r| r.cells[1].clone())
        };
        assert_eq!(value("ring bytes"), Some(num("sizing.ring_bytes", "20480")));
        assert_eq!(value("per.session"), Some(num("sizing.per.session", "1.5")));
        assert_eq!(value("mode"), Some(Span::Text("x".into())));
    }
}
