//! `rtcheck serve --redis` over a real redis-server (Debian package `redis-server`), started
//! by the test on a free loopback port in a temp dir: one path, the naive path's duplicates,
//! resume on another node from the Redis ring, TTL presence against join/leave ghosts, a
//! Redis restart survived, and a resume on a fresh node while Redis is stalled.
use crate::common;
use common::{http_get, require_binary, Server};
use rtcheck::sys::redis::{ping, RedisServer};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Generous bound for anything to happen on a loaded 2-core machine.
const LIMIT: Duration = Duration::from_secs(60);

fn redis(dir: &std::path::Path) -> RedisServer {
    require_binary("redis-server", "redis-server");
    RedisServer::start(dir).unwrap_or_else(|e| panic!("{e}"))
}

/// A node of the cluster on 127.0.0.1:0.
fn node(r: &RedisServer, name: &str, extra: &[&str]) -> Server {
    let url = r.url();
    let mut args = vec!["--redis", &url, "--node", name, "--size", "64"];
    args.extend_from_slice(extra);
    Server::start(&args)
}

/// What an SSE client saw: a round's seq, or a gap marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Msg(u64),
    Gap(u64, u64),
    /// A reset marker: the node moved to another epoch (its seqs start over).
    Reset,
}

/// A minimal SSE client: `GET /sse` (with Last-Event-ID), events parsed as they come.
struct Sse {
    s: TcpStream,
    buf: String,
    events: Vec<Ev>,
}

impl Sse {
    fn connect(addr: SocketAddr, last_id: Option<u64>) -> Sse {
        Sse::resume(addr, last_id.map(|i| i.to_string()).as_deref())
    }

    /// [`Sse::connect`] with a whole Last-Event-ID (`SEQ@EPOCH`).
    fn resume(addr: SocketAddr, last_id: Option<&str>) -> Sse {
        let mut s = TcpStream::connect(addr).unwrap();
        let resume = last_id.map_or(String::new(), |i| format!("Last-Event-ID: {i}\r\n"));
        write!(s, "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n{resume}\r\n").unwrap();
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        Sse {
            s,
            buf: String::new(),
            events: Vec::new(),
        }
    }

    /// Read until `pred(events)` holds; panics after [`LIMIT`].
    fn until(&mut self, what: &str, pred: impl Fn(&[Ev]) -> bool) {
        let t0 = Instant::now();
        let mut chunk = [0u8; 16384];
        while !pred(&self.events) {
            assert!(
                t0.elapsed() < LIMIT,
                "{what}: not reached; saw {:?}",
                self.events
            );
            match self.s.read(&mut chunk) {
                Ok(0) => panic!(
                    "{what}: the server closed the stream; saw {:?}",
                    self.events
                ),
                Ok(n) => {
                    self.buf.push_str(&String::from_utf8_lossy(&chunk[..n]));
                    self.parse();
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(e) => panic!("{what}: {e}"),
            }
        }
    }

    fn parse(&mut self) {
        while let Some(end) = self.buf.find("\n\n") {
            let block: String = self.buf.drain(..end + 2).collect();
            let block = block
                .rsplit("\r\n\r\n")
                .next()
                .unwrap_or(&block)
                .to_string();
            if let Some(id) = block.lines().find_map(|l| l.strip_prefix("id: ")) {
                // `SEQ@EPOCH`: the seq first.
                let seq = id.trim().split('@').next().unwrap();
                self.events.push(Ev::Msg(seq.parse().unwrap()));
            } else if block.contains("event: reset") {
                self.events.push(Ev::Reset);
            } else if block.contains("event: gap") {
                let data = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .unwrap();
                let v: serde_json::Value = serde_json::from_str(data).unwrap();
                let n = |k: &str| v[k].as_u64().unwrap();
                self.events.push(Ev::Gap(n("from"), n("to")));
            }
        }
    }

    fn seqs(&self) -> Vec<u64> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Ev::Msg(s) => Some(*s),
                Ev::Gap(..) | Ev::Reset => None,
            })
            .collect()
    }

    /// Copies beyond the first, per seq.
    fn duplicates(&self) -> usize {
        let mut seen = BTreeMap::new();
        for s in self.seqs() {
            *seen.entry(s).or_insert(0usize) += 1;
        }
        seen.values().map(|n| n - 1).sum()
    }
}

fn has(seq: u64) -> impl Fn(&[Ev]) -> bool {
    move |ev| ev.contains(&Ev::Msg(seq))
}

