//! Real services rtcheck did not write: nginx, HAProxy, Caddy, Redis, Chromium, node/python/go servers.
//! One binary per cost class (see docs/ARCHITECTURE.md, Tests): each file below
//! is a module; helpers are shared once from tests/common.
#[path = "../common/mod.rs"]
mod common;
/// Three tests at once per core: this binary mostly waits (common::default_test_threads).
#[ctor::ctor(unsafe)]
fn three_tests_per_core() {
    common::default_test_threads(3);
}
#[path = "../foreign_common/mod.rs"]
mod foreign_common;
#[path = "../probe_common/mod.rs"]
mod probe_common;

mod app_protocol_hub;
mod audit_process;
mod audit_proxy;
#[cfg(feature = "redis")]
mod bench_cluster;
mod bench_conncost;
mod bench_foreign_memory;
mod bench_foreign_publish;
mod bench_foreign_server;
mod bench_idle_app_protocol;
mod bench_tls_proxy;
mod delivery_foreign;
mod explain_ids;
mod fleet_watch;
mod hops_live;
mod hostile_peers;
mod html_browser;
mod lint_library_live;
mod lint_live;
mod lint_loop;
mod load_foreign;
mod peer_go;
#[cfg(feature = "browser")]
mod probe_browser;
mod probe_cli;
mod probe_closed_at_once;
mod probe_foreign;
mod probe_path_live;
mod probe_proxies;
mod probe_ws_h2;
mod secrets_cli;
#[cfg(feature = "redis")]
mod serve_cluster;
#[cfg(feature = "redis")]
mod serve_redis_guard;
