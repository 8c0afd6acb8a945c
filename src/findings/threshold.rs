//! `--threshold EXPR` (issue 28): `p99 < 50ms`, `lost_silently == 0`, `knee.c >= 16`,
//! checked against a live run's own JSON report, so the names are the report's keys.
//!
//! A name is a dotted path into the JSON. Each segment matches a key exactly, else the key
//! with a unit suffix (`p99` is `p99_ms`), else the one key it is a prefix of (`c` is
//! `concurrency` when nothing else starts with `c`). Through an array a segment is an index,
//! the element whose `name`/`id`/`label` it is, or else every element: the threshold must
//! then hold for all of them (every load level). A name that resolves to nothing is a usage
//! error listing the keys nearby (k6 #1526 passed such a threshold silently); a null value
//! (not measured) and an invalid run fail the threshold, never pass it.
use super::{Finding, Fix, Status};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }

    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// The dimension of a number: what a limit's unit and a key's suffix must agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A bare number (`0`, `16`): taken in the key's own unit.
    Bare,
    /// Seconds (`50ms` is 0.05).
    Seconds,
    Bytes,
    Percent,
}

/// One parsed `--threshold`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As given, for the report line.
    pub expr: String,
    pub name: Vec<String>,
    pub op: Op,
    /// In `unit`'s base (seconds, bytes, percent) or bare.
    pub value: f64,
    pub unit: Unit,
}

/// Parse `NAME OP NUMBER[UNIT]` (the clap value parser: an error is exit 2).
pub fn parse(s: &str) -> Result<Threshold, String> {
    let t = s.trim();
    let ops = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<", Op::Lt),
        (">", Op::Gt),
    ];
    let (at, tok, op) = ops
        .iter()
        .filter_map(|(tok, op)| t.find(tok).map(|at| (at, *tok, *op)))
        .min_by_key(|(at, tok, _)| (*at, std::cmp::Reverse(tok.len())))
        .ok_or_else(|| {
            format!("`{t}`: no comparison (expected e.g. 'p99 < 50ms', 'lost_silently == 0')")
        })?;
    let (name, limit) = (t[..at].trim(), t[at + tok.len()..].trim());
    let name: Vec<String> = name.split('.').map(|p| p.trim().to_string()).collect();
    if name.iter().any(|p| {
        p.is_empty()
            || !p
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }) {
        return Err(format!(
            "`{t}`: the name must be dotted keys of the JSON report (e.g. p99, knee.c)"
        ));
    }
    let (value, unit) = parse_limit(limit).map_err(|e| format!("`{t}`: {e}"))?;
    Ok(Threshold {
        expr: t.to_string(),
        name,
        op,
        value,
        unit,
    })
}

/// `50ms`, `1.5s`, `0`, `16`, `4KiB`, `5%`: the unit names are rtcheck_base::units' own.
fn parse_limit(s: &str) -> Result<(f64, Unit), String> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    let (num, unit) = (s[..split].trim(), s[split..].trim());
    let n: f64 = num
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite())
        .ok_or_else(|| format!("`{s}` is not a number with an optional unit (e.g. 50ms, 0, 5%)"))?;
    if unit.is_empty() {
        return Ok((n, Unit::Bare));
    }
    if unit == "%" {
        return Ok((n, Unit::Percent));
    }
    if let Ok(d) = rtcheck_base::units::parse_duration(&format!("1{unit}")) {
        return Ok((n * d.as_secs_f64(), Unit::Seconds));
    }
    if let Ok(b) = rtcheck_base::units::parse_size(&format!("1{unit}")) {
        return Ok((n * b as f64, Unit::Bytes));
    }
    Err(format!(
        "unknown unit `{unit}` (a duration like ms or s, a size like KiB, or %)"
    ))
}

