//! Servers the project did not write, for the probe (and load, bench) tests: the sources
//! are in tests/fixtures/foreign/, written the way each library's docs write them, and
//! run from Debian packages (Node `ws` and `express`, python3-websockets, starlette +
//! uvicorn, Go + gorilla/websocket). Each is started on 127.0.0.1 (a free port) with its
//! log in a temp dir and killed on drop (`common::Service`); a missing package fails the
//! test naming it. `observe` is the independent client (tests/fixtures/foreign/
//! observe.py, Python stdlib only) that times what really arrived, so a test checks
//! rtcheck against it. Test files declare `mod common; mod probe_common;` too.
#![allow(dead_code)]
use crate::common::{free_port, require_binary, Service};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Node's modules from Debian (`node-ws`, `node-express`) live here.
pub const NODE_PATH: &str = "/usr/share/nodejs";
/// Debian's Go library tree (GOPATH mode: nothing is downloaded).
pub const GOCODE: &str = "/usr/share/gocode";

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/foreign")
        .join(name)
}

/// A file a Debian package installs, or a panic naming the package.
fn require_file(path: &str, package: &str) {
    assert!(
        Path::new(path).exists(),
        "{path} missing: install the Debian package {package} (apt-get install -y {package})"
    );
}

fn node() -> PathBuf {
    require_file("/usr/bin/node", "nodejs");
    PathBuf::from("/usr/bin/node")
}

/// Debian's python (its dist-packages), never the first python3 on PATH.
pub fn python() -> PathBuf {
    require_file("/usr/bin/python3", "python3");
    PathBuf::from("/usr/bin/python3")
}

fn python_module(module: &str, package: &str) {
    let ok = Command::new(python())
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "python module `{module}` missing for /usr/bin/python3: install the Debian package {package} (apt-get install -y {package})"
    );
}

/// One foreign server: killed and reaped on drop.
pub struct Foreign {
    pub port: u16,
    service: Service,
}

