//! HTTP/1.1 request heads (httparse under RFC 9112's rules: one Host, one Content-Length,
//! origin- and absolute-form targets, percent-decoded queries) and the responses the
//! embedded server writes; [`response`] is the client side (response heads and body
//! framing), [`client`] the pieces every client shares (request heads, the read-head loop
//! over any `Read`). Pure: the socket is the caller's.
pub mod client;
pub mod response;

/// Largest request head we accept.
pub const MAX_HEAD: usize = 8 * 1024;
/// Largest request body we read (and discard).
pub const MAX_BODY: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub http11: bool,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    /// Does a comma-separated header contain `token` (case-insensitive)?
    pub fn header_has(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, v)| n == name && v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    }
    /// A query parameter, percent-decoded (`+` is a space, as in forms); None if absent or
    /// its encoding is invalid (then the caller's parse fails with its usual message).
    pub fn query_param(&self, key: &str) -> Option<String> {
        self.query.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k).as_deref() == Some(key)).then(|| percent_decode(v))?
        })
    }
    pub fn keep_alive(&self) -> bool {
        if self.header_has("connection", "close") {
            return false;
        }
        self.http11 || self.header_has("connection", "keep-alive")
    }
    /// The body length (RFC 9110 8.6): every Content-Length field and list member must be
    /// the same run of digits; anything else (a sign, two different values) is a 400.
    pub fn content_length(&self) -> Result<u64, String> {
        let mut len = None;
        for (_, v) in self.headers.iter().filter(|(n, _)| n == "content-length") {
            for part in v.split(',') {
                let t = part.trim();
                let n = t
                    .bytes()
                    .all(|b| b.is_ascii_digit())
                    .then(|| t.parse::<u64>().ok())
                    .flatten()
                    .ok_or_else(|| format!("bad Content-Length `{v}`"))?;
                if len.is_some_and(|l| l != n) {
                    return Err("conflicting Content-Length values".into());
                }
                len = Some(n);
            }
        }
        Ok(len.unwrap_or(0))
    }
    /// RFC 9112 3.2: an HTTP/1.1 request has exactly one Host.
    pub fn host_ok(&self) -> bool {
        let hosts = self.headers.iter().filter(|(n, _)| n == "host").count();
        hosts == 1 || (!self.http11 && hosts == 0)
    }
}

/// A request that cannot be served: the status to answer and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadError {
    pub status: u16,
    pub msg: String,
}

pub fn head_error(status: u16, msg: impl Into<String>) -> HeadError {
    HeadError {
        status,
        msg: msg.into(),
    }
}

/// Too large: 414 if even the request line does not fit, 431 for the header fields.
fn too_large(buf: &[u8]) -> HeadError {
    let line_end = buf[..buf.len().min(MAX_HEAD)]
        .windows(2)
        .position(|w| w == b"\r\n");
    match line_end {
        None => head_error(414, format!("request line longer than {MAX_HEAD} bytes")),
        Some(_) => head_error(431, format!("request head larger than {MAX_HEAD} bytes")),
    }
}

/// Header fields we accept in one request.
const MAX_HEADERS: usize = 48;

/// Parse a request head from `buf`: Ok(None) if incomplete, Ok((req, head_len)) when
/// complete, Err on garbage (400) or oversize (414, 431).
pub fn parse_head(buf: &[u8]) -> Result<Option<(Request, usize)>, HeadError> {
    let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut r = httparse::Request::new(&mut hs);
    match r.parse(buf) {
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => Err(too_large(buf)),
        Ok(httparse::Status::Partial) => Ok(None),
        Ok(httparse::Status::Complete(n)) if n > MAX_HEAD => Err(too_large(buf)),
        Err(httparse::Error::TooManyHeaders) => Err(head_error(
            431,
            format!("more than {MAX_HEADERS} header fields"),
        )),
        Ok(httparse::Status::Complete(n)) => {
            let target = origin_form(r.path.unwrap_or("/"));
            let (path, query) = target.split_once('?').unwrap_or((target, ""));
            let headers = r
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_ascii_lowercase(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect();
            Ok(Some((
                Request {
                    method: r.method.unwrap_or("").to_string(),
                    path: path.to_string(),
                    query: query.to_string(),
                    headers,
                    http11: r.version == Some(1),
                },
                n,
            )))
        }
        Err(e) => Err(head_error(400, format!("bad HTTP request: {e}"))),
    }
}

/// The path-and-query of an absolute-form target (`http://host/p?q`, RFC 9112 3.2.2);
/// other forms unchanged.
fn origin_form(target: &str) -> &str {
    let lower = target.get(..8).unwrap_or("").to_ascii_lowercase();
    let scheme = if lower.starts_with("http://") {
        7
    } else if lower.starts_with("https://") {
        8
    } else {
        return target;
    };
    let rest = &target[scheme..];
    match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => &rest[i..],
        // `http://host?q` has an empty path, which is "/".
        Some(_) | None => "/",
    }
}

/// Decode `%XX` escapes and `+`; None for a bad escape or a result that is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

