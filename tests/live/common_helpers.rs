//! The shared test helpers themselves: external services fail with the package name, ports
//! are free, services die with their guard.
use crate::common;
use common::*;
use std::process::Command;
use std::time::Duration;

#[test]
fn a_missing_binary_names_its_debian_package() {
    let e = std::panic::catch_unwind(|| require_binary("rtcheck-no-such-tool", "rtcheck-pkg"))
        .unwrap_err();
    let msg = e.downcast_ref::<String>().unwrap();
    assert!(
        msg.contains("install the Debian package rtcheck-pkg"),
        "{msg}"
    );
    assert!(require_binary("sh", "dash").is_file());
}

#[test]
fn a_service_listens_and_is_killed_on_drop() {
    // The service here is rtcheck serve itself: no extra package needed.
    let port = free_port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("rtcheck"));
    cmd.args(["serve", "--listen", &addr.to_string()]);
    let mut svc = Service::start(cmd, "serve", tempfile::tempdir().unwrap());
    svc.wait_listening(addr, Duration::from_secs(20));
    let pid = nix::unistd::Pid::from_raw(svc.child.id() as i32);
    let dir = svc.dir.path().to_path_buf();
    drop(svc);
    // Reaped (no such child any more) and its dir gone.
    assert!(nix::sys::wait::waitpid(pid, None).is_err());
    assert!(!dir.exists());
}

#[test]
fn this_binary_sets_its_test_concurrency_before_libtest_starts() {
    // main.rs' constructor sets it when the caller did not; either way it is a number of
    // threads, and unset would mean the constructor never ran (libtest's default instead).
    let threads: usize = std::env::var("RUST_TEST_THREADS")
        .expect("RUST_TEST_THREADS is set before libtest starts")
        .parse()
        .expect("a number of threads");
    assert!(threads >= 1);
}
