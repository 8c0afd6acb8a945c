//! `bench fanout --shard I/N --coordinate redis://...` (issue 37): the shards meet on a
//! Redis they can all reach. Each estimates its clock's offset to Redis's (`TIME`, NTP-
//! style: the round trip with the least delay, the offset bound by half of it), the
//! publishing shard shares its own, and once every shard's clients are connected (a
//! barrier: a counter) the publisher sets one start time on Redis's clock that every
//! shard converts to its own. Keys live under `rtcheck:shards:RUN:` for an hour. The
//! publishing shard first takes the run id (`SET NX` of its `publisher` key): a run id
//! still held, by a run in progress or one killed within the hour whose keys a shard
//! could read as this run's, is refused in one line rather than mixed. It deletes the
//! keys when it is done with them, on every way out (a Drop guard).
use super::shard::ClockOffset;
use std::time::Duration;

/// Round trips per clock estimate.
pub const SAMPLES: usize = 8;
/// Offset beyond which a shard's latencies cannot be trusted (after correction, the
/// error left is the uncertainty; a larger one makes the merged run invalid).
pub const TOLERANCE_MS: f64 = 5.0;
/// How long after the barrier the start is set: every shard has time to read it.
pub const START_LEAD: Duration = Duration::from_secs(2);

/// One exchange: local send time, Redis's time, local receive time (ns since the epoch).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub sent: u64,
    pub remote: u64,
    pub received: u64,
}

/// The offset (remote - local) of the sample with the shortest round trip, its bound
/// (half that round trip, plus Redis TIME's microsecond resolution), and whether the
/// bound is within [`TOLERANCE_MS`]. None without samples.
pub fn offset(samples: &[Sample]) -> Option<ClockOffset> {
    let best = samples
        .iter()
        .filter(|s| s.received >= s.sent)
        .min_by_key(|s| s.received - s.sent)?;
    let mid = best.sent as f64 / 2.0 + best.received as f64 / 2.0;
    let uncertainty_ms = (best.received - best.sent) as f64 / 2e6 + 0.001;
    Some(ClockOffset {
        offset_ms: (best.remote as f64 - mid) / 1e6,
        uncertainty_ms,
        within_tolerance: uncertainty_ms <= TOLERANCE_MS,
    })
}

/// What one shard adds to its receivers' latencies: its clock's offset to Redis minus the
/// publisher's (the payload's time is the publisher's clock), in us.
pub fn correction_us(own: &ClockOffset, publisher_ms: f64) -> i64 {
    ((own.offset_ms - publisher_ms) * 1000.0).round() as i64
}

/// The keys of one run.
pub fn key(run: &str, what: &str) -> String {
    format!("rtcheck:shards:{run}:{what}")
}

#[cfg(feature = "redis")]
pub use live::Coordinator;

#[cfg(feature = "redis")]
mod live {
    use super::*;
    use anyhow::{anyhow, Context};
    use rtcheck_base::os::clock;

    /// A shard's connection to the coordinating Redis.
    pub struct Coordinator {
        con: redis::Connection,
        run: String,
        shown: String,
        /// This process holds the run id (the publishing shard): it clears the keys.
        owner: bool,
    }

    impl Drop for Coordinator {
        fn drop(&mut self) {
            self.clear();
        }
    }

    impl Coordinator {
        pub fn connect(url: &str, run: &str) -> anyhow::Result<Coordinator> {
            let shown = rtcheck_base::redact::url(url);
            let client =
                redis::Client::open(url).map_err(|e| anyhow!("--coordinate {shown}: {e}"))?;
            let con = client
                .get_connection_with_timeout(Duration::from_secs(5))
                .map_err(|e| anyhow!("--coordinate {shown}: {e}"))?;
            con.set_read_timeout(Some(Duration::from_secs(5)))?;
            con.set_write_timeout(Some(Duration::from_secs(5)))?;
            Ok(Coordinator {
                con,
                run: run.to_string(),
                shown,
                owner: false,
            })
        }

        fn redis_now(&mut self) -> anyhow::Result<u64> {
            let (s, us): (u64, u64) = redis::cmd("TIME")
                .query(&mut self.con)
                .with_context(|| format!("--coordinate {}: TIME", self.shown))?;
            Ok(s * 1_000_000_000 + us * 1000)
        }

        /// This host's clock against Redis's ([`offset`] over [`SAMPLES`] round trips).
        pub fn clock(&mut self) -> anyhow::Result<ClockOffset> {
            let mut v = Vec::with_capacity(SAMPLES);
            for _ in 0..SAMPLES {
                let sent = clock::now_ns();
                let remote = self.redis_now()?;
                v.push(Sample {
                    sent,
                    remote,
                    received: clock::now_ns(),
                });
            }
            offset(&v).ok_or_else(|| anyhow!("--coordinate {}: no clock sample", self.shown))
        }

