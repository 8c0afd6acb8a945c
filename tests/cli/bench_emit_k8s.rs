//! `bench fanout --emit k8s-job N` (issue 37): an Indexed Job printed, nothing applied.
//! Parsed back: the completion index is the shard, the pods avoid each other's nodes,
//! widen their port range and raise their fd limit; the --server URL (a token in its
//! query), the --coordinate URL (a Redis password) and a POST --publish URL (a token)
//! are not in the manifest but in its Secret; the comments fit 80 columns; the Job is a valid API
//! object by the strict batch/v1 schema vendored in tests/fixtures/k8s/ (issue 40's).
use crate::common;
use serde_json::Value;

#[test]
fn an_indexed_job_runs_the_shards_and_holds_no_secret() {
    let out = common::rtcheck()
        .args([
            "bench",
            "fanout",
            "--server",
            "wss://staging.example.com/ws?token=s3cret",
        ])
        .args([
            "--publish",
            "POST https://staging.example.com/publish?token=pubs3cret",
            "--connections",
            "100000",
            "--rounds",
            "100",
        ])
        .args([
            "--coordinate",
            "redis://:redisPa55@redis.internal:6379",
            "--run-id",
            "r1",
        ])
        .args([
            "--emit",
            "k8s-job",
            "4",
            "--save-json",
            "/nonexistent/x.json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for secret in [
        "s3cret",
        "staging.example.com",
        "redisPa55",
        "redis.internal",
    ] {
        assert!(!text.contains(secret), "{secret}: {text}");
    }
    let (steps, manifest) = text.split_once("---\n").expect("steps, then the manifest");
    assert!(
        steps
            .lines()
            .all(|l| l.starts_with('#') && l.chars().count() <= 80),
        "{steps}"
    );
    assert!(steps.contains("rtcheck bench merge"), "{steps}");
    let j: Value = serde_yaml::from_str(manifest).unwrap();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/k8s/job-batch-v1.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let errors: Vec<String> = jsonschema::validator_for(&schema)
        .expect("the schema compiles")
        .iter_errors(&j)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{manifest}");
    assert_eq!(
        (j["apiVersion"].as_str(), j["kind"].as_str()),
        (Some("batch/v1"), Some("Job"))
    );
    let spec = &j["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(
        (spec["completions"].as_u64(), spec["parallelism"].as_u64()),
        (Some(4), Some(4))
    );
    let pod = &spec["template"]["spec"];
    let anti =
        &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(anti["topologyKey"], "kubernetes.io/hostname");
    // The selector matches the pods' own label: one shard per node.
    let run = &spec["template"]["metadata"]["labels"]["rtcheck.dev/run"];
    assert_eq!(
        &anti["labelSelector"]["matchLabels"]["rtcheck.dev/run"],
        run
    );
    assert_eq!(
        pod["securityContext"]["sysctls"][0]["name"],
        "net.ipv4.ip_local_port_range"
    );
    let c = &pod["containers"][0];
    let script = c["command"][2].as_str().unwrap();
    for want in [
        "ulimit -n 29096",
        "--shard $((JOB_COMPLETION_INDEX + 1))/4",
        "--server \"$RTCHECK_SERVER\"",
        "--coordinate \"$RTCHECK_COORDINATE\"",
        "--publish \"$RTCHECK_PUBLISH\"",
        "--format json",
        "--allow-remote",
    ] {
        assert!(script.contains(want), "{want}: {script}");
    }
    // Where this process's output went is not the pods' business.
    assert!(
        !script.contains("save-json") && !script.contains("--emit"),
        "{script}"
    );
    let keys: Vec<&str> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["valueFrom"]["secretKeyRef"]["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["server-url", "coordinate-url", "publish"]);
    assert!(
        steps.contains("--from-literal=coordinate-url=")
            && steps.contains("--from-literal=publish="),
        "{steps}"
    );
}

#[test]
fn what_the_manifest_cannot_hold_is_refused_in_one_line() {
    for (extra, want) in [
        (
            &["--emit", "k8s-job", "2", "--publish", "ws", "-H", "X: y"][..],
            "-H and --subscribe",
        ),
        (
            &["--emit", "k8s-job", "2", "--publish", "ws"],
            "--coordinate",
        ),
        (&["--emit", "k8s-job", "0"], "1..="),
        (
            &[
                "--emit",
                "k8s-job",
                "2",
                "--coordinate",
                "redis://r:6379",
                "--threshold",
                "p99 < 1s",
            ],
            "bench merge",
        ),
        (
            &[
                "--emit",
                "k8s-job",
                "2",
                "--coordinate",
                "redis://r:6379",
                "--pid",
                "1",
            ],
            "--pid",
        ),
        (
            &[
                "--emit",
                "k8s-job",
                "2",
                "--coordinate",
                "redis://r:6379",
                "--connect-to",
                "10.0.0.1:80",
            ],
            "--connect-to",
        ),
        (
            &[
                "--emit",
                "k8s-job",
                "2",
                "--coordinate",
                "redis://r:6379",
                "--ca",
                "ca.pem",
            ],
            "--ca is a file on this host",
        ),
        (
            &[
                "--emit",
                "k8s-job",
                "2",
                "--coordinate",
                "redis://r:6379",
                "--source-ip",
                "10.0.0.2",
            ],
            "--source-ip lists this host",
        ),
        (&["--emit", "helm", "2"], "k8s-job"),
    ] {
        let out = common::rtcheck()
            .args(["bench", "fanout", "--server", "ws://10.0.0.1:80/ws"])
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(
            out.stdout.is_empty() && err.contains(want),
            "{extra:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
