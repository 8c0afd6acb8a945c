//! Items and answers to findings: the pure part of `rtcheck review`.
use super::answers::{self, Answer, Answers, Entry, Val};
use super::items::{self, Rule, Spec};
use super::lifecycle;
use super::measured::Measurement;
use super::rules::{self, Outcome};
use crate::checklist::{Checklist, Item};
use crate::findings::{Finding, Fix, Status};
use crate::profile::Profile;
use serde::Serialize;
use std::collections::BTreeMap;

/// Where an item's verdict comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Answered (and values checked) by the team.
    Declared,
    /// Marked by a measurement given with `--evidence`.
    Measured,
    /// No answer yet.
    Unanswered,
}

/// One reviewed item as the machine formats show it, next to its finding.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewItem {
    pub checklist: String,
    pub id: String,
    pub group: String,
    pub title: String,
    pub source: Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, serde_yaml::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// The answer was given against another version of the rule.
    pub rule_changed: bool,
    /// Commands that can measure this item instead of trusting a declaration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub measure_with: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measurement>,
}

/// An item the profile (or the audit) leaves out, and why.
#[derive(Debug, Clone, Serialize)]
pub struct LeftOut {
    pub id: String,
    pub reason: String,
}

/// Fingerprint of an item's rule: its evidence numbers and the values it asks. When the
/// data changes, a saved answer is asked again.
pub fn rule_fingerprint(item: &Item) -> String {
    let mut s = item.id.clone();
    for id in &item.evidence {
        s.push('|');
        s.push_str(&crate::evidence::get(id).values_display());
    }
    if let Some(spec) = items::spec(&item.id) {
        for v in spec.values {
            s.push_str(&format!("|{}:{:?}", v.name, v.kind));
        }
    }
    answers::fingerprint(&s)
}

/// Does a saved entry need asking again (unanswered, later, rule changed)?
pub fn needs_asking(item: &Item, entry: Option<&Entry>) -> bool {
    match entry {
        None => true,
        Some(e) => e.answer == Answer::Later || is_stale(item, e),
    }
}

fn is_stale(item: &Item, e: &Entry) -> bool {
    e.rule
        .as_deref()
        .is_some_and(|r| r != rule_fingerprint(item))
}

/// Run the item's rule on typed values; Err lists the required values missing.
pub fn check(
    spec: &Spec,
    v: &BTreeMap<String, Val>,
    p: &Profile,
) -> Result<Outcome, Vec<&'static str>> {
    let missing: Vec<&str> = spec
        .values
        .iter()
        .filter(|s| s.required && !v.contains_key(s.name))
        .map(|s| s.name)
        .collect();
    if !missing.is_empty() {
        return Err(missing);
    }
    let d = |k: &str| v.get(k).and_then(|x| x.duration());
    let n = |k: &str| v.get(k).and_then(|x| x.count());
    let zero = std::time::Duration::ZERO;
    Ok(match spec.rule {
        Rule::Ping => {
            let ping = d("ping").unwrap_or(zero);
            let base = rules::ping(ping, d("pong_wait").unwrap_or(zero), d("idle_timeout"));
            // A declared path (profile `path:`) checks the ping against every hop.
            match path_chain(p) {
                Some(c) if !ping.is_zero() => rules::ping_on_path(base, ping, &c),
                _ => base,
            }
        }
        Rule::WriteDeadline => rules::write_deadline(
            d("deadline").unwrap_or(zero),
            n("slow_per_writer").unwrap_or(1),
        ),
        Rule::Queue => rules::queue(n("queue").unwrap_or(0), p.size, p.rate, d("tolerance")),
        Rule::Ring => rules::ring(n("ring").unwrap_or(0), p.rate, p.max_disconnect, p.size),
        Rule::Session => rules::session(
            d("ttl").unwrap_or(zero),
            n("cap"),
            p.connections_per_machine(),
            p.rate,
            p.size,
            p.max_disconnect,
        ),
        Rule::Presence => rules::presence(d("ttl").unwrap_or(zero), d("refresh").unwrap_or(zero)),
        Rule::Retries => rules::retries(n("layers").unwrap_or(1), n("tries").unwrap_or(1)),
        Rule::Pool => rules::pool(
            n("pool").unwrap_or(0),
            n("instances").unwrap_or(1),
            n("downstream_max"),
        ),
        Rule::ReadDeadline => {
            let ping = d("ping").or(p.ping);
            let base = lifecycle::read_deadline(d("read_deadline").unwrap_or(zero), ping);
            match path_chain(p) {
                Some(c) => lifecycle::read_deadline_on_path(base, ping, &c),
                None => base,
            }
        }
        Rule::Reconnect => {
            let flag = |k: &str| v.get(k).and_then(|x| x.flag()).unwrap_or(false);
            let (re, resume) = (flag("reconnect"), flag("resume"));
            let snapshot = items::design(p).0 == Some(rtcheck_wire::delivery::Delivery::Snapshot);
            let base =
                lifecycle::reconnect(re, resume, d("backoff_max"), snapshot, p.max_disconnect);
            match path_chain(p) {
                Some(c) => lifecycle::reconnect_on_path(
                    base,
                    re,
                    resume,
                    snapshot,
                    p.connections_per_machine(),
                    p.transport,
                    &c,
                ),
                None => base,
            }
        }
    })
}

