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
    let out = if crate::audit::checks::CheckId::parse(&a.id).is_some() {
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
        let mut s = crate::report::doc::text::render(&crate::report::audit::explain_doc(f), &pal);
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
        render(&r.info(), &pal)
    } else if let Some(e) = crate::evidence::store().get(&a.id) {
        let v = crate::catalog::EvidenceView::of(e);
        crate::report::doc::text::render(&crate::report::evidence::one_doc(&v)?, &pal)
    } else if let Some(h) = crate::hops::get(&a.id) {
        crate::report::doc::text::render(&crate::report::hops::one_doc(h)?, &pal)
    } else if let Some(c) = crate::report::checks::info(&a.id) {
        render(&c, &pal)
    } else {
        let all = crate::report::checks::all();
        let mut ids: Vec<&str> = all.iter().map(|c| c.id.as_str()).collect();
        ids.extend(
            crate::evidence::store()
                .entries
                .iter()
                .map(|e| e.id.as_str()),
        );
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

/// An id that is not an audit check, evidence or a hop: what it is, its rule, its
/// evidence, where to see more.
fn render(c: &crate::findings::CheckInfo, pal: &crate::report::Palette) -> String {
    use crate::report::text::wrap;
    let ind = "            ";
    let head = format!("{} ({}): {}", c.id, c.kind, c.title);
    let mut out = wrap(&head, pal.width, "", "  ");
    let rule = c.rule();
    if !rule.is_empty() {
        out.push_str(&wrap(&rule, pal.width, "  rule:     ", ind));
    }
    for e in &c.evidence {
        let e = crate::evidence::reference(e);
        let line = format!("[{}] {} ({})", e.id, e.value, e.source);
        out.push_str(&wrap(&line, pal.width, "  evidence: ", ind));
    }
    out.push_str(&wrap(&c.see, pal.width, "  see:      ", ind));
    out
}
