//! The process layer end to end from a library caller (this test binary is not rtcheck):
//! `RTCHECK_BIN` names the binary, the serve child starts and answers /control/stats
//! through the one control client, and its guard stops and reaps it.
use rtcheck::sys::{control, serve};
use rtcheck_base::os::deadline::Deadline;
use std::time::Duration;

#[test]
fn serve_child_from_a_library_caller_honours_rtcheck_bin() {
    // One test in this binary: the environment is set before any other thread reads it.
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
