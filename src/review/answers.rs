//! The answers file (`--answers`, `--save`): one entry per item with the answer, declared
//! values, a reason, when it was given and the fingerprint of the rule it was checked
//! against. Parsing is strict: an unknown item or a value of the wrong type is one line
//! naming the file, line and field.
use super::items::{self, Kind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    Yes,
    No,
    /// Not applicable (needs a reason).
    Na,
    Later,
}

impl Answer {
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Yes => "yes",
            Answer::No => "no",
            Answer::Na => "na",
            Answer::Later => "later",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Checklist item id.
    pub id: String,
    pub answer: Answer,
    /// Declared values by name (`ping: 25s`), for items that ask them; a single scalar
    /// (`value: 100KB`) is the item's first value.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "map_or_scalar"
    )]
    pub value: BTreeMap<String, serde_yaml::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// RFC 3339 time the answer was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Fingerprint of the rule the answer was given against; a change asks again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// Key under which a scalar `value:` waits until `parse` names it.
const SCALAR: &str = "";

fn map_or_scalar<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, serde_yaml::Value>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum V {
        Map(BTreeMap<String, serde_yaml::Value>),
        Scalar(serde_yaml::Value),
    }
    match V::deserialize(d)? {
        V::Map(m) => Ok(m),
        V::Scalar(v @ (serde_yaml::Value::String(_) | serde_yaml::Value::Number(_))) => {
            Ok(BTreeMap::from([(SCALAR.to_string(), v)]))
        }
        V::Scalar(_) => Err(serde::de::Error::custom(
            "value: a mapping of names to values, or one scalar",
        )),
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answers {
    pub answers: Vec<Entry>,
}

/// A declared value, typed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val {
    Duration(Duration),
    Count(u64),
    Bytes(u64),
    Flag(bool),
}

impl Val {
    pub fn duration(self) -> Option<Duration> {
        match self {
            Val::Duration(d) => Some(d),
            _ => None,
        }
    }
    pub fn count(self) -> Option<u64> {
        match self {
            Val::Count(n) | Val::Bytes(n) => Some(n),
            _ => None,
        }
    }
    pub fn flag(self) -> Option<bool> {
        match self {
            Val::Flag(b) => Some(b),
            _ => None,
        }
    }
    /// As written back to the answers file.
    pub fn to_yaml(self) -> serde_yaml::Value {
        match self {
            Val::Duration(d) => serde_yaml::Value::String(rtcheck_base::units::fmt_duration(d)),
            Val::Count(n) | Val::Bytes(n) => serde_yaml::Value::Number(n.into()),
            Val::Flag(b) => serde_yaml::Value::Bool(b),
        }
    }
}

/// `102400`, `100KB`, `1.5MB`, `1MiB` (KB = 1000 like the articles, KiB = 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: f64 = n
        .replace('_', "")
        .parse()
        .map_err(|_| format!("`{t}` is not {}", Kind::Bytes.example()))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" | "k" => 1e3,
        "mb" | "m" => 1e6,
        "gb" | "g" => 1e9,
        "kib" => 1024.0,
        "mib" => 1048576.0,
        "gib" => 1073741824.0,
        _ => {
            return Err(format!(
                "`{t}`: unknown unit (use B, KB, MB, GB, KiB, MiB, GiB)"
            ))
        }
    };
    let v = n * mult;
    if !(v.is_finite() && (0.0..1e18).contains(&v)) {
        return Err(format!("`{t}` is out of range"));
    }
    Ok(v.round() as u64)
}

/// Parse one value of `kind` from a YAML scalar (or the text typed at a prompt).
pub fn parse_value(kind: Kind, v: &serde_yaml::Value) -> Result<Val, String> {
    let text = match v {
        serde_yaml::Value::String(s) => s.clone(),
        serde_yaml::Value::Number(n) => n.to_string(),
        serde_yaml::Value::Bool(b) => b.to_string(),
        _ => return Err(format!("expected {}", kind.example())),
    };
    parse_text(kind, &text)
}

pub fn parse_text(kind: Kind, text: &str) -> Result<Val, String> {
    let t = text.trim();
    match kind {
        Kind::Duration => {
            if t == "0" {
                return Ok(Val::Duration(Duration::ZERO));
            }
            rtcheck_base::units::parse_duration(t)
                .map(Val::Duration)
                .map_err(|_| format!("expected {}, got `{t}`", kind.example()))
        }
        Kind::Count => rtcheck_base::units::parse_count(t)
            .map(Val::Count)
            .map_err(|_| format!("expected {}, got `{t}`", kind.example())),
        Kind::Bytes => parse_bytes(t).map(Val::Bytes),
        Kind::Flag => match t.to_ascii_lowercase().as_str() {
            "yes" | "y" | "true" => Ok(Val::Flag(true)),
            "no" | "n" | "false" => Ok(Val::Flag(false)),
            _ => Err(format!("expected {}, got `{t}`", kind.example())),
        },
    }
}

