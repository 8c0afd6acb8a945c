//! Every `--help` and every subcommand's text output fit the width: piped, 80 columns
//! (help: COLUMNS when given); on a 120-column terminal (a pty), 120. No table cell ends in
//! "…" over an id or a number, and no id or command is split across lines.
use crate::common;
use clap::CommandFactory;
use std::process::{Command, Output};
use std::time::Duration;

fn run(args: &[&str], columns: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.args(args).env("NO_COLOR", "1").env_remove("COLUMNS");
    if let Some(c) = columns {
        cmd.env("COLUMNS", c);
    }
    cmd.output().expect("run rtcheck")
}

/// One unbreakable token on its own line: the only thing allowed past the width. A shell
/// command is not: it breaks between words with ` \` continuations (issue 35 item 7).
fn is_command_line(l: &str) -> bool {
    !l.trim().contains(' ')
}

/// Lines of `text` wider than `width`, with their widths, for the failure message.
fn too_wide(text: &str, width: usize) -> Vec<String> {
    text.lines()
        .filter(|l| l.chars().count() > width && !is_command_line(l))
        .map(|l| format!("{:>3} | {l}", l.chars().count()))
        .collect()
}

/// Every visible (sub)command path: `[]`, `["choose"]`, `["bench", "fanout"]`...
fn command_paths(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(prefix.clone());
    for sc in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sc.get_name() == "help" {
            continue;
        }
        let mut p = prefix.clone();
        p.push(sc.get_name().to_string());
        command_paths(sc, p, out);
    }
}

