//! HTML for `bench fanout`: the verdict, one latency table, then per scenario its
//! distribution against the floor F and its rounds (last client, hub). An invalid scenario
//! is drawn as invalid, with the reason, never as numbers.
use super::plot::{self, Series};
use super::{checks, esc, ms, notes, num, page, scenario_open};
use crate::bench::model::{BenchReport, ScenarioResult};

pub fn render(rep: &BenchReport) -> anyhow::Result<String> {
    let json = crate::report::json::render(rep)?;
    let invalid: Vec<&str> = rep
        .scenarios
        .iter()
        .filter(|s| !s.valid)
        .map(|s| s.name.as_str())
        .collect();
    let (verdict, class) = if invalid.is_empty() {
        (
            format!("every result valid ({} scenarios)", rep.scenarios.len()),
            "",
        )
    } else {
        (
            format!(
                "INVALID: {} (no numbers shown for them)",
                invalid.join(", ")
            ),
            "bad",
        )
    };
    let mut b = format!(
        "<p>{} clients, {} rounds at {}/s, {} B messages, {} slow clients (C1, C2, C3); server {}; {} cores.</p>\n",
        num("connections", &crate::evidence::fmt_num(rep.connections as f64)),
        num("rounds", &rep.rounds.to_string()),
        num("rate", &rep.rate.to_string()),
        num("size", &rep.size.to_string()),
        num("slow", &rep.slow.to_string()),
        esc(&rep.server),
        num("host_cores", &rep.host_cores.to_string()),
    );
    b.push_str(&table(rep));
    let floor = rep.scenarios.iter().find(|s| s.name == "F" && s.valid);
    for (i, s) in rep.scenarios.iter().enumerate() {
        b.push_str(&scenario(i, s, floor));
    }
    Ok(page("rtcheck bench fanout", &verdict, class, &b, &json))
}

fn table(rep: &BenchReport) -> String {
    let mut t = String::from(
        "<h2>Latency (ms, healthy clients)</h2>\n<table id=\"latency\"><tr><th>scenario</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th><th>last client median / max</th><th>hub median / max</th><th>rounds</th><th>p99 / F</th></tr>\n",
    );
    for (i, s) in rep.scenarios.iter().enumerate() {
        let p = |k: &str| format!("scenarios.{i}.{k}");
        if !s.valid {
            t.push_str(&format!(
                "<tr class=\"invalid\" data-scenario=\"{}\"><td>{}</td><td colspan=\"8\">{}</td></tr>\n",
                esc(&s.name),
                esc(&s.name),
                esc(s.notes.first().map_or("INVALID", |n| n.as_str()))
            ));
            continue;
        }
        t.push_str(&format!(
            "<tr data-scenario=\"{}\"><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} / {}</td><td class=\"n\">{} / {}</td><td class=\"n\">{}/{}</td><td class=\"n\">{}</td></tr>\n",
            esc(&s.name),
            esc(&s.name),
            ms(&p("p50_ms"), s.p50_ms),
            ms(&p("p99_ms"), s.p99_ms),
            ms(&p("p999_ms"), s.p999_ms),
            ms(&p("max_ms"), s.max_ms),
            ms(&p("last_client_median_ms"), s.last_client_median_ms),
            ms(&p("last_client_max_ms"), s.last_client_max_ms),
            ms(&p("hub_median_ms"), s.hub_median_ms),
            ms(&p("hub_max_ms"), s.hub_max_ms),
            num(&p("rounds_completed"), &s.rounds_completed.to_string()),
            num(&p("rounds_total"), &s.rounds_total.to_string()),
            s.p99_vs_floor
                .map(|r| format!("x{}", num(&p("p99_vs_floor"), &format!("{r:.2}"))))
                .unwrap_or_else(|| "-".into()),
        ));
    }
    t.push_str("</table>\n");
    t
}

fn scenario(i: usize, s: &ScenarioResult, floor: Option<&ScenarioResult>) -> String {
    let mut b = scenario_open(&s.name, &s.description, s.valid, &s.notes, "no latency");
    if !s.valid {
        b.push_str(&checks(&s.checks));
        b.push_str("</section>\n");
        return b;
    }
    b.push_str("<div class=\"plots\">");
    b.push_str(&distribution(s, floor));
    b.push_str(&rounds(s));
    b.push_str("</div>\n");
    b.push_str(&percentile_table(i, s));
    if let Some(r) = &s.reference {
        b.push_str(&format!(
            "<p class=\"dim\">Reference ({}): {}: {}</p>\n",
            esc(&r.id),
            esc(&r.value),
            esc(&r.claim)
        ));
    }
    b.push_str(&notes(&s.notes));
    b.push_str(&checks(&s.checks));
    b.push_str("</section>\n");
    b
}

fn pct_points(s: &ScenarioResult) -> Vec<Option<(f64, f64)>> {
    s.percentiles
        .iter()
        .map(|p| Some((plot::pct_axis(p.percentile), p.ms)))
        .collect()
}

fn distribution(s: &ScenarioResult, floor: Option<&ScenarioResult>) -> String {
    let mut series = vec![Series {
        name: &s.name,
        color: plot::BLUE_,
        points: pct_points(s),
    }];
    let against = match floor {
        Some(f) if f.name != s.name => {
            series.push(Series {
                name: "F (floor)",
                color: plot::GREY_,
                points: pct_points(f),
            });
            "against the raw-TCP floor F"
        }
        Some(_) => "the raw-TCP floor itself",
        None => "no valid floor F in this run",
    };
    plot::distribution(
        &format!("distribution-{}", s.name),
        &format!("{}: latency by percentile (log axes), {against}", s.name),
        &series,
    )
}

fn rounds(s: &ScenarioResult) -> String {
    let last = s
        .per_round
        .iter()
        .map(|r| r.last_client_ms.map(|v| (r.round as f64, v)))
        .collect();
    let hub: Vec<Option<(f64, f64)>> = s
        .per_round
        .iter()
        .map(|r| r.hub_ms.map(|v| (r.round as f64, v)))
        .collect();
    let has_hub = hub.iter().any(Option::is_some);
    // The hub first, so the last client's line is drawn on top where they meet.
    let mut series = Vec::new();
    if has_hub {
        series.push(Series {
            name: "hub",
            color: plot::GREEN_,
            points: hub,
        });
    }
    series.push(Series {
        name: "last client",
        color: plot::RED_,
        points: last,
    });
    plot::xy(
        &format!("rounds-{}", s.name),
        &format!(
            "{}: per round, the last client's latency and the hub's time{} (gaps: nobody received the round)",
            s.name,
            if has_hub { "" } else { " (the server reports no hub time)" }
        ),
        ("round", "ms"),
        plot::Y::Ms,
        &series,
        s.per_round.len() <= 100,
    )
}

fn percentile_table(i: usize, s: &ScenarioResult) -> String {
    let head: String = s
        .percentiles
        .iter()
        .map(|p| format!("<th>p{}</th>", p.percentile))
        .collect();
    let cells: String = s
        .percentiles
        .iter()
        .enumerate()
        .map(|(j, p)| {
            format!(
                "<td class=\"n\">{}</td>",
                num(
                    &format!("scenarios.{i}.percentiles.{j}.ms"),
                    &super::fmt_ms(p.ms)
                )
            )
        })
        .collect();
    format!("<table class=\"percentiles\"><tr><th>ms</th>{head}</tr><tr><td></td>{cells}</tr></table>\n")
}