impl Foreign {
    fn start(mut cmd: Command, name: &str, env: &[(&str, &str)]) -> Foreign {
        let port = free_port();
        cmd.env("PORT", port.to_string());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut service = Service::start(cmd, name, tempfile::tempdir().unwrap());
        service.wait_listening(
            SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_secs(30),
        );
        Foreign { port, service }
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn url(&self, scheme: &str, path: &str) -> String {
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }

    pub fn log(&self) -> String {
        self.service.log()
    }
}

fn node_script(script: &str, module: &str, package: &str, env: &[(&str, &str)]) -> Foreign {
    require_file(&format!("{NODE_PATH}/{module}/package.json"), package);
    let mut cmd = Command::new(node());
    cmd.arg(fixture(script)).env("NODE_PATH", NODE_PATH);
    Foreign::start(cmd, module, env)
}

/// ws_broadcast.js (`node-ws`): HEARTBEAT_MS, BROADCAST_MS, CHECK_ORIGIN.
pub fn node_ws(env: &[(&str, &str)]) -> Foreign {
    node_script("ws_broadcast.js", "ws", "node-ws", env)
}

/// express_sse.js (`node-express`): /events, /events-noid, /events-resume, /healthz;
/// EVENT_MS, PAD.
pub fn express_sse(env: &[(&str, &str)]) -> Foreign {
    node_script("express_sse.js", "express", "node-express", env)
}

/// node_http.js (Node's own http module, single-threaded): the load tests' server.
pub fn node_http(env: &[(&str, &str)]) -> Foreign {
    let mut cmd = Command::new(node());
    cmd.arg(fixture("node_http.js"));
    Foreign::start(cmd, "node-http", env)
}

/// sockjs_hub.js (`node-sockjs`): a SockJS chat hub at /hub; HEARTBEAT_MS; GET /stats.
pub fn sockjs_hub(env: &[(&str, &str)]) -> Foreign {
    node_script("sockjs_hub.js", "sockjs", "node-sockjs", env)
}

/// websockets_server.py (`python3-websockets`, the library's default ping): SEND_MS.
pub fn py_websockets(env: &[(&str, &str)]) -> Foreign {
    python_module("websockets", "python3-websockets");
    let mut cmd = Command::new(python());
    cmd.arg(fixture("websockets_server.py"));
    Foreign::start(cmd, "websockets", env)
}

/// websockets_cost.py (`python3-websockets`, bench idle --server): COMPRESSION
/// `deflate` (the library's default) or `none`.
pub fn py_websockets_cost(compression: &str) -> Foreign {
    python_module("websockets", "python3-websockets");
    let mut cmd = Command::new(python());
    cmd.arg(fixture("websockets_cost.py"));
    Foreign::start(cmd, "websockets-cost", &[("COMPRESSION", compression)])
}

/// socketio_server.py (`python3-socketio` on aiohttp): PING_INTERVAL, PING_TIMEOUT,
/// TICK_MS, EVENTS_LOG.
pub fn py_socketio(env: &[(&str, &str)]) -> Foreign {
    python_module("socketio", "python3-socketio");
    python_module("aiohttp", "python3-aiohttp");
    let mut cmd = Command::new(python());
    cmd.arg(fixture("socketio_server.py"));
    Foreign::start(cmd, "socketio", env)
}

/// python-socketio's hub with its own connect/disconnect log (EVENTS_LOG, in a temp dir
/// of its own): the tests' independent count of the sessions it held. Derefs to the
/// hub; the hub is killed before the dir goes.
pub struct SocketioHub {
    hub: Foreign,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl SocketioHub {
    /// [`py_socketio`] with `env` and EVENTS_LOG set.
    pub fn start(env: &[(&str, &str)]) -> SocketioHub {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events.log");
        let mut env = env.to_vec();
        env.push(("EVENTS_LOG", log.to_str().unwrap()));
        let hub = py_socketio(&env);
        SocketioHub {
            hub,
            log,
            _dir: dir,
        }
    }

    /// The log as written so far (for a failure's context).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// (connect, disconnect) times in seconds of every session logged, in connect order;
    /// None: not ended (yet).
    pub fn sessions(&self) -> Vec<(f64, Option<f64>)> {
        let mut out: Vec<(String, f64, Option<f64>)> = Vec::new();
        for line in self.log_text().lines() {
            let [t, sid, what] = line.split_whitespace().collect::<Vec<_>>()[..] else {
                continue;
            };
            let t: f64 = t.parse().unwrap();
            if what == "connect" {
                out.push((sid.to_string(), t, None));
            } else if let Some(s) = out.iter_mut().find(|s| s.0 == sid) {
                s.2 = Some(t);
            }
        }
        out.into_iter().map(|(_, c, d)| (c, d)).collect()
    }

    /// [`Self::sessions`] once `done` holds for them, or as they are at `bound` (the hub
    /// logs a disconnect when it notices the close, a moment after the client left).
    pub fn sessions_when(
        &self,
        bound: Duration,
        done: impl Fn(&[(f64, Option<f64>)]) -> bool,
    ) -> Vec<(f64, Option<f64>)> {
        let until = std::time::Instant::now() + bound;
        let mut s = self.sessions();
        while !done(&s) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(200));
            s = self.sessions();
        }
        s
    }
}

impl std::ops::Deref for SocketioHub {
    type Target = Foreign;
    fn deref(&self) -> &Foreign {
        &self.hub
    }
}

/// The most sessions held at once, from [`SocketioHub::sessions`].
pub fn most_at_once(s: &[(f64, Option<f64>)]) -> usize {
    let mut ev: Vec<(f64, i64)> = Vec::new();
    for (c, d) in s {
        ev.push((*c, 1));
        ev.push((d.unwrap_or(f64::MAX), -1));
    }
    // A disconnect at the same instant as a connect counts first.
    ev.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let (mut now, mut most) = (0i64, 0i64);
    for (_, k) in ev {
        now += k;
        most = most.max(now);
    }
    most as usize
}

