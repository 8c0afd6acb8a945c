//! Progress of the idle test on a terminal (indicatif): the elapsed part of the window
//! and what has been seen so far. Quiet when stderr is not a terminal (CI, pipes).
use super::session::{Progress, StreamObs};
use std::time::Duration;

/// Elapsed of the watch and what was seen, on a terminal only.
pub struct Bar(Option<indicatif::ProgressBar>);

impl Bar {
    pub fn new(enabled: bool) -> Bar {
        use std::io::IsTerminal;
        if !enabled || !std::io::stderr().is_terminal() {
            return Bar(None);
        }
        let b = indicatif::ProgressBar::new(1000);
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {bar:20} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Bar(Some(b))
    }
    pub fn label(&self, what: &str) {
        if let Some(b) = &self.0 {
            b.set_position(0);
            b.set_message(what.to_string());
        }
    }
    pub fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

impl Progress for Bar {
    fn update(&self, elapsed: Duration, window: Duration, s: &StreamObs) {
        if let Some(b) = &self.0 {
            let frac = elapsed.as_secs_f64() / window.as_secs_f64().max(1e-9);
            b.set_position((frac.min(1.0) * 1000.0) as u64);
            b.set_message(format!(
                "holding {:.0}/{:.0} s: {} event(s), {} heartbeat(s), longest silence {}",
                elapsed.as_secs_f64(),
                window.as_secs_f64(),
                s.events.len(),
                s.heartbeats_ms.len(),
                super::fmt_s(s.longest_silence_ms().max(0.0))
            ));
        }
    }
}
