//! The one delivery-design type: what `choose` recommends from the loss answer, what
//! `serve --delivery` runs, and what `verify delivery` measures. Its names (`snapshot`,
//! `seq-ring`, `session-ack`) are the flag values and the JSON/YAML strings.
use rtcheck_base::names::Named;
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// Newer replaces older: the latest state first on (re)connect, no seqs needed.
    Snapshot,
    /// A shared stream: seqs, a ring to replay from, a gap marker for what it no longer
    /// holds.
    SeqRing,
    /// A stream per user: a session per client, a queue of unacked messages, acks by seq,
    /// expiry after a TTL.
    SessionAck,
}

impl Delivery {
    /// The weakest guarantee first: the order `verify delivery` runs them and reports
    /// them in.
    pub const WEAKEST_FIRST: [Delivery; 3] =
        [Delivery::Snapshot, Delivery::SeqRing, Delivery::SessionAck];

    pub const fn name(self) -> &'static str {
        match self {
            Delivery::Snapshot => "snapshot",
            Delivery::SeqRing => "seq-ring",
            Delivery::SessionAck => "session-ack",
        }
    }
}

/// [`Named::ALL`] in the order `serve --delivery` has always listed them (its default
/// first).
impl Named for Delivery {
    const ALL: &'static [Delivery] = &[Delivery::SeqRing, Delivery::SessionAck, Delivery::Snapshot];
    fn name(self) -> &'static str {
        Delivery::name(self)
    }
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_serdes_and_every_order_holds_every_design() {
        for d in Delivery::WEAKEST_FIRST {
            let j = serde_json::to_string(&d).unwrap();
            assert_eq!(j, format!("\"{}\"", d.name()));
            assert_eq!(serde_json::from_str::<Delivery>(&j).unwrap(), d);
            assert!(Delivery::ALL.contains(&d));
        }
        assert_eq!(Delivery::ALL.len(), Delivery::WEAKEST_FIRST.len());
        assert_eq!(Delivery::expected(), "seq-ring, session-ack or snapshot");
    }
}
