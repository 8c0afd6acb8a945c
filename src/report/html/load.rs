//! HTML for `rtcheck load`: the findings first, a table per level (an invalid level is a
//! row with its reasons, never numbers), throughput and p99 against concurrency with the
//! knee marked, the order of reaction.
use super::plot::{self, Series};
use super::{esc, findings::finding, fmt_ms, num, page};
use crate::findings::Status;
use crate::load::model::{Level, LoadReport};

pub fn render(r: &LoadReport) -> anyhow::Result<String> {
    let json = crate::report::json::render(r)?;
    let invalid: Vec<String> = r
        .levels
        .iter()
        .filter(|l| !l.valid)
        .map(|l| format!("C = {}", l.concurrency))
        .collect();
    let worst = r.findings.iter().map(|f| f.status).max();
    let (verdict, class) = if !invalid.is_empty() {
        (
            format!(
                "INVALID: {} (no numbers shown for them)",
                invalid.join(", ")
            ),
            "bad",
        )
    } else {
        let knee = r
            .knee
            .as_ref()
            .map_or("no knee within the sweep".into(), |k| {
                format!("knee at C = {}", k.concurrency)
            });
        let class = match worst {
            Some(Status::Fail) => "bad",
            Some(Status::Warn) => "warn",
            _ => "",
        };
        (
            format!("every level valid ({}); {knee}", r.levels.len()),
            class,
        )
    };
    let mut b = format!(
        "<p>{} {} &middot; {} loop, latency from the {} &middot; {} ms per level, timeout {} ms, Little's law within {}% &middot; client TCP_NODELAY {}, engine {}</p>\n",
        esc(&r.method),
        esc(&r.url),
        esc(&r.mode),
        esc(&r.latency_from),
        num("step_ms", &crate::evidence::fmt_num(r.step_ms)),
        num("timeout_ms", &crate::evidence::fmt_num(r.timeout_ms)),
        num("littles_law_tolerance_pct", &crate::evidence::fmt_num(r.littles_law_tolerance_pct)),
        if r.client_tcp_nodelay { "on" } else { "off" },
        r.client_engine.as_str(),
    );
    b.push_str(&knee(r));
    b.push_str(&table(r));
    b.push_str(&plots(r));
    b.push_str("<h2>Order of reaction</h2>\n<table id=\"reaction\"><tr><th>signal</th><th>first at</th><th>rule</th></tr>\n");
    for (i, x) in r.order_of_reaction.iter().enumerate() {
        let at = x.concurrency.map_or("not within the sweep".into(), |c| {
            format!(
                "C = {}",
                num(
                    &format!("order_of_reaction.{i}.concurrency"),
                    &c.to_string()
                )
            )
        });
        b.push_str(&format!(
            "<tr><td>{}</td><td>{at}</td><td>{}</td></tr>\n",
            esc(&x.signal),
            esc(&x.rule)
        ));
    }
    b.push_str("</table>\n<h2>Findings</h2>\n");
    for (i, f) in r.findings.iter().enumerate() {
        b.push_str(&finding(i, f));
    }
    Ok(page("rtcheck load", &verdict, class, &b, &json))
}

fn knee(r: &LoadReport) -> String {
    match &r.knee {
        Some(k) => format!(
            "<p id=\"knee\"><b>Knee</b> at C = {}: {} req/s, p99 {} ms; from there to C = {} throughput grew {}% while p99 grew x{}.</p>\n",
            num("knee.concurrency", &k.concurrency.to_string()),
            num("knee.throughput_rps", &format!("{:.1}", k.throughput_rps)),
            num("knee.p99_ms", &fmt_ms(k.p99_ms)),
            num("knee.last_concurrency", &k.last_concurrency.to_string()),
            num("knee.throughput_gain_pct", &format!("{:.1}", k.throughput_gain_pct)),
            num("knee.p99_factor", &format!("{:.2}", k.p99_factor)),
        ),
        None => "<p id=\"knee\">No knee within the sweep: throughput kept growing or the tail did not multiply.</p>\n".into(),
    }
}

const COLUMNS: &str = "<tr><th>C</th><th>req/s</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th><th>requests</th><th>errors</th><th>errors by kind</th><th>W = C/X ms</th><th>mean ms</th><th>saturation</th><th>loadgen CPU %</th></tr>\n";

