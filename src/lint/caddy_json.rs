//! Caddy's native JSON config (`caddy adapt` output, `/config/` API) as the same tree the
//! Caddyfile gives: `server NAME` blocks holding `route PATHS...` blocks, whose handlers
//! are nodes named by `handler` (reverse_proxy, encode, subroute...) with their options as
//! children (`flush_interval -1`). serde_json keeps no positions, so a handler's line is
//! that of the n-th `"handler": "NAME"` in the text (documents are walked in text order
//! except across servers, which serde_json sorts by name).
use super::{perr, Node, ParseError, MAX_DEPTH};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Options of a handler the rules read, kept as child nodes.
const OPTIONS: &[&str] = &[
    "flush_interval",
    "stream_close_delay",
    "stream_timeout",
    "encodings",
];

struct Lines {
    /// Handler name -> lines of its `"handler": "NAME"` occurrences, in order.
    at: HashMap<String, Vec<usize>>,
    used: HashMap<String, usize>,
}

impl Lines {
    fn of(text: &str) -> Lines {
        let mut at: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, _) in text.match_indices("\"handler\"") {
            let rest = text[i + 9..].trim_start();
            let Some(rest) = rest.strip_prefix(':') else {
                continue;
            };
            let Some(rest) = rest.trim_start().strip_prefix('"') else {
                continue;
            };
            let name: String = rest.chars().take_while(|c| *c != '"').collect();
            let line = text[..i].matches('\n').count() + 1;
            at.entry(name).or_default().push(line);
        }
        Lines {
            at,
            used: HashMap::new(),
        }
    }

    fn next(&mut self, handler: &str) -> usize {
        let n = self.used.entry(handler.to_string()).or_insert(0);
        let line = self
            .at
            .get(handler)
            .and_then(|v| v.get(*n))
            .copied()
            .unwrap_or(1);
        *n += 1;
        line
    }
}

pub fn parse(file: &str, text: &str) -> Result<Vec<Node>, ParseError> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| perr(file, e.line().max(1), format!("JSON: {e}")))?;
    let name: Arc<str> = Arc::from(file);
    let mut lines = Lines::of(text);
    let servers = v.pointer("/apps/http/servers").and_then(Value::as_object);
    let Some(servers) = servers else {
        return Err(perr(
            file,
            1,
            "not a Caddy JSON config: no apps.http.servers",
        ));
    };
    let mut out = Vec::new();
    for (sname, s) in servers {
        let routes = routes(&name, s.get("routes"), &mut lines, 0)?;
        let line = routes.first().map_or(1, |r| r.line);
        let listen: Vec<String> = s
            .get("listen")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        out.push(Node {
            name: format!("server {sname}"),
            args: listen,
            file: name.clone(),
            line,
            block: Some(routes),
        });
    }
    Ok(out)
}

fn routes(
    file: &Arc<str>,
    v: Option<&Value>,
    lines: &mut Lines,
    depth: usize,
) -> Result<Vec<Node>, ParseError> {
    if depth > MAX_DEPTH {
        return Err(perr(
            file,
            1,
            format!("subroutes nested deeper than {MAX_DEPTH}"),
        ));
    }
    let mut out = Vec::new();
    for r in v.and_then(Value::as_array).into_iter().flatten() {
        let mut args = Vec::new();
        for m in r
            .get("match")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for p in m
                .get("path")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                args.extend(p.as_str().map(String::from));
            }
            // A header matcher on Upgrade is a WebSocket route.
            if m.pointer("/header/Upgrade").is_some() || m.pointer("/header/Connection").is_some() {
                args.push("@websocket".into());
            }
        }
        let mut kids = Vec::new();
        for h in r
            .get("handle")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let hname = h
                .get("handler")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let line = lines.next(&hname);
            let mut opts = Vec::new();
            for k in OPTIONS {
                if let Some(x) = h.get(*k) {
                    let val = match x {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    opts.push(Node {
                        name: k.to_string(),
                        args: vec![val],
                        file: file.clone(),
                        line,
                        block: None,
                    });
                }
            }
            if hname == "subroute" {
                opts.extend(routes(file, h.get("routes"), lines, depth + 1)?);
            }
            kids.push(Node {
                name: hname,
                args: vec![],
                file: file.clone(),
                line,
                block: Some(opts),
            });
        }
        let line = kids.first().map_or(1, |k| k.line);
        out.push(Node {
            name: "route".into(),
            args,
            file: file.clone(),
            line,
            block: Some(kids),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_handlers_and_lines() {
        let t = r#"{"apps":{"http":{"servers":{"srv0":{"listen":[":8080"],"routes":[
{"match":[{"path":["/events*"]}],
 "handle":[{"handler":"encode","encodings":{"gzip":{}}},
           {"handler":"reverse_proxy","flush_interval":-1,"upstreams":[{"dial":"127.0.0.1:9"}]}]}]}}}}}"#;
        let n = parse("c.json", t).unwrap();
        let route = &n[0].children()[0];
        assert_eq!(route.args, vec!["/events*"]);
        let rp = &route.children()[1];
        assert_eq!((rp.name.as_str(), rp.line), ("reverse_proxy", 4));
        assert_eq!(rp.children()[0].args, vec!["-1"]);
    }

    #[test]
    fn errors_name_the_line() {
        let e = |t: &str| parse("f", t).unwrap_err().to_string();
        assert!(
            e("{\n\"a\": }").starts_with("f:2: JSON: "),
            "{}",
            e("{\n\"a\": }")
        );
        assert_eq!(
            e("{}"),
            "f:1: not a Caddy JSON config: no apps.http.servers"
        );
    }
}
