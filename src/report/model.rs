//! Report envelopes the renderers take: `FindingsReport` (audit). The findings themselves
//! (`Finding`, `Status`, `Summary`, ...) are made by the domain and live in
//! `crate::findings`; `choose` (Recommendation), `bench` (BenchReport) and `verify`
//! (VerifyReport) keep their result types next to their domain code. Renderers import
//! models, never the reverse.
pub use crate::evidence::EvidenceRef;
pub use crate::findings::*;
use serde::{Deserialize, Serialize};

/// A findings result (audit, verify): what the JSON/YAML formats print and every findings
/// renderer (text, markdown, junit, github) takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingsReport {
    /// "audit" or "verify".
    pub kind: String,
    /// The workload the findings were judged against (defaults filled in).
    pub profile: crate::profile::Profile,
    /// What was examined, e.g. "procfs /proc, sysfs /sys, process self".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub findings: Vec<Finding>,
    pub summary: Summary,
    /// Wall time of the work (snapshot + checks), in milliseconds.
    pub duration_ms: f64,
}

impl FindingsReport {
    pub fn new(
        kind: &str,
        profile: crate::profile::Profile,
        target: Option<String>,
        findings: Vec<Finding>,
        duration_ms: f64,
    ) -> Self {
        FindingsReport {
            kind: kind.to_string(),
            profile,
            target,
            summary: Summary::of(&findings),
            findings,
            // Microsecond resolution is plenty and keeps the JSON readable.
            duration_ms: (duration_ms * 1000.0).round() / 1000.0,
        }
    }
}
