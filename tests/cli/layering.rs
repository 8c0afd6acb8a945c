//! The shape of docs/ARCHITECTURE.md, checked on the sources:
//! - the crates point one way: rtcheck-base <- rtcheck-wire <- rtcheck-serve <- rtcheck;
//! - inside the root crate, imports point down a declared order (data <- process <- domain
//!   <- report <- commands, and within the domain an order of its own), so a new top-level
//!   module must be given its place here (and in docs/ARCHITECTURE.md);
//! - no module of any crate imports one that imports it back (a parent and its own
//!   children excepted: a `mod.rs` declares them and they may use its shared items).
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every top-level module of src/, lowest first, with its layer (0 data, 1 process,
/// 2 domain, 3 report, 4 commands). An import must name a module listed before it.
const ORDER: &[(&str, u8)] = &[
    ("evidence", 0),
    ("checklist", 0),
    ("hops", 0),
    ("profile", 0),
    ("sys", 1),
    ("findings", 2),
    ("catalog", 2),
    ("choose", 2),
    ("audit", 2),
    ("lint", 2),
    ("load", 2),
    ("budget", 2),
    ("bench", 2),
    ("verify", 2),
    ("rehearse", 2),
    ("review", 2),
    ("probe", 2),
    ("report", 3),
    ("cmd", 4),
    ("app", 4),
];

/// Each workspace crate and the workspace crates it may depend on.
const CRATES: &[(&str, &[&str])] = &[
    ("crates/base", &[]),
    ("crates/wire", &["rtcheck-base"]),
    ("crates/serve", &["rtcheck-base", "rtcheck-wire"]),
    (".", &["rtcheck-base", "rtcheck-wire", "rtcheck-serve"]),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rank(module: &str) -> usize {
    ORDER
        .iter()
        .position(|(m, _)| *m == module)
        .unwrap_or_else(|| panic!("src/{module}: give it a place in tests/cli/layering.rs ORDER"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without its test module and comment lines.
fn code(text: &str) -> Vec<&str> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect()
}

/// The paths after each `PREFIX::` in the code: `crate::a::b::{c, d}` gives `a::b::c` and
/// `a::b::d` (one level of braces, enough for this tree's imports).
fn paths_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let word = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect::<String>()
            .trim_end_matches(':')
            .to_string()
    };
    for line in code(text) {
        for (i, _) in line.match_indices(prefix) {
            let before = line[..i].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &line[i + prefix.len()..];
            let head = word(rest);
            let after = &rest[head.len()..];
            match after.strip_prefix("::{") {
                Some(group) => {
                    for n in group.split('}').next().unwrap_or("").split(',') {
                        let n = word(n);
                        if n == "self" || n.is_empty() {
                            out.insert(head.clone());
                        } else {
                            out.insert(format!("{head}::{n}"));
                        }
                    }
                }
                None if head.is_empty() => {
                    for n in rest
                        .trim_start_matches('{')
                        .split('}')
                        .next()
                        .unwrap_or("")
                        .split(',')
                    {
                        let n = word(n);
                        if !n.is_empty() && n != "self" {
                            out.insert(n);
                        }
                    }
                }
                None => {
                    out.insert(head);
                }
            }
        }
    }
    out
}

/// The module path of a source file (`a/b.rs` and `a/b/mod.rs` are `a::b`; lib.rs is "").
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p != "mod")
        .collect();
    match parts.as_slice() {
        [one] if one == "lib" || one == "main" => String::new(),
        _ => parts.join("::"),
    }
}

