//! HAProxy's config grammar: a section keyword line (`global`, `defaults`, `frontend NAME`,
//! `backend NAME`, `listen NAME`, ...) opens a section; every other non-empty line is a
//! keyword line of the current section. Words split on blanks; "double" and 'single'
//! quotes and backslash escapes; an unquoted `#` starts a comment.
use super::{perr, Node, ParseError};
use std::sync::Arc;

/// Section keywords (HAProxy 2.x configuration manual, section 2 and 3-10).
pub const SECTIONS: &[&str] = &[
    "global",
    "defaults",
    "frontend",
    "backend",
    "listen",
    "resolvers",
    "peers",
    "userlist",
    "mailers",
    "program",
    "http-errors",
    "ring",
    "cache",
    "fcgi-app",
    "crt-store",
    "traces",
];

fn words(file: &str, lineno: usize, line: &str) -> Result<Vec<String>, ParseError> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut it = line.chars();
    while let Some(c) = it.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"') | None, '\\') => {
                if let Some(n) = it.next() {
                    cur.get_or_insert_with(String::new).push(n);
                }
            }
            (Some(_), c) => cur.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                cur.get_or_insert_with(String::new);
            }
            (None, '#') => break,
            (None, c) if c.is_whitespace() => out.extend(cur.take()),
            (None, c) => cur.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(q) = quote {
        return Err(perr(file, lineno, format!("unterminated {q} quote")));
    }
    out.extend(cur);
    Ok(out)
}

pub fn parse(file: &str, text: &str) -> Result<Vec<Node>, ParseError> {
    let name: Arc<str> = Arc::from(file);
    let mut top: Vec<Node> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let w = words(file, lineno, raw)?;
        let Some((head, rest)) = w.split_first() else {
            continue;
        };
        let node = Node {
            name: head.clone(),
            args: rest.to_vec(),
            file: name.clone(),
            line: lineno,
            block: None,
        };
        if SECTIONS.contains(&head.as_str()) {
            top.push(Node {
                block: Some(Vec::new()),
                ..node
            });
            continue;
        }
        match top.last_mut().and_then(|s| s.block.as_mut()) {
            Some(kids) => kids.push(node),
            None => {
                return Err(perr(
                    file,
                    lineno,
                    format!("\"{head}\" is outside any section (global, defaults, frontend, backend, listen...)"),
                ))
            }
        }
    }
    if top.is_empty() {
        return Err(perr(file, 1, "no HAProxy section found"));
    }
    Ok(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_and_keyword_lines() {
        let t = "global\n  maxconn 50000 # max\ndefaults\n  timeout client 30s\nbackend be_ws\n  server s1 127.0.0.1:8080 check\n  http-request set-header X \"a b\"\n";
        let n = parse("h.cfg", t).unwrap();
        assert_eq!(n.len(), 3);
        assert_eq!(n[0].children()[0].args, vec!["50000"]);
        assert_eq!(n[2].label(), "backend be_ws");
        assert_eq!(n[2].children()[1].args, vec!["set-header", "X", "a b"]);
        assert_eq!(n[2].children()[1].line, 7);
    }

    #[test]
    fn errors_name_the_line() {
        let e = |t: &str| parse("f", t).unwrap_err().to_string();
        assert_eq!(e("\n  maxconn 10\n"), "f:2: \"maxconn\" is outside any section (global, defaults, frontend, backend, listen...)");
        assert_eq!(e("global\n  x \"y\n"), "f:2: unterminated \" quote");
        assert_eq!(e("# only\n"), "f:1: no HAProxy section found");
    }
}
