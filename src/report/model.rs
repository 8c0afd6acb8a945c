//! Report envelopes the renderers take: `FindingsReport` (audit, and verify as findings for
//! junit/github), `VerifyReport` (verify) and `ReviewReport` (review), built by the command layer from what the
//! domain produced. The findings themselves (`Finding`, `Status`, `Summary`, ...) live in
//! `crate::findings`; `choose` (Recommendation) and `bench` (BenchReport) keep their result
//! types next to their domain code. Renderers import models, never the reverse.
use crate::findings::{Finding, Status, Summary, Verification};
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
    /// lint: every proxied route, what it carries and why (the evidence).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<crate::lint::classify::RouteReport>,
    /// audit --netns: the network namespace read and where it differs from the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<crate::audit::netns::NetnsReport>,
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
            routes: vec![],
            netns: None,
            // Microsecond resolution is plenty and keeps the JSON readable.
            duration_ms: (duration_ms * 1000.0).round() / 1000.0,
        }
    }

    /// The findings of a command whose own report is not a findings report (budget, load),
    /// for the findings formats (junit): default profile, no target, no duration.
    pub fn of_findings(kind: &str, findings: &[Finding]) -> Self {
        Self::new(
            kind,
            crate::profile::Profile::default(),
            None,
            findings.to_vec(),
            0.0,
        )
    }
}

/// The result of `rtcheck review`: the common findings report (so junit and github render
/// it like an audit) plus the review's own details.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewReport {
    #[serde(flatten)]
    pub report: FindingsReport,
    pub items: Vec<crate::review::ReviewItem>,
    pub left_out: Vec<crate::review::LeftOut>,
    pub notes: Vec<String>,
}

impl ReviewReport {
    /// Items of one source (measured, declared, unanswered).
    pub fn count(&self, src: crate::review::Source) -> usize {
        self.items.iter().filter(|i| i.source == src).count()
    }

    /// Ids of the items nobody answered.
    pub fn unanswered_ids(&self) -> Vec<&str> {
        self.items
            .iter()
            .filter(|i| i.source == crate::review::Source::Unanswered)
            .map(|i| i.id.as_str())
            .collect()
    }

    /// Answered findings that fail or warn, fails first: what every renderer leads with.
    /// Unanswered items are listed apart (they are questions, not verdicts).
    pub fn needs_action(&self) -> Vec<&Finding> {
        let open = self.unanswered_ids();
        let mut action: Vec<&Finding> = self
            .report
            .findings
            .iter()
            .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
            .filter(|f| !open.contains(&f.id.as_str()))
            .collect();
        action.sort_by_key(|f| std::cmp::Reverse(f.status));
        action
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifySummary {
    pub total: usize,
    pub valid: usize,
    pub invalid: usize,
}

/// The result of `rtcheck verify`: what the JSON/YAML formats print and the text and
/// markdown renderers take (junit/github render it as findings, one per measurement).
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// Always "verify".
    pub kind: String,
    /// Where everything ran.
    pub target: String,
    /// The experiments run, in order (`crate::verify::EXPERIMENTS` names).
    pub experiments: Vec<String>,
    /// The options they ran with (defaults filled in).
    pub options: crate::verify::VerifyOptions,
    pub verifications: Vec<Verification>,
    pub summary: VerifySummary,
    pub duration_ms: u64,
}

impl VerifyReport {
    pub fn new(
        experiments: Vec<String>,
        verifications: Vec<Verification>,
        options: crate::verify::VerifyOptions,
        started: std::time::Instant,
    ) -> Self {
        let valid = verifications.iter().filter(|v| v.valid).count();
        VerifyReport {
            kind: "verify".into(),
            target: "loopback (127.0.0.0/8) only".into(),
            experiments,
            options,
            summary: VerifySummary {
                total: verifications.len(),
                valid,
                invalid: verifications.len() - valid,
            },
            verifications,
            duration_ms: started.elapsed().as_millis() as u64,
        }
    }
}
