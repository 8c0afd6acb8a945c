//! One request at a time on the wire engine's connection ([`WireConn`]), each bounded by a
//! timeout: load's preflight and its metrics scrape, and `budget --live`. No hyper: these
//! work in every build.
use super::client::{check_status, Answer, ErrorKind, Target, Timing};
use super::conn::WireConn;
use super::wire;
use std::future::Future;
use std::time::{Duration, Instant};

/// `fut` within `timeout`, its expiry a [`ErrorKind::Timeout`].
async fn within<T>(
    timeout: Duration,
    fut: impl Future<Output = Result<T, ErrorKind>>,
) -> Result<T, ErrorKind> {
    tokio::time::timeout(timeout, fut)
        .await
        .unwrap_or(Err(ErrorKind::Timeout))
}

/// Open a connection (TCP_NODELAY on) within `timeout`.
pub async fn connect(t: &Target, timeout: Duration) -> Result<WireConn, ErrorKind> {
    within(timeout, WireConn::open(t.addr)).await
}

/// `t`'s request on `conn` and its whole answer within `timeout`.
async fn answer(
    conn: &mut WireConn,
    t: &Target,
    timeout: Duration,
    keep: Option<&mut Vec<u8>>,
) -> Result<Answer, ErrorKind> {
    let head_only = t.method == http::Method::HEAD;
    within(timeout, conn.exchange(&wire::encode(t), head_only, keep)).await
}

/// One request on `conn` within `timeout` (head and body). After an error the connection
/// must be dropped: a late answer would be read as the next one's.
pub async fn request(
    conn: &mut WireConn,
    t: &Target,
    timeout: Duration,
) -> Result<Timing, ErrorKind> {
    let start = Instant::now();
    let a = answer(conn, t, timeout, None).await?;
    let end = Instant::now();
    check_status(a.status)?;
    Ok(Timing {
        total: end - start,
        body_gap: end - a.head,
        body_bytes: a.body_bytes,
        status: a.status,
    })
}

/// Connect and make one request (a new connection per call), timed from before connect.
pub async fn once(t: &Target, timeout: Duration) -> Result<Timing, ErrorKind> {
    let start = Instant::now();
    let mut c = connect(t, timeout).await?;
    let left = timeout.saturating_sub(start.elapsed());
    let mut timing = request(&mut c, t, left).await?;
    timing.total = start.elapsed();
    Ok(timing)
}

/// GET `t` on `conn` and return its status and body (small answers: metrics pages). The
/// answer is framed by `wire` and its body decoded by the control client's reader.
pub async fn fetch(
    conn: &mut WireConn,
    t: &Target,
    timeout: Duration,
) -> Result<(u16, String), ErrorKind> {
    let mut raw = Vec::new();
    answer(conn, t, timeout, Some(&mut raw)).await?;
    crate::sys::control::parse_response(&raw).map_err(|_| ErrorKind::Protocol)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::client::parse_url;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A server that answers each request on one connection with the next of `answers`,
    /// then holds the connection open; it counts the connections it accepted.
    async fn serve(answers: Vec<&'static [u8]>) -> (Target, Arc<AtomicUsize>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let t = parse_url(&format!("http://{}/metrics", l.local_addr().unwrap())).unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let answers = answers.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    for a in answers {
                        if s.read(&mut buf).await.unwrap_or(0) == 0 {
                            return;
                        }
                        s.write_all(a).await.unwrap();
                    }
                    while s.read(&mut buf).await.unwrap_or(0) > 0 {}
                });
            }
        });
        (t, accepted)
    }

    #[tokio::test]
    async fn fetch_decodes_chunked_and_sized_bodies_on_one_kept_connection() {
        let (t, accepted) = serve(vec![
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nbusy \r\n3\r\n2\n\n\r\n0\r\n\r\n",
            b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nfull",
        ])
        .await;
        let second = Duration::from_secs(10);
        let mut c = connect(&t, second).await.unwrap();
        assert_eq!(
            fetch(&mut c, &t, second).await,
            Ok((200, "busy 2\n\n".to_string()))
        );
        assert!(c.reusable());
        assert_eq!(
            fetch(&mut c, &t, second).await,
            Ok((503, "full".to_string()))
        );
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "one kept connection");
    }

    #[tokio::test]
    async fn once_names_refused_non_http_silent_and_status_errors() {
        let free = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let dead = parse_url(&format!("http://{}/", free.local_addr().unwrap())).unwrap();
        drop(free);
        let short = Duration::from_millis(300);
        assert_eq!(once(&dead, short).await.err(), Some(ErrorKind::Refused));
        let (ssh, _a) = serve(vec![b"SSH-2.0-OpenSSH_9.6\r\n\r\n"]).await;
        assert_eq!(once(&ssh, short).await.err(), Some(ErrorKind::Protocol));
        let (silent, _b) = serve(vec![]).await;
        assert_eq!(once(&silent, short).await.err(), Some(ErrorKind::Timeout));
        let (missing, _c) =
            serve(vec![b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"]).await;
        assert_eq!(
            once(&missing, short).await.err(),
            Some(ErrorKind::Status4xx)
        );
        let (fine, _d) = serve(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]).await;
        let timing = once(&fine, short).await.unwrap();
        assert_eq!((timing.status, timing.body_bytes), (200, 2));
    }
}
