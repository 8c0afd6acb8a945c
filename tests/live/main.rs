//! rtcheck's own server, bench, verify, load and audit on loopback (and namespaces the tests make).
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

mod audit_cli;
mod audit_netns;
mod bench_external_server;
mod bench_fanout;
mod bench_idle_and_cleanup;
mod bench_interrupt;
mod bench_remote;
#[cfg(feature = "redis")]
mod bench_shards;
mod budget_live;
mod catalog_cli;
mod cli_conventions;
mod common_helpers;
mod delivery_profile;
mod first_use;
mod fleet_cli;
mod hostile_hubs;
mod load_cli;
#[cfg(feature = "hyper")]
mod load_engines;
mod nat_silent_cut;
mod output_paths;
mod report_files;
mod serve_access;
mod serve_conformance;
mod serve_cross_site;
mod serve_http;
mod serve_memory;
mod serve_process;
mod serve_replay_flood;
mod serve_restart;
mod serve_session_budget;
mod serve_sessions;
mod serve_slow_client;
mod serve_sse_liveness;
mod serve_work;
mod serve_ws;
mod text_width;
mod verify_cli;
mod verify_delivery;
mod verify_fd_limit;
mod verify_keepalive;
mod verify_low_limit;
mod verify_memory;
mod verify_ports;
mod verify_tcp_wmem;
