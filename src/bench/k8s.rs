//! `bench fanout --emit k8s-job N` (issue 37): the shards as a Kubernetes Indexed Job
//! (batch/v1), printed, never applied. The completion index (0-based) becomes `--shard
//! INDEX+1/N`; pods spread over nodes (required anti-affinity on the job's own label);
//! each pod widens `net.ipv4.ip_local_port_range` (a namespaced, safe sysctl) and raises
//! its open-files limit before it starts. The --server URL, the --coordinate URL and a
//! `--publish 'POST URL'` come from a Secret the user creates (they may carry a token or
//! a password): never in the manifest.
use serde_json::{json, Value};

/// What the Job runs.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub name: String,
    pub image: String,
    pub shards: u32,
    /// Connections one shard holds (the largest share): sizes its fd limit.
    pub connections_per_shard: u64,
    /// bench fanout's flags, shell-quoted, without --server, --coordinate, a POST
    /// --publish, --shard, --emit or outputs.
    pub args: Vec<String>,
    /// `--publish 'POST URL'` was given: it comes from the Secret too.
    pub publish_secret: bool,
}

/// The Secret and its key holding the --server URL.
pub const SECRET: &str = "rtcheck-bench";
pub const SECRET_KEY: &str = "server-url";
/// The Secret's key holding the --coordinate URL (a Redis password in its userinfo).
pub const COORDINATE_KEY: &str = "coordinate-url";
/// The Secret's key holding `--publish 'POST URL'` (a token in its query).
pub const PUBLISH_KEY: &str = "publish";
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
         --coordinate \"$RTCHECK_COORDINATE\"{publish} \
         --allow-remote --shard $((JOB_COMPLETION_INDEX + 1))/{n} --format json {args} \
         2>/dev/termination-log",
        fd = fd_limit(s.connections_per_shard),
        n = s.shards,
        publish = if s.publish_secret {
            " --publish \"$RTCHECK_PUBLISH\""
        } else {
            ""
        },
        args = s.args.join(" ")
    );
    let from_secret = |name: &str, key: &str| json!({"name": name, "valueFrom": {"secretKeyRef": {"name": SECRET, "key": key}}});
    let mut env = vec![
        from_secret("RTCHECK_SERVER", SECRET_KEY),
        from_secret("RTCHECK_COORDINATE", COORDINATE_KEY),
    ];
    if s.publish_secret {
        env.push(from_secret("RTCHECK_PUBLISH", PUBLISH_KEY));
    }
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
                        "env": env
                    }]
                }
            }
        }
    })
}

/// The steps around the manifest: the Secret, apply, the merge (as comments).
pub fn steps(s: &JobSpec) -> String {
    format!(
        "# 1. the --server and --coordinate URLs{and_publish} as a Secret (they may\n\
         #    carry a token or a password):\n\
         #    kubectl create secret generic {SECRET} \\\n\
         #      --from-literal={SECRET_KEY}='URL' \\\n\
         #      --from-literal={COORDINATE_KEY}='REDIS_URL'{publish_literal}\n\
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
        fd = fd_limit(s.connections_per_shard),
        and_publish = if s.publish_secret {
            ", the POST URL"
        } else {
            ""
        },
        publish_literal = if s.publish_secret {
            format!(" \\\n#      --from-literal={PUBLISH_KEY}='POST URL'")
        } else {
            String::new()
        },
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
            publish_secret: true,
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
        assert!(
            cmd.contains("--coordinate \"$RTCHECK_COORDINATE\"")
                && cmd.contains("--publish \"$RTCHECK_PUBLISH\""),
            "{cmd}"
        );
        let env = &j["spec"]["template"]["spec"]["containers"][0]["env"];
        assert_eq!(env[1]["valueFrom"]["secretKeyRef"]["key"], COORDINATE_KEY);
        assert_eq!(env[2]["valueFrom"]["secretKeyRef"]["key"], PUBLISH_KEY);
        let st = steps(&s);
        assert!(
            st.contains(PUBLISH_KEY) && st.contains(COORDINATE_KEY),
            "{st}"
        );
    }
}
