//! Conventions every command shares: one-line usage errors with exit 2, help with examples,
//! version, and shell completions that the shells accept.
use crate::common;
use common::rtcheck;

#[test]
fn bad_flags_are_one_line_and_exit_2() {
    for args in [
        vec!["choose", "--connections", "abc"],
        vec!["audit", "--frob"],
        vec!["audit", "--format", "pdf"],
        vec!["choose", "--upstream", "sideways"],
        vec!["--color", "sometimes", "audit"],
    ] {
        let out = rtcheck().args(&args).env("NO_COLOR", "1").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("rtcheck: error: "), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn a_misspelled_flag_or_subcommand_gets_did_you_mean() {
    for (args, want) in [
        (
            vec!["audit", "--conections", "5"],
            "did you mean `--connections`?",
        ),
        (vec!["audti"], "did you mean `audit`?"),
        (vec!["bench", "fanot"], "did you mean `fanout`?"),
    ] {
        let out = rtcheck().args(&args).env("NO_COLOR", "1").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn counts_are_taken_as_people_write_them() {
    let connections = |n: &str| {
        let out = rtcheck()
            .args(["choose", "--format", "json", "--connections", n])
            .args(["--visible-within", "1s", "--upstream", "none"])
            .args(["--loss", "replaceable"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{n}: {}", String::from_utf8_lossy(&out.stderr)));
        v["profile"]["connections"].as_u64().unwrap()
    };
    assert_eq!(connections("20k"), 20_000);
    assert_eq!(connections("1.5M"), 1_500_000);
    assert_eq!(connections("20_000"), 20_000);
    for bad in ["1.2345k", "0", "-3", "lots"] {
        let out = rtcheck()
            .args(["choose", "--connections", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("--connections"), "{bad}: {err}");
    }
    // And in a profile's YAML.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.yaml");
    std::fs::write(
        &p,
        "connections: 20k\nmachines: 2\nvisible_within: 1s\nupstream: none\nloss: replaceable\n",
    )
    .unwrap();
    let out = rtcheck()
        .args(["choose", "--format", "json", "--answers"])
        .arg(&p)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["profile"]["connections"], 20_000);
}

#[test]
fn help_has_examples_and_exit_codes_and_version_matches_the_crate() {
    let out = rtcheck().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8(out.stdout).unwrap();
    for sub in [
        "choose",
        "audit",
        "evidence",
        "checklist",
        "serve",
        "bench",
        "verify",
        "completions",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(sub)),
            "{sub} missing from --help"
        );
    }
    assert!(help.contains("Exit codes:"));
    let out = rtcheck().arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("rtcheck {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn bash_completion_is_valid_bash() {
    let out = rtcheck().args(["completions", "bash"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("rtcheck.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(check.success(), "bash -n rejected the completion script");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("complete -F"), "no `complete` registration");
}

/// A command or flag whose cargo feature this build left out still parses (its help is
/// the same in every build) and is refused in one line naming the feature, exit 2. With
/// the feature it runs: here to its own one-line error about a dead target, where that is
/// quick (the browser and a serve node are left to their own tests).
#[test]
fn a_command_whose_feature_is_left_out_says_so_in_one_line() {
    let dead = format!("http://127.0.0.1:{}/", common::free_port());
    let dead_redis = format!("redis://127.0.0.1:{}/", common::free_port());
    let cases: [(&str, bool, Vec<&str>, bool); 4] = [
        (
            "browser",
            cfg!(feature = "browser"),
            vec!["probe", "--browser", &dead],
            false,
        ),
        (
            "redis",
            cfg!(feature = "redis"),
            vec!["bench", "cluster", "--redis", &dead_redis],
            true,
        ),
        (
            "redis",
            cfg!(feature = "redis"),
            vec!["serve", "--listen", "127.0.0.1:0", "--redis", &dead_redis],
            false,
        ),
        (
            "hyper",
            cfg!(feature = "hyper"),
            vec!["load", "--engine", "hyper", &dead],
            true,
        ),
    ];
    for (feature, built, args, quick) in cases {
        let command = &args[..args.len() - 1];
        let help = rtcheck()
            .args(
                command
                    .iter()
                    .filter(|a| a.starts_with(char::is_alphabetic)),
            )
            .arg("--help")
            .output()
            .unwrap();
        assert_eq!(help.status.code(), Some(0), "{args:?}");
        let flag = args
            .iter()
            .find(|a| a.starts_with("--") && **a != "--listen");
        if let Some(flag) = flag {
            let help = String::from_utf8_lossy(&help.stdout);
            assert!(help.contains(flag), "{args:?}: {help}");
        }
        if built && !quick {
            continue;
        }
        let out = rtcheck()
            .args(&args)
            .env_remove("RTCHECK_REDIS_URL")
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        let refusal = format!(
            "this rtcheck was built without the \"{feature}\" feature (cargo install --path . --features {feature})"
        );
        assert_eq!(err.contains(&refusal), !built, "{args:?}: {err}");
    }
}
