//! The user's restart hook: `sh -c COMMAND` in its own process group, its stdout and
//! stderr captured (the last [`KEEP`] bytes), bounded by `--restart-timeout` (then the
//! whole group is killed). A hook that fails or overruns is a finding of its own.
use serde::Serialize;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes of the hook's output kept (its tail: where the error is).
pub const KEEP: usize = 4096;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookRun {
    /// The command as given (the user's own text; shown as is).
    pub command: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub took_ms: f64,
    /// stdout and stderr interleaved, the last 4 KiB.
    pub output: String,
    /// Exited 0 within the bound.
    pub ok: bool,
    /// Could not be started at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn tail(buf: &Mutex<Vec<u8>>) -> String {
    let b = buf.lock().unwrap_or_else(|e| e.into_inner());
    let from = b.len().saturating_sub(KEEP);
    rtcheck_base::escape::plain(&String::from_utf8_lossy(&b[from..])).into_owned()
}

/// The secrets in a restart command, never shown (in it or in its output): URL
/// passwords and secret query values, `NAME=VALUE` words whose name or value looks
/// secret (`TOKEN=...`, `--password=...`), and the word after a flag whose name does
/// (`--token X`); the word after `Bearer`, `Basic` or `Authorization:`, the password of
/// `-u`/`--user USER:PASS` and mysql's `-pSECRET`. Words are split on blanks: a quoted secret with spaces in it is not
/// found (write it in a variable the command reads).
pub fn secrets(command: &str) -> Vec<String> {
    let words: Vec<String> = command
        .split_whitespace()
        .map(|w| {
            w.trim_matches(['\'', '"', ';', '&', '|', '(', ')'])
                .to_string()
        })
        .collect();
    let mut out = rtcheck_base::redact::secrets_in_args(&words);
    let secret_name = |n: &str| {
        let n = n.trim_start_matches('-').to_ascii_lowercase();
        ["token", "secret", "pass", "auth", "key", "cred"]
            .iter()
            .any(|s| n.contains(s))
    };
    let next = |i: usize| words.get(i + 1).filter(|v| !v.is_empty()).cloned();
    for (i, w) in words.iter().enumerate() {
        let lower = w.to_ascii_lowercase();
        // `Authorization: Bearer TOKEN`, `Authorization: TOKEN`, `Bearer TOKEN`.
        if lower == "bearer"
            || lower == "basic"
            || lower == "token" && i > 0 && words[i - 1].eq_ignore_ascii_case("authorization:")
        {
            out.extend(next(i));
        } else if lower == "authorization:" {
            let scheme = words.get(i + 1).map(|v| v.to_ascii_lowercase());
            if !matches!(scheme.as_deref(), Some("bearer" | "basic" | "token")) {
                out.extend(next(i));
            }
        }
        // curl's `-u USER:PASS`, `--user USER:PASS`, `--user=USER:PASS`: the password.
        let user = match w.as_str() {
            "-u" | "--user" => next(i),
            _ => w.strip_prefix("--user=").map(str::to_string),
        };
        if let Some((_, pass)) = user.as_deref().and_then(|u| u.split_once(':')) {
            if !pass.is_empty() {
                out.push(pass.to_string());
            }
        }
        // mysql's `-pSECRET` (not find's -path, -perm, -print, -prune).
        if let Some(v) = w.strip_prefix("-p") {
            if !v.is_empty() && !["ath", "erm", "rint", "rint0", "rintf", "rune"].contains(&v) {
                out.push(v.to_string());
            }
        }
        match w.split_once('=').map(|(_, v)| v) {
            Some(v)
                if !v.is_empty() && !w.contains("://") && rtcheck_base::redact::secret_param(w) =>
            {
                out.push(v.to_string())
            }
            Some(_) => {}
            None if w.starts_with('-') && secret_name(w) && i + 1 < words.len() => {
                out.push(words[i + 1].clone())
            }
            None => {}
        }
    }
    out.retain(|s| !s.is_empty());
    out.sort();
    out.dedup();
    // Longest first: a secret inside another is masked with it.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out
}

