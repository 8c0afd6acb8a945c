//! HTML for `verify delivery`: the verdict, the options, one table row per run and the
//! findings with their status colours and evidence. The table is built from each run's
//! JSON, so a key or a delivery mode added later renders without a change here: the known
//! columns come first in a fixed order, any other key after them, the verdict in a row
//! under its run.
use super::plot::{self, Series};
use super::{esc, findings::finding, num, page, status};
use crate::findings::Status;
use crate::verify::delivery::DeliveryReport;
use serde_json::Value;

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
/// Top-level keys with a place of their own on the page.
const SHOWN: &[&str] = &[
    "kind",
    "target",
    "options",
    "runs",
    "findings",
    "summary",
    "duration_ms",
];
/// Not a column: the sentence, in a row of its own under its run.
const LAST: &str = "verdict";

pub fn render(r: &DeliveryReport) -> anyhow::Result<String> {
    let json = crate::report::json::render(r)?;
    let v: Value = serde_json::from_str(&json)?;
    let s = &r.summary;
    let class = if s.fail > 0 {
        "bad"
    } else if s.warn > 0 {
        "warn"
    } else {
        ""
    };
    let verdict = format!(
        "verify delivery ({}): {} pass, {} warn, {} fail, {} skip",
        r.target, s.pass, s.warn, s.fail, s.skip
    );
    let mut b = format!(
        "<p id=\"summary\">{} fail, {} warn, {} pass, {} skip &middot; {} &middot; {} ms</p>\n",
        num("summary.fail", &s.fail.to_string()),
        num("summary.warn", &s.warn.to_string()),
        num("summary.pass", &s.pass.to_string()),
        num("summary.skip", &s.skip.to_string()),
        esc(&r.target),
        num("duration_ms", &r.duration_ms.to_string()),
    );
    b.push_str(&fields("options", &v["options"]));
    let all = v["runs"].as_array().map_or(&[][..], |a| a.as_slice());
    b.push_str(&runs(all));
    b.push_str(&losses(all));
    // Any other part of the report (sizing, ...) as the JSON has it.
    for (k, x) in v.as_object().into_iter().flatten() {
        if !SHOWN.contains(&k.as_str()) {
            b.push_str(&format!("<h2>{}</h2>\n", esc(&k.replace('_', " "))));
            b.push_str(&fields(k, x));
        }
    }
    b.push_str("<h2>Findings</h2>\n");
    for (i, f) in r.findings.iter().enumerate() {
        b.push_str(&finding(i, f));
    }
    Ok(page("rtcheck verify delivery", &verdict, class, &b, &json))
}

/// `a.b` for nested objects, in the JSON's own order.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        x => out.push((prefix.to_string(), x.clone())),
    }
}

/// The columns of the runs: known ones present first, then the others as they appear.
fn columns(rows: &[Vec<(String, Value)>]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for r in rows {
        for (k, _) in r {
            if !seen.contains(k) {
                seen.push(k.clone());
            }
        }
    }
    let mut cols: Vec<String> = ORDER
        .iter()
        .filter(|k| seen.iter().any(|s| s == *k))
        .map(|k| k.to_string())
        .collect();
    cols.extend(
        seen.iter()
            .filter(|k| !ORDER.contains(&k.as_str()) && k.as_str() != LAST)
            .cloned(),
    );
    cols
}

/// One cell: numbers tagged with their JSON path, the status as its colour.
fn cell(path: &str, key: &str, v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "<td>-</td>".into(),
        Some(Value::Number(n)) => {
            let x = n.as_f64().unwrap_or(0.0);
            let shown = if n.is_f64() {
                format!("{x:.1}")
            } else {
                n.to_string()
            };
            format!(
                "<td class=\"n\">{}</td>",
                num(&format!("{path}.{key}"), &shown)
            )
        }
        Some(Value::String(s)) if key == "status" => match s.as_str() {
            "pass" => format!("<td>{}</td>", status(Status::Pass)),
            "warn" => format!("<td>{}</td>", status(Status::Warn)),
            "fail" => format!("<td>{}</td>", status(Status::Fail)),
            "skip" => format!("<td>{}</td>", status(Status::Skip)),
            other => format!("<td>{}</td>", esc(other)),
        },
        Some(Value::String(s)) => format!("<td>{}</td>", esc(s)),
        Some(Value::Bool(b)) => format!("<td>{}</td>", if *b { "yes" } else { "no" }),
        Some(x) => format!("<td>{}</td>", esc(&x.to_string())),
    }
}