pub fn reason(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        403 => "Forbidden",
        409 => "Conflict",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// A complete response with a body.
pub fn response(status: u16, content_type: &str, body: &[u8], keep_alive: bool) -> Vec<u8> {
    response_with(status, content_type, body, keep_alive, &[])
}

/// A complete response with a body and extra header fields.
pub fn response_with(
    status: u16,
    content_type: &str,
    body: &[u8],
    keep_alive: bool,
    extra: &[(&str, &str)],
) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: {}\r\n",
        reason(status),
        body.len(),
        if keep_alive { "keep-alive" } else { "close" }
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut v = head.into_bytes();
    v.extend_from_slice(body);
    v
}

/// A plain-text error response that closes the connection.
pub fn error(status: u16, msg: &str) -> Vec<u8> {
    error_with(status, msg, &[])
}

/// A plain-text error response with extra header fields; closes the connection.
pub fn error_with(status: u16, msg: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    response_with(
        status,
        "text/plain; charset=utf-8",
        format!("{msg}\n").as_bytes(),
        false,
        extra,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_websocket_upgrade() {
        let raw = b"GET /ws?x=1 HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n\x81";
        let (r, n) = parse_head(raw).unwrap().unwrap();
        assert_eq!(n, raw.len() - 1);
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/ws");
        assert_eq!(r.query_param("x").as_deref(), Some("1"));
        assert!(r.header_has("connection", "upgrade"));
        assert!(r.header_has("upgrade", "WebSocket"));
        assert_eq!(r.header("sec-websocket-version"), Some("13"));
        assert!(r.keep_alive());
    }

    #[test]
    fn partial_garbage_and_oversized() {
        assert_eq!(parse_head(b"GET /poll HTTP/1.1\r\nHo").unwrap(), None);
        assert!(parse_head(b"\x00\x01\x02garbage\r\n\r\n").is_err());
        let mut big = b"GET / HTTP/1.1\r\nX: ".to_vec();
        big.extend(vec![b'a'; MAX_HEAD]);
        assert_eq!(parse_head(&big).unwrap_err().status, 431);
        let mut long = b"GET /".to_vec();
        long.extend(vec![b'a'; MAX_HEAD]);
        assert_eq!(parse_head(&long).unwrap_err().status, 414);
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend(format!("X-{i}: y\r\n").bytes());
        }
        many.extend(b"\r\n");
        assert_eq!(parse_head(&many).unwrap_err().status, 431);
        assert_eq!(parse_head(b"\x00\x01\r\n\r\n").unwrap_err().status, 400);
    }

    fn head(raw: &str) -> Request {
        parse_head(raw.as_bytes()).unwrap().unwrap().0
    }

    #[test]
    fn content_length_must_be_one_unsigned_value() {
        let cl = |v: &str| head(&format!("POST / HTTP/1.1\r\n{v}\r\n")).content_length();
        assert_eq!(cl("Content-Length: 5\r\n"), Ok(5));
        assert_eq!(cl("Content-Length: 5\r\nContent-Length: 5\r\n"), Ok(5));
        assert_eq!(cl("Content-Length: 5, 5\r\n"), Ok(5));
        assert_eq!(cl(""), Ok(0));
        assert!(cl("Content-Length: -1\r\n").is_err());
        assert!(cl("Content-Length: +1\r\n").is_err());
        assert!(cl("Content-Length: 5\r\nContent-Length: 6\r\n").is_err());
        assert!(cl("Content-Length: 5, 6\r\n").is_err());
        assert!(cl("Content-Length: 99999999999999999999999\r\n").is_err());
    }

    #[test]
    fn absolute_form_targets_and_percent_encoded_queries() {
        let r = head("GET http://example.com:8080/poll?since=%31%32 HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(r.path, "/poll");
        assert_eq!(r.query_param("since").as_deref(), Some("12"));
        assert_eq!(head("GET HTTPS://h HTTP/1.1\r\n\r\n").path, "/");
        let r = head("GET /p?s%69nce=a+b%2Bc&bad=%zz HTTP/1.1\r\n\r\n");
        assert_eq!(r.query_param("since").as_deref(), Some("a b+c"));
        assert_eq!(r.query_param("bad"), None);
        assert_eq!(percent_decode("%e2%82%ac"), Some("€".into()));
        assert_eq!(percent_decode("%ff"), None);
        assert_eq!(percent_decode("%4"), None);
    }

    #[test]
    fn host_is_required_once_in_http11() {
        assert!(head("GET / HTTP/1.1\r\nHost: a\r\n\r\n").host_ok());
        assert!(!head("GET / HTTP/1.1\r\n\r\n").host_ok());
        assert!(!head("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").host_ok());
        assert!(head("GET / HTTP/1.0\r\n\r\n").host_ok());
    }

    #[test]
    fn keep_alive_and_length_rules() {
        let (r, _) = parse_head(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!r.keep_alive());
        let (r, _) =
            parse_head(b"POST / HTTP/1.1\r\nConnection: close\r\nContent-Length: 5\r\n\r\n")
                .unwrap()
                .unwrap();
        assert!(!r.keep_alive());
        assert_eq!(r.content_length(), Ok(5));
    }

    #[test]
    fn response_has_exact_length() {
        let r = response(200, "text/plain", b"ok\n", true);
        let s = String::from_utf8(r).unwrap();
        assert!(s.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(s.contains("Content-Length: 3\r\n"));
        assert!(s.ends_with("\r\n\r\nok\n"));
    }
}
