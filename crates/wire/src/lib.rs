//! rtcheck's wire formats, with no runtime (no tokio): what every client and the embedded
//! server put on and read off a socket. The message payload (seq + scheduled time), SSE
//! events, WebSocket frames (either end), resume positions and their markers (epoch, gap,
//! reset), HTTP/1.1 request heads, and response heads with their body framing (clients).
//! Each is written once here and used by serve, bench, verify, probe and load.
//! The transport and delivery-design kinds, the server's stats contract and the Prometheus
//! text writer live here too: every crate above names them.
pub mod appproto;
pub mod delivery;
pub mod epoch;
pub mod http;
pub mod payload;
pub mod prom;
pub mod sse;
pub mod stats;
pub mod transport;
pub mod ws;
