//! The one way rtcheck prints what a user gave it that may hold a secret: URLs (user
//! info, path parameters, secret-looking query values, fragments), request headers and
//! tokens. Every
//! command and every format prints a URL through [`url`]; header values and tokens are
//! never printed (errors name the header, not its value). As a last line of defence the
//! one-line error `app` prints is [`scrub`]bed of every secret on the command line
//! ([`secrets_in_args`]): a library's error that echoes a URL loses its secrets too.

/// What a secret becomes.
pub const MASK: &str = "***";

/// A URL fit to print: `scheme://user:***@host:port/path;name=***?token=***&EIO=4`. A
/// password (or a bare token as user info) becomes `***`, every path parameter becomes
/// `***`, a query value becomes `***` when its name or the value looks secret
/// ([`secret_param`]) and is shown otherwise (`EIO=4`, `transport=websocket`: the user
/// must see which protocol was spoken); names are kept, a fragment is dropped. Text that
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

/// A request target (`/path;k=v?k=v`) with every path parameter and every secret-looking
/// query value replaced by `***`.
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
            parts.fold(head, |acc, p| format!("{acc};{}", masked(p)))
        })
        .collect();
    let mut out = path.join("/");
    if let Some(q) = query {
        let q: Vec<String> = q
            .split('&')
            .map(|p| {
                if secret_param(p) {
                    masked(p)
                } else {
                    p.to_string()
                }
            })
            .collect();
        out.push('?');
        out.push_str(&q.join("&"));
    }
    out
}

/// Names whose values are credentials in the wild (OAuth, signed URLs, API keys, session
/// ids, one-time codes). Matched as a part of the lower-cased name (`access_token`,
/// `X-Amz-Signature`, `apiKey`).
const SECRET_NAMES: [&str; 18] = [
    "token", "key", "secret", "auth", "sig", "session", "sess", "sid", "pass", "pw", "jwt", "code",
    "cred", "ticket", "nonce", "otp", "hmac", "state",
];

/// Whether a query parameter's value is hidden: its name looks secret, or its value looks
/// like a credential (a long mix of letters and digits, or any long opaque string); a
/// bare value (`?TOKEN`) of 8 characters or more is treated as a token.
pub fn secret_param(p: &str) -> bool {
    let (name, value) = match p.split_once('=') {
        Some((k, v)) => (k.to_ascii_lowercase(), v),
        None => return p.len() >= 8,
    };
    if value.is_empty() {
        return false;
    }
    let letters = value.chars().any(|c| c.is_ascii_alphabetic());
    let digits = value.chars().any(|c| c.is_ascii_digit());
    SECRET_NAMES.iter().any(|s| name.contains(s))
        || (value.len() >= 12 && letters && digits)
        || value.len() >= 24
}

/// `name=value` keeps its name; a bare value (`?TOKEN`, `;TOKEN`) is masked whole.
fn masked(p: &str) -> String {
    match p.split_once('=') {
        Some((k, _)) => format!("{k}={MASK}"),
        None if p.is_empty() => String::new(),
        None => MASK.to_string(),
    }
}

/// The secrets in a command line: `--header`/`-H` values, `--control-token`, and every
/// URL's password, path parameter and query values. The last line of defence: an error
/// from a library (hyper, tungstenite, redis) that echoes a URL is scrubbed with them.
pub fn secrets_in_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut prev = "";
    for a in args {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (a.as_str(), None),
        };
        let value = |v: &str| v.split_once(':').map_or(v, |(_, v)| v).trim().to_string();
        let given = if ["--header", "-H", "--control-token"].contains(&prev) {
            Some(value(a))
        } else if ["--header", "--control-token"].contains(&flag) {
            inline.map(value)
        } else {
            None
        };
        if let Some(v) = given {
            // `Bearer TOKEN`: the token alone too (a library may print just it).
            if let Some((_, last)) = v.rsplit_once(' ') {
                out.push(last.to_string());
            }
            out.push(v);
        }
        if a.contains("://") {
            out.extend(url_secrets(a));
        }
        prev = a;
    }
    // Short values (`ms=5`, `v=1`) would blank ordinary words and numbers of a message.
    out.retain(|s| s.len() >= 6);
    out
}