/// Typed values of an entry; errors name the value.
pub fn values_of(e: &Entry) -> Result<BTreeMap<String, Val>, (String, String)> {
    let spec = items::spec(&e.id);
    let mut out = BTreeMap::new();
    for (name, raw) in &e.value {
        let Some(vs) = spec.and_then(|s| s.values.iter().find(|v| v.name == name)) else {
            let known: Vec<&str> = spec
                .map(|s| s.values.iter().map(|v| v.name).collect())
                .unwrap_or_default();
            let hint = if known.is_empty() {
                format!("item `{}` asks no values", e.id)
            } else {
                format!("known: {}", known.join(", "))
            };
            return Err((name.clone(), format!("unknown value `{name}` ({hint})")));
        };
        let v = parse_value(vs.kind, raw).map_err(|m| (name.clone(), m))?;
        out.insert(name.clone(), v);
    }
    Ok(out)
}

/// 1-based line of the first `key:` at or after line `from` (1-based), if any.
fn line_of(text: &str, from: usize, key: &str) -> Option<usize> {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, l)| {
            let l = l.trim_start().trim_start_matches("- ");
            l.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with(':'))
        })
        .map(|(i, _)| i + 1)
}

/// Line of entry `index` (its `id:` line), counting `id:` keys in order.
fn entry_line(text: &str, index: usize) -> Option<usize> {
    let mut from = 1;
    let mut found = None;
    for _ in 0..=index {
        let l = line_of(text, from, "id")?;
        found = Some(l);
        from = l + 1;
    }
    found
}

/// Parse and check an answers file: known item ids (`known`), no duplicates, values of
/// the right type, a reason for `na`. `origin` names the file in the one-line error.
pub fn parse(text: &str, origin: &str, known: &[&str]) -> anyhow::Result<Answers> {
    let mut a: Answers = serde_yaml::from_str(text).map_err(|e| {
        let msg = e.to_string();
        let msg = rtcheck_base::escape::bound_quotes(msg.split(" at line ").next().unwrap_or(&msg));
        let loc = e
            .location()
            .map(|l| format!(":{}:{}", l.line(), l.column()))
            .unwrap_or_default();
        anyhow::anyhow!("{origin}{loc}: {msg}")
    })?;
    // A scalar value is the item's first value (unknown items are refused below).
    for e in &mut a.answers {
        if let Some(v) = e.value.remove(SCALAR) {
            let name = items::spec(&e.id)
                .map(|s| s.values[0].name)
                .unwrap_or("value");
            e.value.insert(name.to_string(), v);
        }
    }
    let mut seen = std::collections::HashSet::new();
    for (i, e) in a.answers.iter().enumerate() {
        let at = entry_line(text, i);
        let loc = |line: Option<usize>| line.map(|l| format!(":{l}")).unwrap_or_default();
        let field = |f: &str| format!("{origin}{}: answers[{i}].{f}", loc(at));
        if !known.contains(&e.id.as_str()) {
            anyhow::bail!(
                "{}: unknown item `{}` (see `rtcheck checklist`)",
                field("id"),
                e.id
            );
        }
        if !seen.insert(e.id.as_str()) {
            anyhow::bail!("{}: item `{}` answered twice", field("id"), e.id);
        }
        if e.answer == Answer::Na && e.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
            anyhow::bail!("{}: `na` needs a reason", field("reason"));
        }
        if let Err((name, msg)) = values_of(e) {
            let vline = at.and_then(|l| line_of(text, l, &name));
            anyhow::bail!(
                "{origin}{}: answers[{i}].value.{name}: {msg}",
                loc(vline.or(at))
            );
        }
    }
    Ok(a)
}

pub fn load(flag: &str, path: &std::path::Path, known: &[&str]) -> anyhow::Result<Answers> {
    let text = rtcheck_base::input::yaml(flag, path)?;
    parse(&text, &path.display().to_string(), known)
}

