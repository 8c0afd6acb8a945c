//! Measured numbers (data/evidence.yaml), embedded in the binary and looked up by id.
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

pub const EVIDENCE_YAML: &str = include_str!("../data/evidence.yaml");

/// A measured number backing a rule, copied from data/evidence.yaml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceRef {
    pub id: String,
    /// The measured number(s) as printed, e.g. "1,018 connections".
    pub value: String,
    pub claim: String,
    /// The citation: the article's title and the part of its series, e.g.
    /// "\"Tail latency at 10,000 connections\", part 11".
    pub source: String,
    /// The article's subject in English (None only for an unknown seed file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_title: Option<String>,
    /// The seed file, e.g. "000_e1c3734766ed1120.txt": a key for the JSON consumers that
    /// join on it (kept for them); never printed in a human format.
    #[serde(default)]
    pub source_file: String,
    /// "part 11", "parts 5 and 11", "section Why".
    #[serde(default)]
    pub part: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Value {
    pub name: String,
    pub value: f64,
    pub unit: String,
    /// True when rtcheck computed the number from what the article states (then `how`
    /// says from what); false when the article prints it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub derived: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how: Option<String>,
}

/// One of the five articles the numbers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SourceDoc {
    /// The seed number, "000".."004".
    pub id: &'static str,
    /// The article's subject, in English.
    pub title: &'static str,
    /// The seed file (not in the repository; the id is its key).
    pub file: &'static str,
    /// Where the article sits in its series.
    pub series: &'static str,
    /// What its numbers were measured on (the conditions a reader judges them by).
    pub measured: &'static str,
}

/// What the five articles are, said once wherever sources are listed.
pub const SERIES: &str = "The numbers come from five published articles (in Vietnamese), each closing a series of measured articles. Two close a series on realtime delivery (polling, SSE, WebSocket): measured with Go 1.23 and gorilla/websocket 1.5.3 (plus Redis 7), in Docker on one host, without TLS. The others measure one HTTP service's golden signals, sum up a 50-part async-service (Vert.x) series, and measure a latency budget over delayed hops. A part is the part of the series where a number was measured. Absolute numbers differ per host; the mechanisms and the orders of magnitude do not.";

/// The five articles, in seed order.
pub const SOURCES: &[SourceDoc] = &[
    SourceDoc {
        id: "000",
        title: "Tail latency at 10,000 connections",
        file: "000_e1c3734766ed1120.txt",
        series: "part 11 of a 12-part series on realtime delivery in Go",
        measured: "Go 1.23 + gorilla/websocket 1.5.3: a 10 vCPU server and 10,000 clients in Docker on one host, no TLS; 100 rounds of 1 KB at 5 rounds/s per 20 s run; p99.9 varies by about 10 ms between runs",
    },
    SourceDoc {
        id: "001",
        title: "The four golden signals, measured on one HTTP service",
        file: "001_f9a4bcbf1de4c34a.txt",
        series: "a single article (no part number); parts are its sections",
        measured: "a Python HTTP service with 8 workers and 20 ms of waiting per request, closed-loop clients (1 to 64) with a 500 ms timeout; the median of 3 runs",
    },
    SourceDoc {
        id: "002",
        title: "Polling, SSE or WebSocket: four questions and an ops checklist",
        file: "002_62b3c7fd33ca2a37.txt",
        series: "part 12 of the realtime series; it cites the part of each number",
        measured: "eleven Go 1.23 demos (gorilla/websocket 1.5.3, Redis 7 for several nodes) in Docker on one host, no TLS",
    },
    SourceDoc {
        id: "003",
        title: "Async services in production: a 50-part Vert.x series summed up",
        file: "003_4d3cfa7f83e7d5c2.txt",
        series: "the series' last article; it names parts 27, 31, 40, 44, 45, 48",
        measured: "Vert.x services, one measured run per article of the series",
    },
    SourceDoc {
        id: "004",
        title: "Latency budget: hops in sequence and in parallel",
        file: "004_7df5a7aa455b7e3b.txt",
        series: "part 45, the last of a 45-part networking series",
        measured: "an app calling 4 backends in containers, each hop about 24 ms of round trip (netem)",
    },
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The seed file, e.g. "002_62b3c7fd33ca2a37.txt" (a key into [`SOURCES`]); empty
    /// for a public report or rtcheck's own measurement.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub seed: String,
    /// Part of the article series, e.g. 6 or "5 and 8", or the section of an article that
    /// has no part numbers (seed 001), e.g. "section Why".
    #[serde(default, skip_serializing_if = "serde_yaml::Value::is_null")]
    pub part: serde_yaml::Value,
    /// A public report (an issue thread), cited as such, never as a seed's:
    /// "socketio/engine.io #559".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// The report's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// rtcheck's own measurement: the command and the host (its values are derived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_by: Option<String>,
}

