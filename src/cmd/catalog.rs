//! `rtcheck evidence` and `rtcheck checklist`: look up the embedded data, pick the renderer.
use super::output::{HumanFormat, HumanFormats, OutputArgs};
use super::Ctx;
use crate::catalog::{EvidenceView, ItemView};
use crate::checklist;
use crate::evidence;
use crate::report::evidence as ev;
use crate::report::{doc, Format};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  all measured numbers, as a table:
    rtcheck evidence
  one entry, with the checklist items citing it:
    rtcheck evidence ulimit-n
  every entry as JSON (id, claim, values, context, source):
    rtcheck evidence --format json
  the five articles the numbers come from, and what they measured:
    rtcheck evidence --sources")]
pub struct EvidenceArgs {
    /// Evidence id to show (all when omitted).
    pub id: Option<String>,
    /// List the five source articles (title, series, what they measured on) instead.
    #[arg(long, conflicts_with = "id")]
    pub sources: bool,
    #[command(flatten)]
    pub out: OutputArgs<HumanFormats>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  the checklists and their item counts:
    rtcheck checklist
  every item of one checklist:
    rtcheck checklist realtime-ops
  one item, with its measured numbers:
    rtcheck checklist open-files

    rtcheck checklist async-service --format markdown > CHECKLIST.md")]
pub struct ChecklistArgs {
    /// Checklist name (realtime-ops, async-service) or item id.
    pub name: Option<String>,
    #[command(flatten)]
    pub out: OutputArgs<HumanFormats>,
}

pub fn run_evidence(a: EvidenceArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    let render = |f: Format, p: crate::report::Palette| -> anyhow::Result<String> {
        let f = HumanFormat::of(f)?;
        Ok(match &a.id {
            None if a.sources => {
                let all = evidence::sources();
                match f {
                    HumanFormat::Text => doc::text::render(&ev::sources_doc(&all)?, &p),
                    HumanFormat::Json => crate::report::json::render(&all)?,
                    HumanFormat::Yaml => crate::report::yaml::render(&all)?,
                    HumanFormat::Markdown => doc::markdown::render(&ev::sources_doc(&all)?),
                }
            }
            None => {
                let all: Vec<EvidenceView> = evidence::store()
                    .entries
                    .iter()
                    .map(EvidenceView::of)
                    .collect();
                match f {
                    HumanFormat::Text => doc::text::render(&ev::list_doc(&all)?, &p),
                    HumanFormat::Json => crate::report::json::render(&all)?,
                    HumanFormat::Yaml => crate::report::yaml::render(&all)?,
                    HumanFormat::Markdown => doc::markdown::render(&ev::list_doc(&all)?),
                }
            }
            Some(id) => {
                let e = evidence::store().get(id).ok_or_else(|| {
                    let ids: Vec<&str> = evidence::store()
                        .entries
                        .iter()
                        .map(|e| e.id.as_str())
                        .collect();
                    unknown("evidence id", id, &ids, "rtcheck evidence")
                })?;
                let v = EvidenceView::of(e);
                match f {
                    HumanFormat::Text => doc::text::render(&ev::one_doc(&v)?, &p),
                    HumanFormat::Json => crate::report::json::render(&v)?,
                    HumanFormat::Yaml => crate::report::yaml::render(&v)?,
                    HumanFormat::Markdown => doc::markdown::render(&ev::one_doc(&v)?),
                }
            }
        })
    };
    a.out.emit_with(ctx.color, render)?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_checklist(a: ChecklistArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    let render = |f: Format, p: crate::report::Palette| -> anyhow::Result<String> {
        let f = HumanFormat::of(f)?;
        Ok(match &a.name {
            None => {
                let all = checklist::all();
                match f {
                    HumanFormat::Text => doc::text::render(&ev::checklists_doc(all)?, &p),
                    HumanFormat::Json => crate::report::json::render(&all)?,
                    HumanFormat::Yaml => crate::report::yaml::render(&all)?,
                    HumanFormat::Markdown => all
                        .iter()
                        .map(|c| Ok(doc::markdown::render(&ev::checklist_doc(c)?)))
                        .collect::<anyhow::Result<Vec<_>>>()?
                        .join("\n"),
                }
            }
            Some(name) => {
                if let Some(c) = checklist::by_name(name) {
                    match f {
                        HumanFormat::Text => doc::text::render(&ev::checklist_doc(c)?, &p),
                        HumanFormat::Json => crate::report::json::render(c)?,
                        HumanFormat::Yaml => crate::report::yaml::render(c)?,
                        HumanFormat::Markdown => doc::markdown::render(&ev::checklist_doc(c)?),
                    }
                } else if let Some((c, i)) = checklist::find_item(name) {
                    let v = ItemView::of(c, i);
                    match f {
                        HumanFormat::Text => doc::text::render(&ev::item_doc(&v)?, &p),
                        HumanFormat::Json => crate::report::json::render(&v)?,
                        HumanFormat::Yaml => crate::report::yaml::render(&v)?,
                        HumanFormat::Markdown => doc::markdown::render(&ev::item_doc(&v)?),
                    }
                } else {
                    let mut ids: Vec<&str> =
                        checklist::all().iter().map(|c| c.name.as_str()).collect();
                    ids.extend(
                        checklist::all()
                            .iter()
                            .flat_map(|c| c.items.iter().map(|i| i.id.as_str())),
                    );
                    return Err(unknown(
                        "checklist or item id",
                        name,
                        &ids,
                        "rtcheck checklist",
                    ));
                }
            }
        })
    };
    a.out.emit_with(ctx.color, render)?;
    Ok(ExitCode::SUCCESS)
}

fn unknown(what: &str, given: &str, ids: &[&str], list_cmd: &str) -> anyhow::Error {
    let near = crate::catalog::closest(given, ids, 3);
    if near.is_empty() {
        anyhow::anyhow!("unknown {what} `{given}` (list them with `{list_cmd}`)")
    } else {
        anyhow::anyhow!(
            "unknown {what} `{given}`; closest: {} (list them with `{list_cmd}`)",
            near.join(", ")
        )
    }
}
