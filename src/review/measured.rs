//! `--evidence FILE`: the JSON output of `verify`, `bench fanout` (and, by finding id,
//! `probe` and `verify delivery`) turned into measurements that mark review items
//! measured instead of declared.
use crate::report::Status;
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

/// `bench fanout --format json`: one measurement per scenario, valid runs only counted.
fn from_bench(list: &[Value], file: &str) -> Vec<Measurement> {
    list.iter()
        .filter_map(|s| {
            let id = s.get("name")?.as_str()?.to_string();
            let valid = s.get("valid").and_then(Value::as_bool).unwrap_or(false);
            let p999 = s.get("p999_ms").and_then(Value::as_f64);
            let worst = s
                .get("checks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| status_of(c.get("status").and_then(Value::as_str)))
                .max()
                .unwrap_or(Status::Pass);
            let rounds = format!(
                "{}/{} rounds",
                s.get("rounds_completed")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                s.get("rounds_total").and_then(Value::as_u64).unwrap_or(0)
            );
            let (status, value, detail) = match (valid, p999) {
                (true, Some(p)) => (
                    worst.max(Status::Pass),
                    Some(p),
                    format!(
                        "bench scenario {id}: p99.9 {} ms, {rounds}",
                        crate::evidence::fmt_num(p)
                    ),
                ),
                _ => (
                    Status::Warn,
                    None,
                    format!("bench scenario {id}: invalid run, no number"),
                ),
            };
            Some(Measurement {
                id,
                status,
                value,
                unit: "ms".into(),
                detail,
                file: file.into(),
            })
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
    if let Some(list) = v.get("scenarios").and_then(Value::as_array) {
        return Ok(from_bench(list, file));
    }
    anyhow::bail!(
        "{file}: neither `findings` (verify, probe, verify delivery) nor `scenarios` (bench fanout): not an rtcheck JSON report"
    )
}

pub fn load(path: &std::path::Path) -> anyhow::Result<Vec<Measurement>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// The measurement that marks `item`: an id listed for it in `items::MEASURED_BY`, or
/// a finding carrying the item's own id. The worst status wins when several match.
pub fn for_item<'a>(item: &str, ms: &'a [Measurement]) -> Option<&'a Measurement> {
    let ids = super::items::measured_by(item)
        .map(|(_, ids)| ids)
        .unwrap_or(&[]);
    ms.iter()
        .filter(|m| m.id == item || ids.contains(&m.id.as_str()))
        .max_by_key(|m| m.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_json_marks_by_id_and_invalid_runs_carry_no_number() {
        let j = r#"{"kind":"probe","findings":[
            {"id":"proxy-buffering","status":"fail","observed":"first byte after 6.6 s"},
            {"id":"tcp-keepalive","status":"pass","observed":"x","verification":
              {"measured":11.2,"unit":"s","verdict":"confirms","valid":true}},
            {"id":"delivery-loss","status":"pass","observed":"x","verification":
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

    #[test]
    fn bench_json_marks_scenarios() {
        let j = r#"{"command":"bench fanout","scenarios":[
            {"name":"C3","valid":true,"p999_ms":50.5,"rounds_completed":100,"rounds_total":100,
             "checks":[{"name":"samples","status":"pass","detail":""}]},
            {"name":"A","valid":false,"p999_ms":null,"checks":[]}]}"#;
        let ms = parse(j, "b.json").unwrap();
        let c3 = for_item("writer-isolation", &ms).unwrap();
        assert_eq!((c3.status, c3.value), (Status::Pass, Some(50.5)));
        assert!(c3.detail.contains("100/100"), "{}", c3.detail);
        assert_eq!(
            for_item("hub-round-time", &ms).unwrap().status,
            Status::Warn
        );
    }

    #[test]
    fn other_json_is_one_line_error() {
        let e = parse("{\"x\":1}", "o.json").unwrap_err().to_string();
        assert!(e.starts_with("o.json: neither"), "{e}");
        let e = parse("{", "o.json").unwrap_err().to_string();
        assert!(e.starts_with("o.json:1:"), "{e}");
    }
}
