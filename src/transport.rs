//! The realtime transport: the one type a profile declares, the hops support and the
//! checks judge. A leaf below `profile` and `hops`, which both name it.
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    Polling,
    Sse,
    Websocket,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Polling => "polling",
            Transport::Sse => "sse",
            Transport::Websocket => "websocket",
        }
    }
}
