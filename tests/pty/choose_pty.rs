//! The interactive flow through a real pseudo-terminal: spawn the built binary, answer the
//! prompts like a user, and read the saved profile back.
use crate::common;
use common::pty::answer;
use expectrl::{Eof, Session};
use rtcheck::hops::chain::PathEntry;
use rtcheck::profile::{Loss, Profile, Upstream};
use rtcheck_wire::transport::Transport;
use std::process::Command;
use std::time::Duration;

const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";
const UP: &str = "\x1b[A";
const SPACE: &str = " ";

/// The path multi-select: aws-alb (row 7) and cloudflare (row 15) of the catalogue, row 0
/// being "none / direct".
fn path_keys() -> String {
    let row = |id: &str| {
        1 + rtcheck::hops::catalog()
            .iter()
            .position(|h| h.id == id)
            .unwrap()
    };
    let (a, c) = (row("aws-alb"), row("cloudflare"));
    format!(
        "{}{SPACE}{}{SPACE}{ENTER}",
        DOWN.repeat(a),
        DOWN.repeat(c - a)
    )
}

fn spawn(args: &[&str]) -> Session {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.args(args).env("NO_COLOR", "1").env("TERM", "xterm");
    let mut s = Session::spawn(cmd).expect("spawn rtcheck in a pty");
    s.set_expect_timeout(Some(Duration::from_secs(20)));
    s
}

fn wait_success(mut s: Session) {
    s.expect(Eof).expect("rtcheck exits");
    let status = s.get_process().wait().expect("exit status");
    assert_eq!(
        status,
        expectrl::WaitStatus::Exited(s.get_process().pid(), 0),
        "rtcheck exited with {status:?}"
    );
}

#[test]
fn full_walk_on_a_terminal_saves_the_answers() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("profile.yaml");
    let save_s = save.to_str().unwrap();
    let mut s = spawn(&["choose", "--format", "json", "--save", save_s]);

    // Each question has a one-line explanation before its prompt.
    s.expect("Q1 freshness").unwrap();
    answer(&mut s, "Visible within", &format!("200ms{ENTER}"));
    s.expect("Q2 upstream").unwrap();
    answer(&mut s, "Upstream", &format!("{DOWN}{ENTER}")); // sparse (default) -> dense
    answer(&mut s, "Binary payloads?", ENTER); // default: no
    s.expect("Q3 loss").unwrap();
    answer(&mut s, "If one message is lost", &format!("{DOWN}{ENTER}")); // shared
    s.expect("Q4 scale").unwrap();
    answer(&mut s, "Connections", &format!("20000{ENTER}"));
    answer(&mut s, "Machines", &format!("2{ENTER}"));
    answer(&mut s, "Messages per second per client", ENTER); // default 10
    answer(&mut s, "Bytes per message", &format!("512{ENTER}"));
    answer(&mut s, "Max disconnect", &format!("5s{ENTER}"));
    // The path: cloudflare (row 15) and aws-alb (row 7) selected, then ordered.
    answer(&mut s, "Hops between users and server", &path_keys());
    // Listed in catalogue order (aws-alb, cloudflare): move cloudflare up.
    answer(
        &mut s,
        "Outermost first",
        &format!("{DOWN}{SPACE}{UP}{SPACE}{ENTER}"),
    );
    s.expect("\"transport\": \"websocket\"").unwrap();
    wait_success(s);

    let p = Profile::load("--answers", &save).unwrap();
    assert_eq!(
        p,
        Profile {
            visible_within: Some(Duration::from_millis(200)),
            upstream: Some(Upstream::Dense),
            binary: false,
            loss: Some(Loss::Shared),
            connections: 20_000,
            machines: 2,
            rate: 10.0,
            size: 512,
            max_disconnect: Duration::from_secs(5),
            transport: Some(Transport::Websocket),
            path: Some(vec![
                PathEntry::new("cloudflare"),
                PathEntry::new("aws-alb")
            ]),
            ..Profile::default()
        }
    );
}

#[test]
fn a_bad_answer_is_asked_again_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("p.yaml");
    let mut s = spawn(&["choose", "--save", save.to_str().unwrap()]);
    answer(&mut s, "Visible within", &format!("soon{ENTER}"));
    // dialoguer shows the validation error and asks again.
    s.expect("invalid duration").unwrap();
    answer(&mut s, "Visible within", &format!("2m{ENTER}"));
    answer(&mut s, "Upstream", ENTER);
    answer(&mut s, "Binary payloads?", ENTER);
    answer(&mut s, "If one message is lost", ENTER); // replaceable
    answer(&mut s, "Connections", &format!("0{ENTER}"));
    s.expect("must be at least 1").unwrap();
    // Upper bounds too, with the words the flags and profile files use.
    answer(&mut s, "Connections", &format!("200000000{ENTER}"));
    s.expect("connections: must be between 1 and 100000000, got 200000000")
        .unwrap();
    answer(&mut s, "Connections", &format!("300{ENTER}"));
    answer(&mut s, "Machines", ENTER);
    answer(&mut s, "Messages per second per client", ENTER);
    answer(&mut s, "Bytes per message", &format!("128MiB{ENTER}"));
    s.expect("size: must be between 1 and 67108864 bytes")
        .unwrap();
    answer(&mut s, "Bytes per message", &format!("4KiB{ENTER}"));
    answer(&mut s, "Max disconnect", ENTER);
    answer(&mut s, "Hops between users and server", ENTER); // none selected: undeclared
    s.expect("topology").unwrap(); // the recommendation is printed
    wait_success(s);
    let p = Profile::load("--answers", &save).unwrap();
    assert_eq!(p.visible_within, Some(Duration::from_secs(120)));
    assert_eq!(p.connections, 300);
    assert_eq!(p.size, 4096);
    assert_eq!(p.transport, Some(Transport::Polling));
    assert_eq!(p.loss, Some(Loss::Replaceable));
}

