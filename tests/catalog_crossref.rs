//! Cross-references between data/evidence.yaml, checklists/*.yaml and the source code:
//! every referenced id exists, and every evidence entry is used by something.
use rtcheck::{checklist, evidence};
use std::collections::{BTreeSet, HashSet};
use std::path::Path;

/// Live experiments that `verify` provides (ARCHITECTURE / the issue).
const VERIFY_NAMES: &[&str] = &[
    "fd-limit",
    "ephemeral-ports",
    "time-wait",
    "tcp-wmem",
    "memory",
    "tcp-keepalive",
];

/// String literals passed to evidence::get/num/reference in one source file.
/// Returns (id, qualified) where qualified means written as `evidence::NAME("...")`.
fn literal_calls(src: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for name in ["get", "num", "reference"] {
        let pat = format!("{name}(");
        let mut from = 0;
        while let Some(pos) = src[from..].find(&pat) {
            let at = from + pos;
            from = at + pat.len();
            // Word boundary before the function name (not `forget(` or `budget(`).
            let before = src[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = src[from..].trim_start();
            let Some(lit) = rest.strip_prefix('"') else {
                continue;
            };
            let Some(end) = lit.find('"') else { continue };
            let qualified = src[..at].ends_with("evidence::");
            out.push((lit[..end].to_string(), qualified));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn source_ids() -> Vec<(String, bool, String)> {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 10, "scanned too few files: {files:?}");
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (id, q) in literal_calls(&text) {
            out.push((id, q, f.display().to_string()));
        }
    }
    out
}

#[test]
fn the_scanner_finds_literal_calls_and_only_those() {
    let src = r#"let a = evidence::num("conn-ram", "rss_per_conn");
        let b = reference( "ulimit-n");
        let c = map.get("key"); let d = forget("x"); let e = evidence::get(id);"#;
    let got = literal_calls(src);
    assert!(got.contains(&("conn-ram".to_string(), true)));
    assert!(got.contains(&("ulimit-n".to_string(), false)));
    assert!(got.contains(&("key".to_string(), false)));
    assert!(!got.iter().any(|(id, _)| id == "x"));
    assert_eq!(got.len(), 3);
}

#[test]
fn every_checklist_reference_exists() {
    let store = evidence::store();
    for c in checklist::all() {
        assert!(!c.items.is_empty(), "{} is empty", c.name);
        for i in &c.items {
            assert!(
                !i.evidence.is_empty(),
                "{}/{} cites no evidence",
                c.name,
                i.id
            );
            for id in &i.evidence {
                assert!(
                    store.get(id).is_some(),
                    "{}/{} cites unknown evidence `{id}`",
                    c.name,
                    i.id
                );
            }
            if let Some(v) = &i.verify {
                assert!(
                    VERIFY_NAMES.contains(&v.as_str()),
                    "{}/{}: unknown verify `{v}`",
                    c.name,
                    i.id
                );
            }
            assert!(
                !i.title.is_empty() && !i.fix.is_empty(),
                "{}/{}",
                c.name,
                i.id
            );
            let sentences = i.why.matches(". ").count() + 1;
            assert!(
                i.why.ends_with('.') && sentences <= 2,
                "{}/{}: why must be one or two sentences: {}",
                c.name,
                i.id,
                i.why
            );
        }
    }
}

#[test]
fn every_qualified_source_reference_exists() {
    let store = evidence::store();
    for (id, qualified, file) in source_ids() {
        if qualified {
            assert!(store.get(&id).is_some(), "{file}: unknown evidence `{id}`");
        }
    }
}

#[test]
fn every_evidence_entry_is_used() {
    let mut used: HashSet<String> = HashSet::new();
    for c in checklist::all() {
        for i in &c.items {
            used.extend(i.evidence.iter().cloned());
        }
    }
    used.extend(source_ids().into_iter().map(|(id, _, _)| id));
    let orphans: BTreeSet<&str> = evidence::store()
        .entries
        .iter()
        .map(|e| e.id.as_str())
        .filter(|id| !used.contains(*id))
        .collect();
    assert!(orphans.is_empty(), "evidence used by nothing: {orphans:?}");
}

#[test]
fn async_latency_and_golden_signal_evidence_is_in_the_async_checklist_or_choose() {
    // Seeds 001 (golden signals), 003 (async service), 004 (latency budget).
    let seeds = ["001_", "003_", "004_"];
    let mut used: HashSet<String> = checklist::by_name("async-service")
        .unwrap()
        .items
        .iter()
        .flat_map(|i| i.evidence.iter().cloned())
        .collect();
    let choose_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/choose");
    let mut files = Vec::new();
    rust_files(&choose_dir, &mut files);
    for f in files {
        used.extend(
            literal_calls(&std::fs::read_to_string(f).unwrap())
                .into_iter()
                .map(|(id, _)| id),
        );
    }
    let mut checked = 0;
    for e in &evidence::store().entries {
        if seeds.iter().any(|s| e.source.seed.starts_with(s)) {
            checked += 1;
            assert!(
                used.contains(&e.id),
                "`{}` is not in async-service nor choose",
                e.id
            );
        }
    }
    assert!(
        checked >= 20,
        "only {checked} entries from seeds 001/003/004"
    );
}

#[test]
fn checklists_have_the_shape_of_the_reference() {
    let ops = checklist::by_name("realtime-ops").unwrap();
    let groups = ops.groups();
    assert_eq!(
        groups,
        ["system-limits", "timeouts", "metrics", "must-have"]
    );
    let must: Vec<&str> = checklist::must_haves()
        .iter()
        .map(|i| i.id.as_str())
        .collect();
    assert_eq!(
        must,
        [
            "write-deadline",
            "writer-isolation",
            "ping-pong",
            "seq-numbers",
            "hot-path-alloc",
            "proxy-config"
        ]
    );
    let asy = checklist::by_name("async-service").unwrap();
    let production = asy.items.iter().filter(|i| i.group == "production").count();
    assert_eq!(production, 11, "REFERENCE section 5 lists 11 items");
    // Item ids are unique across checklists, so `rtcheck checklist ITEM-ID` is unambiguous.
    let mut ids = HashSet::new();
    for c in checklist::all() {
        assert!(
            !ids.contains(&c.name),
            "checklist name `{}` clashes",
            c.name
        );
        for i in &c.items {
            assert!(ids.insert(i.id.clone()), "duplicate item id `{}`", i.id);
        }
        ids.insert(c.name.clone());
    }
    // Every verification experiment is reachable from some item.
    let verifies: HashSet<&str> = checklist::all()
        .iter()
        .flat_map(|c| c.items.iter().filter_map(|i| i.verify.as_deref()))
        .collect();
    for v in VERIFY_NAMES {
        assert!(verifies.contains(v), "no item links verify `{v}`");
    }
}

#[test]
fn embedded_files_match_the_files_on_disk() {
    // include_str! embeds at build time; this catches a stale list in CHECKLIST_FILES.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("checklists");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| format!("checklists/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    let embedded: BTreeSet<String> = checklist::CHECKLIST_FILES
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    assert_eq!(on_disk, embedded);
}

#[test]
fn a_bad_checklist_names_file_line_and_field() {
    let text = "name: x\ntitle: t\ndescription: d\nitems:\n  - id: a\n    group: g\n    title: t\n    why: w.\n    evidence: []\n    fix: f\n    verfy: fd-limit\n";
    let e = checklist::parse(text, "checklists/x.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("checklists/x.yaml:11:5: items[0]: unknown field `verfy`"),
        "{e}"
    );
    assert!(!e.contains(" at line "), "location said twice: {e}");
    assert!(e.contains("verfy"), "{e}");
}
