//! `rtcheck serve` as a process: banner, addr file, signals, parent death, flag errors,
//! and the raw-TCP floor.
use crate::common;
use common::*;
use rtcheck_wire::payload;
use std::io::Read;
use std::net::TcpStream;
use std::time::Duration;

#[test]
fn banner_names_address_endpoints_and_fd_limit() {
    let srv = Server::start(&["--rate", "1"]);
    // The banner is printed before the addr file is written.
    let err = srv.stderr();
    assert!(err.contains(&format!("http://{}", srv.addr)), "{err}");
    assert!(err.contains(&format!("ws://{}/ws", srv.addr)), "{err}");
    assert!(err.contains("/sse") && err.contains("/poll?since=SEQ") && err.contains("/metrics"));
    let (soft, hard) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    let _ = soft;
    assert!(err.contains(&format!("soft {hard}, hard {hard}")), "{err}");
    // Issue 27: the startup lines fit 80 columns (the URLs wrap between them).
    for l in err.lines() {
        assert!(l.chars().count() <= 80, "{} cols: {l}", l.chars().count());
    }
    assert!(err.contains("\n  strategy per-client"), "{err}");
    assert!(
        !err.contains("sessions:"),
        "no sessions without session-ack: {err}"
    );
    let srv = Server::start(&["--delivery", "session-ack", "--max-sessions", "7"]);
    let err = srv.stderr();
    assert!(
        err.contains("sessions: max 7 (new ones then get 503 + Retry-After)"),
        "{err}"
    );
    // 7 x (1024 x (1024 B + malloc's header + the entry twice) + the session): 7.9 MB.
    assert!(
        err.contains("sessions at worst: 7.9 MB (7 x 1.1 MB"),
        "{err}"
    );
    assert!(err.contains("session memory: "), "{err}");
    assert!(
        err.lines()
            .filter(|l| l.contains("sessions"))
            .all(|l| l.len() <= 80),
        "{err}"
    );
}

fn sigterm_or_sigint_exits_cleanly(sig: i32) {
    // A long --drain: the wait ends as soon as every client is closed, so the exit within
    // 20 s below shows a quick shutdown stays quick.
    let mut srv = Server::start(&["--rate", "20", "--drain", "60s"]);
    // Connected clients of every kind must not keep it alive.
    let mut ws = raw_ws(srv.addr, None);
    let mut sse = std::net::TcpStream::connect(srv.addr).unwrap();
    std::io::Write::write_all(&mut sse, b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    srv.wait_stats(Duration::from_secs(30), |s| {
        s["clients"]["ws"] == 1 && s["clients"]["sse"] == 1
    });
    srv.signal(sig);
    let st = srv
        .wait_exit(Duration::from_secs(20))
        .expect("exits within 20 s");
    // 128 + the signal, like every command stopped by one (130 Ctrl-C, 143 SIGTERM).
    assert_eq!(st.code(), Some(128 + sig));
    // The client got its close frame, 1001 (going away), then EOF: a clean close, not a
    // reset (read_to_end must end at EOF, not an error).
    ws.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut rest = Vec::new();
    assert!(
        ws.read_to_end(&mut rest).is_ok(),
        "clean close, not a reset"
    );
    let frames = parse_server_frames(&rest);
    let close = frames
        .iter()
        .find(|(op, _)| *op == rtcheck_wire::ws::OP_CLOSE);
    let code = close.and_then(|(_, p)| Some(u16::from_be_bytes([*p.first()?, *p.get(1)?])));
    assert_eq!(code, Some(1001), "{} frame(s), no 1001", frames.len());
    assert!(TcpStream::connect(srv.addr).is_err(), "listener closed");
    let err = srv.stderr();
    assert!(err.contains("closing 2 client(s)"), "{err}");
}

#[test]
fn sigterm_exits_cleanly() {
    sigterm_or_sigint_exits_cleanly(libc::SIGTERM);
}

#[test]
fn sigint_exits_cleanly() {
    sigterm_or_sigint_exits_cleanly(libc::SIGINT);
}

#[test]
fn exits_with_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let addr = dir.path().join("addr");
    let pidf = dir.path().join("pid");
    // sh starts serve in the background, waits for it to listen, then exits.
    let script = format!(
        "'{}' serve --listen 127.0.0.1:0 --exit-with-parent --addr-file '{}' 2>/dev/null & echo $! > '{}'; \
         for i in $(seq 100); do [ -s '{}' ] && exit 0; sleep 0.05; done; exit 1",
        binary().display(),
        addr.display(),
        pidf.display(),
        addr.display()
    );
    let st = std::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .status()
        .unwrap();
    assert!(st.success());
    let pid: i32 = std::fs::read_to_string(&pidf)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Gone, or a zombie: once sh exits, serve is reparented to a reaper that may never reap it
    // (PID 1 in some containers), so an exited serve can still answer signal 0.
    let running = |pid: i32| match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(st) => !matches!(
            st.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next()),
            Some("Z" | "X")
        ),
    };
    let mut alive = true;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        alive = running(pid);
        if !alive {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if alive {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!alive, "serve outlived its parent");
}

#[test]
fn bad_flags_give_one_line_and_exit_2() {
    for args in [
        vec!["--size", "8"],
        vec!["--rate", "0"],
        vec!["--listen", "not-an-address"],
        vec!["--write-deadline", "soon"],
        vec!["--max-sessions", "0"],
        vec!["--max-sessions", "1000001"],
        vec!["--max-sessions", "-3"],
        vec!["--max-sessions", "lots"],
    ] {
        let out = std::process::Command::new(binary())
            .arg("serve")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(args[0]) || err.contains(args[1]),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    // Port in use: one line naming the address.
    let srv = Server::start(&[]);
    let out = std::process::Command::new(binary())
        .args(["serve", "--listen", &srv.addr.to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(&srv.addr.to_string()), "{err}");
}

#[test]
fn raw_floor_sends_length_prefixed_frames() {
    let srv = Server::start(&[
        "--protocol",
        "raw",
        "--rate",
        "50",
        "--size",
        "512",
        "--wait-start",
    ]);
    let ctl = srv
        .control
        .expect("raw mode writes the control address as line 2");
    assert_ne!(ctl, srv.addr);
    let mut clients: Vec<TcpStream> = (0..50)
        .map(|_| TcpStream::connect(srv.addr).unwrap())
        .collect();
    srv.wait_stats(Duration::from_secs(30), |s| s["clients"]["raw"] == 50);
    srv.start_publishing(4);
    let s = srv.wait_stats(Duration::from_secs(30), |s| s["finished"] == true);
    let start = s["publish_start_ns"].as_u64().unwrap();
    for c in &mut clients {
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        for want in 1..=4u64 {
            let mut len = [0u8; 4];
            c.read_exact(&mut len).unwrap();
            assert_eq!(u32::from_le_bytes(len), 512);
            let mut body = vec![0u8; 512];
            c.read_exact(&mut body).unwrap();
            assert_eq!(
                payload::decode(&body),
                Some((want, start + (want - 1) * 20_000_000))
            );
        }
    }
    assert_eq!(s["messages_sent"]["raw"], 200);
    assert_eq!(s["drops"], 0);
}
