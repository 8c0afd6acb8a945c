//! `rtcheck serve --redis` over a real redis-server (Debian package `redis-server`), started
//! by the test on a free loopback port in a temp dir.
use rtcheck::sys::redis::{ping, RedisServer};

fn redis(dir: &std::path::Path) -> RedisServer {
    RedisServer::start(dir).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_launcher_starts_stops_and_restarts_on_the_same_port() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = redis(dir.path());
    let (url, port) = (r.url(), r.port());
    assert!(url.starts_with("redis://127.0.0.1:"), "{url}");
    ping(&url).unwrap();
    let pid = r.pid().unwrap();
    r.stop();
    assert!(!r.is_running());
    assert!(ping(&url).is_err(), "PING answered after stop");
    r.restart().unwrap();
    assert_eq!(r.port(), port);
    assert_ne!(r.pid().unwrap(), pid);
    ping(&url).unwrap();
    let pid = r.pid().unwrap() as i32;
    drop(r);
    // Reaped on drop: the pid no longer names a child of ours.
    let gone = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
    assert!(gone.is_err());
    assert!(ping(&url).is_err(), "PING answered after drop");
}