#[test]
fn only_the_missing_answers_are_asked_when_some_flags_are_given() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("p.yaml");
    let mut s = spawn(&[
        "choose",
        "--visible-within",
        "5m",
        "--upstream",
        "none",
        "--connections",
        "1000",
        "--save",
        save.to_str().unwrap(),
    ]);
    // Q1 and Q2 are answered by flags: the first prompt is Q3.
    answer(
        &mut s,
        "If one message is lost",
        &format!("{DOWN}{DOWN}{ENTER}"),
    ); // per-user
    s.expect("topology").unwrap();
    let rest = s.expect(Eof).unwrap();
    let shown = String::from_utf8_lossy(rest.before());
    assert!(!shown.contains("Visible within"), "{shown}");
    assert!(!shown.contains("Connections"), "{shown}");
    let p = Profile::load("--answers", &save).unwrap();
    assert_eq!(p.loss, Some(Loss::PerUser));
    assert_eq!(p.connections, 1000);
    assert_eq!(p.transport, Some(Transport::Polling));
}

#[test]
fn no_input_on_a_terminal_fails_instead_of_asking() {
    let mut s = spawn(&["choose", "--no-input", "--loss", "shared"]);
    s.expect("missing answers: visible_within").unwrap();
    s.expect(Eof).unwrap();
    let status = s.get_process().wait().unwrap();
    assert_eq!(
        status,
        expectrl::WaitStatus::Exited(s.get_process().pid(), 2)
    );
}

#[test]
fn ctrl_c_at_a_prompt_exits_130_and_saves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("p.yaml");
    let mut s = spawn(&["choose", "--save", save.to_str().unwrap()]);
    answer(&mut s, "Visible within", &format!("1s{ENTER}"));
    answer(&mut s, "Upstream", "\x03");
    let rest = s.expect(Eof).unwrap();
    let mut shown = rest.before().to_vec();
    rest.matches().for_each(|m| shown.extend_from_slice(m));
    let shown = String::from_utf8_lossy(&shown).to_string();
    let status = s.get_process().wait().unwrap();
    // A menu reads Ctrl-C as a key in raw mode; it is still an interruption: said, 130.
    assert!(
        shown.contains("rtcheck: prompt interrupted; nothing saved"),
        "{shown}"
    );
    let pid = s.get_process().pid();
    assert_eq!(status, expectrl::WaitStatus::Exited(pid, 130));
    assert!(!save.exists());
}

/// Interactive `rtcheck choose` (no --save) offers to save the profile (issue 27, item 6),
/// and asks before overwriting a file that exists (item 9).
#[test]
fn an_interactive_walk_offers_to_save_the_profile_and_asks_before_overwriting() {
    let dir = tempfile::tempdir().unwrap();
    let taken = dir.path().join("taken.yaml");
    std::fs::write(&taken, "# mine\n").unwrap();
    let fresh = dir.path().join("fresh.yaml");
    let mut s = common::pty::Recorded::new(spawn(&["choose"]));
    s.answer("Visible within", &format!("200ms{ENTER}"));
    for p in [
        "Upstream",
        "Binary payloads?",
        "If one message is lost",
        "Connections",
        "Machines",
        "Messages per second per client",
        "Bytes per message",
        "Max disconnect",
        "Hops between users and server",
    ] {
        s.answer(p, ENTER);
    }
    s.expect("Six must-haves");
    s.answer("Save the profile", "y");
    s.answer("Profile file", &format!("{}{ENTER}", taken.display()));
    s.expect("already exists");
    s.answer("Overwrite it?", ENTER); // no, give another name
    s.answer("Profile file", &format!("{}{ENTER}", fresh.display()));
    s.expect(&format!("saved {}", fresh.display()));
    assert_eq!(s.finish(), 0, "{}", s.text());
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "# mine\n");
    let p = Profile::load("--answers", &fresh).unwrap();
    assert_eq!(p.transport, Some(Transport::Sse));
    assert_eq!(p.visible_within, Some(Duration::from_millis(200)));
    s.assert_no_line_wider(80);
}