/// `text` with every secret of the command masked: one of 4 characters or more
/// wherever it occurs, a shorter one only as a whole word (after a blank, `:`, `=` or
/// `-p`, before a non-alphanumeric), so that `-pab` loses `ab` and "table" keeps it.
fn scrub(text: &str, secrets: &[String]) -> String {
    let mut t = text.to_string();
    for s in secrets {
        if s.len() >= 4 {
            t = t.replace(s.as_str(), rtcheck_base::redact::MASK);
            continue;
        }
        let mut out = String::with_capacity(t.len());
        let mut rest = t.as_str();
        let mut before = String::new();
        while let Some(at) = rest.find(s.as_str()) {
            let (head, tail) = rest.split_at(at);
            before.push_str(head);
            let after = &tail[s.len()..];
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
            let starts = !word(before.chars().last()) || before.ends_with("-p");
            let ends = !word(after.chars().next());
            out.push_str(head);
            if starts && ends {
                out.push_str(rtcheck_base::redact::MASK);
            } else {
                out.push_str(s);
            }
            before.push_str(s);
            rest = after;
        }
        out.push_str(rest);
        t = out;
    }
    t
}

/// The running hook's process group, killed when any holder drops while the hook
/// still runs (an error, Ctrl-C, a panic): the group never outlives rtcheck's run.
/// Once the hook exited the slot is 0 and nothing is killed (a daemon it started, the
/// restarted server, stays).
#[derive(Debug, Clone, Default)]
pub struct Group(Arc<std::sync::atomic::AtomicI32>);

impl Group {
    fn set(&self, pgid: i32) {
        self.0.store(pgid, std::sync::atomic::Ordering::SeqCst);
    }

