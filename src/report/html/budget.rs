//! HTML for `rtcheck budget`: the four ways (sequential/parallel x new/reused) computed
//! from the hops, beside the live run when there is one, as a table and a bar plot; the
//! hops, the tail, deadline and hedge, the findings. An invalid live run shows its reason,
//! never its numbers.
use super::plot::{self, Series};
use super::{esc, findings::finding, fmt_ms, num, page};
use crate::budget::model::{BudgetReport, Hop, Live};
use crate::findings::Status;

/// The four ways: label and JSON key (the same key in the report, `live` and
/// `live.computed`).
const WAYS: [(&str, &str); 4] = [
    ("sequential, new", "sequential_ms"),
    ("parallel, new", "parallel_ms"),
    ("sequential, reused", "sequential_reused_ms"),
    ("parallel, reused", "parallel_reused_ms"),
];

fn computed(r: &BudgetReport) -> [f64; 4] {
    [
        r.sequential_ms,
        r.parallel_ms,
        r.sequential_reused_ms,
        r.parallel_reused_ms,
    ]
}

fn measured(l: &Live) -> [f64; 4] {
    [
        l.sequential_ms,
        l.parallel_ms,
        l.sequential_reused_ms,
        l.parallel_reused_ms,
    ]
}

fn from_measured_hops(l: &Live) -> [f64; 4] {
    let c = &l.computed;
    [
        c.sequential_ms,
        c.parallel_ms,
        c.sequential_reused_ms,
        c.parallel_reused_ms,
    ]
}

/// The live run when it is valid (an invalid one has no numbers to show).
fn valid_live(r: &BudgetReport) -> Option<&Live> {
    r.live.as_ref().filter(|l| l.invalid.is_none())
}

pub fn render(r: &BudgetReport) -> anyhow::Result<String> {
    let json = crate::report::json::render(r)?;
    let worst = r.findings.iter().map(|f| f.status).max();
    let live_invalid = r.live.as_ref().and_then(|l| l.invalid.as_deref());
    let (verdict, class) = match (live_invalid, worst) {
        (Some(why), _) => (format!("INVALID live run: {why}"), "bad"),
        (None, w) => (
            format!(
                "{} hops: sequential {} ms, parallel {} ms (slowest hop {})",
                r.hops.len(),
                fmt_ms(r.sequential_ms),
                fmt_ms(r.parallel_ms),
                r.slowest_hop.name
            ),
            match w {
                Some(Status::Fail) => "bad",
                Some(Status::Warn) => "warn",
                _ => "",
            },
        ),
    };
    let mut b = format!("<p class=\"dim\">{}</p>\n", esc(&r.model));
    b.push_str(&ways_table(r));
    b.push_str(&ways_plot(r));
    b.push_str(&hops_table("Hops", "hops", &r.hops));
    b.push_str(&tail(r));
    if let Some(l) = &r.live {
        b.push_str(&live(l));
    }
    if !r.findings.is_empty() {
        b.push_str("<h2>Findings</h2>\n");
    }
    for (i, f) in r.findings.iter().enumerate() {
        b.push_str(&finding(i, f));
    }
    Ok(page("rtcheck budget", &verdict, class, &b, &json))
}

fn ways_table(r: &BudgetReport) -> String {
    let live = valid_live(r);
    let mut t = String::from(
        "<h2>The four ways</h2>\n<table id=\"ways\"><tr><th>way</th><th>computed (ms)</th>",
    );
    if live.is_some() {
        t.push_str(
            "<th>live, measured (ms)</th><th>live, computed from the measured hops (ms)</th>",
        );
    }
    t.push_str("</tr>\n");
    for (i, (label, key)) in WAYS.iter().enumerate() {
        t.push_str(&format!(
            "<tr data-way=\"{key}\"><td>{label}</td><td class=\"n\">{}</td>",
            num(key, &fmt_ms(computed(r)[i]))
        ));
        if let Some(l) = live {
            t.push_str(&format!(
                "<td class=\"n\">{}</td><td class=\"n\">{}</td>",
                num(&format!("live.{key}"), &fmt_ms(measured(l)[i])),
                num(
                    &format!("live.computed.{key}"),
                    &fmt_ms(from_measured_hops(l)[i])
                ),
            ));
        }
        t.push_str("</tr>\n");
    }
    t.push_str(&format!(
        "</table>\n<p>As configured (each hop's own reuse): sequential {} ms, parallel {} ms. Slowest hop: {} ({} ms on a new connection).</p>\n",
        num("as_configured.sequential_ms", &fmt_ms(r.as_configured.sequential_ms)),
        num("as_configured.parallel_ms", &fmt_ms(r.as_configured.parallel_ms)),
        esc(&r.slowest_hop.name),
        num("slowest_hop.ms", &fmt_ms(r.slowest_hop.ms)),
    ));
    t
}

