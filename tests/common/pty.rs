//! Typing into a prompt on a pseudo-terminal: wait for the prompt's text, then for the
//! terminal to leave line mode, then send the keys (never a fixed sleep).
use expectrl::Session;
use std::time::{Duration, Instant};

/// Wait for `prompt` to be shown and the terminal to be raw, then type `keys`.
pub fn answer(s: &mut Session, prompt: &str, keys: &str) {
    s.expect(prompt)
        .unwrap_or_else(|e| panic!("prompt `{prompt}` not shown: {e}"));
    wait_for_raw_mode(s);
    s.send(keys).unwrap();
}

/// Keys typed before the prompt switches the terminal to raw mode would be line-buffered
/// (and a DEL would be the line discipline's erase): wait until the pty leaves canonical
/// mode (the master reads the slave's termios on Linux), bounded; a prompt that reads in
/// line mode gets its keys after the bound.
pub fn wait_for_raw_mode(s: &Session) {
    use std::os::fd::AsRawFd;
    let pty = s.get_process().get_raw_handle().expect("pty handle");
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        // SAFETY: tcgetattr fills a plain C struct from an open descriptor.
        let raw = unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            libc::tcgetattr(pty.as_raw_fd(), &mut t) == 0 && t.c_lflag & libc::ICANON == 0
        };
        if raw {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
