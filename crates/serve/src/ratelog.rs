//! Rate-limited log lines (pure): the first failure of a series is printed at once, then at
//! most one line per interval saying how many were left out, so a failure repeating 20
//! times a second (a Redis refusing AUTH, accept at the fd limit) is one line per
//! interval, not a flood.
use std::time::{Duration, Instant};

/// How often a repeating failure may be logged.
pub const EVERY: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct RateLog {
    every: Duration,
    last: Option<Instant>,
    left_out: u64,
}

impl RateLog {
    pub const fn new(every: Duration) -> RateLog {
        RateLog {
            every,
            last: None,
            left_out: 0,
        }
    }

    /// One occurrence at `now`: Some(left out since the last line) when a line is due.
    pub fn hit(&mut self, now: Instant) -> Option<u64> {
        match self.last {
            Some(t) if now.duration_since(t) < self.every => {
                self.left_out += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.left_out))
            }
        }
    }

    /// The series ended (a success): the next failure is printed at once.
    pub fn reset(&mut self) {
        self.last = None;
        self.left_out = 0;
    }

    /// What a due line adds: nothing, or how many like it were left out.
    pub fn suffix(&self, left_out: u64) -> String {
        match left_out {
            0 => String::new(),
            n => format!(
                " ({n} more like it in the last {})",
                rtcheck_base::units::fmt_duration(self.every)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_at_once_then_one_line_per_interval_with_a_count() {
        let mut r = RateLog::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(r.hit(t0), Some(0));
        // 20 a second for 10 s: all left out ...
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let printed = (1..200).filter_map(|i| r.hit(ms(i * 50))).count();
        assert_eq!(printed, 0);
        // ... and counted on the next line.
        assert_eq!(r.hit(ms(10_000)), Some(199));
        assert_eq!(r.suffix(199), " (199 more like it in the last 10s)");
        assert_eq!(r.suffix(0), "");
        r.reset();
        assert_eq!(r.hit(ms(10_001)), Some(0), "after a success: at once");
    }
}
