//! Ctrl-C and SIGTERM. Experiments (verify, bench) install one handler that sets a flag and
//! query it in every loop, so child guards run on the normal return path. The interactive
//! prompts use their own handler: they restore the cursor and exit at once.
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The first signal that arrived (its number decides the exit code).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// The exit code of a run stopped by a signal: 128 + its number, as a shell reports a
/// process killed by it (130 for Ctrl-C, 143 for SIGTERM).
pub fn exit_code() -> u8 {
    exit_code_for(SIGNAL.load(Ordering::SeqCst))
}

/// Pure: 128 + `sig`; SIGINT when none was recorded (an `Interrupted` raised by hand).
pub fn exit_code_for(sig: i32) -> u8 {
    let sig = if sig > 0 && sig < 128 {
        sig
    } else {
        libc::SIGINT
    };
    128 + sig as u8
}

/// SIGINT and SIGTERM set the flag [`interrupted`] reads. No SA_RESTART: a blocking call
/// returns EINTR and the loop sees the flag at once.
pub fn install_interrupt_handler() {
    let act = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        let _ = unsafe { sigaction(sig, &act) };
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Ctrl-C (or SIGTERM) stopped an experiment after its guards cleaned up; the message says
/// what was stopped. `app` exits [`exit_code`] on it: 130 after Ctrl-C, 143 after SIGTERM.
#[derive(Debug)]
pub struct Interrupted(pub &'static str);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Interrupted {}

/// `Err(Interrupted(msg))` once Ctrl-C or SIGTERM arrived.
pub fn check_interrupted(msg: &'static str) -> anyhow::Result<()> {
    if interrupted() {
        return Err(Interrupted(msg).into());
    }
    Ok(())
}

/// What Ctrl-C during a prompt says (`rtcheck: prompt interrupted; 3 answers saved to
/// FILE`); null until a walk sets it. Each message is leaked on purpose: the handler may be
/// reading the previous one, and a walk sets at most one per answer.
static SIGINT_MESSAGE: AtomicPtr<&'static str> = AtomicPtr::new(std::ptr::null_mut());

/// Set the line Ctrl-C prints during a prompt (without `rtcheck: ` and newline).
pub fn set_sigint_message(msg: &str) {
    let leaked: &'static str = Box::leak(msg.to_string().into_boxed_str());
    SIGINT_MESSAGE.store(Box::into_raw(Box::new(leaked)), Ordering::SeqCst);
}

/// The line set by [`set_sigint_message`], or the default.
pub fn sigint_message() -> &'static str {
    let p = SIGINT_MESSAGE.load(Ordering::SeqCst);
    if p.is_null() {
        "prompt interrupted; nothing saved"
    } else {
        // SAFETY: every non-null pointer stored is a leaked, never-freed Box.
        unsafe { *p }
    }
}

/// Ctrl-C during a prompt: dialoguer may have hidden the cursor, so show it again, say what
/// was saved ([`set_sigint_message`]) and exit 130 (128 + SIGINT). Only async-signal-safe
/// calls in the handler (atomic loads and write(2) of leaked, immutable bytes).
pub fn exit_on_sigint_showing_cursor() {
    extern "C" fn on_sigint(_: libc::c_int) {
        const SHOW_CURSOR: &[u8] = b"\x1b[?25h\nrtcheck: ";
        let msg = sigint_message().as_bytes();
        // SAFETY: write(2) and _exit(2) are async-signal-safe.
        unsafe {
            libc::write(2, SHOW_CURSOR.as_ptr().cast(), SHOW_CURSOR.len());
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::write(2, b"\n".as_ptr().cast(), 1);
            libc::_exit(130);
        }
    }
    let action = SigAction::new(
        SigHandler::Handler(on_sigint),
        SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: the handler only calls async-signal-safe functions.
    let _ = unsafe { sigaction(Signal::SIGINT, &action) };
}

#[cfg(test)]
mod tests {
    #[test]
    fn exit_code_is_128_plus_the_signal() {
        assert_eq!(super::exit_code_for(libc::SIGINT), 130);
        assert_eq!(super::exit_code_for(libc::SIGTERM), 143);
        assert_eq!(super::exit_code_for(0), 130);
    }
}
