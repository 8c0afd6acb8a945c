//! Progress of a probe run on a terminal (indicatif): one line per URL being probed (URLs
//! run at once), each with the elapsed part of its watch and what it has seen so far.
//! Quiet when stderr is not a terminal (CI, pipes).
use super::session::{Progress, StreamObs};
use std::time::Duration;

/// What was seen comes first, the URL last: a narrow terminal cuts the URL's tail, never
/// the counts.
const TEMPLATE: &str = "{spinner} {bar:10} {wide_msg}";

fn terminal(enabled: bool) -> bool {
    use std::io::IsTerminal;
    enabled && std::io::stderr().is_terminal()
}

fn style() -> indicatif::ProgressStyle {
    indicatif::ProgressStyle::with_template(TEMPLATE)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
}

/// One line per URL, on a terminal only.
pub struct Bars(Option<indicatif::MultiProgress>);

impl Bars {
    pub fn new(enabled: bool) -> Bars {
        Bars(terminal(enabled).then(indicatif::MultiProgress::new))
    }

    /// The line of one URL (its redacted form), from now until its `finish`.
    pub fn add(&self, url: &str) -> Bar {
        let Some(m) = &self.0 else {
            return Bar(None);
        };
        let b = m.add(indicatif::ProgressBar::new(1000));
        b.set_style(style());
        b.set_prefix(url.to_string());
        b.set_message(format!("connecting  {url}"));
        b.enable_steady_tick(Duration::from_millis(250));
        Bar(Some(b))
    }

    pub fn finish(&self) {
        if let Some(m) = &self.0 {
            let _ = m.clear();
        }
    }
}

/// Elapsed of the watch and what was seen, on a terminal only.
pub struct Bar(Option<indicatif::ProgressBar>);

impl Bar {
    pub fn new(enabled: bool) -> Bar {
        if !terminal(enabled) {
            return Bar(None);
        }
        let b = indicatif::ProgressBar::new(1000);
        b.set_style(style());
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
                "holding {:.0}/{:.0} s: {} event(s), {} heartbeat(s), silence {}  {}",
                elapsed.as_secs_f64(),
                window.as_secs_f64(),
                s.events.len(),
                s.heartbeats_ms.len(),
                super::fmt_s(s.longest_silence_ms().max(0.0)),
                b.prefix()
            ));
        }
    }
}
