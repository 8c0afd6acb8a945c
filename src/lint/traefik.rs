//! Traefik's dynamic configuration from the file provider (YAML: `http.routers`,
//! `http.middlewares`, `http.services`). Values come from serde_yaml; lines from the
//! block-style key path in the text (serde_yaml keeps no positions), so a finding points at
//! the router, middleware or service it is about. The tree:
//! - `router NAME` with `rule RULE`, `service NAME` and one `middleware NAME` per entry
//!   (a `chain` middleware expanded into its members, bounded);
//! - `middleware NAME` with one child per type (`compress`, `buffering`, ...) whose children
//!   are its options (`excludedContentTypes` with the list as args);
//! - `service NAME` with one `server URL` per load-balanced server and `sticky` when set.
use super::{perr, Node, ParseError};
use serde_yaml::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Deepest chain of `chain` middlewares followed (a loop stops here).
const MAX_CHAIN: usize = 8;

/// Does this YAML text look like Traefik dynamic configuration?
pub fn looks_like(text: &str) -> bool {
    text.lines().any(|l| l.trim_end() == "http:")
        && ["routers:", "services:", "middlewares:"]
            .iter()
            .any(|k| text.lines().any(|l| l.trim() == *k))
}

/// The key a block-style line defines (`name:` or `"name":`), if any.
fn key_of(t: &str) -> Option<String> {
    let t = t.strip_prefix("- ").unwrap_or(t);
    let (k, rest) = t.split_once(':')?;
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let k = k.trim().trim_matches(|c| c == '"' || c == '\'');
    (!k.is_empty() && !k.contains(' ')).then(|| k.to_string())
}

/// The 1-based line of every key path written in block-style YAML (indentation tracked),
/// the first occurrence of each: built in one pass, so looking up 40,000 routers stays
/// linear (a scan per key was quadratic).
pub fn key_lines(text: &str) -> HashMap<Vec<String>, usize> {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut out = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let t = raw.trim_start();
        if t.is_empty() || t.starts_with('#') || t.starts_with("---") {
            continue;
        }
        let indent = raw.len() - t.len();
        let Some(key) = key_of(t) else { continue };
        while stack.last().is_some_and(|(ind, _)| *ind >= indent) {
            stack.pop();
        }
        stack.push((indent, key));
        let path: Vec<String> = stack.iter().map(|(_, k)| k.clone()).collect();
        out.entry(path).or_insert(i + 1);
    }
    out
}

/// The line of `path`, else of its longest written prefix, else 1.
fn at(c: &Ctx, path: &[&str]) -> usize {
    (1..=path.len())
        .rev()
        .find_map(|n| {
            let key: Vec<String> = path[..n].iter().map(|s| s.to_string()).collect();
            c.index.get(&key).copied()
        })
        .unwrap_or(1)
}

/// The line of each list item under the key at `key_line` (a `- item` line below it, or
/// the key's own line for a flow list): one pass over the list's lines.
fn item_lines(c: &Ctx, key_line: usize) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for (i, l) in c
        .lines
        .iter()
        .enumerate()
        .skip(key_line)
        .take_while(|(_, l)| l.trim_start().starts_with('-') || l.trim().is_empty())
    {
        let v = l.trim_start().trim_start_matches('-').trim();
        let v = v.trim_matches(|c| c == '"' || c == '\'');
        out.entry(v.to_string()).or_insert(i + 1);
    }
    out
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A value as node arguments: a scalar, or the scalars of a list.
fn args(v: &Value) -> Vec<String> {
    match v {
        Value::Sequence(s) => s.iter().filter_map(scalar).collect(),
        v => scalar(v).into_iter().collect(),
    }
}

fn entries(v: &Value) -> Vec<(String, &Value)> {
    v.as_mapping()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v)))
                .collect()
        })
        .unwrap_or_default()
}

/// A middleware reference without its provider (`gz@file` is `gz` of this file).
fn local(name: &str) -> &str {
    name.split('@').next().unwrap_or(name)
}

struct Ctx<'a> {
    lines: Vec<&'a str>,
    index: HashMap<Vec<String>, usize>,
    file: Arc<str>,
}

impl Ctx<'_> {
    fn node(&self, name: &str, args: Vec<String>, line: usize, block: Option<Vec<Node>>) -> Node {
        Node {
            name: name.into(),
            args,
            file: self.file.clone(),
            line,
            block,
        }
    }
}

/// A router's middlewares, chains expanded (members take the chain's entry line).
fn middlewares(
    c: &Ctx,
    mws: &Value,
    names: &[String],
    line: usize,
    depth: usize,
    out: &mut Vec<Node>,
) {
    for n in names {
        out.push(c.node("middleware", vec![local(n).to_string()], line, None));
        let chain = mws
            .get(local(n))
            .and_then(|m| m.get("chain"))
            .and_then(|ch| ch.get("middlewares"));
        if let (Some(members), true) = (chain, depth < MAX_CHAIN) {
            middlewares(c, mws, &args(members), line, depth + 1, out);
        }
    }
}

