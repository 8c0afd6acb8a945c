//! `rtcheck explain ID`: everything behind one audit check (its rule, evidence and every fix,
//! computed for this host and a workload), one evidence entry, or one hop (its documented
//! limits and sources).
use super::Ctx;
use crate::audit::Roots;
use crate::profile::Profile;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  the check, computed for this host and the default workload:
    rtcheck explain fd-limit

    rtcheck explain tcp-wmem --profile profile.yaml
  an evidence entry (same as `rtcheck evidence ulimit-n`):
    rtcheck explain ulimit-n
  a hop's documented limits with sources (same as `rtcheck hops aws-alb`):
    rtcheck explain aws-alb
  a probe check, a checklist item, a proxy host's finding:
    rtcheck explain idle-timeout

Every id a command prints is known here. Where they are listed: audit checks
`rtcheck audit --explain`; lint rules docs/lint.md; probe checks `rtcheck probe
--help`; checklist items `rtcheck checklist`; evidence `rtcheck evidence`; hops
`rtcheck hops`.")]
pub struct ExplainArgs {
    /// Any id a command prints: an audit check (fd-limit, ...), a lint rule, a probe check,
    /// a checklist item, a verify measurement, an evidence id (ulimit-n) or a hop (aws-alb).
    pub id: String,
    /// Workload the check's numbers are computed for (from `rtcheck choose --save`).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// procfs root, as for `rtcheck audit`.
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    pub procfs: PathBuf,
    /// sysfs root, as for `rtcheck audit`.
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sysfs: PathBuf,
}

