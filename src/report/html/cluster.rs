//! HTML for `bench cluster`: the verdict, one table of every scenario, latency bars per
//! scenario (the single-node baseline beside the Redis ones), duplicates per node, then per
//! scenario its verdict, counts and, after a node kill, ghosts over time (ttl vs events).
//! An invalid scenario shows its reasons and no number.
use super::plot::{self, Series};
use super::{checks, esc, evidence_list, ms, notes, num, page, scenario_open};
use crate::bench::cluster::model::{ClusterReport, ClusterScenario};

pub fn render(rep: &ClusterReport) -> anyhow::Result<String> {
    let json = crate::report::json::render(rep)?;
    let invalid: Vec<&str> = rep
        .scenarios
        .iter()
        .filter(|s| !s.valid)
        .map(|s| s.name.as_str())
        .collect();
    let (verdict, class) = match invalid.is_empty() {
        true => (
            format!("every result valid ({} scenarios)", rep.scenarios.len()),
            "",
        ),
        false => (
            format!(
                "INVALID: {} (no numbers shown for them)",
                invalid.join(", ")
            ),
            "bad",
        ),
    };
    let mut b = format!(
        "<p>{} nodes, {} clients, {} rounds at {}/s, {} B messages; presence TTL {} s; {}; {} cores.</p>\n",
        num("nodes", &rep.nodes.to_string()),
        num("connections", &rep.connections.to_string()),
        num("rounds", &rep.rounds.to_string()),
        num("rate", &rep.rate.to_string()),
        num("size", &rep.size.to_string()),
        num("presence_ttl_s", &rep.presence_ttl_s.to_string()),
        esc(&rep.redis),
        num("host_cores", &rep.host_cores.to_string()),
    );
    b.push_str(&table(rep));
    b.push_str(&format!(
        "<div class=\"plots\">{}{}</div>\n",
        latency(rep),
        duplicates(rep)
    ));
    for (i, s) in rep.scenarios.iter().enumerate() {
        b.push_str(&scenario(i, s));
    }
    if !rep.reference.is_empty() {
        b.push_str("<h2>The seed's figures</h2>\n");
        b.push_str(&evidence_list(&rep.reference));
    }
    Ok(page("rtcheck bench cluster", &verdict, class, &b, &json))
}

fn order(s: &ClusterScenario) -> &'static str {
    match s.order_hash_agree {
        Some(true) => "agree",
        Some(false) => "DIFFER",
        None => "-",
    }
}

/// `60 (a 60, b 0)`, each number tagged.
fn by_node(i: usize, s: &ClusterScenario) -> String {
    let by: Vec<String> = s
        .duplicates_by_node
        .iter()
        .map(|(n, c)| {
            let path = format!("scenarios.{i}.duplicates_by_node.{n}");
            format!("{} {}", esc(n), num(&path, &c.to_string()))
        })
        .collect();
    match by.is_empty() {
        true => "-".into(),
        false => by.join(", "),
    }
}

fn table(rep: &ClusterReport) -> String {
    let mut t = String::from(
        "<h2>Scenarios</h2>\n<div class=\"wide\"><table id=\"scenarios\" class=\"compact\"><tr><th>scenario</th><th>nodes</th><th>p50</th><th>p99</th><th>p99.9</th><th>&Delta;p50</th><th>&Delta;p99</th><th>received</th><th>lost</th><th>lost silently</th><th>gap-reported</th><th>duplicates</th><th>by node</th><th>order hash</th><th>reconnects</th></tr>\n",
    );
    for (i, s) in rep.scenarios.iter().enumerate() {
        if !s.valid {
            t.push_str(&format!(
                "<tr class=\"invalid\" data-scenario=\"{n}\"><td>{n}</td><td colspan=\"14\">INVALID: {}</td></tr>\n",
                esc(&s.notes.join("; ")),
                n = esc(&s.name),
            ));
            continue;
        }
        let p = |k: &str| format!("scenarios.{i}.{k}");
        let n = |k: &str, v: u64| format!("<td class=\"n\">{}</td>", num(&p(k), &v.to_string()));
        let m = |k: &str, v: Option<f64>| format!("<td class=\"n\">{}</td>", ms(&p(k), v));
        t.push_str(&format!(
            "<tr data-scenario=\"{e}\"><td>{e}</td>{}{}{}{}{}{}{}{}{}{}{}<td>{}</td><td class=\"order\">{}</td>{}</tr>\n",
            n("nodes", s.nodes),
            m("p50_ms", s.p50_ms),
            m("p99_ms", s.p99_ms),
            m("p999_ms", s.p999_ms),
            m("delta_p50_ms", s.delta_p50_ms),
            m("delta_p99_ms", s.delta_p99_ms),
            n("received", s.received),
            n("lost", s.lost),
            n("lost_silently", s.lost_silently),
            n("gap_reported", s.gap_reported),
            n("duplicates", s.duplicates),
            by_node(i, s),
            order(s),
            n("reconnects", s.reconnects),
            e = esc(&s.name),
        ));
    }
    t.push_str("</table></div>\n");
    t
}

