//! Checklists (checklists/*.yaml), embedded in the binary and looked up by name or item id.
use crate::evidence::EvidenceRef;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// (file name, content) of every embedded checklist, in display order.
pub const CHECKLIST_FILES: &[(&str, &str)] = &[
    (
        "checklists/realtime-ops.yaml",
        include_str!("../checklists/realtime-ops.yaml"),
    ),
    (
        "checklists/async-service.yaml",
        include_str!("../checklists/async-service.yaml"),
    ),
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    pub id: String,
    pub group: String,
    pub title: String,
    /// One or two sentences, with the measured number.
    pub why: String,
    /// Evidence ids (data/evidence.yaml).
    pub evidence: Vec<String>,
    pub fix: String,
    /// Live experiment demonstrating the item (`rtcheck verify NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
}

impl Item {
    pub fn evidence_refs(&self) -> Vec<EvidenceRef> {
        self.evidence
            .iter()
            .map(|id| crate::evidence::reference(id))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checklist {
    pub name: String,
    pub title: String,
    pub description: String,
    pub items: Vec<Item>,
}

impl Checklist {
    /// Groups in first-seen order.
    pub fn groups(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for i in &self.items {
            if !out.contains(&i.group.as_str()) {
                out.push(&i.group);
            }
        }
        out
    }

    pub fn item(&self, id: &str) -> Option<&Item> {
        self.items.iter().find(|i| i.id == id)
    }
}

/// Parse one checklist file; `origin` names it in errors (with line and column).
pub fn parse(text: &str, origin: &str) -> anyhow::Result<Checklist> {
    let c: Checklist = serde_yaml::from_str(text).map_err(|e| {
        let loc = e
            .location()
            .map(|l| format!(":{}:{}", l.line(), l.column()))
            .unwrap_or_default();
        // serde_yaml appends " at line X column Y"; the prefix already says where.
        let msg = e.to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        anyhow::anyhow!("{origin}{loc}: {msg}")
    })?;
    let mut seen = std::collections::HashSet::new();
    for i in &c.items {
        if !seen.insert(i.id.as_str()) {
            anyhow::bail!("{origin}: duplicate item id `{}`", i.id);
        }
    }
    Ok(c)
}

/// All embedded checklists. Validated by tests, so a parse failure is a build bug.
pub fn all() -> &'static [Checklist] {
    static ALL: OnceLock<Vec<Checklist>> = OnceLock::new();
    ALL.get_or_init(|| {
        CHECKLIST_FILES
            .iter()
            .map(|(f, t)| parse(t, f).expect("embedded checklist is valid"))
            .collect()
    })
}

pub fn by_name(name: &str) -> Option<&'static Checklist> {
    all().iter().find(|c| c.name == name)
}

/// An item by id, with the checklist holding it.
/// An item by its id, or as `explain` cites it: `CHECKLIST/ID` (`realtime-ops/proxy-config`).
pub fn find_item(id: &str) -> Option<(&'static Checklist, &'static Item)> {
    if let Some((list, item)) = id.split_once('/') {
        let c = by_name(list)?;
        return c.item(item).map(|i| (c, i));
    }
    all().iter().find_map(|c| c.item(id).map(|i| (c, i)))
}

/// A must-have of the realtime-ops checklist (used by `choose`).
pub fn must_haves() -> Vec<&'static Item> {
    by_name("realtime-ops")
        .map(|c| c.items.iter().filter(|i| i.group == "must-have").collect())
        .unwrap_or_default()
}
