//! Shards and `bench merge` (issue 37). Hosts are network namespaces on a bridge the test
//! makes inside a private network and mount namespace (`unshare -n -m`; 10.9.0.x only
//! there, all removed on exit): `rtcheck serve` on the bridge, two load namespaces whose
//! `ip_local_port_range` is narrowed to 700 ports. One namespace cannot hold 1,200
//! connections and says why (ports); two shards hold them and merge to one valid run whose
//! count is the sum and whose percentiles equal those of the union of the raw samples
//! (the load generator's test-only RTCHECK_TEST_RAW_SAMPLES output); a shard killed with
//! SIGKILL leaves the merge invalid. The two shards meet on Debian's redis-server
//! (`--coordinate`); the killed run uses `--start-at`. `--source-ip` with two addresses
//! lets the one namespace hold all 1,200.
use crate::common;
use serde_json::Value;
use std::process::Command;

const SCRIPT: &str = r#"set -u
B=$1
D=$(mktemp -d)
ip link set lo up
ip link add br0 type bridge && ip addr add 10.9.0.1/24 dev br0 && ip link set br0 up
for i in 1 2; do
  ip netns add l$i
  ip link add vh$i type veth peer name vl$i
  ip link set vl$i netns l$i
  ip link set vh$i master br0 && ip link set vh$i up
  ip -n l$i link set lo up
  ip -n l$i addr add 10.9.0.1$i/24 dev vl$i && ip -n l$i link set vl$i up
  ip netns exec l$i sysctl -qw net.ipv4.ip_local_port_range="40000 40699"
done
export RTCHECK_CONTROL_TOKEN=t0ken-shard-test
cleanup() { kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; ip netns del l1; ip netns del l2; rm -rf $D; }
trap cleanup EXIT
serve() { # $1: tag
  rm -f $D/addr
  timeout 120 $B serve --listen 10.9.0.1:0 --addr-file $D/addr --wait-start --rounds 20 --rate 10 >$D/serve-$1.log 2>&1 &
  for i in $(seq 1 600); do [ -s $D/addr ] && break; sleep 0.1; done
  A=$(head -1 $D/addr)
}
COMMON="--allow-remote --connections 1200 --rounds 20 --rate 10 --format json --connect-timeout 60s"
# One namespace alone: 700 ports for 1,200 connections.
serve one
ip netns exec l1 timeout 120 $B bench fanout --server ws://$A/ws $COMMON >$D/one.json 2>$D/one.err
echo "one_rc=$?"
echo "one=$(tr -d '\n' <$D/one.json)"
# One namespace with two source addresses: each its own 700 ports.
ip -n l1 addr add 10.9.0.21/24 dev vl1
serve sources
ip netns exec l1 timeout 120 $B bench fanout --server ws://$A/ws $COMMON \
  --source-ip 10.9.0.11,10.9.0.21 >$D/src.json 2>$D/src.err
echo "src_rc=$?"
echo "src=$(tr -d '\n' <$D/src.json)"
# Two shards, coordinated through Redis (Debian's redis-server) on the bridge.
redis-server --bind 10.9.0.1 --port 6390 --save '' --appendonly no --protected-mode no \
  --dir $D >$D/redis.log 2>&1 &
for i in $(seq 1 300); do (exec 3<>/dev/tcp/10.9.0.1/6390) 2>/dev/null && break; sleep 0.1; done
serve two
T0=$(date +%s)
PIDS=
for i in 1 2; do
  RTCHECK_TEST_RAW_SAMPLES=$D/raw$i ip netns exec l$i timeout 120 $B bench fanout --server ws://$A/ws $COMMON \
    --shard $i/2 --coordinate redis://10.9.0.1:6390 --run-id shards-test \
    --save-json $D/s$i.json >/dev/null 2>$D/s$i.err &
  PIDS="$PIDS $!"
