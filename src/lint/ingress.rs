//! Kubernetes `Ingress` YAML (several documents per file, `---` between them) read for the
//! ingress-nginx annotations. Each Ingress becomes `ingress NAMESPACE/NAME` with one child
//! per `nginx.ingress.kubernetes.io/KEY` annotation (named KEY, its value the argument)
//! and one `path PATH` per rule path. Lines: the document's start plus the key's line in it.
use super::{perr, Node, ParseError};
use serde_yaml::Value;
use std::collections::HashMap;
use std::sync::Arc;

pub const PREFIX: &str = "nginx.ingress.kubernetes.io/";

/// The documents of a YAML stream with the line each starts on. A `---` marker may carry
/// the document's first content on its own line (`--- {kind: Ingress, ...}` is valid
/// YAML): that text starts the new document, on the marker's line.
pub(super) fn documents(text: &str) -> Vec<(usize, String)> {
    let mut out = vec![(1, String::new())];
    for (i, l) in text.lines().enumerate() {
        let marker = l
            .strip_prefix("---")
            .filter(|r| r.is_empty() || r.starts_with([' ', '\t']));
        match marker {
            Some(rest) if rest.trim().is_empty() || rest.trim_start().starts_with('#') => {
                out.push((i + 2, String::new()));
            }
            Some(rest) => out.push((i + 1, format!("{}\n", rest.trim_start()))),
            None => {
                let doc = &mut out.last_mut().expect("never empty").1;
                doc.push_str(l);
                doc.push('\n');
            }
        }
    }
    out
}

/// Where things are written in one document, built in one pass so each lookup is a hash
/// (a scan per annotation was quadratic): the first line of each key (`name:`,
/// `"a/b": v`, `- path: /ws` gives `path`) and of each whole `key: value` line.
struct Lines {
    keys: HashMap<String, usize>,
    whole: HashMap<String, usize>,
    doc: Vec<String>,
    /// Lookups left that may scan the text (a flow-style map has no line per key).
    scans: std::cell::Cell<usize>,
}

impl Lines {
    fn new(doc: &str) -> Lines {
        let (mut keys, mut whole) = (HashMap::new(), HashMap::new());
        for (i, l) in doc.lines().enumerate() {
            let t = l.trim().trim_start_matches("- ").trim();
            whole.entry(t.to_string()).or_insert(i + 1);
            if let Some((k, _)) = t.split_once(':') {
                let k = k.trim().trim_matches(|c| c == '"' || c == '\'');
                keys.entry(k.to_string()).or_insert(i + 1);
            }
        }
        Lines {
            keys,
            whole,
            doc: doc.lines().map(String::from).collect(),
            scans: std::cell::Cell::new(100),
        }
    }

    /// Line (1-based, in the document) of `needle`: a key (`kind:` or `a/b`), or a whole
    /// `key: value` line; else the first line holding it (a bounded number of times).
    fn of(&self, needle: &str) -> usize {
        let key = needle.strip_suffix(':').unwrap_or(needle);
        if let Some(l) = self.keys.get(key).or_else(|| self.whole.get(needle)) {
            return *l;
        }
        if self.scans.get() == 0 {
            return 1;
        }
        self.scans.set(self.scans.get() - 1);
        self.doc
            .iter()
            .position(|l| l.contains(needle))
            .map_or(1, |i| i + 1)
    }
}

/// The controller's own ConfigMap, by the names ingress-nginx's manifests and Helm chart
/// give it (`ingress-nginx-controller`, `RELEASE-ingress-nginx-controller`, the older
/// `nginx-configuration`) or its namespace. F5's NGINX Ingress Controller (`nginx.org/`
/// annotations, `nginx-config`) writes times as `60s` and is not this controller.
///
/// The chart's and manifests' TCP/UDP service maps (`RELEASE-ingress-nginx-tcp`,
/// `tcp-services`, `udp-services`) share the name and namespace but hold ports, not
/// settings: a map named so, or whose keys are all port numbers, is not the controller's.
fn is_controller(name: &str, namespace: Option<&str>, keys: &[&str]) -> bool {
    if name == "nginx-configuration" {
        return true;
    }
    let service_map = ["-tcp", "-udp", "tcp-services", "udp-services"]
        .iter()
        .any(|s| name.ends_with(s))
        || (!keys.is_empty() && keys.iter().all(|k| k.parse::<u16>().is_ok()));
    !service_map && (name.contains("ingress-nginx") || namespace == Some("ingress-nginx"))
}