/// p50/p99/p99.9 bars per valid scenario, in the report's order (single first).
fn latency(rep: &ClusterReport) -> String {
    let valid: Vec<&ClusterScenario> = rep
        .scenarios
        .iter()
        .filter(|s| s.valid && s.p50_ms.is_some())
        .collect();
    if valid.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = valid.iter().map(|s| s.name.as_str()).collect();
    let pick = |f: fn(&ClusterScenario) -> Option<f64>| -> Vec<Option<(f64, f64)>> {
        valid
            .iter()
            .enumerate()
            .map(|(x, s)| f(s).map(|v| (x as f64, v)))
            .collect()
    };
    let series = [
        Series {
            name: "p50",
            color: plot::GREEN_,
            points: pick(|s| s.p50_ms),
        },
        Series {
            name: "p99",
            color: plot::BLUE_,
            points: pick(|s| s.p99_ms),
        },
        Series {
            name: "p99.9",
            color: plot::RED_,
            points: pick(|s| s.p999_ms),
        },
    ];
    plot::bars(
        "latency",
        "latency per scenario (receive - scheduled time), on a log scale (a Redis restart's seconds-long tail beside the sub-millisecond baseline): the single-node baseline beside the Redis scenarios; invalid scenarios left out",
        ("scenario", "ms (log scale)"),
        plot::Y::LogMs,
        &names,
        &series,
    )
}

/// Duplicates per scenario, one bar per node that delivered a second copy.
fn duplicates(rep: &ClusterReport) -> String {
    let valid: Vec<&ClusterScenario> = rep.scenarios.iter().filter(|s| s.valid).collect();
    if valid.is_empty() {
        return String::new();
    }
    let mut nodes: Vec<&str> = valid
        .iter()
        .flat_map(|s| s.duplicates_by_node.keys().map(String::as_str))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    const COLORS: [plot::RGBColor; 4] = [plot::RED_, plot::BLUE_, plot::GREEN_, plot::GREY_];
    let per = |f: &dyn Fn(&ClusterScenario) -> u64| -> Vec<Option<(f64, f64)>> {
        valid
            .iter()
            .enumerate()
            .map(|(x, s)| Some((x as f64, f(s) as f64)))
            .collect()
    };
    let series: Vec<Series> = match nodes.is_empty() {
        // No node sent a second copy anywhere: one bar of totals (all 0) per scenario.
        true => vec![Series {
            name: "all nodes",
            color: plot::GREY_,
            points: per(&|s| s.duplicates),
        }],
        false => nodes
            .iter()
            .enumerate()
            .map(|(k, &n)| Series {
                name: n,
                color: COLORS[k % COLORS.len()],
                points: per(&|s| s.duplicates_by_node.get(n).copied().unwrap_or(0)),
            })
            .collect(),
    };
    let names: Vec<&str> = valid.iter().map(|s| s.name.as_str()).collect();
    plot::bars(
        "duplicates",
        "duplicate copies per scenario, by the node that delivered the second copy (one path: 0)",
        ("scenario", "duplicates"),
        plot::Y::Count,
        &names,
        &series,
    )
}

fn scenario(i: usize, s: &ClusterScenario) -> String {
    let mut b = scenario_open(&s.name, &s.description, s.valid, &s.notes, "no number");
    if s.valid {
        let p = |k: &str| format!("scenarios.{i}.{k}");
        b.push_str(&format!(
            "<p class=\"valid\">valid: {} of {} expected messages received ({} clients, {} reconnects); lost {}, of them silently {}; duplicates {}; order hash: {}.</p>\n",
            num(&p("received"), &s.received.to_string()),
            num(&p("expected"), &s.expected.to_string()),
            num(&p("clients"), &s.clients.to_string()),
            num(&p("reconnects"), &s.reconnects.to_string()),
            num(&p("lost"), &s.lost.to_string()),
            num(&p("lost_silently"), &s.lost_silently.to_string()),
            num(&p("duplicates"), &s.duplicates.to_string()),
            order(s),
        ));
        b.push_str(&ghosts(i, s));
        b.push_str(&notes(&s.notes));
    }
    b.push_str(&checks(&s.checks));
    b.push_str("</section>\n");
    b
}

/// Ghosts (presence online − clients held) against seconds since the kill, ttl vs events.
fn ghosts(i: usize, s: &ClusterScenario) -> String {
    if s.ghosts.is_empty() {
        return String::new();
    }
    let series: Vec<Series> = s
        .ghosts
        .iter()
        .map(|g| Series {
            name: &g.presence,
            color: match g.presence.as_str() {
                "ttl" => plot::GREEN_,
                _ => plot::RED_,
            },
            points: g
                .samples
                .iter()
                .map(|x| Some((x.t_s, x.ghosts as f64)))
                .collect(),
        })
        .collect();
    let fig = plot::xy(
        &format!("ghosts-{}", s.name),
        &format!(
            "{}: ghost users over time after one node was SIGKILLed (presence ttl vs events)",
            s.name
        ),
        ("seconds after the kill", "ghosts"),
        plot::Y::Count,
        &series,
        true,
    );
    let rows: String = s
        .ghosts
        .iter()
        .enumerate()
        .map(|(j, g)| {
            let p = |k: &str| format!("scenarios.{i}.ghosts.{j}.{k}");
            let last = g.samples.len().saturating_sub(1);
            let end = g.samples.last().map_or("-".into(), |x| {
                num(&p(&format!("samples.{last}.ghosts")), &x.ghosts.to_string())
            });
            let cleared = g.cleared_after_s.map_or("never".into(), |t| {
                format!("after {} s", num(&p("cleared_after_s"), &format!("{t:.1}")))
            });
            format!(
                "<tr data-presence=\"{}\"><td>{}</td><td class=\"n\">{end}</td><td>{cleared}</td></tr>",
                esc(&g.presence),
                esc(&g.presence)
            )
        })
        .collect();
    format!(
        "<div class=\"plots\">{fig}</div>\n<table class=\"ghosts\"><tr><th>presence</th><th>ghosts at the end</th><th>cleared</th></tr>{rows}</table>\n"
    )
}