/// The values [`url`] masks in `s`.
fn url_secrets(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (main, fragment) = s.split_once('#').unwrap_or((s, ""));
    out.push(fragment.to_string());
    let rest = main.split_once("://").map_or(main, |(_, r)| r);
    let split = rest.find(['/', '?', ';']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(split);
    if let Some((info, _)) = authority.rsplit_once('@') {
        out.push(info.split_once(':').map_or(info, |(_, p)| p).to_string());
    }
    let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
    let params = path.split('/').flat_map(|seg| seg.split(';').skip(1));
    let query = query.split('&').filter(|p| secret_param(p));
    for p in params.chain(query) {
        out.push(p.split_once('=').map_or(p, |(_, v)| v).to_string());
    }
    out
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
                "http://u:PASS@h:8080/a?key=SECRET&x",
                "http://u:***@h:8080/a?key=***&x",
            ),
            ("redis://h/?password=PW", "redis://h/?password=***"),
            ("redis://:PW@h:1/0", "redis://:***@h:1/0"),
            ("rediss://TOK@h/", "rediss://***@h/"),
            (
                "https://h/app;jsessionid=SID/x;v=1?q=Z#frag=F",
                "https://h/app;jsessionid=***/x;v=***?q=Z",
            ),
            ("unix:///run/redis.sock", "unix:///run/redis.sock"),
            ("http://h", "http://h"),
            ("http://h/", "http://h/"),
            ("not a url?token=T", "not a url?token=***"),
            (
                "ws://h/socket.io/?EIO=4&transport=websocket&sid=AbC",
                "ws://h/socket.io/?EIO=4&transport=websocket&sid=***",
            ),
            (
                "wss://h/socket/websocket?vsn=2.0.0&access_token=x",
                "wss://h/socket/websocket?vsn=2.0.0&access_token=***",
            ),
            (
                "https://h/f?X-Amz-Signature=abc&X-Amz-Date=20260101T000000Z",
                "https://h/f?X-Amz-Signature=***&X-Amz-Date=***",
            ),
            (
                "http://h/e?u=7f3a9c2e5b1d4a6f&ms=100",
                "http://h/e?u=***&ms=100",
            ),
            ("http://h/e?GHSAT0AAAAAAB", "http://h/e?***"),
            ("u:PW@host/x", "u:***@host/x"),
        ];
        for (given, want) in cases {
            assert_eq!(url(given), want, "{given}");
        }
    }

    #[test]
    fn secrets_come_from_header_token_and_url_arguments() {
        let args: Vec<String> = [
            "probe",
            "-H",
            "Authorization: Bearer HDR1-long",
            "--header=X-Key: HDR2-x",
            "--control-token",
            "TOK3-long",
            "http://u:PW4-long@h/a;sid=SID5-long?key=QV6-long#FR7-long",
            "--timeout",
            "10s",
            "http://127.0.0.1:8080/work/stream?ms=100",
        ]
        .map(String::from)
        .to_vec();
        let s = secrets_in_args(&args);
        for want in [
            "Bearer HDR1-long",
            "HDR2-x",
            "TOK3-long",
            "HDR1-long",
            "PW4-long",
            "SID5-long",
            "QV6-long",
            "FR7-long",
        ] {
            assert!(s.iter().any(|x| x == want), "{want}: {s:?}");
        }
        for kept in ["10s", "probe", "work", "stream", "100"] {
            assert!(!s.iter().any(|x| x == kept), "{kept}: {s:?}");
        }
        let msg = "GET http://u:PW4-long@h/a;sid=SID5-long?key=QV6-long failed: Bearer HDR1-long";
        let shown = scrub(msg, &s.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            !shown.contains("PW4") && !shown.contains("HDR1") && !shown.contains("QV6"),
            "{shown}"
        );
    }

    #[test]
    fn scrub_replaces_each_secret() {
        assert_eq!(scrub("a SECRET b SECRET", &["SECRET", ""]), "a *** b ***");
    }
}
