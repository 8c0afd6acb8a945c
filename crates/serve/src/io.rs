//! Socket writes and reads on a shared `&TcpStream` (readiness API), so one task can
//! write while another reads, and no buffer lives in an idle connection.
use std::io::ErrorKind;
use std::time::Duration;
use tokio::net::TcpStream;

#[derive(Debug)]
pub enum WriteError {
    Timeout,
    Io(std::io::Error),
}

pub async fn write_all(s: &TcpStream, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        match s.try_write(buf) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock => s.writable().await?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Write everything or give up after `deadline` (None = wait forever).
pub async fn write_with_deadline(
    s: &TcpStream,
    buf: &[u8],
    deadline: Option<Duration>,
) -> Result<(), WriteError> {
    // Fast path: a healthy client's socket takes the whole message at once, and then no
    // timer is created (a timer per write costs timer-wheel locking on every message).
    let mut buf = buf;
    loop {
        match s.try_write(buf) {
            Ok(n) if n == buf.len() => return Ok(()),
            Ok(0) => return Err(WriteError::Io(ErrorKind::WriteZero.into())),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(WriteError::Io(e)),
        }
    }
    match deadline {
        None => write_all(s, buf).await.map_err(WriteError::Io),
        Some(d) => match tokio::time::timeout(d, write_all(s, buf)).await {
            Ok(r) => r.map_err(WriteError::Io),
            Err(_) => Err(WriteError::Timeout),
        },
    }
}

/// Result of draining readable bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Read n bytes (maybe 0 on a spurious wakeup); the socket is still open.
    Data(usize),
    Eof,
}

/// Read what is available (without waiting) into `sink`, using a stack buffer so
/// nothing stays allocated. At most `limit` bytes per call, for fairness.
pub fn read_available(
    s: &TcpStream,
    limit: usize,
    mut sink: impl FnMut(&[u8]) -> bool,
) -> std::io::Result<ReadOutcome> {
    let mut tmp = [0u8; 4096];
    let mut total = 0;
    while total < limit {
        match s.try_read(&mut tmp) {
            Ok(0) => return Ok(ReadOutcome::Eof),
            Ok(n) => {
                total += n;
                if !sink(&tmp[..n]) {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(ReadOutcome::Data(total))
}
