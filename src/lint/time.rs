//! Each product's time syntax, parsed once, with the product's own limits. The limits were
//! read off the real binaries (nginx 1.22 `nginx -t`, HAProxy 2.6 `haproxy -c`), so a value
//! the proxy refuses to load is reported as such, never taken as a long timeout:
//! - nginx (`proxy_read_timeout` and the other msec directives): integer NUMBER UNIT terms,
//!   units `w d h m s ms` each once and largest first (a bare number is seconds, `y`/`M`
//!   and fractions are invalid); the total is at most 2^63-1 ms (`9223372036854775s` loads,
//!   `9223372036854776s` is "invalid value").
//! - HAProxy (`timeout ...`): one integer with an optional unit `us ms s m h d` (bare:
//!   milliseconds); at most 2^31-1 ms (`24d` loads, `25d`, `30d`, `1e9s` and `1.5s` do
//!   not; `10s5ms` loads as `10s` with a warning that newer versions refuse it).
//! - Caddy (Go's `time.ParseDuration` plus `d`): fractions allowed, at most 2^63-1 ns.
//!
//! Arithmetic is on u128 nanoseconds with checked operations; an accepted value beyond
//! ten years is taken as ten years (`MAX_DURATION`), which is "no bound" for every rule.
use rtcheck_base::units::MAX_DURATION;
use std::time::Duration;

/// Why a value is not a time the product takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeError {
    /// Not in the product's syntax.
    Syntax,
    /// Over the product's limit: the text says the limit.
    OverLimit(&'static str),
    /// A valid time followed by more (`10s5ms`): HAProxy 2.6 reads the first part and
    /// warns "will be reported as an error in next versions".
    Trailing,
}

impl TimeError {
    /// The reason, naming the product's own check (`nginx -t`, `haproxy -c`).
    pub fn why(&self, product: &str) -> String {
        match self {
            TimeError::Syntax => {
                format!("not in {product}'s time syntax: {product} refuses to load it")
            }
            TimeError::OverLimit(limit) => {
                format!("over {product}'s limit ({limit}): {product} refuses to load it")
            }
            TimeError::Trailing => format!(
                "one time with text after it: {product} 2.6 reads the first part and warns, newer versions refuse to load it"
            ),
        }
    }
}

const MS: u128 = 1_000_000;
const S: u128 = 1_000 * MS;

fn unit_ns(u: &str) -> Option<u128> {
    Some(match u {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => MS,
        "s" => S,
        "m" => 60 * S,
        "h" => 3_600 * S,
        "d" => 86_400 * S,
        "w" => 7 * 86_400 * S,
        _ => return None,
    })
}

/// One NUMBER UNIT term: the number (integer part, fraction digits) and the unit text.
struct Term<'a> {
    int: Option<u128>,
    frac: &'a str,
    unit: &'a str,
}

/// Split into terms; None when a term has no digits. An integer part too large for u128
/// is `int: None` (over every limit).
fn terms(s: &str) -> Option<Vec<Term<'_>>> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let n_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let int_text = &rest[..n_end];
        rest = &rest[n_end..];
        let mut frac = "";
        if let Some(r) = rest.strip_prefix('.') {
            let f_end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            frac = &r[..f_end];
            rest = &r[f_end..];
        }
        if int_text.is_empty() && frac.is_empty() {
            return None;
        }
        let u_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..u_end];
        rest = &rest[u_end..];
        let int = if int_text.is_empty() {
            Some(0)
        } else {
            int_text.parse().ok()
        };
        out.push(Term { int, frac, unit });
    }
    Some(out)
}

/// A term in nanoseconds (None: overflow), the fraction truncated to nanoseconds.
fn term_ns(t: &Term, scale: u128) -> Option<u128> {
    let mut ns = t.int?.checked_mul(scale)?;
    let mut place = scale;
    for d in t.frac.bytes().take(30) {
        place /= 10;
        ns = ns.checked_add(u128::from(d - b'0') * place)?;
    }
    Some(ns)
}

fn clamp(ns: u128) -> Duration {
    let max = MAX_DURATION.as_nanos();
    Duration::from_nanos(ns.min(max) as u64)
}

/// An nginx time ("60", "60s", "1h30m", "500ms").
pub fn nginx(s: &str) -> Result<Duration, TimeError> {
    const LIMIT: u128 = i64::MAX as u128 * MS;
    // Not trimmed: nginx -t refuses " 60s"; a space may only follow a unit ("1h 30m").
    let ts = terms(s)
        .filter(|t| !t.is_empty())
        .ok_or(TimeError::Syntax)?;
    let mut total: u128 = 0;
    let mut last = u128::MAX;
    for (i, t) in ts.iter().enumerate() {
        let unit = t.unit.trim_end_matches(' ');
        if unit.is_empty() && !t.unit.is_empty() {
            return Err(TimeError::Syntax);
        }
        let scale = match unit {
            "" if i + 1 == ts.len() => S,
            "ms" | "s" | "m" | "h" | "d" | "w" => unit_ns(unit).ok_or(TimeError::Syntax)?,
            _ => return Err(TimeError::Syntax),
        };
        if !t.frac.is_empty() || scale >= last {
            return Err(TimeError::Syntax);
        }
        last = scale;
        total = term_ns(t, scale)
            .and_then(|n| total.checked_add(n))
            .unwrap_or(u128::MAX);
    }
    if total > LIMIT {
        return Err(TimeError::OverLimit("2^63-1 ms, 9223372036854775s"));
    }
    Ok(clamp(total))
}

