//! `rtcheck review` on a real pseudo-terminal: answer the prompts like a user (a value of
//! the wrong type re-asked, a value breaking its rule entered again, `na` with a reason,
//! `later`), read the saved answers back, and check a second run asks only what is open.
use crate::common;
use common::pty::answer;
use expectrl::{Eof, Session};
use rtcheck::review::answers::{self, Answer, Val};
use std::process::Command;
use std::time::Duration;

const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";
const PROFILE: &str = "loss: shared\nrate: 1000\nsize: 1000\ntransport: websocket\n";

/// Whether `text` holds `what` once line breaks and indents are set aside: a line wrapped
/// to the terminal (a Ctrl-C line, a note; a long path cut across lines) still reads as
/// the sentence it is.
fn says(text: &str, what: &str) -> bool {
    let squash = |t: &str| t.split_whitespace().collect::<String>();
    squash(text).contains(&squash(what))
}

fn spawn(args: &[&str]) -> Session {
    spawn_with(args, &[])
}

fn spawn_with(args: &[&str], env: &[(&str, &std::path::Path)]) -> Session {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.envs(env.iter().copied());
    cmd.arg("review")
        .args(args)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm");
    let mut s = Session::spawn(cmd).expect("spawn rtcheck in a pty");
    s.set_expect_timeout(Some(Duration::from_secs(20)));
    s
}

/// Wait for the exit; returns everything printed after the last expect.
fn finish(mut s: Session, code: i32) -> String {
    let rest = s.expect(Eof).expect("rtcheck exits");
    // Eof matches the whole remaining buffer: the text is the match, not what precedes it.
    let mut bytes = rest.before().to_vec();
    for m in rest.matches() {
        bytes.extend_from_slice(m);
    }
    let text = String::from_utf8_lossy(&bytes).to_string();
    let status = s.get_process().wait().expect("exit status");
    assert_eq!(
        status,
        expectrl::WaitStatus::Exited(s.get_process().pid(), code),
        "{text}"
    );
    text
}

#[test]
fn walk_reasks_bad_values_records_na_and_later_then_asks_only_what_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.yaml");
    std::fs::write(&profile, PROFILE).unwrap();
    let save = dir.path().join("review.yaml");
    let (p, sv) = (profile.to_str().unwrap(), save.to_str().unwrap());
    let only = "bounded-queue,seq-numbers,hot-path-alloc";
    let mut s = spawn(&[
        "--profile",
        p,
        "--save",
        sv,
        "--only",
        only,
        "--fail-on",
        "never",
    ]);

    // Title, why and the measured number come before the question.
    s.expect("Bound every per-client queue").unwrap();
    s.expect("measured: queue_len 256 messages").unwrap();
    answer(&mut s, "Done?", ENTER); // yes
    answer(&mut s, "Per-client queue length", &format!("lots{ENTER}"));
    s.expect("expected a whole number").unwrap(); // re-asked, not accepted
    answer(&mut s, "Per-client queue length", &format!("64{ENTER}"));
    answer(
        &mut s,
        "Slowness a client must survive",
        &format!("1s{ENTER}"),
    );
    // 64 messages at 1,000 msg/s last 64 ms, less than the 1 s asked: enter them again.
    s.expect("tolerates 64 ms of slowness").unwrap();
    answer(&mut s, "Values break the rule", ENTER);
    answer(&mut s, "Per-client queue length", &format!("1024{ENTER}"));
    answer(&mut s, "Slowness a client must survive", ENTER); // keeps 1s
    s.expect("ok:").unwrap();

    s.expect("Put sequence numbers in the payload").unwrap();
    answer(&mut s, "Done?", &format!("{DOWN}{DOWN}{ENTER}")); // not applicable
    answer(
        &mut s,
        "Why not applicable",
        &format!("prices replace each other{ENTER}"),
    );

    s.expect("Do not allocate per client").unwrap();
    answer(&mut s, "Done?", &format!("{DOWN}{DOWN}{DOWN}{ENTER}")); // later
    finish(s, 0);

    let text = std::fs::read_to_string(&save).unwrap();
    let a = answers::parse(&text, "review.yaml", &rtcheck::review::known_ids()).unwrap();
    let q = a.get("bounded-queue").unwrap();
    assert_eq!(q.answer, Answer::Yes);
    let v = answers::values_of(q).unwrap();
    assert_eq!(v["queue"], Val::Count(1024));
    assert_eq!(v["tolerance"], Val::Duration(Duration::from_secs(1)));
    assert!(q.when.is_some() && q.rule.is_some(), "{text}");
    let na = a.get("seq-numbers").unwrap();
    assert_eq!(na.answer, Answer::Na);
    assert_eq!(na.reason.as_deref(), Some("prices replace each other"));
    assert_eq!(a.get("hot-path-alloc").unwrap().answer, Answer::Later);

    // Second run: only the item marked later is asked.
    let mut s = spawn(&[
        "--profile",
        p,
        "--save",
        sv,
        "--only",
        only,
        "--fail-on",
        "never",
        "--format",
        "json",
    ]);
    s.expect("[1/1] Do not allocate per client").unwrap();
    answer(&mut s, "Done?", ENTER);
    let out = finish(s, 0);
    // Each asked item prints its `why:` line; none may follow the first.
    assert!(!out.contains("  why: "), "asked more than one item: {out}");
    let a = answers::load("--answers", &save, &rtcheck::review::known_ids()).unwrap();
    assert_eq!(a.get("hot-path-alloc").unwrap().answer, Answer::Yes);
    assert_eq!(a.get("seq-numbers").unwrap().answer, Answer::Na);
}

