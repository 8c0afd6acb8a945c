//! Benchmark of a full audit (snapshot of /proc and /sys + all checks + rendering), in
//! process, on this machine's real /proc. Not a test: it prints figures, asserts nothing.
//!
//!     cargo bench --bench audit            # RTCHECK_BENCH_RUNS=500 to change the count
use rtcheck::audit::Roots;
use rtcheck::cmd::audit::build_report;
use rtcheck::profile::Profile;
use rtcheck::report::{audit::audit_doc, doc, json, Palette};
use std::time::{Duration, Instant};

fn stats(name: &str, mut d: Vec<Duration>) {
    d.sort();
    let ms = |x: Duration| x.as_secs_f64() * 1000.0;
    let pick = |q: f64| d[((d.len() - 1) as f64 * q).round() as usize];
    let mean = d.iter().map(|x| ms(*x)).sum::<f64>() / d.len() as f64;
    println!(
        "{name:<28} runs {:>4}  min {:.3} ms  median {:.3} ms  mean {:.3} ms  p95 {:.3} ms  max {:.3} ms",
        d.len(),
        ms(d[0]),
        ms(pick(0.5)),
        mean,
        ms(pick(0.95)),
        ms(d[d.len() - 1])
    );
}

fn main() {
    let runs: usize = std::env::var("RTCHECK_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let roots = Roots::default();
    let profile = Profile::default();
    for _ in 0..10 {
        build_report(profile.clone(), &roots, &[]).expect("audit runs"); // warm-up
    }
    let mut audit = Vec::with_capacity(runs);
    let mut full = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let r = build_report(profile.clone(), &roots, &[]).expect("audit runs");
        audit.push(t.elapsed());
        let text = doc::text::render(&audit_doc(&r, false).unwrap(), &Palette::plain());
        let out = json::render(&r).unwrap() + &text;
        full.push(t.elapsed());
        std::hint::black_box(out);
    }
    stats("audit (snapshot + checks)", audit);
    stats("audit + json + text render", full);
}
