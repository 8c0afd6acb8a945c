//! The one transport type: what a workload profile declares, what `choose` recommends, what
//! the embedded server counts its clients by, and what `verify memory` holds open. Two
//! spellings, each a contract: [`Transport::name`] (profiles, JSON, YAML, flags:
//! `polling`, `sse`, `websocket`) and [`Transport::label`] (the server's metric labels and
//! stats keys: `poll`, `sse`, `ws`, `raw`).
use rtcheck_base::names::Named;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transport {
    /// Plain HTTP requests (`/poll?since=SEQ`).
    Polling,
    /// Server-Sent Events.
    Sse,
    /// WebSocket.
    Websocket,
    /// The embedded server's raw-TCP floor (length-prefixed frames, `serve --protocol
    /// raw`): a baseline to measure the others against, never a transport to build on, so
    /// no profile or flag takes it.
    Raw,
}

impl Transport {
    /// Every transport, in declaration order (an index for per-transport counters).
    pub const EVERY: [Transport; 4] = [
        Transport::Polling,
        Transport::Sse,
        Transport::Websocket,
        Transport::Raw,
    ];

    /// The name in profiles, JSON and YAML, and a flag's value.
    pub const fn name(self) -> &'static str {
        match self {
            Transport::Polling => "polling",
            Transport::Sse => "sse",
            Transport::Websocket => "websocket",
            Transport::Raw => "raw",
        }
    }

    /// The server's spelling: metric labels (`transport="ws"`) and `/control/stats` keys.
    pub const fn label(self) -> &'static str {
        match self {
            Transport::Polling => "poll",
            Transport::Sse => "sse",
            Transport::Websocket => "ws",
            Transport::Raw => "raw",
        }
    }
}

/// [`Named::ALL`] is what a user may name (flags, profiles): `raw` is left out, so a
/// profile or a flag that says `raw` is refused in one line.
impl Named for Transport {
    const ALL: &'static [Transport] = &[Transport::Polling, Transport::Sse, Transport::Websocket];
    fn name(self) -> &'static str {
        Transport::name(self)
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Transport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit_variant("Transport", *self as u32, self.name())
    }
}

/// The names a profile accepts, as serde lists them in an error.
const NAMES: &[&str] = &["polling", "sse", "websocket"];

impl<'de> Deserialize<'de> for Transport {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Transport, D::Error> {
        struct Name;
        impl Visitor<'_> for Name {
            type Value = Transport;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a transport: polling, sse or websocket")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Transport, E> {
                match <Transport as Named>::from_name(s) {
                    Some(t) => Ok(t),
                    None if s == Transport::Raw.name() => Err(E::custom(
                        "`raw` is serve's raw-TCP floor, not a transport to build on: expected one of `polling`, `sse`, `websocket`",
                    )),
                    None => Err(E::unknown_variant(s, NAMES)),
                }
            }
        }
        d.deserialize_str(Name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels_are_the_contracts() {
        let names: Vec<&str> = Transport::EVERY.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["polling", "sse", "websocket", "raw"]);
        let labels: Vec<&str> = Transport::EVERY.iter().map(|t| t.label()).collect();
        assert_eq!(labels, ["poll", "sse", "ws", "raw"]);
        assert_eq!(
            <Transport as Named>::expected(),
            "polling, sse or websocket"
        );
        assert_eq!(
            NAMES,
            Transport::ALL.iter().map(|t| t.name()).collect::<Vec<_>>()
        );
        for (i, t) in Transport::EVERY.iter().enumerate() {
            assert_eq!(*t as usize, i, "EVERY is the declaration order");
        }
    }

    #[test]
    fn serde_speaks_the_names_and_refuses_raw_in_one_line() {
        let j = serde_json::to_string(&Transport::Websocket).unwrap();
        assert_eq!(j, "\"websocket\"");
        let t: Transport = serde_json::from_str("\"polling\"").unwrap();
        assert_eq!(t, Transport::Polling);
        let e = serde_json::from_str::<Transport>("\"raw\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("raw-TCP floor") && !e.contains('\n'), "{e}");
        let e = serde_json::from_str::<Transport>("\"ws\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("unknown variant `ws`, expected one of `polling`, `sse`, `websocket`"),
            "{e}"
        );
    }
}
