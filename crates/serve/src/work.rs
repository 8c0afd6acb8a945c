//! `GET /work?ms=N`: N ms of simulated work (a database wait) on a fixed pool of
//! `--workers` with a queue in front, so the golden-signals sweep of seed 001 can be
//! reproduced on loopback: capacity = workers / work time (8 / 20 ms = 400 req/s).
//! `--split-writes` answers with the header and the body in two writes and Nagle on
//! (no TCP_NODELAY), the server-side mistake that meets the client's delayed ACK.
use super::io;
use rtcheck_wire::http::{self, Request};
use rtcheck_wire::prom::{Exposition, Kind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

/// Requests waiting for a worker beyond this get 503 (the queue is bounded).
pub const MAX_QUEUE: usize = 4096;
/// Longest work accepted for one request.
pub const MAX_MS: u64 = 10_000;
/// Work time when `?ms` is absent (the seed's 20 ms).
pub const DEFAULT_MS: u64 = 20;
/// Time allowed to write an answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Pool {
    permits: Semaphore,
    pub workers: usize,
    pub split_writes: bool,
    busy: AtomicUsize,
    queued: AtomicUsize,
    served: AtomicU64,
    rejected: AtomicU64,
}

static POOL: OnceLock<Pool> = OnceLock::new();

/// Set the pool once at start (`serve` runs one server per process).
pub fn init(workers: usize, split_writes: bool) {
    let _ = POOL.set(Pool::new(workers, split_writes));
}

fn pool() -> &'static Pool {
    POOL.get_or_init(|| Pool::new(8, false))
}

/// Decrements its counter when dropped (also if the connection task is cancelled).
struct Count<'a>(&'a AtomicUsize);

impl<'a> Count<'a> {
    fn enter(c: &'a AtomicUsize) -> Self {
        c.fetch_add(1, Relaxed);
        Count(c)
    }
}

impl Drop for Count<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

impl Pool {
    pub fn new(workers: usize, split_writes: bool) -> Pool {
        Pool {
            permits: Semaphore::new(workers),
            workers,
            split_writes,
            busy: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            served: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        }
    }

    /// Hold a worker for `ms`, after waiting in the queue; false when the queue is full.
    pub async fn work(&self, ms: u64) -> bool {
        let permit = {
            if self.queued.load(Relaxed) >= MAX_QUEUE {
                self.rejected.fetch_add(1, Relaxed);
                return false;
            }
            let _waiting = Count::enter(&self.queued);
            match self.permits.acquire().await {
                Ok(p) => p,
                Err(_) => return false,
            }
        };
        let _busy = Count::enter(&self.busy);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        drop(permit);
        self.served.fetch_add(1, Relaxed);
        true
    }

    /// Prometheus text: pool size, busy workers, queue length, served and rejected.
    pub fn metrics(&self) -> String {
        let rows = [
            (
                "rtcheck_work_workers",
                Kind::Gauge,
                "Workers in the /work pool.",
                self.workers as u64,
            ),
            (
                "rtcheck_work_busy_workers",
                Kind::Gauge,
                "Workers busy on /work now (saturation).",
                self.busy.load(Relaxed) as u64,
            ),
            (
                "rtcheck_work_queue_length",
                Kind::Gauge,
                "/work requests waiting for a worker.",
                self.queued.load(Relaxed) as u64,
            ),
            (
                "rtcheck_work_requests_total",
                Kind::Counter,
                "/work requests served.",
                self.served.load(Relaxed),
            ),
            (
                "rtcheck_work_rejected_total",
                Kind::Counter,
                "/work requests refused with 503 (queue full).",
                self.rejected.load(Relaxed),
            ),
        ];
        let mut p = Exposition::new();
        for (name, kind, help, v) in rows {
            p.single(name, kind, help, v);
        }
        p.finish()
    }
}

/// One line for the serve banner.
pub fn banner_line() -> String {
    let p = pool();
    format!(
        "  /work?ms=N: {} worker(s), queue up to {MAX_QUEUE}{}\n",
        p.workers,
        if p.split_writes {
            ", header and body in two writes with Nagle on (--split-writes)"
        } else {
            ""
        }
    )
}

pub fn metrics() -> String {
    pool().metrics()
}

/// `?ms=N` (0 ..= 10000), 20 when absent.
pub fn parse_ms(req: &Request) -> Result<u64, String> {
    match req.query_param("ms") {
        None => Ok(DEFAULT_MS),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if n <= MAX_MS => Ok(n),
            _ => Err(format!(
                "/work?ms must be an integer 0..={MAX_MS}, got `{v}`"
            )),
        },
    }
}

/// Serve one /work request. Returns whether the connection stays open.
pub async fn serve(stream: &TcpStream, req: &Request, keep: bool) -> bool {
    let p = pool();
    // GET or HEAD: the route table answers the other methods.
    let (status, body) = match parse_ms(req) {
        Err(e) => (400, format!("{e}\n")),
        Ok(ms) if p.work(ms).await => (200, "ok\n".to_string()),
        Ok(_) => (503, "work queue full\n".to_string()),
    };
    let keep = keep && status < 400;
    let mut resp = http::response(status, "text/plain; charset=utf-8", body.as_bytes(), keep);
    let body_len = if req.method == "HEAD" { 0 } else { body.len() };
    resp.truncate(resp.len() - body.len() + body_len);
    let ok = if p.split_writes && body_len > 0 {
        // Two writes with Nagle on: the body waits for the ACK of the header.
        let _ = stream.set_nodelay(false);
        let head = resp.len() - body_len;
        io::write_with_deadline(stream, &resp[..head], Some(WRITE_TIMEOUT))
            .await
            .is_ok()
            && io::write_with_deadline(stream, &resp[head..], Some(WRITE_TIMEOUT))
                .await
                .is_ok()
    } else {
        io::write_with_deadline(stream, &resp, Some(WRITE_TIMEOUT))
            .await
            .is_ok()
    };
    ok && keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(q: &str) -> Request {
        let raw = http::client::head("GET", &format!("/work{q}"), &[("Host", "x")]);
        http::parse_head(&raw).unwrap().unwrap().0
    }

    #[test]
    fn ms_parameter() {
        assert_eq!(parse_ms(&req("")), Ok(20));
        assert_eq!(parse_ms(&req("?ms=24")), Ok(24));
        assert_eq!(parse_ms(&req("?ms=0")), Ok(0));
        assert!(parse_ms(&req("?ms=10001"))
            .unwrap_err()
            .contains("0..=10000"));
        assert!(parse_ms(&req("?ms=-1")).is_err());
    }

    #[tokio::test]
    async fn the_pool_holds_workers_and_queues_the_rest() {
        let p: &'static Pool = Box::leak(Box::new(Pool::new(2, false)));
        let tasks: Vec<_> = (0..5).map(|_| tokio::spawn(p.work(2000))).collect();
        let t0 = std::time::Instant::now();
        let want = [
            "rtcheck_work_busy_workers 2\n",
            "rtcheck_work_queue_length 3\n",
        ];
        while !want.iter().all(|w| p.metrics().contains(w)) {
            assert!(
                t0.elapsed() < Duration::from_millis(1500),
                "{}",
                p.metrics()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for t in tasks {
            assert!(t.await.unwrap());
        }
        let m = p.metrics();
        assert!(m.contains("rtcheck_work_busy_workers 0\n"), "{m}");
        assert!(m.contains("rtcheck_work_requests_total 5\n"), "{m}");
    }
}
