//! A deadline shared by a whole run, checked together with Ctrl-C in every loop.
use super::signal;
use anyhow::bail;
use std::time::{Duration, Instant};

/// A deadline shared by the whole run (`--timeout`), and a per-step slice of it.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub deadline: Instant,
}

impl Budget {
    pub fn new(total: Duration) -> Budget {
        Budget {
            deadline: Instant::now() + total,
        }
    }
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
    /// Error when Ctrl-C was pressed or the time is up: experiments call this in every loop.
    pub fn check(&self, what: &str) -> anyhow::Result<()> {
        if signal::interrupted() {
            bail!("{what}: interrupted (Ctrl-C); processes and sockets cleaned up");
        }
        if Instant::now() >= self.deadline {
            bail!("{what}: time budget (--timeout) exhausted");
        }
        Ok(())
    }
    /// A sub-budget ending at `now + d` or the overall deadline, whichever is first.
    pub fn within(&self, d: Duration) -> Budget {
        Budget {
            deadline: self.deadline.min(Instant::now() + d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_expires() {
        let b = Budget::new(Duration::from_millis(0));
        assert!(b.check("x").is_err());
        let b = Budget::new(Duration::from_secs(60));
        assert!(b.check("x").is_ok());
        assert!(b.within(Duration::from_secs(1)).remaining() <= Duration::from_secs(1));
    }
}