#[test]
fn every_help_fits_80_columns_piped_and_columns_when_given() {
    let mut paths = Vec::new();
    let mut root = rtcheck::cmd::Cli::command();
    root.build();
    command_paths(&root, Vec::new(), &mut paths);
    assert!(paths.len() > 15, "the command tree: {paths:?}");
    let mut bad = Vec::new();
    for path in &paths {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        for (columns, width) in [(None, 80), (Some("120"), 120)] {
            let out = run(&args, columns);
            assert!(out.status.success(), "{args:?}: {out:?}");
            let text = String::from_utf8(out.stdout).unwrap();
            assert!(text.lines().count() > 3, "{args:?}: {text}");
            let wide = too_wide(&text, width);
            if !wide.is_empty() {
                bad.push(format!(
                    "{args:?} COLUMNS={columns:?}:\n{}",
                    wide.join("\n")
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

/// A cell cut short ("delivery-snapshot-cle…", "1,02…"): a word of an id (letters, digits,
/// `-_./:`) or a number right before the ellipsis.
fn cut_cells(text: &str) -> Vec<&str> {
    let clipped = |l: &str| {
        l.strip_suffix("...")
            .and_then(|h| h.chars().next_back())
            .is_some_and(|c| c.is_ascii_alphanumeric())
    };
    text.lines()
        .filter(|l| {
            clipped(l)
                || l.match_indices('…').any(|(i, _)| {
                    l[..i]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || "-_./:".contains(c))
                })
        })
        .collect()
}

/// stdout of `rtcheck ARGS` on a pseudo-terminal of `cols` columns (`stty` sets the size
/// before rtcheck starts, so there is no race), stderr (progress) discarded; and the exit code.
fn on_terminal(args: &[&str], cols: u16) -> (String, i32) {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "stty cols {cols} rows 50 && exec \"$0\" \"$@\" 2>/dev/null"
        ))
        .arg(env!("CARGO_BIN_EXE_rtcheck"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .env_remove("COLUMNS");
    let mut s = expectrl::Session::spawn(cmd).expect("spawn rtcheck in a pty");
    s.set_expect_timeout(Some(Duration::from_secs(180)));
    let rest = s.expect(expectrl::Eof).expect("rtcheck exits");
    let mut bytes = rest.before().to_vec();
    for m in rest.matches() {
        bytes.extend_from_slice(m);
    }
    let code = match s.get_process().wait().expect("exit status") {
        expectrl::WaitStatus::Exited(_, c) => c,
        other => panic!("{args:?}: {other:?}"),
    };
    (String::from_utf8_lossy(&bytes).replace('\r', ""), code)
}

/// The text output at `width`: piped for 80 (the width off a terminal), on a pty else.
fn text_at(args: &[&str], width: usize) -> String {
    let (text, code) = if width == 80 {
        let out = run(args, None);
        let code = out.status.code().unwrap_or(-1);
        (String::from_utf8_lossy(&out.stdout).to_string(), code)
    } else {
        on_terminal(args, width as u16)
    };
    assert!(
        (0..=1).contains(&code),
        "{args:?} at {width}: exit {code}\n{text}"
    );
    assert!(
        text.lines().count() > 3,
        "{args:?} at {width} printed: {text}"
    );
    let wide = too_wide(&text, width);
    assert!(
        wide.is_empty(),
        "{args:?} over {width}:\n{}",
        wide.join("\n")
    );
    let cut = cut_cells(&text);
    assert!(
        cut.is_empty(),
        "{args:?} at {width}, cut cells:\n{}",
        cut.join("\n")
    );
    text
}

/// [`text_at`] at 80 and 120 columns; the two texts.
fn check_widths(args: &[&str]) -> [String; 2] {
    // The two runs at once: each is independent and mostly waits on its own sockets and
    // timers, so a heavy command (bench, verify) costs one run's time, not two.
    std::thread::scope(|s| {
        let wide = s.spawn(|| text_at(args, 120));
        let piped = text_at(args, 80);
        let wide = wide.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        [piped, wide]
    })
}

fn check_text(args: &[&str]) {
    check_widths(args);
}

/// `id` appears whole on some line (not split as "ephemeral-por" / "ts").
fn assert_whole(text: &str, id: &str) {
    assert!(
        text.lines().any(|l| l
            .split_whitespace()
            .any(|w| w.trim_matches(['`', ':', ',']) == id)),
        "`{id}` is not whole on any line:\n{text}"
    );
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn evidence_list_fits_80_piped() {
    check_text(&["evidence"]);
}

#[test]
fn evidence_sources_and_one_entry_fit_80_piped() {
    check_text(&["evidence", "--sources"]);
    check_text(&["evidence", "hub-gap"]);
}

#[test]
fn checklist_realtime_ops_fits_80_piped() {
    check_text(&["checklist", "realtime-ops"]);
}

#[test]
fn explain_proxy_config_fits_80_piped() {
    check_text(&["explain", "proxy-config"]);
}

#[test]
fn choose_full_reasoning_fits_80_piped() {
    let dir = tempfile::tempdir().unwrap();
    // Push with a ring, then polling for one user's own stream (other sections print).
    let profiles = [
        "loss: shared\nrate: 1000\nsize: 1000\nvisible_within: 1s\nconnections: 50000\nupstream: sparse\n",
        "loss: per-user\nvisible_within: 30s\nconnections: 200000\nmachines: 3\nupstream: none\n",
    ];
    for (n, text) in profiles.iter().enumerate() {
        let answers = dir.path().join(format!("answers{n}.yaml"));
        std::fs::write(&answers, text).unwrap();
        check_text(&["choose", "--answers", answers.to_str().unwrap()]);
    }
}

/// An indented after-help line (an example, a YAML sample) that clap must wrap continues at
/// column 0, where it reads like prose or a command: every one must fit 80 as written.
/// (Prose at column 0 wraps cleanly and is measured by the test above.)
#[test]
fn every_indented_after_help_line_fits_80_as_written() {
    fn walk(cmd: &clap::Command, path: &str, bad: &mut Vec<String>) {
        if let Some(h) = cmd.get_after_help() {
            for l in h.to_string().lines() {
                if l.starts_with(' ') && l.chars().count() > 80 {
                    bad.push(format!("{path}: {l}"));
                }
            }
        }
        for sc in cmd.get_subcommands() {
            walk(sc, &format!("{path} {}", sc.get_name()), bad);
        }
    }
    let mut bad = Vec::new();
    walk(&rtcheck::cmd::Cli::command(), "rtcheck", &mut bad);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `rtcheck` with no subcommand and no terminal: one line, exit 2 (not 44 lines of help).
#[test]
fn no_subcommand_without_a_terminal_is_one_line() {
    let out = run(&[], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("rtcheck: error: no subcommand"), "{err}");
}

#[test]
fn review_text_fits_80_piped() {
    check_text(&[
        "review",
        "--answers",
        "tests/fixtures/docs/review.yaml",
        "--profile",
        "tests/fixtures/docs/review-profile.yaml",
    ]);
}

/// audit on the fixture hosts (and a proxy at 50,000 with its traffic): every check id and
/// every observed value whole in the table, at 80 and 120 columns.
#[test]
fn audit_text_fits_and_keeps_ids_and_values_whole() {
    for host in ["stock-distro", "small-container", "tuned-server"] {
        let (procfs, sysfs) = (
            fixture(&format!("{host}/proc")),
            fixture(&format!("{host}/sys")),
        );
        let base = ["audit", "--procfs", &procfs, "--sysfs", &sysfs];
        let proxy = [
            "--connections",
            "50000",
            "--role",
            "proxy",
            "--rate",
            "2",
            "--size",
            "4KiB",
        ];
        for extra in [&[][..], &proxy[..], &["--explain"][..]] {
            let args: Vec<&str> = base.iter().chain(extra).copied().collect();
            let json = run(&[&args[..], &["--format", "json"]].concat(), None);
            let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
            for text in check_widths(&args) {
                for f in json["findings"].as_array().unwrap() {
                    assert_whole(&text, f["id"].as_str().unwrap());
                }
                assert!(!text.contains('…'), "{text}");
            }
        }
    }
}

#[test]
fn verify_a_cheap_experiment_fits() {
    check_text(&["verify", "fd-limit", "--limit", "64"]);
    check_text(&["verify", "fd-limit", "--limit", "64", "--explain"]);
}

/// Every other loopback experiment in one small run (about 6 s each time): each block
/// fits, its name whole; `--explain` (references, details) at 80.
#[test]
fn verify_every_quick_experiment_fits() {
    let names = [
        "ephemeral-ports",
        "time-wait",
        "tcp-wmem",
        "memory",
        "memory-sse",
        "tcp-keepalive",
        "read-deadline",
    ];
    let list = names.join(",");
    #[rustfmt::skip]
    let args = [
        "verify", &list, "--closed", "50", "--opened", "50", "--connections", "50",
        "--ping", "1s", "--pong-wait", "2s", "--read-deadline", "1s", "--quiet",
    ];
    let explain: Vec<&str> = args.iter().copied().chain(["--explain"]).collect();
    // The `--explain` run beside the two of check_widths: independent, each mostly waits.
    let ([piped, wide], explained) = std::thread::scope(|sc| {
        let explained = sc.spawn(|| text_at(&explain, 80));
        let two = check_widths(&args);
        (
            two,
            explained
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e)),
        )
    });
    for text in [piped, wide, explained] {
        for n in names {
            assert_whole(&text, n);
        }
    }
}

/// `verify delivery` on a tiny workload (2 clients, 600 ms away; about 8 s): every design's
/// runs fit.
#[test]
fn verify_delivery_tiny_run_fits() {
    #[rustfmt::skip]
    let args = [
        "verify", "delivery", "--connections", "2", "--rate", "50", "--size", "256",
        "--max-disconnect", "600ms", "--quiet",
    ];
    for text in check_widths(&args) {
        assert!(text.starts_with("verify delivery "), "{text}");
        for design in ["snapshot", "seq-ring", "session-ack"] {
            assert_whole(&text, design);
        }
    }
}

/// serve's startup lines (stderr, 80 columns wherever they go: a log as often as a
/// terminal) with the flags that make them longest: large session and queue values, the
/// raw floor's control URLs, --split-writes and CORS.
#[test]
fn serve_startup_lines_fit_80() {
    #[rustfmt::skip]
    let runs: [&[&str]; 3] = [
        &[
            "--delivery", "session-ack", "--max-sessions", "1000000", "--session-ttl", "1h30m",
            "--session-queue", "100000", "--session-memory", "100GiB", "--replay-budget", "1GiB",
            "--size", "64KiB", "--rate", "10000", "--rounds", "100000000", "--wait-start",
            "--queue", "100000", "--write-deadline", "1m30s",
        ],
        &["--protocol", "raw"],
        &["--split-writes", "--workers", "64", "--cors", "https://app.example.com"],
    ];
    for args in runs {
        let srv = common::Server::start(args);
        // The banner is on stderr before the addr file `start` waited for.
        let err = srv.stderr();
        assert!(err.lines().count() > 5, "{args:?}: {err}");
        let wide = too_wide(&err, 80);
        assert!(wide.is_empty(), "{args:?} over 80:\n{}", wide.join("\n"));
        assert!(cut_cells(&err).is_empty(), "{args:?}: {err}");
        let control = srv.control.unwrap_or(srv.addr);
        assert!(
            err.contains(&format!("http://{control}/control/stats")),
            "{err}"
        );
    }
}

/// A tiny fan-out run: the verdict is the first line, the table fits, and only what did
/// not pass is listed (`--explain` lists every check).
#[test]
fn bench_fanout_and_idle_tiny_runs_fit() {
    let args = [
        "bench",
        "fanout",
        "--connections",
        "40",
        "--slow",
        "4",
        "--rounds",
        "10",
        "--rate",
        "20",
        "--scenario",
        "A,C3",
    ];
    for text in check_widths(&args) {
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with("rtcheck bench fanout: every result valid (3 scenarios)")
                || first.starts_with("rtcheck bench fanout: INVALID: "),
            "{text}"
        );
        assert!(
            !text.contains("  pass "),
            "passing checks belong to --explain: {text}"
        );
    }
    let explain: Vec<&str> = args.iter().copied().chain(["--explain"]).collect();
    let text = text_at(&explain, 80);
    assert!(text.contains("  pass samples received: "), "{text}");
    for text in check_widths(&["bench", "idle", "--connections", "40", "--settle", "200ms"]) {
        assert!(text.starts_with("rtcheck bench idle: "), "{text}");
    }
}

/// probe (against a local serve) and a tiny load run against its /work.
#[test]
fn probe_and_load_against_a_local_serve_fit() {
    let srv = common::Server::start(&["--rate", "20"]);
    let sse = format!("http://{}/sse", srv.addr);
    let ws = format!("ws://{}/ws", srv.addr);
    for text in check_widths(&["probe", "--quick", &sse, &ws]) {
        assert!(text.starts_with("rtcheck probe PASS"), "{text}");
        assert_whole(&text, "sse-buffering");
    }
    // A declared hop that always names itself and was not seen: a warning, its header,
    // the finding's lines and its fix within the width too.
    let args = ["probe", "--quick", "--path", "cloudflare,nginx", &sse, &ws];
    for text in check_widths(&args) {
        assert!(text.contains("warn path-hops ("), "{text}");
        assert_whole(&text, "path-hops");
    }
    let work = format!("http://{}/work?ms=2", srv.addr);
    check_text(&["load", &work, "--concurrency", "1,2", "--step", "500ms"]);
}

#[test]
fn hops_budget_and_lint_fit() {
    check_text(&["hops"]);
    check_text(&["hops", "nginx"]);
    check_text(&["hops", "--path", "cloudflare,aws-alb,nginx"]);
    let hop = ["--hop", "auth:24ms:18ms", "--hop", "db:24ms:18ms"];
    check_text(&[&["budget"][..], &hop[..], &["--hop", "search:24ms:118ms"]].concat());
    check_text(&["budget", "--hops", &fixture("docs/hops.yaml")]);
    let nginx = fixture("lint/guides/nginx.conf");
    for text in check_widths(&["lint", &nginx]) {
        assert_whole(&text, "nginx-send-timeout");
    }
}

/// review at 120 too, and its "measure it: `rtcheck ...`" commands are never split.
#[test]
fn review_text_fits_120_and_keeps_commands_whole() {
    let args = [
        "review",
        "--answers",
        "tests/fixtures/docs/review.yaml",
        "--profile",
        "tests/fixtures/docs/review-profile.yaml",
    ];
    for text in check_widths(&args) {
        for l in text.lines() {
            // A backquote opened on a line is closed on it.
            assert_eq!(l.matches('`').count() % 2, 0, "command split: {l}\n{text}");
        }
    }
}

/// `explain proxy-config` cites `realtime-ops/proxy-config`: `checklist` takes it as cited.
#[test]
fn checklist_takes_every_id_explain_cites() {
    let text = text_at(&["explain", "proxy-config"], 80);
    let cited: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("cited by"))
        .flat_map(|l| l.split([',', ' ']).filter(|w| w.contains('/')))
        .collect();
    assert!(cited.contains(&"realtime-ops/proxy-config"), "{text}");
    for id in cited {
        let out = text_at(&["checklist", id], 80);
        assert!(out.contains("proxy-config"), "{id}: {out}");
    }
    let out = run(&["checklist", "realtime-ops/no-such-item"], None);
    assert_eq!(out.status.code(), Some(2));
}

/// A snapshot design replays nothing: no ring or session sizes, no replay count, no notes
/// on the rate/size/disconnect defaults it does not use.
#[test]
fn choose_for_a_snapshot_design_sizes_no_ring() {
    let dir = tempfile::tempdir().unwrap();
    let answers = dir.path().join("snapshot.yaml");
    std::fs::write(
        &answers,
        "loss: replaceable\nvisible_within: 10m\nconnections: 1000\nupstream: none\n",
    )
    .unwrap();
    for text in check_widths(&["choose", "--answers", answers.to_str().unwrap()]) {
        assert!(text.contains("delivery snapshot"), "{text}");
        for gone in [
            "ring buffer (",
            "messages to replay",
            "sessions at once",
            "rate = ",
        ] {
            assert!(!text.contains(gone), "{gone}: {text}");
        }
        assert!(text.contains("RAM per machine"), "{text}");
    }
}

/// Every checklist, every checklist item, and `explain` of every audit check and every hop
/// fit 80 columns piped with their ids whole; one of each kind at 120 on a terminal too.
#[test]
fn every_checklist_item_and_every_explain_fits() {
    // (command, the id it must print whole): one process each at 80 columns piped.
    let mut piped: Vec<([String; 2], String)> = Vec::new();
    for list in rtcheck::checklist::all() {
        check_widths(&["checklist", &list.name]);
        for item in &list.items {
            let id = format!("{}/{}", list.name, item.id);
            piped.push((["checklist".into(), id], item.id.to_string()));
        }
    }
    check_widths(&["checklist"]);
    for id in rtcheck::audit::check_ids() {
        piped.push((["explain".into(), id.to_string()], id.to_string()));
    }
    for id in rtcheck::hops::ids() {
        piped.push((["explain".into(), id.to_string()], id.to_string()));
    }
    // Each run is mostly a process start-up: four at a time.
    for four in piped.chunks(4) {
        std::thread::scope(|sc| {
            let runs: Vec<_> = four
                .iter()
                .map(|([cmd, arg], id)| sc.spawn(move || (text_at(&[cmd, arg], 80), id)))
                .collect();
            for r in runs {
                let (text, id) = r.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
                assert_whole(&text, id);
            }
        });
    }
    check_widths(&["explain", "fd-limit"]);
    check_widths(&["explain", "aws-alb"]);
}

/// Issue 35 item 7: the lines that were wider: `keep: printf ... | sudo tee` of every
/// sysctl check (audit --explain on three hosts), every hop's cloud command and sources,
/// the other ids explain knows, and the unknown-id error (one line of stderr).
#[test]
fn commands_sources_and_errors_fit_80() {
    for host in ["stock-distro", "tuned-server", "small-container"] {
        let (proc, sys) = (
            fixture(&format!("{host}/proc")),
            fixture(&format!("{host}/sys")),
        );
        let text = text_at(
            &["audit", "--explain", "--procfs", &proc, "--sysfs", &sys],
            80,
        );
        assert!(text.contains("printf '%s\\n'"), "{host}: {text}");
        // A broken command ends each of its lines but the last with ` \`, and its next
        // line is indented deeper than the command's first. The command follows its label
        // (`keep: printf`) or, too long for that line, starts the next one under `keep:`.
        let lines: Vec<&str> = text.lines().collect();
        let mut broken = 0;
        for (i, w) in lines.windows(2).enumerate() {
            let first = w[0].trim_start();
            let after_label = i > 0 && lines[i - 1].trim() == "keep:";
            let starts =
                first.starts_with("keep: printf") || (after_label && first.starts_with("printf"));
            if starts && w[0].ends_with(" \\") {
                let indent = w[0].len() - first.len() + 2;
                assert!(w[1].starts_with(&" ".repeat(indent)), "{}\n{}", w[0], w[1]);
                broken += 1;
            }
        }
        assert!(
            broken > 0,
            "{host}: no broken `keep: printf` command: {text}"
        );
    }
    for id in rtcheck::hops::ids() {
        text_at(&["hops", id], 80);
    }
    for id in [
        "proxy-fd-limit",
        "idle-timeout",
        "nginx-ws-upgrade",
        "write-deadline-value",
    ] {
        let text = text_at(&["explain", id], 80);
        assert_whole(&text, id);
    }
    for bad in ["somaxcon", "nosuchthing-at-all-really", "x"] {
        let out = run(&["explain", bad], None);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.trim_end().chars().count() <= 80, "{err}");
    }
}