        /// The publishing shard writes its offset (clearing what an earlier run with
        /// this run id left); the others wait for it, up to `wait`.
        pub fn publisher_offset(
            &mut self,
            own: &ClockOffset,
            publisher: bool,
            wait: Duration,
        ) -> anyhow::Result<f64> {
            let k = key(&self.run, "publisher_offset_ms");
            if publisher {
                // Outlives the other keys (set after it with an hour): while any of them
                // may be read, the run id stays taken.
                let taken: Option<String> = redis::cmd("SET")
                    .arg(key(&self.run, "publisher"))
                    .arg(clock::now_ns())
                    .arg("NX")
                    .arg("EX")
                    .arg(3700)
                    .query(&mut self.con)?;
                if taken.is_none() {
                    anyhow::bail!(
                        "--coordinate {}: --run-id {} is in use (a run in progress, or one stopped within the hour left its keys): give another --run-id",
                        self.shown,
                        self.run
                    );
                }
                self.owner = true;
                let ks = [k.clone(), key(&self.run, "ready"), key(&self.run, "start")];
                redis::cmd("DEL").arg(&ks).query::<u64>(&mut self.con)?;
                redis::cmd("SET")
                    .arg(&k)
                    .arg(own.offset_ms)
                    .arg("EX")
                    .arg(3600)
                    .query::<()>(&mut self.con)?;
                return Ok(own.offset_ms);
            }
            let v: f64 = self.poll(&k, wait, "the publishing shard's clock")?;
            Ok(v)
        }

        /// Poll `k` until it holds a value, up to `wait` (Ctrl-C stops it).
        fn poll<T: redis::FromRedisValue>(
            &mut self,
            k: &str,
            wait: Duration,
            what: &str,
        ) -> anyhow::Result<T> {
            let until = std::time::Instant::now() + wait;
            loop {
                if let Some(v) = redis::cmd("GET").arg(k).query::<Option<T>>(&mut self.con)? {
                    return Ok(v);
                }
                super::super::check_interrupted()?;
                if std::time::Instant::now() > until {
                    anyhow::bail!(
                        "--coordinate {}: no {what} within {} (is every shard running with this run id?)",
                        self.shown,
                        rtcheck_base::units::fmt_duration(wait)
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }

        /// The barrier: count this shard in, then (publisher) wait for all `n` and set
        /// the start [`START_LEAD`] ahead on Redis's clock, or (others) wait for it.
        /// Returns the start on this host's clock.
        pub fn barrier(
            &mut self,
            own: &ClockOffset,
            n: u32,
            publisher: bool,
            wait: Duration,
        ) -> anyhow::Result<u64> {
            let (ready, start) = (key(&self.run, "ready"), key(&self.run, "start"));
            redis::cmd("INCR").arg(&ready).query::<u64>(&mut self.con)?;
            redis::cmd("EXPIRE")
                .arg(&ready)
                .arg(3600)
                .query::<()>(&mut self.con)?;
            let at: u64 = if publisher {
                let until = std::time::Instant::now() + wait;
                loop {
                    let c: u64 = redis::cmd("GET")
                        .arg(&ready)
                        .query::<Option<u64>>(&mut self.con)?
                        .unwrap_or(0);
                    if c >= u64::from(n) {
                        break;
                    }
                    super::super::check_interrupted()?;
                    if std::time::Instant::now() > until {
                        anyhow::bail!(
                            "--coordinate {}: {c} of {n} shards ready within {}",
                            self.shown,
                            rtcheck_base::units::fmt_duration(wait)
                        );
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                let at = self.redis_now()? + START_LEAD.as_nanos() as u64;
                redis::cmd("SET")
                    .arg(&start)
                    .arg(at)
                    .arg("EX")
                    .arg(3600)
                    .query::<()>(&mut self.con)?;
                at
            } else {
                self.poll(&start, wait, "start time")?
            };
            // Redis's clock to this host's: local = remote - offset.
            Ok((at as f64 - own.offset_ms * 1e6).max(0.0) as u64)
        }

        /// The publishing shard, once its run ended (or failed): the run's keys go,
        /// the run id last. Nothing for the other shards.
        pub fn clear(&mut self) {
            if !std::mem::replace(&mut self.owner, false) {
                return;
            }
            let ks =
                ["publisher_offset_ms", "ready", "start", "publisher"].map(|w| key(&self.run, w));
            let _ = redis::cmd("DEL").arg(&ks).query::<u64>(&mut self.con);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fastest_round_trip_bounds_the_offset() {
        let s = |sent, remote, received| Sample {
            sent,
            remote,
            received,
        };
        // Remote 10 ms ahead; the 2 ms round trip wins over the 40 ms one.
        let o = offset(&[
            s(0, 30_000_000, 40_000_000),
            s(100_000_000, 111_000_000, 102_000_000),
        ])
        .unwrap();
        assert!((o.offset_ms - 10.0).abs() < 1e-9, "{o:?}");
        assert!((o.uncertainty_ms - 1.001).abs() < 1e-9, "{o:?}");
        assert!(o.within_tolerance);
        let far = offset(&[s(0, 0, 20_000_000)]).unwrap();
        assert!(
            !far.within_tolerance,
            "a 20 ms round trip cannot bound 5 ms"
        );
        assert!(offset(&[]).is_none());
        assert_eq!(correction_us(&o, 4.0), 6000);
    }
}