/// Wait until `pred(status, body)` holds for GET `path`.
fn wait_http(s: &Server, path: &str, what: &str, pred: impl Fn(u16, &str) -> bool) -> String {
    let t0 = Instant::now();
    loop {
        let (status, body) = http_get(s.addr, path);
        if pred(status, &body) {
            return body;
        }
        assert!(t0.elapsed() < LIMIT, "{what}: last {status} {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn metric(s: &Server, name: &str) -> f64 {
    let (_, body) = http_get(s.addr, "/metrics");
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} missing from /metrics"))
        .trim()
        .parse()
        .unwrap()
}

fn presence(s: &Server) -> serde_json::Value {
    let (status, body) = http_get(s.addr, "/presence");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Clients connected before the start on the publishing node `a` and the relay `b`; both
/// read all `rounds`; returns (a's client, b's client).
fn one_round_trip(path: &str, rounds: u64) -> (Sse, Sse) {
    let dir = tempfile::tempdir().unwrap();
    let r = redis(dir.path());
    let a = node(&r, "a", &["--rate", "20", "--wait-start", "--path", path]);
    let b = node(&r, "b", &["--no-publish"]);
    let (mut ca, mut cb) = (Sse::connect(a.addr, None), Sse::connect(b.addr, None));
    for s in [&a, &b] {
        s.wait_stats(LIMIT, |v| v["clients"]["sse"] == 1);
    }
    if path == "naive" {
        assert!(a.stderr().contains("DEMONSTRATION"), "{}", a.stderr());
    }
    a.start_publishing(rounds);
    let n = rounds as usize;
    let want = if path == "naive" { 2 * n } else { n };
    ca.until("a's client", |ev| ev.len() >= want && has(rounds)(ev));
    cb.until("b's client", has(rounds));
    let st = b.stats();
    assert_eq!(st["node"], "b");
    assert_eq!(st["redis_up"], true);
    (ca, cb)
}

#[test]
fn one_path_gives_every_client_every_round_once() {
    let (a, b) = one_round_trip("one-path", 30);
    for (name, c) in [("a", &a), ("b", &b)] {
        assert_eq!(c.seqs(), (1..=30).collect::<Vec<_>>(), "node {name}");
        assert_eq!(c.duplicates(), 0, "node {name}");
    }
}

#[test]
fn the_naive_path_duplicates_on_the_publishing_node_only() {
    let (a, b) = one_round_trip("naive", 30);
    // Every round twice on the publishing node (locally, then back from Redis): 50 %.
    assert_eq!(a.duplicates(), 30, "{:?}", a.events);
    assert_eq!(b.duplicates(), 0, "{:?}", b.events);
    assert_eq!(b.seqs(), (1..=30).collect::<Vec<_>>());
}

#[test]
fn a_client_resumes_on_another_node_from_the_redis_ring() {
    let dir = tempfile::tempdir().unwrap();
    let r = redis(dir.path());
    let a = node(&r, "a", &["--rate", "50", "--rounds", "40", "--ring", "16"]);
    let mut c = Sse::connect(a.addr, None);
    c.until("first rounds on a", |ev| !ev.is_empty());
    a.wait_stats(LIMIT, |v| v["finished"] == true && v["rounds_sent"] == 40);
    // b starts after the last round: its own ring is empty, only Redis holds the rounds.
    let b = node(&r, "b", &["--no-publish", "--ring", "16"]);
    let mut within = Sse::connect(b.addr, Some(30));
    within.until("resume within the ring", has(40));
    assert_eq!(within.events, (31..=40).map(Ev::Msg).collect::<Vec<_>>());
    let (_, poll) = http_get(b.addr, "/poll?since=35");
    let poll: serde_json::Value = serde_json::from_str(&poll).unwrap();
    assert_eq!(poll["gap"], false, "{poll}");
    let seqs: Vec<u64> = poll["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, vec![36, 37, 38, 39, 40]);
    // Beyond the ring (16 of 40 kept): the usual gap marker, then what is left.
    let mut beyond = Sse::connect(b.addr, Some(10));
    beyond.until("resume beyond the ring", has(40));
    assert_eq!(beyond.events[0], Ev::Gap(11, 24), "{:?}", beyond.events);
    assert_eq!(beyond.seqs(), (25..=40).collect::<Vec<_>>());
}

/// Three clients (two on b, one on a), then b is SIGKILLed: what a's /presence says.
fn presence_after_kill(mode: &str) -> (serde_json::Value, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let r = redis(dir.path());
    let flags = [
        "--presence",
        mode,
        "--presence-ttl",
        "1500ms",
        "--no-publish",
    ];
    let a = node(&r, "a", &flags);
    let mut b = node(&r, "b", &flags);
    let _clients = [
        Sse::connect(a.addr, None),
        Sse::connect(b.addr, None),
        Sse::connect(b.addr, None),
    ];
    wait_http(&a, "/presence", "three online", |_, body| {
        body.contains("\"online\":3")
    });
    b.signal(libc::SIGKILL);
    b.wait_exit(LIMIT).expect("b killed");
    let t0 = Instant::now();
    // TTL 1.5 s + one heartbeat 0.5 s, with room for a loaded machine.
    let window = Duration::from_secs(6);
    let mut last = presence(&a);
    while t0.elapsed() < window && last["online"] != 1 {
        std::thread::sleep(Duration::from_millis(50));
        last = presence(&a);
    }
    (last, t0.elapsed())
}

#[test]
fn ttl_presence_corrects_itself_after_a_node_dies_and_events_keep_ghosts() {
    let (ttl, took) = presence_after_kill("ttl");
    assert_eq!(ttl["online"], 1, "ttl presence after {took:?}: {ttl}");
    assert_eq!(ttl["mode"], "ttl");
    assert_eq!(ttl["local"], 1);
    let (ev, took) = presence_after_kill("events");
    assert!(took >= Duration::from_secs(6), "{took:?}");
    assert_eq!(
        ev["online"], 3,
        "events presence keeps the dead node's 2 ghosts: {ev}"
    );
    assert_eq!(ev["mode"], "events");
    assert_eq!(ev["local"], 1);
}

#[test]
fn a_redis_restart_is_survived_without_silent_loss() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = redis(dir.path());
    let a = node(&r, "a", &["--rate", "20"]);
    let b = node(&r, "b", &["--no-publish"]);
    let mut clients = [Sse::connect(a.addr, None), Sse::connect(b.addr, None)];
    for c in clients.iter_mut() {
        c.until("rounds before the outage", |ev| ev.len() >= 5);
    }
    r.stop();
    for s in [&a, &b] {
        let body = wait_http(s, "/healthz", "outage reported", |st, b| {
            st == 200 && b.starts_with("degraded: redis down")
        });
        assert!(body.contains("redis"), "{body}");
        assert_eq!(metric(s, "rtcheck_redis_up"), 0.0);
        assert_eq!(s.stats()["redis_up"], false);
        assert_eq!(s.stats()["clients"]["sse"], 1, "the client stays");
    }
    r.restart().unwrap();
    for s in [&a, &b] {
        wait_http(s, "/healthz", "recovery", |st, body| {
            st == 200 && body.contains("redis up")
        });
        assert!(metric(s, "rtcheck_redis_reconnects_total") >= 1.0);
    }
    assert!(metric(&a, "rtcheck_redis_publish_failures_total") >= 1.0);
    for c in clients.iter_mut() {
        let before = *c.seqs().last().unwrap();
        c.until("rounds after the restart", |ev| {
            ev.iter()
                .filter(|e| matches!(e, Ev::Msg(s) if *s > before))
                .count()
                >= 5
        });
        // Every seq from the first to the last arrived once or is inside a gap marker.
        let seqs = c.seqs();
        assert_eq!(c.duplicates(), 0, "{:?}", c.events);
        let (lo, hi) = (seqs[0], *seqs.last().unwrap());
        for s in lo..=hi {
            let covered = c.events.iter().any(|e| match e {
                Ev::Msg(x) => *x == s,
                Ev::Gap(f, t) => (*f..=*t).contains(&s),
                Ev::Reset => false,
            });
            assert!(covered, "seq {s} lost silently: {:?}", c.events);
        }
    }
    // Rounds scheduled while Redis was down got no seq: their seqs are reserved once it is
    // back, and every client gets them as a gap marker (they used to vanish unmarked).
    let unpublished = metric(&a, "rtcheck_redis_publish_failures_total") as u64;
    for c in clients.iter_mut() {
        c.until("the unpublished rounds as a gap", |ev| {
            gap_covered(ev) >= unpublished
        });
    }
    assert!(
        a.stderr().contains("were never published"),
        "{}",
        a.stderr()
    );
    assert!(metric(&b, "rtcheck_redis_gap_messages_total") >= unpublished as f64);
}

/// Seqs covered by gap markers.
fn gap_covered(ev: &[Ev]) -> u64 {
    ev.iter()
        .map(|e| match e {
            Ev::Gap(f, t) => t - f + 1,
            Ev::Msg(_) | Ev::Reset => 0,
        })
        .sum()
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

#[test]
fn a_bad_or_unreachable_redis_is_one_line_and_exit_2() {
    for (url, want) in [
        ("nope://x", "not a Redis URL"),
        ("redis://127.0.0.1:1/", "cannot connect"),
    ] {
        let out = common::rtcheck()
            .args(["serve", "--listen", "127.0.0.1:0", "--redis", url])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{url}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want) && err.contains(url), "{err}");
    }
    // A cluster flag without --redis names the flag it needs.
    for flag in [["--path", "naive"], ["--presence", "events"]] {
        let out = common::rtcheck().arg("serve").args(flag).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("--redis <URL>"), "{err}");
    }
}