/// The unit a key's suffix names, and the factor from the base unit to the key's.
fn key_unit(key: &str) -> (Unit, f64) {
    let suffix = key.rsplit('_').next().unwrap_or("");
    match suffix {
        _ if !key.contains('_') => (Unit::Bare, 1.0),
        "ms" => (Unit::Seconds, 1000.0),
        "us" => (Unit::Seconds, 1e6),
        "s" => (Unit::Seconds, 1.0),
        "bytes" => (Unit::Bytes, 1.0),
        "pct" => (Unit::Percent, 1.0),
        _ => (Unit::Bare, 1.0),
    }
}

/// One number the name resolved to: its JSON path, its value (None: null, not measured)
/// and its key (for the unit).
#[derive(Debug, Clone, PartialEq)]
struct Leaf {
    path: String,
    value: Option<f64>,
    key: String,
}

const UNIT_SUFFIXES: &[&str] = &["ms", "us", "s", "bytes", "pct", "rps"];

/// The key of `obj` that `seg` names (see the module doc), or an error listing the keys.
fn match_key<'a>(obj: &'a serde_json::Map<String, Value>, seg: &str) -> Result<&'a str, String> {
    if let Some((k, _)) = obj.get_key_value(seg) {
        return Ok(k);
    }
    let suffixed: Vec<&str> = UNIT_SUFFIXES
        .iter()
        .filter_map(|u| {
            obj.get_key_value(&format!("{seg}_{u}"))
                .map(|(k, _)| k.as_str())
        })
        .collect();
    if let [k] = suffixed[..] {
        return Ok(k);
    }
    let prefixed: Vec<&str> = obj
        .keys()
        .filter(|k| k.starts_with(seg))
        .map(|k| k.as_str())
        .collect();
    match prefixed[..] {
        [k] => Ok(k),
        [] => Err(format!(
            "no key `{seg}` (keys here: {})",
            obj.keys().cloned().collect::<Vec<_>>().join(", ")
        )),
        _ => Err(format!("`{seg}` is ambiguous ({})", prefixed.join(", "))),
    }
}

/// Every number `segs` names under `v` (at `path`).
fn resolve(v: &Value, segs: &[String], path: &str, key: &str) -> Result<Vec<Leaf>, String> {
    let Some(seg) = segs.first() else {
        return match v {
            Value::Number(n) => Ok(vec![leaf(path, n.as_f64(), key)]),
            Value::Bool(b) => Ok(vec![leaf(path, Some(f64::from(u8::from(*b))), key)]),
            Value::Null => Ok(vec![leaf(path, None, key)]),
            _ => Err(format!("`{path}` is not a number")),
        };
    };
    match v {
        Value::Object(o) => {
            let k = match match_key(o, seg) {
                Ok(k) => k,
                // A skipped check has no numbers: not measured, so the threshold fails.
                Err(_) if o.get("status").and_then(Value::as_str) == Some("skip") => {
                    return Ok(vec![leaf(&join(path, seg), None, key)]);
                }
                Err(e) => return Err(at(path, e)),
            };
            // `resume_ms.max`: a bare key inside a keyed unit takes its parent's unit.
            let unit_key = if key_unit(k).0 == Unit::Bare && key_unit(key).0 != Unit::Bare {
                key
            } else {
                k
            };
            resolve(&o[k], &segs[1..], &join(path, k), unit_key)
        }
        Value::Array(items) => {
            if let Ok(i) = seg.parse::<usize>() {
                let item = items
                    .get(i)
                    .ok_or_else(|| at(path, format!("index {i} out of {}", items.len())))?;
                return resolve(item, &segs[1..], &format!("{path}[{i}]"), key);
            }
            // Every element of that name (probe: one finding per check and URL).
            let named: Vec<usize> = (0..items.len())
                .filter(|&i| {
                    ["name", "id", "label"]
                        .iter()
                        .any(|k| items[i].get(k).and_then(Value::as_str) == Some(seg.as_str()))
                })
                .collect();
            if !named.is_empty() {
                let mut all = Vec::new();
                for i in named {
                    all.extend(resolve(
                        &items[i],
                        &segs[1..],
                        &format!("{path}[{i}]"),
                        key,
                    )?);
                }
                return Ok(all);
            }
            if items.is_empty() {
                return Err(at(path, "is empty: nothing measured".into()));
            }
            let mut all = Vec::new();
            for (i, it) in items.iter().enumerate() {
                all.extend(resolve(it, segs, &format!("{path}[{i}]"), key)?);
            }
            Ok(all)
        }
        Value::Null => Ok(vec![leaf(path, None, key)]),
        _ => Err(at(path, format!("is not an object (no `{seg}` in it)"))),
    }
}