/// The chain of the profile's declared path (validated with the profile).
fn path_chain(p: &Profile) -> Option<crate::hops::chain::Chain> {
    p.hop_path()
        .and_then(|(ids, over)| crate::hops::chain::compute(&ids, &over).ok())
}

fn base_finding(item: &Item) -> Finding {
    Finding {
        location: None,
        id: item.id.clone(),
        title: item.title.clone(),
        status: Status::Warn,
        observed: String::new(),
        expected: "done".into(),
        rule: item.why.clone(),
        reason: None,
        evidence: item.evidence_refs(),
        fix: Fix {
            summary: item.fix.clone(),
            ..Fix::default()
        },
        verify: item.verify.clone(),
        verification: None,
        numbers: BTreeMap::new(),
    }
}

/// The finding for one item from its answer (declared) or measurement (measured).
pub fn judge(item: &Item, entry: Option<&Entry>, m: Option<&Measurement>, p: &Profile) -> Finding {
    let mut f = base_finding(item);
    if let Some(m) = m {
        f.status = m.status;
        f.observed = format!("measured ({}): {}", m.file, m.detail);
        f.expected = "the measurement passes".into();
        if let Some(v) = m.value {
            f.numbers.insert("measured".into(), v);
        }
        return f;
    }
    let measure = items::measure_hint(&item.id)
        .map(|h| format!(" (measure it: {h})"))
        .unwrap_or_default();
    let Some(e) = entry else {
        f.observed = format!("unanswered{measure}");
        return f;
    };
    if is_stale(item, e) {
        f.observed = format!(
            "answered `{}`{}, but the rule changed since: answer again",
            e.answer.as_str(),
            e.when
                .as_deref()
                .map(|w| format!(" on {w}"))
                .unwrap_or_default()
        );
        return f;
    }
    match e.answer {
        Answer::Later => f.observed = format!("marked later{measure}"),
        Answer::No => {
            f.status = Status::Fail;
            f.observed = format!("not done{}", reason_suffix(e));
        }
        Answer::Na => {
            f.status = Status::Skip;
            f.observed = "not applicable".into();
            f.reason = e.reason.clone();
        }
        Answer::Yes => judge_yes(&mut f, item, e, p, &measure),
    }
    f
}

fn reason_suffix(e: &Entry) -> String {
    e.reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default()
}

fn judge_yes(f: &mut Finding, item: &Item, e: &Entry, p: &Profile, measure: &str) {
    let Some(spec) = items::spec(&item.id) else {
        f.status = Status::Pass;
        f.observed = format!("declared done{measure}");
        return;
    };
    // Values were type-checked when the file was read; a bad one here is a missing one.
    let values = answers::values_of(e).unwrap_or_default();
    match check(spec, &values, p) {
        Ok(o) => {
            f.status = o.status;
            f.observed = o.consequence;
            f.expected = o.expected;
            f.numbers = o.numbers;
        }
        Err(missing) => {
            f.status = Status::Warn;
            f.observed = format!(
                "declared yes without {}: the rule cannot be checked",
                missing.join(", ")
            );
        }
    }
}

