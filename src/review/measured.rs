//! `--evidence FILE`: the JSON output of `verify` (its own report, `verifications[]`),
//! `bench fanout` (`scenarios[]`) and findings reports (`audit --verify`, and by finding id
//! `probe` and `verify delivery`) turned into measurements that mark review items measured
//! instead of declared.
use crate::bench::model::ScenarioResult;
use crate::findings::{Status, Verification};
use serde::Serialize;
use serde_json::Value;

/// One measured result from an evidence file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measurement {
    /// Finding id (verify, probe, delivery) or bench scenario name (A, C1, C3...).
    pub id: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    pub unit: String,
    pub detail: String,
    /// The file it came from.
    pub file: String,
}

fn status_of(s: Option<&str>) -> Option<Status> {
    match s? {
        "pass" => Some(Status::Pass),
        "warn" => Some(Status::Warn),
        "fail" => Some(Status::Fail),
        "skip" => Some(Status::Skip),
        _ => None,
    }
}

/// A findings report (verify, audit, probe, verify delivery): every finding with a status.
fn from_findings(list: &[Value], file: &str) -> Vec<Measurement> {
    list.iter()
        .filter_map(|f| {
            let id = f.get("id")?.as_str()?.to_string();
            let mut status = status_of(f.get("status")?.as_str())?;
            let ver = f.get("verification").filter(|v| !v.is_null());
            let mut detail = f
                .get("observed")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let mut value = None;
            let mut unit = String::new();
            if let Some(v) = ver {
                value = v.get("measured").and_then(Value::as_f64);
                unit = v.get("unit").and_then(Value::as_str).unwrap_or("").into();
                let verdict = v.get("verdict").and_then(Value::as_str).unwrap_or("");
                if v.get("valid").and_then(Value::as_bool) == Some(false) {
                    // An invalid run is no measurement: say so instead of a number.
                    status = Status::Warn;
                    value = None;
                    detail = format!("invalid measurement: {verdict}");
                } else if !verdict.is_empty() {
                    detail = verdict.to_string();
                }
            }
            Some(Measurement {
                id,
                status,
                value,
                unit,
                detail,
                file: file.into(),
            })
        })
        .collect()
}

/// `verify --format json` (`report::model::VerifyReport`): one measurement per
/// verification, by its name (`tcp-keepalive`, `read-deadline`, ...). Typed through the
/// findings model, so a renamed field breaks the build instead of reading as missing. A
/// valid run is a measurement (its verdict says whether it confirms the reference); an
/// invalid one carries no number.
fn from_verifications(list: &[Verification], file: &str) -> Vec<Measurement> {
    list.iter()
        .map(|v| {
            let (status, value, detail) = match (v.valid, v.measured) {
                (true, Some(m)) => (Status::Pass, Some(m), v.verdict.clone()),
                _ => (
                    Status::Warn,
                    None,
                    format!("invalid measurement: {}", v.verdict),
                ),
            };
            Measurement {
                id: v.name.clone(),
                status,
                value,
                unit: v.unit.clone(),
                detail,
                file: file.into(),
            }
        })
        .collect()
}

/// `bench fanout --format json`: one measurement per scenario. Typed through the bench's
/// own result model, so a renamed field breaks the build instead of reading as missing.
fn from_bench(list: &[ScenarioResult], file: &str) -> Vec<Measurement> {
    list.iter()
        .map(|s| {
            let worst = s
                .checks
                .iter()
                .map(|c| c.status)
                .max()
                .unwrap_or(Status::Pass);
            let rounds = format!("{}/{} rounds", s.rounds_completed, s.rounds_total);
            let (status, value, detail) = match (s.valid, s.p999_ms) {
                (true, Some(p)) => (
                    worst,
                    Some(p),
                    format!(
                        "bench scenario {}: p99.9 {} ms, {rounds}",
                        s.name,
                        crate::evidence::fmt_num(p)
                    ),
                ),
                _ => (
                    Status::Warn,
                    None,
                    format!("bench scenario {}: invalid run, no number", s.name),
                ),
            };
            Measurement {
                id: s.name.clone(),
                status,
                value,
                unit: "ms".into(),
                detail,
                file: file.into(),
            }
        })
        .collect()
}

