//! Commands on fixtures, no service started: `cargo test --test cli` is the fast subset.
//! One binary per cost class (see docs/ARCHITECTURE.md, Tests): each file below
//! is a module; helpers are shared once from tests/common.
#[path = "../common/mod.rs"]
mod common;
/// Three tests at once per core: most of a test here is starting rtcheck processes and
/// waiting on them (common::default_test_threads).
#[ctor::ctor(unsafe)]
fn three_tests_per_core() {
    common::default_test_threads(3);
}

mod audit_fixtures;
mod audit_k8s_manifest;
mod audit_overflow;
mod audit_text;
mod bench_emit_k8s;
mod bench_plan_merge;
mod budget_cli;
mod catalog_crossref;
mod choose_cli;
mod choose_errors;
mod fuzz_parsers;
mod hops_cli;
mod hops_cluster;
mod hops_data;
mod hostile_input_cli;
mod hostile_lint_input;
mod layering;
mod lint_cli;
mod lint_istio;
mod lint_real;
mod lint_rules;
mod net_props;
mod review_cli;
mod test_classes;
mod verify_compose;
