use crate::common;
use common::*;

#[test]
fn time_wait_rises_by_the_closed_count_and_ports_follow_the_host_range() {
    let out = verify_json(&["ephemeral-ports", "--closed", "300", "--opened", "400"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let tw = verification(&out.json, "time-wait");
    assert_valid(tw);
    // Every closed connection leaves one client-side TIME_WAIT toward the fresh address.
    let n = measured(tw);
    assert!((297.0..=300.0).contains(&n), "TIME_WAIT {n}");

    let p = verification(&out.json, "ephemeral-ports");
    assert_valid(p);
    // Port arithmetic from this host's own range: 300 + 400 stay far below it.
    let range: Vec<u64> = sysctl("net/ipv4/ip_local_port_range")
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    let size = range[1] - range[0] + 1;
    let predicted = (300u64 + 400).saturating_sub(size);
    assert_eq!(measured(p), predicted as f64);
    let details = p["details"].to_string();
    assert!(
        details.contains(&format!("{}-{}", range[0], range[1])),
        "{details}"
    );
    assert!(details.contains("400 held"), "{details}");
}
