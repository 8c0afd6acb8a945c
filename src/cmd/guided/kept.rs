//! What the guided run has kept, for the line Ctrl-C prints; shared by the run and its
//! offers (probe, review).
use rtcheck_base::os::signal::Interrupted;

/// What the guided run has saved so far: the line Ctrl-C prints (issue 27, item 10).
#[derive(Default)]
pub(super) struct Kept(Vec<String>);

impl Kept {
    /// Set the Ctrl-C line to what is kept now, and the handler that prints it (a probe
    /// installs its own; this takes the prompts back).
    pub(super) fn arm(&self) {
        crate::cmd::prompts::set_interrupt_line(&interrupted_line(&self.0));
        rtcheck_base::os::signal::exit_on_sigint_showing_cursor();
    }

    pub(super) fn saved(&mut self, what: String) {
        self.0.push(what);
        self.arm();
    }

    /// An interrupted experiment inside the run: its own line, then what the run kept.
    pub(super) fn stop(&self, e: anyhow::Error) -> anyhow::Error {
        let line = interrupted_line(&self.0);
        if e.to_string() != line {
            eprintln!("rtcheck: {}", rtcheck_base::escape::plain(&e.to_string()));
        }
        // Interrupted holds a &'static str; this runs once, as the run ends.
        Interrupted(Box::leak(line.into_boxed_str())).into()
    }
}

/// Pure: what Ctrl-C says, given what was saved.
fn interrupted_line(saved: &[String]) -> String {
    if saved.is_empty() {
        "guided run interrupted; nothing saved (run `rtcheck` again to start over)".into()
    } else {
        format!(
            "guided run interrupted; kept: {} (nothing else saved)",
            saved.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_c_says_what_the_run_kept() {
        assert!(interrupted_line(&[]).contains("nothing saved"));
        let kept = ["profile p.yaml".to_string(), "audit report a.html".into()];
        assert_eq!(
            interrupted_line(&kept),
            "guided run interrupted; kept: profile p.yaml, audit report a.html (nothing else saved)"
        );
    }
}
