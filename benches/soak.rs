//! Soak benchmark of `rtcheck serve` (issue 21): 5,000 mixed clients for minutes, asserting
//! nothing lost silently, bounded RSS and open fds back to baseline. See soak/mod.rs.
//!
//!     cargo bench --bench soak -- --clients 200 --minutes 0.5     # the defaults: 5000, 3
#[path = "soak/mod.rs"]
mod soak;

fn main() -> std::process::ExitCode {
    soak::main()
}