done
wait $PIDS
T2=$(( $(date +%s) - T0 ))
echo "s1_err=$(tr '\n' ' ' <$D/s1.err)"
echo "s2_err=$(tr '\n' ' ' <$D/s2.err)"
echo "s2=$(tr -d '\n' <$D/s2.json)"
$B bench merge $D/s1.json $D/s2.json --format json >$D/merged.json 2>$D/merge.err
echo "merge_rc=$?"
echo "merge_err=$(tr '\n' ' ' <$D/merge.err)"
echo "merged=$(tr -d '\n' <$D/merged.json)"
# A shard of another run (its run named C): the merge is invalid, never judged as one.
sed 's/"name": *"external"/"name": "C"/' $D/s2.json >$D/s2c.json
$B bench merge $D/s1.json $D/s2c.json --format json >$D/mixed.json 2>/dev/null
echo "mixed_rc=$?"
echo "mixed=$(tr -d '\n' <$D/mixed.json)"
$B bench merge $D/s1.json $D/s2.json --threshold 'external.p999 < 0ms' >/dev/null 2>&1
echo "tight_rc=$?"
$B bench merge $D/s1.json $D/s2.json --threshold 'external.p999 < 60s' --format junit >/dev/null 2>&1
echo "loose_rc=$?"
echo "raw=$(cat $D/raw1 $D/raw2 2>/dev/null | tr '\n' ' ')"
# Shard 2 killed with SIGKILL once connected: no result; the merge must not pass.
serve killed
# The start leaves both shards time to connect their 600 clients: the two-shard run above
# (connect, barrier, 2 s of rounds) took T2 s on this host under its present load, so the
# margin follows the load: 10 s plus twice T2, at most 60 s (inside the shards' 120 s
# bound). A fixed 45 s was ~40 s of idle waiting on a quiet host.
M=$(( 10 + 2 * T2 )); [ "$M" -gt 60 ] && M=60
echo "killed_margin=$M"
AT=$(( $(date +%s) + M ))
ip netns exec l1 timeout 120 $B bench fanout --server ws://$A/ws $COMMON --shard 1/2 \
  --start-at $AT --save-json $D/k1.json >/dev/null 2>$D/k1.err &
K1=$!
ip netns exec l2 $B bench fanout --server ws://$A/ws $COMMON --shard 2/2 --start-at $AT \
  --save-json $D/k2.json >/dev/null 2>$D/k2.err &
K2=$!
# Killed once its 600 clients are connected (seen by ss in its namespace), before the
# start: polled with a generous bound, not a fixed sleep that a loaded box outruns.
HELD=0
for i in $(seq 1 400); do
  HELD=$(ip netns exec l2 ss -tnH state established "( dst $A )" | wc -l)
  [ "$HELD" -ge 600 ] && break
  sleep 0.1
done
echo "killed_held=$HELD"
kill -9 $K2
wait $K1
$B bench merge $D/k1.json --format json >$D/kmerged.json 2>$D/kmerge.err
echo "killed_rc=$?"
echo "killed_file=$([ -e $D/k2.json ] && echo yes || echo no)"
echo "killed=$(tr -d '\n' <$D/kmerged.json)"
"#;

fn field<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {key} in: {out}"))
}

fn json(out: &str, key: &str) -> Value {
    serde_json::from_str(field(out, key)).unwrap_or_else(|e| panic!("{key}: {e}: {out}"))
}

