//! The process layer end to end from a library caller (this test binary is not rtcheck):
//! `RTCHECK_BIN` names the binary, the serve child starts and answers /control/stats
//! through the one control client, and its guard stops and reaps it.
use rtcheck::sys::{control, serve};
use rtcheck_base::os::deadline::Deadline;
use std::sync::Mutex;
use std::time::Duration;

/// `RTCHECK_BIN` is process-wide: this binary's tests set it, so they take turns (and no
/// other test shares the process: this file is a binary of its own).
static ENV: Mutex<()> = Mutex::new(());

#[test]
fn serve_child_from_a_library_caller_honours_rtcheck_bin() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("RTCHECK_BIN", "/nonexistent/rtcheck");
    let dir = serve::Scratch::new("systest").unwrap();
    let wait = Deadline::new(Duration::from_secs(60));
    let e = serve::start(&[], &dir.0, 1, &wait)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("cannot start the embedded server"), "{e}");

    std::env::set_var("RTCHECK_BIN", assert_cmd::cargo::cargo_bin("rtcheck"));
    let mut child = serve::start(&["--wait-start".into()], &dir.0, 1, &wait).unwrap();
    let addr = child.addrs[0];
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
    let stats = control::stats(addr).unwrap();
    assert_eq!(stats.clients_of("ws"), 0);
    assert!(stats.rss_bytes > 0 && stats.open_fds > 0, "{stats:?}");
    let (status, clean) = child.guard.terminate(Duration::from_secs(10));
    assert!(clean, "serve should exit on SIGTERM: {status:?}");
    // Gone: the control port refuses, and the error names the peer.
    let e = control::stats(addr).unwrap_err().to_string();
    assert!(e.contains(&addr.to_string()), "{e}");
}

#[test]
fn attach_as_a_library_call_uses_the_audited_soft_limit() {
    use rtcheck::findings::{Finding, Fix, Status};
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("RTCHECK_BIN", assert_cmd::cargo::cargo_bin("rtcheck"));
    let finding = |id: &str, status: Status, verify: Option<&str>| Finding {
        location: None,
        id: id.into(),
        title: id.into(),
        status,
        observed: String::new(),
        expected: String::new(),
        rule: String::new(),
        reason: None,
        evidence: vec![],
        fix: Fix::default(),
        verify: verify.map(str::to_string),
        verification: None,
        numbers: Default::default(),
    };
    let mut fd = finding("fd-limit", Status::Fail, Some("fd-limit"));
    fd.numbers.insert("soft".into(), 128.0);
    let mut findings = vec![
        fd,
        finding("tcp-wmem", Status::Warn, Some("tcp-wmem")),
        finding("somaxconn", Status::Pass, None),
        finding("memory", Status::Skip, Some("memory")),
    ];
    let opts = rtcheck::verify::VerifyOptions {
        progress: false,
        timeout: Duration::from_secs(60),
        ..rtcheck::cmd::verify::default_options()
    };
    rtcheck::verify::attach(&mut findings, &opts).unwrap();
    let fd = findings[0].verification.as_ref().unwrap();
    assert!(fd.valid, "{fd:?}");
    let n = fd.measured.unwrap();
    assert!(
        (112.0..=128.0).contains(&n),
        "fd-limit at the audited 128: {n}"
    );
    let w = findings[1].verification.as_ref().unwrap();
    assert_eq!(w.name, "tcp-wmem");
    assert!(w.valid);
    assert!(findings[2].verification.is_none());
    assert!(
        findings[3].verification.is_none(),
        "skipped findings are not run"
    );
}
