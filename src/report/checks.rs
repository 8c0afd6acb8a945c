//! Every id a command prints, as one [`CheckInfo`]: each table emits its own (audit's
//! checks, lint's rules, probe's checks, the proxy host's findings, the checklists'
//! items, verify's measurements, choose's questions, budget's findings, the hops), and
//! `explain` reads them here, so an id in any output is explainable by construction.
//! Audit's and probe's ids are enums (`audit::checks::CheckId`, `probe::CheckId`), lint's
//! `RuleId`: the tests below hold every variant to exactly one row of its table.
use crate::findings::{evidence_ids, CheckInfo};

/// Every entry, the tables in this order (the first of an id wins in [`info`]).
pub fn all() -> Vec<CheckInfo> {
    let mut v: Vec<CheckInfo> = Vec::new();
    v.extend(crate::audit::checks::CHECKS.iter().map(|m| m.info()));
    v.extend(crate::lint::rules::RULES.iter().map(|r| r.info()));
    v.extend(questions());
    v.extend(crate::probe::CHECKS.iter().map(|m| m.info()));
    v.extend(
        crate::probe::browser::checks::IDS
            .iter()
            .map(|id| browser(id)),
    );
    v.extend(crate::lint::host::EXPLAINED.iter().map(proxy));
    v.extend(OTHERS.iter().map(other));
    v.extend(checklist_items());
    v.extend(crate::verify::names().into_iter().filter_map(verify_part));
    v.extend(crate::hops::catalog().iter().map(hop));
    v
}

/// A hop of `data/hops.yaml` (`explain` shows it in full through `report::text::hops`).
fn hop(h: &crate::hops::Hop) -> CheckInfo {
    CheckInfo {
        id: h.id.clone(),
        kind: "hop".into(),
        title: h.name.clone(),
        why: "its idle, lifetime and first-byte limits cut realtime connections that \
              outlive them"
            .into(),
        fix: String::new(),
        evidence: vec![],
        see: format!("docs/hops.md; run it: rtcheck hops {}", h.id),
    }
}

/// The entry of `id`, if any table has it.
pub fn info(id: &str) -> Option<CheckInfo> {
    all().into_iter().find(|c| c.id == id)
}

fn browser(id: &str) -> CheckInfo {
    CheckInfo {
        id: id.into(),
        kind: "probe --browser check".into(),
        title: "what headless Chromium did with the URL".into(),
        why: String::new(),
        fix: String::new(),
        evidence: vec![],
        see: "docs/probe.md; run it: rtcheck probe --browser URL".into(),
    }
}

fn proxy((id, title, why): &(&str, &str, &str)) -> CheckInfo {
    CheckInfo {
        id: id.to_string(),
        kind: "audit on a proxy host".into(),
        title: title.to_string(),
        why: why.to_string(),
        fix: String::new(),
        evidence: vec!["ulimit-n".into()],
        see: "docs/audit.md; run it: rtcheck audit --role proxy".into(),
    }
}

fn other((id, kind, title, why, see): &(&str, &str, &str, &str, &str)) -> CheckInfo {
    CheckInfo {
        id: id.to_string(),
        kind: kind.to_string(),
        title: title.to_string(),
        why: why.to_string(),
        fix: String::new(),
        evidence: vec![],
        see: see.to_string(),
    }
}

/// Findings named once in their module and explained here: (id, kind, title, rule, see).
const OTHERS: &[(&str, &str, &str, &str, &str)] = &[
    (
        "lint-include",
        "lint",
        "an include that was not followed",
        "lint reads only the given paths unless --follow-includes: an include outside them, \
         or one that could not be read, is a skip naming it (its directives were not judged)",
        "docs/lint.md",
    ),
    (
        "lint-streams",
        "lint",
        "a WebSocket, SSE or polling block found",
        "blocks are classified by name/path words, --ws-location/--sse-location or \
         --transport; a config with none of them is a skip, never a pass",
        "docs/lint.md",
    ),
    (
        "latency-budget",
        "budget",
        "the request fits its latency budget",
        "the backend hops' latencies, sequential and in parallel, against the budget",
        "docs/budget.md; run it: rtcheck budget",
    ),
    (
        "live-budget",
        "budget --live",
        "measured hops add up as the model says",
        "each way measured live within 25% (or 5 ms) of what the model computed",
        "docs/budget.md; run it: rtcheck budget --live URL",
    ),
];

