//! `rtcheck evidence` and `rtcheck checklist`: list and show the embedded data.
use crate::checklist::{self, Checklist, Item};
use crate::cli::Ctx;
use crate::evidence::{self, Evidence, Source, Value};
use crate::report::{EvidenceRef, Format};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

const FORMATS: &[Format] = &[Format::Text, Format::Json, Format::Yaml, Format::Markdown];

/// `--format` parser offering only the human and serde formats (help lists just these).
pub fn human_formats() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["text", "json", "yaml", "markdown"])
        .map(|s| <Format as clap::ValueEnum>::from_str(&s, false).unwrap_or(Format::Text))
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  rtcheck evidence                     all measured numbers, as a table
  rtcheck evidence ulimit-n            one entry, with the checklist items citing it
  rtcheck evidence --format json       every entry as JSON (id, claim, values, context, source)
  rtcheck evidence --sources           the five articles: id, title, file, parts cited")]
pub struct EvidenceArgs {
    /// Evidence id to show (all when omitted).
    pub id: Option<String>,
    /// List the five source articles (id, title, seed file, parts cited) instead.
    #[arg(long, conflicts_with = "id")]
    pub sources: bool,
    /// Output format.
    #[arg(long, value_parser = human_formats(), default_value = "text")]
    pub format: Format,
    /// Write to FILE (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  rtcheck checklist                    the checklists and their item counts
  rtcheck checklist realtime-ops       every item of one checklist
  rtcheck checklist open-files         one item, with its measured numbers
  rtcheck checklist async-service --format markdown > CHECKLIST.md")]
pub struct ChecklistArgs {
    /// Checklist name (realtime-ops, async-service) or item id.
    pub name: Option<String>,
    /// Output format.
    #[arg(long, value_parser = human_formats(), default_value = "text")]
    pub format: Format,
    /// Write to FILE (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// One evidence entry as shown: the entry plus the checklist items citing it.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceView {
    pub id: String,
    pub claim: String,
    pub values: Vec<Value>,
    pub context: String,
    pub source: Source,
    /// Checklist item ids (`checklist/item`) that cite this entry.
    pub cited_by: Vec<String>,
}

impl EvidenceView {
    pub fn of(e: &Evidence) -> EvidenceView {
        let cited_by = checklist::all()
            .iter()
            .flat_map(|c| {
                c.items
                    .iter()
                    .filter(|i| i.evidence.iter().any(|x| x == &e.id))
                    .map(move |i| format!("{}/{}", c.name, i.id))
            })
            .collect();
        EvidenceView {
            id: e.id.clone(),
            claim: e.claim.clone(),
            values: e.values.clone(),
            context: e.context.clone(),
            source: e.source.clone(),
            cited_by,
        }
    }
}

/// One checklist item as shown: the item with its evidence expanded.
#[derive(Debug, Clone, Serialize)]
pub struct ItemView {
    pub checklist: String,
    pub id: String,
    pub group: String,
    pub title: String,
    pub why: String,
    pub fix: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    pub evidence: Vec<EvidenceRef>,
}

impl ItemView {
    pub fn of(c: &Checklist, i: &Item) -> ItemView {
        ItemView {
            checklist: c.name.clone(),
            id: i.id.clone(),
            group: i.group.clone(),
            title: i.title.clone(),
            why: i.why.clone(),
            fix: i.fix.clone(),
            verify: i.verify.clone(),
            evidence: i.evidence_refs(),
        }
    }
}

pub fn run_evidence(a: EvidenceArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    a.format.ensure_one_of(FORMATS, "evidence")?;
    let out = match &a.id {
        None if a.sources => {
            let all = evidence::sources();
            match a.format {
                Format::Json => crate::report::json::render(&all)?,
                Format::Yaml => crate::report::yaml::render(&all)?,
                Format::Markdown => crate::report::markdown::evidence::sources(&all),
                _ => crate::report::text::evidence::sources(&all, &ctx.palette()),
            }
        }
        None => {
            let all: Vec<EvidenceView> = evidence::store()
                .entries
                .iter()
                .map(EvidenceView::of)
                .collect();
            match a.format {
                Format::Json => crate::report::json::render(&all)?,
                Format::Yaml => crate::report::yaml::render(&all)?,
                Format::Markdown => crate::report::markdown::evidence::evidence_list(&all),
                _ => crate::report::text::evidence::evidence_list(&all, &ctx.palette()),
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
            match a.format {
                Format::Json => crate::report::json::render(&v)?,
                Format::Yaml => crate::report::yaml::render(&v)?,
                Format::Markdown => crate::report::markdown::evidence::evidence_one(&v),
                _ => crate::report::text::evidence::evidence_one(&v, &ctx.palette()),
            }
        }
    };
    crate::report::output::emit(&out, a.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_checklist(a: ChecklistArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    a.format.ensure_one_of(FORMATS, "checklist")?;
    let p = ctx.palette();
    let out = match &a.name {
        None => {
            let all = checklist::all();
            match a.format {
                Format::Json => crate::report::json::render(&all)?,
                Format::Yaml => crate::report::yaml::render(&all)?,
                Format::Markdown => all
                    .iter()
                    .map(crate::report::markdown::evidence::checklist)
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => crate::report::text::evidence::checklists(all, &p),
            }
        }
        Some(name) => {
            if let Some(c) = checklist::by_name(name) {
                match a.format {
                    Format::Json => crate::report::json::render(c)?,
                    Format::Yaml => crate::report::yaml::render(c)?,
                    Format::Markdown => crate::report::markdown::evidence::checklist(c),
                    _ => crate::report::text::evidence::checklist(c, &p),
                }
            } else if let Some((c, i)) = checklist::find_item(name) {
                let v = ItemView::of(c, i);
                match a.format {
                    Format::Json => crate::report::json::render(&v)?,
                    Format::Yaml => crate::report::yaml::render(&v)?,
                    Format::Markdown => crate::report::markdown::evidence::item(&v),
                    _ => crate::report::text::evidence::item(&v, &p),
                }
            } else {
                let mut ids: Vec<&str> = checklist::all().iter().map(|c| c.name.as_str()).collect();
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
    };
    crate::report::output::emit(&out, a.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

fn unknown(what: &str, given: &str, ids: &[&str], list_cmd: &str) -> anyhow::Error {
    let near = closest(given, ids, 3);
    if near.is_empty() {
        anyhow::anyhow!("unknown {what} `{given}` (list them with `{list_cmd}`)")
    } else {
        anyhow::anyhow!(
            "unknown {what} `{given}`; closest: {} (list them with `{list_cmd}`)",
            near.join(", ")
        )
    }
}

/// Up to `n` candidates nearest to `query`: substring matches first, then by edit distance
/// (only those within about half the query's length, so nonsense suggests nothing).
pub fn closest(query: &str, candidates: &[&str], n: usize) -> Vec<String> {
    let q = query.to_ascii_lowercase();
    let mut scored: Vec<(usize, &str)> = candidates
        .iter()
        .filter_map(|c| {
            let d = if c.contains(q.as_str()) || q.contains(*c) {
                0
            } else {
                levenshtein(&q, c)
            };
            let limit = q.len().max(4) / 2 + 1;
            (d <= limit).then_some((d, *c))
        })
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(n)
        .map(|(_, c)| c.to_string())
        .collect()
}

fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_prefers_substrings_then_edit_distance() {
        let ids = ["ulimit-n", "ping-pong", "ping-timing", "conn-ram"];
        assert_eq!(closest("ulimit", &ids, 3), vec!["ulimit-n"]);
        assert_eq!(closest("ping-pomg", &ids, 1), vec!["ping-pong"]);
        assert_eq!(closest("ulimt", &ids, 3), vec!["ulimit-n"]);
        assert_eq!(closest("ping", &ids, 3), vec!["ping-pong", "ping-timing"]);
        assert!(closest("zzzzzzzzzz", &ids, 3).is_empty());
        assert_eq!(levenshtein("kitten", "sitting"), 3);
    }
}