fn ways_plot(r: &BudgetReport) -> String {
    let bars = |name, color, v: [f64; 4]| Series {
        name,
        color,
        points: v
            .iter()
            .enumerate()
            .map(|(i, &y)| Some((i as f64, y)))
            .collect(),
    };
    let mut series = vec![bars("computed", plot::BLUE_, computed(r))];
    if let Some(l) = valid_live(r) {
        series.push(bars("live, measured", plot::GREEN_, measured(l)));
        series.push(bars("live, computed", plot::GREY_, from_measured_hops(l)));
    }
    let categories = ["seq new", "par new", "seq reused", "par reused"];
    format!(
        "<div class=\"plots\">{}</div>\n",
        plot::bars(
            "ways",
            "the request's time the four ways: sequential or parallel calls, new or reused connections",
            ("way", "ms"),
            plot::Y::Ms,
            &categories,
            &series
        )
    )
}

fn hops_table(title: &str, path: &str, hops: &[Hop]) -> String {
    let mut t = format!(
        "<h2>{}</h2>\n<table id=\"{}\"><tr><th>hop</th><th>RTT ms</th><th>server time ms</th><th>p99 ms</th><th>reused</th></tr>\n",
        esc(title),
        esc(&path.replace('.', "-"))
    );
    for (i, h) in hops.iter().enumerate() {
        let p = |k: &str| format!("{path}.{i}.{k}");
        t.push_str(&format!(
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
            esc(&h.name),
            num(&p("rtt_ms"), &fmt_ms(h.rtt_ms)),
            num(&p("server_time_ms"), &fmt_ms(h.server_time_ms)),
            h.p99_ms.map_or("-".into(), |v| num(&p("p99_ms"), &fmt_ms(v))),
            if h.reuse { "yes" } else { "no" },
        ));
    }
    t.push_str("</table>\n");
    t
}

fn tail(r: &BudgetReport) -> String {
    let mut t = format!(
        "<h2>Tail</h2>\n<p>A fan-out to all {} hops meets at least one at its p99 in a share {} of requests ({:.1}%; 1 - 0.99^n).",
        r.hops.len(),
        num("tail_amplification", &format!("{:.3}", r.tail_amplification)),
        r.tail_amplification * 100.0,
    );
    if let Some(x) = &r.tail {
        t.push_str(&format!(
            " At the p99 of {}: parallel {} ms.",
            esc(&x.hop),
            num("tail.parallel_p99_ms", &fmt_ms(x.parallel_p99_ms))
        ));
    }
    t.push_str("</p>\n");
    if let Some(d) = &r.deadline {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".into()
            } else {
                esc(&v.join(", "))
            }
        };
        t.push_str(&format!(
            "<p id=\"deadline\">Deadline {} ms per call: parallel {} ms, at the p99 {} ms. Always cut: {}; cut at their tail: {}.</p>\n",
            num("deadline.deadline_ms", &fmt_ms(d.deadline_ms)),
            num("deadline.parallel_ms", &fmt_ms(d.parallel_ms)),
            num("deadline.parallel_p99_ms", &fmt_ms(d.parallel_p99_ms)),
            list(&d.always_cut),
            list(&d.tail_cut),
        ));
    }
    if let Some(h) = &r.hedge {
        t.push_str(&format!(
            "<p id=\"hedge\">Hedge after {} ms: p99 {} ms for at most {}% extra calls.</p>\n",
            num("hedge.after_ms", &fmt_ms(h.after_ms)),
            num("hedge.parallel_p99_ms", &fmt_ms(h.parallel_p99_ms)),
            num(
                "hedge.extra_calls_max_pct",
                &format!("{:.0}", h.extra_calls_max_pct)
            ),
        ));
    }
    if let Some(b) = r.budget_ms {
        t.push_str(&format!(
            "<p>Budget: {} ms.</p>\n",
            num("budget_ms", &fmt_ms(b))
        ));
    }
    t
}

fn live(l: &Live) -> String {
    let mut t = format!(
        "<h2>Live run</h2>\n<p>{} rounds (medians), TCP_NODELAY on the client {}; URLs: {}.</p>\n",
        num("live.rounds", &l.rounds.to_string()),
        if l.tcp_nodelay { "on" } else { "off" },
        esc(&l.urls.join(", "))
    );
    match &l.invalid {
        Some(why) => t.push_str(&format!(
            "<div class=\"invalid\" id=\"live-invalid\"><b>invalid</b>: {}</div>\n",
            esc(why)
        )),
        None => t.push_str(&hops_table(
            "Hops as measured (connect time as RTT)",
            "live.hops",
            &l.hops,
        )),
    }
    t
}