impl Source {
    /// The article this cites; None only for a seed file missing from [`SOURCES`]
    /// (the catalog test forbids it).
    pub fn doc(&self) -> Option<&'static SourceDoc> {
        SOURCES.iter().find(|d| d.file == self.seed)
    }

    /// "part 11", "parts 5 and 11", "section Why", "series summary".
    pub fn part_label(&self) -> String {
        let raw = match &self.part {
            serde_yaml::Value::Number(n) => n.to_string(),
            serde_yaml::Value::String(s) => s.clone(),
            other => serde_yaml::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_string(),
        };
        if !raw.starts_with(|c: char| c.is_ascii_digit()) {
            raw
        } else if raw.contains(" and ") || raw.contains(',') {
            format!("parts {raw}")
        } else {
            format!("part {raw}")
        }
    }

    /// The citation, as a paper's references read: "\"Tail latency at 10,000
    /// connections\", part 11" (the seed file is a key, never shown).
    pub fn describe(&self) -> String {
        if let Some(r) = &self.report {
            let url = self
                .url
                .as_deref()
                .map(|u| format!(" ({u})"))
                .unwrap_or_default();
            return format!("public report {r}{url}");
        }
        if let Some(m) = &self.measured_by {
            return format!("measured by rtcheck: {m}");
        }
        match self.doc() {
            Some(d) => format!("\"{}\", {}", d.title, self.part_label()),
            None => format!("unknown article, {}", self.part_label()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    pub id: String,
    pub claim: String,
    pub values: Vec<Value>,
    pub context: String,
    pub source: Source,
}

/// Format a number the way the articles print it: thousands separators, no trailing zeros.
pub fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let mut out = rtcheck_base::units::fmt_thousands(v.abs() as u64);
        if v < 0.0 {
            out.insert(0, '-');
        }
        out
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

impl Value {
    /// "1,018 connections", "0.3 ms", "27 KB" (bytes shown in decimal units).
    pub fn display(&self) -> String {
        match self.unit.as_str() {
            "B" => rtcheck_base::units::fmt_bytes(self.value as u64),
            "%" => format!("{}%", fmt_num(self.value)),
            "x" => format!("x{}", fmt_num(self.value)),
            u => format!("{} {u}", fmt_num(self.value)),
        }
    }
}

impl Evidence {
    pub fn value(&self, name: &str) -> Option<f64> {
        self.values.iter().find(|v| v.name == name).map(|v| v.value)
    }

    /// All values as one string: "limit 1,024 fds; connections_reached 1,018 connections";
    /// a derived value says so: "messages_per_s 50,000 msg/s (derived)".
    pub fn values_display(&self) -> String {
        if self.values.is_empty() {
            return "no number (an incident the article reports)".into();
        }
        self.values
            .iter()
            .map(|v| {
                let d = if v.derived { " (derived)" } else { "" };
                format!("{} {}{d}", v.name, v.display())
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub fn to_ref(&self) -> EvidenceRef {
        EvidenceRef {
            id: self.id.clone(),
            value: self.values_display(),
            claim: self.claim.clone(),
            source: self.source.describe(),
            source_title: self.source.doc().map(|d| d.title.to_string()),
            source_file: self.source.seed.clone(),
            part: self.source.part_label(),
        }
    }
}

pub struct Store {
    pub entries: Vec<Evidence>,
}

impl Store {
    pub fn parse(text: &str) -> anyhow::Result<Store> {
        let entries: Vec<Evidence> =
            serde_yaml::from_str(text).map_err(|e| anyhow::anyhow!("data/evidence.yaml: {e}"))?;
        let mut seen = std::collections::HashSet::new();
        for e in &entries {
            if !seen.insert(e.id.as_str()) {
                anyhow::bail!("data/evidence.yaml: duplicate id `{}`", e.id);
            }
        }
        Ok(Store { entries })
    }

    pub fn get(&self, id: &str) -> Option<&Evidence> {
        self.entries.iter().find(|e| e.id == id)
    }
}

/// The embedded store. The YAML is validated by tests, so a parse failure is a build bug.
pub fn store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| Store::parse(EVIDENCE_YAML).expect("embedded data/evidence.yaml is valid"))
}

/// Look up an entry; unknown ids are programming errors caught by the cross-reference test.
pub fn get(id: &str) -> &'static Evidence {
    store()
        .get(id)
        .unwrap_or_else(|| panic!("unknown evidence id `{id}` (add it to data/evidence.yaml)"))
}

/// A named number of an entry, e.g. `num("conn-ram", "rss_per_conn")` = 27000.
pub fn num(id: &str, name: &str) -> f64 {
    get(id)
        .value(name)
        .unwrap_or_else(|| panic!("evidence `{id}` has no value `{name}`"))
}

/// A source as `rtcheck evidence --sources` lists it: the article and what cites it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceView {
    pub id: String,
    pub title: String,
    pub file: String,
    pub series: String,
    /// What its numbers were measured on.
    pub measured: String,
    /// Part labels cited by evidence entries, by part number ("part 5", "parts 5 and 8").
    pub parts_cited: Vec<String>,
    /// Evidence ids citing this source.
    pub entries: Vec<String>,
}

/// The five sources with the parts and entries citing each, in seed order.
pub fn sources() -> Vec<SourceView> {
    SOURCES
        .iter()
        .map(|d| {
            let citing: Vec<&Evidence> = store()
                .entries
                .iter()
                .filter(|e| e.source.seed == d.file)
                .collect();
            let mut parts_cited: Vec<String> = Vec::new();
            for e in &citing {
                let p = e.source.part_label();
                if !parts_cited.contains(&p) {
                    parts_cited.push(p);
                }
            }
            // By first part number ("parts 5 and 8" after "part 5"), sections after parts.
            let first = |p: &String| {
                let digits: String = p
                    .chars()
                    .skip_while(|c| !c.is_ascii_digit())
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                (digits.parse::<u32>().unwrap_or(u32::MAX), p.len())
            };
            parts_cited.sort_by_key(first);
            SourceView {
                id: d.id.into(),
                title: d.title.into(),
                file: d.file.into(),
                series: d.series.into(),
                measured: d.measured.into(),
                parts_cited,
                entries: citing.iter().map(|e| e.id.clone()).collect(),
            }
        })
        .collect()
}

/// Evidence reference for a report.
pub fn reference(id: &str) -> EvidenceRef {
    get(id).to_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_store_parses_and_has_reference_numbers() {
        let s = store();
        assert!(s.entries.len() >= 50);
        assert_eq!(num("ulimit-n", "connections_reached"), 1018.0);
        assert_eq!(num("ephemeral-ports", "port_range"), 28232.0);
        assert_eq!(num("session-expiry", "bytes"), 830_000_000.0);
        for e in &s.entries {
            // Incidents the articles report without a number: listed here on purpose.
            let qualitative = ["liveness-readiness", "cluster-only-failure"];
            assert_eq!(
                e.values.is_empty(),
                qualitative.contains(&e.id.as_str()),
                "{} values",
                e.id
            );
            assert!(e.claim.ends_with('.'), "{}: claim is one sentence", e.id);
        }
    }

    #[test]
    fn numbers_print_like_the_articles() {
        assert_eq!(fmt_num(1018.0), "1,018");
        assert_eq!(fmt_num(20274.0), "20,274");
        assert_eq!(fmt_num(0.112), "0.112");
        assert_eq!(fmt_num(58.7), "58.7");
        assert_eq!(
            reference("ulimit-n").value,
            "limit 1,024 fds; connections_reached 1,018 connections"
        );
    }

    #[test]
    fn five_sources_each_cited() {
        let all = sources();
        let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["000", "001", "002", "003", "004"]);
        let cited: usize = all.iter().map(|s| s.entries.len()).sum();
        // Every entry cites one of the five, but public reports and rtcheck's own runs
        // (issue 39), which name themselves.
        let own = |e: &&Evidence| e.source.report.is_some() || e.source.measured_by.is_some();
        let seeds = store().entries.iter().filter(|e| !own(e)).count();
        assert_eq!(cited, seeds, "every entry cites one of the five");
        let public = store().entries.iter().filter(own).count();
        assert!(public >= 5, "report-* and conn-cost-rtcheck: {public}");
        for s in &all {
            assert!(!s.parts_cited.is_empty(), "{}", s.id);
        }
        assert_eq!(all[4].parts_cited, ["part 45"]);
    }

    #[test]
    fn sources_print_as_title_and_part() {
        let r = reference("scenario-c1");
        assert_eq!(r.source, "\"Tail latency at 10,000 connections\", part 11");
        // The seed file is a key for JSON consumers, never part of the citation.
        assert!(store()
            .entries
            .iter()
            .all(|e| !e.source.describe().contains(".txt")));
        assert_eq!(r.source_file, "000_e1c3734766ed1120.txt");
        assert_eq!(r.part, "part 11");
        assert_eq!(
            reference("hub-gap").part,
            "parts 5 and 11",
            "hub-gap cites seed 002, parts 5 and 11"
        );
        assert!(reference("cpu-baseline").value.contains("(derived)"));
    }
}
