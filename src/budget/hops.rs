//! Hops from `--hop NAME:RTT[:SERVER_TIME]` flags or a `--hops FILE` YAML (pure parsing).
//! Times are durations (`24ms`, `1.5s`) or bare numbers in milliseconds.
use super::model::Hop;
use serde::Deserialize;

/// Largest time accepted for one hop (10 minutes): anything above is a typo.
const MAX_MS: f64 = 600_000.0;
/// Most hops in one budget: the sums stay readable and the live run bounded.
pub const MAX_HOPS: usize = 64;

/// Milliseconds from `24`, `24ms`, `1.5s`, `500us`.
pub fn parse_ms(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let ms = match t.parse::<f64>() {
        Ok(v) => v,
        Err(_) => rtcheck_base::units::parse_duration(t)?.as_secs_f64() * 1000.0,
    };
    check_ms(ms).map_err(|e| format!("`{t}`: {e}"))
}

fn check_ms(ms: f64) -> Result<f64, String> {
    if !ms.is_finite() || ms < 0.0 {
        return Err("must be a time >= 0".into());
    }
    if ms > MAX_MS {
        return Err("at most 10 minutes".into());
    }
    Ok(ms)
}

/// `NAME:RTT[:SERVER_TIME]`, e.g. `db:24ms:5ms`.
pub fn parse_flag(spec: &str) -> Result<Hop, String> {
    let parts: Vec<&str> = spec.split(':').collect();
    if !(2..=3).contains(&parts.len()) || parts[0].trim().is_empty() {
        return Err(format!(
            "--hop `{spec}`: expected NAME:RTT[:SERVER_TIME], e.g. db:24ms:5ms"
        ));
    }
    let field = |i: usize, what: &str| -> Result<f64, String> {
        parts
            .get(i)
            .map_or(Ok(0.0), |p| parse_ms(p))
            .map_err(|e| format!("--hop `{spec}`: {what} {e}"))
    };
    Ok(Hop {
        name: parts[0].trim().to_string(),
        rtt_ms: field(1, "RTT")?,
        server_time_ms: field(2, "server time")?,
        p99_ms: None,
        reuse: false,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    hops: Vec<RawHop>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Time {
    Ms(f64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHop {
    name: String,
    rtt: Time,
    #[serde(default)]
    server_time: Option<Time>,
    #[serde(default)]
    p99: Option<Time>,
    #[serde(default)]
    reuse: bool,
}

fn time(t: &Time) -> Result<f64, String> {
    match t {
        Time::Ms(v) => check_ms(*v),
        Time::Text(s) => parse_ms(s),
    }
}

/// Line (1-based) of the `i`-th list item under `hops:`, for errors found after parsing.
fn item_line(text: &str, i: usize) -> Option<usize> {
    let start = text
        .lines()
        .position(|l| l.trim_start().starts_with("hops:"))?;
    text.lines()
        .enumerate()
        .skip(start + 1)
        .filter(|(_, l)| l.trim_start().starts_with("- "))
        .nth(i)
        .map(|(n, _)| n + 1)
}

/// Parse a hops YAML; errors name `origin`, the line and the field.
pub fn from_yaml(text: &str, origin: &str) -> Result<Vec<Hop>, String> {
    let f: File = serde_yaml::from_str(text).map_err(|e| {
        let msg = e.to_string();
        let msg = rtcheck_base::escape::bound_quotes(msg.split(" at line ").next().unwrap_or(&msg));
        let loc = e
            .location()
            .map(|l| format!(":{}:{}", l.line(), l.column()))
            .unwrap_or_default();
        format!("{origin}{loc}: {msg}")
    })?;
    let mut hops = Vec::with_capacity(f.hops.len());
    for (i, raw) in f.hops.iter().enumerate() {
        let at = |field: &str, e: String| {
            let line = item_line(text, i).map_or(String::new(), |l| format!(":{l}"));
            format!("{origin}{line}: hops[{i}].{field}: {e}")
        };
        if raw.name.trim().is_empty() {
            return Err(at("name", "must not be empty".into()));
        }
        let opt = |t: &Option<Time>, field: &str| -> Result<Option<f64>, String> {
            t.as_ref().map(time).transpose().map_err(|e| at(field, e))
        };
        let server_time_ms = opt(&raw.server_time, "server_time")?.unwrap_or(0.0);
        let p99_ms = opt(&raw.p99, "p99")?;
        if p99_ms.is_some_and(|p| p < server_time_ms) {
            return Err(at("p99", "must be >= server_time".into()));
        }
        hops.push(Hop {
            name: raw.name.trim().to_string(),
            rtt_ms: time(&raw.rtt).map_err(|e| at("rtt", e))?,
            server_time_ms,
            p99_ms,
            reuse: raw.reuse,
        });
    }
    check_count(&hops, origin)?;
    Ok(hops)
}

pub fn check_count(hops: &[Hop], origin: &str) -> Result<(), String> {
    if hops.is_empty() {
        return Err(format!(
            "{origin}: no hops (give --hop NAME:RTT or --hops FILE)"
        ));
    }
    if hops.len() > MAX_HOPS {
        return Err(format!("{origin}: {} hops, at most {MAX_HOPS}", hops.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags() {
        let h = parse_flag("db:24ms:5ms").unwrap();
        assert_eq!((h.rtt_ms, h.server_time_ms), (24.0, 5.0));
        let h = parse_flag("cache:0.5").unwrap();
        assert_eq!((h.rtt_ms, h.server_time_ms), (0.5, 0.0));
        assert!(parse_flag("db").unwrap_err().contains("NAME:RTT"));
        assert!(parse_flag(":24").is_err());
        assert!(parse_flag("db:-3").unwrap_err().contains("RTT"));
        assert!(parse_flag("db:24:xyz").unwrap_err().contains("server time"));
        assert!(parse_flag("db:1h").unwrap_err().contains("10 minutes"));
    }

    #[test]
    fn yaml_file() {
        let y = "hops:\n  - {name: db, rtt: 24ms, server_time: 5, p99: 80ms, reuse: true}\n  - name: api\n    rtt: 24\n";
        let h = from_yaml(y, "h.yaml").unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].p99_ms, Some(80.0));
        assert!(h[0].reuse && !h[1].reuse);
        assert_eq!(h[1].server_time_ms, 0.0);
    }

    #[test]
    fn yaml_errors_name_file_line_and_field() {
        let e = from_yaml(
            "hops:\n  - {name: a, rtt: 1}\n  - {name: b, rtt: soon}\n",
            "h.yaml",
        )
        .unwrap_err();
        assert!(e.starts_with("h.yaml:3: hops[1].rtt:"), "{e}");
        let e = from_yaml("hops:\n  - {name: a, rtt: 1, colour: red}\n", "h.yaml").unwrap_err();
        assert!(e.starts_with("h.yaml:2:") && e.contains("colour"), "{e}");
        let e = from_yaml("hops: []\n", "h.yaml").unwrap_err();
        assert!(e.contains("no hops"), "{e}");
        let e = from_yaml(
            "hops:\n  - {name: a, rtt: 1, server_time: 9, p99: 2}\n",
            "h.yaml",
        )
        .unwrap_err();
        assert!(e.contains("hops[0].p99"), "{e}");
        assert!(from_yaml("{{{", "h.yaml")
            .unwrap_err()
            .starts_with("h.yaml"));
    }
}
