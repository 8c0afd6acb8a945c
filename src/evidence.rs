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
    /// Seed file and part, e.g. "002_62b3c7fd33ca2a37.txt, part 6".
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Value {
    pub name: String,
    pub value: f64,
    pub unit: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub seed: String,
    /// Part of the article series, e.g. "6" or "5 and 8".
    pub part: serde_yaml::Value,
}

impl Source {
    pub fn describe(&self) -> String {
        let part = match &self.part {
            serde_yaml::Value::Number(n) => n.to_string(),
            serde_yaml::Value::String(s) => s.clone(),
            other => serde_yaml::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_string(),
        };
        format!("{}, part {}", self.seed, part)
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
        let mut out = crate::units::fmt_thousands(v.abs() as u64);
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
            "B" => crate::units::fmt_bytes(self.value as u64),
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

    /// All values as one string: "limit 1,024 fds; connections_reached 1,018 connections".
    pub fn values_display(&self) -> String {
        self.values
            .iter()
            .map(|v| format!("{} {}", v.name, v.display()))
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub fn to_ref(&self) -> EvidenceRef {
        EvidenceRef {
            id: self.id.clone(),
            value: self.values_display(),
            claim: self.claim.clone(),
            source: self.source.describe(),
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
            assert!(!e.values.is_empty(), "{} has no values", e.id);
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
}