/// Parse one evidence file's JSON; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> anyhow::Result<Vec<Measurement>> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        anyhow::anyhow!(
            "{file}:{}:{}: not JSON output of rtcheck: {e}",
            e.line(),
            e.column()
        )
    })?;
    if let Some(list) = v.get("findings").and_then(Value::as_array) {
        return Ok(from_findings(list, file));
    }
    if let Some(list) = v.get("verifications") {
        let list: Vec<Verification> = serde_json::from_value(list.clone())
            .map_err(|e| anyhow::anyhow!("{file}: verifications: not `verify` JSON: {e}"))?;
        return Ok(from_verifications(&list, file));
    }
    if let Some(list) = v.get("scenarios") {
        let list: Vec<ScenarioResult> = serde_json::from_value(list.clone())
            .map_err(|e| anyhow::anyhow!("{file}: scenarios: not `bench fanout` JSON: {e}"))?;
        return Ok(from_bench(&list, file));
    }
    anyhow::bail!(
        "{file}: none of `findings` (audit --verify, probe, verify delivery), `verifications` (verify) or `scenarios` (bench fanout): not an rtcheck JSON report"
    )
}

pub fn load(path: &std::path::Path) -> anyhow::Result<Vec<Measurement>> {
    let text = rtcheck_base::input::report("--evidence", path)?;
    parse(&text, &path.display().to_string())
}

