//! The baseline file `rtcheck.baseline.yaml` (issue 28): findings a team accepted, each by
//! check id (and the URL, host or file it is about, when it applies) with a **reason** and
//! an **expiry** date. kubeadm's `--ignore-preflight-errors=all` shows what a skip list
//! without reasons rots into; here an accepted finding still appears, as status
//! `suppressed` with its reason, and an entry that expired or has no reason is itself a
//! failing finding (`baseline`), so nothing is accepted silently or forever.
//!
//! ```yaml
//! accepted:
//!   - check: fd-limit
//!     host: web-17
//!     reason: "raised in the next image (OPS-412)"
//!     expiry: 2027-01-31
//! ```
//!
//! Pure: the command layer reads the file (rtcheck_base::input), says what today is and what the
//! host and each finding's URL are; this module decides.
use super::{Finding, Fix, Status};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The check id of the findings the baseline itself produces.
pub const ID: &str = "baseline";
/// The reason `--write-baseline` writes: it fails until someone replaces it.
pub const PLACEHOLDER: &str = "FILL IN: why this finding is accepted";
/// Days from today to the expiry `--write-baseline` proposes.
pub const DEFAULT_DAYS: i64 = 90;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    #[serde(default)]
    pub accepted: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The check id (`fd-limit`, `nginx-proxy-buffering`, ...).
    pub check: String,
    /// Only the finding about this URL (probe), compared without userinfo or query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Only on this host: the audited host's name, or a probed URL's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Only the finding in this file (lint), as the report prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Last day the entry holds, `YYYY-MM-DD` (it holds through that day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry: Option<String>,
}

/// A calendar date, compared as (year, month, day).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    pub y: i64,
    pub m: u32,
    pub d: u32,
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.y, self.m, self.d)
    }
}

impl Date {
    /// `YYYY-MM-DD`, a real day of a real month.
    pub fn parse(s: &str) -> Result<Date, String> {
        let bad = || format!("`{s}` is not a date (expected YYYY-MM-DD, e.g. 2027-01-31)");
        let p: Vec<&str> = s.trim().split('-').collect();
        if p.len() != 3 || p[0].len() != 4 || p[1].len() != 2 || p[2].len() != 2 {
            return Err(bad());
        }
        let y: i64 = p[0].parse().map_err(|_| bad())?;
        let m: u32 = p[1].parse().map_err(|_| bad())?;
        let d: u32 = p[2].parse().map_err(|_| bad())?;
        let date = Date { y, m, d };
        if !(1..=12).contains(&m) || d == 0 || Date::from_days(date.days()) != date {
            return Err(bad());
        }
        Ok(date)
    }

    /// Days since 1970-01-01 (H. Hinnant's days_from_civil).
    pub fn days(self) -> i64 {
        let y = if self.m <= 2 { self.y - 1 } else { self.y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.m);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.d) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// The date `days` after 1970-01-01 (civil_from_days).
    pub fn from_days(days: i64) -> Date {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let y = yoe + era * 400 + i64::from(m <= 2);
        Date { y, m, d }
    }

    /// Today in UTC, from Unix seconds.
    pub fn from_unix(secs: i64) -> Date {
        Date::from_days(secs.div_euclid(86_400))
    }
}

/// What a finding is about, beyond its check id: what an entry's url/host/file match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Subject {
    pub url: Option<String>,
    pub host: Option<String>,
    pub file: Option<String>,
}

