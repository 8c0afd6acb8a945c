//! SARIF 2.1.0 (OASIS static analysis results format, read by GitHub code scanning) for
//! findings: one run, one rule per check id (its title, rule and fix as help), one result
//! per finding. A finding in a file (lint) has a physicalLocation (file, startLine); a host
//! finding (audit) a logicalLocation naming what was examined. fail is level error, warn
//! warning; pass is kind "pass" and an unmeasured check kind "open" (SARIF's "could not
//! determine"), both level "none".
use crate::findings::Status;
use crate::report::FindingsReport;
use serde_json::{json, Value};

pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// A file path as a SARIF artifact URI: absolute paths as file:// URIs, spaces and `%`
/// percent-encoded.
fn uri(path: &str) -> String {
    let enc = path
        .replace('%', "%25")
        .replace(' ', "%20")
        .replace('#', "%23");
    if enc.starts_with('/') {
        format!("file://{enc}")
    } else {
        enc.trim_start_matches("./").to_string()
    }
}

fn level_kind(s: Status) -> (&'static str, &'static str) {
    match s {
        Status::Fail => ("error", "fail"),
        Status::Warn => ("warning", "fail"),
        Status::Pass => ("none", "pass"),
        Status::Skip => ("none", "open"),
        // Still a finding, accepted: GitHub lists it as dismissed (`suppressions`).
        Status::Suppressed => ("note", "fail"),
    }
}

pub fn render(r: &FindingsReport) -> anyhow::Result<String> {
    let mut ids: Vec<&str> = Vec::new();
    let mut rules: Vec<Value> = Vec::new();
    let all = super::checks::all();
    for f in &r.findings {
        if ids.contains(&f.id.as_str()) {
            continue;
        }
        ids.push(&f.id);
        let mut help = f.rule.clone();
        for e in &f.evidence {
            help.push_str(&format!("\nevidence {}: {}", e.id, e.claim));
        }
        let mut rule = json!({
            "id": f.id,
            "name": f.id,
            "shortDescription": {"text": f.title},
            "fullDescription": {"text": f.rule},
            "help": {"text": help},
        });
        // What the id is and where it is explained (`rtcheck explain ID`).
        if let Some(c) = all.iter().find(|c| c.id == f.id) {
            rule["properties"] = json!({"kind": c.kind, "see": c.see});
        }
        rules.push(rule);
    }
    let results: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            let (level, kind) = level_kind(f.status);
            let mut text = format!("{} (expected: {})", f.observed, f.expected);
            if !f.fix.summary.is_empty() {
                text.push_str(&format!(". Fix: {}", f.fix.summary));
            }
            for l in f.fix.runtime.iter().chain(&f.fix.persistent) {
                text.push_str(&format!("\n  {l}"));
            }
            if let Some(why) = &f.reason {
                text.push_str(&format!(" ({why})"));
            }
            let location = match &f.location {
                Some(l) => {
                    let mut loc = json!({"physicalLocation": {
                        "artifactLocation": {"uri": uri(&l.file)},
                        "region": {"startLine": l.line.max(1)},
                    }});
                    if let Some(b) = &l.block {
                        loc["logicalLocations"] = json!([{"name": b, "kind": "object"}]);
                    }
                    loc
                }
                None => json!({"logicalLocations": [{
                    "name": r.target.clone().unwrap_or_else(|| "this host".into()),
                    "kind": "resource",
                }]}),
            };
            let mut result = json!({
                "ruleId": f.id,
                "ruleIndex": ids.iter().position(|i| *i == f.id).unwrap_or(0),
                "level": level,
                "kind": kind,
                "message": {"text": text},
                "locations": [location],
            });
            if f.status == Status::Suppressed {
                result["suppressions"] = json!([{
                    "kind": "external",
                    "status": "accepted",
                    "justification": f.reason.clone().unwrap_or_default(),
                }]);
            }
            result
        })
        .collect();
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "rtcheck",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "automationDetails": {"id": format!("rtcheck {}/", r.kind)},
            "results": results,
        }],
    });
    Ok(serde_json::to_string_pretty(&log)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_names_what_its_id_is_from_the_one_check_view() {
        let f = |id: &str| crate::findings::Finding {
            id: id.into(),
            title: "t".into(),
            status: crate::findings::Status::Fail,
            observed: String::new(),
            expected: String::new(),
            rule: String::new(),
            reason: None,
            evidence: vec![],
            fix: Default::default(),
            verify: None,
            verification: None,
            numbers: Default::default(),
            location: None,
        };
        let r = FindingsReport::of_findings("lint", &[f("nginx-ws-upgrade"), f("made-up")]);
        let v: Value = serde_json::from_str(&render(&r).unwrap()).unwrap();
        let rules = &v["runs"][0]["tool"]["driver"]["rules"];
        assert_eq!(rules[0]["properties"]["kind"], "nginx lint rule");
        assert!(rules[1].get("properties").is_none(), "{}", rules[1]);
    }

    #[test]
    fn uris() {
        assert_eq!(uri("deploy/nginx.conf"), "deploy/nginx.conf");
        assert_eq!(uri("./a b.conf"), "a%20b.conf");
        assert_eq!(uri("/etc/nginx/nginx.conf"), "file:///etc/nginx/nginx.conf");
    }
}