/// hostile_hub.py (`python3-websockets`): a chat hub that misbehaves as MODE says
/// (rewrite, phantom, close, binary; honest is the control): issue 41.
pub fn hostile_hub(mode: &str) -> Foreign {
    python_module("websockets", "python3-websockets");
    let mut cmd = Command::new(python());
    cmd.arg(fixture("hostile_hub.py"));
    Foreign::start(cmd, "hostile-hub", &[("MODE", mode)])
}

/// ping_flood.py (python3 alone): 101, one payload, then pings without end, never
/// reading (issue 41 items 6 and 7).
pub fn ping_flood() -> Foreign {
    let mut cmd = Command::new(python());
    cmd.arg(fixture("ping_flood.py"));
    Foreign::start(cmd, "ping-flood", &[])
}

/// starlette_app.py (`python3-starlette` + `python3-uvicorn`): /sse, /api/*, /healthz.
pub fn starlette(env: &[(&str, &str)]) -> Foreign {
    python_module("starlette", "python3-starlette");
    python_module("uvicorn", "python3-uvicorn");
    let mut cmd = Command::new(python());
    cmd.arg(fixture("starlette_app.py"));
    Foreign::start(cmd, "starlette", env)
}

/// gorilla_hub.go (`golang-go` + `golang-github-gorilla-websocket-dev`), built in GOPATH
/// mode against Debian's tree: PING_MS, TICK_MS.
pub fn gorilla_hub(env: &[(&str, &str)]) -> Foreign {
    let bin = build_go("gorilla_hub.go");
    Foreign::start(Command::new(bin), "gorilla-hub", env)
}

/// gorilla_shards.go: the seed's C1-style hub (shard writers; SHARDS, WRITE_DEADLINE_MS,
/// SNDBUF), publishing what clients send or POST /publish; GET /stats.
pub fn gorilla_shards(env: &[(&str, &str)]) -> Foreign {
    let bin = build_go("gorilla_shards.go");
    Foreign::start(Command::new(bin), "gorilla-shards", env)
}