/// A URL as entries compare it: no userinfo, no query or fragment, no trailing `/`.
fn bare_url(u: &str) -> String {
    let u = u.split(['?', '#']).next().unwrap_or(u);
    let u = match u.split_once("://") {
        Some((scheme, rest)) => {
            let (auth, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = auth.rsplit('@').next().unwrap_or(auth);
            format!(
                "{}://{}{}",
                scheme.to_ascii_lowercase(),
                host.to_ascii_lowercase(),
                path
            )
        }
        None => u.to_string(),
    };
    u.trim_end_matches('/').to_string()
}

impl Entry {
    /// Whether this entry names `f` (its check id, then every scope it gives).
    pub fn matches(&self, f: &Finding, s: &Subject) -> bool {
        let same = |want: &Option<String>, have: &Option<String>, norm: fn(&str) -> String| {
            want.as_ref()
                .is_none_or(|w| have.as_ref().is_some_and(|h| norm(w) == norm(h)))
        };
        self.check == f.id
            && same(&self.url, &s.url, bare_url)
            && same(&self.host, &s.host, |h| h.to_ascii_lowercase())
            && same(&self.file, &s.file, |p| {
                p.trim_start_matches("./").to_string()
            })
    }

    /// How the entry is named in a report line: `fd-limit (host web-17)`.
    pub fn label(&self) -> String {
        let scope: Vec<String> = [
            ("url", &self.url),
            ("host", &self.host),
            ("file", &self.file),
        ]
        .iter()
        .filter_map(|(k, v)| {
            v.as_ref()
                .map(|v| format!("{k} {}", rtcheck_base::redact::url(v)))
        })
        .collect();
        if scope.is_empty() {
            self.check.clone()
        } else {
            format!("{} ({})", self.check, scope.join(", "))
        }
    }

    /// Why the entry cannot accept anything (no reason, the placeholder, no or a bad or a
    /// past expiry), or None when it holds today.
    pub fn problem(&self, today: Date) -> Option<String> {
        let reason = self.reason.as_deref().map(str::trim).unwrap_or("");
        if reason.is_empty() {
            return Some("has no reason".into());
        }
        if reason.starts_with(PLACEHOLDER) {
            return Some("still has the placeholder reason of --write-baseline".into());
        }
        let Some(expiry) = self.expiry.as_deref() else {
            return Some(format!("has no expiry (reason: {reason})"));
        };
        match Date::parse(expiry) {
            Err(e) => Some(format!("expiry {e} (reason: {reason})")),
            Ok(d) if d < today => Some(format!("expired on {d} (reason: {reason})")),
            Ok(_) => None,
        }
    }
}

/// Read a baseline file's text (`what` names it in errors: `--baseline FILE`). Unknown
/// keys, a check id that is not one (`known`), and bad YAML are usage errors.
pub fn parse(what: &str, text: &str, known: &[&str]) -> Result<Baseline, String> {
    let b: Baseline = if text.trim().is_empty() {
        Baseline::default()
    } else {
        serde_yaml::from_str(text).map_err(|e| {
            format!(
                "{what}: {}",
                rtcheck_base::escape::bound_quotes(&e.to_string())
            )
        })?
    };
    for (i, e) in b.accepted.iter().enumerate() {
        if !known.is_empty() && !known.contains(&e.check.as_str()) && e.check != ID {
            return Err(format!(
                "{what}: accepted[{i}].check: `{}` is not a check id of this command",
                e.check
            ));
        }
    }
    Ok(b)
}

/// Apply the baseline to `findings` (`subject` says what each is about): a warn or fail
/// named by an entry that holds today becomes `suppressed`, its reason the entry's; an
/// entry that does not hold suppresses nothing and adds one failing `baseline` finding
/// saying why (its reason shown). An entry whose check id no finding of this run has (a
/// typo, or another command's check) is a `baseline` warn: it would never match.
pub fn apply(
    b: &Baseline,
    findings: &mut Vec<Finding>,
    today: Date,
    subject: impl Fn(&Finding) -> Subject,
) {
    let mut problems = Vec::new();
    for e in &b.accepted {
        if !findings.iter().any(|f| f.id == e.check) {
            let mut f = problem_finding(
                e,
                "names no check of this run (a typo, or another command's check?)",
            );
            f.status = Status::Warn;
            problems.push(f);
        }
        if let Some(why) = e.problem(today) {
            problems.push(problem_finding(e, &why));
            continue;
        }
        for f in findings.iter_mut() {
            if matches!(f.status, Status::Warn | Status::Fail) && e.matches(f, &subject(f)) {
                let was = f.status.as_str();
                f.status = Status::Suppressed;
                f.reason = Some(format!(
                    "{} (baseline until {}; was {was})",
                    e.reason.as_deref().unwrap_or("").trim(),
                    e.expiry.as_deref().unwrap_or("").trim()
                ));
            }
        }
    }
    findings.extend(problems);
}

/// A failing finding with this id, for other modules' tests.
#[cfg(test)]
pub fn tests_finding(id: &str) -> Finding {
    let mut f = problem_finding(&Entry::default(), "");
    f.id = id.into();
    f
}

fn problem_finding(e: &Entry, why: &str) -> Finding {
    Finding {
        id: ID.into(),
        title: format!("Baseline entry {}", e.label()),
        status: Status::Fail,
        observed: format!("entry {} {why}", e.label()),
        expected: "every entry with a reason and an expiry date not yet past".into(),
        rule: "an accepted finding needs a reason and an expiry (issue 28)".into(),
        reason: None,
        evidence: Vec::new(),
        fix: Fix {
            summary: "give the entry a reason and a future expiry, or fix the finding and \
                      remove the entry"
                .into(),
            ..Fix::default()
        },
        verify: None,
        verification: None,
        numbers: BTreeMap::new(),
        location: None,
    }
}

/// The baseline `--write-baseline` starts: one entry per warn or fail of this run (and
/// each already suppressed, keeping its entry), with the placeholder reason for new ones
/// and an expiry [`DEFAULT_DAYS`] from today.
pub fn write(
    old: &Baseline,
    findings: &[Finding],
    today: Date,
    subject: impl Fn(&Finding) -> Subject,
) -> Baseline {
    let expiry = Date::from_days(today.days() + DEFAULT_DAYS).to_string();
    let mut out = Baseline::default();
    for f in findings {
        if !matches!(f.status, Status::Warn | Status::Fail | Status::Suppressed) || f.id == ID {
            continue;
        }
        let s = subject(f);
        let kept = old
            .accepted
            .iter()
            .find(|e| e.matches(f, &s) && e.problem(today).is_none());
        let entry = kept.cloned().unwrap_or_else(|| Entry {
            check: f.id.clone(),
            url: s.url.as_deref().map(bare_url),
            host: s.host.clone(),
            file: s.file.clone(),
            reason: Some(PLACEHOLDER.into()),
            expiry: Some(expiry.clone()),
        });
        if !out.accepted.contains(&entry) {
            out.accepted.push(entry);
        }
    }
    out
}

/// The file `--write-baseline` writes: a comment saying how to fill it in, then the YAML.
pub fn to_yaml(b: &Baseline) -> Result<String, serde_yaml::Error> {
    let head = format!(
        "# rtcheck baseline: accepted findings, each with a reason and an expiry (YYYY-MM-DD).\n\
         # Replace every \"{PLACEHOLDER}\": until then the entry fails the run.\n"
    );
    Ok(head + &serde_yaml::to_string(b)?)
}

/// Today for a run: `RTCHECK_TODAY` (YYYY-MM-DD, for tests and reproducible CI), else the
/// UTC date of the system clock.
pub fn today() -> Result<Date, String> {
    match std::env::var("RTCHECK_TODAY") {
        Ok(s) => Date::parse(&s).map_err(|e| format!("RTCHECK_TODAY: {e}")),
        Err(_) => {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            Ok(Date::from_unix(secs))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(id: &str, status: Status) -> Finding {
        problem_finding(
            &Entry {
                check: id.into(),
                ..Entry::default()
            },
            "",
        )
        .with(id, status)
    }

    impl Finding {
        fn with(mut self, id: &str, status: Status) -> Finding {
            self.id = id.into();
            self.status = status;
            self
        }
    }

    fn day(s: &str) -> Date {
        Date::parse(s).unwrap()
    }

    #[test]
    fn dates_round_trip_and_bad_ones_are_refused() {
        for s in [
            "1970-01-01",
            "2000-02-29",
            "2026-12-01",
            "2027-01-31",
            "2100-12-31",
        ] {
            assert_eq!(Date::from_days(day(s).days()).to_string(), s);
        }
        assert_eq!(day("1970-01-02").days(), 1);
        assert_eq!(Date::from_unix(1_764_547_200).to_string(), "2025-12-01");
        for bad in [
            "2027-02-30",
            "2026-13-01",
            "2026-1-01",
            "tomorrow",
            "2026-00-10",
            "",
        ] {
            assert!(Date::parse(bad).is_err(), "{bad}");
        }
        assert!(day("2026-12-31") < day("2027-01-01"));
    }

    fn entry(check: &str, reason: Option<&str>, expiry: Option<&str>) -> Entry {
        Entry {
            check: check.into(),
            reason: reason.map(String::from),
            expiry: expiry.map(String::from),
            ..Entry::default()
        }
    }

    #[test]
    fn a_holding_entry_suppresses_with_its_reason_and_a_bad_one_fails() {
        let b = Baseline {
            accepted: vec![
                entry("fd-limit", Some("next image"), Some("2026-12-01")),
                entry("somaxconn", Some("old kernel"), Some("2026-11-30")),
                entry("memory", None, Some("2027-01-01")),
                entry("cpu", Some(PLACEHOLDER), Some("2027-01-01")),
            ],
        };
        let mut fs = vec![
            finding("fd-limit", Status::Warn),
            finding("somaxconn", Status::Fail),
            finding("memory", Status::Fail),
            finding("cpu", Status::Warn),
            finding("time-wait", Status::Warn),
        ];
        apply(&b, &mut fs, day("2026-12-01"), |_| Subject::default());
        let st: Vec<&str> = fs.iter().map(|f| f.status.as_str()).collect();
        // The expiry day itself still holds; the others keep their status.
        assert_eq!(
            st,
            [
                "suppressed",
                "fail",
                "fail",
                "warn",
                "warn",
                "fail",
                "fail",
                "fail"
            ]
        );
        assert_eq!(
            fs[0].reason.as_deref(),
            Some("next image (baseline until 2026-12-01; was warn)")
        );
        let problems: Vec<&str> = fs[5..].iter().map(|f| f.observed.as_str()).collect();
        assert_eq!(
            problems,
            [
                "entry somaxconn expired on 2026-11-30 (reason: old kernel)",
                "entry memory has no reason",
                "entry cpu still has the placeholder reason of --write-baseline",
            ]
        );
        assert!(fs[5..].iter().all(|f| f.id == ID));
        // An id no finding has: a warn, so a typo never just matches nothing.
        let b = Baseline {
            accepted: vec![entry("fd-limt", Some("typo"), Some("2099-01-01"))],
        };
        let mut fs = vec![finding("fd-limit", Status::Warn)];
        apply(&b, &mut fs, day("2026-12-01"), |_| Subject::default());
        assert_eq!(fs[0].status, Status::Warn);
        assert_eq!(fs[1].status, Status::Warn);
        assert_eq!(
            fs[1].observed,
            "entry fd-limt names no check of this run (a typo, or another command's check?)"
        );
    }

    #[test]
    fn scopes_narrow_the_match() {
        let mut e = entry("sse-buffering", Some("cdn"), Some("2099-01-01"));
        e.url = Some("https://Edge.example/events/".into());
        let f = finding("sse-buffering", Status::Fail);
        let at = |u: &str| Subject {
            url: Some(u.into()),
            ..Subject::default()
        };
        assert!(e.matches(&f, &at("https://user:pw@edge.example/events?token=x")));
        assert!(!e.matches(&f, &at("https://edge.example/other")));
        assert!(!e.matches(&f, &Subject::default()));
        let mut e = entry("fd-limit", Some("x"), Some("2099-01-01"));
        e.host = Some("web-17".into());
        let on = |h: &str| Subject {
            host: Some(h.into()),
            ..Subject::default()
        };
        let f = finding("fd-limit", Status::Warn);
        assert!(e.matches(&f, &on("WEB-17")));
        assert!(!e.matches(&f, &on("web-18")));
        assert_eq!(e.label(), "fd-limit (host web-17)");
    }

    #[test]
    fn parse_refuses_unknown_keys_and_ids() {
        let ok = "accepted:\n  - check: fd-limit\n    reason: r\n    expiry: 2027-01-31\n";
        let b = parse("--baseline b.yaml", ok, &["fd-limit"]).unwrap();
        assert_eq!(b.accepted[0].expiry.as_deref(), Some("2027-01-31"));
        let e = parse("--baseline b.yaml", ok, &["memory"]).unwrap_err();
        assert!(e.contains("accepted[0].check: `fd-limit`"), "{e}");
        let e = parse(
            "--baseline b.yaml",
            "accepted:\n  - check: x\n    why: r\n",
            &[],
        )
        .unwrap_err();
        assert!(
            e.starts_with("--baseline b.yaml: accepted[0]: unknown field `why`"),
            "{e}"
        );
        assert!(parse("f", "", &[]).unwrap().accepted.is_empty());
    }

    #[test]
    fn write_keeps_holding_entries_and_adds_placeholders() {
        let old = Baseline {
            accepted: vec![entry("fd-limit", Some("kept"), Some("2027-01-31"))],
        };
        let fs = vec![
            finding("fd-limit", Status::Suppressed),
            finding("memory", Status::Fail),
            finding("cpu", Status::Pass),
        ];
        let b = write(&old, &fs, day("2026-12-01"), |_| Subject::default());
        assert_eq!(b.accepted.len(), 2);
        assert_eq!(b.accepted[0].reason.as_deref(), Some("kept"));
        assert_eq!(b.accepted[1].reason.as_deref(), Some(PLACEHOLDER));
        assert_eq!(b.accepted[1].expiry.as_deref(), Some("2027-03-01"));
        // Written, read back, applied: the placeholder fails the run.
        let text = to_yaml(&b).unwrap();
        let back = parse("w", &text, &[]).unwrap();
        assert_eq!(back, b);
        let mut fs = vec![finding("memory", Status::Fail)];
        apply(&back, &mut fs, day("2026-12-01"), |_| Subject::default());
        assert_eq!(fs.last().unwrap().status, Status::Fail);
        assert_eq!(fs.last().unwrap().id, ID);
    }
}
