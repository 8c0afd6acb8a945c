//! Kubernetes `Ingress` YAML (several documents per file, `---` between them) read for the
//! ingress-nginx annotations. Each Ingress becomes `ingress NAMESPACE/NAME` with one child
//! per `nginx.ingress.kubernetes.io/KEY` annotation (named KEY, its value the argument)
//! and one `path PATH` per rule path. Lines: the document's start plus the key's line in it.
use super::{perr, Node, ParseError};
use serde_yaml::Value;
use std::sync::Arc;

pub const PREFIX: &str = "nginx.ingress.kubernetes.io/";

/// The documents of a YAML stream with the line each starts on.
fn documents(text: &str) -> Vec<(usize, String)> {
    let mut out = vec![(1, String::new())];
    for (i, l) in text.lines().enumerate() {
        if l.starts_with("---") {
            out.push((i + 2, String::new()));
        } else {
            let doc = &mut out.last_mut().expect("never empty").1;
            doc.push_str(l);
            doc.push('\n');
        }
    }
    out
}

/// Line (1-based, in the document) of the first line holding `needle`.
fn line_of(doc: &str, needle: &str) -> usize {
    doc.lines()
        .position(|l| l.contains(needle))
        .map_or(1, |i| i + 1)
}

pub fn parse(file: &str, text: &str) -> Result<Vec<Node>, ParseError> {
    let name: Arc<str> = Arc::from(file);
    let mut out = Vec::new();
    for (start, doc) in documents(text) {
        if doc.trim().is_empty() {
            continue;
        }
        let v: Value = serde_yaml::from_str(&doc).map_err(|e| {
            let l = e.location().map_or(1, |l| l.line());
            perr(
                file,
                start + l - 1,
                format!(
                    "YAML: {}",
                    crate::profile::plain_yaml_error(&e.to_string(), "")
                ),
            )
        })?;
        if v.get("kind").and_then(Value::as_str) != Some("Ingress") {
            continue;
        }
        let s = |p: &[&str]| {
            let mut cur = &v;
            for k in p {
                cur = cur.get(*k)?;
            }
            cur.as_str().map(String::from)
        };
        let id = format!(
            "{}/{}",
            s(&["metadata", "namespace"]).unwrap_or_else(|| "default".into()),
            s(&["metadata", "name"]).unwrap_or_default()
        );
        let at = |needle: &str| start + line_of(&doc, needle) - 1;
        let mut kids = Vec::new();
        if let Some(a) = v
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(Value::as_mapping)
        {
            for (k, val) in a {
                let (Some(k), val) = (k.as_str(), val) else {
                    continue;
                };
                let Some(key) = k.strip_prefix(PREFIX) else {
                    continue;
                };
                let val = match val {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => String::new(),
                };
                kids.push(Node {
                    name: key.into(),
                    args: vec![val],
                    file: name.clone(),
                    line: at(k),
                    block: None,
                });
            }
        }
        let rules = v
            .get("spec")
            .and_then(|s| s.get("rules"))
            .and_then(Value::as_sequence);
        for r in rules.into_iter().flatten() {
            let paths = r
                .get("http")
                .and_then(|h| h.get("paths"))
                .and_then(Value::as_sequence);
            for p in paths.into_iter().flatten() {
                let path = p
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or("/")
                    .to_string();
                let line = at(&format!("path: {path}"));
                kids.push(Node {
                    name: "path".into(),
                    args: vec![path],
                    file: name.clone(),
                    line,
                    block: None,
                });
            }
        }
        out.push(Node {
            name: "ingress".into(),
            args: vec![id],
            file: name.clone(),
            line: at("kind:"),
            block: Some(kids),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_documents_with_lines() {
        let t = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: ws\n  annotations:\n    nginx.ingress.kubernetes.io/proxy-read-timeout: \"3600\"\nspec:\n  rules:\n  - http:\n      paths:\n      - path: /ws\n        pathType: Prefix\n";
        let n = parse("i.yaml", t).unwrap();
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].label(), "ingress default/ws");
        assert_eq!(n[0].line, 6);
        let k = n[0].children();
        assert_eq!(
            (k[0].name.as_str(), k[0].args[0].as_str(), k[0].line),
            ("proxy-read-timeout", "3600", 10)
        );
        assert_eq!((k[1].args[0].as_str(), k[1].line), ("/ws", 15));
    }

    #[test]
    fn a_bad_document_names_its_line() {
        let e = parse("f", "kind: Service\n---\nkind: Ingress\nmetadata: [\n").unwrap_err();
        assert_eq!(e.file, "f");
        assert!(e.line >= 4, "{e}");
    }
}
