//! The one way rtcheck prints what a user gave it that may hold a secret: URLs (user
//! info, path parameters, query values, fragments), request headers and tokens. Every
//! command and every format prints a URL through [`url`] and a header through [`header`];
//! the secret itself stays in the request, never in a report, a log line or an error.

/// What a secret becomes.
pub const MASK: &str = "***";

/// A URL fit to print: `scheme://user:***@host:port/path;name=***?name=***`. A password
/// (or a bare token as user info) becomes `***`, every path parameter and query value
/// becomes `***` (names kept: they say what was sent), a fragment is dropped. Text that
/// is not a URL is masked the same way, so an error can print what it could not parse.
pub fn url(s: &str) -> String {
    let s = s.split('#').next().unwrap_or("");
    let (scheme, rest) = match s.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, s),
    };
    let split = rest.find(['/', '?', ';']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(split);
    let authority = match authority.rsplit_once('@') {
        Some((info, host)) => match info.split_once(':') {
            Some((user, _)) => format!("{user}:{MASK}@{host}"),
            None => format!("{MASK}@{host}"),
        },
        None => authority.to_string(),
    };
    let scheme = scheme.map_or(String::new(), |s| format!("{s}://"));
    format!("{scheme}{authority}{}", path_and_query(tail))
}

/// A request target (`/path;k=v?k=v`) with every parameter value replaced by `***`.
pub fn path_and_query(pq: &str) -> String {
    let (path, query) = match pq.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (pq, None),
    };
    // Path parameters (`/a;jsessionid=X/b`) ride on any segment.
    let path: Vec<String> = path
        .split('/')
        .map(|seg| {
            let mut parts = seg.split(';');
            let head = parts.next().unwrap_or("").to_string();
            parts.fold(head, |acc, p| format!("{acc};{}", param(p)))
        })
        .collect();
    let mut out = path.join("/");
    if let Some(q) = query {
        let q: Vec<String> = q.split('&').map(param).collect();
        out.push('?');
        out.push_str(&q.join("&"));
    }
    out
}

/// `name=value` keeps its name; a bare value (`?TOKEN`, `;TOKEN`) is masked whole.
fn param(p: &str) -> String {
    match p.split_once('=') {
        Some((k, _)) => format!("{k}={MASK}"),
        None if p.is_empty() => String::new(),
        None => MASK.to_string(),
    }
}

/// Header names whose values carry no secret and help read a report.
const PLAIN_HEADERS: &[&str] = &[
    "accept",
    "accept-encoding",
    "cache-control",
    "connection",
    "content-type",
    "content-length",
    "last-event-id",
    "origin",
    "sec-websocket-protocol",
    "sec-websocket-version",
    "upgrade",
    "user-agent",
];

/// A request header fit to print: `Name: value` for the plain ones, `Name: ***` for the
/// rest (Authorization, Cookie, API keys, anything a user added).
pub fn header(name: &str, value: &str) -> String {
    let plain = PLAIN_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name));
    if plain {
        format!("{name}: {value}")
    } else {
        format!("{name}: {MASK}")
    }
}

/// Replace every occurrence of each secret in `text` (an error from a library that
/// echoed a URL, say) by `***`. Empty secrets are ignored.
pub fn scrub(text: &str, secrets: &[&str]) -> String {
    secrets
        .iter()
        .filter(|s| s.len() >= 3)
        .fold(text.to_string(), |t, s| t.replace(s, MASK))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_names_and_lose_values() {
        let cases = [
            (
                "http://u:PASS@h:8080/a?k=SECRET&x",
                "http://u:***@h:8080/a?k=***&***",
            ),
            ("redis://h/?password=PW", "redis://h/?password=***"),
            ("redis://:PW@h:1/0", "redis://:***@h:1/0"),
            ("rediss://TOK@h/", "rediss://***@h/"),
            (
                "https://h/app;jsessionid=SID/x;v=1?q=Z#frag=F",
                "https://h/app;jsessionid=***/x;v=***?q=***",
            ),
            ("unix:///run/redis.sock", "unix:///run/redis.sock"),
            ("http://h", "http://h"),
            ("http://h/", "http://h/"),
            ("not a url?token=T", "not a url?token=***"),
            ("u:PW@host/x", "u:***@host/x"),
        ];
        for (given, want) in cases {
            assert_eq!(url(given), want, "{given}");
        }
    }

    #[test]
    fn headers_mask_all_but_plain_ones() {
        assert_eq!(header("Authorization", "Bearer S"), "Authorization: ***");
        assert_eq!(header("X-Api-Key", "S"), "X-Api-Key: ***");
        assert_eq!(
            header("accept", "text/event-stream"),
            "accept: text/event-stream"
        );
    }

    #[test]
    fn scrub_replaces_each_secret() {
        assert_eq!(scrub("a SECRET b SECRET", &["SECRET", ""]), "a *** b ***");
    }
}
