//! The load sweep's two HTTP engines (wire, hyper) read the same answers the same way:
//! a canned server answers every request with the same bytes, delivered in pieces, and
//! both engines must agree on status, body length and errors, request after request
//! (including answers that close the connection, which must reconnect, not fail).
use rtcheck::load::client::{parse_url, Answer, ErrorKind};
use rtcheck::load::conn::{attempt, Engine, Request, UserConn};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One canned answer: its pieces (each written on its own, with a pause so they arrive
/// as separate segments) and whether the server closes after it.
struct Canned {
    name: &'static str,
    pieces: &'static [&'static [u8]],
    close: bool,
}

const CASES: &[Canned] = &[
    Canned {
        name: "content-length, head and body apart",
        pieces: &[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", b"hello"],
        close: false,
    },
    Canned {
        name: "chunked in three writes, with a trailer",
        pieces: &[
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"5\r\nhello\r\n6;x=y\r\n",
            b" world\r\n0\r\nX-T: 1\r\n\r\n",
        ],
        close: false,
    },
    Canned {
        name: "Connection: close every time",
        pieces: &[b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"],
        close: true,
    },
    Canned {
        name: "HTTP/1.0, body until close",
        pieces: &[b"HTTP/1.0 200 OK\r\n\r\nuntil-", b"close"],
        close: true,
    },
    Canned {
        name: "100 Continue first",
        pieces: &[
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
        ],
        close: false,
    },
    Canned {
        name: "204 with no body",
        pieces: &[b"HTTP/1.1 204 No Content\r\n\r\n"],
        close: false,
    },
    Canned {
        name: "503",
        pieces: &[b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy"],
        close: false,
    },
    Canned {
        name: "not HTTP",
        pieces: &[b"SSH-2.0-OpenSSH_9.6\r\n"],
        close: true,
    },
    Canned {
        name: "closed mid-body",
        pieces: &[b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"],
        close: true,
    },
];

/// Serve `c` to every request on every connection until the test ends.
async fn serve(c: &'static Canned) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            s.set_nodelay(true).unwrap();
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 1024];
                loop {
                    // One request per answer: GETs end at the blank line.
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                    got.drain(..end);
                    for p in c.pieces {
                        if s.write_all(p).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    if c.close {
                        return;
                    }
                }
            });
        }
    });
    addr
}

type Outcome = Result<(u16, usize), ErrorKind>;

/// Five requests on one user's connection slot, as the sweep makes them.
async fn five(engine: Engine, addr: std::net::SocketAddr) -> Vec<Outcome> {
    let t = parse_url(&format!("http://{addr}/x")).unwrap();
    let r = Request::new(t, engine);
    let mut conn: Option<UserConn> = None;
    let mut out = Vec::new();
    for _ in 0..5 {
        let timer = tokio::time::sleep(Duration::from_secs(10));
        tokio::pin!(timer);
        let a: Result<Answer, ErrorKind> = attempt(&mut conn, &r, timer).await;
        out.push(a.map(|a| (a.status, a.body_bytes)));
    }
    out
}

#[tokio::test]
async fn wire_and_hyper_read_every_answer_alike() {
    let want: &[Vec<Outcome>] = &[
        vec![Ok((200, 5)); 5],
        vec![Ok((200, 11)); 5],
        vec![Ok((200, 2)); 5],
        vec![Ok((200, 11)); 5],
        vec![Ok((200, 3)); 5],
        vec![Ok((204, 0)); 5],
        vec![Ok((503, 4)); 5],
        vec![Err(ErrorKind::Protocol); 5],
        vec![Err(ErrorKind::Protocol); 5],
    ];
    for (c, want) in CASES.iter().zip(want) {
        let addr = serve(c).await;
        for engine in [Engine::Wire, Engine::Hyper] {
            let got = five(engine, addr).await;
            assert_eq!(&got, want, "{}: engine {engine:?}", c.name);
        }
    }
}