fn runs(runs: &[Value]) -> String {
    let rows: Vec<Vec<(String, Value)>> = runs
        .iter()
        .map(|r| {
            let mut out = Vec::new();
            flatten("", r, &mut out);
            out
        })
        .collect();
    let cols = columns(&rows);
    let mut t = String::from(
        "<h2>Runs</h2>\n<div class=\"wide\"><table id=\"runs\" class=\"compact\"><tr><th>#</th>",
    );
    for c in &cols {
        t.push_str(&format!("<th>{}</th>", esc(&c.replace('_', " "))));
    }
    t.push_str("</tr>\n");
    for (i, row) in rows.iter().enumerate() {
        let get = |k: &str| row.iter().find(|(c, _)| c == k).map(|(_, v)| v);
        let st = get("status").and_then(Value::as_str).unwrap_or("");
        let name = ["delivery", "disconnect", "case"]
            .iter()
            .filter_map(|k| get(k).and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("/");
        t.push_str(&format!(
            "<tr class=\"run {}\" data-run=\"{}\" data-status=\"{}\"><td>{}</td>",
            esc(st),
            esc(&name),
            esc(st),
            i + 1
        ));
        for c in &cols {
            t.push_str(&cell(&format!("runs.{i}"), c, get(c)));
        }
        t.push_str("</tr>\n");
        // The verdict reads as a sentence: a row of its own under the numbers.
        if let Some(v) = get(LAST) {
            let text = v.as_str().map_or(v.to_string(), str::to_string);
            t.push_str(&format!(
                "<tr class=\"verdict-row {}\"><td></td><td></td><td colspan=\"{}\">{}</td></tr>\n",
                esc(st),
                cols.len().saturating_sub(1).max(1),
                esc(&text)
            ));
        }
    }
    t.push_str("</table></div>\n");
    t
}

/// Per run (by its number in the table): messages lost silently, announced by gap
/// markers, and duplicated, the counts that tell the delivery modes apart.
fn losses(runs: &[Value]) -> String {
    const KINDS: [(&str, &str, plot::RGBColor); 3] = [
        ("lost_silently", "lost silently", plot::RED_),
        ("gaps", "announced in gaps", plot::BLUE_),
        ("duplicated", "duplicated", plot::GREY_),
    ];
    let series: Vec<Series> = KINDS
        .iter()
        .filter(|(k, _, _)| runs.iter().any(|r| r[*k].is_number()))
        .map(|&(k, name, color)| Series {
            name,
            color,
            points: runs
                .iter()
                .enumerate()
                .map(|(i, r)| r[k].as_f64().map(|v| (i as f64, v)))
                .collect(),
        })
        .collect();
    if series.is_empty() {
        return String::new();
    }
    let labels: Vec<String> = (1..=runs.len()).map(|i| i.to_string()).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    format!(
        "<div class=\"plots\">{}</div>\n",
        plot::bars(
            "losses",
            "messages lost silently, announced in gap markers, and duplicated, per run (# as in the table)",
            ("run", "messages"),
            plot::Y::Count,
            &labels,
            &series
        )
    )
}

/// A part of the report as a table of its keys (flattened), numbers tagged with their
/// path under `path`.
fn fields(path: &str, v: &Value) -> String {
    let mut rows = Vec::new();
    flatten("", v, &mut rows);
    let mut t = format!("<table id=\"{}\">", esc(path));
    let p = |k: &str| {
        if k.is_empty() {
            path.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    for (k, x) in &rows {
        let shown = match x {
            Value::Array(a) => esc(&a
                .iter()
                .map(|e| e.as_str().map_or(e.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(", ")),
            Value::Number(n) if !n.is_f64() => num(&p(k), &n.to_string()),
            Value::Number(n) => num(
                &p(k),
                &crate::evidence::fmt_num(n.as_f64().unwrap_or(0.0)).replace(',', ""),
            ),
            Value::Null => "-".into(),
            Value::String(s) => esc(s),
            x => esc(&x.to_string()),
        };
        t.push_str(&format!(
            "<tr><th>{}</th><td>{shown}</td></tr>",
            esc(&if k.is_empty() { path } else { k }.replace('_', " "))
        ));
    }
    t.push_str("</table>\n");
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_or_mode_added_later_gets_a_column_and_its_numbers() {
        let r = |mode: &str, extra: Option<(&str, Value)>| {
            let mut v = serde_json::json!({
                "delivery": mode, "disconnect": "clean", "case": "within-ring", "lost": 0,
                "resume_ms": {"p50": 1.25, "max": 2.0}, "verdict": "fine", "status": "pass"
            });
            if let Some((k, x)) = extra {
                v[k] = x;
            }
            v
        };
        let t = runs(&[
            r("seq-ring", None),
            r("session-ack", Some(("acked", serde_json::json!(7)))),
        ]);
        let heads: Vec<&str> = t
            .split("<th>")
            .skip(1)
            .map(|h| &h[..h.find('<').unwrap()])
            .collect();
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
        assert!(t.contains("data-path=\"runs.1.acked\">7<"), "{t}");
        assert!(
            t.contains("data-path=\"runs.0.resume_ms.p50\">1.2<")
                || t.contains("data-path=\"runs.0.resume_ms.p50\">1.3<"),
            "{t}"
        );
        assert!(
            t.contains("data-run=\"session-ack/clean/within-ring\""),
            "{t}"
        );
        assert!(t.contains("class=\"status s-pass\""), "{t}");
        assert_eq!(t.matches("colspan=\"7\">fine</td>").count(), 2, "{t}");
    }

    #[test]
    fn another_part_of_the_report_is_a_table_with_its_paths() {
        let t = fields(
            "sizing",
            &serde_json::json!({"ring_bytes": 20480, "per": {"session": 1.5}, "mode": "x"}),
        );
        assert!(t.contains("<table id=\"sizing\">"), "{t}");
        assert!(t.contains("data-path=\"sizing.ring_bytes\">20480<"), "{t}");
        assert!(t.contains("data-path=\"sizing.per.session\">1.5<"), "{t}");
        assert!(t.contains("<th>mode</th><td>x</td>"), "{t}");
    }
}
