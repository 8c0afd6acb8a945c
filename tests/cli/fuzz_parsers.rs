//! Fuzzing by proptest (issue 41): each lint parser, the product time syntaxes and the YAML
//! loader take arbitrary input without a panic. Inputs are built from each grammar's own
//! tokens (so cases reach deep into the parser) mixed with random bytes; the number and
//! size of cases keep the whole file to a few seconds. A case that hangs trips the
//! generous guard below (a hang detector, not a performance goal).
use proptest::prelude::*;
use rtcheck::lint::{lint, parse, Config, Kind, Workload};
use std::time::{Duration, Instant};

const HANG: Duration = Duration::from_secs(20);

fn text_from(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    let words = proptest::collection::vec(prop::sample::select(tokens), 0..300);
    let bytes = proptest::collection::vec(any::<u8>(), 0..256);
    (words, bytes, any::<bool>()).prop_map(|(w, b, mix)| {
        let mut t = w.concat();
        if mix {
            t.push_str(&String::from_utf8_lossy(&b));
        }
        t
    })
}

/// Parse as `kind` and lint what parsed: neither panics, and both return.
fn survives(kind: Kind, text: &str) -> Result<(), TestCaseError> {
    let t0 = Instant::now();
    if let Ok(nodes) = parse(kind, "f", text) {
        let c = Config {
            kind,
            file: "f".into(),
            nodes,
        };
        let w = Workload {
            ping: Some(Duration::from_secs(25)),
            ..Workload::default()
        };
        let _ = lint(&[c], &w, &[]);
    }
    prop_assert!(t0.elapsed() < HANG, "{kind:?} ran {:?}", t0.elapsed());
    Ok(())
}

const NGINX: &[&str] = &[
    "http",
    "server",
    "location",
    "/ws",
    "upstream",
    "{",
    "}",
    ";",
    " ",
    "\n",
    "\"",
    "'",
    "\\",
    "#",
    "proxy_pass http://b",
    "proxy_read_timeout",
    " 9223372036854776s",
    " 1h30m",
    " 60",
    "include",
    " *.conf",
    "proxy_http_version 1.1",
    "proxy_set_header Upgrade $http_upgrade",
    "gzip on",
    "worker_connections 99999999999999999999",
    "map $http_upgrade $c",
    "${x}",
    "events",
];
const HAPROXY: &[&str] = &[
    "global\n",
    "defaults\n",
    "frontend f\n",
    "backend be_ws\n",
    "listen l\n",
    "  timeout tunnel ",
    "  timeout server ",
    "30d",
    "1e9s",
    "24d",
    "2147483648",
    "1.5s",
    "\n",
    " ",
    "\"",
    "'",
    "\\",
    "#",
    "  maxconn ",
    "99999999999999999999",
    "  option httpclose\n",
    "  server s 127.0.0.1:9\n",
    "  use_backend be_ws if { path_beg /ws }\n",
    "  compression algo gzip\n",
];
const CADDY: &[&str] = &[
    ":80",
    " {",
    "{",
    "}",
    "\n",
    " ",
    "reverse_proxy",
    " /ws*",
    " 127.0.0.1:9",
    "flush_interval",
    " -1",
    " 106752d",
    " 1.5h",
    "encode gzip",
    "handle",
    "@ws",
    "path /events",
    "\"",
    "`",
    "#",
    "stream_close_delay",
    " 5m",
    "import",
    "(snippet)",
    "{$ENV}",
    "\\",
];
const CADDY_JSON: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"apps\"",
    "\"http\"",
    "\"servers\"",
    "\"routes\"",
    "\"handle\"",
    "\"handler\"",
    "\"reverse_proxy\"",
    "\"flush_interval\"",
    "-1",
    "9999999999999999999999",
    "\"stream_timeout\"",
    "\"1h\"",
    "\"match\"",
    "\"path\"",
    "\"/ws*\"",
    "null",
    "true",
    "1e999",
    "\"\\u0000\"",
    " ",
    "\n",
];
const ISTIO: &[&str] = &[
    "---",
    " ",
    "\n",
    "  ",
    "- ",
    "apiVersion: networking.istio.io/v1",
    "kind: DestinationRule",
    "kind: EnvoyFilter",
    "metadata:",
    "name: ws",
    "spec:",
    "trafficPolicy:",
    "subsets:",
    "connectionPool:",
    "tcp:",
    "http:",
    "idleTimeout: ",
    "stream_idle_timeout: ",
    "30s",
    "1e400h",
    "99999999999999999999999",
    "{",
    "}",
    "[",
    "]",
    ":",
    "&a",
    "*a",
    "'",
];

