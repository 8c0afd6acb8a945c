//! text rendering of `bench cluster`: the verdict first, one table (fits 80 columns), then
//! per scenario the checks that did not pass and the notes, wrapped, then the seed's figures.
use super::bench::ms;
use super::table::{fit, Layout, Tone};
use super::wrap;
use crate::bench::cluster::model::{ClusterReport, ClusterScenario};
use crate::findings::Status;
use crate::report::Palette;

/// `lost/silently`: `3/0`.
fn lost(r: &ClusterScenario) -> String {
    format!("{}/{}", r.lost, r.lost_silently)
}

/// Duplicates with the nodes that sent them: `60 (a 60)`.
pub fn dups(r: &ClusterScenario) -> String {
    let by: Vec<String> = r
        .duplicates_by_node
        .iter()
        .map(|(n, c)| format!("{n} {c}"))
        .collect();
    match by.is_empty() {
        true => r.duplicates.to_string(),
        false => format!("{} ({})", r.duplicates, by.join(", ")),
    }
}

pub fn order(r: &ClusterScenario) -> &'static str {
    match r.order_hash_agree {
        Some(true) => "agree",
        Some(false) => "DIFFER",
        None => "-",
    }
}

/// `ttl 0 @3.4s, events 20` : ghosts at the end of each presence watch.
pub fn ghosts(r: &ClusterScenario) -> String {
    let v: Vec<String> = r
        .ghosts
        .iter()
        .map(|g| match (g.cleared_after_s, g.samples.last()) {
            (Some(t), _) => format!("{} 0 @{t:.1}s", g.presence),
            (None, Some(l)) => format!("{} {}", g.presence, l.ghosts),
            (None, None) => format!("{} ?", g.presence),
        })
        .collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(", ")
    }
}

/// `0 @2.5s / 20`: ghosts left per presence mode (ttl first), with when they cleared.
fn ghosts_short(r: &ClusterScenario) -> String {
    let v: Vec<String> = r
        .ghosts
        .iter()
        .map(|g| match (g.cleared_after_s, g.samples.last()) {
            (Some(t), _) => format!("0 @{t:.1}s"),
            (None, Some(l)) => l.ghosts.to_string(),
            (None, None) => "?".into(),
        })
        .collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(" / ")
    }
}

/// Eight narrow columns: fits 80 (order and the per-node split are in the notes). A
/// scenario id is never cut ("redis-publisher-res / tart"): the other columns wrap.
fn table(rep: &ClusterReport, p: &Palette) -> String {
    let header = [
        "scenario",
        "n",
        "p50",
        "p99",
        "p99.9",
        "lost/\nsilent",
        "dups",
        "ghosts\nttl / ev",
    ];
    let mut tones = Vec::new();
    let rows: Vec<Vec<String>> = rep
        .scenarios
        .iter()
        .enumerate()
        .map(|(n, r)| {
            let name = match r.valid {
                true => r.name.clone(),
                false => {
                    tones.push((n, 0, Tone::Bad));
                    format!("{}\nINVALID", r.name)
                }
            };
            vec![
                name,
                r.nodes.to_string(),
                ms(r.p50_ms),
                ms(r.p99_ms),
                ms(r.p999_ms),
                lost(r),
                r.duplicates.to_string(),
                ghosts_short(r),
            ]
        })
        .collect();
    let layout = Layout {
        keep: &[0],
        right: &[1, 2, 3, 4, 5, 6],
        tones: &tones,
        colour: p.enabled,
        ..Default::default()
    };
    fit(&header, &rows, p.width, &layout)
}

/// The distinct citations of the report's references, in order ("TITLE", part 9; ...).
pub fn sources(rep: &ClusterReport) -> String {
    let mut v: Vec<&str> = Vec::new();
    for e in &rep.reference {
        if !v.contains(&e.source.as_str()) {
            v.push(&e.source);
        }
    }
    v.join("; ")
}

/// "name (description)" wrapped to the width: the name bold, the description dim.
fn heading(name: &str, description: &str, p: &Palette) -> String {
    let plain = wrap(&format!("{name} ({description})"), p.width, "", "  ");
    let mut out = String::new();
    for (i, line) in plain.lines().enumerate() {
        match (i, line.strip_prefix(name)) {
            (0, Some(rest)) => out.push_str(&format!("{}{}", p.bold(name), p.dim(rest))),
            _ => out.push_str(&p.dim(line)),
        }
        out.push('\n');
    }
    out
}

pub fn render(rep: &ClusterReport, p: &Palette) -> String {
    // Worded as bench fanout's text and the html page open.
    let bad: Vec<&str> = rep
        .scenarios
        .iter()
        .filter(|r| !r.valid)
        .map(|r| r.name.as_str())
        .collect();
    let (ok, verdict) = match bad.len() {
        0 => (
            true,
            format!("every result valid ({} scenarios)", rep.scenarios.len()),
        ),
        n => (
            false,
            format!(
                "INVALID: {n} of {} scenarios ({}); their numbers are withheld",
                rep.scenarios.len(),
                bad.join(", ")
            ),
        ),
    };
    let mut out = super::verdict_line("rtcheck bench cluster", &verdict, ok, p);
    out.push_str(&wrap(
        &format!(
            "{} nodes, {} clients spread over them, {} rounds x {} B at {}/s from node a; Redis: {}; presence TTL {} s; {} cores shared by everything",
            rep.nodes,
            rep.connections,
            rep.rounds,
            rep.size,
            crate::evidence::fmt_num(rep.rate),
            rep.redis,
            crate::evidence::fmt_num(rep.presence_ttl_s),
            rep.host_cores
        ),
        p.width,
        "",
        "  ",
    ));
    out.push_str("\nlatency in ms (receive - scheduled send, first copies of each message)\n");
    out.push_str(&table(rep, p));
    out.push('\n');
    for r in &rep.scenarios {
        out.push('\n');
        out.push_str(&heading(&r.name, &r.description, p));
        for c in r.checks.iter().filter(|c| c.status != Status::Pass) {
            let head = format!("  {} ", p.status(c.status));
            out.push_str(&wrap(
                &format!("{}: {}", c.name, c.detail),
                p.width,
                &head,
                "       ",
            ));
        }
        for n in &r.notes {
            out.push_str(&wrap(n, p.width, "  - ", "    "));
        }
    }
    let cited = sources(rep);
    out.push('\n');
    out.push_str(&wrap(
        &format!("what the article measured ({cited}):"),
        p.width,
        "",
        "  ",
    ));
    for e in &rep.reference {
        out.push_str(&wrap(
            &format!("{}: {}", e.id, e.claim),
            p.width,
            "  ",
            "    ",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real run's JSON (every scenario, `redis-publisher-restart` the longest id): at 80
    /// columns no line is wider and every scenario id is whole on a line of the table.
    #[test]
    fn every_scenario_id_stays_whole_at_80_columns() {
        let json = include_str!("../../../tests/fixtures/bench/cluster.json");
        let rep: ClusterReport = serde_json::from_str(json).unwrap();
        let pal = Palette {
            enabled: false,
            width: 80,
        };
        let text = render(&rep, &pal);
        for l in text.lines() {
            assert!(l.chars().count() <= 80, "{l}\n{text}");
        }
        let table: Vec<&str> = text.lines().filter(|l| l.starts_with('│')).collect();
        for s in &rep.scenarios {
            assert!(
                table
                    .iter()
                    .any(|l| l.split(['│', ' ']).any(|w| w == s.name)),
                "{} cut:\n{text}",
                s.name
            );
        }
    }
}