/// Evaluate every selected item: findings and review items, in order.
pub fn evaluate(
    selected: &[(&Checklist, &Item)],
    answers: &Answers,
    measurements: &[Measurement],
    p: &Profile,
) -> (Vec<Finding>, Vec<ReviewItem>) {
    let mut findings = Vec::new();
    let mut out = Vec::new();
    for (c, item) in selected {
        let entry = answers.get(&item.id);
        let m = super::measured::for_item(&item.id, measurements);
        findings.push(judge(item, entry, m, p));
        let source = match (m, entry) {
            (Some(_), _) => Source::Measured,
            (None, Some(e)) if e.answer != Answer::Later && !is_stale(item, e) => Source::Declared,
            _ => Source::Unanswered,
        };
        out.push(ReviewItem {
            checklist: c.name.clone(),
            id: item.id.clone(),
            group: item.group.clone(),
            title: item.title.clone(),
            source,
            answer: entry.map(|e| e.answer),
            values: entry.map(|e| e.value.clone()).unwrap_or_default(),
            reason: entry.and_then(|e| e.reason.clone()),
            when: entry.and_then(|e| e.when.clone()),
            rule_changed: entry.is_some_and(|e| is_stale(item, e)),
            measure_with: items::measured_by(&item.id)
                .map(|(cmds, _)| cmds.iter().map(|c| format!("rtcheck {c}")).collect())
                .unwrap_or_default(),
            measured: m.cloned(),
        });
    }
    (findings, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checklist::find_item;

    fn entry(id: &str, answer: Answer, value: &[(&str, &str)]) -> Entry {
        Entry {
            id: id.into(),
            answer,
            value: value
                .iter()
                .map(|(k, v)| (k.to_string(), serde_yaml::Value::String(v.to_string())))
                .collect(),
            reason: None,
            when: None,
            rule: None,
        }
    }

    #[test]
    fn asks_again_when_unanswered_later_or_the_rule_changed() {
        let item = find_item("ping-interval").unwrap().1;
        assert!(needs_asking(item, None));
        let mut e = entry("ping-interval", Answer::Yes, &[]);
        assert!(
            !needs_asking(item, Some(&e)),
            "hand-written, no fingerprint"
        );
        e.rule = Some(rule_fingerprint(item));
        assert!(!needs_asking(item, Some(&e)));
        e.rule = Some("00000000".into());
        assert!(needs_asking(item, Some(&e)));
        let f = judge(item, Some(&e), None, &Profile::default());
        assert_eq!(f.status, Status::Warn);
        assert!(f.observed.contains("rule changed"), "{}", f.observed);
        e.rule = None;
        e.answer = Answer::Later;
        assert!(needs_asking(item, Some(&e)));
        // Another item's fingerprint differs.
        let other = find_item("bounded-queue").unwrap().1;
        assert_ne!(rule_fingerprint(item), rule_fingerprint(other));
    }

    #[test]
    fn answers_map_to_statuses() {
        let p = Profile::default();
        let item = find_item("seq-numbers").unwrap().1;
        let st = |e: Option<&Entry>| judge(item, e, None, &p).status;
        assert_eq!(st(None), Status::Warn);
        assert_eq!(
            st(Some(&entry("seq-numbers", Answer::Yes, &[]))),
            Status::Pass
        );
        assert_eq!(
            st(Some(&entry("seq-numbers", Answer::No, &[]))),
            Status::Fail
        );
        assert_eq!(
            st(Some(&entry("seq-numbers", Answer::Later, &[]))),
            Status::Warn
        );
        assert_eq!(
            st(Some(&entry("seq-numbers", Answer::Na, &[]))),
            Status::Skip
        );
        // A yes without the values the rule needs is not trusted.
        let ping = find_item("ping-interval").unwrap().1;
        let bare = judge(
            ping,
            Some(&entry("ping-interval", Answer::Yes, &[])),
            None,
            &p,
        );
        assert_eq!(bare.status, Status::Warn);
        assert!(
            bare.observed.contains("ping, pong_wait"),
            "{}",
            bare.observed
        );
        let bad = entry(
            "ping-interval",
            Answer::Yes,
            &[("ping", "30s"), ("pong_wait", "20s")],
        );
        assert_eq!(judge(ping, Some(&bad), None, &p).status, Status::Fail);
    }

    #[test]
    fn a_measurement_wins_over_a_declaration() {
        let item = find_item("proxy-config").unwrap().1;
        let m = Measurement {
            id: "sse-buffering".into(),
            status: Status::Fail,
            value: Some(6.6),
            unit: "s".into(),
            detail: "silent 6.6 s".into(),
            file: "probe.json".into(),
        };
        let yes = entry("proxy-config", Answer::Yes, &[]);
        let f = judge(item, Some(&yes), Some(&m), &Profile::default());
        assert_eq!(f.status, Status::Fail);
        assert_eq!(f.numbers["measured"], 6.6);
    }
}