fn leaf(path: &str, value: Option<f64>, key: &str) -> Leaf {
    Leaf {
        path: path.to_string(),
        value,
        key: key.to_string(),
    }
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

fn at(path: &str, e: String) -> String {
    if path.is_empty() {
        e
    } else {
        format!("{path}: {e}")
    }
}

/// Resolve at the root, else under each scope (`levels` for load). The root's error is the
/// one shown when nothing resolves.
fn resolve_scoped(t: &Threshold, report: &Value, scopes: &[&str]) -> Result<Vec<Leaf>, String> {
    let root = resolve(report, &t.name, "", "");
    if root.is_ok() {
        return root;
    }
    let mut why = vec![root.err().unwrap_or_default()];
    for s in scopes {
        let mut segs = vec![s.to_string()];
        segs.extend(t.name.iter().cloned());
        match resolve(report, &segs, "", "") {
            Ok(l) => return Ok(l),
            Err(e) => why.push(e),
        }
    }
    Err(format!("--threshold '{}': {}", t.expr, why.join("; ")))
}

/// Evaluate every threshold on the run's JSON `report`. Err: a usage error (unknown name,
/// a unit that does not fit the key), for exit 2. `invalid`: why the run is invalid, when
/// it is; then no threshold passes.
pub fn evaluate(
    ts: &[Threshold],
    report: &Value,
    scopes: &[&str],
    invalid: Option<&str>,
) -> Result<Vec<Finding>, String> {
    ts.iter()
        .map(|t| {
            let leaves = resolve_scoped(t, report, scopes)?;
            let values = leaves
                .iter()
                .map(|l| in_key_unit(t, l).map(|lim| (l, lim)))
                .collect::<Result<Vec<_>, String>>()?;
            Ok(judge(t, &values, invalid))
        })
        .collect()
}

/// The limit in the leaf's own unit; a duration against a count is a usage error.
fn in_key_unit(t: &Threshold, l: &Leaf) -> Result<f64, String> {
    if l.value.is_none() {
        // Not measured (a skipped check may not even have the key): fails in `judge`.
        return Ok(t.value);
    }
    let (unit, factor) = key_unit(&l.key);
    match (t.unit, unit) {
        (Unit::Bare, _) => Ok(t.value),
        (a, b) if a == b => Ok(t.value * factor),
        (a, _) => Err(format!(
            "--threshold '{}': {} is {}, the limit is {}",
            t.expr,
            l.path,
            unit_name(unit),
            unit_name(a)
        )),
    }
}

fn unit_name(u: Unit) -> &'static str {
    match u {
        Unit::Bare => "a plain number",
        Unit::Seconds => "a duration",
        Unit::Bytes => "a size",
        Unit::Percent => "a percentage",
    }
}