/// choose's questions, the ids of its reasons.
fn questions() -> Vec<CheckInfo> {
    use crate::choose::decide::{Q1, Q2, Q3, Q4};
    let q = [
        ("q1", Q1),
        ("q2", Q2),
        ("q3", Q3),
        ("q4", Q4),
        ("path", crate::choose::path::QUESTION),
    ];
    q.into_iter()
        .map(|(id, text)| CheckInfo {
            id: id.into(),
            kind: "choose question".into(),
            title: text.into(),
            why: "its answer decides one part of the design; the reason printed with it \
                  says which and on what evidence"
                .into(),
            fix: String::new(),
            evidence: vec![],
            see: "docs/choose.md; run it: rtcheck choose".into(),
        })
        .collect()
}

fn checklist_items() -> Vec<CheckInfo> {
    let mut v = Vec::new();
    for c in crate::checklist::all() {
        v.extend(c.items.iter().map(|i| CheckInfo {
            id: i.id.clone(),
            kind: format!("{} checklist item", c.name),
            title: i.title.clone(),
            why: i.why.clone(),
            fix: i.fix.clone(),
            evidence: i.evidence.clone(),
            see: "docs/review.md; walk it: rtcheck review".into(),
        }));
    }
    v
}

fn verify_part(name: &str) -> Option<CheckInfo> {
    let p = crate::verify::part(name)?;
    Some(CheckInfo {
        id: p.name.into(),
        kind: "verify measurement".into(),
        title: p.title.into(),
        why: format!(
            "demonstrates the audit check `{}` live, on loopback",
            p.finding
        ),
        fix: String::new(),
        evidence: evidence_ids(&[p.evidence]),
        see: format!("docs/verify.md; run it: rtcheck verify {}", p.name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_s_ids_are_explained_with_known_evidence() {
        let all = all();
        let has = |id: &str| all.iter().any(|c| c.id == id);
        let tables = [
            crate::audit::check_ids(),
            crate::lint::rules::RULES.iter().map(|r| r.id).collect(),
            crate::probe::IDS.to_vec(),
            crate::probe::browser::checks::IDS.to_vec(),
            crate::lint::host::EXPLAINED.iter().map(|e| e.0).collect(),
            crate::review::known_ids(),
            crate::review::items::ItemId::ALL
                .iter()
                .map(|i| i.as_str())
                .collect(),
            crate::verify::names(),
            crate::hops::ids(),
        ];
        for id in tables.iter().flatten() {
            assert!(has(id), "{id} is not explained");
        }
        assert!(has(crate::lint::host::FD_LIMIT), "proxy-fd-limit");
        for c in &all {
            assert!(
                !c.title.is_empty() && !c.kind.is_empty() && !c.see.is_empty(),
                "{c:?}"
            );
            for e in &c.evidence {
                assert!(crate::evidence::store().get(e).is_some(), "{}: {e}", c.id);
            }
        }
    }

    #[test]
    fn every_id_variant_is_one_row_of_its_table() {
        use crate::audit::checks::{CheckId as Audit, CHECKS as AUDIT};
        use crate::probe::{CheckId as Probe, CHECKS as PROBE};
        let audit: Vec<Audit> = AUDIT.iter().map(|m| m.id).collect();
        for id in Audit::ALL {
            let rows = audit.iter().filter(|i| *i == id).count();
            assert_eq!(rows, 1, "audit {id}: {rows} rows");
            assert_eq!(Audit::parse(id.as_str()), Some(*id));
        }
        assert_eq!(audit.len(), Audit::ALL.len());
        let probe: Vec<Probe> = PROBE.iter().map(|m| m.id).collect();
        for id in Probe::ALL {
            let rows = probe.iter().filter(|i| *i == id).count();
            assert_eq!(rows, 1, "probe {id}: {rows} rows");
            assert_eq!(Probe::parse(id.as_str()), Some(*id));
        }
        assert_eq!(probe.len(), Probe::ALL.len());
        assert_eq!(Audit::parse("time_wait"), None, "the text is exact");
        // A hop is explained by its own view first; its entry here names the command.
        assert_eq!(info("aws-alb").unwrap().kind, "hop");
    }

    #[test]
    fn the_first_table_wins_and_a_checklist_rule_carries_its_fix() {
        assert_eq!(info("time-wait").unwrap().kind, "audit check");
        let item = checklist_items().into_iter().next().unwrap();
        assert_eq!(item.rule(), format!("{} Fix: {}", item.why, item.fix));
        assert!(info("no-such-id").is_none());
    }
}