#[test]
fn two_shards_hold_what_one_namespace_cannot_and_merge_exactly() {
    let _timed = common::timed();
    let out = Command::new("unshare")
        .args([
            "-n",
            "-m",
            "--propagation",
            "private",
            "bash",
            "-c",
            SCRIPT,
            "shards",
        ])
        .arg(common::binary())
        .env_remove("RTCHECK_CONTROL_TOKEN")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "needs root (unshare -n -m, ip netns): {text} {err}"
    );
    // One namespace: 700 ports for 1,200 connections: invalid, the reason named.
    assert_eq!(field(&text, "one_rc"), "1", "{text}");
    let one = json(&text, "one");
    let run = &one["scenarios"][0];
    assert_eq!(run["valid"], false, "{run:#}");
    let conn = run["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "connections")
        .unwrap();
    assert_eq!(conn["status"], "fail");
    assert!(
        conn["detail"].as_str().unwrap().contains("ports"),
        "{conn:#}"
    );
    // The same namespace with two source addresses holds them all.
    assert_eq!(field(&text, "src_rc"), "0", "{text}");
    let src = json(&text, "src");
    assert_eq!(src["valid"], true, "{src:#}");
    assert_eq!(src["scenarios"][0]["accounting"]["received"], 1200 * 20);
    // Two shards: one valid run, the counts summed.
    assert_eq!(field(&text, "merge_rc"), "0", "{text}");
    let m = json(&text, "merged");
    let r = &m["scenarios"][0];
    assert_eq!(m["valid"], true, "{m:#}");
    assert_eq!(r["connections"], 1200, "{r:#}");
    assert_eq!(r["accounting"]["received"], 1200 * 20, "{r:#}");
    assert_eq!(r["samples"], 1200 * 20, "{r:#}");
    // The merged run keeps the shards' own name: what `bench fanout --server` calls its
    // run, so a threshold reads the same on a shard's report and on the merge.
    let s2 = json(&text, "s2");
    assert_eq!(s2["scenarios"][0]["name"], "external", "{s2:#}");
    assert_eq!(r["name"], s2["scenarios"][0]["name"], "{r:#}");
    // Shards of runs of another name: invalid, the shard and both names said.
    assert_eq!(field(&text, "mixed_rc"), "1", "{text}");
    let mixed = json(&text, "mixed");
    assert_eq!(mixed["valid"], false, "{mixed:#}");
    let notes = mixed["scenarios"][0]["notes"].to_string();
    assert!(
        notes.contains("ran `C`, the first file `external`"),
        "{notes}"
    );
    // --threshold is judged on the merged run.
    assert_eq!(field(&text, "tight_rc"), "1", "{text}");
    assert_eq!(field(&text, "loose_rc"), "0", "{text}");
    // Coordinated: the shard states its clock against Redis's, with its bound.
    assert_eq!(s2["shard"]["index"], 2, "{text}");
    let clock = &s2["clock"];
    assert_eq!(clock["within_tolerance"], true, "{clock:#}");
    assert!(clock["uncertainty_ms"].as_f64().unwrap() > 0.0, "{clock:#}");
    // One host's clock: the offset is within its bound (plus TIME's 1 us step).
    let (o, u) = (
        clock["offset_ms"].as_f64().unwrap(),
        clock["uncertainty_ms"].as_f64().unwrap(),
    );
    assert!(o.abs() <= u + 0.01, "{clock:#}");
    // The merged percentiles are the union's, at the histogram's precision.
    let mut union = rtcheck::bench::stats::new_hist();
    let raw: Vec<u64> = field(&text, "raw")
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(raw.len(), 1200 * 20);
    for v in raw {
        union.record(v).unwrap();
    }
    for (key, q) in [("p50_ms", 0.5), ("p99_ms", 0.99), ("p999_ms", 0.999)] {
        let want = union.value_at_quantile(q) as f64 / 1000.0;
        assert_eq!(r[key].as_f64().unwrap(), want, "{key}");
    }
    assert_eq!(r["max_ms"].as_f64().unwrap(), union.max() as f64 / 1000.0);
    // A shard killed with SIGKILL: no result, and the merge is invalid, never a pass.
    let held: u64 = field(&text, "killed_held").parse().unwrap();
    assert!(
        held >= 600,
        "shard 2 was killed before it connected: {text}"
    );
    assert_eq!(field(&text, "killed_file"), "no", "{text}");
    assert_eq!(field(&text, "killed_rc"), "1", "{text}");
    let k = json(&text, "killed");
    assert_eq!(k["valid"], false, "{k:#}");
    let notes = k["scenarios"][0]["notes"].to_string();
    assert!(notes.contains("shard 2/2 missing"), "{notes}");
    assert!(k["scenarios"][0]["p999_ms"].is_null(), "{k:#}");
}
