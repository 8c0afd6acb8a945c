//! What `rtcheck evidence` and `rtcheck checklist` show: views joining evidence entries and
//! checklist items, and the nearest-id suggestion for a typo. Commands in `cmd::catalog`.
use crate::checklist::{self, Checklist, Item};
use crate::evidence::{Evidence, EvidenceRef, Source, Value};
use serde::Serialize;

/// One evidence entry as shown: the entry plus the checklist items citing it.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceView {
    pub id: String,
    pub claim: String,
    pub values: Vec<Value>,
    pub context: String,
    pub source: Source,
    /// The source as cited: "\"TITLE\", part N".
    pub citation: String,
    /// Where the article sits in its series.
    pub series: String,
    /// What the number was measured on (the source's setup); the entry's own setup is
    /// `context`.
    pub conditions: String,
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
        let doc = e.source.doc();
        EvidenceView {
            id: e.id.clone(),
            claim: e.claim.clone(),
            values: e.values.clone(),
            context: e.context.clone(),
            source: e.source.clone(),
            citation: e.source.describe(),
            series: doc.map(|d| d.series.to_string()).unwrap_or_default(),
            conditions: doc.map(|d| d.measured.to_string()).unwrap_or_default(),
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

/// Up to `n` candidates nearest to `query`: substring matches first, then by edit distance
/// (only those within about half the query's length, so nonsense suggests nothing).
pub fn closest(query: &str, candidates: &[&str], n: usize) -> Vec<String> {
    let q = query.to_ascii_lowercase();
    let mut scored: Vec<(usize, &str)> = candidates
        .iter()
        .filter_map(|c| {
            // A substring is always a candidate, ranked by how much it differs (so
            // `nginx-ws-upgrad` suggests the rule before the hop `nginx`).
            let d = levenshtein(&q, c);
            let sub = c.contains(q.as_str()) || q.contains(*c);
            let limit = q.len().max(4) / 2 + 1;
            (sub || d <= limit).then_some((d, *c))
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
