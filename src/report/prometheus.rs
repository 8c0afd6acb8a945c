//! Prometheus text exposition of a findings report (issue 28): **gauges** only, so a
//! dashboard reads the state of the last run (goss #867 shipped counters that grow between
//! runs). Written for node_exporter's textfile collector: `--report prometheus=FILE` is
//! atomic (temp file + rename), so the collector never reads half a file.
use crate::findings::{Finding, Status};
use crate::report::FindingsReport;
use rtcheck_wire::prom::{Exposition, Kind};

const STATUSES: [Status; 5] = [
    Status::Pass,
    Status::Warn,
    Status::Fail,
    Status::Skip,
    Status::Suppressed,
];

/// Every check as one gauge per status (1 on its status, 0 on the others, the
/// node_exporter state-set convention), its machine numbers, the counts per status, the
/// run's duration and its time (`now`, Unix seconds: passed in, so this stays pure).
pub fn render(r: &FindingsReport, now: f64) -> String {
    render_with(r, now, &|_| None)
}

/// [`render`] with a `url` label on every per-check gauge (probe: one set per URL; the
/// URL is printed through rtcheck_base::redact, never with its secrets, and without its query:
/// a label names the endpoint, and query values would only add series). `url_of` None:
/// no label.
pub fn render_with(
    r: &FindingsReport,
    now: f64,
    url_of: &dyn Fn(&Finding) -> Option<String>,
) -> String {
    let url = |f: &Finding| {
        url_of(f).map(|u| {
            let shown = rtcheck_base::redact::url(&u);
            shown.split(['?', ';']).next().unwrap_or("").to_string()
        })
    };
    // The check's labels: `check`, then `url` when given, then `extra`.
    let labels = |f: &Finding, url: &Option<String>, extra: (&'static str, String)| {
        let mut l = vec![("check", f.id.clone())];
        l.extend(url.clone().map(|u| ("url", u)));
        l.push(extra);
        l
    };
    let mut p = Exposition::new();
    p.family(
        "rtcheck_check_status",
        Kind::Gauge,
        "Status of each rtcheck check in the last run (1 on its status, 0 on the others).",
    );
    for f in &r.findings {
        let u = url(f);
        for s in STATUSES {
            let l = labels(f, &u, ("status", s.as_str().to_string()));
            sample(&mut p, "rtcheck_check_status", &l, u8::from(f.status == s));
        }
    }
    p.family(
        "rtcheck_check_value",
        Kind::Gauge,
        "The numbers behind each check (findings[].numbers of the JSON report), by key.",
    );
    for f in &r.findings {
        let u = url(f);
        for (k, v) in &f.numbers {
            sample(
                &mut p,
                "rtcheck_check_value",
                &labels(f, &u, ("key", k.clone())),
                *v,
            );
        }
    }
    suppressed(&mut p, r, &|f| labels(f, &url(f), ("reason", reason(f))));
    info(&mut p, r);
    totals(&mut p, r, now);
    p.finish()
}

/// `rtcheck_check_info{check, kind, title} 1` per check of the run, from the one
/// `report::checks` view `explain` reads (the info-metric convention: join on `check`
/// for a title). A finding id no table explains gets no sample (the tests hold every
/// table's ids to an entry, so none should).
fn info(p: &mut Exposition, r: &FindingsReport) {
    let all = crate::report::checks::all();
    let mut seen = std::collections::BTreeSet::new();
    let known: Vec<&crate::findings::CheckInfo> = r
        .findings
        .iter()
        .filter(|f| seen.insert(f.id.as_str()))
        .filter_map(|f| all.iter().find(|c| c.id == f.id))
        .collect();
    if known.is_empty() {
        return;
    }
    p.family(
        "rtcheck_check_info",
        Kind::Gauge,
        "What each check of the last run is (always 1): its kind and title, as explain says.",
    );
    for c in known {
        let l = [
            ("check", c.id.as_str()),
            ("kind", c.kind.as_str()),
            ("title", c.title.as_str()),
        ];
        p.sample("rtcheck_check_info", &l, 1u8);
    }
}

/// A sample with owned label values.
fn sample(
    p: &mut Exposition,
    name: &str,
    labels: &[(&str, String)],
    v: impl rtcheck_wire::prom::Value,
) {
    let l: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
    p.sample(name, &l, v);
}

fn reason(f: &Finding) -> String {
    f.reason.clone().unwrap_or_default()
}

/// The checks the baseline accepted, with the entry's reason (no family when none).
fn suppressed(
    p: &mut Exposition,
    r: &FindingsReport,
    labels: &dyn Fn(&Finding) -> Vec<(&'static str, String)>,
) {
    let accepted: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.status == Status::Suppressed)
        .collect();
    if accepted.is_empty() {
        return;
    }
    p.family(
        "rtcheck_check_suppressed",
        Kind::Gauge,
        "A check the baseline accepted, with the entry's reason (always 1).",
    );
    for f in accepted {
        sample(p, "rtcheck_check_suppressed", &labels(f), 1u8);
    }
}

