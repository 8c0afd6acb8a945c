//! Text rendering of a findings report (audit, and verify through the same function):
//! one table row per check, then the details of everything that is not a plain pass.
use crate::report::{FindingsReport, Palette, Status};
use comfy_table::{
    presets::UTF8_FULL_CONDENSED, Attribute, Cell, Color, ContentArrangement, Table,
};

/// Status cell styled by comfy-table itself, so column widths ignore escape codes.
fn status_cell(st: Status, colour: bool) -> Cell {
    let c = Cell::new(st.as_str());
    if !colour {
        return c;
    }
    match st {
        Status::Pass => c.fg(Color::Green),
        Status::Warn => c.fg(Color::Yellow),
        Status::Fail => c.fg(Color::Red).add_attribute(Attribute::Bold),
        Status::Skip => c.add_attribute(Attribute::Dim),
    }
}

pub fn render(r: &FindingsReport, pal: Palette) -> String {
    let mut out = String::new();
    let p = &r.profile;
    let transport = p.transport.map(|t| t.as_str()).unwrap_or("websocket");
    out.push_str(&pal.bold(&format!(
        "rtcheck {}: {} {} connections{}, role {}",
        r.kind,
        crate::evidence::fmt_num(p.connections as f64),
        transport,
        if p.machines > 1 {
            format!(" over {} machines", p.machines)
        } else {
            String::new()
        },
        p.role.as_str()
    )));
    out.push('\n');
    if let Some(t) = &r.target {
        out.push_str(&pal.dim(t));
        out.push('\n');
    }
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(120)
        .set_header(vec!["status", "check", "observed", "expected"]);
    if pal.enabled {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    for f in &r.findings {
        let observed = match (&f.status, &f.reason) {
            (Status::Skip, Some(reason)) if f.observed == "not read" => reason.clone(),
            _ => f.observed.clone(),
        };
        table.add_row(vec![
            status_cell(f.status, pal.enabled),
            Cell::new(&f.id),
            Cell::new(observed),
            Cell::new(&f.expected),
        ]);
    }
    out.push_str(&table.to_string());
    out.push('\n');

    for f in r.findings.iter().filter(|f| f.status != Status::Pass) {
        out.push('\n');
        out.push_str(&format!(
            "{} {}: {}\n",
            pal.status(f.status),
            pal.bold(&f.id),
            f.title
        ));
        if let Some(reason) = &f.reason {
            out.push_str(&format!("  reason:   {reason}\n"));
        }
        if f.status == Status::Skip {
            continue; // the reason says it all; the table shows what was observed
        }
        out.push_str(&format!("  rule:     {}\n", f.rule));
        for e in &f.evidence {
            out.push_str(&format!(
                "  evidence: [{}] {} ({})\n",
                e.id, e.value, e.source
            ));
        }
        if !f.fix.summary.is_empty() {
            out.push_str(&format!("  fix:      {}\n", f.fix.summary));
        }
        for c in &f.fix.runtime {
            out.push_str(&format!("    now:    {c}\n"));
        }
        for c in &f.fix.persistent {
            out.push_str(&format!("    keep:   {c}\n"));
        }
        if let Some(v) = &f.verify {
            out.push_str(&format!("  verify:   rtcheck verify {v}\n"));
        }
        if let Some(v) = &f.verification {
            out.push_str(&format!(
                "  measured: {} live on loopback ({})\n            {}\n",
                crate::report::text::verify::measured(v),
                v.name,
                v.verdict
            ));
        }
    }
    // `audit --verify`: passing checks have no details block, so their live
    // measurements are listed here.
    let passed: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.status == Status::Pass)
        .filter_map(|f| f.verification.as_ref().map(|v| (f, v)))
        .collect();
    if !passed.is_empty() {
        out.push('\n');
        out.push_str(&pal.bold("measured live on loopback (passing checks)"));
        out.push('\n');
        for (f, v) in passed {
            out.push_str(&format!(
                "  {}: {} ({})\n            {}\n",
                f.id,
                crate::report::text::verify::measured(v),
                v.name,
                v.verdict
            ));
        }
    }
    let s = &r.summary;
    out.push('\n');
    out.push_str(&format!(
        "{} pass, {} warn, {} fail, {} skip in {} ms\n",
        pal.good(&s.pass.to_string()),
        pal.warn(&s.warn.to_string()),
        pal.bad(&s.fail.to_string()),
        s.skip,
        r.duration_ms
    ));
    out
}
