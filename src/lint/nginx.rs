//! nginx's config grammar: words (bare, "double" or 'single' quoted, `${var}` kept whole),
//! `;` ends a directive, `{ ... }` a block, `#` a comment at the start of a word. One pass,
//! an explicit stack (no recursion), depth bounded by `MAX_DEPTH`. Errors read like nginx's.
use super::{perr, Node, ParseError, MAX_DEPTH};
use std::sync::Arc;

#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Semi,
    Open,
    Close,
}

fn lex(file: &str, text: &str) -> Result<Vec<(Tok, usize)>, ParseError> {
    let b: Vec<char> = text.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < b.len() {
        let c = b[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '#' => {
                while i < b.len() && b[i] != '\n' {
                    i += 1;
                }
            }
            ';' | '{' | '}' => {
                out.push((
                    match c {
                        ';' => Tok::Semi,
                        '{' => Tok::Open,
                        _ => Tok::Close,
                    },
                    line,
                ));
                i += 1;
            }
            '"' | '\'' => {
                let start = line;
                let mut w = String::new();
                i += 1;
                loop {
                    match b.get(i) {
                        None => return Err(perr(file, start, format!("unterminated {c} quote"))),
                        Some(&q) if q == c => break,
                        Some('\\') if i + 1 < b.len() => {
                            w.push(b[i + 1]);
                            line += usize::from(b[i + 1] == '\n');
                            i += 1;
                        }
                        Some(&ch) => {
                            line += usize::from(ch == '\n');
                            w.push(ch);
                        }
                    }
                    i += 1;
                }
                i += 1;
                out.push((Tok::Word(w), start));
            }
            _ => {
                let mut w = String::new();
                while i < b.len() {
                    let ch = b[i];
                    if ch.is_whitespace() || ch == ';' || ch == '}' {
                        break;
                    }
                    // `${var}` is one word; any other `{` opens a block.
                    if ch == '{' {
                        if !w.ends_with('$') {
                            break;
                        }
                        while i < b.len() && b[i] != '}' && b[i] != '\n' {
                            w.push(b[i]);
                            i += 1;
                        }
                        if i < b.len() && b[i] == '}' {
                            w.push('}');
                            i += 1;
                        }
                        continue;
                    }
                    if ch == '\\' && i + 1 < b.len() {
                        w.push(b[i + 1]);
                        i += 2;
                        continue;
                    }
                    w.push(ch);
                    i += 1;
                }
                out.push((Tok::Word(w), line));
            }
        }
    }
    Ok(out)
}

/// Parse nginx config text into its directive tree (include not yet resolved).
pub fn parse(file: &str, text: &str) -> Result<Vec<Node>, ParseError> {
    let name: Arc<str> = Arc::from(file);
    // Each open block: its head (name, args, line) and the children so far.
    let mut stack: Vec<(Node, Vec<Node>)> = Vec::new();
    let mut top: Vec<Node> = Vec::new();
    let mut words: Vec<(String, usize)> = Vec::new();
    for (tok, line) in lex(file, text)? {
        match tok {
            Tok::Word(w) => words.push((w, line)),
            Tok::Semi | Tok::Open => {
                let Some(((head, hline), rest)) = words.split_first() else {
                    let c = if tok == Tok::Semi { ';' } else { '{' };
                    return Err(perr(file, line, format!("unexpected \"{c}\"")));
                };
                let node = Node {
                    name: head.clone(),
                    args: rest.iter().map(|(w, _)| w.clone()).collect(),
                    file: name.clone(),
                    line: *hline,
                    block: None,
                };
                words.clear();
                if tok == Tok::Semi {
                    match stack.last_mut() {
                        Some((_, kids)) => kids.push(node),
                        None => top.push(node),
                    }
                } else {
                    if stack.len() >= MAX_DEPTH {
                        return Err(perr(
                            file,
                            line,
                            format!("blocks nested deeper than {MAX_DEPTH}"),
                        ));
                    }
                    stack.push((node, Vec::new()));
                }
            }
            Tok::Close => {
                if let Some((w, l)) = words.first() {
                    return Err(perr(
                        file,
                        *l,
                        format!("directive \"{w}\" is not terminated by \";\""),
                    ));
                }
                let Some((mut node, kids)) = stack.pop() else {
                    return Err(perr(file, line, "unexpected \"}\""));
                };
                node.block = Some(kids);
                match stack.last_mut() {
                    Some((_, k)) => k.push(node),
                    None => top.push(node),
                }
            }
        }
    }
    if let Some((w, l)) = words.first() {
        return Err(perr(
            file,
            *l,
            format!("unexpected end of file, expecting \";\" or \"}}\" after \"{w}\""),
        ));
    }
    if let Some((open, _)) = stack.last() {
        return Err(perr(
            file,
            open.line,
            format!(
                "unexpected end of file: block \"{}\" opened here is not closed",
                open.label()
            ),
        ));
    }
    Ok(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_directives_quotes_and_lines() {
        let t = "events { worker_connections 1024; }\nhttp {\n  # c\n  map $http_upgrade $c {\n    default upgrade;\n    '' close;\n  }\n  server { location /ws { proxy_set_header Host \"${host}x\"; } }\n}\n";
        let n = parse("n.conf", t).unwrap();
        assert_eq!(n.len(), 2);
        let http = &n[1];
        assert_eq!(http.line, 2);
        let map = &http.children()[0];
        assert_eq!((map.name.as_str(), map.line), ("map", 4));
        assert_eq!(map.children()[1].name, "");
        let loc = &http.children()[1].children()[0];
        assert_eq!(loc.label(), "location /ws");
        assert_eq!(loc.children()[0].args, vec!["Host", "${host}x"]);
        assert_eq!(loc.line, 8);
    }

    #[test]
    fn errors_name_the_line() {
        let e = |t: &str| parse("f", t).unwrap_err().to_string();
        assert_eq!(
            e("http {\n server {\n"),
            "f:2: unexpected end of file: block \"server\" opened here is not closed"
        );
        assert_eq!(e("a b;\n}"), "f:2: unexpected \"}\"");
        assert_eq!(
            e("x {\n a b\n}"),
            "f:2: directive \"a\" is not terminated by \";\""
        );
        assert!(e("a \"b;\n").starts_with("f:1: unterminated \" quote"));
        assert_eq!(
            e(&"a {".repeat(100)),
            format!("f:1: blocks nested deeper than {MAX_DEPTH}")
        );
    }
}