impl Answers {
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.answers.iter().find(|e| e.id == id)
    }

    /// Replace or add an entry, keeping file order (new ones at the end).
    pub fn put(&mut self, e: Entry) {
        match self.answers.iter_mut().find(|x| x.id == e.id) {
            Some(x) => *x = e,
            None => self.answers.push(e),
        }
    }

    pub fn to_yaml(&self) -> String {
        let body = serde_yaml::to_string(self).unwrap_or_default();
        format!("# rtcheck review answers: id, answer (yes/no/na/later), value, reason, when, rule.\n{body}")
    }
}

/// Fingerprint (FNV-1a, 8 hex digits) of what an answer was checked against.
pub fn fingerprint(text: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{:08x}", (h >> 32) as u32)
}

/// Now, as RFC 3339 (seconds).
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &["ping-interval", "seq-numbers", "replay-window"];

    #[test]
    fn round_trip_and_types() {
        let text = "answers:\n  - id: ping-interval\n    answer: yes\n    value: {ping: 25s, pong_wait: 30s}\n  - id: seq-numbers\n    answer: na\n    reason: snapshot only\n  - id: replay-window\n    answer: yes\n    value: {ring: 100KB}\n";
        let a = parse(text, "a.yaml", KNOWN).unwrap();
        assert_eq!(a.answers.len(), 3);
        let v = values_of(&a.answers[0]).unwrap();
        assert_eq!(v["ping"], Val::Duration(Duration::from_secs(25)));
        assert_eq!(
            values_of(&a.answers[2]).unwrap()["ring"],
            Val::Bytes(100_000)
        );
        let back = parse(&a.to_yaml(), "b.yaml", KNOWN).unwrap();
        assert_eq!(back, a);
    }

    #[test]
    fn unknown_item_names_file_line_and_field() {
        let text =
            "answers:\n  - id: seq-numbers\n    answer: yes\n  - id: nope\n    answer: yes\n";
        let e = parse(text, "a.yaml", KNOWN).unwrap_err().to_string();
        assert_eq!(
            e,
            "a.yaml:4: answers[1].id: unknown item `nope` (see `rtcheck checklist`)"
        );
    }

    #[test]
    fn wrong_value_type_names_the_value_and_its_line() {
        let text = "answers:\n  - id: ping-interval\n    answer: yes\n    value:\n      ping: 25s\n      pong_wait: soon\n";
        let e = parse(text, "a.yaml", KNOWN).unwrap_err().to_string();
        assert!(
            e.starts_with("a.yaml:6: answers[0].value.pong_wait: expected a duration"),
            "{e}"
        );
        let bad_answer = "answers:\n  - id: seq-numbers\n    answer: maybe\n";
        let e = parse(bad_answer, "a.yaml", KNOWN).unwrap_err().to_string();
        assert!(e.starts_with("a.yaml:3:"), "{e}");
        assert!(e.contains("maybe"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn na_needs_a_reason_and_duplicates_are_refused() {
        let text = "answers:\n  - id: seq-numbers\n    answer: na\n";
        assert!(parse(text, "a", KNOWN)
            .unwrap_err()
            .to_string()
            .contains("needs a reason"));
        let dup =
            "answers:\n  - id: seq-numbers\n    answer: yes\n  - id: seq-numbers\n    answer: no\n";
        assert!(parse(dup, "a", KNOWN)
            .unwrap_err()
            .to_string()
            .contains("a:4:"));
    }

    #[test]
    fn a_scalar_value_is_the_first_value() {
        let text = "answers:\n  - id: replay-window\n    answer: yes\n    value: 100KB\n";
        let a = parse(text, "a.yaml", KNOWN).unwrap();
        assert_eq!(
            values_of(&a.answers[0]).unwrap()["ring"],
            Val::Bytes(100_000)
        );
        let none = "answers:\n  - id: seq-numbers\n    answer: yes\n    value: 3\n";
        let e = parse(none, "a.yaml", KNOWN).unwrap_err().to_string();
        assert!(e.contains("answers[0].value.value: unknown value"), "{e}");
        let list = "answers:\n  - id: replay-window\n    answer: yes\n    value: [1, 2]\n";
        assert!(parse(list, "a.yaml", KNOWN).is_err());
    }

    #[test]
    fn bytes_units() {
        assert_eq!(parse_bytes("100KB"), Ok(100_000));
        assert_eq!(parse_bytes("1MiB"), Ok(1_048_576));
        assert_eq!(parse_bytes("2048"), Ok(2048));
        assert!(parse_bytes("-1").is_err());
        assert!(parse_bytes("1 parsec").is_err());
    }
}
