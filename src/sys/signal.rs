//! Ctrl-C and SIGTERM. Experiments (verify, bench) install one handler that sets a flag and
//! query it in every loop, so child guards run on the normal return path. The interactive
//! prompts use their own handler: they restore the cursor and exit at once.
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
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

/// `Err(msg)` once Ctrl-C or SIGTERM arrived.
pub fn check_interrupted(msg: &str) -> anyhow::Result<()> {
    if interrupted() {
        anyhow::bail!("{msg}");
    }
    Ok(())
}

/// Ctrl-C during a prompt: dialoguer may have hidden the cursor, so show it again and exit
/// 130 (128 + SIGINT) without saving anything. Only async-signal-safe calls in the handler.
pub fn exit_on_sigint_showing_cursor() {
    extern "C" fn on_sigint(_: libc::c_int) {
        const SHOW_CURSOR: &[u8] = b"\x1b[?25h\n";
        // SAFETY: write(2) and _exit(2) are async-signal-safe.
        unsafe {
            libc::write(2, SHOW_CURSOR.as_ptr().cast(), SHOW_CURSOR.len());
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