fn routers(c: &Ctx, http: &Value, out: &mut Vec<Node>) {
    let mws = http.get("middlewares").cloned().unwrap_or(Value::Null);
    for (name, r) in entries(http.get("routers").unwrap_or(&Value::Null)) {
        let path = ["http", "routers", name.as_str()];
        let line = at(c, &path);
        let mut kids = Vec::new();
        for key in ["rule", "service"] {
            if let Some(v) = r.get(key).and_then(scalar) {
                let l = at(c, &[&path[..], &[key]].concat());
                kids.push(c.node(key, vec![v], l, None));
            }
        }
        if let Some(list) = r.get("middlewares") {
            let key_line = at(c, &[&path[..], &["middlewares"]].concat());
            let items = item_lines(c, key_line);
            for n in args(list) {
                let l = items.get(&n).copied().unwrap_or(key_line);
                middlewares(c, &mws, std::slice::from_ref(&n), l, 0, &mut kids);
            }
        }
        out.push(c.node("router", vec![name.clone()], line, Some(kids)));
    }
}

fn middleware_defs(c: &Ctx, http: &Value, out: &mut Vec<Node>) {
    for (name, m) in entries(http.get("middlewares").unwrap_or(&Value::Null)) {
        let path = ["http", "middlewares", name.as_str()];
        let mut kinds = Vec::new();
        for (kind, opts) in entries(m) {
            let kpath = [&path[..], &[kind.as_str()]].concat();
            let options = entries(opts)
                .into_iter()
                .map(|(k, v)| {
                    let l = at(c, &[&kpath[..], &[k.as_str()]].concat());
                    c.node(&k, args(v), l, None)
                })
                .collect();
            kinds.push(c.node(&kind, vec![], at(c, &kpath), Some(options)));
        }
        out.push(c.node("middleware", vec![name.clone()], at(c, &path), Some(kinds)));
    }
}

fn services(c: &Ctx, http: &Value, out: &mut Vec<Node>) {
    for (name, s) in entries(http.get("services").unwrap_or(&Value::Null)) {
        let path = ["http", "services", name.as_str()];
        let mut kids = Vec::new();
        if let Some(lb) = s.get("loadBalancer") {
            let lbp = [&path[..], &["loadBalancer"]].concat();
            for srv in lb
                .get("servers")
                .and_then(Value::as_sequence)
                .into_iter()
                .flatten()
            {
                if let Some(u) = srv.get("url").and_then(scalar) {
                    let l = at(c, &[&lbp[..], &["servers"]].concat());
                    kids.push(c.node("server", vec![u], l, None));
                }
            }
            if lb.get("sticky").is_some() {
                let l = at(c, &[&lbp[..], &["sticky"]].concat());
                kids.push(c.node("sticky", vec![], l, None));
            }
        }
        out.push(c.node("service", vec![name.clone()], at(c, &path), Some(kids)));
    }
}

pub fn parse(file: &str, text: &str) -> Result<Vec<Node>, ParseError> {
    super::yaml_depth(file, text)?;
    let v: Value = serde_yaml::from_str(text).map_err(|e| {
        let l = e.location().map_or(1, |l| l.line());
        let msg = crate::profile::plain_yaml_error(&e.to_string(), "");
        perr(file, l, format!("YAML: {msg}"))
    })?;
    let Some(http) = v.get("http") else {
        return Ok(Vec::new());
    };
    let c = Ctx {
        lines: text.lines().collect(),
        index: key_lines(text),
        file: Arc::from(file),
    };
    if !http.is_mapping() {
        return Err(perr(file, at(&c, &["http"]), "`http` is not a mapping"));
    }
    let mut out = Vec::new();
    routers(&c, http, &mut out);
    middleware_defs(&c, http, &mut out);
    services(&c, http, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: &str = "\
http:
  routers:
    events:
      rule: PathPrefix(`/events`)
      service: app
      middlewares:
        - secure
        - \"gz@file\"
  middlewares:
    secure:
      chain:
        middlewares: [gz]
    gz:
      compress:
        excludedContentTypes:
          - text/event-stream
  services:
    app:
      loadBalancer:
        servers:
          - url: http://127.0.0.1:8080
        sticky:
          cookie: {}
";

    #[test]
    fn routers_middlewares_and_services_with_their_lines() {
        assert!(looks_like(CFG));
        let n = parse("d.yaml", CFG).unwrap();
        let r = &n[0];
        assert_eq!((r.label().as_str(), r.line), ("router events", 3));
        let k = r.children();
        assert_eq!((k[0].name.as_str(), k[0].line), ("rule", 4));
        let mws: Vec<(&str, usize)> = k
            .iter()
            .filter(|c| c.name == "middleware")
            .map(|c| (c.args[0].as_str(), c.line))
            .collect();
        // The chain `secure` expands to gz, at the chain's entry line; `gz@file` is gz.
        assert_eq!(mws, [("secure", 7), ("gz", 7), ("gz", 8)]);
        let gz = n.iter().find(|m| m.label() == "middleware gz").unwrap();
        let compress = &gz.children()[0];
        assert_eq!((compress.name.as_str(), compress.line), ("compress", 14));
        assert_eq!(compress.children()[0].args, ["text/event-stream"]);
        let svc = n.iter().find(|m| m.label() == "service app").unwrap();
        let names: Vec<&str> = svc.children().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["server", "sticky"]);
        assert_eq!(svc.children()[1].line, 22);
    }

    #[test]
    fn bad_yaml_names_its_line_and_a_chain_loop_is_bounded() {
        let e = parse("d.yaml", "http:\n  routers: [\n").unwrap_err();
        assert!(e.line >= 2, "{e}");
        let looped = "http:\n  routers:\n    r:\n      middlewares: [a]\n  middlewares:\n    a:\n      chain:\n        middlewares: [a]\n";
        let n = parse("d.yaml", looped).unwrap();
        assert_eq!(n[0].children().len(), MAX_CHAIN + 1);
        assert!(parse("d.yaml", "tcp: {}\n").unwrap().is_empty());
    }
}
