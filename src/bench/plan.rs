//! `rtcheck bench plan` (issue 37): how many load-generator machines a target load needs,
//! from the load generator's own measured cost (a run's `loadgen_cost`) and one machine's
//! cores, memory and ports. Pure: the command layer reads the report and the host.
use serde::{Deserialize, Serialize};

/// Share of a machine's cores and memory the plan fills: the rest is the kernel's network
/// stack, TLS bursts and the run's own validity margin (a run fails its check above 90%
/// CPU, so sizing to it would plan runs that measure themselves).
pub const HEADROOM: f64 = 0.5;

/// What the plan is made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanInputs {
    pub connections: u64,
    /// Messages per second each client receives.
    pub rate: f64,
    pub size: u64,
    pub cpu_us_per_message: f64,
    pub rss_bytes_per_connection: f64,
    /// Where the two figures above came from (a report file, or flags).
    pub figures_from: String,
    /// One load machine: cores, memory, ephemeral ports per source address, source
    /// addresses.
    pub cores: u64,
    pub memory_bytes: u64,
    pub ports_per_address: u64,
    pub source_addresses: u64,
}

/// The sizing: each resource's machine count and the one that binds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub inputs: PlanInputs,
    pub messages_per_s: f64,
    pub bytes_per_s: f64,
    pub cpu_cores_needed: f64,
    pub memory_bytes_needed: f64,
    pub machines_for_cpu: u64,
    pub machines_for_memory: u64,
    pub machines_for_ports: u64,
    pub machines: u64,
    /// cpu, memory or ports.
    pub bound_by: String,
    pub headroom: f64,
    pub notes: Vec<String>,
}

impl PlanInputs {
    /// One machine with nothing (0 cores, memory or ports) or a port count that cannot be
    /// counted would plan u64::MAX machines: refused, naming the flag.
    pub fn check(&self) -> Result<(), String> {
        let zero = [
            ("--cores", self.cores),
            ("--memory", self.memory_bytes),
            ("--ports", self.ports_per_address),
            ("--source-addresses", self.source_addresses),
        ];
        if let Some((flag, _)) = zero.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{flag}: must be more than 0 (one load machine's)"));
        }
        if self
            .ports_per_address
            .checked_mul(self.source_addresses)
            .is_none()
        {
            return Err(format!(
                "--ports {} x --source-addresses {}: too many to count",
                self.ports_per_address, self.source_addresses
            ));
        }
        let figures = [
            ("CPU per message", self.cpu_us_per_message),
            ("RSS per connection", self.rss_bytes_per_connection),
        ];
        if let Some((what, v)) = figures.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return Err(format!(
                "{what} {v} (from {}): not a positive measurement",
                self.figures_from
            ));
        }
        Ok(())
    }
}

fn ceil_div(need: f64, per: f64) -> u64 {
    if per <= 0.0 {
        return u64::MAX;
    }
    ((need / per).ceil() as u64).max(1)
}

pub fn plan(i: PlanInputs) -> Plan {
    let messages_per_s = i.connections as f64 * i.rate;
    let cpu = messages_per_s * i.cpu_us_per_message / 1e6;
    let mem = i.connections as f64 * i.rss_bytes_per_connection;
    let machines_for_cpu = ceil_div(cpu, i.cores as f64 * HEADROOM);
    let machines_for_memory = ceil_div(mem, i.memory_bytes as f64 * HEADROOM);
    // Ports bound per destination address: a machine holds ports x source addresses.
    let machines_for_ports = ceil_div(
        i.connections as f64,
        i.ports_per_address as f64 * i.source_addresses as f64,
    );
    let all = [
        ("cpu", machines_for_cpu),
        ("memory", machines_for_memory),
        ("ports", machines_for_ports),
    ];
    // The first of equal counts: cpu, then memory, then ports.
    let (bound_by, machines) =
        all.into_iter()
            .fold(("cpu", 0), |best, x| if x.1 > best.1 { x } else { best });
    let notes = vec![
        format!(
            "each machine filled to {:.0}% of its cores and memory; the load generator's RSS only (the kernel's socket buffers come on top: audit's memory checks size those)",
            HEADROOM * 100.0
        ),
        format!("figures from {}", i.figures_from),
    ];
    Plan {
        messages_per_s,
        bytes_per_s: messages_per_s * i.size as f64,
        cpu_cores_needed: cpu,
        memory_bytes_needed: mem,
        machines_for_cpu,
        machines_for_memory,
        machines_for_ports,
        machines,
        bound_by: bound_by.into(),
        headroom: HEADROOM,
        notes,
        inputs: i,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> PlanInputs {
        PlanInputs {
            connections: 1_000_000,
            rate: 5.0,
            size: 1024,
            cpu_us_per_message: 4.0,
            rss_bytes_per_connection: 2048.0,
            figures_from: "test".into(),
            cores: 8,
            memory_bytes: 16 << 30,
            ports_per_address: 28_232,
            source_addresses: 1,
        }
    }

    #[test]
    fn the_tightest_resource_sets_the_count() {
        // 5 M msg/s x 4 us = 20 cores: 5 machines at half of 8; 2 GB of RSS: 1; ports:
        // 1,000,000 / 28,232 = 36 machines with one address each.
        let p = plan(inputs());
        assert_eq!((p.machines_for_cpu, p.machines_for_memory), (5, 1));
        assert_eq!((p.machines_for_ports, p.machines), (36, 36));
        assert_eq!(p.bound_by, "ports");
        // Eight source addresses each: CPU binds.
        let p = plan(PlanInputs {
            source_addresses: 8,
            ..inputs()
        });
        assert_eq!((p.machines, p.bound_by.as_str()), (5, "cpu"));
    }

    #[test]
    fn a_machine_of_nothing_or_uncountable_ports_is_refused() {
        assert!(inputs().check().is_ok());
        let e = PlanInputs {
            memory_bytes: 0,
            ..inputs()
        }
        .check()
        .unwrap_err();
        assert!(e.starts_with("--memory"), "{e}");
        assert!(PlanInputs {
            cores: 0,
            ..inputs()
        }
        .check()
        .is_err());
        let e = PlanInputs {
            ports_per_address: u64::MAX,
            source_addresses: 2,
            ..inputs()
        }
        .check()
        .unwrap_err();
        assert!(e.contains("too many"), "{e}");
        assert!(PlanInputs {
            rss_bytes_per_connection: f64::NAN,
            ..inputs()
        }
        .check()
        .is_err());
    }
}
