//! JUnit XML for findings (audit, verify): one testcase per check.
//! fail -> <failure> (always); warn -> <failure> only with --fail-on warn, else passes with the
//! details in <system-out>; skip -> <skipped> (counted in the suite's `skipped`); pass ->
//! success with <system-out>.
use crate::findings::{FailOn, Finding, Status};
use crate::report::FindingsReport;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

fn details(f: &Finding) -> String {
    let mut s = format!(
        "status: {}\nobserved: {}\nexpected: {}\nrule: {}\n",
        f.status.as_str(),
        f.observed,
        f.expected,
        f.rule
    );
    if let Some(r) = &f.reason {
        s.push_str(&format!("reason: {r}\n"));
    }
    for e in &f.evidence {
        s.push_str(&format!(
            "evidence [{}]: {} ({})\n",
            e.id, e.value, e.source
        ));
    }
    if !f.fix.summary.is_empty() {
        s.push_str(&format!("fix: {}\n", f.fix.summary));
    }
    for c in &f.fix.runtime {
        s.push_str(&format!("  now: {c}\n"));
    }
    for c in &f.fix.persistent {
        s.push_str(&format!("  persistent: {c}\n"));
    }
    if let Some(v) = &f.verify {
        s.push_str(&format!("verify: rtcheck verify {v}\n"));
    }
    if let Some(v) = &f.verification {
        s.push_str(&format!(
            "measured live: {} ({}); reference: {}\nverdict: {}\n",
            crate::report::verify::measured(v),
            if v.valid { "valid" } else { "INVALID" },
            v.reference,
            v.verdict
        ));
    }
    s
}

pub fn render(r: &FindingsReport, fail_on: FailOn) -> anyhow::Result<String> {
    // An id found at several places (a lint rule in two files) names each testcase by its
    // place too, so no two testcases share a name.
    let repeated = |id: &str| r.findings.iter().filter(|f| f.id == id).count() > 1;
    render_named(r, fail_on, &|f: &Finding| match &f.location {
        Some(l) if repeated(&f.id) => format!("{} ({}:{})", f.id, l.file, l.line),
        _ => f.id.clone(),
    })
}

/// [`render`] with each testcase named by `case_name` (a report with one finding per id
/// and target, such as probe over several URLs, needs names that do not repeat).
pub fn render_named(
    r: &FindingsReport,
    fail_on: FailOn,
    case_name: &dyn Fn(&Finding) -> String,
) -> anyhow::Result<String> {
    let name = format!("rtcheck {}", r.kind);
    let mut report = Report::new(name.clone());
    let mut suite = TestSuite::new(name);
    suite.set_time(Duration::from_secs_f64(r.duration_ms.max(0.0) / 1000.0));
    for f in &r.findings {
        let failing = match f.status {
            Status::Fail => true,
            Status::Warn => matches!(fail_on, FailOn::Warn | FailOn::Skip),
            _ => false,
        };
        let text = details(f);
        let status = if f.status == Status::Skip {
            let mut s = TestCaseStatus::skipped();
            s.set_message(f.reason.clone().unwrap_or_else(|| "skipped".into()));
            s
        } else if f.status == Status::Suppressed {
            // Accepted by the baseline: shown as skipped, the message says why.
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!(
                "suppressed: {}",
                f.reason.as_deref().unwrap_or("accepted by the baseline")
            ))
            .set_type("suppressed");
            s
        } else if failing {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("{}: {}", f.status.as_str(), f.observed))
                .set_type(f.status.as_str())
                .set_description(text.clone());
            s
        } else {
            TestCaseStatus::success()
        };
        let mut tc = TestCase::new(case_name(f), status);
        tc.set_classname(format!("rtcheck.{}", r.kind));
        if f.status != Status::Skip {
            tc.set_system_out(text);
        }
        suite.add_test_case(tc);
    }
    report.add_test_suite(suite);
    // quick-junit counts skips as `disabled`; CI readers (surefire, GitLab) read `skipped`.
    let skipped = r
        .findings
        .iter()
        .filter(|f| matches!(f.status, Status::Skip | Status::Suppressed))
        .count();
    Ok(report.to_string()?.replacen(
        "<testsuite name=",
        &format!("<testsuite skipped=\"{skipped}\" name="),
        1,
    ))
}