pub fn run(a: ExplainArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    let pal = ctx.palette_for(None);
    let checks = crate::audit::check_ids();
    let out = if checks.contains(&a.id.as_str()) {
        let mut profile = match &a.profile {
            Some(path) => Profile::load("--profile", path)?,
            None => Profile::default(),
        };
        profile
            .transport
            .get_or_insert(crate::audit::checks::DEFAULT_TRANSPORT);
        let roots = Roots {
            procfs: a.procfs.clone(),
            sysfs: a.sysfs.clone(),
            pid: None,
            group: None,
            others: vec![],
        };
        let r = super::audit::build_report(profile, &roots, &[])?;
        let f = r
            .findings
            .iter()
            .find(|f| f.id == a.id)
            .ok_or_else(|| anyhow::anyhow!("check `{}` produced no finding", a.id))?;
        let mut s = crate::report::text::audit::explain(f, pal);
        let note = format!(
            "Computed for this host ({}) and {} {} connections, role {}; \
             `--profile FILE` for your workload.",
            r.target.as_deref().unwrap_or("-"),
            crate::evidence::fmt_num(r.profile.connections as f64),
            r.profile.transport.map(|t| t.name()).unwrap_or("websocket"),
            r.profile.role.as_str()
        );
        s.push('\n');
        s.push_str(&crate::report::text::wrap(&note, pal.width, "", ""));
        s
    } else if let Some(r) = crate::lint::rules::RULES.iter().find(|r| r.id == a.id) {
        lint_rule(r, &pal)
    } else if let Some(e) = crate::evidence::store().get(&a.id) {
        let v = crate::catalog::EvidenceView::of(e);
        crate::report::text::evidence::evidence_one(&v, &pal)
    } else if let Some(h) = crate::hops::get(&a.id) {
        crate::report::text::hops::one(h, &pal)
    } else if let Some(e) = other(&a.id) {
        e.render(&pal)
    } else {
        let mut ids = checks.clone();
        ids.extend(crate::lint::rules::RULES.iter().map(|r| r.id));
        ids.extend(
            crate::evidence::store()
                .entries
                .iter()
                .map(|e| e.id.as_str()),
        );
        ids.extend(crate::hops::ids());
        ids.extend(other_ids());
        // Short enough for one line of 80: the lists are where `explain --help` says.
        let near = crate::catalog::closest(&a.id, &ids, 2);
        let hint = if near.is_empty() {
            "; see explain --help".to_string()
        } else {
            format!("; closest: {}", near.join(", "))
        };
        anyhow::bail!("unknown id `{}`{hint}", a.id);
    };
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// A lint rule: what it checks, what it rests on, its evidence (docs/lint.md has examples).
fn lint_rule(r: &crate::lint::rules::Rule, pal: &crate::report::Palette) -> String {
    Entry {
        id: r.id.to_string(),
        kind: format!("{} lint rule", r.product),
        title: r.title.to_string(),
        rule: r.basis.to_string(),
        evidence: r.evidence.iter().map(|e| e.to_string()).collect(),
        see: "a tripping config and its fixed twin: docs/lint.md; run it: rtcheck lint PATH".into(),
    }
    .render(pal)
}

/// Any other id a command prints: what it is, its rule, its evidence, where to see more.
struct Entry {
    id: String,
    kind: String,
    title: String,
    rule: String,
    evidence: Vec<String>,
    see: String,
}

impl Entry {
    fn render(&self, pal: &crate::report::Palette) -> String {
        use crate::report::text::wrap;
        let ind = "            ";
        let head = format!("{} ({}): {}", self.id, self.kind, self.title);
        let mut out = wrap(&head, pal.width, "", "  ");
        if !self.rule.is_empty() {
            out.push_str(&wrap(&self.rule, pal.width, "  rule:     ", ind));
        }
        for e in &self.evidence {
            let e = crate::evidence::reference(e);
            let line = format!("[{}] {} ({})", e.id, e.value, e.source);
            out.push_str(&wrap(&line, pal.width, "  evidence: ", ind));
        }
        out.push_str(&wrap(&self.see, pal.width, "  see:      ", ind));
        out
    }
}

/// Ids of findings that are not audit checks, lint rules, evidence or hops: probe's
/// checks, the checklist items review walks, verify's measurements, budget's findings and
/// the proxy findings of an audit on a proxy host.
fn other_ids() -> Vec<&'static str> {
    let mut ids: Vec<&str> = crate::probe::IDS.to_vec();
    ids.extend(crate::probe::browser::checks::IDS);
    ids.extend(crate::lint::host::EXPLAINED.iter().map(|e| e.0));
    ids.extend(OTHERS.iter().map(|e| e.0));
    ids.extend(crate::review::known_ids());
    ids.extend(crate::verify::names());
    ids.extend(questions().map(|q| q.0));
    ids
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
fn questions() -> [(&'static str, &'static str); 5] {
    use crate::choose::decide::{Q1, Q2, Q3, Q4};
    [
        ("q1", Q1),
        ("q2", Q2),
        ("q3", Q3),
        ("q4", Q4),
        ("path", crate::choose::path::QUESTION),
    ]
}

fn other(id: &str) -> Option<Entry> {
    if let Some((q, text)) = questions().into_iter().find(|q| q.0 == id) {
        return Some(Entry {
            id: q.into(),
            kind: "choose question".into(),
            title: text.into(),
            rule: "its answer decides one part of the design; the reason printed with it \
                   says which and on what evidence"
                .into(),
            evidence: vec![],
            see: "docs/choose.md; run it: rtcheck choose".into(),
        });
    }
    let see_probe = "docs/probe.md; run it: rtcheck probe URL";
    if let Some(m) = crate::probe::CHECKS.iter().find(|m| m.id == id) {
        return Some(Entry {
            id: m.id.into(),
            kind: "probe check".into(),
            title: m.title.into(),
            rule: String::new(),
            evidence: m.evidence.iter().map(|e| e.to_string()).collect(),
            see: see_probe.into(),
        });
    }
    if crate::probe::browser::checks::IDS.contains(&id) {
        return Some(Entry {
            id: id.into(),
            kind: "probe --browser check".into(),
            title: "what headless Chromium did with the URL".into(),
            rule: String::new(),
            evidence: vec![],
            see: "docs/probe.md; run it: rtcheck probe --browser URL".into(),
        });
    }
    if let Some((i, t, r)) = crate::lint::host::EXPLAINED.iter().find(|e| e.0 == id) {
        return Some(Entry {
            id: i.to_string(),
            kind: "audit on a proxy host".into(),
            title: t.to_string(),
            rule: r.to_string(),
            evidence: vec!["ulimit-n".into()],
            see: "docs/audit.md; run it: rtcheck audit --role proxy".into(),
        });
    }
    if let Some((i, k, t, r, see)) = OTHERS.iter().find(|e| e.0 == id) {
        return Some(Entry {
            id: i.to_string(),
            kind: k.to_string(),
            title: t.to_string(),
            rule: r.to_string(),
            evidence: vec![],
            see: see.to_string(),
        });
    }
    if let Some((c, i)) = crate::checklist::all()
        .iter()
        .find_map(|c| Some((c, c.items.iter().find(|i| i.id == id)?)))
    {
        return Some(Entry {
            id: i.id.clone(),
            kind: format!("{} checklist item", c.name),
            title: i.title.clone(),
            rule: format!("{} Fix: {}", i.why, i.fix),
            evidence: i.evidence.clone(),
            see: "docs/review.md; walk it: rtcheck review".into(),
        });
    }
    let p = crate::verify::part(id)?;
    Some(Entry {
        id: p.name.into(),
        kind: "verify measurement".into(),
        title: p.title.into(),
        rule: format!(
            "demonstrates the audit check `{}` live, on loopback",
            p.finding
        ),
        evidence: vec![p.evidence.into()],
        see: format!("docs/verify.md; run it: rtcheck verify {}", p.name),
    })
}
