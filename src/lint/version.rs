//! The proxy version a verdict assumes: defaults change between releases (nginx proxies
//! with HTTP/1.1 and keeps upstream connections alive by default from 1.29.7 / 1.30.0,
//! nginx.org/en/CHANGES; Caddy's `stream_close_delay` appeared in 2.7). Declared with
//! `--proxy-version`, else read from the product's binary on PATH by the command (I/O at
//! the edge); unknown, each rule says which version it assumed.

/// A product's version and where it came from ("--proxy-version", "nginx -v on PATH").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyVersion {
    /// "nginx", "haproxy", "caddy", "ingress-nginx", "traefik".
    pub product: String,
    pub parts: Vec<u32>,
    pub text: String,
    pub from: String,
}

/// The leading dotted number of `s` ("1.22.1", "v2.7.6 h1:...", "2.6.12-1+deb12u4").
pub fn parse(s: &str) -> Option<Vec<u32>> {
    let s = s.trim().trim_start_matches(['v', 'V']);
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let parts: Vec<u32> = s[..end]
        .split('.')
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    (!parts.is_empty() && parts.len() <= 4).then_some(parts)
}

/// The version in a binary's `-v` output: the text after `PRODUCT/` or `version `.
pub fn from_output(out: &str) -> Option<(Vec<u32>, String)> {
    for token in out.split_whitespace() {
        let t = token.rsplit('/').next().unwrap_or(token);
        if let Some(p) = parse(t).filter(|p| p.len() >= 2) {
            let text = t
                .trim_start_matches(['v', 'V'])
                .split(['-', '+'])
                .next()
                .unwrap_or(t)
                .to_string();
            return Some((p, text));
        }
    }
    None
}

/// `v >= min`, part by part (missing parts are 0).
pub fn at_least(v: &[u32], min: &[u32]) -> bool {
    let n = v.len().max(min.len());
    let get = |x: &[u32], i: usize| x.get(i).copied().unwrap_or(0);
    for i in 0..n {
        match get(v, i).cmp(&get(min, i)) {
            std::cmp::Ordering::Greater => return true,
            std::cmp::Ordering::Less => return false,
            std::cmp::Ordering::Equal => {}
        }
    }
    true
}

/// The product whose binary runs a config kind (None: no local binary to ask).
pub fn product(kind: super::Kind) -> &'static str {
    match kind {
        super::Kind::Nginx => "nginx",
        super::Kind::Haproxy => "haproxy",
        super::Kind::Caddy | super::Kind::CaddyJson => "caddy",
        super::Kind::Ingress => "ingress-nginx",
        super::Kind::Traefik => "traefik",
        super::Kind::Istio => "istio",
    }
}

/// The version of `product` the workload knows, if any.
pub fn of<'a>(w: &'a super::Workload, product: &str) -> Option<&'a ProxyVersion> {
    w.versions.iter().find(|v| v.product == product)
}

/// How a finding names the version it assumed: "nginx 1.22.1 (nginx -v on PATH)", or
/// "nginx version unknown (--proxy-version): assumed before 1.29.7".
pub fn assumed(v: Option<&ProxyVersion>, product: &str, before: &str) -> String {
    match v {
        Some(v) => format!("{product} {} ({})", v.text, v.from),
        None => format!("{product} version unknown (--proxy-version): assumed before {before}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_the_binaries_words() {
        assert_eq!(
            from_output("nginx version: nginx/1.22.1"),
            Some((vec![1, 22, 1], "1.22.1".into()))
        );
        assert_eq!(
            from_output("HAProxy version 2.6.12-1+deb12u4 2026/10/17 - https://haproxy.org/"),
            Some((vec![2, 6, 12], "2.6.12".into()))
        );
        assert_eq!(
            from_output("v2.7.6 h1:w0NymbG2m9PcvKWsrXO6EEkY9Ru4FJK8uQbYcev1p3A="),
            Some((vec![2, 7, 6], "2.7.6".into()))
        );
        assert_eq!(from_output("no version here"), None);
        assert!(at_least(&[1, 30, 0], &[1, 29, 7]));
        assert!(at_least(&[1, 29, 7], &[1, 29, 7]));
        assert!(!at_least(&[1, 22, 1], &[1, 29, 7]));
        assert!(!at_least(&[2, 6], &[2, 7]));
    }
}
