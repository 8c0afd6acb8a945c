//! A scenario's fault (a SIGKILLed node, a Redis restart, a deploy restarting Redis and
//! the publisher together), acted on time from `run`'s watch loop, and the presence
//! samples after a kill that tell when the ghosts cleared.
use super::client::Shared;
use super::model::{GhostSample, GhostSeries};
use super::nodes::{self, Node, NodeSpec, Redis};
use super::Kind;
use crate::sys::control;
use crate::sys::serve::Scratch;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};

/// `online` from GET /presence on `addr`.
pub fn presence_online(addr: SocketAddr) -> Option<u64> {
    let (code, body) =
        control::request_within(addr, "GET", "/presence", Duration::from_secs(2), 64 << 10).ok()?;
    let v: serde_json::Value = serde_json::from_str(&body).ok().filter(|_| code == 200)?;
    v.get("online")?.as_u64()
}

/// Presence samples after a kill, and when the ghosts cleared.
pub(super) struct GhostWatch {
    presence: &'static str,
    pub(super) kill_at: Instant,
    samples: Vec<GhostSample>,
    next: Instant,
}

impl GhostWatch {
    pub(super) fn new(presence: &'static str) -> GhostWatch {
        let now = Instant::now();
        GhostWatch {
            presence,
            kill_at: now,
            samples: Vec::new(),
            next: now,
        }
    }

    /// One sample every 200 ms from a surviving node.
    pub(super) fn sample(&mut self, addr: SocketAddr, sh: &Shared) {
        if Instant::now() < self.next {
            return;
        }
        self.next = Instant::now() + Duration::from_millis(200);
        if let Some(online) = presence_online(addr) {
            let connected = sh.connected_now.load(SeqCst);
            self.samples.push(GhostSample {
                t_s: self.kill_at.elapsed().as_secs_f64(),
                online,
                connected,
                ghosts: online.saturating_sub(connected),
            });
        }
    }

    /// Ghosts at 0 from this time on, held for at least `hold`.
    pub(super) fn cleared_after(&self, hold: f64) -> Option<f64> {
        let last = self.samples.last()?;
        if last.ghosts > 0 {
            return None;
        }
        let start = self
            .samples
            .iter()
            .rev()
            .take_while(|s| s.ghosts == 0)
            .last()?
            .t_s;
        (last.t_s - start >= hold).then_some(start)
    }

    pub(super) fn series(self, hold: f64) -> GhostSeries {
        GhostSeries {
            presence: self.presence.into(),
            cleared_after_s: self.cleared_after(hold),
            samples: self.samples,
        }
    }
}

/// The scenario's fault, driven from the watch loop.
pub(super) enum Fault {
    None,
    Kill {
        at: Duration,
        done: bool,
        watch: GhostWatch,
    },
    RedisRestart {
        stop_at: Duration,
        start_at: Duration,
        stopped: Option<Instant>,
        done: bool,
    },
    /// Redis and node a (the publisher) restarted together; node a comes back on its
    /// port and publishes the run's rounds again, in the new epoch.
    Deploy {
        at: Duration,
        done: bool,
        spec: NodeSpec,
        dir: std::path::PathBuf,
        rounds: u64,
    },
}

impl Fault {
    pub(super) fn for_kind(k: Kind, schedule: Duration, spec: &NodeSpec, dir: &Scratch) -> Fault {
        match k {
            Kind::DeployRestart => Fault::Deploy {
                at: schedule / 3,
                done: false,
                spec: spec.clone(),
                dir: dir.0.join("a-restarted"),
                rounds: spec.rounds,
            },
            Kind::NodeKill => Fault::Kill {
                at: schedule / 2,
                done: false,
                watch: GhostWatch::new("ttl"),
            },
            Kind::RedisRestart => Fault::RedisRestart {
                stop_at: schedule / 3,
                start_at: (schedule * 2 / 3).max(schedule / 3 + Duration::from_secs(1)),
                stopped: None,
                done: false,
            },
            _ => Fault::None,
        }
    }

