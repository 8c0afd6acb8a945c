//! Parsing and printing of durations and sizes, shared by flags and YAML.
use std::time::Duration;

/// Longest duration any flag, profile or config value is taken as: ten years. Every
/// deadline is `Instant::now()` plus at most this, so no arithmetic on a parsed duration
/// can overflow (`Instant + 2^63 s` panics).
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 365 * 86_400);

/// Parse a human duration such as `200ms`, `5s`, `2m`, `1h30m`, at most [`MAX_DURATION`].
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    parse_duration_within(s, MAX_DURATION, "10 years, 3650d")
}

/// [`parse_duration`] with another bound (`max_text` says it in words): a product's
/// documented range in data/hops.yaml reaches 68 years (2^31-1 s).
pub fn parse_duration_within(s: &str, max: Duration, max_text: &str) -> Result<Duration, String> {
    let d = parse_unbounded(s)?;
    if d > max {
        return Err(format!(
            "invalid duration `{}`: too large (at most {max_text})",
            s.trim()
        ));
    }
    Ok(d)
}

fn parse_unbounded(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty duration (expected e.g. 200ms, 5s, 2m)".into());
    }
    if t.starts_with('-') {
        return Err(format!("negative duration `{t}`"));
    }
    // humantime's own messages name byte offsets ("expected number at 0"): say it plainly.
    use humantime::DurationError as E;
    humantime::parse_duration(t).map_err(|e| {
        let why = match e {
            E::UnknownUnit { unit, .. } if unit.is_empty() => "a unit is needed".to_string(),
            E::UnknownUnit { unit, .. } => format!("unknown unit `{unit}`"),
            E::NumberOverflow => "too large".to_string(),
            _ => "not a number with a unit".to_string(),
        };
        format!("invalid duration `{t}`: {why} (expected e.g. 200ms, 5s, 2m)")
    })
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

/// The one wording of a bound error, for every flag and profile field:
/// "--size: must be between 16 and 1048576 bytes, got 8".
pub fn out_of_bounds(
    name: &str,
    got: impl std::fmt::Display,
    min: impl std::fmt::Display,
    max: impl std::fmt::Display,
    unit: &str,
) -> String {
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    };
    format!("{name}: must be between {min} and {max}{unit}, got {got}")
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

/// Serde adapter: a size as a number of bytes or with a unit (`64KiB`); written as a number.
pub mod serde_size {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bytes(u64),
        Text(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        match Raw::deserialize(d) {
            Ok(Raw::Bytes(b)) => Ok(b),
            Ok(Raw::Text(t)) => super::parse_size(&t).map_err(serde::de::Error::custom),
            Err(_) => Err(serde::de::Error::custom(
                "expected a size: a whole number of bytes or with a unit (1024, 4KiB, 1MB)",
            )),
        }
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

/// Parse a size: `4096`, `4KB` (1000), `4KiB`/`4K` (1024), `1MB`, `1MiB`/`1M`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("invalid size `{t}` (expected e.g. 1024, 4KiB, 1MB)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1000,
        "k" | "kib" => 1024,
        "mb" => 1_000_000,
        "m" | "mib" => 1 << 20,
        "gb" => 1_000_000_000,
        "g" | "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "invalid size unit in `{t}` (B, KB, KiB, MB, MiB, GB, GiB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size `{t}` is too large"))
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
mod bound_tests {
    #[test]
    fn one_wording_for_bounds() {
        assert_eq!(
            super::out_of_bounds("--size", 8, 16, 1_048_576, "bytes"),
            "--size: must be between 16 and 1048576 bytes, got 8"
        );
        assert_eq!(
            super::out_of_bounds("--shards", 0, 1, 1024, ""),
            "--shards: must be between 1 and 1024, got 0"
        );
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
        // Plain words, no byte offsets from the parser underneath.
        for (bad, why) in [
            ("soon", "not a number with a unit"),
            ("5", "a unit is needed"),
            ("5xs", "unknown unit `xs`"),
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(why) && !e.contains(" at "), "{e}");
        }
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn durations_stop_at_ten_years() {
        assert_eq!(parse_duration("3650d").unwrap(), MAX_DURATION);
        for huge in [
            "3651d",
            "9223372036854775807s",
            "18446744073709551616s",
            "11y",
        ] {
            let e = parse_duration(huge).unwrap_err();
            assert!(e.contains("too large"), "{huge}: {e}");
        }
        // The bound keeps every deadline computable.
        assert!(std::time::Instant::now()
            .checked_add(MAX_DURATION)
            .is_some());
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
