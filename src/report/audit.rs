//! A findings report (`rtcheck audit` and `rtcheck lint`) as one [`Doc`] for text and
//! markdown: the verdict (fail, warn, pass, skip), what was judged (lint: each proxied
//! route and why), one row per check, then what needs action (fail and warn: what was
//! seen, what is needed, the fix and the commands to run now), the reasons of skips and
//! of the baseline's suppressions, and the live measurements of passing checks.
//! `explain`: every check in full (rule, evidence, every fix line); [`explain_doc`] is one
//! check in full (`rtcheck explain ID`). The html page ([`audit_page`], also review's)
//! draws every check as a card instead of the items.
use crate::findings::{Finding, Status, Verification};
use crate::report::counts::{findings_head, findings_line, suppressed_count};
use crate::report::doc::{
    code, status, strong, t, Block, Card, Column, Doc, Item, Row, Span, Table, Tone, Verdict,
};
use crate::report::FindingsReport;

pub fn audit_doc(r: &FindingsReport, explain: bool) -> anyhow::Result<Doc> {
    let mut blocks = vec![Block::Para {
        id: Some("profile".into()),
        spans: vec![strong(title(r))],
    }];
    if let Some(target) = &r.target {
        blocks.push(Block::Note(target.clone()));
    }
    blocks.extend(netns(r));
    blocks.extend(routes(r));
    blocks.push(Block::Table(table(r)));
    let acts = |f: &&Finding| explain || matches!(f.status, Status::Fail | Status::Warn);
    for f in r.findings.iter().filter(acts) {
        blocks.extend(item(f, explain));
    }
    if !explain {
        blocks.extend(reasons(r));
        blocks.extend(measured_passes(r));
    }
    blocks.push(Block::Note(where_explained(r)));
    if !explain {
        // What text leaves to --explain, for markdown and html: every check's need, rule
        // and evidence; after the note, so text shows no heading over a table it omits.
        blocks.push(Block::Section("Rules and evidence".into()));
        blocks.push(Block::Wide(rules(r)));
    }
    Ok(Doc {
        title: format!("rtcheck {}", r.kind),
        verdict: verdict(r),
        blocks,
        json: crate::report::json::render(r)?,
    })
}

/// The html page: what was judged, the counts tagged with their JSON paths, one row per
/// check, then every check as a card, most severe first (its status, what was read,
/// what is needed, its numbers, the fix, a live measurement, the evidence).
pub fn audit_page(r: &FindingsReport) -> anyhow::Result<Doc> {
    let mut blocks = vec![Block::Para {
        id: Some("profile".into()),
        spans: vec![strong(title(r))],
    }];
    if let Some(target) = &r.target {
        blocks.push(Block::Note(target.clone()));
    }
    blocks.extend(netns(r));
    let mut spans = findings_head(&r.summary);
    spans.push(t(format!(" skip{}", suppressed_count(&r.summary))));
    blocks.push(Block::Para {
        id: Some("summary".into()),
        spans,
    });
    blocks.push(Block::Table(table(r)));
    blocks.extend(cards(r));
    Ok(Doc {
        title: format!("rtcheck {}", r.kind),
        verdict: verdict(r),
        blocks,
        json: crate::report::json::render(r)?,
    })
}

/// Every check as a card, most severe first as in the text report (fail, warn, pass,
/// skip, then suppressed; the report's order within a status), each with its index in
/// the JSON and an anchor of its own: lint repeats a rule id per location
/// (`finding-{i}-{id}`).
fn cards(r: &FindingsReport) -> Vec<Block> {
    if r.findings.is_empty() {
        return Vec::new();
    }
    let rank = |s: Status| match s {
        Status::Fail => 0,
        Status::Warn => 1,
        Status::Pass => 2,
        Status::Skip => 3,
        Status::Suppressed => 4,
    };
    let mut all: Vec<(usize, &Finding)> = r.findings.iter().enumerate().collect();
    all.sort_by_key(|(_, f)| rank(f.status));
    let cards = all.into_iter().map(|(index, f)| Card {
        index,
        anchor: format!("{index}-{}", f.id),
        finding: f.clone(),
    });
    vec![
        Block::Section("Findings".into()),
        Block::Anchored(cards.collect()),
    ]
}

