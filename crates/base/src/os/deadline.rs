//! A deadline shared by a whole run, checked together with Ctrl-C in every loop.
use super::signal;
use anyhow::bail;
use std::time::{Duration, Instant};

/// A deadline shared by the whole run (`--timeout`), and a per-step slice of it.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    pub deadline: Instant,
}

impl Deadline {
    pub fn new(total: Duration) -> Deadline {
        Deadline {
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
    /// A shorter deadline ending at `now + d` or the overall deadline, whichever is first.
    pub fn within(&self, d: Duration) -> Deadline {
        Deadline {
            deadline: self.deadline.min(Instant::now() + d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_expires() {
        let b = Deadline::new(Duration::from_millis(0));
        assert!(b.check("x").is_err());
        let b = Deadline::new(Duration::from_secs(60));
        assert!(b.check("x").is_ok());
        assert!(b.within(Duration::from_secs(1)).remaining() <= Duration::from_secs(1));
    }
}