/// Whether a YAML file holds the controller's ConfigMap (for kind detection).
pub fn looks_like_configmap(text: &str) -> bool {
    text.contains("kind: ConfigMap")
        && (text.contains("ingress-nginx") || text.contains("nginx-configuration"))
}

/// `configmap NAMESPACE/NAME` with one child per `data` key (its value the argument).
fn configmap(v: &Value, id: String, file: &Arc<str>, at: &dyn Fn(&str) -> usize) -> Node {
    let mut kids = Vec::new();
    for (k, val) in v
        .get("data")
        .and_then(Value::as_mapping)
        .into_iter()
        .flatten()
    {
        let Some(k) = k.as_str() else { continue };
        let val = match val {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => String::new(),
        };
        kids.push(Node {
            name: k.into(),
            args: vec![val],
            file: file.clone(),
            line: at(k),
            block: None,
        });
    }
    Node {
        name: "configmap".into(),
        args: vec![id],
        file: file.clone(),
        line: at("kind:"),
        block: Some(kids),
    }
}

pub fn parse(file: &str, text: &str) -> Result<Vec<Node>, ParseError> {
    let name: Arc<str> = Arc::from(file);
    let mut out = Vec::new();
    for (start, doc) in documents(text) {
        if doc.trim().is_empty() {
            continue;
        }
        let v = document(file, start, &doc)?;
        let Some((id, controller)) = kept(&v) else {
            continue;
        };
        let lines = Lines::new(&doc);
        let at = |needle: &str| start + lines.of(needle) - 1;
        out.push(match controller {
            true => configmap(&v, id, &name, &at),
            false => ingress(&v, id, &name, &at),
        });
    }
    Ok(out)
}

/// One YAML document (starting at line `start` of `file`), bounded in depth; an error
/// names its line.
fn document(file: &str, start: usize, doc: &str) -> Result<Value, ParseError> {
    super::yaml_depth(file, doc).map_err(|e| perr(file, start + e.line - 1, e.msg))?;
    serde_yaml::from_str(doc).map_err(|e| {
        let l = e.location().map_or(1, |l| l.line());
        perr(
            file,
            start + l - 1,
            format!(
                "YAML: {}",
                crate::profile::plain_yaml_error(&e.to_string(), "")
            ),
        )
    })
}

/// Pure: a document this linter reads: an Ingress, or the ingress-nginx controller's
/// ConfigMap (true); with its `namespace/name` id. Anything else is left out.
fn kept(v: &Value) -> Option<(String, bool)> {
    let s = |p: &[&str]| {
        let mut cur = v;
        for k in p {
            cur = cur.get(*k)?;
        }
        cur.as_str().map(String::from)
    };
    let ns = s(&["metadata", "namespace"]);
    let meta_name = s(&["metadata", "name"]).unwrap_or_default();
    let kind = v.get("kind").and_then(Value::as_str);
    let keys: Vec<&str> = v
        .get("data")
        .and_then(Value::as_mapping)
        .into_iter()
        .flatten()
        .map(|(k, _)| k.as_str().unwrap_or("0"))
        .collect();
    let controller = kind == Some("ConfigMap") && is_controller(&meta_name, ns.as_deref(), &keys);
    if kind != Some("Ingress") && !controller {
        return None;
    }
    let id = format!("{}/{meta_name}", ns.unwrap_or_else(|| "default".into()));
    Some((id, controller))
}

/// An Ingress: its `nginx.ingress.kubernetes.io/` annotations and its rules' paths, each
/// at its line.
fn ingress(v: &Value, id: String, name: &Arc<str>, at: &dyn Fn(&str) -> usize) -> Node {
    let node = |key: &str, val: String, line| Node {
        name: key.into(),
        args: vec![val],
        file: name.clone(),
        line,
        block: None,
    };
    let annotations = v
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_mapping);
    let mut kids: Vec<Node> = annotations
        .into_iter()
        .flatten()
        .filter_map(|(k, val)| {
            let k = k.as_str()?;
            let key = k.strip_prefix(PREFIX)?;
            Some(node(key, scalar(val), at(k)))
        })
        .collect();
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
            let path = p.get("path").and_then(Value::as_str).unwrap_or("/");
            kids.push(node("path", path.to_string(), at(&format!("path: {path}"))));
        }
    }
    Node {
        name: "ingress".into(),
        args: vec![id],
        file: name.clone(),
        line: at("kind:"),
        block: Some(kids),
    }
}

