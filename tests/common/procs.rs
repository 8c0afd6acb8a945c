//! The processes a test started: their children (read from /proc), whether one still
//! runs, and Ctrl-C sent the way a terminal or a parent sends it, with a bounded wait.
use std::process::{Child, Output};
use std::time::{Duration, Instant};

/// Direct children of `pid` (field 4 of /proc/PID/stat, after the `(comm)`, is the ppid).
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        if after.split_whitespace().nth(1).and_then(|s| s.parse().ok()) == Some(pid) {
            out.push(p);
        }
    }
    out
}

/// A process's command line, NUL-separated arguments joined by spaces; None when it
/// cannot be read or is empty (a kernel thread, a zombie, a process gone).
pub fn cmdline(pid: u32) -> Option<String> {
    let c = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let s = String::from_utf8_lossy(&c).replace('\0', " ");
    let s = s.trim_end().to_string();
    (!s.is_empty()).then_some(s)
}

/// `pid`'s command line once its exec is done: a forked child shows its parent's command
/// line until execve returns, so one read can see the parent's (with whatever the parent
/// had on argv) or nothing. Polls until the command line is there and differs from the
/// parent's; None if the process ends first or after `limit`.
pub fn exec_cmdline(pid: u32, parent: u32, limit: Duration) -> Option<String> {
    let before = cmdline(parent);
    let until = Instant::now() + limit;
    loop {
        match cmdline(pid) {
            Some(c) if Some(&c) != before.as_ref() => return Some(c),
            _ if !alive(pid) || Instant::now() >= until => return None,
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Running (a zombie counts as gone: it has exited, only its entry is left to reap).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
        .unwrap_or(false)
}

/// Whether `pid` ended within `limit` (polled: a child killed by its parent's guard may
/// still be on its way out when the parent's own exit is seen).
pub fn gone_within(pid: u32, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    while alive(pid) {
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Wait until `child` has at least `n` children; panics with its stderr if it exits first,
/// or after `limit`.
pub fn wait_children(child: &mut Child, n: usize, limit: Duration) -> Vec<u32> {
    let until = Instant::now() + limit;
    loop {
        let c = children_of(child.id());
        if c.len() >= n {
            return c;
        }
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("exited early ({st}): {err}");
        }
        assert!(Instant::now() < until, "{n} child process(es) not started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGINT, to the child alone (its parent's guards must stop its children) or to its
/// process group (`group`: a terminal's Ctrl-C; spawn it with `process_group(0)`), then
/// its output once it exits, within `limit`.
pub fn sigint(child: Child, group: bool, limit: Duration) -> Output {
    stop_with(child, nix::sys::signal::Signal::SIGINT, group, limit)
}

/// [`sigint`] with another signal (SIGTERM: what a service manager sends).
pub fn stop_with(
    mut child: Child,
    sig: nix::sys::signal::Signal,
    group: bool,
    limit: Duration,
) -> Output {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    if group {
        nix::sys::signal::killpg(pid, sig).unwrap();
    } else {
        nix::sys::signal::kill(pid, sig).unwrap();
    }
    let until = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= until {
            let _ = child.kill();
            panic!("did not stop within {limit:?} after {sig}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}
