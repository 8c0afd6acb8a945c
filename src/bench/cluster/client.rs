//! One cluster client (a thread, sync WebSocket): connects to its home node, records every
//! message with its node and arrival time, and when its node goes away reconnects to the
//! next node with `/ws?since=LAST` (resume from the cluster's ring in Redis).
use super::account::{Arrival, ClientLog};
use rtcheck_base::os::clock::now_ns;
use rtcheck_base::os::signal::interrupted;
use rtcheck_wire::epoch::parse_gap;
use rtcheck_wire::epoch::{parse_marker, Epoch, Marker};
use rtcheck_wire::http::client::is_timeout;
use rtcheck_wire::payload;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::{self, Message};

/// How often a blocked read looks at the stop flag.
const TICK: Duration = Duration::from_millis(50);

/// What the orchestrator and the clients share.
#[derive(Debug, Default)]
pub struct Shared {
    pub stop: AtomicBool,
    /// Clients holding an open connection right now.
    pub connected_now: AtomicU64,
    /// Clients that failed their first connection.
    pub failed: AtomicU64,
    pub received: AtomicU64,
}

/// Sync tungstenite: rtcheck-wire has a frame codec but no blocking WebSocket client yet
/// (issue 36 leaves that stack for later); the HTTP pieces come from the wire.
type Ws = tungstenite::WebSocket<TcpStream>;

fn open(addr: SocketAddr, since: Option<(u64, Option<Epoch>)>) -> Result<Ws, String> {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("{addr}: connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let url = match since {
        Some((s, Some(e))) => format!("ws://{addr}/ws?since={s}&epoch={e}"),
        Some((s, None)) => format!("ws://{addr}/ws?since={s}"),
        None => format!("ws://{addr}/ws"),
    };
    let (ws, _) =
        tungstenite::client(url.as_str(), stream).map_err(|e| format!("{addr}: handshake: {e}"))?;
    let _ = ws.get_ref().set_read_timeout(Some(TICK));
    Ok(ws)
}

/// The server's hello or a reset marker: the epoch to resume in; a reset is noted where
/// it came (the first one splits the log into the old epoch and the new).
fn on_marker(m: Marker, log: &mut ClientLog, epoch: &mut Option<Epoch>) {
    match m {
        Marker::Hello { epoch: e, .. } => *epoch = Some(e),
        Marker::Reset { epoch: e, .. } => {
            *epoch = Some(e);
            log.resets += 1;
            log.reset_at
                .get_or_insert((log.arrivals.len(), log.gaps.len()));
        }
    }
}

/// Where to resume: the highest seq of the current epoch (after the first reset, only
/// what came after it) and that epoch.
fn position(log: &ClientLog, epoch: Option<Epoch>) -> Option<(u64, Option<Epoch>)> {
    let from = log.reset_at.map_or(0, |r| r.0);
    let seq = log.arrivals[from..].iter().map(|a| a.seq).max()?;
    Some((seq, epoch))
}

/// Read until the connection ends (Ok) or the stop flag (Err(())) .
fn read_loop(
    ws: &mut Ws,
    node: usize,
    log: &mut ClientLog,
    sh: &Shared,
    epoch: &mut Option<Epoch>,
) -> Result<(), ()> {
    loop {
        if sh.stop.load(SeqCst) || interrupted() {
            let _ = ws.close(None);
            let _ = ws.flush();
            return Err(());
        }
        let decoded = match ws.read() {
            Ok(Message::Binary(b)) => payload::decode(&b),
            Ok(Message::Text(t)) => match payload::decode_text(t.as_str()) {
                Some(v) => Some(v),
                None => {
                    if let Some(m) = parse_marker(t.as_str()) {
                        on_marker(m, log, epoch);
                    } else if let Some(g) = parse_gap(t.as_str()) {
                        log.gaps.push(g);
                    }
                    continue;
                }
            },
            Ok(Message::Close(_)) => return Ok(()),
            Ok(_) => continue,
            Err(tungstenite::Error::Io(e)) if is_timeout(&e) => continue,
            Err(_) => return Ok(()),
        };
        if let Some((seq, sched_ns)) = decoded {
            log.arrivals.push(Arrival {
                seq,
                sched_ns,
                recv_ns: now_ns(),
                node,
            });
            sh.received.fetch_add(1, SeqCst);
        }
    }
}

/// The client's life: home node first, then the others in turn from the one after it,
/// each reconnect resuming after the highest seq it has. Ends on the stop flag or at
/// `until` (a bound even if nobody sets the flag).
pub fn run(home: usize, nodes: &[SocketAddr], sh: &Shared, until: Instant) -> ClientLog {
    let mut log = ClientLog {
        home,
        ..ClientLog::default()
    };
    let mut ws = match open(nodes[home], None) {
        Ok(ws) => ws,
        Err(e) => {
            sh.failed.fetch_add(1, SeqCst);
            log.error = Some(e);
            return log;
        }
    };
    log.connected = true;
    let mut node = home;
    let mut epoch = None;
    loop {
        sh.connected_now.fetch_add(1, SeqCst);
        let ended = read_loop(&mut ws, node, &mut log, sh, &mut epoch);
        sh.connected_now.fetch_sub(1, SeqCst);
        if ended.is_err() {
            return log;
        }
        let since = position(&log, epoch);
        match reconnect(node, nodes, since, sh, until) {
            Some((n, w)) => {
                log.reconnects += 1;
                (node, ws) = (n, w);
            }
            None => return log,
        }
    }
}

/// Try the other nodes in turn (a dead one refuses at once) until one answers, the stop
/// flag, or `until`.
fn reconnect(
    from: usize,
    nodes: &[SocketAddr],
    since: Option<(u64, Option<Epoch>)>,
    sh: &Shared,
    until: Instant,
) -> Option<(usize, Ws)> {
    let n = nodes.len();
    let mut k = 1;
    while !sh.stop.load(SeqCst) && !interrupted() && Instant::now() < until {
        let node = (from + k) % n;
        if let Ok(ws) = open(nodes[node], since) {
            return Some((node, ws));
        }
        k += 1;
        if k % n == 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    None
}