/// Pure: an annotation's value as text (a number or a boolean as written by YAML).
fn scalar(val: &Value) -> String {
    match val {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only an Ingress or the controller's ConfigMap is kept, named namespace/name.
    #[test]
    fn kept_documents_and_their_ids() {
        let v = |t: &str| serde_yaml::from_str::<Value>(t).unwrap();
        let ing = v("kind: Ingress\nmetadata: {name: ws, namespace: prod}\n");
        assert_eq!(kept(&ing), Some(("prod/ws".into(), false)));
        let no_ns = v("kind: Ingress\nmetadata: {name: ws}\n");
        assert_eq!(kept(&no_ns), Some(("default/ws".into(), false)));
        assert_eq!(kept(&v("kind: Service\nmetadata: {name: s}\n")), None);
    }

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
    fn a_document_may_start_on_its_marker_line() {
        let good = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: a}\n";
        let same = format!("{good}--- {{kind: Ingress, metadata: {{name: ws, annotations: {{nginx.ingress.kubernetes.io/proxy-read-timeout: \"5\"}}}}}}\n");
        let own = same.replace("--- {", "---\n{");
        for t in [&same, &own] {
            let n = parse("i.yaml", t).unwrap();
            assert_eq!(n.len(), 2, "{t}");
            assert_eq!(n[1].label(), "ingress default/ws");
            assert_eq!(n[1].children()[0].args, ["5"]);
        }
        assert_eq!(parse("i.yaml", &same).unwrap()[1].line, 4);
        // `---x` is no marker; `--- # note` is.
        assert_eq!(documents("a: 1\n--- # c\nb: 2\n").len(), 2);
    }

    #[test]
    fn a_bad_document_names_its_line() {
        let e = parse("f", "kind: Service\n---\nkind: Ingress\nmetadata: [\n").unwrap_err();
        assert_eq!(e.file, "f");
        assert!(e.line >= 4, "{e}");
    }

    #[test]
    fn the_charts_tcp_and_udp_maps_are_not_the_controllers() {
        let map = |name: &str, data: &str| {
            format!("kind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: ingress-nginx\ndata:\n  {data}\n")
        };
        let t = [
            map("rel-ingress-nginx-tcp", "\"9000\": default/app:9000"),
            map("rel-ingress-nginx-udp", "\"53\": kube-system/dns:53"),
            map("tcp-services", "\"9001\": default/app:9001"),
            map("ports", "\"9002\": default/app:9002"),
            map("rel-ingress-nginx-controller", "proxy-read-timeout: \"30\""),
        ]
        .join("---\n");
        let n = parse("helm.yaml", &t).unwrap();
        assert_eq!(n.len(), 1, "{n:?}");
        assert_eq!(
            n[0].label(),
            "configmap ingress-nginx/rel-ingress-nginx-controller"
        );
        // The chart's name in another namespace, and an empty map in the controller's.
        assert!(is_controller(
            "rel-ingress-nginx-controller",
            Some("infra"),
            &[]
        ));
        assert!(!is_controller(
            "cert-manager-controller",
            Some("infra"),
            &[]
        ));
        assert!(is_controller("settings", Some("ingress-nginx"), &[]));
        assert!(!is_controller("ingress-nginx-tcp", None, &[]));
    }

    #[test]
    fn the_controller_configmap_is_read_others_are_not() {
        let t = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ingress-nginx-controller\n  namespace: ingress-nginx\ndata:\n  proxy-read-timeout: \"30\"\n  upstream-keepalive-timeout: \"60\"\n---\nkind: ConfigMap\nmetadata: {name: app-settings}\ndata: {proxy-read-timeout: \"5\"}\n";
        assert!(looks_like_configmap(t));
        let n = parse("cm.yaml", t).unwrap();
        assert_eq!(n.len(), 1, "only the controller's");
        assert_eq!(
            n[0].label(),
            "configmap ingress-nginx/ingress-nginx-controller"
        );
        let k = n[0].children();
        assert_eq!(
            (k[0].name.as_str(), k[0].args[0].as_str(), k[0].line),
            ("proxy-read-timeout", "30", 7)
        );
    }
}
