//! The layer rule of docs/ARCHITECTURE.md, checked on the sources: imports point down only
//! (data <- process <- domain <- report <- commands). A new top-level module must be given a layer here (and in docs/ARCHITECTURE.md).
use std::collections::BTreeSet;
use std::path::Path;

/// Layer of each top-level module of src/ (0 base and data, 1 process, 2 domain, 3 report,
/// 4 commands).
const LAYERS: &[(&str, u8)] = &[
    ("units", 0),
    ("outfile", 0),
    ("input", 0),
    ("redact", 0),
    ("evidence", 0),
    ("checklist", 0),
    ("profile", 0),
    ("hops", 0),
    ("sys", 1),
    ("findings", 2),
    ("catalog", 2),
    ("choose", 2),
    ("audit", 2),
    ("verify", 2),
    ("bench", 2),
    ("delivery", 2),
    ("net", 2),
    ("review", 2),
    ("budget", 2),
    ("load", 2),
    ("probe", 2),
    ("cluster", 2),
    ("lint", 2),
    ("report", 3),
    ("cmd", 4),
    ("app", 4),
];

fn layer(module: &str) -> u8 {
    LAYERS
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, l)| *l)
        .unwrap_or_else(|| panic!("src/{module}: give it a layer in tests/layering.rs"))
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `crate::NAME` references in code (comments and the test module left out).
fn crate_refs(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = BTreeSet::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for part in line.split("crate::").skip(1) {
            // `crate::{a, b::c}` names several modules.
            let names: Vec<&str> = match part.strip_prefix('{') {
                Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
                None => vec![part],
            };
            for n in names {
                let name: String = n
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != "self" {
                    out.insert(name);
                }
            }
        }
    }
    out
}

#[test]
fn imports_point_down_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut up = Vec::new();
    let mut seen = 0;
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel.iter().next().unwrap().to_string_lossy();
        let top = top.trim_end_matches(".rs").to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let from = layer(&top);
        for to in crate_refs(&std::fs::read_to_string(f).unwrap()) {
            if to == top {
                continue;
            }
            seen += 1;
            if layer(&to) > from {
                up.push(format!("{} -> crate::{to}", rel.display()));
            }
        }
    }
    assert!(
        seen > 50,
        "too few imports found ({seen}): is the scan broken?"
    );
    assert!(
        up.is_empty(),
        "imports pointing up a layer:\n{}",
        up.join("\n")
    );
}

#[test]
fn the_scan_sees_an_upward_import() {
    let refs = crate_refs(
        "use crate::cmd::Ctx;\nuse crate::{app, report::Palette};\n// crate::net in a comment\n",
    );
    assert_eq!(
        refs.into_iter().collect::<Vec<_>>(),
        ["app", "cmd", "report"]
    );
}
