//! Parsing and printing of durations and sizes, shared by flags and YAML.
use std::time::Duration;

/// Parse a human duration such as `200ms`, `5s`, `2m`, `1h30m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty duration (expected e.g. 200ms, 5s, 2m)".into());
    }
    if t.starts_with('-') {
        return Err(format!("negative duration `{t}`"));
    }
    humantime::parse_duration(t)
        .map_err(|e| format!("invalid duration `{t}`: {e} (expected e.g. 200ms, 5s, 2m)"))
}

/// Print a duration compactly (`200ms`, `5s`, `2m`, `1m30s`).
pub fn fmt_duration(d: Duration) -> String {
    // Exact: a saved profile must read back to the same value.
    if !d.subsec_nanos().is_multiple_of(1000) {
        return format!("{}ns", d.as_nanos());
    }
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        return format!("{}us", d.as_micros());
    }
    let ms = d.as_millis();
    if ms < 1000 || !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = d.as_secs();
    if s < 60 || !s.is_multiple_of(60) {
        if s >= 60 {
            return format!("{}m{}s", s / 60, s % 60);
        }
        return format!("{s}s");
    }
    if s.is_multiple_of(3600) {
        return format!("{}h", s / 3600);
    }
    format!("{}m", s / 60)
}

/// Serde adapter: durations as human strings (`3s`) in YAML/JSON.
pub mod serde_duration {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::fmt_duration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        super::parse_duration(&s).map_err(serde::de::Error::custom)
    }
}

/// Same as [`serde_duration`] for `Option<Duration>`.
pub mod serde_opt_duration {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&super::fmt_duration(*d)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let s = Option::<String>::deserialize(d)?;
        s.map(|s| super::parse_duration(&s).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// Human bytes with binary prefixes: `830.0 MB`-style output uses decimal units like the
/// articles do (1 KB = 1000 B), so printed figures compare directly with the evidence.
/// An integer with thousands separators (`10,000`), exact for every u64 (an f64 is not
/// above 2^53). The one formatter for counts in every report.
pub fn fmt_thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1000.0 && i < UNITS.len() - 1 {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip() {
        for s in [
            "200ms", "5s", "2m", "1h", "1m30s", "1500ms", "1500us", "1001ns", "0s",
        ] {
            let d = parse_duration(s).unwrap();
            assert_eq!(parse_duration(&fmt_duration(d)).unwrap(), d, "{s}");
        }
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert!(parse_duration("-5s").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn bytes_are_decimal() {
        assert_eq!(fmt_bytes(830_000_000), "830.0 MB");
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(27_000), "27.0 KB");
    }

    #[test]
    fn thousands_are_exact_for_every_u64() {
        assert_eq!(fmt_thousands(0), "0");
        assert_eq!(fmt_thousands(999), "999");
        assert_eq!(fmt_thousands(1_018), "1,018");
        assert_eq!(fmt_thousands(100_000), "100,000");
        assert_eq!(fmt_thousands(u64::MAX), "18,446,744,073,709,551,615");
    }
}
