//! What bench fanout, idle and cluster (and load, for its findings) share after a run: `--threshold` on the report's
//! own JSON, the run as findings for junit and github, and the exit code (an invalid run
//! or a crossed threshold is 1).
use crate::findings::{Finding, Fix, Status};
use crate::report::FindingsReport;
use std::process::ExitCode;

/// Why a run is invalid for its thresholds: the first invalid scenario and its notes.
pub fn invalid_scenarios<'a>(
    mut s: impl Iterator<Item = (&'a str, bool, &'a [String])>,
) -> Option<String> {
    s.find(|(_, valid, _)| !valid)
        .map(|(name, _, notes)| format!("scenario {name} invalid: {}", notes.join("; ")))
}

/// One result's validity check as a finding (`validity:NAME`): the findings formats then
/// fail an invalid result on a line of its own, never only by the exit code.
pub fn validity_finding(name: &str, valid: bool, notes: &[String]) -> Finding {
    let (status, observed, fix) = if valid {
        (Status::Pass, "valid".to_string(), String::new())
    } else if notes.is_empty() {
        (
            Status::Fail,
            "invalid".to_string(),
            "its checks in the report say which failed; rerun (fewer connections, a quieter \
             host) before reading any figure of it"
                .to_string(),
        )
    } else {
        (
            Status::Fail,
            format!("invalid: {}", notes.join("; ")),
            "rerun (fewer connections, a quieter host) before reading any figure of it".into(),
        )
    };
    Finding {
        id: format!("validity:{name}"),
        title: format!("{name}: validity checks"),
        status,
        observed,
        expected: "every validity check passes".into(),
        rule: "a result that failed a validity check did not measure the server (a starved \
               load generator, losses nothing explains): none of its figures counts"
            .into(),
        reason: None,
        evidence: Vec::new(),
        fix: Fix {
            summary: fix,
            ..Fix::default()
        },
        verify: None,
        verification: None,
        numbers: Default::default(),
        location: None,
    }
}

/// A bench run for the findings formats (junit, github), `kind` its command (`bench
/// fanout`): each result's validity, then each `--threshold` finding.
pub fn findings_report<'a>(
    kind: &str,
    results: impl Iterator<Item = (&'a str, bool, &'a [String])>,
    thresholds: &[Finding],
) -> FindingsReport {
    let mut all: Vec<Finding> = results
        .map(|(name, valid, notes)| validity_finding(name, valid, notes))
        .collect();
    all.extend_from_slice(thresholds);
    FindingsReport::of_findings(kind, &all)
}

/// `--threshold` on a bench report's own JSON (at the top, or in each of `scenarios`).
/// Err: a usage error (an unknown name), reported after the measured report is written,
/// so a run of minutes is never thrown away for a typo.
pub fn gates<T: serde::Serialize>(
    ts: &[crate::findings::threshold::Threshold],
    report: &T,
    invalid: Option<&str>,
) -> Result<Vec<crate::findings::Finding>, String> {
    if ts.is_empty() {
        return Ok(Vec::new());
    }
    let json = serde_json::to_value(report).map_err(|e| e.to_string())?;
    crate::findings::threshold::evaluate(ts, &json, &["scenarios"], invalid)
}

/// The report's JSON with its threshold findings under `thresholds` (absent without any).
pub fn with_thresholds<T: serde::Serialize>(
    report: &T,
    found: &[crate::findings::Finding],
) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(report)?;
    if !found.is_empty() {
        v["thresholds"] = serde_json::to_value(found)?;
    }
    Ok(v)
}

/// Exit: 2 for an unknown threshold name (after the report), 1 for an invalid run or a
/// crossed threshold, else 0.
pub fn gate_exit(
    valid: bool,
    gated: Result<Vec<crate::findings::Finding>, String>,
) -> anyhow::Result<ExitCode> {
    let found = gated.map_err(anyhow::Error::msg)?;
    let crossed = found
        .iter()
        .any(|f| f.status == crate::findings::Status::Fail);
    Ok(crate::cmd::exit::verdict(crossed, !valid))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// bench cluster's run as it reaches junit and github: an invalid scenario fails on a
    /// testcase and an annotation of its own, a crossed threshold on its own, with the
    /// value seen and the expression.
    #[test]
    fn a_bench_run_as_findings_fails_each_invalid_result_and_crossed_threshold() {
        let report = serde_json::json!({
            "valid": false,
            "scenarios": [{"name": "single", "p99_ms": 3.0, "valid": true, "notes": []},
                          {"name": "one-path", "p99_ms": 61.5, "valid": true, "notes": []},
                          {"name": "node-kill", "p99_ms": null, "valid": false,
                           "notes": ["2 of 60 clients never connected"]}],
        });
        let names = ["single", "one-path", "node-kill"];
        let notes = [
            vec![],
            vec![],
            vec!["2 of 60 clients never connected".into()],
        ];
        let results = || {
            (0..3).map(|i| {
                let valid = report["scenarios"][i]["valid"] == true;
                (names[i], valid, notes[i].as_slice())
            })
        };
        let t = crate::findings::threshold::parse("one-path.p99 < 50ms").unwrap();
        // Judged as if valid, so the threshold itself is crossed by its value.
        let found = gates(&[t], &report, None).unwrap();
        let r = findings_report("bench cluster", results(), &found);
        let ids: Vec<_> = r.findings.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "validity:single",
                "validity:one-path",
                "validity:node-kill",
                "threshold:one-path.p99<50ms"
            ]
        );
        assert_eq!((r.summary.fail, r.summary.pass), (2, 2));

        let xml = crate::report::junit::render(&r, crate::findings::FailOn::Fail).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let failed = |name: &str| {
            let case = doc
                .descendants()
                .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
                .unwrap_or_else(|| panic!("no testcase {name}: {xml}"));
            case.children()
                .find(|c| c.has_tag_name("failure"))
                .map(|f| f.attribute("message").unwrap_or("").to_string())
        };
        assert_eq!(failed("validity:single"), None, "{xml}");
        let why = failed("validity:node-kill").unwrap_or_else(|| panic!("{xml}"));
        assert!(why.contains("never connected"), "{why}");
        let why = failed("threshold:one-path.p99<50ms").unwrap_or_else(|| panic!("{xml}"));
        assert!(why.contains("scenarios[1].p99_ms = 61.5"), "{why}");
        assert!(xml.contains("one-path.p99 &lt; 50 ms"), "{xml}");

        let gh = crate::report::github::render(&r);
        let errors: Vec<_> = gh.lines().filter(|l| l.starts_with("::error ")).collect();
        assert_eq!(errors.len(), 2, "{gh}");
        assert!(
            errors[0].starts_with("::error title=rtcheck bench cluster validity%3Anode-kill"),
            "{gh}"
        );
        assert!(errors[1].contains("threshold%3Aone-path.p99<50ms"), "{gh}");
        assert!(errors[1].contains("p99_ms = 61.5"), "{gh}");
        assert!(gh.contains("2 fail, 0 warn, 2 pass"), "{gh}");
    }

    #[test]
    fn a_valid_run_without_thresholds_is_one_passing_finding_per_result() {
        let r = findings_report("bench idle", [("ws", true, &[][..])].into_iter(), &[]);
        assert_eq!(r.findings.len(), 1);
        assert_eq!(r.findings[0].status, Status::Pass);
        assert!(!crate::report::github::render(&r).contains("::error"));
    }
}