    /// SIGKILL to the group if the hook still runs; then nothing more to kill.
    pub fn kill(&self) {
        let pgid = self.0.swap(0, std::sync::atomic::Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill(2) on the hook's own process group.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Run `command` to its end or `limit`; the report's copy of the command and its output
/// have the command's secrets masked.
pub fn run(command: &str, limit: Duration) -> HookRun {
    run_in(command, limit, &Group::default())
}

/// [`run`] with the group's id in `group` while it runs (Ctrl-C kills it too).
pub fn run_in(command: &str, limit: Duration, group: &Group) -> HookRun {
    let hidden = secrets(command);
    let mut r = run_raw(command, limit, group);
    r.command = scrub(&r.command, &hidden);
    r.output = scrub(&r.output, &hidden);
    r.error = r.error.map(|e| scrub(&e, &hidden));
    r
}

fn run_raw(command: &str, limit: Duration, group: &Group) -> HookRun {
    let t0 = Instant::now();
    let buf = Arc::new(Mutex::new(Vec::new()));
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return HookRun {
                command: command.into(),
                exit_code: None,
                timed_out: false,
                took_ms: 0.0,
                output: String::new(),
                ok: false,
                error: Some(format!("sh -c: {e}")),
            }
        }
    };
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|mut r| {
        let buf = buf.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = r.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                let mut b = buf.lock().unwrap_or_else(|e| e.into_inner());
                b.extend_from_slice(&chunk[..n]);
                // Bounded: only the tail is kept.
                if b.len() > 4 * KEEP {
                    let cut = b.len() - KEEP;
                    b.drain(..cut);
                }
            }
        })
    })
    .collect();
    group.set(child.id() as i32);
    let (status, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(s)) => {
                group.set(0);
                break (Some(s), false);
            }
            Ok(None) if t0.elapsed() >= limit || rtcheck_base::os::signal::interrupted() => {
                group.kill();
                break (child.wait().ok(), t0.elapsed() >= limit);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => {
                group.kill();
                break (None, false);
            }
        }
    };
    // A daemon the hook started may hold the pipes open: read what came, never wait on it.
    let until = Instant::now() + Duration::from_millis(500);
    for r in readers {
        while !r.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let code = status.and_then(|s| s.code());
    HookRun {
        command: command.into(),
        exit_code: code,
        timed_out,
        took_ms: t0.elapsed().as_secs_f64() * 1000.0,
        output: tail(&buf),
        ok: !timed_out && code == Some(0),
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_hook_keeps_its_output_and_code() {
        let r = run(
            "echo restarting; echo boom >&2; exit 3",
            Duration::from_secs(20),
        );
        assert_eq!(r.exit_code, Some(3));
        assert!(!r.ok && !r.timed_out);
        assert!(
            r.output.contains("restarting") && r.output.contains("boom"),
            "{r:?}"
        );
    }

    #[test]
    fn secrets_in_the_command_are_masked_in_it_and_in_its_output() {
        let cmd = "echo deploying with s3cr3tTok; API_TOKEN=s3cr3tTok ./deploy --password hunter22 https://u:pw1234@h/x";
        let s = secrets(cmd);
        assert!(s.contains(&"s3cr3tTok".to_string()), "{s:?}");
        assert!(s.contains(&"hunter22".to_string()), "{s:?}");
        assert!(s.contains(&"pw1234".to_string()), "{s:?}");
        let r = run(
            "echo token=s3cr3tTok; exit 1 # API_TOKEN=s3cr3tTok",
            Duration::from_secs(20),
        );
        assert!(
            !r.command.contains("s3cr3tTok") && !r.output.contains("s3cr3tTok"),
            "{r:?}"
        );
        assert!(r.output.contains("token="), "{r:?}");
        assert!(secrets("systemctl restart app").is_empty());
    }

    #[test]
    fn bearer_basic_user_and_mysql_passwords_are_masked_even_short_ones() {
        let cmd = "curl -H 'Authorization: Bearer eyJhbGciOi.x' -u admin:pw https://h/ && mysql -pab -e 'select 1' && curl -H \"Authorization: Basic dXNlcjpw\" https://h/ && curl -H 'Authorization: tok' https://h/";
        let s = secrets(cmd);
        for want in ["eyJhbGciOi.x", "pw", "ab", "dXNlcjpw", "tok"] {
            assert!(s.contains(&want.to_string()), "{want}: {s:?}");
        }
        assert!(!s.contains(&"Bearer".to_string()), "{s:?}");
        let shown = scrub(cmd, &s);
        for gone in ["eyJhbGciOi.x", "admin:pw ", "-pab", "dXNlcjpw", ": tok"] {
            assert!(!shown.contains(gone), "{gone}: {shown}");
        }
        assert!(
            shown.contains("Bearer ***") && shown.contains("admin:***") && shown.contains("-p***"),
            "{shown}"
        );
        // A short secret is masked as a word only: the rest of the output stays readable.
        assert_eq!(scrub("table ab: tab", &["ab".into()]), "table ***: tab");
        assert!(secrets("sudo -u deploy systemctl --user restart app && find . -print").is_empty());
    }

    #[test]
    fn a_dropped_group_kills_a_hook_still_running_and_spares_one_that_exited() {
        let g = Group::default();
        let g2 = g.clone();
        let t = std::thread::spawn(move || run_in("sleep 30", Duration::from_secs(60), &g2));
        // Wait (bounded) until the hook's group is registered.
        let until = Instant::now() + Duration::from_secs(20);
        while g.0.load(std::sync::atomic::Ordering::SeqCst) == 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(g.0.load(std::sync::atomic::Ordering::SeqCst) > 0);
        drop(g);
        let r = t.join().unwrap();
        // Killed by the guard, long before its sleep or the bound.
        assert!(!r.ok && !r.timed_out && r.exit_code.is_none(), "{r:?}");
        let g = Group::default();
        assert!(run_in("true", Duration::from_secs(20), &g).ok);
        assert_eq!(g.0.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[test]
    fn an_overrunning_hook_is_killed_at_the_bound() {
        let r = run("echo started; sleep 30", Duration::from_millis(300));
        assert!(r.timed_out && !r.ok, "{r:?}");
        assert!(r.took_ms < 20_000.0, "{r:?}");
        assert!(r.output.contains("started"), "{r:?}");
        assert!(run("true", Duration::from_secs(20)).ok);
    }
}
