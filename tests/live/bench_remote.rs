//! `--allow-remote` on `bench fanout` and `verify delivery` (issue 37): a server on a
//! non-loopback address (10.9.0.1 on a veth inside a private network namespace the test
//! made) gets nothing without the flag, which the one-line error names; the kernel's own
//! count of accepted TCP connections (PassiveOpens in the namespace's /proc/net/snmp) is
//! the counter. With the flag the first line says what will be sent and the run measures
//! (bench fanout on `rtcheck serve`; verify delivery on a python3-websockets chat hub,
//! tests/fixtures/foreign/hostile_hub.py in its honest mode).
use crate::common;
use serde_json::Value;

const SCRIPT: &str = r#"
set -u
B=$1
ip link set lo up
ip link add v0 type veth peer name v1
ip addr add 10.9.0.1/24 dev v0
ip link set v0 up && ip link set v1 up
D=$(mktemp -d)
export RTCHECK_CONTROL_TOKEN=t0ken-remote-test
timeout 120 $B serve --listen 10.9.0.1:0 --addr-file $D/addr --wait-start --rounds 20 \
  --rate 20 >$D/serve.log 2>&1 &
SP=$!
trap 'kill $SP 2>/dev/null; wait $SP 2>/dev/null; rm -rf $D' EXIT
for i in $(seq 1 600); do [ -s $D/addr ] && break; sleep 0.1; done
A=$(head -1 $D/addr)
opens() {
  awk '/^Tcp:/ {n++; if (n==1) for (i=1;i<=NF;i++) h[i]=$i;
       else for (i=1;i<=NF;i++) if (h[i]=="PassiveOpens") print $i}' /proc/net/snmp
}
echo "before=$(opens)"
timeout 60 $B bench fanout --server "ws://$A/ws?token=s3cret" --connections 20 --rounds 20 \
  --rate 20 --format json >$D/out1 2>$D/err1
echo "fanout_rc=$?"
echo "fanout_err=$(tr '\n' ' ' <$D/err1)"
echo "fanout_out=$(wc -c <$D/out1)"
timeout 60 $B verify delivery --server "ws://$A/ws" --publish ws --format json >$D/out3 2>$D/err3
echo "delivery_rc=$?"
echo "delivery_err=$(tr '\n' ' ' <$D/err3)"
echo "after_refused=$(opens)"
timeout 120 $B bench fanout --server "ws://$A/ws?token=s3cret" --allow-remote --connections 20 \
  --rounds 20 --rate 20 --format json >$D/out2 2>$D/err2
echo "run_rc=$?"
echo "run_err=$(tr '\n' ' ' <$D/err2)"
echo "after_run=$(opens)"
echo "json=$(tr -d '\n' <$D/out2)"
"#;

fn field<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {key} in: {out}"))
}

#[test]
fn a_remote_target_gets_nothing_without_consent_and_is_measured_with_it() {
    let _timed = common::timed();
    let out = common::in_netns(SCRIPT, &[]);
    let n = |k: &str| -> u64 { field(&out, k).trim().parse().expect(k) };
    assert_eq!(n("before"), 0, "{out}");
    // Refused before any packet: exit 2, one line naming the flag, no report.
    assert_eq!(field(&out, "fanout_rc"), "2", "{out}");
    let err = field(&out, "fanout_err");
    assert!(err.contains("--allow-remote"), "{err}");
    assert!(
        !err.contains("s3cret"),
        "a secret query value printed: {err}"
    );
    assert_eq!(field(&out, "fanout_out").trim(), "0", "{out}");
    assert_eq!(field(&out, "delivery_rc"), "2", "{out}");
    assert!(
        field(&out, "delivery_err").contains("--allow-remote"),
        "{out}"
    );
    assert_eq!(
        n("after_refused"),
        0,
        "the server accepted a connection: {out}"
    );
    // With consent: the first line is the plan, then the run measures every client.
    assert_eq!(field(&out, "run_rc"), "0", "{out}");
    let plan = field(&out, "run_err");
    assert!(plan.starts_with("remote target ws://10.9.0.1:"), "{plan}");
    for want in ["20 connections", "20 msg/s", "planned", "Ctrl-C"] {
        assert!(plan.contains(want), "{want}: {plan}");
    }
    assert!(!plan.contains("s3cret"), "{plan}");
    assert!(n("after_run") >= 20, "{out}");
    let v: Value = serde_json::from_str(field(&out, "json")).unwrap();
    let s = &v["scenarios"][0];
    assert_eq!(s["valid"], true, "{s:#}");
    assert_eq!(s["accounting"]["received"], 400, "{s:#}");
}

const DELIVERY: &str = r#"set -u
B=$1
HUB=$2
ip link set lo up
ip link add v0 type veth peer name v1
ip addr add 10.9.0.1/24 dev v0
ip link set v0 up && ip link set v1 up
D=$(mktemp -d)
PORT=38123 HOST=10.9.0.1 MODE=honest timeout 120 /usr/bin/python3 $HUB >$D/hub.log 2>&1 &
HP=$!
trap 'kill $HP 2>/dev/null; wait $HP 2>/dev/null; rm -rf $D' EXIT
for i in $(seq 1 300); do (exec 3<>/dev/tcp/10.9.0.1/38123) 2>/dev/null && break; sleep 0.1; done
timeout 120 $B verify delivery --server ws://10.9.0.1:38123/ --publish ws --allow-remote \
  --format json --rate 20 --size 256 --max-disconnect 1500ms --connections 4 >$D/out 2>$D/err
echo "rc=$?"
echo "first=$(head -1 $D/err)"
echo "err=$(tr '\n' ' ' <$D/err)"
echo "json=$(tr -d '\n' <$D/out)"
"#;

#[test]
fn verify_delivery_measures_a_remote_hub_with_consent() {
    let _timed = common::timed();
    let hub = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/foreign/hostile_hub.py");
    let out = common::in_netns(DELIVERY, &[hub.to_str().unwrap()]);
    // A hub without resume loses what a client missed while away: findings, exit 1 (a
    // measurement, not an error).
    assert_eq!(field(&out, "rc"), "1", "{out}");
    let first = field(&out, "first");
    assert!(
        first.starts_with("remote target ws://10.9.0.1:38123/ (10.9.0.1:38123):"),
        "{out}"
    );
    assert!(
        field(&out, "err").contains("Ctrl-C stops every connection"),
        "{out}"
    );
    let v: Value = serde_json::from_str(field(&out, "json")).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert!(!runs.is_empty(), "{v:#}");
    for r in runs {
        assert!(r["received"].as_u64().unwrap() > 0, "{r:#}");
    }
    assert!(v["publisher"]["sent"].as_u64().unwrap() > 0, "{v:#}");
}
