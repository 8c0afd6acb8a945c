//! bench fanout and verify delivery through a library protocol (issue 42): python-socketio's
//! hub as its docs write one (aiohttp, `emit` to all: RELAY=1), Engine.IO v4 with a ping
//! every second and a client that does not answer within a second dropped. rtcheck
//! detects Socket.IO from the URL, its clients and publisher speak it (connect packet,
//! `42["message",...]`, pongs), and the counts are checked against an independent
//! python-socketio client and the hub's own connect/disconnect log.
use crate::common;
use crate::foreign_common;
use foreign_common::*;
use serde_json::Value;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PATH: &str = "/socket.io/?EIO=4&transport=websocket";

/// The docs' chat hub: relays to all, pings every second, drops a client silent for one more.
fn hub() -> SocketioHub {
    SocketioHub::start(&[
        ("RELAY", "1"),
        ("PING_INTERVAL", "1"),
        ("PING_TIMEOUT", "1"),
    ])
}

/// The independent client (socketio_client.py), connected; it counts until its stdin
/// closes. Killed on drop if the test fails before.
struct Observer(Child);

impl Observer {
    fn start(hub: &Foreign) -> Observer {
        let mut cmd = Command::new(python());
        cmd.arg(fixture("socketio_client.py"))
            .args([&hub.url("http", ""), "0"]);
        Observer::spawn(cmd)
    }

    /// `cmd` started; returns once it said "connected" on stderr (bounded).
    fn spawn(mut cmd: Command) -> Observer {
        let mut c = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait (bounded) for its "connected" line: it must see the first round.
        let err = c.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(err).lines() {
                let Ok(l) = l else { return };
                let _ = tx.send(l);
            }
        });
        let until = Instant::now() + Duration::from_secs(60);
        let mut said = Vec::new();
        while Instant::now() < until {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(l) if l == "connected" => return Observer(c),
                Ok(l) => said.push(l),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(_) => break,
            }
        }
        let _ = c.kill();
        let _ = c.wait();
        panic!("the independent client did not connect: {said:?}");
    }

    /// Close its stdin; its count.
    fn finish(mut self) -> Value {
        drop(self.0.stdin.take());
        let mut out = String::new();
        use std::io::Read;
        self.0
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let _ = self.0.wait();
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("observer: not JSON ({e}): {out}"))
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn json_of(args: &[&str]) -> (Option<i32>, Value, String) {
    let out = common::rtcheck()
        .args(args)
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let v = serde_json::from_str(&text).unwrap_or(Value::Null);
    (out.status.code(), v, format!("{text}\nstderr: {err}"))
}

