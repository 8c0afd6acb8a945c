//! HTTP/1.1 on the wire for the sweep's hot loop (pure): the request encoded once (by
//! `rtcheck_wire::http::client::write_head`); the
//! answers are read by `rtcheck_wire::http::response` (httparse, RFC 9112 framing, no
//! allocation). Why not hyper's client here: its dispatcher (a channel, a oneshot and a
//! body channel per request) cost 4.5-5.5 us of user CPU per request against wrk's 1.1
//! on this host, so the load generator, not the target, set the ceiling (docs/load.md).
//! `--engine hyper` keeps it.
use super::client::Target;
use bytes::Bytes;

/// Methods that carry no body unless one is given.
fn bodyless(m: &http::Method) -> bool {
    use http::Method as M;
    [M::GET, M::HEAD, M::DELETE, M::OPTIONS, M::TRACE, M::CONNECT].contains(m)
}

/// The request's bytes, encoded once per sweep. Host comes from the URL unless the user
/// gave one; Content-Length from the body unless the user gave framing headers.
pub fn encode(t: &Target) -> Bytes {
    use http::header::{CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
    let has = |n: &http::header::HeaderName| t.headers.iter().any(|(k, _)| k == n);
    let target = t.path_uri.path_and_query().map_or("/", |p| p.as_str());
    let mut headers: Vec<(&[u8], &[u8])> = Vec::with_capacity(t.headers.len() + 2);
    if !has(&HOST) {
        headers.push((b"host", t.host_value.as_bytes()));
    }
    headers.extend(
        t.headers
            .iter()
            .map(|(k, v)| (k.as_str().as_bytes(), v.as_bytes())),
    );
    let len = t.body.len().to_string();
    let framed = has(&CONTENT_LENGTH) || has(&TRANSFER_ENCODING);
    if !framed && (!t.body.is_empty() || !bodyless(&t.method)) {
        headers.push((b"content-length", len.as_bytes()));
    }
    let mut b = Vec::with_capacity(128 + t.body.len());
    rtcheck_wire::http::client::write_head(&mut b, t.method.as_str(), target, headers);
    b.extend_from_slice(&t.body);
    Bytes::from(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Target {
        super::super::client::parse_url(url).unwrap()
    }

    #[test]
    fn request_encoding() {
        let t = target("http://127.0.0.1:8080/work?ms=20");
        assert_eq!(
            &encode(&t)[..],
            b"GET /work?ms=20 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n\r\n"
        );
        let mut p = target("http://localhost/x");
        p.method = http::Method::POST;
        p.body = Bytes::from_static(b"{}");
        p.headers
            .push(("x-a".parse().unwrap(), "1".parse().unwrap()));
        assert_eq!(
            &encode(&p)[..],
            b"POST /x HTTP/1.1\r\nhost: localhost\r\nx-a: 1\r\ncontent-length: 2\r\n\r\n{}"
        );
        p.body = Bytes::new();
        assert!(encode(&p).ends_with(b"content-length: 0\r\n\r\n"));
        p.headers
            .push(("host".parse().unwrap(), "example".parse().unwrap()));
        let e = encode(&p);
        assert_eq!(
            e.windows(5)
                .filter(|w| w.eq_ignore_ascii_case(b"host:"))
                .count(),
            1
        );
    }
}
