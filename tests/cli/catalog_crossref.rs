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

#[test]
fn every_source_has_a_title_and_a_part_the_article_gives() {
    for e in &evidence::store().entries {
        // A public report or rtcheck's own measurement (issue 39) names itself, never a
        // seed; rtcheck's values all say they are derived and how.
        let s = &e.source;
        if s.report.is_some() || s.measured_by.is_some() {
            assert!(
                s.seed.is_empty() && s.part.is_null(),
                "{}: one source",
                e.id
            );
            assert!(
                s.report.is_none() || s.url.is_some(),
                "{}: report url",
                e.id
            );
            if s.measured_by.is_some() {
                assert!(
                    e.values.iter().all(|v| v.derived && v.how.is_some()),
                    "{}",
                    e.id
                );
            }
            continue;
        }
        let doc = e
            .source
            .doc()
            .unwrap_or_else(|| panic!("{}: unknown seed file {}", e.id, e.source.seed));
        assert!(!doc.title.is_empty());
        let part = e.source.part_label();
        // Parts are the numbers each article gives; seed 001 has none, so its sections.
        let allowed: &[&str] = match doc.id {
            "000" => &["part 11"],
            "001" => &["section ", "sections "],
            "002" => &["part ", "parts "],
            // The parts seed 003 names in its text ("phần N").
            "003" => &[
                "part 27",
                "part 29",
                "part 30",
                "part 31",
                "part 33",
                "part 34",
                "part 40",
                "part 41",
                "part 44",
                "part 45",
                "part 47",
                "part 48",
                "part 49",
                "series summary",
            ],
            "004" => &["part 45"],
            other => panic!("unexpected seed {other}"),
        };
        assert!(
            allowed.iter().any(|a| part.starts_with(a)),
            "{}: `{part}` is not a part seed {} gives",
            e.id,
            doc.id
        );
        assert_eq!(e.source.describe(), format!("\"{}\", {part}", doc.title));
    }
}

#[test]
fn derived_values_say_how_and_only_they_do() {
    for e in &evidence::store().entries {
        for v in &e.values {
            let how = v.how.as_deref().unwrap_or("");
            assert_eq!(
                v.derived,
                !how.is_empty(),
                "{}/{}: derived values say how, read values carry no `how`",
                e.id,
                v.name
            );
        }
    }
    let derived = |id: &str, name: &str| {
        evidence::get(id)
            .values
            .iter()
            .find(|v| v.name == name)
            .unwrap()
            .derived
    };
    assert!(derived("cpu-baseline", "messages_per_s"));
    assert!(!derived("cpu-baseline", "cpu_seconds"));
    assert!(derived("littles-law", "error_c12"));
}

/// The corrections of issue 9 ("Evidence that says exactly what was measured"), kept fixed.
#[test]
fn evidence_says_exactly_what_was_measured() {
    let e = evidence::get;
    for id in ["scenario-a", "cpu-baseline", "baseline-p999"] {
        let c = &e(id).context;
        assert!(
            c.contains("same machine") && !c.contains("another host"),
            "{id}: {c}"
        );
    }
    // p50 rose on 2 cores; 9 scenarios include the baseline.
    let p = e("p999-last-client");
    assert!(
        p.claim.contains("10-core") && p.claim.contains("2 cores"),
        "{}",
        p.claim
    );
    assert_eq!(p.value("incidents"), Some(8.0));
    // Little's law holds within 1.3% only at C = 16, 32, 64.
    let l = e("littles-law");
    assert!(
        l.claim.contains("-2.5%") && l.claim.contains("-14.4%"),
        "{}",
        l.claim
    );
    for (c, tps, p50, want) in [(8.0, 325.0, 24.0, -2.5), (12.0, 347.0, 29.6, -14.4)] {
        let w = 1000.0 * c / tps;
        let err = ((p50 - w) / w * 1000.0_f64).round() / 10.0;
        assert!((err - want).abs() < 1e-9, "C = {c}: {err}");
    }
    // The one-client-stops-the-hub wording and the 1 s jumps are seed 002's (parts 5, 11).
    for id in ["write-deadline", "hub-gap"] {
        let s = &e(id).source;
        assert!(s.seed.starts_with("002_"), "{id}");
        assert_eq!(s.part_label(), "parts 5 and 11", "{id}");
    }
    assert!(e("write-deadline").context.contains("10 shard writers"));
    assert!(e("scenario-c1")
        .claim
        .contains("24 of 100 rounds were received"));
    let push = e("push-latency");
    assert!(!push.context.contains("heartbeat"));
    assert!(push.source.part_label().contains('3'));
    assert!(e("cpu-baseline").context.contains("C1 paragraph"));
    // 001's lesson is its own numbers; "above the ceiling is a bug" is seed 003's.
    assert!(!e("capacity-ceiling").claim.contains("bug"));
    assert!(e("event-loop-lag").source.part_label() == "part 44");
    assert!(e("event-loop-block").value("lag_blocked").is_none());
    assert!(e("loss-dup-order").values.iter().all(|v| v.unit != "%"));
    assert_eq!(e("single-path").value("duplicates"), Some(50.0));
    // Details no article states.
    for (id, word) in [
        ("proxy-config", "nginx"),
        ("conn-ram", "4 KB"),
        ("retry-amplification", "gateway"),
        ("per-instance-multiplied", "8 times"),
    ] {
        let x = e(id);
        assert!(
            !x.context.contains(word) && !x.claim.contains(word),
            "{id} says `{word}`"
        );
    }
    // Checklists.
    let item = |id: &str| {
        checklist::find_item(id)
            .unwrap_or_else(|| panic!("no item {id}"))
            .1
            .clone()
    };
    let rc = item("real-cluster-run");
    assert!(rc.why.contains("getLock") && rc.evidence == ["cluster-only-failure"]);
    let lv = item("liveness-local");
    assert_eq!(lv.evidence, ["liveness-readiness"]);
    assert_eq!(e("liveness-readiness").source.part_label(), "part 27");
    let retry = item("one-retry-layer");
    for w in [
        "hedged requests",
        "per-call deadlines",
        "per-dependency p99",
    ] {
        assert!(retry.why.contains(w), "one-retry-layer: {w}");
    }
    assert_eq!(
        item("node-death-detection").why,
        "Hazelcast's default is 60 s."
    );
    assert!(item("tail-and-last-client").why.contains("2 cores"));
}