/// The finding for one threshold: fail when any value crosses it, is null, or the run is
/// invalid; pass otherwise, showing the value nearest the limit.
fn judge(t: &Threshold, values: &[(&Leaf, f64)], invalid: Option<&str>) -> Finding {
    let show = |l: &Leaf| match l.value {
        Some(v) => format!("{} = {}", l.path, crate::evidence::fmt_num(v)),
        None => format!("{} not measured", l.path),
    };
    let crossed: Vec<String> = values
        .iter()
        .filter(|(l, lim)| l.value.is_none_or(|v| !t.op.holds(v, *lim)))
        .map(|(l, _)| show(l))
        .collect();
    // Nearest the limit: the largest for < and <=, the smallest for > and >=.
    let nearest = values
        .iter()
        .filter_map(|(l, lim)| l.value.map(|v| (l, v - lim)))
        .max_by(|a, b| {
            let key = |d: f64| {
                if matches!(t.op, Op::Gt | Op::Ge) {
                    -d
                } else {
                    d
                }
            };
            key(a.1).total_cmp(&key(b.1))
        });
    let (status, observed) = match (invalid, crossed.is_empty()) {
        (Some(why), _) => (
            Status::Fail,
            format!("not evaluated: the run is invalid ({why})"),
        ),
        (None, false) => (Status::Fail, crossed.join("; ")),
        (None, true) => (
            Status::Pass,
            nearest.map_or_else(|| "no value".into(), |(l, _)| show(l)),
        ),
    };
    let mut numbers = BTreeMap::new();
    numbers.insert("limit".to_string(), t.value);
    if let Some((l, _)) = nearest {
        numbers.insert("observed".to_string(), l.value.unwrap_or(f64::NAN));
    }
    Finding {
        id: format!("threshold:{}", t.expr.replace(' ', "")),
        title: format!("threshold {}", t.expr),
        status,
        observed,
        expected: format!("{} {} {}", t.name.join("."), t.op.as_str(), limit_text(t)),
        rule: "--threshold: every value the name resolves to must hold; a value not \
               measured or an invalid run fails it"
            .into(),
        reason: None,
        evidence: Vec::new(),
        fix: Fix {
            summary: "the live figure crossed the threshold given on the command line".into(),
            ..Fix::default()
        },
        verify: None,
        verification: None,
        numbers,
        location: None,
    }
}