/// WebSocket frames from a raw client until `n` complete frames arrived.
fn ws_frames(s: &mut TcpStream, n: usize) -> Vec<(u8, Vec<u8>)> {
    let t0 = Instant::now();
    let mut all = Vec::new();
    let mut buf = [0u8; 65536];
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    loop {
        let mut frames = common::parse_server_frames(&all);
        // The hello (`{"epoch":..,"latest":..}`) opens every connection: not counted.
        if frames
            .first()
            .is_some_and(|f| f.1.starts_with(b"{\"epoch\""))
        {
            frames.remove(0);
        }
        if frames.len() >= n {
            return frames;
        }
        assert!(t0.elapsed() < LIMIT, "{} of {n} frames", frames.len());
        match s.read(&mut buf) {
            Ok(0) => panic!("closed after {} frames", frames.len()),
            Ok(k) => all.extend_from_slice(&buf[..k]),
            Err(_) => {}
        }
    }
}

#[test]
fn websocket_resume_on_another_node_gets_the_gap_marker_then_the_ring() {
    let dir = tempfile::tempdir().unwrap();
    let r = redis(dir.path());
    let a = node(&r, "a", &["--rate", "50", "--rounds", "30", "--ring", "8"]);
    a.wait_stats(LIMIT, |v| v["finished"] == true && v["rounds_sent"] == 30);
    let b = node(&r, "b", &["--no-publish", "--ring", "8"]);
    let mut s = common::raw_ws_at(b.addr, "/ws?since=5", None);
    let frames = ws_frames(&mut s, 9);
    assert_eq!(frames[0].0, rtcheck_wire::ws::OP_TEXT);
    assert_eq!(frames[0].1, br#"{"from":6,"to":22}"#);
    let seqs: Vec<u64> = frames[1..]
        .iter()
        .map(|(_, p)| rtcheck_wire::payload::decode(p).unwrap().0)
        .collect();
    assert_eq!(seqs, (23..=30).collect::<Vec<_>>());
}

#[test]
fn a_lost_subscription_catches_up_from_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let r = redis(dir.path());
    let a = node(&r, "a", &["--rate", "50"]);
    let b = node(&r, "b", &["--no-publish"]);
    let mut c = Sse::connect(b.addr, None);
    c.until("rounds before", |ev| ev.len() >= 5);
    // Redis drops every subscriber (both relays); rounds keep being published meanwhile.
    let client = redis::Client::open(r.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let killed: u64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query(&mut con)
        .unwrap();
    assert!(killed >= 2, "{killed}");
    for s in [&a, &b] {
        let t0 = Instant::now();
        while metric(s, "rtcheck_redis_reconnects_total") < 1.0 {
            assert!(t0.elapsed() < LIMIT, "no reconnect");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let before = *c.seqs().last().unwrap();
    c.until("rounds after", |ev| {
        ev.iter()
            .any(|e| matches!(e, Ev::Msg(s) if *s > before + 20))
    });
    let seqs = c.seqs();
    let first = seqs[0];
    assert_eq!(
        seqs,
        (first..first + seqs.len() as u64).collect::<Vec<_>>(),
        "every round once, in order"
    );
    assert_eq!(metric(&b, "rtcheck_redis_gap_messages_total"), 0.0);
}

#[test]
fn two_publishers_share_one_history() {
    let dir = tempfile::tempdir().unwrap();
    let r = redis(dir.path());
    let flags = ["--rate", "20", "--wait-start"];
    let (a, b) = (node(&r, "a", &flags), node(&r, "b", &flags));
    let (mut ca, mut cb) = (Sse::connect(a.addr, None), Sse::connect(b.addr, None));
    for s in [&a, &b] {
        s.wait_stats(LIMIT, |v| v["clients"]["sse"] == 1);
    }
    a.start_publishing(20);
    b.start_publishing(20);
    for c in [&mut ca, &mut cb] {
        c.until("40 rounds", |ev| ev.len() >= 40);
    }
    // One global seq (no collision, no hole) and one order on every node.
    assert_eq!(ca.seqs(), (1..=40).collect::<Vec<_>>());
    assert_eq!(ca.events, cb.events);
}

#[test]
fn a_clean_shutdown_sends_its_leaves_even_with_events() {
    let dir = tempfile::tempdir().unwrap();
    let r = redis(dir.path());
    let flags = ["--presence", "events", "--no-publish"];
    let a = node(&r, "a", &flags);
    let mut b = node(&r, "b", &flags);
    let _clients = [Sse::connect(b.addr, None), Sse::connect(b.addr, None)];
    wait_http(&a, "/presence", "two online", |_, body| {
        body.contains("\"online\":2")
    });
    b.signal(libc::SIGTERM);
    assert!(b.wait_exit(LIMIT).is_some_and(|s| s.code() == Some(143)));
    assert_eq!(presence(&a)["online"], 0, "a clean exit leaves no ghost");
}

/// The test as a publisher: round `seq` into the Stream and the channel (a seq it skips is
/// one the Stream no longer holds).
fn publish_raw(con: &mut redis::Connection, seq: u64) {
    let ts = rtcheck_base::os::clock::now_ns();
    let _: String = redis::cmd("XADD")
        .arg("rtcheck:ring")
        .arg(format!("{seq}-0"))
        .arg("ts")
        .arg(ts)
        .arg("node")
        .arg("t")
        .query(con)
        .unwrap();
    let _: u64 = redis::cmd("PUBLISH")
        .arg("rtcheck:rounds")
        .arg(format!("{seq} {ts} t"))
        .query(con)
        .unwrap();
}

/// Seqs of a poll answer, and the answer.
fn poll(s: &Server, since: u64) -> (Vec<u64>, serde_json::Value) {
    let (status, body) = http_get(s.addr, &format!("/poll?since={since}"));
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let seqs = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_u64().unwrap())
        .collect();
    (seqs, v)
}

#[test]
fn a_resume_across_a_hole_in_the_nodes_ring_gets_a_gap_marker_even_with_redis_down() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = redis(dir.path());
    let b = node(&r, "b", &["--no-publish"]);
    let mut live = Sse::connect(b.addr, None);
    b.wait_stats(LIMIT, |v| v["clients"]["sse"] == 1);
    let mut con = redis::Client::open(r.url())
        .unwrap()
        .get_connection()
        .unwrap();
    for seq in 1..=5 {
        publish_raw(&mut con, seq);
    }
    live.until("1..=5 live", has(5));
    // 6..=9 never reached b and the Stream no longer holds them: b marks them live, and
    // its own ring keeps 1..=5 and 10.. with a hole between.
    for seq in 10..=12 {
        publish_raw(&mut con, seq);
    }
    live.until("10..=12 live", has(12));
    assert!(live.events.contains(&Ev::Gap(6, 9)), "{:?}", live.events);
    let want = vec![
        Ev::Msg(4),
        Ev::Msg(5),
        Ev::Gap(6, 9),
        Ev::Msg(10),
        Ev::Msg(11),
        Ev::Msg(12),
    ];
    let mut up = Sse::connect(b.addr, Some(3));
    up.until("resume with redis up", has(12));
    assert_eq!(up.events, want, "redis up");
    r.stop();
    wait_http(&b, "/healthz", "outage", |_, body| {
        body.starts_with("degraded")
    });
    let mut down = Sse::connect(b.addr, Some(3));
    down.until("resume with redis down", has(12));
    assert_eq!(down.events, want, "redis down");
    // Polls stop before the hole; the next poll gets it as its gap.
    let (seqs, v) = poll(&b, 3);
    assert_eq!((seqs, v["latest"].as_u64()), (vec![4, 5], Some(5)), "{v}");
    assert_eq!(v["gap"], false, "{v}");
    let (seqs, v) = poll(&b, 5);
    assert_eq!(seqs, vec![10, 11, 12], "{v}");
    assert_eq!(
        (v["gap"].as_bool(), v["oldest"].as_u64()),
        (Some(true), Some(10))
    );
    // A resume id of u64::MAX is beyond anything held: a reset, answered from the ring's
    // start (up to the hole), never with a marker from a wrapped `since + 1`.
    let (seqs, v) = poll(&b, u64::MAX);
    assert_eq!(v["reset"], true, "{v}");
    assert_eq!(seqs, vec![1, 2, 3, 4, 5], "{v}");
    assert_eq!(v["gap"], false, "{v}");
    // A WebSocket resume in the URL: the same gap marker inline.
    let mut ws = common::raw_ws_at(b.addr, "/ws?since=3", None);
    let frames = ws_frames(&mut ws, 6);
    assert_eq!(frames[2].1, br#"{"from":6,"to":9}"#);
    let seqs: Vec<u64> = [0, 1, 3, 4, 5]
        .iter()
        .map(|&i| rtcheck_wire::payload::decode(&frames[i].1).unwrap().0)
        .collect();
    assert_eq!(seqs, vec![4, 5, 10, 11, 12]);
}

#[test]
fn a_websocket_resume_message_replays_from_the_redis_ring() {
    use tokio_tungstenite::tungstenite::{connect, stream::MaybeTlsStream, Message};
    let dir = tempfile::tempdir().unwrap();
    let r = redis(dir.path());
    let a = node(&r, "a", &["--rate", "50", "--rounds", "30", "--ring", "32"]);
    a.wait_stats(LIMIT, |v| v["finished"] == true && v["rounds_sent"] == 30);
    // b starts after the last round: only Redis holds the rounds the client missed.
    let b = node(&r, "b", &["--no-publish", "--ring", "32"]);
    let (mut ws, _) = connect(format!("ws://{}/ws", b.addr)).unwrap();
    if let MaybeTlsStream::Plain(s) = ws.get_ref() {
        s.set_read_timeout(Some(LIMIT)).unwrap();
    }
    ws.send(Message::text("{\"since\":10}")).unwrap();
    let (mut seqs, mut texts) = (Vec::new(), Vec::new());
    let t0 = Instant::now();
    while seqs.len() < 20 && texts.is_empty() {
        assert!(t0.elapsed() < LIMIT, "{seqs:?}");
        match ws.read().unwrap() {
            Message::Binary(p) => seqs.push(rtcheck_wire::payload::decode(&p).unwrap().0),
            Message::Text(t) if t.as_str().starts_with("{\"epoch\"") => {} // the hello
            Message::Text(t) => texts.push(t.to_string()),
            _ => {}
        }
    }
    // From the Stream, as for `/ws?since=`: every seq after 10 once, no gap marker.
    assert!(texts.is_empty(), "{texts:?} then {seqs:?}");
    assert_eq!(seqs, (11..=30).collect::<Vec<_>>());
}

#[test]
fn rounds_unpublished_at_the_end_of_a_run_still_reach_clients_as_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = redis(dir.path());
    let a = node(&r, "a", &["--rate", "20", "--rounds", "10"]);
    let b = node(&r, "b", &["--no-publish"]);
    let mut c = Sse::connect(b.addr, None);
    c.until("rounds before the outage", |ev| !ev.is_empty());
    r.stop();
    // The run ends while Redis is down, and every round is either published or counted
    // before it returns: no later round can carry the reservation, the idle retry must.
    let t0 = Instant::now();
    let accounted = || {
        let failed = metric(&a, "rtcheck_redis_publish_failures_total") as u64;
        failed + a.stats()["rounds_sent"].as_u64().unwrap()
    };
    while accounted() < 10 {
        assert!(
            t0.elapsed() < LIMIT,
            "rounds not accounted: {}",
            accounted()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let owed = metric(&a, "rtcheck_redis_publish_failures_total") as u64;
    assert!(owed >= 1);
    r.restart().unwrap();
    c.until("the unpublished tail as a gap", |ev| {
        gap_covered(ev) >= owed
    });
    // Every seq from the first to the last reserved one: received or in a gap marker.
    let top = c
        .events
        .iter()
        .map(|e| match e {
            Ev::Msg(s) | Ev::Gap(_, s) => *s,
            Ev::Reset => 0,
        })
        .max()
        .unwrap();
    let first = c.seqs()[0];
    let covered = c.seqs().len() as u64 + gap_covered(&c.events);
    assert_eq!(covered, top - first + 1, "{:?}", c.events);
    assert!(
        top >= 10,
        "10 scheduled rounds, each with a seq: {:?}",
        c.events
    );
    // A resume after the last round b holds gets the tail gap too, and so does a poll.
    let mut late = Sse::connect(b.addr, Some(first));
    late.until("the tail gap on resume", |ev| {
        ev.iter().any(|e| matches!(e, Ev::Gap(_, t) if *t == top))
    });
    let covered = late.seqs().len() as u64 + gap_covered(&late.events);
    assert_eq!(covered, top - first, "{:?}", late.events);
    let last_round = *c.seqs().last().unwrap();
    let (seqs, v) = poll(&b, last_round);
    assert!(seqs.is_empty(), "{v}");
    assert_eq!(v["gap"], true, "{v}");
    assert_eq!(v["oldest"].as_u64(), Some(top + 1), "{v}");
}

/// A deploy restarts Redis (no persistence) and the publishing node together: the new
/// publisher finds an empty Redis and starts a new epoch from seq 1. A relay node that
/// kept its clients must reset them (a reset marker, then the new epoch from seq 1), never
/// take the new seqs as "already delivered" (it used to drop ~200 rounds per client
/// silently), and no seq may carry two different rounds.
#[test]
fn redis_and_the_publisher_restarted_together_reset_the_relays_clients() {
    deploy_restart(&["--no-publish"]);
}

/// The same deploy with a relay on the shards strategy (no writer task per client): the
/// live reset marker still reaches its clients before the new epoch's first round.
#[test]
fn a_relay_on_the_shards_strategy_sends_the_live_reset_too() {
    deploy_restart(&["--no-publish", "--strategy", "shards", "--shards", "2"]);
}

fn deploy_restart(relay: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut r = redis(dir.path());
    let mut a = node(&r, "a", &["--rate", "40"]);
    let b = node(&r, "b", relay);
    let mut c = Sse::connect(b.addr, None);
    c.until("rounds before the restart", |ev| {
        ev.iter().any(|e| matches!(e, Ev::Msg(s) if *s >= 40))
    });
    let (_, body) = http_get(b.addr, "/poll?since=0");
    let old: serde_json::Value = serde_json::from_str(&body).unwrap();
    let old_epoch = old["epoch"].as_str().map(str::to_string);
    // The deploy: the publisher stops, Redis restarts empty, a new publisher starts.
    a.signal(libc::SIGTERM);
    assert!(a.wait_exit(LIMIT).is_some());
    r.restart().unwrap();
    let _a2 = node(&r, "a", &["--rate", "40"]);
    c.until("the reset, then 20 rounds of the new epoch", |ev| {
        let at = ev.iter().position(|e| *e == Ev::Reset);
        at.is_some_and(|i| ev[i..].iter().filter(|e| matches!(e, Ev::Msg(_))).count() >= 20)
    });
    let at = c.events.iter().position(|e| *e == Ev::Reset).unwrap();
    let (before, after) = c.events.split_at(at);
    // Each epoch on its own: every seq once, or inside a gap marker; the new one from 1.
    for (what, evs, lo) in [
        ("old epoch", before, None),
        ("new epoch", &after[1..], Some(1)),
    ] {
        let seqs: Vec<u64> = evs
            .iter()
            .filter_map(|e| match e {
                Ev::Msg(s) => Some(*s),
                _ => None,
            })
            .collect();
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), seqs.len(), "{what}: a seq twice: {evs:?}");
        let (lo, hi) = (lo.unwrap_or(seqs[0]), *seqs.last().unwrap());
        for s in lo..=hi {
            let covered = evs.iter().any(|e| match e {
                Ev::Msg(x) => *x == s,
                Ev::Gap(f, t) => (*f..=*t).contains(&s),
                Ev::Reset => false,
            });
            assert!(covered, "{what}: seq {s} lost silently: {:?}", c.events);
        }
    }
    assert_eq!(c.events.iter().filter(|e| **e == Ev::Reset).count(), 1);
    assert!(metric(&b, "rtcheck_epoch_resets_total") >= 1.0);
    let health = wait_http(&b, "/healthz", "the reset reported", |st, body| {
        st == 200 && body.starts_with("ok (node b, redis up")
    });
    assert!(health.contains("epoch reset from"), "{health}");
    // A client resuming on the relay with an id of the old epoch: a reset marker first.
    let (_, body) = http_get(b.addr, "/poll?since=0");
    let now: serde_json::Value = serde_json::from_str(&body).unwrap();
    let old_epoch = old_epoch.expect("poll answers carry the epoch");
    assert_ne!(now["epoch"], old_epoch.as_str(), "{now}");
    let mut s = TcpStream::connect(b.addr).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    write!(
        s,
        "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 30@{old_epoch}\r\n\r\n"
    )
    .unwrap();
    let mut got = String::new();
    let mut buf = [0u8; 8192];
    while !got.contains("\nid: ") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "{got}");
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(got.contains("event: reset\ndata: {\"reset\":true"), "{got}");
}

