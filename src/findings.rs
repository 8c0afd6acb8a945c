//! What the domain produces for audit and verify: a status per check, findings with their
//! fix and evidence, live verifications, and the summary counting behind exit codes. Sits
//! just above the data layer (evidence); the report layer renders it.
pub mod baseline;
pub mod threshold;

use crate::evidence::EvidenceRef;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The id enum of one table of checks ([`rtcheck_base::check_ids`]): here for the
/// domain's tables (audit's, probe's); the data layer (hops) names it in base.
pub(crate) use rtcheck_base::check_ids;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Skip,
    /// Accepted by a baseline entry (`--baseline`): shown with the entry's reason, never
    /// counted toward `--fail-on`. Ordered below warn, so "worst first" lists it after
    /// what needs action.
    Suppressed,
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
            Status::Suppressed => "suppressed",
        }
    }
}

/// One id any command prints, as `explain` shows it: the same view whichever table
/// emits it (audit's checks, lint's rules, probe's checks, the checklists, ...); the
/// registry of all of them is `report::checks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckInfo {
    pub id: String,
    /// What prints it ("nginx lint rule", "probe check", ...).
    pub kind: String,
    pub title: String,
    /// Why it matters: the rule or documented behaviour it rests on.
    pub why: String,
    /// What to change, where the table says it once for every finding ("" otherwise: the
    /// fix is computed per finding).
    pub fix: String,
    /// Ids in data/evidence.yaml.
    pub evidence: Vec<String>,
    /// Where to read more and how to run it.
    pub see: String,
}

impl CheckInfo {
    /// The rule line `explain` prints: why, then the fix when the table has one.
    pub fn rule(&self) -> String {
        match self.fix.is_empty() {
            true => self.why.clone(),
            false => format!("{} Fix: {}", self.why, self.fix),
        }
    }
}

/// Evidence ids as owned strings (for a [`CheckInfo`]).
pub fn evidence_ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|e| e.to_string()).collect()
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
    /// Where in a file the finding is (`lint`: the directive's file:line and its block);
    /// None for findings about a host or a measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLocation>,
}

/// A place in a configuration file: what `--format github` annotates and SARIF's
/// physicalLocation names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLocation {
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// The enclosing block, e.g. "location /ws", "backend be_ws", "route /events".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Summary {
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    pub skip: usize,
    /// Accepted by the baseline (status `suppressed`).
    #[serde(default)]
    pub suppressed: usize,
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
                Status::Suppressed => s.suppressed += 1,
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
    /// Also a check that could not be measured (a skip other than `--skip ID`).
    Skip,
    Never,
}

impl FailOn {
    pub fn trips(self, s: &Summary) -> bool {
        match self {
            FailOn::Fail => s.fail > 0,
            FailOn::Warn => s.fail + s.warn > 0,
            // Skips by request are subtracted by `outcome`; counts alone cannot tell.
            FailOn::Skip => s.fail + s.warn + s.skip > 0,
            FailOn::Never => false,
        }
    }
}

/// What a findings report means for the exit code: a pure decision, printed by the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing at or above --fail-on and every required check measured: exit 0.
    Clean,
    /// A finding at or above --fail-on: exit 1 (the report says which).
    Tripped,
    /// A required check could not be measured: exit 1 with this one-line reason.
    Unmeasured(String),
    /// Not one check could be measured: exit 2 with this line and no report.
    Nothing(String),
}

