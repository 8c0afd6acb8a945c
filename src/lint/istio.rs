//! Istio `DestinationRule` and `EnvoyFilter` YAML (issue 40), read for the idle timeouts a
//! sidecar applies to long-lived connections: a DestinationRule's
//! `trafficPolicy.connectionPool.tcp.idleTimeout` / `http.idleTimeout` (also per subset)
//! and any `stream_idle_timeout` an EnvoyFilter patches in. Each object becomes
//! `destinationrule NS/NAME` or `envoyfilter NS/NAME` with one child per value found
//! (`tcp.idleTimeout 30m`, `stream_idle_timeout 300s`), at the line of its key.
use super::{perr, Node, ParseError};
use serde_yaml::Value;
use std::sync::Arc;

/// Istio networking objects this parser reads.
pub fn looks_like(text: &str) -> bool {
    text.contains("networking.istio.io")
        && (text.contains("kind: DestinationRule") || text.contains("kind: EnvoyFilter"))
}

pub fn parse(file: &str, text: &str) -> Result<Vec<Node>, ParseError> {
    let name: Arc<str> = Arc::from(file);
    let mut out = Vec::new();
    for (start, doc) in super::ingress::documents(text) {
        if doc.trim().is_empty() {
            continue;
        }
        super::yaml_depth(file, &doc).map_err(|e| perr(file, start + e.line - 1, e.msg))?;
        let v: Value = serde_yaml::from_str(&doc).map_err(|e| {
            let l = e.location().map_or(1, |l| l.line());
            let msg = crate::profile::plain_yaml_error(&e.to_string(), "");
            perr(file, start + l - 1, format!("YAML: {msg}"))
        })?;
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
        let meta = |k: &str| {
            v.get("metadata")
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(String::from)
        };
        let id = format!(
            "{}/{}",
            meta("namespace").unwrap_or_else(|| "default".into()),
            meta("name").unwrap_or_default()
        );
        let mut found = Vec::new();
        let mut pools = Vec::new();
        match kind {
            "DestinationRule" => destination_rule(&v, &mut found, &mut pools),
            "EnvoyFilter" => envoy_keys(&v["spec"], &mut found),
            _ => continue,
        }
        let lines: Vec<&str> = doc.lines().collect();
        let pool_lines: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].trim_start().starts_with("connectionPool:"))
            .collect();
        let mut from = 0;
        let kids = found
            .into_iter()
            .enumerate()
            .map(|(k, (key, value))| {
                // A pool's key inside its own block (`http:` may come before `tcp:`).
                let in_pool = pools.get(k).and_then(|&(n, pool)| {
                    let at = child(&lines, *pool_lines.get(n)?, pool)?;
                    child(&lines, at, "idleTimeout")
                });
                // Else the key's line, in order of appearance (the same key may recur).
                let short = key.rsplit('.').next().unwrap_or(&key).to_string();
                let at = in_pool.or_else(|| {
                    lines[from.min(lines.len())..]
                        .iter()
                        .position(|l| l.trim_start().starts_with(&format!("{short}:")))
                        .map(|i| from + i)
                });
                if let Some(i) = at {
                    from = from.max(i + 1);
                }
                Node {
                    name: key,
                    args: vec![value],
                    file: name.clone(),
                    line: start + at.unwrap_or(0),
                    block: None,
                }
            })
            .collect();
        out.push(Node {
            name: kind.to_ascii_lowercase(),
            args: vec![id],
            file: name.clone(),
            line: start,
            block: Some(kids),
        });
    }
    Ok(out)
}

fn indent(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// The line of `key:` in the block under line `at` (indented deeper, before the block
/// ends at a line indented no deeper than `at`).
fn child(lines: &[&str], at: usize, key: &str) -> Option<usize> {
    let base = indent(lines.get(at)?);
    let want = format!("{key}:");
    for (i, l) in lines.iter().enumerate().skip(at + 1) {
        let t = l.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if indent(l) <= base {
            return None;
        }
        if t.starts_with(&want) {
            return Some(i);
        }
    }
    None
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The connection pool idle timeouts of the top-level traffic policy and each subset's;
/// `pools` gets, for each, which `connectionPool` (in order) and which pool it is in.
fn destination_rule(
    v: &Value,
    out: &mut Vec<(String, String)>,
    pools: &mut Vec<(usize, &'static str)>,
) {
    let spec = &v["spec"];
    let mut policies = vec![&spec["trafficPolicy"]];
    if let Some(subsets) = spec["subsets"].as_sequence() {
        policies.extend(subsets.iter().map(|s| &s["trafficPolicy"]));
    }
    let mut n = 0;
    for p in policies {
        if p["connectionPool"].is_null() {
            continue;
        }
        for pool in ["tcp", "http"] {
            if let Some(t) = scalar(&p["connectionPool"][pool]["idleTimeout"]) {
                out.push((format!("{pool}.idleTimeout"), t));
                pools.push((n, pool));
            }
        }
        n += 1;
    }
}

/// Every `stream_idle_timeout` in an EnvoyFilter's patches (at any depth: the patch value
/// is Envoy's own configuration).
fn envoy_keys(v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Mapping(m) => {
            for (k, val) in m {
                if k.as_str() == Some("stream_idle_timeout") {
                    if let Some(s) = scalar(val) {
                        out.push(("stream_idle_timeout".into(), s));
                    }
                } else {
                    envoy_keys(val, out);
                }
            }
        }
        Value::Sequence(s) => s.iter().for_each(|x| envoy_keys(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_and_envoy_filters_become_nodes_at_their_lines() {
        let text = "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: ws\n  namespace: app\nspec:\n  host: ws.app.svc.cluster.local\n  trafficPolicy:\n    connectionPool:\n      tcp:\n        idleTimeout: 30s\n      http:\n        idleTimeout: 2h\n---\napiVersion: networking.istio.io/v1alpha3\nkind: EnvoyFilter\nmetadata:\n  name: idle\nspec:\n  configPatches:\n    - applyTo: NETWORK_FILTER\n      patch:\n        operation: MERGE\n        value:\n          typed_config:\n            stream_idle_timeout: 0s\n";
        assert!(looks_like(text));
        let n = parse("dr.yaml", text).unwrap();
        assert_eq!(n[0].label(), "destinationrule app/ws");
        let kids: Vec<(String, String, usize)> = n[0]
            .children()
            .iter()
            .map(|c| (c.name.clone(), c.args[0].clone(), c.line))
            .collect();
        assert_eq!(
            kids,
            [
                ("tcp.idleTimeout".into(), "30s".into(), 11),
                ("http.idleTimeout".into(), "2h".into(), 13)
            ]
        );
        // http before tcp in the file: each value at its own pool's line.
        let swapped = text.replace(
            "      tcp:\n        idleTimeout: 30s\n      http:\n        idleTimeout: 2h\n",
            "      http:\n        idleTimeout: 2h\n      tcp:\n        idleTimeout: 30s\n",
        );
        assert_ne!(swapped, text);
        let m = parse("dr.yaml", &swapped).unwrap();
        let kids: Vec<(String, usize)> = m[0]
            .children()
            .iter()
            .map(|c| (c.name.clone(), c.line))
            .collect();
        assert_eq!(
            kids,
            [
                ("tcp.idleTimeout".into(), 13),
                ("http.idleTimeout".into(), 11)
            ]
        );
        assert_eq!(n[1].label(), "envoyfilter default/idle");
        assert_eq!(n[1].children()[0].args[0], "0s");
        assert_eq!(n[1].children()[0].line, 26);
        assert!(parse("bad.yaml", "kind: [\n").is_err());
    }
}