/// Seqs after `since` up to `top` a client was never told about: neither received nor
/// inside a gap marker, nor disclaimed by a reset marker (a reset voids the client's
/// position: what lies between it and the first event after the reset is announced as
/// gone, as `verify delivery` counts it).
fn lost_silently(ev: &[Ev], since: u64, top: u64) -> Vec<u64> {
    let mut lost = Vec::new();
    // The last seq the client is accounted up to; None right after a reset.
    let mut at = Some(since);
    for e in ev {
        let (first, last) = match *e {
            Ev::Reset => {
                at = None;
                continue;
            }
            Ev::Msg(s) => (s, s),
            Ev::Gap(f, t) => (f, t),
        };
        let from = at.map_or(first, |a| a + 1);
        lost.extend(from..first);
        at = Some(at.map_or(last, |a| a.max(last)));
    }
    lost.extend(at.map_or(top + 1, |a| a + 1)..=top);
    lost
}

/// SIGSTOPs redis-server while alive: SIGCONT on drop, so a failing test never leaves it
/// stopped (the other nodes' shutdown would hang on it).
struct Paused(i32);

impl Paused {
    fn new(r: &RedisServer) -> Paused {
        let pid = r.pid().expect("redis-server running") as i32;
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        Paused(pid)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        // SAFETY: as in Paused::new.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

/// Issue #21: a client resumes on a fresh node (empty ring, it relayed nothing) while
/// Redis does not answer, so the node can neither replay what the client missed nor say
/// how much it was. It must not leave the client silent: it answers at once (bounded by
/// the Redis operation timeout) with a reset marker, and once Redis is back every later
/// round reaches the client; no seq after the client's is lost without a marker.
#[test]
fn a_resume_on_a_fresh_node_while_redis_is_stalled_gets_a_marker_not_silence() {
    let dir = tempfile::tempdir().unwrap();
    let r = redis(dir.path());
    let a = node(&r, "a", &["--rate", "20", "--rounds", "40"]);
    a.wait_stats(LIMIT, |v| v["finished"] == true && v["rounds_sent"] == 40);
    // A client that got rounds 1..=5 and missed the rest (chosen, not read: a starved test
    // thread could read all 40 rounds in one go).
    let since = 5;
    let (_, body) = http_get(a.addr, "/poll?since=0");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let epoch = v["epoch"]
        .as_str()
        .expect("poll carries the epoch")
        .to_string();
    // b starts after the last round: it has relayed nothing, its ring is empty.
    let b = node(&r, "b", &["--no-publish"]);
    assert_eq!(b.stats()["redis_up"], true);
    let id = format!("{since}@{epoch}");
    let (mut sse, ws, polled, waited) = {
        let _stalled = Paused::new(&r);
        let t0 = Instant::now();
        let mut sse = Sse::resume(b.addr, Some(&id));
        sse.until("an answer while redis is stalled", |ev| !ev.is_empty());
        let waited = t0.elapsed();
        let mut ws = common::raw_ws_at(b.addr, &format!("/ws?since={since}&epoch={epoch}"), None);
        let ws = ws_frames(&mut ws, 1);
        let (_, polled) = http_get(b.addr, &format!("/poll?since={since}&epoch={epoch}"));
        (sse, ws, polled, waited)
    };
    eprintln!("first answer after {waited:?}: {:?}", sse.events);
    // The reset marker, first and at once: b cannot know what the client missed.
    assert_eq!(sse.events, vec![Ev::Reset], "redis stalled");
    assert!(waited < Duration::from_secs(20), "{waited:?}");
    let reset = String::from_utf8_lossy(&ws[0].1).to_string();
    assert!(reset.starts_with("{\"reset\":true"), "ws: {reset}");
    // b held nothing (`latest` 0: its ring is empty, it has relayed no round).
    let said = format!("\"latest\":0,\"since\":{since},\"client_epoch\":\"{epoch}\"");
    assert!(reset.contains(&said), "ws: {reset}");
    let polled: serde_json::Value = serde_json::from_str(&polled).unwrap();
    assert_eq!(polled["reset"], true, "poll: {polled}");
    // Redis is back: a publisher's next rounds reach the resumed client, every one.
    wait_http(&b, "/healthz", "recovery", |st, body| {
        st == 200 && body.contains("redis up")
    });
    let _p = node(&r, "p", &["--rate", "20", "--rounds", "10"]);
    sse.until("the rounds after the stall", has(50));
    assert_eq!(sse.duplicates(), 0, "{:?}", sse.events);
    let lost = lost_silently(&sse.events, since, 50);
    assert!(lost.is_empty(), "lost silently {lost:?}: {:?}", sse.events);
}