fn table(r: &LoadReport) -> String {
    let mut t = format!(
        "<h2>Levels</h2>\n<p class=\"dim\">errors count answers later than the timeout ({} ms) beside failures; W = C/X is Little's law (closed loop), to agree with the mean; saturation is the target's busy workers (--metrics).</p>\n<table id=\"levels\">{COLUMNS}",
        fmt_ms(r.timeout_ms)
    );
    for (i, l) in r.levels.iter().enumerate() {
        t.push_str(&row(i, l, r.knee.as_ref().map(|k| k.concurrency)));
    }
    t.push_str("</table>\n");
    t
}

fn row(i: usize, l: &Level, knee: Option<u32>) -> String {
    let p = |k: &str| format!("levels.{i}.{k}");
    if !l.valid {
        return format!(
            "<tr class=\"invalid\" data-level=\"{c}\"><td>{c}</td><td colspan=\"11\"><b>invalid</b>: {}</td></tr>\n",
            esc(&l.invalid.join("; ")),
            c = l.concurrency
        );
    }
    let kinds: Vec<String> = l
        .errors_by_kind
        .iter()
        .map(|(k, v)| {
            format!(
                "{} {}",
                esc(k),
                num(&p(&format!("errors_by_kind.{k}")), &v.to_string())
            )
        })
        .collect();
    let sat = l
        .saturation
        .as_ref()
        .map_or("-".into(), |s| match s.saturation_pct {
            Some(pct) => format!(
                "{}%",
                num(&p("saturation.saturation_pct"), &format!("{pct:.0}"))
            ),
            None => format!(
                "{} busy",
                num(&p("saturation.busy_mean"), &format!("{:.1}", s.busy_mean))
            ),
        });
    let f1 = |k: &str, v: f64| num(&p(k), &format!("{v:.1}"));
    format!(
        "<tr data-level=\"{c}\"{cls}><td>{c}{mark}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} ({}%)</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{sat}</td><td class=\"n\">{}</td></tr>\n",
        f1("throughput_rps", l.throughput_rps),
        num(&p("p50_ms"), &fmt_ms(l.p50_ms)),
        num(&p("p99_ms"), &fmt_ms(l.p99_ms)),
        num(&p("max_ms"), &fmt_ms(l.max_ms)),
        num(&p("requests"), &l.requests.to_string()),
        num(&p("errors"), &l.errors.to_string()),
        num(&p("error_rate"), &format!("{:.2}", l.error_rate)),
        kinds.join(", "),
        l.littles_law_w_ms.map_or("-".into(), |w| f1("littles_law_w_ms", w)),
        f1("mean_ms", l.mean_ms),
        num(&p("loadgen_cpu_pct"), &format!("{:.0}", l.loadgen_cpu_pct)),
        c = l.concurrency,
        cls = if knee == Some(l.concurrency) { " class=\"knee\"" } else { "" },
        mark = if knee == Some(l.concurrency) { " (knee)" } else { "" },
    )
}

/// Throughput and p99 against concurrency, valid levels only (an invalid one is a gap),
/// the knee as a vertical line.
fn plots(r: &LoadReport) -> String {
    let valid: Vec<&Level> = r.levels.iter().filter(|l| l.valid).collect();
    if valid.is_empty() {
        return "<div class=\"invalid\">no valid level to plot</div>\n".into();
    }
    // An invalid level is a gap in the line: nothing is drawn through a level not measured.
    let line = |name, color, f: fn(&Level) -> f64| Series {
        name,
        color,
        points: r
            .levels
            .iter()
            .map(|l| l.valid.then(|| (l.concurrency as f64, f(l))))
            .collect(),
    };
    let knee = |top: f64| {
        r.knee.as_ref().map(|k| Series {
            name: "knee",
            color: plot::RED_,
            points: vec![
                Some((k.concurrency as f64, 0.0)),
                Some((k.concurrency as f64, top)),
            ],
        })
    };
    let top = |f: fn(&Level) -> f64| valid.iter().map(|l| f(l)).fold(0.0, f64::max);
    let mut tput = vec![line("throughput", plot::BLUE_, |l| l.throughput_rps)];
    tput.extend(knee(top(|l| l.throughput_rps)));
    let mut p99 = vec![line("p99", plot::GREEN_, |l| l.p99_ms)];
    p99.extend(knee(top(|l| l.p99_ms)));
    format!(
        "<div class=\"plots\">{}{}</div>\n",
        plot::xy_log2(
            "throughput",
            "successful answers per second at each concurrency (a gap: an invalid level); the knee in red",
            ("concurrency", "req/s"),
            &tput
        ),
        plot::xy_log2(
            "p99",
            "p99 latency at each concurrency (a gap: an invalid level); the knee in red",
            ("concurrency", "p99 (ms)"),
            &p99
        )
    )
}
