//! The guided run (`rtcheck` with no subcommand) through a real pseudo-terminal: the four
//! questions, the role, the audit of this host, then both files saved and parsed back.
use expectrl::{Eof, Session};
use rtcheck::profile::{Loss, Profile, Role, Transport};
use std::process::Command;
use std::time::Duration;

const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";

fn answer(s: &mut Session, prompt: &str, keys: &str) {
    s.expect(prompt)
        .unwrap_or_else(|e| panic!("prompt `{prompt}` not shown: {e}"));
    wait_for_raw_mode(s);
    s.send(keys).unwrap();
}

#[test]
fn guided_run_chooses_audits_and_saves_both_files() {
    let dir = tempfile::tempdir().unwrap();
    let profile_path = dir.path().join("p.yaml");
    let report_path = dir.path().join("audit.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.env("NO_COLOR", "1").env("TERM", "xterm");
    let mut s = Session::spawn(cmd).expect("spawn rtcheck in a pty");
    s.set_expect_timeout(Some(Duration::from_secs(30)));

    answer(&mut s, "Visible within", &format!("10m{ENTER}"));
    answer(&mut s, "Upstream", ENTER);
    answer(&mut s, "Binary payloads?", ENTER);
    answer(&mut s, "If one message is lost", ENTER); // replaceable
    answer(&mut s, "Connections", &format!("3000{ENTER}"));
    answer(&mut s, "Machines", ENTER);
    answer(&mut s, "Messages per second per client", ENTER);
    answer(&mut s, "Bytes per message", ENTER);
    answer(&mut s, "Max disconnect", ENTER);
    answer(&mut s, "What does this host do", &format!("{DOWN}{ENTER}")); // proxy
    s.expect("rtcheck audit: 3,000 polling connections, role proxy")
        .unwrap();
    answer(&mut s, "Save the profile", "y");
    answer(
        &mut s,
        "Profile file",
        &format!("{}{ENTER}", profile_path.display()),
    );
    answer(&mut s, "Save the audit report", "y");
    answer(
        &mut s,
        "Report file",
        &format!("{}{ENTER}", report_path.display()),
    );
    s.expect(Eof).expect("rtcheck exits");
    let status = s.get_process().wait().expect("exit status");

    let p = Profile::load(&profile_path).unwrap();
    assert_eq!(p.transport, Some(Transport::Polling));
    assert_eq!(p.loss, Some(Loss::Replaceable));
    assert_eq!(p.role, Role::Proxy);
    assert_eq!(p.connections, 3000);

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), rtcheck::audit::check_ids().len());
    assert_eq!(report["profile"]["role"], "proxy");
    assert_eq!(report["profile"]["connections"], 3000);
    // Exit code follows the audit: 1 exactly when something failed on this host.
    let fails = report["summary"]["fail"].as_u64().unwrap();
    let expected = if fails > 0 { 1 } else { 0 };
    assert_eq!(
        status,
        expectrl::WaitStatus::Exited(s.get_process().pid(), expected)
    );
}

#[test]
fn without_a_terminal_it_prints_usage_and_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_rtcheck"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Usage: rtcheck"), "{err}");
    assert!(out.stdout.is_empty());
}

/// Keys typed before the prompt switches the terminal to raw mode would be line-buffered:
/// wait until the pty leaves canonical mode (the master reads the slave's termios on
/// Linux), bounded; a prompt that reads in line mode gets its keys after the bound.
fn wait_for_raw_mode(s: &Session) {
    use std::os::fd::AsRawFd;
    let pty = s.get_process().get_raw_handle().expect("pty handle");
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < until {
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
