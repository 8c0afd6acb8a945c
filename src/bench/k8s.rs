//! `bench fanout --emit k8s-job N` (issue 37): the shards as a Kubernetes Indexed Job
//! (batch/v1), printed, never applied. The completion index (0-based) becomes `--shard
//! INDEX+1/N`; pods spread over nodes (required anti-affinity on the job's own label);
//! each pod widens `net.ipv4.ip_local_port_range` (a namespaced, safe sysctl) and raises
//! its open-files limit before it starts. The --server URL comes from a Secret the user
//! creates (it may carry a token): never in the manifest.
use serde_json::{json, Value};

/// What the Job runs.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub name: String,
    pub image: String,
    pub shards: u32,
    /// Connections one shard holds (the largest share): sizes its fd limit.
    pub connections_per_shard: u64,
    /// bench fanout's flags, shell-quoted, without --server, --shard, --emit or outputs.
    pub args: Vec<String>,
}

/// The Secret and its key holding the --server URL.
pub const SECRET: &str = "rtcheck-bench";
pub const SECRET_KEY: &str = "server-url";
/// The range audit's ephemeral-ports fix sets (below it: listeners).
pub const PORT_RANGE: &str = "10240 65535";

/// Open files a shard needs: one per connection, plus the process's own.
pub fn fd_limit(connections: u64) -> u64 {
    connections + 4096
}

/// A word for `sh -c`: single-quoted unless plain.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The Indexed Job.
pub fn job(s: &JobSpec) -> Value {
    let script = format!(
        "ulimit -n {fd} && exec rtcheck bench fanout --server \"$RTCHECK_SERVER\" \
         --allow-remote --shard $((JOB_COMPLETION_INDEX + 1))/{n} --format json {args} \
         2>/dev/termination-log",
        fd = fd_limit(s.connections_per_shard),
        n = s.shards,
        args = s.args.join(" ")
    );
    let labels = json!({"app.kubernetes.io/name": "rtcheck-bench", "rtcheck.dev/run": s.name});
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": s.name, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": s.shards,
            "parallelism": s.shards,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": {
                        "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": PORT_RANGE}]
                    },
                    "affinity": {"podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{
                            "labelSelector": {"matchLabels": {"rtcheck.dev/run": s.name}},
                            "topologyKey": "kubernetes.io/hostname"
                        }]
                    }},
                    "containers": [{
                        "name": "rtcheck",
                        "image": s.image,
                        "command": ["sh", "-c", script],
                        "env": [{
                            "name": "RTCHECK_SERVER",
                            "valueFrom": {"secretKeyRef": {"name": SECRET, "key": SECRET_KEY}}
                        }]
                    }]
                }
            }
        }
    })
}

/// The steps around the manifest: the Secret, apply, the merge (as comments).
pub fn steps(s: &JobSpec) -> String {
    format!(
        "# 1. the --server URL (it may carry a token) as a Secret:\n\
         #    kubectl create secret generic {SECRET} --from-literal={SECRET_KEY}='URL'\n\
         # 2. kubectl apply -f THIS_FILE, then wait for it:\n\
         #    kubectl wait --for=condition=complete job/{name} --timeout=1h\n\
         # 3. each shard's JSON (its stdout; stderr is the pod's termination message),\n\
         #    then one report:\n\
         #    for p in $(kubectl get pods -l rtcheck.dev/run={name} -o name); do\n\
         #      kubectl logs \"$p\" > \"${{p#pod/}}.json\"; done\n\
         #    rtcheck bench merge {name}-*.json\n\
         # Nodes must allow the sysctl ({PORT_RANGE}) and an open-files hard limit of at\n\
         # least {fd} (the container runtime's default is usually 1048576).\n",
        name = s.name,
        fd = fd_limit(s.connections_per_shard)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_is_the_shard_and_no_url_is_in_the_manifest() {
        let s = JobSpec {
            name: "rtcheck-bench".into(),
            image: "rtcheck:latest".into(),
            shards: 4,
            connections_per_shard: 25_000,
            args: vec!["--connections".into(), "100000".into(), shell_quote("a b")],
        };
        let j = job(&s);
        assert_eq!(j["spec"]["completionMode"], "Indexed");
        assert_eq!(j["spec"]["completions"], 4);
        let cmd = j["spec"]["template"]["spec"]["containers"][0]["command"][2]
            .as_str()
            .unwrap();
        assert!(
            cmd.contains("--shard $((JOB_COMPLETION_INDEX + 1))/4"),
            "{cmd}"
        );
        assert!(
            cmd.contains("ulimit -n 29096") && cmd.contains("'a b'"),
            "{cmd}"
        );
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