#[test]
fn a_value_kept_against_the_rule_is_a_finding() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("review.yaml");
    let mut s = spawn(&[
        "--save",
        save.to_str().unwrap(),
        "--only",
        "one-retry-layer",
        "--format",
        "json",
    ]);
    answer(&mut s, "Done?", ENTER);
    answer(&mut s, "Layers that retry", &format!("3{ENTER}"));
    answer(&mut s, "Tries per layer", &format!("3{ENTER}"));
    s.expect("27 hits downstream").unwrap();
    answer(&mut s, "Values break the rule", &format!("{DOWN}{ENTER}")); // keep them
    s.expect("\"downstream_hits\": 27.0").unwrap();
    finish(s, 1);
    let a = answers::load("--answers", &save, &rtcheck::review::known_ids()).unwrap();
    let v = answers::values_of(a.get("one-retry-layer").unwrap()).unwrap();
    assert_eq!(v["layers"], Val::Count(3));
}

#[test]
fn an_item_measured_by_evidence_is_not_asked() {
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe.json");
    std::fs::write(
        &probe,
        r#"{"findings":[{"id":"sse-buffering","status":"pass","observed":"first byte at once"}]}"#,
    )
    .unwrap();
    let save = dir.path().join("review.yaml");
    let mut s = spawn(&[
        "--only",
        "proxy-config,seq-numbers",
        "--evidence",
        probe.to_str().unwrap(),
        "--save",
        save.to_str().unwrap(),
    ]);
    s.expect("[1/1] Put sequence numbers in the payload")
        .unwrap();
    answer(&mut s, "Done?", ENTER);
    let out = finish(s, 0);
    assert!(out.contains("1 measured, 1 declared"), "{out}");
    let a = answers::load("--answers", &save, &rtcheck::review::known_ids()).unwrap();
    assert!(a.get("proxy-config").is_none());
}

const CTRL_C: &str = "\x03";

/// Ctrl-C after two answers: both are in the --save file already, the message says so and
/// the exit is 130; the next run asks only the open item, and Ctrl-C inside a text prompt
/// (SIGINT, not the menu's raw-mode key) keeps the file as it was.
#[test]
fn ctrl_c_keeps_the_answers_given_and_the_next_run_asks_only_the_open_ones() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("review.yaml");
    let sv = save.to_str().unwrap();
    let only = "bounded-queue,seq-numbers,hot-path-alloc";
    let args = ["--save", sv, "--only", only, "--fail-on", "never"];
    let mut s = spawn(&args);
    s.expect("[1/3] Bound every per-client queue").unwrap();
    answer(&mut s, "Done?", &format!("{DOWN}{DOWN}{ENTER}")); // not applicable
    answer(&mut s, "Why not applicable", &format!("no queues{ENTER}"));
    s.expect("[2/3] Put sequence numbers in the payload")
        .unwrap();
    answer(&mut s, "Done?", &format!("{DOWN}{DOWN}{ENTER}"));
    answer(&mut s, "Why not applicable", &format!("prices{ENTER}"));
    s.expect("[3/3] Do not allocate per client").unwrap();
    answer(&mut s, "Done?", CTRL_C);
    let out = finish(s, 130);
    assert!(
        says(
            &out,
            &format!("prompt interrupted; 2 answers saved to {sv}")
        ),
        "{out}"
    );
    let known = rtcheck::review::known_ids();
    let a = answers::load("--answers", &save, &known).unwrap();
    assert_eq!(a.answers.len(), 2, "{a:?}");
    assert_eq!(
        a.get("bounded-queue").unwrap().reason.as_deref(),
        Some("no queues")
    );
    assert_eq!(a.get("seq-numbers").unwrap().answer, Answer::Na);
    assert!(a.get("hot-path-alloc").is_none());

    // Next run: only the open item; Ctrl-C while typing a reason.
    let mut s = spawn(&args);
    s.expect("[1/1] Do not allocate per client").unwrap();
    answer(&mut s, "Done?", &format!("{DOWN}{DOWN}{ENTER}"));
    answer(&mut s, "Why not applicable", &format!("half typed{CTRL_C}"));
    let out = finish(s, 130);
    assert!(
        says(&out, "prompt interrupted; 0 answers saved to") && says(&out, "(2 in the file"),
        "{out}"
    );
    assert!(!out.contains("Bound every per-client queue"), "{out}");
    let b = answers::load("--answers", &save, &known).unwrap();
    assert_eq!(a, b, "the file is unchanged");
}

