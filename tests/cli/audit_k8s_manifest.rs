//! The Kubernetes Job and DaemonSet of docs/audit.md (`audit --netns` on a node, issue 40)
//! validated against the API's strict schemas (vendored: tests/fixtures/k8s/README.md), so
//! the manifest a user copies is one the API server accepts; a field the API does not have
//! fails the check.
use serde_json::Value;

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The ```yaml blocks of docs/audit.md whose `kind` is `kind`.
fn manifests(kind: &str) -> Vec<Value> {
    let doc = fixture("docs/audit.md");
    doc.split("```yaml\n")
        .skip(1)
        .filter_map(|b| b.split("\n```").next())
        .map(|y| serde_yaml::from_str::<Value>(y).expect("the block is YAML"))
        .filter(|v| v["kind"] == kind)
        .collect()
}

fn errors(schema: &str, doc: &Value) -> Vec<String> {
    let schema: Value =
        serde_json::from_str(&fixture(&format!("tests/fixtures/k8s/{schema}"))).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    v.iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn the_documented_job_and_daemonset_are_valid_api_objects() {
    for (kind, schema) in [
        ("Job", "job-batch-v1.schema.json"),
        ("DaemonSet", "daemonset-apps-v1.schema.json"),
    ] {
        let docs = manifests(kind);
        assert_eq!(docs.len(), 1, "one {kind} in docs/audit.md");
        let e = errors(schema, &docs[0]);
        assert!(e.is_empty(), "{kind}:\n{}", e.join("\n"));
        let spec = &docs[0]["spec"]["template"]["spec"];
        assert_eq!(spec["hostPID"], true, "{kind}: sees the pod's process");
        let args = spec["containers"][0]["args"].to_string();
        assert!(args.contains("rtcheck audit --netns"), "{kind}: {args}");
    }
}

#[test]
fn the_schema_check_can_fail() {
    let mut job = manifests("Job").remove(0);
    // A misspelt field and a wrong type: the strict schema refuses both.
    job["spec"]["template"]["spec"]["hostPid"] = Value::Bool(true);
    job["spec"]["backoffLimit"] = Value::from("none");
    let e = errors("job-batch-v1.schema.json", &job);
    assert!(e.iter().any(|m| m.contains("hostPid")), "{e:?}");
    assert!(e.iter().any(|m| m.contains("backoffLimit")), "{e:?}");
    let ds = manifests("DaemonSet").remove(0);
    assert!(
        !errors("job-batch-v1.schema.json", &ds).is_empty(),
        "a DaemonSet is not a Job"
    );
}
