//! `--connect-to ADDR:PORT` and `--ca FILE` (issue 26), flattened into bench fanout and
//! verify delivery: measure a server through its TLS proxy or staging host. The URL keeps
//! the real name (TLS SNI, the certificate check, the Host header); every socket goes to
//! ADDR:PORT, which must be loopback (an `ssh -L` tunnel, or the proxy on this host).
use std::net::SocketAddr;
use std::path::PathBuf;

/// Their own heading in --help: verify's other flags are not about a proxy.
const HEADING: &str = "Through a TLS proxy (a foreign --server)";

#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReachArgs {
    /// Open every connection to ADDR:PORT on loopback (an ssh -L tunnel to your proxy, or
    /// the proxy on this host) while the URL keeps its name for TLS and the Host header.
    #[arg(long, value_name = "ADDR:PORT", value_parser = crate::bench::target::parse_connect_to, help_heading = HEADING)]
    pub connect_to: Option<SocketAddr>,
    /// Extra trusted root certificate(s), PEM, for wss:// and https:// (a private or
    /// staging CA).
    #[arg(long, value_name = "FILE", help_heading = HEADING)]
    pub ca: Option<PathBuf>,
    /// Send to a host that is not loopback (your staging, by your consent): its name is
    /// resolved once, TLS end to end; the first line says what will be sent.
    #[arg(long, help_heading = HEADING)]
    pub allow_remote: bool,
}

impl ReachArgs {
    /// Where the sockets of `url` go: `--connect-to`, the remote address `--allow-remote`
    /// consents to (resolved once), or None (loopback, the URL's own host).
    pub fn connect_to_for(&self, url: &str) -> anyhow::Result<Option<SocketAddr>> {
        crate::bench::target::remote_addr(url, self.connect_to, self.allow_remote)
    }

    /// What the TLS clients trust; a bad --ca is exit 2 here, before any connection.
    pub fn trust(&self) -> anyhow::Result<crate::sys::tls::Trust> {
        let t = crate::sys::tls::Trust::with_ca(self.ca.clone());
        if t.ca.is_some() {
            crate::sys::tls::client_config(&t, &[])?;
        }
        Ok(t)
    }
}

/// `--app-protocol`, `--channel`, `--event`: the library protocol WebSocket clients speak
/// and what they subscribe to, flattened into probe, rehearse, verify delivery and the
/// bench commands. A command whose flags mean more there says so with `edit_arg`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AppProtocolArgs {
    /// The library protocol the clients speak on a ws:// URL: socketio, signalr,
    /// phoenix, actioncable, graphql-ws, stomp, sockjs, mqtt or raw. Default: detected
    /// from the URL where it is unambiguous (`?EIO=4`, `/websocket?vsn=`, `/cable`...).
    #[arg(long, value_name = "NAME", value_parser = parse_app_protocol)]
    pub app_protocol: Option<rtcheck_wire::appproto::AppProtocol>,
    /// With a library protocol: what to subscribe to (Phoenix topic, ActionCable
    /// channel, STOMP destination, MQTT topic).
    #[arg(long, value_name = "NAME")]
    pub channel: Option<String>,
    /// With a library protocol: the Socket.IO event or SignalR method that carries the
    /// payload (default `message`).
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
}

impl AppProtocolArgs {
    /// --channel and --event as the clients send them.
    pub fn subscribe(&self) -> rtcheck_wire::appproto::Subscribe {
        rtcheck_wire::appproto::Subscribe {
            channel: self.channel.clone(),
            event: self.event.clone(),
        }
    }

    /// Whether --channel or --event was given.
    pub fn names_subscription(&self) -> bool {
        self.channel.is_some() || self.event.is_some()
    }

    /// Whether any of the three flags was given.
    pub fn any(&self) -> bool {
        self.app_protocol.is_some() || self.names_subscription()
    }
}

/// `--app-protocol NAME`, the error listing the names.
pub fn parse_app_protocol(s: &str) -> Result<rtcheck_wire::appproto::AppProtocol, String> {
    use rtcheck_wire::appproto::AppProtocol;
    AppProtocol::parse(s).ok_or_else(|| {
        let names: Vec<&str> = AppProtocol::ALL.iter().map(|p| p.name()).collect();
        format!("unknown protocol (one of: {})", names.join(", "))
    })
}