/// Without --save a walk on a terminal saves to the state file, and a plain rerun resumes.
#[test]
fn without_save_the_walk_keeps_its_answers_in_the_state_file() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("XDG_STATE_HOME", dir.path())];
    let args = ["--only", "seq-numbers,hot-path-alloc", "--fail-on", "never"];
    let mut s = spawn_with(&args, &env);
    answer(&mut s, "Done?", &format!("{DOWN}{DOWN}{DOWN}{ENTER}")); // later
    s.expect("[2/2] Do not allocate per client").unwrap();
    answer(&mut s, "Done?", CTRL_C);
    let state = dir.path().join("rtcheck/review-answers.yaml");
    let out = finish(s, 130);
    assert!(
        says(&out, &format!("1 answer saved to {}", state.display())),
        "{out}"
    );
    let known = rtcheck::review::known_ids();
    let a = answers::load("--answers", &state, &known).unwrap();
    assert_eq!(a.get("seq-numbers").unwrap().answer, Answer::Later);

    let mut s = spawn_with(&args, &env);
    s.expect("resuming the answers saved in").unwrap();
    // `later` is open again, with the unanswered one.
    s.expect("[1/2] Put sequence numbers in the payload")
        .unwrap();
    answer(&mut s, "Done?", ENTER);
    answer(&mut s, "Done?", ENTER);
    finish(s, 0);
    let a = answers::load("--answers", &state, &known).unwrap();
    assert_eq!(a.get("hot-path-alloc").unwrap().answer, Answer::Yes);
}

/// At 80 columns no line of the walk reaches the edge, so no word is split (issue 27, item
/// 3): every item's title, why, measured number and hint (all 49, answered `later`), and
/// the consequence and rule of values that break it.
#[test]
fn at_80_columns_no_line_of_the_walk_reaches_the_edge() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.yaml");
    std::fs::write(&profile, PROFILE).unwrap();
    let save = dir.path().join("review.yaml");
    let (p, sv) = (profile.to_str().unwrap(), save.to_str().unwrap());

    let mut s = spawn(&["--profile", p, "--save", sv, "--only", "bounded-queue"]);
    s.get_process_mut().set_window_size(80, 40).unwrap();
    let mut s = common::pty::Recorded::new(s);
    s.answer("Done?", ENTER);
    s.answer("Per-client queue length", &format!("64{ENTER}"));
    s.answer("Slowness a client must survive", &format!("1s{ENTER}"));
    s.expect("tolerates 64 ms of slowness");
    s.answer("Values break the rule", &format!("{DOWN}{ENTER}")); // keep them
    assert_eq!(s.finish(), 1, "{}", s.text());
    s.assert_no_line_wider(80);

    let mut s = spawn(&["--profile", p, "--save", sv, "--fail-on", "never"]);
    s.get_process_mut().set_window_size(80, 40).unwrap();
    let mut s = common::pty::Recorded::new(s);
    // bounded-queue is answered already: every other item that applies is asked.
    let asked: usize = s.expect_group(r"\[1/(\d+)\]").parse().unwrap();
    assert!(asked > 40, "{asked} items");
    for n in 1..=asked {
        if n > 1 {
            s.expect(&format!("[{n}/{asked}]"));
        }
        s.answer("Done?", &format!("{DOWN}{DOWN}{DOWN}{ENTER}")); // later
    }
    assert_eq!(s.finish(), 0, "{}", s.text());
    s.assert_no_line_wider(80);
    let a = answers::load("--answers", &save, &rtcheck::review::known_ids()).unwrap();
    assert_eq!(a.answers.len(), asked + 1);
}

/// The Ctrl-C line is wrapped like the prompts (issue 27, item 3): with a long --save path
/// at 80 columns no line reaches the edge, and the line still names the file.
#[test]
fn at_80_columns_the_ctrl_c_line_is_wrapped_not_split() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir
        .path()
        .join("answers-kept-between-review-runs-of-the-team");
    std::fs::create_dir(&nested).unwrap();
    let save = nested.join("review.yaml");
    let sv = save.to_str().unwrap();
    let args = ["--save", sv, "--only", "seq-numbers,hot-path-alloc"];
    let mut s = spawn(&args);
    s.get_process_mut().set_window_size(80, 40).unwrap();
    let mut s = common::pty::Recorded::new(s);
    s.answer("Done?", &format!("{DOWN}{DOWN}{DOWN}{ENTER}")); // later
    s.expect("[2/2] Do not allocate per client");
    s.answer("Done?", CTRL_C);
    assert_eq!(s.finish(), 130, "{}", s.text());
    s.assert_no_line_wider(80);
    assert!(
        says(
            &s.text(),
            &format!("prompt interrupted; 1 answer saved to {sv}")
        ),
        "{}",
        s.text()
    );
}
