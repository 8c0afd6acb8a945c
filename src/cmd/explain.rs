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
    rtcheck explain aws-alb")]
pub struct ExplainArgs {
    /// An audit check id (fd-limit, tcp-wmem, ...), an evidence id (ulimit-n, ...) or a hop id (aws-alb, ...).
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
        let near = crate::catalog::closest(&a.id, &ids, 3);
        let hint = if near.is_empty() {
            String::new()
        } else {
            format!("; closest: {}", near.join(", "))
        };
        anyhow::bail!(
            "unknown check, evidence or hop id `{}`{hint} (check ids: {}; lint rules: docs/lint.md; evidence ids: `rtcheck evidence`; hop ids: `rtcheck hops`)",
            a.id,
            checks.join(" ")
        );
    };
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// A lint rule: what it checks, what it rests on, its evidence (docs/lint.md has examples).
fn lint_rule(r: &crate::lint::rules::Rule, pal: &crate::report::Palette) -> String {
    use crate::report::text::wrap;
    let ind = "            ";
    let mut out = wrap(
        &format!("{} ({} lint rule): {}", r.id, r.product, r.title),
        pal.width,
        "",
        "  ",
    );
    out.push_str(&wrap(r.basis, pal.width, "  rule:     ", ind));
    for e in r.evidence {
        let e = crate::evidence::reference(e);
        out.push_str(&wrap(
            &format!("[{}] {} ({})", e.id, e.value, e.source),
            pal.width,
            "  evidence: ",
            ind,
        ));
    }
    out.push_str(&wrap(
        "a tripping config and its fixed twin: docs/lint.md; run it: rtcheck lint PATH",
        pal.width,
        "  see:      ",
        ind,
    ));
    out
}
