//! `ws-over-h2` (issue 40): WebSocket over HTTP/2 (RFC 8441, extended CONNECT). Browsers
//! open a WebSocket as a stream of an h2 connection when the server's SETTINGS carry
//! SETTINGS_ENABLE_CONNECT_PROTOCOL; an edge that advertises it and then resets the CONNECT
//! (or answers it with anything but 200) breaks them (Chrome shows close 1006), while one
//! that never advertises it is fine: browsers use the HTTP/1.1 Upgrade. Observed on a fresh
//! TLS connection offering only h2: the SETTINGS, then, when advertised, one extended
//! CONNECT on the URL's path; an Alt-Svc advertising h3 is reported as not measured.
use super::client::{self, ClientOpts};
use super::target::Target;
use super::{finding, Kind, Meta, UrlObs};
use crate::findings::{Finding, Fix, Status};
use serde::Serialize;
use std::time::Duration;

pub const ID: &str = super::CheckId::WsOverH2.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::WsOverH2,
    title: "WebSocket over HTTP/2 (RFC 8441)",
    evidence: &[],
    run: check,
};

/// What the h2 connection showed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct H2Obs {
    /// The protocol the TLS handshake settled on when only h2 was offered.
    pub alpn: Option<String>,
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 in the server's SETTINGS (None: no h2).
    pub advertised: Option<bool>,
    /// The extended CONNECT, when advertised.
    pub connect: Option<ConnectObs>,
    /// The Alt-Svc value of a GET on the same connection, when it names h3.
    pub alt_svc_h3: Option<String>,
}

/// The answer to `CONNECT :protocol websocket`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectObs {
    pub status: Option<u16>,
    /// The stream or connection was reset (the h2 error code), or failed otherwise.
    pub reset: Option<String>,
    /// A DATA frame (the server's first WebSocket bytes) came within the wait.
    pub data_seen: bool,
}

/// How long to wait for the first server bytes on an accepted stream.
const DATA_WAIT: Duration = Duration::from_secs(3);

/// Observe `t` (wss:// or https://) over h2. Errors: the connection itself failed.
pub async fn observe(t: &Target, o: &ClientOpts, origin: &str) -> Result<H2Obs, String> {
    let conn = client::connect(t, o, &["h2"])
        .await
        .map_err(|e| format!("{e:#}"))?;
    let mut obs = H2Obs {
        alpn: conn.alpn.clone(),
        advertised: None,
        connect: None,
        alt_svc_h3: None,
    };
    if conn.alpn.as_deref() != Some("h2") {
        return Ok(obs);
    }
    let bound = |what: &'static str| move |_| format!("{what}: no answer within {:?}", o.timeout);
    let (mut send, mut connection) =
        tokio::time::timeout(o.timeout, h2::client::handshake(conn.io))
            .await
            .map_err(bound("h2 handshake"))?
            .map_err(|e| format!("h2 handshake: {e}"))?;
    let mut pings = connection.ping_pong().ok_or("h2: no ping handle")?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let result = async {
        // The server's SETTINGS come first on its side: once a PING is answered, they were read.
        tokio::time::timeout(o.timeout, pings.ping(h2::Ping::opaque()))
            .await
            .map_err(bound("h2 PING"))?
            .map_err(|e| format!("h2 PING: {e}"))?;
        let advertised = send.is_extended_connect_protocol_enabled();
        obs.advertised = Some(advertised);
        obs.alt_svc_h3 = alt_svc(&mut send, t, o).await;
        if advertised {
            obs.connect = Some(extended_connect(&mut send, t, o, origin).await);
        }
        Ok::<(), String>(())
    }
    .await;
    driver.abort();
    result.map(|_| obs)
}

fn uri(t: &Target) -> String {
    let host = if t.host.contains(':') {
        format!("[{}]", t.host)
    } else {
        t.host.clone()
    };
    format!("https://{host}:{}{}", t.port, t.path_and_query)
}

