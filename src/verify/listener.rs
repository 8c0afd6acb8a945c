//! A plain loopback TCP listener run by the experiment itself (fd-limit, ephemeral-ports,
//! tcp-wmem need only TCP semantics). Accepting happens on a thread; the accepted sockets
//! are held (so the client side stays established) or closed at once (so the experiment
//! needs no server-side descriptors). Dropping the acceptor closes everything.
use anyhow::Context;
use rtcheck_base::os::{addr, signal};
use socket2::{Domain, Protocol, Socket, Type};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnAccept {
    /// Keep up to `cap` accepted sockets open; close the ones above the cap at once.
    Hold { cap: usize },
    /// Close every accepted socket at once (the server side sends FIN first).
    Close,
}

pub struct Acceptor {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    mode: Arc<Mutex<OnAccept>>,
    held: Arc<Mutex<Vec<TcpStream>>>,
    thread: Option<JoinHandle<()>>,
}

/// A listener on `bind` (loopback only) with a deep accept queue.
pub fn listen(bind: SocketAddr, backlog: i32) -> anyhow::Result<TcpListener> {
    addr::ensure_loopback(&bind)?;
    let s = Socket::new(Domain::for_address(bind), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.bind(&bind.into())
        .with_context(|| format!("cannot listen on {bind}"))?;
    s.listen(backlog)?;
    Ok(s.into())
}

impl Acceptor {
    pub fn start(bind: SocketAddr, mode: OnAccept) -> anyhow::Result<Acceptor> {
        let listener = listen(bind, 4096)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let mode = Arc::new(Mutex::new(mode));
        let held = Arc::new(Mutex::new(Vec::new()));
        let (s2, a2, m2, h2) = (stop.clone(), accepted.clone(), mode.clone(), held.clone());
        let thread = std::thread::Builder::new()
            .name("verify-accept".into())
            .spawn(move || accept_loop(listener, s2, a2, m2, h2))?;
        Ok(Acceptor {
            addr,
            stop,
            accepted,
            mode,
            held,
            thread: Some(thread),
        })
    }

    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    pub fn set_mode(&self, mode: OnAccept) {
        if let Ok(mut m) = self.mode.lock() {
            *m = mode;
        }
    }

    /// Close every held server-side socket now.
    pub fn release_held(&self) -> usize {
        match self.held.lock() {
            Ok(mut h) => {
                let n = h.len();
                h.clear();
                n
            }
            Err(_) => 0,
        }
    }

    /// Wait until `n` connections were accepted in total; false on timeout.
    pub fn wait_accepted(&self, n: usize, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        while self.accepted() < n {
            if Instant::now() >= until || signal::interrupted() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }
}

fn accept_loop(
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    mode: Arc<Mutex<OnAccept>>,
    held: Arc<Mutex<Vec<TcpStream>>>,
) {
    while !stop.load(Ordering::SeqCst) {
        rtcheck_base::os::fd::poll_one(&listener, rtcheck_base::os::fd::POLLIN, 20);
        loop {
            match listener.accept() {
                Ok((s, _)) => {
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let m = mode.lock().map(|m| *m).unwrap_or(OnAccept::Close);
                    if let OnAccept::Hold { cap } = m {
                        if let Ok(mut h) = held.lock() {
                            if h.len() < cap {
                                h.push(s);
                            }
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // EMFILE/ENFILE: leave the connection queued and retry on the next tick.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(5));
                    break;
                }
            }
        }
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.release_held();
    }
}