/// A HAProxy time: one number, a bare number is milliseconds.
pub fn haproxy(s: &str) -> Result<Duration, TimeError> {
    const LIMIT: u128 = i32::MAX as u128 * MS;
    // Not trimmed: haproxy -c refuses " 5s" (unexpected character ' ').
    let ts = terms(s).ok_or(TimeError::Syntax)?;
    let Some(t) = ts.first() else {
        return Err(TimeError::Syntax);
    };
    let scale = match t.unit {
        "" => MS,
        "us" | "ms" | "s" | "m" | "h" | "d" => unit_ns(t.unit).ok_or(TimeError::Syntax)?,
        _ => return Err(TimeError::Syntax),
    };
    if !t.frac.is_empty() {
        return Err(TimeError::Syntax);
    }
    match term_ns(t, scale) {
        Some(ns) if ns <= LIMIT && ts.len() > 1 && !t.unit.is_empty() => Err(TimeError::Trailing),
        Some(ns) if ns <= LIMIT && ts.len() == 1 => Ok(clamp(ns)),
        Some(ns) if ns <= LIMIT => Err(TimeError::Syntax),
        _ => Err(TimeError::OverLimit("2^31-1 ms, about 24.8 days")),
    }
}

/// A Caddy duration (Go's syntax plus `d`); a bare number is nanoseconds (JSON), `-1`
/// means "at once" (flush_interval).
pub fn caddy(s: &str) -> Result<Duration, TimeError> {
    const LIMIT: u128 = i64::MAX as u128;
    let s = s.trim();
    if s == "-1" {
        return Ok(Duration::ZERO);
    }
    let ts = terms(s)
        .filter(|t| !t.is_empty())
        .ok_or(TimeError::Syntax)?;
    let mut total: u128 = 0;
    for t in &ts {
        let scale = match t.unit {
            "" => 1,
            u => unit_ns(u).filter(|_| u != "w").ok_or(TimeError::Syntax)?,
        };
        total = term_ns(t, scale)
            .and_then(|n| total.checked_add(n))
            .unwrap_or(u128::MAX);
    }
    if total > LIMIT {
        return Err(TimeError::OverLimit("2^63-1 ns, about 292 years"));
    }
    Ok(clamp(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Result<Duration, TimeError> {
        Ok(Duration::from_secs(n))
    }

    #[test]
    fn nginx_takes_what_nginx_t_takes() {
        assert_eq!(nginx("60"), secs(60));
        assert_eq!(nginx("1h30m"), secs(5400));
        assert_eq!(nginx("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(nginx("1w"), secs(7 * 86_400));
        assert_eq!(nginx("1h 30m"), secs(5400));
        assert_eq!(nginx("1h  30"), secs(3630));
        // Accepted by nginx -t, beyond ten years: no bound for any rule.
        assert_eq!(nginx("9223372036854775s"), Ok(MAX_DURATION));
        for over in [
            "9223372036854776s",
            "9223372036854775807",
            "99999999999999999999999999999999999999999s",
        ] {
            assert!(
                matches!(nginx(over), Err(TimeError::OverLimit(_))),
                "{over}"
            );
        }
        for bad in [
            "1.5s", "1y", "1M", "30s1h", "1d1d", "x", "", "s", " 60s", "1H", "60S", "6 0s",
        ] {
            assert_eq!(nginx(bad), Err(TimeError::Syntax), "{bad}");
        }
    }

    #[test]
    fn haproxy_takes_what_haproxy_c_takes() {
        assert_eq!(haproxy("5000"), secs(5));
        assert_eq!(haproxy("30s"), secs(30));
        assert_eq!(haproxy("24d"), secs(24 * 86_400));
        assert_eq!(
            haproxy("2147483647"),
            Ok(Duration::from_millis(2_147_483_647))
        );
        for over in [
            "25d",
            "30d",
            "2147483648",
            "2147484s",
            "597h",
            "99999999999999999999999999999999999999999d",
        ] {
            assert!(
                matches!(haproxy(over), Err(TimeError::OverLimit(_))),
                "{over}"
            );
        }
        assert_eq!(haproxy("10s5ms"), Err(TimeError::Trailing));
        for bad in ["1e9s", "1.5s", "1w", "", "x", "1S", "10M", " 5s"] {
            assert_eq!(haproxy(bad), Err(TimeError::Syntax), "{bad}");
        }
    }

    #[test]
    fn caddy_durations() {
        assert_eq!(caddy("-1"), Ok(Duration::ZERO));
        assert_eq!(caddy("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(caddy("1.5h"), secs(5400));
        assert_eq!(caddy("1d2h"), secs(26 * 3600));
        assert_eq!(caddy("1000000"), Ok(Duration::from_millis(1)));
        assert!(matches!(caddy("106752d"), Err(TimeError::OverLimit(_))));
        assert_eq!(caddy("2w"), Err(TimeError::Syntax));
    }
}