    /// Act when its time comes; `events` gets what happened, in words.
    pub(super) fn step(
        &mut self,
        t: Duration,
        nodes: &mut [Node],
        redis: Option<&mut Redis>,
        sh: &Shared,
        events: &mut Vec<String>,
    ) -> anyhow::Result<()> {
        match self {
            Fault::None => {}
            Fault::Kill { at, done, watch } => {
                if !*done && t >= *at {
                    let victim = nodes.last_mut().expect("at least two nodes");
                    victim.kill();
                    watch.kill_at = Instant::now();
                    *done = true;
                    events.push(format!(
                        "node {} SIGKILLed {:.1} s into the run; its clients reconnected to the others with ?since=",
                        victim.name,
                        t.as_secs_f64()
                    ));
                }
                if *done {
                    watch.sample(nodes[0].addr, sh);
                }
            }
            Fault::Deploy {
                at,
                done,
                spec,
                dir,
                rounds,
            } => {
                let Some(Redis::Ours(r)) = redis else {
                    return Ok(());
                };
                if !*done && t >= *at {
                    *done = true;
                    let a = &mut nodes[0];
                    a.guard.terminate(Duration::from_secs(5));
                    r.restart()?;
                    std::fs::create_dir_all(&*dir)?;
                    nodes[0] = nodes::restart_at(spec, 0, a.addr, dir)?;
                    control::start(nodes[0].addr, *rounds)?;
                    events.push(format!(
                        "{:.1} s into the run node a (the publisher) and Redis were restarted together (Redis empty: no persistence); node a publishes its {rounds} rounds again, in a new epoch",
                        t.as_secs_f64()
                    ));
                }
            }
            Fault::RedisRestart {
                stop_at,
                start_at,
                stopped,
                done,
            } => {
                let Some(Redis::Ours(r)) = redis else {
                    return Ok(());
                };
                if stopped.is_none() && t >= *stop_at {
                    r.stop();
                    *stopped = Some(Instant::now());
                    let health = control::request(nodes[0].addr, "GET", "/healthz")
                        .map(|(c, b)| {
                            format!("HTTP {c}: {}", b.lines().next().unwrap_or("").trim())
                        })
                        .unwrap_or_else(|e| format!("no answer: {e}"));
                    events.push(format!(
                        "Redis stopped {:.1} s into the run; node a's /healthz then: {health}",
                        t.as_secs_f64()
                    ));
                }
                if let (Some(s), false) = (*stopped, *done) {
                    if t >= *start_at {
                        r.restart()?;
                        *done = true;
                        events.push(format!(
                            "Redis started again after {:.1} s down",
                            s.elapsed().as_secs_f64()
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Still to do before the run may end (a kill's presence watch until cleared or bound).
    pub(super) fn pending(&self, ttl: Duration) -> bool {
        match self {
            Fault::Kill { done, watch, .. } => {
                !*done
                    || (watch.cleared_after(1.0).is_none()
                        && watch.kill_at.elapsed() < ghost_bound(ttl))
            }
            Fault::RedisRestart { done, .. } | Fault::Deploy { done, .. } => !*done,
            Fault::None => false,
        }
    }
}

/// The time a deploy restart adds to a run: the rounds before it (published again in the
/// new epoch) and the restart itself.
pub(super) fn restart_extra(k: Kind, schedule: Duration) -> Duration {
    match k {
        Kind::DeployRestart => schedule / 3 + Duration::from_secs(10),
        _ => Duration::ZERO,
    }
}

/// How long presence is watched after a kill at most: three TTLs and 2 s (TTL plus a
/// heartbeat is the expectation; the rest is room for a loaded host).
pub fn ghost_bound(ttl: Duration) -> Duration {
    ttl * 3 + Duration::from_secs(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch_of(ghosts: &[(f64, u64)]) -> GhostWatch {
        let mut w = GhostWatch::new("ttl");
        w.samples = ghosts
            .iter()
            .map(|&(t_s, ghosts)| GhostSample {
                t_s,
                online: 10 + ghosts,
                connected: 10,
                ghosts,
            })
            .collect();
        w
    }

    #[test]
    fn ghosts_clear_when_zero_holds_to_the_last_sample() {
        let w = watch_of(&[(0.2, 5), (1.0, 5), (3.4, 0), (3.6, 0), (4.5, 0)]);
        assert_eq!(w.cleared_after(1.0), Some(3.4));
        assert_eq!(w.cleared_after(2.0), None, "held 1.1 s only");
        // A ghost seen again after a zero: not cleared yet.
        assert_eq!(watch_of(&[(1.0, 0), (2.5, 1)]).cleared_after(0.0), None);
        assert_eq!(watch_of(&[]).cleared_after(0.0), None, "nothing measured");
        let s = watch_of(&[(3.4, 0), (4.5, 0)]).series(1.0);
        assert_eq!((s.presence.as_str(), s.cleared_after_s), ("ttl", Some(3.4)));
    }

    #[test]
    fn faults_fall_in_the_schedule_and_hold_the_run_until_done() {
        let spec = NodeSpec {
            redis: None,
            path: "one-path",
            presence: "ttl",
            presence_ttl: Duration::from_secs(3),
            publish: true,
            rounds: 60,
            rate: 10.0,
            size: 64,
            redis_prefix: String::new(),
        };
        let dir = Scratch(std::env::temp_dir().join("rtcheck-fault-test-unused"));
        let s = Duration::from_secs(6);
        let ttl = Duration::from_secs(3);
        match Fault::for_kind(Kind::RedisRestart, s, &spec, &dir) {
            Fault::RedisRestart {
                stop_at, start_at, ..
            } => assert_eq!((stop_at, start_at), (s / 3, s * 2 / 3)),
            _ => panic!("a Redis restart"),
        }
        let kill = Fault::for_kind(Kind::NodeKill, s, &spec, &dir);
        assert!(matches!(kill, Fault::Kill { at, .. } if at == s / 2));
        assert!(kill.pending(ttl), "not killed yet");
        assert!(!Fault::for_kind(Kind::OnePath, s, &spec, &dir).pending(ttl));
        assert_eq!(
            restart_extra(Kind::DeployRestart, s),
            s / 3 + Duration::from_secs(10)
        );
        assert_eq!(restart_extra(Kind::NodeKill, s), Duration::ZERO);
    }
}