/// Counts per status, the run's duration and its time.
fn totals(p: &mut Exposition, r: &FindingsReport, now: f64) {
    let s = r.summary;
    p.by_label(
        "rtcheck_checks",
        Kind::Gauge,
        "Checks of the last run by status.",
        "status",
        &[
            ("pass", s.pass),
            ("warn", s.warn),
            ("fail", s.fail),
            ("skip", s.skip),
            ("suppressed", s.suppressed),
        ],
    );
    p.gauge(
        "rtcheck_run_duration_seconds",
        "How long the last run took.",
        r.duration_ms / 1000.0,
    );
    p.gauge(
        "rtcheck_last_run_timestamp_seconds",
        "When the last run finished (Unix time).",
        now,
    );
}

/// Now, in Unix seconds (the edge that feeds [`render`]).
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Fix;

    fn finding(id: &str, status: Status) -> Finding {
        Finding {
            id: id.into(),
            title: id.into(),
            status,
            observed: String::new(),
            expected: String::new(),
            rule: String::new(),
            reason: None,
            evidence: Vec::new(),
            fix: Fix::default(),
            verify: None,
            verification: None,
            numbers: [("soft".to_string(), 1024.0)].into_iter().collect(),
            location: None,
        }
    }

    #[test]
    fn gauges_parse_back_with_one_status_set_per_check() {
        let fs = vec![
            finding("fd-limit", Status::Warn),
            finding("we\"ird\\id", Status::Pass),
        ];
        let r = FindingsReport::new("audit", Default::default(), None, fs, 2.5);
        let text = render(&r, 1_700_000_000.0);
        let scrape =
            prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
        let gauge = |name: &str, labels: &[(&str, &str)]| -> f64 {
            let s = scrape
                .samples
                .iter()
                .find(|s| {
                    s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
                })
                .unwrap_or_else(|| panic!("no {name} {labels:?} in\n{text}"));
            match s.value {
                prometheus_parse::Value::Gauge(v) => v,
                ref other => panic!("{name} is not a gauge: {other:?}"),
            }
        };
        let st = "rtcheck_check_status";
        assert_eq!(gauge(st, &[("check", "fd-limit"), ("status", "warn")]), 1.0);
        assert_eq!(gauge(st, &[("check", "fd-limit"), ("status", "pass")]), 0.0);
        // Escaped as the exposition format says (prometheus-parse keeps escapes as read).
        assert!(
            text.contains(r#"{check="we\"ird\\id",status="pass"} 1"#),
            "{text}"
        );
        let val = [("check", "fd-limit"), ("key", "soft")];
        assert_eq!(gauge("rtcheck_check_value", &val), 1024.0);
        assert_eq!(gauge("rtcheck_checks", &[("status", "warn")]), 1.0);
        assert_eq!(
            gauge("rtcheck_last_run_timestamp_seconds", &[]),
            1_700_000_000.0
        );
        assert_eq!(gauge("rtcheck_run_duration_seconds", &[]), 0.0025);
        // The check's kind and title come from the one CheckInfo view; an id no table
        // explains has none.
        let info = [("check", "fd-limit"), ("kind", "audit check")];
        assert_eq!(gauge("rtcheck_check_info", &info), 1.0);
        let title = crate::report::checks::info("fd-limit").unwrap().title;
        assert!(text.contains(&format!("title=\"{title}\"")), "{text}");
        assert_eq!(text.matches("rtcheck_check_info{").count(), 1, "{text}");
        // Gauges only: nothing that grows between runs.
        assert!(!text.contains("counter"));
        assert!(text.lines().filter(|l| l.starts_with(st)).count() == 10);
    }
}

#[cfg(test)]
mod url_tests {
    use super::*;
    use crate::findings::Fix;

    #[test]
    fn probe_gauges_carry_a_redacted_url_label_per_url() {
        let f = |url: &str, status| Finding {
            id: "sse-buffering".into(),
            title: format!("SSE buffering: {url}"),
            status,
            observed: String::new(),
            expected: String::new(),
            rule: String::new(),
            reason: None,
            evidence: Vec::new(),
            fix: Fix::default(),
            verify: None,
            verification: None,
            numbers: Default::default(),
            location: None,
        };
        let fs = vec![
            f("https://u:secret@a.test/sse?token=abc", Status::Fail),
            f("https://b.test/sse", Status::Pass),
        ];
        let r = FindingsReport::new("probe", Default::default(), None, fs, 1.0);
        let text = render_with(&r, 1.0, &|f| f.title.split(": ").nth(1).map(String::from));
        assert!(!text.contains("secret") && !text.contains("abc"), "{text}");
        let scrape =
            prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
        let one = |url: &str, st: &str| {
            scrape
                .samples
                .iter()
                .find(|s| {
                    s.metric == "rtcheck_check_status"
                        && s.labels.get("url") == Some(url)
                        && s.labels.get("status") == Some(st)
                })
                .map(|s| match s.value {
                    prometheus_parse::Value::Gauge(v) => v,
                    _ => panic!("not a gauge"),
                })
                .unwrap_or_else(|| panic!("no {url} {st} in\n{text}"))
        };
        assert_eq!(one("https://u:***@a.test/sse", "fail"), 1.0);
        assert_eq!(one("https://b.test/sse", "pass"), 1.0);
        assert_eq!(one("https://b.test/sse", "fail"), 0.0);
    }
}