/// Judge findings for CI. `required` are the check ids every host can answer (a skip of
/// one means the audit looked at the wrong place, e.g. an empty --procfs); `requested`
/// are the ids the user skipped on purpose, which never count as unmeasured.
pub fn outcome(
    findings: &[Finding],
    fail_on: FailOn,
    required: &[&str],
    requested: &[String],
) -> Outcome {
    let unmeasured: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.status == Status::Skip && !requested.contains(&f.id))
        .collect();
    let first = |fs: &[&Finding]| {
        fs.first()
            .map(|f| format!("{}: {}", f.id, f.reason.as_deref().unwrap_or("skipped")))
            .unwrap_or_default()
    };
    if !findings.is_empty() && findings.iter().all(|f| f.status == Status::Skip) {
        return Outcome::Nothing(format!(
            "nothing could be measured: all {} checks skipped (first: {}); check --procfs and --sysfs",
            findings.len(),
            first(&unmeasured)
        ));
    }
    let missing: Vec<&Finding> = unmeasured
        .iter()
        .copied()
        .filter(|f| required.contains(&f.id.as_str()))
        .collect();
    let mut s = Summary::of(findings);
    s.skip = unmeasured.len();
    if fail_on.trips(&s) {
        return Outcome::Tripped;
    }
    if !missing.is_empty() && fail_on != FailOn::Never {
        let ids: Vec<&str> = missing.iter().map(|f| f.id.as_str()).collect();
        return Outcome::Unmeasured(format!(
            "required check{} not measured: {} ({})",
            if ids.len() > 1 { "s" } else { "" },
            ids.join(", "),
            first(&missing)
        ));
    }
    Outcome::Clean
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
            suppressed: 0,
        };
        let with_fail = Summary {
            fail: 1,
            ..warn_only
        };
        assert!(!FailOn::Fail.trips(&warn_only));
        assert!(FailOn::Warn.trips(&warn_only));
        assert!(FailOn::Fail.trips(&with_fail));
        assert!(!FailOn::Never.trips(&with_fail));
        let skip_only = Summary {
            pass: 3,
            skip: 1,
            ..Summary::default()
        };
        assert!(!FailOn::Warn.trips(&skip_only));
        assert!(FailOn::Skip.trips(&skip_only));
        assert!(FailOn::Skip.trips(&warn_only));
    }

    fn finding(id: &str, status: Status) -> Finding {
        Finding {
            location: None,
            id: id.into(),
            title: String::new(),
            status,
            observed: String::new(),
            expected: String::new(),
            rule: String::new(),
            reason: (status == Status::Skip).then(|| format!("/x/{id}: missing")),
            evidence: vec![],
            fix: Fix::default(),
            verify: None,
            verification: None,
            numbers: BTreeMap::new(),
        }
    }

    #[test]
    fn outcome_of_unmeasured_audits() {
        use Status::*;
        let req = ["a", "b"];
        let fs = |s: [Status; 3]| {
            ["a", "b", "opt"]
                .iter()
                .zip(s)
                .map(|(id, st)| finding(id, st))
                .collect::<Vec<_>>()
        };
        let none: Vec<String> = vec![];
        // All skipped: nothing measured, whatever --fail-on says.
        for fo in [FailOn::Fail, FailOn::Never] {
            let o = outcome(&fs([Skip, Skip, Skip]), fo, &req, &none);
            assert!(
                matches!(&o, Outcome::Nothing(r) if r.contains("all 3 checks") && r.contains("a: /x/a: missing")),
                "{o:?}"
            );
        }
        // An optional check skipped is fine; a required one is not, unless asked for.
        assert_eq!(
            outcome(&fs([Pass, Pass, Skip]), FailOn::Fail, &req, &none),
            Outcome::Clean
        );
        let o = outcome(&fs([Pass, Skip, Skip]), FailOn::Fail, &req, &none);
        assert_eq!(
            o,
            Outcome::Unmeasured("required check not measured: b (b: /x/b: missing)".into())
        );
        let asked = vec!["b".to_string()];
        assert_eq!(
            outcome(&fs([Pass, Skip, Pass]), FailOn::Fail, &req, &asked),
            Outcome::Clean
        );
        assert_eq!(
            outcome(&fs([Pass, Skip, Pass]), FailOn::Never, &req, &none),
            Outcome::Clean
        );
        // --fail-on skip: any unmeasured check trips, a requested skip does not.
        assert_eq!(
            outcome(&fs([Pass, Pass, Skip]), FailOn::Skip, &req, &none),
            Outcome::Tripped
        );
        let asked = vec!["opt".to_string()];
        assert_eq!(
            outcome(&fs([Pass, Pass, Skip]), FailOn::Skip, &req, &asked),
            Outcome::Clean
        );
        // A failure trips before anything else.
        assert_eq!(
            outcome(&fs([Fail, Skip, Pass]), FailOn::Fail, &req, &none),
            Outcome::Tripped
        );
    }
}