/// What was judged: the connections, transport and role (and machines when several).
pub fn title(r: &FindingsReport) -> String {
    if r.kind == "lint" {
        return lint_title(&r.profile);
    }
    let p = &r.profile;
    let machines = match p.machines {
        1 | 0 => String::new(),
        n => format!(" over {n} machines"),
    };
    format!(
        "rtcheck {}: {} {} connections{machines}, role {}",
        r.kind,
        crate::evidence::fmt_num(p.connections as f64),
        p.transport.map_or("websocket", |t| t.name()),
        p.role.as_str()
    )
}

/// lint judges configs, not a host: no role, the transport may come from names, and the
/// heartbeat and the path of hops are what the timeouts are read against.
fn lint_title(p: &crate::profile::Profile) -> String {
    let ts = p.declared_transports();
    let transports = match ts.is_empty() {
        true => "not declared (routes by evidence)".to_string(),
        false => ts.iter().map(|t| t.name()).collect::<Vec<_>>().join(","),
    };
    let path = p
        .hop_path()
        .map_or(String::new(), |(ids, _)| match ids.len() {
            0 => ", path direct".into(),
            _ => format!(", path {}", ids.join(" -> ")),
        });
    format!(
        "rtcheck lint: {} connections, transport {transports}, heartbeat {}{path}",
        crate::evidence::fmt_num(p.connections_per_machine() as f64),
        p.ping
            .map_or("not declared".into(), rtcheck_base::units::fmt_duration),
    )
}

