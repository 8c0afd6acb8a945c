//! The exit codes, named once (README "Exit codes"): 0 clean; 1 a finding at or above
//! `--fail-on` or a measurement that is not valid; 2 bad input or an error (one line on
//! stderr); 128 + the signal when interrupted (130 Ctrl-C, 143 SIGTERM).
use crate::findings::Outcome;
use std::process::ExitCode;

/// 1: a finding at or above `--fail-on`, or a crossed threshold (the report says which).
pub fn findings() -> ExitCode {
    ExitCode::from(1)
}

/// 1: a measurement that is not valid (the run could not measure what it set out to).
pub fn invalid() -> ExitCode {
    ExitCode::from(1)
}

/// 2: bad input or an error; the caller has printed its one line.
pub fn usage() -> ExitCode {
    ExitCode::from(2)
}

/// 128 + the signal that stopped the run: 130 after Ctrl-C, 143 after SIGTERM.
pub fn interrupted() -> ExitCode {
    ExitCode::from(rtcheck_base::os::signal::exit_code())
}

/// A run's exit: [`findings`] when one tripped, else [`invalid`] when a measurement was
/// not valid, else 0.
pub fn verdict(tripped: bool, invalid_measurement: bool) -> ExitCode {
    if tripped {
        findings()
    } else if invalid_measurement {
        invalid()
    } else {
        ExitCode::SUCCESS
    }
}

/// The exit of a judged report ([`crate::findings::outcome`]); `invalid_measurement` turns
/// a clean one into [`invalid`].
pub fn of_outcome(o: &Outcome, invalid_measurement: bool) -> ExitCode {
    match o {
        Outcome::Clean => verdict(false, invalid_measurement),
        Outcome::Tripped => findings(),
        Outcome::Unmeasured(_) => invalid(),
        Outcome::Nothing(_) => usage(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes() {
        assert_eq!(verdict(false, false), ExitCode::SUCCESS);
        assert_eq!(verdict(true, false), ExitCode::from(1));
        assert_eq!(verdict(false, true), ExitCode::from(1));
        assert_eq!(usage(), ExitCode::from(2));
        assert_eq!(of_outcome(&Outcome::Clean, false), ExitCode::SUCCESS);
        assert_eq!(of_outcome(&Outcome::Clean, true), ExitCode::from(1));
        assert_eq!(of_outcome(&Outcome::Tripped, false), ExitCode::from(1));
        assert_eq!(
            of_outcome(&Outcome::Unmeasured("x".into()), false),
            ExitCode::from(1)
        );
        assert_eq!(of_outcome(&Outcome::Nothing("x".into()), false), usage());
    }
}
