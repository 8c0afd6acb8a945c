//! The soak benchmark (`cargo bench --bench soak`, benches/soak/) at a tiny scale: the same
//! code with 50 clients for 5 s per phase, against the debug server. Nothing may be lost
//! silently, open fds come back to the baseline, RSS stays within the bound the flags set.
#[allow(dead_code)]
#[path = "../benches/soak/mod.rs"]
mod soak;

#[test]
fn the_soak_at_a_tiny_scale_loses_nothing_silently_and_gives_fds_back() {
    let mut o = soak::Opts::new(50, 5.0);
    o.progress = false;
    // Liveness of 2 s (serve's default is 30 s), so never-reading clients are removed
    // within the run and checked.
    o.liveness = Some(std::time::Duration::from_secs(2));
    o.knobs.never_read_hold = std::time::Duration::from_secs(4);
    let phases = soak::run(&o).unwrap();
    assert_eq!(phases.len(), 2);
    for p in &phases {
        let text = soak::report::text(p);
        for name in [
            "lost silently",
            "fds back to baseline",
            "RSS peak within bound",
            "never-reading clients removed",
        ] {
            let Some(c) = p.checks.iter().find(|c| c.name == name) else {
                continue;
            };
            assert!(c.pass, "{name}: {}\n{text}", c.detail);
        }
        if p.phase == "seq-ring" {
            let judged: u64 = p.rows.iter().map(|r| r.never_read_judged).sum();
            assert!(
                judged > 0,
                "no never-reading client held long enough\n{text}"
            );
        }
        // Every counting kind got messages and read up to the last round.
        for r in p.rows.iter().filter(|r| r.counts.is_some()) {
            let c = r.counts.unwrap();
            assert!(c.received >= p.rounds, "{}: {c:?}\n{text}", r.kind);
        }
        eprintln!("{text}");
    }
}

#[path = "../benches/soak/unit_tests.rs"]
mod unit_tests;
