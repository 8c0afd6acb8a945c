//! text rendering of `bench cluster`: the verdict first, one table (fits 80 columns), then
//! per scenario the checks that did not pass and the notes, wrapped, then the seed's figures.
use super::bench::ms;
use super::wrap;
use crate::bench::cluster::model::{ClusterReport, ClusterScenario};
use crate::findings::Status;
use crate::report::Palette;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, ContentArrangement, Table};

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

/// Eight narrow columns: fits 80 (order and the per-node split are in the notes).
fn table(rep: &ClusterReport, p: &Palette) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(p.width.max(60) as u16);
    t.set_header(
        [
            "scenario",
            "n",
            "p50",
            "p99",
            "p99.9",
            "lost/\nsilent",
            "dups",
            "ghosts\nttl / ev",
        ]
        .map(Cell::new)
        .to_vec(),
    );
    for r in &rep.scenarios {
        let name = match r.valid {
            true => r.name.clone(),
            false => format!("{}\n{}", r.name, p.bad("INVALID")),
        };
        t.add_row(vec![
            name,
            r.nodes.to_string(),
            ms(r.p50_ms),
            ms(r.p99_ms),
            ms(r.p999_ms),
            lost(r),
            r.duplicates.to_string(),
            ghosts_short(r),
        ]);
    }
    for i in 1..7 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

pub fn render(rep: &ClusterReport, p: &Palette) -> String {
    // Worded as bench fanout's text and the html page open.
    let bad: Vec<&str> = rep
        .scenarios
        .iter()
        .filter(|r| !r.valid)
        .map(|r| r.name.as_str())
        .collect();
    let verdict = match bad.len() {
        0 => p.good(&format!(
            "every result valid ({} scenarios)",
            rep.scenarios.len()
        )),
        n => p.bad(&format!(
            "INVALID: {n} of {} scenarios ({}); their numbers are withheld",
            rep.scenarios.len(),
            bad.join(", ")
        )),
    };
    let mut out = format!("{}: {verdict}\n", p.bold("rtcheck bench cluster"));
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
    out.push_str(&table(rep, p).to_string());
    out.push('\n');
    for r in &rep.scenarios {
        out.push_str(&format!(
            "\n{} {}\n",
            p.bold(&r.name),
            p.dim(&format!("({})", r.description))
        ));
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
    out.push_str("\nseed (002, part 9):\n");
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
