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

/// A session whose every printed byte is kept as the test reads it, so the whole screen
/// can be checked afterwards (issue 27: no line reaches the terminal's edge, so the
/// terminal never splits a word).
pub struct Recorded {
    pub s: Session,
    pub seen: Vec<u8>,
    /// What the test typed (keys without control characters): the terminal wraps a long
    /// typed path, which is the user's line, not rtcheck's.
    pub typed: Vec<String>,
}

impl Recorded {
    pub fn new(s: Session) -> Recorded {
        Recorded {
            s,
            seen: Vec::new(),
            typed: Vec::new(),
        }
    }

    /// No line rtcheck drew is wider than `cols`, once what the test typed is taken out.
    pub fn assert_no_line_wider(&self, cols: usize) {
        let wide: Vec<String> = drawn_lines(&self.seen)
            .into_iter()
            .filter(|l| {
                let mut own = l.clone();
                for t in self.typed.iter().filter(|t| t.len() > 2) {
                    own = own.replace(t.as_str(), "");
                }
                own.chars().count() > cols
            })
            .collect();
        assert!(
            wide.is_empty(),
            "{} line(s) wider than {cols} columns, which the terminal splits:\n{}",
            wide.len(),
            wide.join("\n")
        );
    }

    fn keep(&mut self, c: &expectrl::Captures) {
        self.seen.extend_from_slice(c.before());
        for m in c.matches() {
            self.seen.extend_from_slice(m);
        }
    }

    /// Wait for `what`, keeping everything printed up to it.
    pub fn expect(&mut self, what: &str) {
        let c = self
            .s
            .expect(what)
            .unwrap_or_else(|e| panic!("`{what}` not shown: {e}\n{}", self.text()));
        self.keep(&c);
    }

    /// Wait for the regex `re`, keeping everything printed up to it; its first group.
    pub fn expect_group(&mut self, re: &str) -> String {
        let c = self
            .s
            .expect(expectrl::Regex(re))
            .unwrap_or_else(|e| panic!("`{re}` not shown: {e}\n{}", self.text()));
        self.keep(&c);
        String::from_utf8_lossy(c.get(1).expect("a group")).to_string()
    }

    /// [`answer`], recorded.
    pub fn answer(&mut self, prompt: &str, keys: &str) {
        self.expect(prompt);
        wait_for_raw_mode(&self.s);
        self.s.send(keys).unwrap();
        // The text typed, without the arrow keys (ESC [ X) and Enter.
        self.typed.push(drawn_lines(keys.as_bytes()).join(""));
    }

    /// Wait for the exit; returns its status code, everything printed kept.
    pub fn finish(&mut self) -> i32 {
        let c = self.s.expect(expectrl::Eof).expect("rtcheck exits");
        self.keep(&c);
        match self.s.get_process().wait().expect("exit status") {
            expectrl::WaitStatus::Exited(_, code) => code,
            other => panic!("not a normal exit: {other:?}\n{}", self.text()),
        }
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.seen).to_string()
    }
}

/// The lines the terminal drew, escape sequences removed: colours dropped, cursor moves
/// and erases (a prompt redrawn) taken as line breaks, `\r` too.
pub fn drawn_lines(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = vec![String::new()];
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    // Parameters up to the final byte (0x40..=0x7e).
                    let mut fin = 'm';
                    for p in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&p) {
                            fin = p;
                            break;
                        }
                    }
                    if fin != 'm' {
                        lines.push(String::new());
                    }
                } else {
                    chars.next();
                }
            }
            '\n' | '\r' => lines.push(String::new()),
            c if c.is_control() => {}
            c => lines.last_mut().unwrap().push(c),
        }
    }
    lines.retain(|l| !l.trim().is_empty());
    lines
}
