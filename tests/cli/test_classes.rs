//! Which integration tests take a timed slot (`common::timed`): every test of a module
//! that drives a publisher's schedule, a load generator's rate or a library's short
//! heartbeat, so at most two per core run at once while the waiting-bound tests of the
//! same binary run three per core beside them (BENCHMARKS.md, "Third pass").
use std::path::Path;

/// `binary/module` of every module whose tests take the slot first.
const TIMED: &[&str] = &[
    "external/app_protocol_hub",
    "external/bench_cluster",
    "external/bench_foreign_memory",
    "external/bench_foreign_publish",
    "external/bench_foreign_server",
    "external/bench_idle_app_protocol",
    "external/bench_tls_proxy",
    "external/delivery_foreign",
    "external/load_foreign",
    "external/peer_go",
    "live/bench_external_server",
    "live/bench_fanout",
    "live/bench_idle_and_cleanup",
    "live/bench_interrupt",
    "live/bench_remote",
    "live/bench_shards",
    "live/delivery_profile",
    "live/hostile_hubs",
    "live/load_cli",
    "live/verify_delivery",
];

/// Modules named like the ones below whose verdicts do not rest on a schedule:
/// bench_conncost reads memory per held connection (bytes, and it reruns a run where the
/// server freed memory between two points), with no publisher.
const NOT_TIMED: &[&str] = &["external/bench_conncost"];

/// Module names that drive a load generator or a publisher: such a module is timed.
const TIMED_PREFIXES: &[&str] = &["bench_", "load_", "delivery_"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The names of the test functions of a file (`#[test]`, `#[tokio::test]`, in a nested
/// module too) whose first statement is not `let _timed = common::timed();`.
fn tests_without_slot(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let fn_name = |l: &str| {
        let l = l.strip_prefix("async ").unwrap_or(l);
        l.strip_prefix("fn ")
            .map(|r| r.split('(').next().unwrap_or(r).to_string())
    };
    let mut missing = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if *l != "#[test]" && !l.starts_with("#[tokio::test") {
            continue;
        }
        let Some(f) = lines[i + 1..].iter().position(|l| fn_name(l).is_some()) else {
            continue;
        };
        let at = i + 1 + f;
        let open = lines[at..].iter().position(|l| l.ends_with('{')).unwrap();
        let first = lines.get(at + open + 1).copied().unwrap_or("");
        if first != "let _timed = common::timed();" {
            missing.extend(fn_name(lines[at]));
        }
    }
    missing
}

#[test]
fn every_test_of_a_timed_module_takes_the_slot_first() {
    for m in TIMED {
        let text = std::fs::read_to_string(root().join(format!("tests/{m}.rs")))
            .unwrap_or_else(|e| panic!("tests/{m}.rs listed as timed: {e}"));
        assert!(text.contains("#[test]"), "tests/{m}.rs has no #[test]");
        let missing = tests_without_slot(&text);
        assert!(
            missing.is_empty(),
            "tests/{m}.rs: {missing:?} without common::timed()"
        );
    }
}

#[test]
fn every_module_that_drives_a_load_generator_is_listed_as_timed() {
    for bin in ["live", "external"] {
        for e in std::fs::read_dir(root().join("tests").join(bin)).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            let Some(module) = name.strip_suffix(".rs") else {
                continue;
            };
            let text = std::fs::read_to_string(root().join("tests").join(bin).join(&name)).unwrap();
            let listed = TIMED.contains(&format!("{bin}/{module}").as_str());
            let named = TIMED_PREFIXES.iter().any(|p| module.starts_with(p));
            let exempt = NOT_TIMED.contains(&format!("{bin}/{module}").as_str());
            if named && !exempt && text.contains("#[test]") {
                assert!(
                    listed,
                    "tests/{bin}/{name} drives a load generator: list it in TIMED"
                );
            }
            if !listed {
                assert!(
                    !text.contains("common::timed()"),
                    "tests/{bin}/{name} takes the slot: list it"
                );
            }
        }
    }
}

#[test]
fn the_slot_check_sees_a_test_without_it() {
    let text = "#[test]\nfn a() {\n    let _timed = common::timed();\n}\n\n#[test]\n#[ignore]\nfn b() {\n    run();\n}\n";
    assert_eq!(tests_without_slot(text), vec!["b".to_string()]);
    // An async test, and one in a nested module: seen too.
    let text = "#[tokio::test(flavor = \"multi_thread\")]\nasync fn c() {\n    run().await;\n}\nmod m {\n    #[test]\n    fn d() {\n        run();\n    }\n    #[test]\n    fn e() {\n        let _timed = common::timed();\n    }\n}\n";
    assert_eq!(
        tests_without_slot(text),
        vec!["c".to_string(), "d".to_string()]
    );
}