/// A fixture's own count, GET /stats (gorilla_hub, gorilla_shards, ws_broadcast):
/// `sent`, frames its writes completed.
pub fn fixture_stats(f: &Foreign) -> Value {
    let (status, body) = crate::common::http_get(f.addr(), "/stats");
    assert_eq!(status, 200, "GET /stats: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("/stats not JSON ({e}): {body}"))
}

fn build_go(file: &str) -> PathBuf {
    const PACKAGES: &str = "golang-go golang-github-gorilla-websocket-dev";
    require_file(
        &format!("{GOCODE}/src/github.com/gorilla/websocket/conn.go"),
        "golang-github-gorilla-websocket-dev",
    );
    let go = require_binary("go", "golang-go");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("foreign-go");
    std::fs::create_dir_all(&out).unwrap();
    // One binary per test process: tests build in parallel, each into its own file.
    let stem = file.trim_end_matches(".go");
    let bin = out.join(format!("{stem}-{}", std::process::id()));
    let o = Command::new(go)
        .args(["build", "-o"])
        .arg(&bin)
        .arg(fixture(file))
        .env("GOCACHE", out.join("cache"))
        .env("GOPATH", GOCODE)
        .env("GO111MODULE", "off")
        // GOPATH mode (Go 1.19 refuses -mod=off there): an empty GOFLAGS.
        .env("GOFLAGS", "")
        .env("GOPROXY", "off")
        .output()
        .unwrap_or_else(|e| panic!("cannot run `go` ({e}): install {PACKAGES}"));
    assert!(
        o.status.success(),
        "go build of {file} failed (needs {PACKAGES}): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    bin
}

// ---- the independent client ----

fn observe(args: &[&str]) -> Value {
    let o = Command::new(python())
        .arg(fixture("observe.py"))
        .args(args)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "observe.py {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("observe.py: not JSON ({e}): {out}"))
}

/// An event stream watched for `secs`: head (status, headers, head_ms), reads_ms,
/// events (at_ms, id, data; gzip/deflate decoded), comments_ms, ending, ended_ms.
pub fn observe_sse(url: &str, secs: f64, last_event_id: Option<&str>) -> Value {
    let s = secs.to_string();
    let mut args = vec!["sse", url, &s];
    args.extend(last_event_id);
    observe(&args)
}

/// A WebSocket watched for `secs` (pings answered): head, messages_ms, pings_ms, ending.
pub fn observe_ws(url: &str, secs: f64, origin: Option<&str>) -> Value {
    let s = secs.to_string();
    let mut args = vec!["ws", url, &s];
    args.extend(origin);
    observe(&args)
}

/// One GET: head, body_bytes.
pub fn observe_http(url: &str) -> Value {
    observe(&["http", url])
}

/// Run `a` and `b` at the same time (a probe and the independent client, usually).
pub fn both<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    std::thread::scope(|s| {
        let hb = s.spawn(b);
        let ra = a();
        (ra, hb.join().unwrap())
    })
}

/// Numbers from a JSON array of milliseconds.
pub fn ms_list(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// Largest gap between successive times (ms).
pub fn max_gap(times: &[f64]) -> Option<f64> {
    times.windows(2).map(|w| w[1] - w[0]).reduce(f64::max)
}

// ---- proxy configs (started with probe_common::Proxy) ----

/// nginx's http block opening with temp paths in the proxy's dir; close with `}`.
pub const NGINX_HEAD: &str = "daemon off;
master_process off;
worker_processes 1;
pid {DIR}/nginx.pid;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path {DIR}/body; proxy_temp_path {DIR}/proxy;
  fastcgi_temp_path {DIR}/fcgi; uwsgi_temp_path {DIR}/uwsgi; scgi_temp_path {DIR}/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
";

/// An nginx config: NGINX_HEAD, one server on {PORT} with these locations.
pub fn nginx(locations: &str) -> String {
    format!("{NGINX_HEAD}  server {{\n    listen 127.0.0.1:{{PORT}};\n{locations}  }}\n}}\n")
}

/// The WebSocket lines of the nginx docs' "WebSocket proxying" page.
pub const NGINX_WS: &str = "      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
";

/// A Caddyfile for {PORT} with this site body.
pub fn caddy(body: &str) -> String {
    format!(
        "{{\n  admin off\n  auto_https off\n  storage file_system {{DIR}}/caddy\n}}\nhttp://127.0.0.1:{{PORT}} {{\n  bind 127.0.0.1\n{body}}}\n"
    )
}

/// An HAProxy config: `defaults` with these timeout lines, one frontend to `backend`.
pub fn haproxy(timeouts: &str, backend: SocketAddr) -> String {
    format!(
        "global\n  maxconn 256\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n{timeouts}frontend fe\n  bind 127.0.0.1:{{PORT}}\n  default_backend be\nbackend be\n  server s1 {backend}\n"
    )
}

// ---- reading probe's JSON ----

/// The finding `id` on the URL whose title contains `url_part`.
pub fn finding<'a>(report: &'a Value, id: &str, url_part: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id && f["title"].as_str().unwrap_or("").contains(url_part))
        .unwrap_or_else(|| panic!("no finding {id} for {url_part} in {report:#}"))
}

/// The finding `id` about exactly `url` (its title ends with it: /events is not
/// /events-noid).
pub fn finding_url<'a>(report: &'a Value, id: &str, url: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id && f["title"].as_str().unwrap_or("").ends_with(url))
        .unwrap_or_else(|| panic!("no finding {id} for {url} in {report:#}"))
}

/// Every finding about the URL whose title contains `url_part`.
pub fn findings_for<'a>(report: &'a Value, url_part: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["title"].as_str().unwrap_or("").contains(url_part))
        .collect()
}

/// A finding's fix as one string (summary and every line), for naming its layer.
pub fn fix_text(f: &Value) -> String {
    let mut t = f["fix"]["summary"].as_str().unwrap_or("").to_string();
    for key in ["runtime", "persistent"] {
        for l in f["fix"][key].as_array().into_iter().flatten() {
            t.push('\n');
            t.push_str(l.as_str().unwrap_or(""));
        }
    }
    t
}