/// lint: each proxied route, what it carries and why, so a user can correct it (the
/// first 20; json lists all).
fn routes(r: &FindingsReport) -> Vec<Block> {
    const SHOWN: usize = 20;
    let mut items: Vec<Vec<Span>> = (r.routes.iter().take(SHOWN))
        .map(|rt| {
            let what = match rt.carries.is_empty() {
                true => "nothing says it carries a stream".to_string(),
                false => (rt.carries.iter())
                    .map(|c| format!("{} ({})", c.transport.as_str(), c.why))
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            vec![t(format!(
                "route {} at {}:{}: {what}",
                rt.route, rt.file, rt.line
            ))]
        })
        .collect();
    if r.routes.len() > SHOWN {
        items.push(vec![t(format!(
            "and {} more routes (--format json lists all)",
            r.routes.len() - SHOWN
        ))]);
    }
    match items.is_empty() {
        true => Vec::new(),
        false => vec![Block::List(items)],
    }
}

/// Where the rest is: lint's rules are explained with examples in docs/lint.md.
fn where_explained(r: &FindingsReport) -> String {
    match r.kind.as_str() {
        "lint" => "Rule and evidence: `rtcheck lint --explain`, or `rtcheck explain ID`; examples: docs/lint.md.".into(),
        kind => format!(
            "Rule, evidence and every fix: `rtcheck {kind} --explain`, or `rtcheck explain ID`."
        ),
    }
}

/// The verdict line alone, painted (guided's summary ends with it).
pub fn verdict_text(r: &FindingsReport, pal: &crate::report::Palette) -> String {
    let d = Doc {
        title: String::new(),
        verdict: verdict(r),
        blocks: Vec::new(),
        json: String::new(),
    };
    crate::report::doc::text::render(&d, pal)
}

/// One check in full (`rtcheck explain ID`): its head first, then the reason, what was
/// seen and is needed, the rule, the evidence, every fix line and the experiment.
pub fn explain_doc(f: &Finding) -> Doc {
    let Some(Block::Item(i)) = item(f, true).into_iter().next() else {
        unreachable!("item() starts with the check's item")
    };
    let blocks = (i.lines.into_iter())
        .map(|spans| Block::Para { id: None, spans })
        .collect();
    Doc {
        title: f.id.clone(),
        verdict: Verdict {
            text: i.head,
            tone: Tone::Plain,
        },
        blocks,
        json: String::new(),
    }
}

/// The counts in the order every format uses: fail, warn, pass, skip; an invalid live
/// measurement (exit 1 too) and the time taken.
fn verdict(r: &FindingsReport) -> Verdict {
    let s = &r.summary;
    let invalid = (r.findings.iter())
        .filter(|f| f.verification.as_ref().is_some_and(|v| !v.valid))
        .count();
    let invalid = match invalid {
        0 => String::new(),
        n => format!(", {n} measurement(s) invalid"),
    };
    // A run with live experiments takes seconds: said in seconds.
    let took = match r.duration_ms >= 1000.0 {
        true => format!("{:.1} s", r.duration_ms / 1000.0),
        false => format!("{} ms", r.duration_ms),
    };
    let tone = match Tone::worst(r.findings.iter().map(|f| f.status)) {
        Tone::Plain if invalid.is_empty() => Tone::Good,
        Tone::Plain => Tone::Bad,
        tone => tone,
    };
    Verdict {
        text: vec![t(format!("{}{invalid} in {took}", findings_line(s)))],
        tone,
    }
}

/// audit --netns: what the process's sockets get, beside the host's values.
fn netns(r: &FindingsReport) -> Vec<Block> {
    let Some(n) = &r.netns else {
        return Vec::new();
    };
    let head = if n.same_as_host {
        format!(
            "Process {} shares rtcheck's network namespace ({}): the values are the host's.",
            n.pid, n.namespace
        )
    } else if n.differences.is_empty() {
        format!(
            "Network namespace of process {} ({}): the same values as the host.",
            n.pid, n.namespace
        )
    } else {
        format!(
            "Network namespace of process {} ({}) differs from the host; the checks judge its values:",
            n.pid, n.namespace
        )
    };
    let mut v = vec![Block::Para {
        id: Some("netns".into()),
        spans: vec![t(head)],
    }];
    if !n.differences.is_empty() {
        let items = (n.differences.iter()).map(|d| {
            vec![t(format!(
                "{} = {} (host: {})",
                d.sysctl, d.namespace, d.host
            ))]
        });
        v.push(Block::List(items.collect()));
    }
    v
}

/// What a check's row shows as observed: the reason for a check that read nothing.
fn observed(f: &Finding) -> &str {
    match (&f.status, &f.reason) {
        (Status::Skip | Status::Suppressed, Some(reason)) => reason,
        _ => &f.observed,
    }
}

/// One row per check: status, id (whole), observed (the fix is in its item below).
fn table(r: &FindingsReport) -> Table {
    let rows = r.findings.iter().map(|f| Row {
        key: Some(f.id.clone()),
        cells: vec![status(f.status), code(&f.id), t(observed(f))],
    });
    Table {
        id: "findings".into(),
        columns: vec![
            Column::text("status"),
            Column::id("check"),
            Column::prose("observed"),
        ],
        rows: rows.collect(),
    }
}

fn line(label: &str, text: &str) -> Vec<Span> {
    vec![t(format!("{label}: {text}"))]
}

/// A command stays whole (to be copied); prose wraps.
fn fix_line(label: &str, c: &str) -> Vec<Span> {
    match crate::report::is_shell_command(c) {
        true => vec![t(format!("{label}: ")), code(c)],
        false => line(label, c),
    }
}

fn measured(v: &Verification) -> Vec<Span> {
    let m = crate::report::verify::measured(v);
    line(
        "measured",
        &format!("{m} live on loopback ({}): {}", v.name, v.verdict),
    )
}

/// A check to act on (or, under `explain`, any check): its head, then what was seen, what
/// is needed, the fix and its commands; `explain` adds the reason, rule, evidence, the
/// lines to keep and the experiment that demonstrates it.
fn item(f: &Finding, explain: bool) -> Vec<Block> {
    let mut lines = Vec::new();
    if let (true, Some(reason)) = (explain, &f.reason) {
        lines.push(line("reason", reason));
    }
    lines.push(line("observed", &f.observed));
    lines.push(line("expected", &f.expected));
    if explain {
        lines.push(line("rule", &f.rule));
        for e in &f.evidence {
            lines.push(line(
                "evidence",
                &format!("[{}] {} ({})", e.id, e.value, e.source),
            ));
        }
    }
    if !f.fix.summary.is_empty() {
        lines.push(line("fix", &f.fix.summary));
    }
    lines.extend(f.fix.runtime.iter().map(|c| fix_line("now", c)));
    if explain {
        lines.extend(f.fix.persistent.iter().map(|c| fix_line("keep", c)));
    }
    if let Some(v) = &f.verify {
        lines.push(vec![t("verify: "), code(format!("rtcheck verify {v}"))]);
    }
    if let Some(v) = &f.verification {
        lines.push(measured(v));
    }
    let tone = match f.status {
        Status::Fail => Tone::Bad,
        Status::Warn => Tone::Warn,
        Status::Pass => Tone::Good,
        _ => Tone::Plain,
    };
    let mut v = vec![Block::Item(Item {
        id: Some(format!("finding-{}", f.id)),
        tone,
        head: vec![
            status(f.status),
            t(" "),
            code(&f.id),
            t(format!(": {}", f.title)),
        ],
        lines,
    })];
    // A finding in a config file (a proxy's, linted on this host): the lines to write
    // there, whole.
    if f.location.is_some() && !explain {
        v.extend(f.fix.persistent.iter().map(|c| Block::Setting {
            label: String::new(),
            text: c.clone(),
        }));
    }
    v
}

/// Every check's need, rule and evidence ids (html and markdown; text: --explain).
fn rules(r: &FindingsReport) -> Table {
    let rows = r.findings.iter().map(|f| {
        let evidence: Vec<String> = (f.evidence.iter())
            .map(|e| format!("[{}] {} ({})", e.id, e.value, e.source))
            .collect();
        Row {
            key: Some(f.id.clone()),
            cells: vec![
                code(&f.id),
                t(&f.expected),
                t(&f.rule),
                t(evidence.join("; ")),
            ],
        }
    });
    Table {
        id: "rules".into(),
        columns: vec![
            Column::id("check"),
            Column::text("expected"),
            Column::text("rule"),
            Column::text("evidence"),
        ],
        rows: rows.collect(),
    }
}

/// Why a check was skipped or suppressed, one line each.
fn reasons(r: &FindingsReport) -> Vec<Block> {
    let items: Vec<Vec<Span>> = (r.findings.iter())
        .filter(|f| matches!(f.status, Status::Skip | Status::Suppressed))
        .map(|f| {
            let why = match f.status {
                Status::Skip => f.reason.as_deref().unwrap_or("not measured"),
                _ => f.reason.as_deref().unwrap_or("accepted by the baseline"),
            };
            vec![status(f.status), t(format!(" {}: {why}", f.id))]
        })
        .collect();
    match items.is_empty() {
        true => Vec::new(),
        false => vec![Block::List(items)],
    }
}

/// `audit --verify`: passing checks have no item, so their live measurements are listed.
fn measured_passes(r: &FindingsReport) -> Vec<Block> {
    let items: Vec<Vec<Span>> = (r.findings.iter())
        .filter(|f| f.status == Status::Pass)
        .filter_map(|f| f.verification.as_ref().map(|v| (f, v)))
        .map(|(f, v)| {
            let m = crate::report::verify::measured(v);
            vec![t(format!("{}: {m} ({}): {}", f.id, v.name, v.verdict))]
        })
        .collect();
    match items.is_empty() {
        true => Vec::new(),
        false => vec![
            Block::Section("measured live on loopback (passing checks)".into()),
            Block::List(items),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc::{html, markdown, text};
    use crate::report::Palette;

    fn finding(id: &str, st: &str, observed: &str) -> Finding {
        serde_json::from_value(serde_json::json!({
            "id": id, "title": "the title", "status": st, "observed": observed,
            "expected": "e", "rule": "the rule", "evidence": [],
            "fix": {"summary": "Raise it.", "runtime": ["sudo sysctl -w net.core.somaxconn=4096"]}
        }))
        .unwrap()
    }

    fn report() -> FindingsReport {
        let long = "ip_local_port_range 32768-60999 = 28,232 ports, 0 reserved in range (ip_local_reserved_ports): 28,232 usable; tcp_tw_reuse 2";
        let profile = crate::profile::Profile {
            connections: 30_000,
            machines: 3,
            ..Default::default()
        };
        FindingsReport::new(
            "audit",
            profile,
            Some("procfs /proc, sysfs /sys".into()),
            vec![
                finding("ephemeral-ports", "warn", long),
                finding(
                    "delivery-snapshot-clean-reconnect",
                    "pass",
                    "lost 0 of 1,000",
                ),
                finding("somaxconn", "fail", "4096"),
            ],
            12.0,
        )
    }

    /// The verdict first, the heading with its machines, one row per check with the
    /// status the report has, an item for each fail and warn, the command whole.
    #[test]
    fn audit_text_has_the_verdict_rows_and_items() {
        let r = report();
        for width in [80, 120] {
            let d = audit_doc(&r, false).unwrap();
            let text = text::render(&d, &Palette::plain().with_width(width));
            assert!(
                text.starts_with("1 fail, 1 warn, 1 pass, 0 skip in 12 ms\n"),
                "{text}"
            );
            assert!(text.contains(
                "rtcheck audit: 30,000 websocket connections over 3 machines, role server"
            ));
            assert!(text.lines().all(|l| l.chars().count() <= width), "{text}");
            assert!(!text.contains('…'), "{text}");
            let rows: Vec<(&str, &str)> = (text.lines())
                .filter(|l| l.starts_with(' '))
                .filter_map(|l| {
                    let mut w = l.split_whitespace();
                    Some((w.next()?, w.next()?))
                })
                .filter(|(st, _)| ["pass", "warn", "fail"].contains(st))
                .collect();
            assert_eq!(
                rows,
                [
                    ("warn", "ephemeral-ports"),
                    ("pass", "delivery-snapshot-clean-reconnect"),
                    ("fail", "somaxconn")
                ],
                "{text}"
            );
            let heads: Vec<&str> = (text.lines())
                .filter(|l| l.starts_with("warn ") || l.starts_with("fail "))
                .collect();
            assert_eq!(heads.len(), 2, "{text}");
            assert!(text.contains("sudo sysctl -w net.core.somaxconn=4096"));
            assert!(!text.contains("rule:"), "rules belong to --explain");
        }
        let text = text::render(&audit_doc(&r, true).unwrap(), &Palette::plain());
        assert_eq!(text.matches("\n  rule: the rule").count(), 3, "{text}");
    }

    /// An invalid live measurement makes the exit code 1: the verdict line says so.
    #[test]
    fn verdict_line_counts_invalid_measurements() {
        let mut r = report();
        let plain = |r: &FindingsReport| verdict_text(r, &Palette::plain());
        assert_eq!(plain(&r), "1 fail, 1 warn, 1 pass, 0 skip in 12 ms\n");
        r.findings[1].verification = Some(Verification {
            name: "memory-ws".into(),
            measured: None,
            unit: "B".into(),
            reference: "ref".into(),
            verdict: "invalid: why".into(),
            details: vec![],
            valid: false,
            duration_ms: 1,
        });
        assert!(
            plain(&r).starts_with("1 fail, 1 warn, 1 pass, 0 skip, 1 measurement(s) invalid in "),
            "{}",
            plain(&r)
        );
    }

    /// lint: its own heading (no role), each route and why, its rules in docs/lint.md.
    #[test]
    fn lint_says_what_it_judged_and_each_route() {
        let mut r = report();
        r.kind = "lint".into();
        r.routes = serde_json::from_value(serde_json::json!([{
            "route": "location /ws", "file": "nginx.conf", "line": 7,
            "carries": [{"transport": "websocket", "why": "Upgrade headers"}]
        }]))
        .unwrap();
        let text = text::render(&audit_doc(&r, false).unwrap(), &Palette::plain());
        assert!(text.contains("rtcheck lint: 10,000 connections, transport not declared"));
        assert!(
            text.contains("route location /ws at nginx.conf:7: WebSocket (Upgrade"),
            "{text}"
        );
        assert!(text.contains("docs/lint.md."), "{text}");
        assert!(!text.contains("role"), "{text}");
    }

    /// `rtcheck explain ID`: the head first, then the rule, the evidence, every fix line.
    #[test]
    fn explain_doc_is_one_check_in_full() {
        let f = &report().findings[2];
        let text = text::render(&explain_doc(f), &Palette::plain());
        assert!(text.starts_with("fail somaxconn: the title\n"), "{text}");
        assert!(text.contains("\n  rule: the rule\n"), "{text}");
        assert!(text.contains("\n  now: sudo sysctl -w net.core.somaxconn=4096\n"));
    }

    #[test]
    fn audit_markdown_and_html_carry_the_same_facts() {
        let d = audit_doc(&report(), false).unwrap();
        let md = markdown::render(&d);
        assert!(
            md.contains("**1 fail, 1 warn, 1 pass, 0 skip in 12 ms**"),
            "{md}"
        );
        assert!(md.contains("30,000 websocket connections over 3 machines"));
        assert!(md.contains("| fail | `somaxconn` | 4096 |"), "{md}");
        assert!(
            md.contains("`sudo sysctl -w net.core.somaxconn=4096`"),
            "{md}"
        );
        let page = html::render(&d);
        assert!(page.contains("id=\"finding-somaxconn\""), "{page}");
    }

    /// The page: every check a card with its status (one each, the ids unique), the
    /// counts tagged with their JSON paths, the fix of a fail, the verdict first.
    #[test]
    fn audit_page_has_a_card_per_check_and_tagged_counts() {
        let page = html::render(&audit_page(&report()).unwrap());
        let mut at_before = 0;
        for (id, st) in [
            ("somaxconn", "fail"),
            ("ephemeral-ports", "warn"),
            ("delivery-snapshot-clean-reconnect", "pass"),
        ] {
            let i = (report().findings.iter()).position(|f| f.id == id).unwrap();
            let at = format!("id=\"finding-{i}-{id}\"");
            // Most severe first, whatever the report's order.
            assert!(page.find(&at).unwrap() > at_before, "{id}: {page}");
            at_before = page.find(&at).unwrap();
            assert_eq!(page.matches(&at).count(), 1, "{page}");
            let card = &page[page.find(&at).unwrap()..];
            let card = &card[..card.find("</div>").unwrap()];
            assert!(card.contains(&format!("data-status=\"{st}\"")), "{card}");
        }
        assert!(page.contains("data-path=\"summary.fail\">1<"), "{page}");
        assert!(page.contains("<b>Fix</b>: Raise it."), "{page}");
        assert!(page.contains("1 fail, 1 warn, 1 pass, 0 skip in 12 ms"));
    }

    /// lint repeats a rule id per location: every card keeps an element id of its own.
    #[test]
    fn a_rule_id_repeated_per_location_gives_unique_card_ids() {
        let mut r = report();
        let again = r.findings[0].clone();
        r.findings.push(again.clone());
        r.findings.push(again);
        let page = html::render(&audit_page(&r).unwrap());
        let ids: Vec<&str> = (page.split("id=\"finding-").skip(1))
            .map(|s| &s[..s.find('"').unwrap()])
            .collect();
        assert_eq!(ids.len(), r.findings.len(), "{page}");
        let unique: std::collections::BTreeSet<&&str> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "{ids:?}");
    }
}
