//! What the domain produces for audit and verify: a status per check, findings with their
//! fix and evidence, live verifications, and the summary counting behind exit codes. Sits
//! just above the data layer (evidence); the report layer renders it.
use crate::evidence::EvidenceRef;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Skip,
    Warn,
    Fail,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

/// How to fix a finding: now (runtime) and across reboots (persistent).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Fix {
    pub summary: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub persistent: Vec<String>,
}

/// A live measurement attached to a finding (`verify`, `audit --verify`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// Experiment name, e.g. "fd-limit".
    pub name: String,
    /// None when the run was invalid: then `verdict` says why, and no number is shown.
    pub measured: Option<f64>,
    pub unit: String,
    /// The reference number from the evidence, e.g. "1,018 at ulimit 1024".
    pub reference: String,
    /// One line: what the measurement shows (confirms / differs / invalid: reason).
    pub verdict: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    pub valid: bool,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable check id, e.g. "fd-limit".
    pub id: String,
    pub title: String,
    pub status: Status,
    /// What was read on the host ("soft 1024, hard 4096").
    pub observed: String,
    /// What the workload needs ("soft >= 12,064").
    pub expected: String,
    /// The rule that turned the workload into `expected`.
    pub rule: String,
    /// Why the check was skipped (missing file, --skip), when status is skip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub evidence: Vec<EvidenceRef>,
    pub fix: Fix,
    /// Name of the live experiment that demonstrates this finding (`rtcheck verify NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// The numbers behind `observed` and `expected`, machine-readable (e.g. "soft": 1024,
    /// "needed": 10000), so CI can alert on values instead of parsing sentences.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub numbers: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Summary {
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    pub skip: usize,
}

impl Summary {
    pub fn of(findings: &[Finding]) -> Summary {
        let mut s = Summary::default();
        for f in findings {
            match f.status {
                Status::Pass => s.pass += 1,
                Status::Warn => s.warn += 1,
                Status::Fail => s.fail += 1,
                Status::Skip => s.skip += 1,
            }
        }
        s
    }
}

/// `--fail-on`: the lowest status that makes the exit code 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    #[default]
    Fail,
    Warn,
    Never,
}

impl FailOn {
    pub fn trips(self, s: &Summary) -> bool {
        match self {
            FailOn::Fail => s.fail > 0,
            FailOn::Warn => s.fail + s.warn > 0,
            FailOn::Never => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_thresholds() {
        let warn_only = Summary {
            pass: 3,
            warn: 1,
            fail: 0,
            skip: 1,
        };
        let with_fail = Summary {
            fail: 1,
            ..warn_only
        };
        assert!(!FailOn::Fail.trips(&warn_only));
        assert!(FailOn::Warn.trips(&warn_only));
        assert!(FailOn::Fail.trips(&with_fail));
        assert!(!FailOn::Never.trips(&with_fail));
    }
}