const INGRESS: &[&str] = &[
    "---",
    " ",
    "\n",
    "  ",
    "- ",
    "kind: Ingress",
    "apiVersion: networking.k8s.io/v1",
    "metadata:",
    "name: ws",
    "annotations:",
    "nginx.ingress.kubernetes.io/proxy-read-timeout: ",
    "\"5\"",
    "99999999999999999999999",
    "spec:",
    "rules:",
    "http:",
    "paths:",
    "path: /ws",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "&a",
    "*a",
    "!!str",
    "'",
    "\"",
    "#",
    "--- {kind: Ingress}",
];
const TRAEFIK: &[&str] = &[
    "http:",
    "\n",
    "  ",
    "    ",
    "routers:",
    "middlewares:",
    "services:",
    "r:",
    "events:",
    "rule: PathPrefix(`/events`)",
    "service: app",
    "middlewares: [gz]",
    "- gz",
    "gz:",
    "compress: {}",
    "chain:",
    "loadBalancer:",
    "servers:",
    "- url: http://127.0.0.1:9",
    "sticky:",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "&a",
    "*a",
    "<<: *a",
    "'",
    "\"",
    "#",
    " ",
];
const YAML: &[&str] = &[
    "connections: ",
    "10000",
    "ping: ",
    "25s",
    "9223372036854775807s",
    "transport: ",
    "sse",
    "path: ",
    "nginx,cloudflare",
    "\n",
    "  ",
    "- ",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "&a",
    "*a",
    "<<: *a",
    "'",
    "\"",
    "#",
    "---",
    "!!binary",
    "~",
    "null",
    "1e999",
    "\t",
    "|",
    ">",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn nginx_parser(t in text_from(NGINX)) { survives(Kind::Nginx, &t)?; }

    #[test]
    fn haproxy_parser(t in text_from(HAPROXY)) { survives(Kind::Haproxy, &t)?; }

    #[test]
    fn caddyfile_parser(t in text_from(CADDY)) { survives(Kind::Caddy, &t)?; }

    #[test]
    fn caddy_json_parser(t in text_from(CADDY_JSON)) { survives(Kind::CaddyJson, &t)?; }

    #[test]
    fn ingress_parser(t in text_from(INGRESS)) { survives(Kind::Ingress, &t)?; }

    #[test]
    fn traefik_parser(t in text_from(TRAEFIK)) { survives(Kind::Traefik, &t)?; }

    #[test]
    fn istio_parser(t in text_from(ISTIO)) { survives(Kind::Istio, &t)?; }

    /// The loader's checks and a profile, answers file and hops file read from any text:
    /// an error or a value, never a panic.
    #[test]
    fn yaml_loader(t in text_from(YAML)) {
        let t0 = Instant::now();
        let _ = rtcheck_base::input::looks_like_mapping(&t);
        if rtcheck_base::input::check_depth(&t).is_ok() {
            let _ = rtcheck::profile::Profile::from_yaml(&t, "p.yaml");
            let _ = rtcheck::budget::hops::from_yaml(&t, "h.yaml");
        }
        prop_assert!(t0.elapsed() < HANG);
    }

    /// Each product's time syntax, and the flag syntax, on any text: a value or an error.
    #[test]
    fn time_syntaxes(s in "[0-9a-zµ. +-]{0,48}") {
        use rtcheck::lint::time;
        for d in [time::nginx(&s), time::haproxy(&s), time::caddy(&s)]
            .into_iter()
            .flatten()
        {
            prop_assert!(d <= rtcheck_base::units::MAX_DURATION);
        }
        if let Ok(d) = rtcheck_base::units::parse_duration(&s) {
            prop_assert!(d <= rtcheck_base::units::MAX_DURATION);
            prop_assert!(Instant::now().checked_add(d).is_some());
        }
    }
}
