//! The Caddyfile grammar (caddyserver.com/docs/caddyfile/concepts): a directive is the
//! words of one line; a line ending in `{` opens a block, a line holding only `}` closes it.
//! Words split on blanks; "double quotes" (backslash escapes) and `backticks`; `#` at the
//! start of a word is a comment. A file without braces at the top is one site: its first
//! line the addresses, the rest its directives. Placeholders (`{host}`) are plain words.
use super::{perr, Node, ParseError, MAX_DEPTH};
use std::sync::Arc;

/// The words of the text, each with its line; a line break is `None`.
fn lex(file: &str, text: &str) -> Result<Vec<Option<(String, usize)>>, ParseError> {
    let b: Vec<char> = text.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            out.push(None);
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '#' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '"' || c == '`' {
            let start = line;
            let mut w = String::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err(perr(file, start, format!("unterminated {c} quote"))),
                    Some(&q) if q == c => break,
                    Some('\\') if c == '"' && i + 1 < b.len() => {
                        i += 1;
                        line += usize::from(b[i] == '\n');
                        w.push(b[i]);
                    }
                    Some(&ch) => {
                        line += usize::from(ch == '\n');
                        w.push(ch);
                    }
                }
                i += 1;
            }
            i += 1;
            out.push(Some((w, start)));
        } else {
            let mut w = String::new();
            while i < b.len() && !b[i].is_whitespace() {
                w.push(b[i]);
                i += 1;
            }
            out.push(Some((w, line)));
        }
    }
    Ok(out)
}

pub fn parse(file: &str, text: &str) -> Result<Vec<Node>, ParseError> {
    let name: Arc<str> = Arc::from(file);
    let mut lines: Vec<Vec<(String, usize)>> = vec![vec![]];
    for t in lex(file, text)? {
        match t {
            Some(w) => lines.last_mut().expect("never empty").push(w),
            None => lines.push(vec![]),
        }
    }
    let mut stack: Vec<(Node, Vec<Node>)> = Vec::new();
    let mut top: Vec<Node> = Vec::new();
    for ws in lines.into_iter().filter(|l| !l.is_empty()) {
        let line = ws[0].1;
        if ws.len() == 1 && ws[0].0 == "}" {
            let Some((mut node, kids)) = stack.pop() else {
                return Err(perr(file, line, "unexpected '}'"));
            };
            node.block = Some(kids);
            match stack.last_mut() {
                Some((_, k)) => k.push(node),
                None => top.push(node),
            }
            continue;
        }
        let opens = ws.last().is_some_and(|(w, _)| w == "{");
        let body = &ws[..ws.len() - usize::from(opens)];
        if let Some((w, l)) = body.iter().find(|(w, _)| w == "{" || w == "}") {
            return Err(perr(
                file,
                *l,
                format!("'{w}' must end its line ('{{') or stand alone ('}}')"),
            ));
        }
        // A global options block is a line with only `{`.
        let (head, args) = match body.split_first() {
            Some((h, rest)) => (h.0.clone(), rest.iter().map(|(w, _)| w.clone()).collect()),
            None => ("{global}".to_string(), vec![]),
        };
        let node = Node {
            name: head,
            args,
            file: name.clone(),
            line,
            block: None,
        };
        if opens {
            if stack.len() >= MAX_DEPTH {
                return Err(perr(
                    file,
                    line,
                    format!("blocks nested deeper than {MAX_DEPTH}"),
                ));
            }
            stack.push((node, Vec::new()));
        } else {
            match stack.last_mut() {
                Some((_, k)) => k.push(node),
                None => top.push(node),
            }
        }
    }
    if let Some((open, _)) = stack.last() {
        return Err(perr(
            file,
            open.line,
            format!("'{{' of \"{}\" is never closed", open.label()),
        ));
    }
    Ok(single_site(top))
}

/// A Caddyfile with one site may omit its braces: the first line is the site's addresses.
fn single_site(top: Vec<Node>) -> Vec<Node> {
    let bare = top.iter().any(|n| n.block.is_none());
    if !bare {
        return top;
    }
    let mut it = top.into_iter().peekable();
    let mut out = Vec::new();
    while let Some(n) =
        it.next_if(|n| n.block.is_some() && (n.name == "{global}" || n.name.starts_with('(')))
    {
        out.push(n);
    }
    if let Some(mut site) = it.next() {
        site.block = Some(it.collect());
        out.push(site);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_blocks_matchers_and_lines() {
        let t = "{\n  admin off\n}\nexample.com:8080, :9090 {\n  @ws {\n    header Connection *Upgrade*\n  }\n  reverse_proxy @ws 127.0.0.1:8081 {\n    flush_interval -1\n  }\n  respond \"hi {host}\" 200\n}\n";
        let n = parse("Caddyfile", t).unwrap();
        assert_eq!(n[0].name, "{global}");
        let site = &n[1];
        assert_eq!(site.label(), "example.com:8080, :9090");
        assert_eq!(
            site.children()[1].label(),
            "reverse_proxy @ws 127.0.0.1:8081"
        );
        assert_eq!(site.children()[1].children()[0].line, 9);
        assert_eq!(site.children()[2].args, vec!["hi {host}", "200"]);
    }

    #[test]
    fn a_single_site_without_braces() {
        let n = parse(
            "C",
            ":8080\nreverse_proxy /events* 127.0.0.1:9\nencode gzip\n",
        )
        .unwrap();
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].name, ":8080");
        assert_eq!(n[0].children().len(), 2);
    }

    #[test]
    fn errors_name_the_line() {
        let e = |t: &str| parse("f", t).unwrap_err().to_string();
        assert_eq!(e(":80 {\n  a\n"), "f:1: '{' of \":80\" is never closed");
        assert_eq!(e("a\n}\n"), "f:2: unexpected '}'");
        assert_eq!(
            e("a {\n b { c }\n}"),
            "f:2: '{' must end its line ('{') or stand alone ('}')"
        );
    }
}