/// A GET on the URL over the h2 connection: its Alt-Svc, when it names h3.
async fn alt_svc(
    send: &mut h2::client::SendRequest<bytes::Bytes>,
    t: &Target,
    o: &ClientOpts,
) -> Option<String> {
    let mut req = http::Request::get(uri(t)).body(()).ok()?;
    for (k, v) in &o.headers {
        let (Ok(k), Ok(v)) = (
            http::HeaderName::try_from(k.as_str()),
            http::HeaderValue::try_from(v.as_str()),
        ) else {
            continue;
        };
        req.headers_mut().append(k, v);
    }
    let (resp, _) = send
        .clone()
        .ready()
        .await
        .ok()?
        .send_request(req, true)
        .ok()?;
    let resp = tokio::time::timeout(o.timeout, resp).await.ok()?.ok()?;
    let v = resp.headers().get("alt-svc")?.to_str().ok()?;
    v.split(',')
        .any(|e| e.trim_start().starts_with("h3"))
        .then(|| v.to_string())
}

/// `CONNECT :protocol websocket` on the URL's path, as a browser sends it.
async fn extended_connect(
    send: &mut h2::client::SendRequest<bytes::Bytes>,
    t: &Target,
    o: &ClientOpts,
    origin: &str,
) -> ConnectObs {
    let mut out = ConnectObs {
        status: None,
        reset: None,
        data_seen: false,
    };
    let built = http::Request::builder()
        .method(http::Method::CONNECT)
        .uri(uri(t))
        .header("sec-websocket-version", "13")
        .header("origin", origin)
        .extension(h2::ext::Protocol::from_static("websocket"))
        .body(());
    let mut req = match built {
        Ok(r) => r,
        Err(e) => {
            out.reset = Some(format!("request not built: {e}"));
            return out;
        }
    };
    for (k, v) in &o.headers {
        if let (Ok(k), Ok(v)) = (
            http::HeaderName::try_from(k.as_str()),
            http::HeaderValue::try_from(v.as_str()),
        ) {
            req.headers_mut().append(k, v);
        }
    }
    let sent = match send.clone().ready().await {
        Ok(mut s) => s.send_request(req, false),
        Err(e) => Err(e),
    };
    let (resp, _stream) = match sent {
        Ok(x) => x,
        Err(e) => {
            out.reset = Some(h2_error(&e));
            return out;
        }
    };
    match tokio::time::timeout(o.timeout, resp).await {
        Err(_) => out.reset = Some(format!("no answer within {:?}", o.timeout)),
        Ok(Err(e)) => out.reset = Some(h2_error(&e)),
        Ok(Ok(r)) => {
            out.status = Some(r.status().as_u16());
            if r.status() == http::StatusCode::OK {
                let mut body = r.into_body();
                match tokio::time::timeout(DATA_WAIT, body.data()).await {
                    Ok(Some(Ok(_))) => out.data_seen = true,
                    Ok(Some(Err(e))) => out.reset = Some(h2_error(&e)),
                    _ => {}
                }
            }
        }
    }
    out
}

/// An h2 error as its code when it has one (`stream reset: PROTOCOL_ERROR`).
fn h2_error(e: &h2::Error) -> String {
    match e.reason() {
        Some(r) if e.is_remote() => format!("reset by the server: {r:?}"),
        Some(r) => format!("reset: {r:?}"),
        None => e.to_string(),
    }
}

/// The verdict (pure): advertised and working, advertised and broken, or not advertised.
pub fn check(u: &UrlObs) -> Option<Finding> {
    if u.kind != Kind::WebSocket || !u.target.scheme.tls() {
        return None;
    }
    let obs = u.ws_h2.as_ref()?;
    let (status, mut observed, reason) = match obs {
        Err(e) => (
            Status::Skip,
            "not measured".to_string(),
            Some(format!("the h2 connection failed: {e}")),
        ),
        Ok(h) => judge(h),
    };
    if let Ok(H2Obs {
        alt_svc_h3: Some(v),
        ..
    }) = obs
    {
        observed.push_str(&format!(
            "; Alt-Svc advertises HTTP/3 ({v}): not measured (rtcheck does not speak h3)"
        ));
    }
    let mut f = finding(
        &META,
        u,
        status,
        observed,
        "not advertised, or advertised and the extended CONNECT answered 200",
        "browsers open a WebSocket over HTTP/2 only when the server advertises SETTINGS_ENABLE_CONNECT_PROTOCOL; a CONNECT that is then reset or refused fails in the browser (close 1006)",
        fix_broken(),
    );
    f.reason = reason;
    if let Ok(h) = obs {
        if let Some(a) = h.advertised {
            f.numbers
                .insert("h2_extended_connect_advertised".into(), a as u8 as f64);
        }
        if let Some(s) = h.connect.as_ref().and_then(|c| c.status) {
            f.numbers.insert("h2_connect_status".into(), s as f64);
        }
    }
    Some(f)
}