/// The measurement that marks `item`: an id listed for it in `items::MEASURED_BY`, or
/// a finding carrying the item's own id, except a pass that measures nothing of it
/// (`items::PASS_MEASURES_NOTHING`). The worst status wins when several match.
pub fn for_item<'a>(item: &str, ms: &'a [Measurement]) -> Option<&'a Measurement> {
    let ids = super::items::measured_by(item)
        .map(|(_, ids)| ids)
        .unwrap_or(&[]);
    ms.iter()
        .filter(|m| m.id == item || ids.contains(&m.id.as_str()))
        .filter(|m| !(m.status == Status::Pass && super::items::pass_measures_nothing(item, &m.id)))
        .max_by_key(|m| m.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_json_marks_by_id_and_invalid_runs_carry_no_number() {
        let j = r#"{"kind":"probe","findings":[
            {"id":"sse-buffering","status":"fail","observed":"first byte after 6.6 s"},
            {"id":"tcp-keepalive","status":"pass","observed":"x","verification":
              {"measured":11.2,"unit":"s","verdict":"confirms","valid":true}},
            {"id":"delivery-seq-ring-reset-within-ring","status":"pass","observed":"x","verification":
              {"measured":null,"unit":"events","verdict":"too few samples","valid":false}}]}"#;
        let ms = parse(j, "p.json").unwrap();
        assert_eq!(ms.len(), 3);
        let proxy = for_item("proxy-config", &ms).unwrap();
        assert_eq!(proxy.status, Status::Fail);
        assert_eq!(for_item("ping-pong", &ms).unwrap().value, Some(11.2));
        let loss = for_item("seq-numbers", &ms).unwrap();
        assert_eq!((loss.status, loss.value), (Status::Warn, None));
        assert!(for_item("presence-ttl", &ms).is_none());
    }

    /// A passing `upgrade` alone shows the handshake, not the proxy's configuration:
    /// proxy-config stays unmeasured; a warn (no working stream shown) marks it.
    #[test]
    fn a_pass_only_upgrade_does_not_measure_proxy_config() {
        let j = |status: &str| {
            format!(
                r#"{{"kind":"probe","findings":[{{"id":"upgrade","status":"{status}","observed":"101"}}]}}"#
            )
        };
        let ms = parse(&j("pass"), "p.json").unwrap();
        assert!(for_item("proxy-config", &ms).is_none(), "{ms:?}");
        let ms = parse(&j("warn"), "p.json").unwrap();
        assert_eq!(for_item("proxy-config", &ms).unwrap().status, Status::Warn);
        let both = parse(
            r#"{"kind":"probe","findings":[{"id":"upgrade","status":"pass","observed":"101"},
                {"id":"idle-timeout","status":"pass","observed":"held 120 s"}]}"#,
            "p.json",
        )
        .unwrap();
        assert_eq!(for_item("proxy-config", &both).unwrap().id, "idle-timeout");
    }

    /// A bench scenario as `bench fanout` serializes it.
    pub fn scenario(
        name: &str,
        valid: bool,
        p999: Option<f64>,
    ) -> crate::bench::model::ScenarioResult {
        crate::bench::model::ScenarioResult {
            name: name.into(),
            description: String::new(),
            connections: 1000,
            slow_clients: 0,
            p50_ms: p999,
            p99_ms: p999,
            p999_ms: p999,
            max_ms: p999,
            over_100ms: Some(0),
            over_1s: Some(0),
            samples: 100_000,
            rounds_completed: 100,
            rounds_total: 100,
            rounds_published_at_bound: None,
            last_client_median_ms: None,
            last_client_max_ms: None,
            hub_median_ms: None,
            hub_max_ms: None,
            drops: None,
            removed: None,
            server_rss_mb: None,
            server_cpu_s: None,
            per_round: vec![],
            percentiles: vec![],
            shape: None,
            publisher: None,
            loadgen_cost: None,
            server_process: None,
            server_unmeasured: None,
            client_cpu_s: 1.0,
            p99_vs_floor: None,
            p999_vs_floor: None,
            round_start_drift_median_ms: None,
            round_start_drift_max_ms: None,
            duration_s: 20.0,
            time_bound_s: 60.0,
            valid,
            notes: vec![],
            checks: vec![crate::bench::model::Check {
                name: "samples".into(),
                status: Status::Pass,
                detail: String::new(),
            }],
            accounting: Default::default(),
            reference: None,
        }
    }

    #[test]
    fn bench_json_marks_scenarios() {
        let j = serde_json::json!({"command": "bench fanout", "scenarios": [
            scenario("C3", true, Some(50.5)), scenario("A", false, None)]});
        let ms = parse(&j.to_string(), "b.json").unwrap();
        let c3 = for_item("writer-isolation", &ms).unwrap();
        assert_eq!((c3.status, c3.value), (Status::Pass, Some(50.5)));
        assert!(c3.detail.contains("100/100"), "{}", c3.detail);
        assert_eq!(
            for_item("hub-round-time", &ms).unwrap().status,
            Status::Warn
        );
        // A scenario list that is not the bench's shape is refused, naming the file.
        let e = parse(r#"{"scenarios":[{"name":"A"}]}"#, "b.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("b.json: scenarios:"), "{e}");
    }

    fn verification(name: &str, measured: Option<f64>, valid: bool) -> Verification {
        Verification {
            name: name.into(),
            measured,
            unit: "s".into(),
            reference: "dead peer detected in 13 s".into(),
            verdict: if valid {
                "confirms: noticed after 12.00 s".into()
            } else {
                "invalid: the server did not count a removal".into()
            },
            details: vec![],
            valid,
            duration_ms: 12_000,
        }
    }

    #[test]
    fn verify_json_marks_by_verification_name() {
        // verify's own report shape: verifications[], no findings.
        let j = serde_json::json!({"kind": "verify", "experiments": ["tcp-keepalive"],
            "verifications": [verification("tcp-keepalive", Some(12.0), true),
                              verification("read-deadline", None, false)],
            "summary": {"total": 2, "valid": 1, "invalid": 1}});
        let ms = parse(&j.to_string(), "v.json").unwrap();
        assert_eq!(ms.len(), 2);
        let ping = ms.iter().find(|m| m.id == "tcp-keepalive").unwrap();
        assert_eq!((ping.status, ping.value), (Status::Pass, Some(12.0)));
        assert!(ping.detail.starts_with("confirms:"), "{}", ping.detail);
        // Both measure ping-pong; the worst (the invalid read-deadline run) wins.
        assert_eq!(for_item("ping-pong", &ms).unwrap().id, "read-deadline");
        let rd = ms.iter().find(|m| m.id == "read-deadline").unwrap();
        assert_eq!((rd.status, rd.value), (Status::Warn, None));
        assert!(
            rd.detail.starts_with("invalid measurement:"),
            "{}",
            rd.detail
        );
        // A list that is not verify's shape is refused, naming the file.
        let e = parse(r#"{"verifications":[{"name":"x"}]}"#, "v.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("v.json: verifications:"), "{e}");
    }

    #[test]
    fn other_json_is_one_line_error() {
        let e = parse("{\"x\":1}", "o.json").unwrap_err().to_string();
        assert!(e.starts_with("o.json: none of"), "{e}");
        let e = parse("{", "o.json").unwrap_err().to_string();
        assert!(e.starts_with("o.json:1:"), "{e}");
    }
}
