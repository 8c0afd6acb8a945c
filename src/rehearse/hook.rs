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
/// (`--token X`). Words are split on blanks: a quoted secret with spaces in it is not
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
    for (i, w) in words.iter().enumerate() {
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
    out.retain(|s| s.len() >= 4);
    out
}

/// `text` with every secret of the command masked.
fn scrub(text: &str, secrets: &[String]) -> String {
    let refs: Vec<&str> = secrets.iter().map(String::as_str).collect();
    rtcheck_base::redact::scrub(text, &refs)
}

/// Run `command` to its end or `limit`; the report's copy of the command and its output
/// have the command's secrets masked.
pub fn run(command: &str, limit: Duration) -> HookRun {
    let hidden = secrets(command);
    let mut r = run_raw(command, limit);
    r.command = scrub(&r.command, &hidden);
    r.output = scrub(&r.output, &hidden);
    r.error = r.error.map(|e| scrub(&e, &hidden));
    r
}

fn run_raw(command: &str, limit: Duration) -> HookRun {
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
    let pgid = child.id() as i32;
    let (status, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(s)) => break (Some(s), false),
            Ok(None) if t0.elapsed() >= limit => {
                // SAFETY: kill(2) on the hook's own process group.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                break (child.wait().ok(), true);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break (None, false),
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
    fn an_overrunning_hook_is_killed_at_the_bound() {
        let r = run("echo started; sleep 30", Duration::from_millis(300));
        assert!(r.timed_out && !r.ok, "{r:?}");
        assert!(r.took_ms < 20_000.0, "{r:?}");
        assert!(r.output.contains("started"), "{r:?}");
        assert!(run("true", Duration::from_secs(20)).ok);
    }
}