fn judge(h: &H2Obs) -> (Status, String, Option<String>) {
    let fine = "browsers open WebSockets with the HTTP/1.1 Upgrade (fine)";
    match (h.advertised, &h.connect) {
        (None, _) => (
            Status::Pass,
            format!(
                "no h2 (ALPN {}): {fine}",
                h.alpn.as_deref().unwrap_or("none")
            ),
            None,
        ),
        (Some(false), _) => (
            Status::Pass,
            format!("h2 without extended CONNECT (not advertised): {fine}"),
            None,
        ),
        (Some(true), Some(c)) if c.status == Some(200) && c.reset.is_none() => (
            Status::Pass,
            format!(
                "extended CONNECT advertised and answered 200{}",
                if c.data_seen {
                    ", the server's first bytes arrived on the stream"
                } else {
                    " (no server bytes within 3 s)"
                }
            ),
            None,
        ),
        (Some(true), Some(c)) => {
            let what = match (&c.reset, c.status) {
                (Some(r), _) => r.clone(),
                (None, Some(s)) => format!("answered {s}, not 200"),
                (None, None) => "no answer".to_string(),
            };
            (
                Status::Fail,
                format!("extended CONNECT advertised, but the WebSocket stream failed: {what}"),
                Some("Chrome and Firefox use the advertised h2 path for wss:// and show close 1006; they do not retry over HTTP/1.1".into()),
            )
        }
        (Some(true), None) => (
            Status::Skip,
            "extended CONNECT advertised; the CONNECT was not attempted".to_string(),
            None,
        ),
    }
}

fn fix_broken() -> Fix {
    Fix {
        summary: "make the edge carry WebSocket streams over h2 (upgrade it), or stop it advertising extended CONNECT so browsers use HTTP/1.1".into(),
        runtime: Vec::new(),
        persistent: vec![
            "haproxy (global): h2-workaround-bogus-websocket-clients   # stops announcing it".into(),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(advertised: Option<bool>, status: Option<u16>, reset: Option<&str>) -> H2Obs {
        H2Obs {
            alpn: advertised.map(|_| "h2".into()),
            advertised,
            connect: advertised.filter(|a| *a).map(|_| ConnectObs {
                status,
                reset: reset.map(String::from),
                data_seen: status == Some(200),
            }),
            alt_svc_h3: None,
        }
    }

    #[test]
    fn advertised_and_refused_or_reset_fails_not_advertised_passes() {
        assert_eq!(judge(&obs(Some(true), Some(200), None)).0, Status::Pass);
        let (s, o, _) = judge(&obs(
            Some(true),
            None,
            Some("reset by the server: PROTOCOL_ERROR"),
        ));
        assert_eq!(s, Status::Fail);
        assert!(o.contains("PROTOCOL_ERROR"), "{o}");
        let (s, o, _) = judge(&obs(Some(true), Some(400), None));
        assert_eq!(s, Status::Fail);
        assert!(o.contains("answered 400"), "{o}");
        let (s, o, _) = judge(&obs(Some(false), None, None));
        assert_eq!(s, Status::Pass);
        assert!(
            o.contains("not advertised") && o.contains("HTTP/1.1"),
            "{o}"
        );
        assert!(judge(&obs(None, None, None)).1.contains("no h2"));
    }
}
