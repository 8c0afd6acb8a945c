//! `rtcheck probe --browser`: what a real browser sees on the path. Headless Chromium
//! (chrome.rs) opens a page on the endpoint's own origin and runs three experiments in it
//! (page.html); the page's state and the DevTools network log (obs.rs) become findings
//! (checks.rs) in probe's report:
//! - `browser-sse-connections`: 7 EventSources to one host; how many open at once and how
//!   long the 7th waits (HTTP/1.1: 6 per host; HTTP/2: all on one connection);
//! - `browser-sse-reconnect`: after the server closes the stream, the browser's delay,
//!   its Last-Event-ID and what was lost;
//! - `browser-websocket`: handshake (and which HTTP carried it: HTTP/2 by RFC 8441, or
//!   HTTP/1.1), frames decoded, the close code the page saw.
pub mod checks;
#[cfg(feature = "browser")]
pub mod chrome;
#[cfg(feature = "browser")]
pub mod netlog;
pub mod obs;
#[cfg(feature = "browser")]
mod run;
#[cfg(feature = "browser")]
pub mod tls;

#[cfg(feature = "browser")]
pub use run::{run, trust_note, Options, EVENT_SOURCES};
