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
    let threads = std::env::var("RUST_TEST_THREADS").expect("RUST_TEST_THREADS is set");
    let cores = std::thread::available_parallelism().unwrap().get();
    // main.rs' constructor ran before libtest read the variable, and recorded what it did.
    match test_threads_set().expect("main.rs' constructor ran") {
        TestThreads::Defaulted {
            per_core,
            cores: seen,
        } => {
            assert_eq!((*per_core, *seen), (3, cores), "three tests per core");
            assert_eq!(threads.parse::<usize>().unwrap(), 3 * cores);
        }
        // The caller's choice is kept as it was given.
        TestThreads::Caller(given) => assert_eq!(given.to_str(), Some(threads.as_str())),
    }
}
