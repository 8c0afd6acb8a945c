//! Pure: the WebSocket close-code table (RFC 6455 7.4.1, the IANA registry) and a close
//! frame as one phrase for reports: a wire-level matter, shared by bench, verify and
//! probe.

/// What a close code means (RFC 6455 7.4.1, the IANA registry; 4000-4999 are the
/// application's, and libraries often write 4 + the HTTP status there).
pub fn meaning(code: u16) -> String {
    let s = match code {
        1000 => "normal closure",
        1001 => "going away",
        1002 => "protocol error",
        1003 => "unsupported data",
        1007 => "invalid payload data",
        1008 => "policy violation",
        1009 => "message too big",
        1010 => "mandatory extension",
        1011 => "internal error",
        1012 => "service restart",
        1013 => "try again later",
        1014 => "bad gateway",
        3000 => "unauthorized",
        3003 => "forbidden",
        3008 => "timeout",
        4400..=4599 => return format!("the application's code (as HTTP {})", code - 4000),
        4000..=4999 => "the application's code",
        _ => "unregistered",
    };
    s.to_string()
}

/// A close frame the server sent (`None`: a frame without a code), as one phrase:
/// `close 1008 (policy violation), reason "no token"`. The reason is the peer's text,
/// which may echo a rejected token: every value of `secrets` is masked in it (before it
/// is bounded, so no prefix of a secret survives), then it is escaped and bounded.
pub fn phrase(frame: Option<(u16, &str)>, secrets: &[String]) -> String {
    let Some((code, reason)) = frame else {
        return "a close frame without a code".into();
    };
    let refs: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let scrubbed = rtcheck_base::redact::scrub(reason, &refs);
    let head: String = scrubbed.chars().take(120).collect();
    let reason = rtcheck_base::escape::plain(&head);
    match reason.is_empty() {
        true => format!("close {code} ({})", meaning(code)),
        false => format!("close {code} ({}), reason \"{reason}\"", meaning(code)),
    }
}

/// Whether a close is a stream ending as planned (1000 normal, 1001 going away, 1012
/// service restart: a client reconnects); any other is a refusal or an error, and its
/// code and reason are the cause of what the client did not get.
pub fn is_error(code: Option<u16>) -> bool {
    code.is_some_and(|c| !matches!(c, 1000 | 1001 | 1012))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_is_named_with_its_code_meaning_and_reason() {
        let s = phrase(Some((1008, "authentication\x1b[31m required")), &[]);
        assert!(
            s.starts_with("close 1008 (policy violation), reason \"authentication"),
            "{s}"
        );
        assert!(!s.contains('\x1b'), "the peer's text is made inert: {s}");
        assert_eq!(
            phrase(Some((4401, "")), &[]),
            "close 4401 (the application's code (as HTTP 401))"
        );
        assert_eq!(phrase(None, &[]), "a close frame without a code");
        assert!(is_error(Some(1008)));
        assert!(is_error(Some(1011)));
        for planned in [1000, 1001, 1012] {
            assert!(!is_error(Some(planned)), "{planned}");
        }
        assert!(!is_error(None));
    }

    #[test]
    fn a_reason_that_echoes_a_secret_shows_it_masked() {
        let secrets = vec!["s3cret-TOKEN-42".to_string(), "Bearer abcdef".to_string()];
        let s = phrase(
            Some((1008, "bad token s3cret-TOKEN-42 for Bearer abcdef")),
            &secrets,
        );
        assert!(!s.contains("s3cret-TOKEN-42"), "{s}");
        assert!(!s.contains("abcdef"), "{s}");
        assert!(s.contains("bad token ***"), "{s}");
        // A secret straddling the 120-character bound leaves no prefix behind.
        let long = format!("{}s3cret-TOKEN-42", "x".repeat(110));
        let s = phrase(Some((1008, &long)), &secrets);
        assert!(!s.contains("s3cret"), "{s}");
    }
}