/// Module-to-module imports of one crate (`crate::` and `super::` paths, resolved to the
/// longest known module).
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    let resolve = |path: &str| -> Option<String> {
        let segs: Vec<&str> = path.split("::").collect();
        (1..=segs.len())
            .rev()
            .map(|n| segs[..n].join("::"))
            .find(|m| modules.contains(m))
    };
    let mut graph = BTreeMap::new();
    for f in &files {
        let me = module_of(src, f);
        let text = std::fs::read_to_string(f).unwrap();
        // `super::` from a mod.rs names its parent's items; from a.rs, a's parent's.
        let parent = me.rsplit_once("::").map_or("", |(p, _)| p).to_string();
        let mut to: BTreeSet<String> = paths_after(&text, "crate::")
            .iter()
            .filter_map(|p| resolve(p))
            .collect();
        for p in paths_after(&text, "super::") {
            let full = if parent.is_empty() {
                p
            } else {
                format!("{parent}::{p}")
            };
            to.extend(resolve(&full));
        }
        to.retain(|m| m != &me && !m.is_empty());
        graph.insert(me, to);
    }
    graph
}

/// Is one module the other or one of its ancestors?
fn related(a: &str, b: &str) -> bool {
    let under = |x: &str, y: &str| y.starts_with(&format!("{x}::"));
    a == b || under(a, b) || under(b, a)
}

/// A cycle through modules that are not parent and child, if any.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_string(), 1);
        stack.push(m.to_string());
        for n in g.get(m).into_iter().flatten().filter(|n| !related(m, n)) {
            match state.get(n.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|s| s == n).unwrap();
                    let mut c = stack[at..].to_vec();
                    c.push(n.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(n, g, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        if !state.contains_key(m.as_str()) {
            if let Some(c) = visit(m, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn imports_point_down_the_declared_order() {
    let graph = module_graph(&root().join("src"));
    let top = |m: &str| m.split("::").next().unwrap_or("").to_string();
    let mut up = Vec::new();
    let mut seen = 0;
    for (from, tos) in &graph {
        let from_top = top(from);
        if from_top.is_empty() || from_top == "main" {
            continue;
        }
        for to in tos.iter().map(|t| top(t)).filter(|t| *t != from_top) {
            seen += 1;
            if rank(&to) > rank(&from_top) {
                up.push(format!("{from} -> crate::{to}"));
            }
        }
    }
    assert!(
        seen > 50,
        "too few imports found ({seen}): is the scan broken?"
    );
    assert!(
        up.is_empty(),
        "imports pointing up the order:\n{}",
        up.join("\n")
    );
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    for krate in [
        "src",
        "crates/base/src",
        "crates/wire/src",
        "crates/serve/src",
    ] {
        let graph = module_graph(&root().join(krate));
        assert!(
            graph.len() > 5,
            "{krate}: too few modules: is the scan broken?"
        );
        if let Some(c) = find_cycle(&graph) {
            panic!("{krate}: an import circle: {}", c.join(" -> "));
        }
    }
}

#[test]
fn crates_depend_one_way() {
    for (dir, allowed) in CRATES {
        let toml = std::fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
        let deps: BTreeSet<&str> = toml
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim()))
            .filter(|k| k.starts_with("rtcheck-"))
            .collect();
        let extra: Vec<&&str> = deps.iter().filter(|d| !allowed.contains(d)).collect();
        assert!(
            extra.is_empty(),
            "{dir}/Cargo.toml depends on {extra:?} (allowed: {allowed:?})"
        );
    }
}

#[test]
fn the_scans_see_what_they_must() {
    let refs = paths_after(
        "use crate::cmd::Ctx;\nuse crate::{app, report::Palette};\n// crate::net in a comment\nx(super::hub::lock);\n",
        "crate::",
    );
    assert_eq!(
        refs.into_iter().collect::<Vec<_>>(),
        ["app", "cmd::Ctx", "report::Palette"]
    );
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b::c".to_string()]));
    g.insert("b::c".to_string(), BTreeSet::from(["a".to_string()]));
    assert!(find_cycle(&g).is_some(), "a two-module circle");
    g.insert("b::c".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["b::c".to_string()]));
    g.remove("a");
    assert!(
        find_cycle(&g).is_none(),
        "a parent and its child are not a circle"
    );
}