fn limit_text(t: &Threshold) -> String {
    let n = crate::evidence::fmt_num;
    match t.unit {
        Unit::Bare => n(t.value),
        Unit::Seconds => format!("{} ms", n(t.value * 1000.0)),
        Unit::Bytes => format!("{} B", n(t.value)),
        Unit::Percent => format!("{} %", n(t.value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load_like() -> Value {
        json!({
            "knee": {"concurrency": 16, "throughput_rps": 900.0, "last_concurrency": 32},
            "levels": [
                {"concurrency": 1, "p99_ms": 3.0, "errors": 0},
                {"concurrency": 8, "p99_ms": 61.2, "errors": 0},
            ],
            "servers": [{"name": "A", "p999_ms": 40.0}, {"name": "B", "p999_ms": 90.0}],
            "findings": [
                {"id": "heartbeat", "status": "pass", "numbers": {"gap_ms": 100.0}},
                {"id": "heartbeat", "status": "pass", "numbers": {"gap_ms": 300.0}},
                {"id": "idle-timeout", "status": "skip"},
            ],
            "lost_silently": 0,
            "runs": [{"lost_silently": 0, "resume_ms": {"p50": 120.0, "max": 900.0}}],
            "gap": null,
        })
    }

    fn eval(expr: &str) -> Result<Finding, String> {
        let t = parse(expr)?;
        let scopes = ["levels", "servers", "findings"];
        evaluate(&[t], &load_like(), &scopes, None).map(|mut v| v.remove(0))
    }

    #[test]
    fn parses_names_ops_and_units() {
        let t = parse(" A.p999 <= 45ms ").unwrap();
        assert_eq!(t.name, ["A", "p999"]);
        assert_eq!(t.op, Op::Le);
        assert!((t.value - 0.045).abs() < 1e-12);
        assert_eq!(t.unit, Unit::Seconds);
        assert_eq!(parse("lost_silently==0").unwrap().op, Op::Eq);
        assert_eq!(parse("x != 1.5s").unwrap().value, 1.5);
        assert_eq!(parse("x < 4KiB").unwrap().value, 4096.0);
        for bad in [
            "p99",
            "< 5",
            "p99 < ",
            "p99 < 5 parsecs",
            "p 99 < 1",
            "a..b < 1",
            "x < NaN",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn evaluates_against_the_json_with_units_and_every_level() {
        // 61.2 ms at the second level crosses 50ms; the finding names where.
        let f = eval("p99 < 50ms").unwrap();
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.observed.contains("levels[1].p99_ms = 61.2"),
            "{}",
            f.observed
        );
        assert_eq!(eval("p99 < 62ms").unwrap().status, Status::Pass);
        assert_eq!(eval("p99 < 0.07s").unwrap().status, Status::Pass);
        assert_eq!(eval("knee.c >= 16").unwrap().status, Status::Pass);
        assert_eq!(eval("knee.c > 16").unwrap().status, Status::Fail);
        assert_eq!(eval("A.p999 < 45ms").unwrap().status, Status::Pass);
        assert_eq!(eval("B.p999 < 45ms").unwrap().status, Status::Fail);
        assert_eq!(eval("lost_silently == 0").unwrap().status, Status::Pass);
        assert_eq!(eval("levels.0.p99 < 4ms").unwrap().status, Status::Pass);
        // A bare key under a key with a unit (resume_ms.max) is in that unit.
        assert_eq!(
            eval("runs.resume_ms.max < 1s").unwrap().status,
            Status::Pass
        );
        assert_eq!(
            eval("runs.resume_ms.max < 800ms").unwrap().status,
            Status::Fail
        );
        // Every finding of that id must hold; a skipped check is not measured: a fail.
        assert_eq!(
            eval("heartbeat.numbers.gap < 1s").unwrap().status,
            Status::Pass
        );
        let f = eval("heartbeat.numbers.gap < 200ms").unwrap();
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.observed.contains("findings[1].numbers.gap_ms = 300"),
            "{}",
            f.observed
        );
        let f = eval("idle-timeout.numbers.idle < 1s").unwrap();
        assert_eq!(f.status, Status::Fail);
        assert!(f.observed.contains("not measured"), "{}", f.observed);
        // A null is not measured: never a pass.
        assert_eq!(eval("gap < 1").unwrap().status, Status::Fail);
    }

    #[test]
    fn an_unknown_name_or_a_wrong_unit_is_a_usage_error_naming_the_keys() {
        let e = eval("p98 < 50ms").unwrap_err();
        assert!(e.contains("--threshold 'p98 < 50ms'"), "{e}");
        assert!(e.contains("knee") && e.contains("lost_silently"), "{e}");
        // The keys of a level are named too (the scope it was looked up in).
        assert!(e.contains("levels[0]") && e.contains("p99_ms"), "{e}");
        let e = eval("knee.zz >= 1").unwrap_err();
        assert!(e.contains("concurrency"), "{e}");
        let e = eval("errors < 5ms").unwrap_err();
        assert!(e.contains("a plain number"), "{e}");
        // `last_concurrency` and `lost_silently` both start with `l`.
        assert!(eval("knee.t > 1").is_ok());
        assert!(eval("l < 1").unwrap_err().contains("ambiguous"));
    }

    #[test]
    fn an_invalid_run_passes_no_threshold() {
        let t = parse("p99 < 1h").unwrap();
        let f = evaluate(
            &[t],
            &load_like(),
            &["levels"],
            Some("level 2 saturated the client"),
        );
        let f = f.unwrap().remove(0);
        assert_eq!(f.status, Status::Fail);
        assert!(f.observed.contains("the run is invalid"), "{}", f.observed);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_any_string(s in "\\PC{0,40}") {
            if let Ok(t) = parse(&s) {
                let _ = evaluate(&[t], &load_like(), &["levels"], None);
            }
        }

        #[test]
        fn never_panics_on_operator_soup(s in "[a-z._ ]{0,6}[<>=!]{0,3}[ 0-9.%a-z-]{0,8}") {
            if let Ok(t) = parse(&s) {
                let _ = evaluate(&[t], &load_like(), &["levels"], None);
            }
        }
    }
}
