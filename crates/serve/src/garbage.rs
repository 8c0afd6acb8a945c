//! Background allocation load for the G scenarios: N MB/s allocated, touched and freed.
//! Rust has no collector, so this measures allocator and page-fault cost, not GC pauses.
use super::hub::Hub;
use std::sync::Arc;
use std::time::Duration;

const TICK: Duration = Duration::from_millis(10);
const CHUNK: usize = 64 * 1024;

pub async fn run(hub: Arc<Hub>, mbps: u64) {
    let per_tick = (mbps as usize * 1_000_000) / 100;
    let mut iv = tokio::time::interval(TICK);
    iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !hub.is_shutting_down() {
        iv.tick().await;
        let mut left = per_tick;
        while left > 0 {
            let n = left.min(CHUNK);
            let mut v = vec![0u8; n];
            // Touch every page so the allocation is real.
            for i in (0..n).step_by(4096) {
                v[i] = i as u8;
            }
            std::hint::black_box(&v);
            left -= n;
        }
    }
}
