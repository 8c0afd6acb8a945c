//! `--reconnect`: how the rehearsal's clients come back, the way the user's clients do.
//! Pure: the delay before each attempt, given the attempt number, a random draw and the
//! server's SSE `retry:`.
//!
//! - `fixed:1s`: every attempt after the same delay (many hand-written clients).
//! - `exp:500ms..30s`: 500 ms, 1 s, 2 s ... capped at 30 s (reconnecting-websocket,
//!   socket.io without randomisation).
//! - `exp:500ms..30s+jitter`: the same ceiling, each delay drawn uniformly from 0 up to it
//!   ("full jitter").
//! - `eventsource`: the browser's EventSource: the server's last `retry:` (else 3 s,
//!   Chromium's default) before every attempt, no backoff; a response other than 200
//!   ends it for good (the spec's "fail the connection": no further attempt).
use serde::Serialize;
use std::time::Duration;

/// Chromium's EventSource reconnection time when the server sent no `retry:`.
pub const EVENTSOURCE_DEFAULT: Duration = Duration::from_secs(3);

/// The policies of `--compare-reconnect`, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policies(pub Vec<Reconnect>);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Reconnect {
    Fixed {
        delay_ms: u64,
    },
    Exp {
        min_ms: u64,
        max_ms: u64,
        jitter: bool,
    },
    Eventsource,
}

impl Reconnect {
    /// Parse one policy (the clap value parser: an error is exit 2).
    pub fn parse(s: &str) -> Result<Reconnect, String> {
        let t = s.trim();
        let dur = |d: &str| -> Result<u64, String> {
            rtcheck_base::units::parse_duration(d.trim())
                .map(|d| d.as_millis() as u64)
                .map_err(|e| format!("--reconnect {t}: {e}"))
        };
        if t == "eventsource" {
            return Ok(Reconnect::Eventsource);
        }
        if let Some(d) = t.strip_prefix("fixed:") {
            return Ok(Reconnect::Fixed { delay_ms: dur(d)? });
        }
        if let Some(r) = t.strip_prefix("exp:") {
            let (r, jitter) = match r.strip_suffix("+jitter") {
                Some(r) => (r, true),
                None => (r, false),
            };
            let (a, b) = r.split_once("..").ok_or_else(|| {
                format!("--reconnect {t}: expected exp:MIN..MAX, e.g. exp:500ms..30s")
            })?;
            let (min_ms, max_ms) = (dur(a)?, dur(b)?);
            if min_ms == 0 || max_ms < min_ms {
                return Err(format!(
                    "--reconnect {t}: MIN must be above 0 and at most MAX"
                ));
            }
            return Ok(Reconnect::Exp {
                min_ms,
                max_ms,
                jitter,
            });
        }
        Err(format!(
            "--reconnect {t}: expected fixed:1s, exp:500ms..30s, exp:500ms..30s+jitter or eventsource"
        ))
    }

    /// `A,B` of `--compare-reconnect` (at least two).
    pub fn parse_list(s: &str) -> Result<Policies, String> {
        let v = s
            .split(',')
            .map(Reconnect::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if v.len() < 2 {
            return Err(format!(
                "--compare-reconnect {s}: give two policies or more, e.g. fixed:1s,exp:500ms..30s+jitter"
            ));
        }
        Ok(Policies(v))
    }

    /// The name as the flag takes it.
    pub fn name(&self) -> String {
        let ms = |v: u64| rtcheck_base::units::fmt_duration(Duration::from_millis(v));
        match *self {
            Reconnect::Fixed { delay_ms } => format!("fixed:{}", ms(delay_ms)),
            Reconnect::Exp {
                min_ms,
                max_ms,
                jitter,
            } => format!(
                "exp:{}..{}{}",
                ms(min_ms),
                ms(max_ms),
                if jitter { "+jitter" } else { "" }
            ),
            Reconnect::Eventsource => "eventsource".into(),
        }
    }

    pub fn jittered(&self) -> bool {
        matches!(self, Reconnect::Exp { jitter: true, .. })
    }

    /// The wait before attempt `attempt` (0: the first after the drop). `draw` in [0, 1)
    /// (the jitter), `retry_ms` the server's last SSE `retry:`.
    pub fn delay(&self, attempt: u32, draw: f64, retry_ms: Option<u64>) -> Duration {
        let ms = match *self {
            Reconnect::Fixed { delay_ms } => delay_ms,
            Reconnect::Exp {
                min_ms,
                max_ms,
                jitter,
            } => {
                let ceil = min_ms.saturating_mul(1u64 << attempt.min(40)).min(max_ms);
                match jitter {
                    true => (ceil as f64 * draw.clamp(0.0, 1.0)) as u64,
                    false => ceil,
                }
            }
            Reconnect::Eventsource => retry_ms.unwrap_or(EVENTSOURCE_DEFAULT.as_millis() as u64),
        };
        Duration::from_millis(ms)
    }

    /// Whether an HTTP status other than 200 (or a failed WebSocket upgrade) ends the
    /// client for good: EventSource's rule.
    pub fn gives_up_on_status(&self) -> bool {
        matches!(self, Reconnect::Eventsource)
    }
}

/// A draw in [0, 1) from the kernel's getrandom, for jitter (no crate for one number).
pub fn draw() -> f64 {
    let mut b = [0u8; 8];
    // SAFETY: b is a valid 8-byte buffer.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != 8 {
        return 0.5;
    }
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_name_themselves_back() {
        for s in [
            "fixed:1s",
            "exp:500ms..30s",
            "exp:500ms..30s+jitter",
            "eventsource",
        ] {
            assert_eq!(Reconnect::parse(s).unwrap().name(), s);
        }
        assert!(Reconnect::parse("exp:30s..1s").is_err());
        assert!(Reconnect::parse("linear:1s")
            .unwrap_err()
            .contains("expected"));
        assert!(Reconnect::parse_list("fixed:1s").is_err());
        assert_eq!(
            Reconnect::parse_list("fixed:1s,exp:1s..30s+jitter")
                .unwrap()
                .0
                .len(),
            2
        );
    }

    #[test]
    fn delays_double_to_the_cap_and_jitter_draws_below_the_ceiling() {
        let e = Reconnect::parse("exp:500ms..30s").unwrap();
        let ms = |a| e.delay(a, 0.9, None).as_millis();
        assert_eq!(
            (ms(0), ms(1), ms(2), ms(6), ms(60)),
            (500, 1000, 2000, 30000, 30000)
        );
        let j = Reconnect::parse("exp:500ms..30s+jitter").unwrap();
        assert_eq!(j.delay(1, 0.5, None).as_millis(), 500);
        assert_eq!(j.delay(0, 0.0, None).as_millis(), 0);
        let f = Reconnect::parse("fixed:1s").unwrap();
        assert_eq!(f.delay(9, 0.1, Some(50)).as_millis(), 1000);
        let es = Reconnect::Eventsource;
        assert_eq!(es.delay(0, 0.3, None), EVENTSOURCE_DEFAULT);
        assert_eq!(es.delay(5, 0.3, Some(250)).as_millis(), 250);
        assert!(es.gives_up_on_status() && !f.gives_up_on_status());
        let d = draw();
        assert!((0.0..1.0).contains(&d));
    }
}