fn seqs(v: &Value) -> Vec<u64> {
    v["seqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect()
}

/// 20 clients, 2 of them slow (never read), rtcheck publishing 40 rounds through the hub
/// (`--publish ws`, the hub emits each to all). Every healthy client gets every round,
/// unwrapped to rtcheck's payload; the independent client saw the same 40; and no
/// client was dropped by the library's 2 s heartbeat timeout, the slow ones included
/// (slow at the socket, never at the heartbeat): the hub's first disconnect comes after
/// the 8 s of publishing.
#[test]
fn bench_fanout_speaks_socketio_to_a_python_socketio_hub() {
    let _timed = common::timed();
    let hub = hub();
    let observer = Observer::start(&hub);
    let url = hub.url("ws", PATH);
    let (code, r, out) = json_of(&[
        "bench",
        "fanout",
        "--server",
        &url,
        "--format",
        "json",
        "--publish",
        "ws",
        "--connections",
        "20",
        "--slow",
        "2",
        "--rounds",
        "40",
        "--rate",
        "5",
        "--size",
        "256",
        "--drain",
        "2s",
    ]);
    let seen = observer.finish();
    let ctx = format!("{out}\nobserver: {seen}\nhub log:\n{}", hub.log_text());
    assert_eq!(code, Some(0), "{ctx}");
    assert_eq!(r["app_protocol"]["protocol"], "socketio", "{ctx}");
    assert!(
        r["app_protocol"]["why"].as_str().unwrap().contains("EIO=4"),
        "{ctx}"
    );
    let run = &r["scenarios"][0];
    assert_eq!(run["valid"], true, "{ctx}");
    assert_eq!(
        run["accounting"]["received"].as_u64(),
        Some(18 * 40),
        "{ctx}"
    );
    // The independent client: every round rtcheck published went through the hub.
    assert_eq!(seen["connected"], true, "{ctx}");
    assert_eq!(seqs(&seen), (1..=40).collect::<Vec<u64>>(), "{ctx}");
    // The hub's own log: 20 clients, the publisher and the observer; none dropped by
    // the heartbeat (1 s ping + 1 s timeout) while the rounds went out.
    let s = hub.sessions();
    assert_eq!(s.len(), 22, "{ctx}");
    let last_connect = s.iter().map(|x| x.0).fold(0.0, f64::max);
    let first_drop = s.iter().filter_map(|x| x.1).fold(f64::MAX, f64::min);
    assert!(
        first_drop - last_connect >= 6.0,
        "a session ended {:.1} s after the last connect\n{ctx}",
        first_drop - last_connect
    );
    // The library's userland queue is named where the slow clients' backlog goes.
    let notes = run["notes"].to_string();
    assert!(notes.contains("engine.io's per-socket queue"), "{ctx}");
}

/// verify delivery through the same hub: the clients join, leave the four ways and come
/// back as Socket.IO clients do (no resume: python-socketio has no connection state
/// recovery), rtcheck publishing. What a client missed while away is lost silently (the
/// verdict a careful SRE gives a hub that neither replays nor says so); what it received
/// is real: never more than the independent client, which saw every published seq.
#[test]
fn verify_delivery_speaks_socketio_and_counts_the_silent_loss() {
    let _timed = common::timed();
    let hub = hub();
    let observer = Observer::start(&hub);
    let url = hub.url("ws", PATH);
    let (code, r, out) = json_of(&[
        "verify",
        "delivery",
        "--server",
        &url,
        "--format",
        "json",
        "--publish",
        "ws",
        "--rate",
        "20",
        "--size",
        "256",
        "--max-disconnect",
        "1500ms",
        "--connections",
        "3",
    ]);
    let seen = observer.finish();
    let ctx = format!("{out}\nobserver: {seen}");
    assert_eq!(code, Some(1), "{ctx}");
    let foreign = &r["options"]["foreign"];
    assert_eq!(foreign["app_protocol"]["protocol"], "socketio", "{ctx}");
    let sent = r["publisher"]["sent"].as_u64().unwrap();
    assert!(sent > 20, "{ctx}");
    assert_eq!(r["publisher"]["failed"], 0, "{ctx}");
    // Every seq the publisher sent reached the independent client through the hub.
    let got = seqs(&seen);
    assert_eq!(got.len() as u64, sent, "{ctx}");
    for k in ["clean", "reset", "silent", "storm"] {
        let x = r["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["delivery"] == "foreign" && x["disconnect"] == k)
            .unwrap_or_else(|| panic!("no run {k}\n{ctx}"));
        let received = x["received"].as_u64().unwrap();
        assert!(received > 0 && received <= sent * 3, "{x:#}\n{ctx}");
        assert!(x["lost_silently"].as_u64().unwrap() > 0, "{x:#}\n{ctx}");
        assert_eq!(x["status"], "fail", "{x:#}");
    }
}

/// SockJS (node's sockjs, Debian `node-sockjs`): a chat hub whose `h` heartbeat comes
/// every second. bench detects SockJS from the session path, publishes `["..."]` and
/// unwraps each `a["..."]`: every client gets every round, and the hub's own count of
/// what it wrote (GET /stats) is the clients' plus the publisher's copy of each round.
#[test]
fn bench_fanout_speaks_sockjs_to_a_node_sockjs_hub() {
    let _timed = common::timed();
    let hub = sockjs_hub(&[("HEARTBEAT_MS", "1000")]);
    let url = hub.url("ws", "/hub/000/rtcheck1/websocket");
    let (code, r, out) = json_of(&[
        "bench",
        "fanout",
        "--server",
        &url,
        "--format",
        "json",
        "--publish",
        "ws",
        "--connections",
        "20",
        "--rounds",
        "30",
        "--rate",
        "10",
        "--size",
        "256",
        "--drain",
        "2s",
    ]);
    let stats = fixture_stats(&hub);
    let ctx = format!("{out}\nhub: {stats}");
    assert_eq!(code, Some(0), "{ctx}");
    assert_eq!(r["app_protocol"]["protocol"], "sockjs", "{ctx}");
    assert!(
        r["app_protocol"]["why"]
            .as_str()
            .unwrap()
            .contains("SockJS"),
        "{ctx}"
    );
    let run = &r["scenarios"][0];
    assert_eq!(run["valid"], true, "{ctx}");
    assert_eq!(
        run["accounting"]["received"].as_u64(),
        Some(20 * 30),
        "{ctx}"
    );
    // The hub received each round once, from rtcheck's publisher, and wrote it to the
    // 20 clients and back to the publisher (its last copy may meet that connection
    // closing).
    assert_eq!(stats["received"].as_u64(), Some(30), "{ctx}");
    let sent = stats["sent"].as_u64().unwrap();
    assert!((20 * 30 + 29..=21 * 30).contains(&sent), "{ctx}");
}

/// `hops --app-protocol`: Socket.IO's documented 25 s server ping against nginx's idle
/// limit: the default 60 s holds it, 40 s is under it but above half of it, 20 s cuts
/// every quiet client first (and says what to set). The library's source is carried.
#[test]
fn hops_judges_a_librarys_heartbeat_against_the_idle_chain() {
    let _timed = common::timed();
    let fit = |over: Option<&str>| {
        let mut args = vec!["hops", "--path", "nginx", "--app-protocol", "socketio"];
        args.extend(["--format", "json"]);
        if let Some(o) = over {
            args.extend(["--override", o]);
        }
        let (code, v, out) = json_of(&args);
        assert_eq!(code, Some(0), "{out}");
        v["library"].clone()
    };
    let l = fit(None);
    assert_eq!(
        (l["fit"].as_str(), l["interval_s"].as_f64()),
        (Some("holds"), Some(25.0)),
        "{l}"
    );
    assert!(l["source"].as_str().unwrap().contains("socket.io"), "{l}");
    assert_eq!(fit(Some("nginx.idle=40s"))["fit"], "late");
    let cut = fit(Some("nginx.idle=20s"));
    assert_eq!(cut["fit"], "cut", "{cut}");
    assert!(
        cut["sentence"].as_str().unwrap().contains("10 s or less"),
        "{cut}"
    );
    // Without a path there is nothing to hold: a usage error, one line.
    let out = common::rtcheck()
        .args(["hops", "--app-protocol", "socketio"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--app-protocol needs --path"), "{err}");
}

/// `choose --app-protocol socketio` with a path whose idle limit is 20 s: the
/// recommendation's notes say Engine.IO's 25 s ping is cut first.
#[test]
fn choose_checks_the_librarys_heartbeat_on_the_declared_path() {
    let _timed = common::timed();
    let (code, v, out) = json_of(&[
        "choose",
        "--visible-within",
        "1s",
        "--upstream",
        "none",
        "--loss",
        "replaceable",
        "--path",
        "nginx",
        "--override",
        "nginx.idle=20s",
        "--app-protocol",
        "socketio",
        "--no-input",
        "--format",
        "json",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("Library: socketio's heartbeat (the server pings every 25 s by default) comes after the 20 s idle limit at nginx"),
        "{notes}"
    );
}

/// RabbitMQ (Debian `rabbitmq-server`) with its Web-STOMP plugin, every listener on
/// 127.0.0.1 and a free port, its own epmd; killed with its process group on drop, its
/// epmd too.
struct Rabbit {
    child: std::process::Child,
    ws: u16,
    stomp: u16,
    epmd: u16,
    dir: tempfile::TempDir,
}

impl Rabbit {
    fn start() -> Rabbit {
        use std::os::unix::process::CommandExt;
        let server = "/usr/lib/rabbitmq/bin/rabbitmq-server";
        assert!(
            std::path::Path::new(server).exists(),
            "{server} missing: install the Debian package rabbitmq-server"
        );
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let [ws, stomp, amqp, dist, epmd] = [(); 5].map(|_| common::free_port());
        std::fs::write(d.join("enabled_plugins"), "[rabbitmq_web_stomp].\n").unwrap();
        let conf = format!(
            "web_stomp.tcp.port = {ws}\nweb_stomp.tcp.ip = 127.0.0.1\n\
             stomp.listeners.tcp.1 = 127.0.0.1:{stomp}\nlisteners.tcp.default = 127.0.0.1:{amqp}\n"
        );
        std::fs::write(d.join("rabbitmq.conf"), conf).unwrap();
        let log = std::fs::File::create(d.join("rabbit.log")).unwrap();
        let child = Command::new(server)
            .current_dir(d)
            .env("HOME", d)
            .env("RABBITMQ_NODENAME", format!("rtcheck{ws}@localhost"))
            .env("RABBITMQ_DIST_PORT", dist.to_string())
            .env("ERL_EPMD_PORT", epmd.to_string())
            .env("ERL_EPMD_ADDRESS", "127.0.0.1")
            .env(
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                "-kernel inet_dist_use_interface {127,0,0,1}",
            )
            .env("RABBITMQ_MNESIA_BASE", d.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", d.join("log"))
            .env("RABBITMQ_LOGS", "-")
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", d.join("enabled_plugins"))
            .env("RABBITMQ_CONFIG_FILE", d.join("rabbitmq"))
            .env("RABBITMQ_PID_FILE", d.join("pid"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap();
        let mut r = Rabbit {
            child,
            ws,
            stomp,
            epmd,
            dir,
        };
        // The Erlang VM and the plugins take a while on a loaded machine.
        let until = Instant::now() + Duration::from_secs(120);
        let up = |p: u16| {
            std::net::TcpStream::connect_timeout(
                &std::net::SocketAddr::from(([127, 0, 0, 1], p)),
                Duration::from_millis(200),
            )
            .is_ok()
        };
        while !(up(r.ws) && up(r.stomp)) {
            let exited = r.child.try_wait().unwrap();
            assert!(
                exited.is_none() && Instant::now() < until,
                "rabbitmq-server not listening ({exited:?}): {}",
                r.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        r
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("rabbit.log")).unwrap_or_default()
    }
}

impl Drop for Rabbit {
    fn drop(&mut self) {
        // The script and the VM share the group the spawn made; epmd daemonized itself.
        let pgid = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &pgid]).status();
        // Bounded: a group that did not die must not hang the test run.
        let until = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        // epmd refuses while it still lists the node it just lost: asked again, bounded.
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            let out = Command::new("epmd")
                .args(["-port", &self.epmd.to_string(), "-kill"])
                .env("ERL_EPMD_ADDRESS", "127.0.0.1")
                .output();
            let said =
                out.map(|o| String::from_utf8_lossy(&[o.stdout, o.stderr].concat()).into_owned());
            // Gone already (or no epmd binary to ask): nothing left to stop.
            if said.as_deref().map_or(true, |s| {
                s.contains("Killed") || s.contains("Cannot connect")
            }) {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// STOMP over WebSocket, live: RabbitMQ's Web-STOMP. probe speaks STOMP (CONNECT with
/// heart-beat, SUBSCRIBE) and counts the broker's negotiated heartbeat; bench fanout
/// subscribes 20 clients (2 slow, which keep sending their STOMP heart-beat blind) to
/// /topic/rtcheck and publishes 30 rounds as STOMP SENDs: every healthy client gets every
/// round, and an independent subscriber over plain STOMP (stdlib Python) saw the same 30.
#[test]
fn stomp_over_websocket_through_rabbitmq() {
    let _timed = common::timed();
    let rabbit = Rabbit::start();
    let url = format!("ws://127.0.0.1:{}/ws", rabbit.ws);
    let dest = "/topic/rtcheck";
    let (_, p, out) = json_of(&[
        "probe",
        "--idle-for",
        "12s",
        "--public",
        "--app-protocol",
        "stomp",
        "--channel",
        dest,
        "--format",
        "json",
        &url,
    ]);
    let ctx = format!("{out}\nbroker log:\n{}", rabbit.log());
    let hb = p["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings: {ctx}"))
        .iter()
        .find(|f| f["id"] == "heartbeat")
        .unwrap_or_else(|| panic!("no heartbeat finding: {ctx}"));
    assert_eq!(hb["status"], "pass", "{ctx}");
    assert!(
        hb["observed"].as_str().unwrap().contains("spoken: stomp"),
        "{ctx}"
    );
    assert!(
        hb["numbers"]["heartbeats"].as_f64().unwrap() >= 1.0,
        "{ctx}"
    );

    let mut cmd = Command::new(python());
    cmd.arg(fixture("stomp_observer.py"))
        .args(["127.0.0.1", &rabbit.stomp.to_string(), dest]);
    let observer = Observer::spawn(cmd);
    let (code, r, out) = json_of(&[
        "bench",
        "fanout",
        "--server",
        &url,
        "--format",
        "json",
        "--publish",
        "ws",
        "--app-protocol",
        "stomp",
        "--channel",
        dest,
        "--connections",
        "20",
        "--slow",
        "2",
        "--rounds",
        "30",
        "--rate",
        "10",
        "--size",
        "256",
        "--drain",
        "2s",
    ]);
    let seen = observer.finish();
    let ctx = format!("{out}\nobserver: {seen}\nbroker log:\n{}", rabbit.log());
    assert_eq!(code, Some(0), "{ctx}");
    assert_eq!(r["app_protocol"]["protocol"], "stomp", "{ctx}");
    let run = &r["scenarios"][0];
    assert_eq!(run["valid"], true, "{ctx}");
    assert_eq!(
        run["accounting"]["received"].as_u64(),
        Some(18 * 30),
        "{ctx}"
    );
    assert_eq!(seqs(&seen), (1..=30).collect::<Vec<u64>>(), "{ctx}");
}

/// Bad library-protocol flags are one line on stderr and exit 2, before anything runs.
#[test]
fn bad_app_protocol_flags_are_one_line_exit_2() {
    let _timed = common::timed();
    let cases: [(&[&str], &str); 5] = [
        (
            &[
                "bench",
                "fanout",
                "--server",
                "ws://127.0.0.1:1/ws",
                "--app-protocol",
                "socket-ioo",
            ],
            "unknown protocol (one of: raw, socketio",
        ),
        (
            &[
                "bench",
                "fanout",
                "--app-protocol",
                "socketio",
                "--connections",
                "100",
            ],
            "go with --server",
        ),
        (
            &[
                "bench",
                "fanout",
                "--server",
                "http://127.0.0.1:1/sse",
                "--transport",
                "sse",
                "--publish",
                "POST http://127.0.0.1:1/p",
                "--app-protocol",
                "socketio",
            ],
            "--app-protocol, --channel and --event are for WebSocket clients",
        ),
        (
            &[
                "verify",
                "delivery",
                "--server",
                "http://127.0.0.1:1/live",
                "--publish",
                "POST http://127.0.0.1:1/p",
                "--app-protocol",
                "socketio",
            ],
            "a library protocol rides on a ws:// URL",
        ),
        (
            &["verify", "delivery", "--event", "tick"],
            "go with --publish ws or --publish 'POST URL'",
        ),
    ];
    for (args, want) in cases {
        let out = common::rtcheck()
            .args(args)
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// The library's userland buffering, measured: python-socketio keeps every packet a slow
/// client has not read in engine.io's per-socket queue, without a bound. 10 slow clients
/// (which keep the heartbeat, so the hub never drops them) among 30, 200 rounds of
/// 16 KiB: the hub's own process (found by its port, sampled through the run) grows while
/// it removes none of them, and bench calls the shape unbounded, naming the queue.
#[test]
fn socketio_slow_clients_show_the_unbounded_userland_queue() {
    let _timed = common::timed();
    // One run on a fresh hub and a fresh log: the shape and the log are that run's alone.
    let attempt = || {
        // Pings every second as elsewhere, but 5 s to answer: this test is about the hub's
        // queue, and on a busy host a client's pong can be late past 1 s. A client that
        // never answered would still be dropped at 6 s, before the 8 s checked below.
        let hub = SocketioHub::start(&[
            ("RELAY", "1"),
            ("PING_INTERVAL", "1"),
            ("PING_TIMEOUT", "5"),
        ]);
        let url = hub.url("ws", PATH);
        let args = [
            "bench",
            "fanout",
            "--server",
            &url,
            "--format",
            "json",
            "--publish",
            "ws",
            "--scenario",
            "C",
            "--connections",
            "30",
            "--slow",
            "10",
            "--rounds",
            "200",
            "--rate",
            "20",
            "--size",
            "16KiB",
            "--drain",
            "2s",
        ];
        let (code, r, out) = json_of(&args);
        (code, r, out, hub)
    };
    // On a loaded 2-core host the publisher or the load generator can fall behind the
    // schedule and the run is rightly INVALID (seen in hogged runs): up to three runs,
    // each on a new hub, a new one only when every failed check is one of those; the
    // last is judged.
    let mut runs = 0;
    let (code, r, out, hub) = loop {
        runs += 1;
        let a = attempt();
        if runs == 3 || !common::late_only(&a.1["scenarios"][0]) {
            break a;
        }
    };
    assert_eq!(code, Some(0), "{out}");
    let c = &r["scenarios"][0];
    assert_eq!(c["valid"], true, "{c:#}");
    assert_eq!(c["shape"]["shape"], "unbounded", "{c:#}");
    assert_eq!(c["shape"]["evidence"], "queue-per-client", "{c:#}");
    assert!(
        c["server_process"]["found_by"]
            .as_str()
            .unwrap()
            .starts_with("python3, the listener on 127.0.0.1:"),
        "{c:#}"
    );
    assert!(
        c["notes"]
            .to_string()
            .contains("engine.io's per-socket queue"),
        "{c:#}"
    );
    // The hub's log: all 30 clients and the publisher stayed connected through the
    // rounds (the slow ones too: slow at the socket, never at the heartbeat).
    let s = hub.sessions();
    assert_eq!(s.len(), 31, "{s:?}");
    let last_connect = s.iter().map(|x| x.0).fold(0.0, f64::max);
    let first_drop = s.iter().filter_map(|x| x.1).fold(f64::MAX, f64::min);
    assert!(first_drop - last_connect >= 8.0, "{s:?}\n{out}");
}
