//! A scripted HTTP peer for the probe tests: a foreign server's behaviour (a late head,
//! per-connection ids, gzip, an error status) in a few lines, on loopback, one thread per
//! connection, told to stop when dropped.
use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// A scripted HTTP peer on loopback: every connection gets its own thread running
/// `answer` with the request head it sent; stopped (and its threads told) on drop.
pub struct Stub {
    pub port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Stub {
    pub fn start(answer: fn(&mut std::net::TcpStream, &str, &dyn Fn() -> bool)) -> Stub {
        use std::sync::atomic::{AtomicBool, Ordering};
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let Ok((mut s, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                let flag = flag.clone();
                std::thread::spawn(move || {
                    let _ = s.set_nonblocking(false);
                    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                    let mut got = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let req = String::from_utf8_lossy(&got).to_string();
                    answer(&mut s, &req, &|| flag.load(Ordering::Relaxed));
                });
            }
        });
        Stub { port, stop }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Sleep `d` unless the stub is stopped first (false: stopped).
pub fn pause(d: Duration, stopped: &dyn Fn() -> bool) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if stopped() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}
