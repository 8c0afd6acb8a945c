//! The guided run (`rtcheck` with no subcommand) through a real pseudo-terminal: the four
//! questions, the role, the audit of this host, both files saved and parsed back, then the
//! offers: a probe of `rtcheck serve` on loopback and the review, each read back.
use crate::common;
use common::pty::answer;
use expectrl::{Eof, Session};
use rtcheck::profile::{Loss, Profile, Role};
use rtcheck_wire::transport::Transport;
use std::process::Command;
use std::time::Duration;

const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";

/// Whether `text` holds `what` once line breaks and indents are set aside: a line wrapped
/// to the terminal (a Ctrl-C line, a note; a long path cut across lines) still reads as
/// the sentence it is.
fn says(text: &str, what: &str) -> bool {
    let squash = |t: &str| t.split_whitespace().collect::<String>();
    squash(text).contains(&squash(what))
}

#[test]
fn guided_run_chooses_audits_saves_then_probes_and_reviews() {
    let dir = tempfile::tempdir().unwrap();
    let profile_path = dir.path().join("p.yaml");
    let report_path = dir.path().join("audit.json");
    let probe_path = dir.path().join("probe.json");
    let review_path = dir.path().join("review.yaml");
    // Every item answered but one, so the review asks exactly that one.
    let open = "hot-path-alloc";
    let mut answered = String::from("answers:\n");
    for id in rtcheck::review::known_ids()
        .into_iter()
        .filter(|i| *i != open)
    {
        answered.push_str(&format!(
            "  - id: {id}\n    answer: na\n    reason: not here\n"
        ));
    }
    std::fs::write(&review_path, answered).unwrap();
    let serve = common::Server::start(&["--rate", "5", "--size", "256"]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.env("NO_COLOR", "1").env("TERM", "xterm");
    let mut s = Session::spawn(cmd).expect("spawn rtcheck in a pty");
    s.set_expect_timeout(Some(Duration::from_secs(30)));
    let mut s = common::pty::Recorded::new(s);

    // A bad answer is refused as it is typed, with the profile's own bound, and asked again.
    s.answer("Visible within", &format!("40d{ENTER}"));
    s.expect("visible_within: must be between 1ms and 720h, got 960h");
    // Asked again: the prompt is drawn anew, empty.
    s.answer("Visible within", &format!("10m{ENTER}"));
    s.answer("Upstream", ENTER);
    s.answer("Binary payloads?", ENTER);
    s.answer("If one message is lost", ENTER); // replaceable
    s.answer("Connections", &format!("3000{ENTER}"));
    s.answer("Machines", &format!("2000000{ENTER}"));
    s.expect("machines: must be between 1 and 3000 (the connections), got 2000000");
    s.answer("Machines", &format!("1{ENTER}"));
    s.answer("Messages per second per client", ENTER);
    s.answer("Bytes per message", ENTER);
    s.answer("Max disconnect", ENTER);
    s.answer("Hops between users and server", ENTER); // none selected: undeclared
                                                      // The recommendation is a few lines, still on screen when the role is asked.
    s.expect("Recommendation");
    s.expect("transport polling");
    s.answer("What does this host do", &format!("{DOWN}{ENTER}")); // proxy
    s.expect("rtcheck's own process");
    s.answer("Service PID", ENTER);
    s.expect("rtcheck audit: 3,000 polling connections, role proxy");
    s.expect("Recommendation: polling + snapshot");
    s.expect("Audit:");
    s.answer("Save the profile", "y");
    s.answer(
        "Profile file",
        &format!("{}{ENTER}", profile_path.display()),
    );
    s.answer("Save the audit report", "y");
    s.answer("Report file", &format!("{}{ENTER}", report_path.display()));

    // Offer 1: probe a URL the user types (here `serve` on loopback), quick, saved as JSON.
    s.answer("Probe a deployed endpoint", "y");
    let url = format!("http://{}/sse?token=s3cret", serve.addr);
    s.answer("URL to probe", &format!("{url}{ENTER}"));
    s.expect(&format!("probing http://{}/sse?token=***", serve.addr));
    s.answer("Also hold a connection idle", "n");
    s.expect("sse-buffering");
    s.answer("Save the probe report", "y");
    s.answer(
        "Probe report file",
        &format!("{}{ENTER}", probe_path.display()),
    );
    // Offer 2: the review asks only the item left open, and saves to the same file.
    s.answer("Walk the application checklist", "y");
    s.answer("Answers file", &format!("{}{ENTER}", review_path.display()));
    s.expect("[1/1] Do not allocate per client");
    s.answer("Done?", ENTER); // yes
    let code = s.finish();
    // At 80 columns, the probe's report and the review's item included, no line reaches
    // the edge (issue 27, item 3).
    s.assert_no_line_wider(80);

    let p = Profile::load("--answers", &profile_path).unwrap();
    // The saved profile is one `audit --profile` accepts.
    let audit = Command::new(env!("CARGO_BIN_EXE_rtcheck"))
        .args(["audit", "--format", "json", "--profile"])
        .arg(&profile_path)
        .output()
        .unwrap();
    assert!(
        matches!(audit.status.code(), Some(0 | 1)),
        "audit --profile refused the saved profile: {}",
        String::from_utf8_lossy(&audit.stderr)
    );
    let again: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    assert_eq!(again["profile"]["connections"], 3000);
    assert_eq!(p.transport, Some(Transport::Polling));
    assert_eq!(p.loss, Some(Loss::Replaceable));
    assert_eq!(p.role, Role::Proxy);
    assert_eq!(p.connections, 3000);

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), rtcheck::audit::check_ids().len());
    assert_eq!(report["profile"]["role"], "proxy");
    assert_eq!(report["profile"]["connections"], 3000);
    let probe: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&probe_path).unwrap()).unwrap();
    assert_eq!(probe["kind"], "probe");
    let pf = probe["findings"].as_array().unwrap();
    let buffering = pf.iter().find(|f| f["id"] == "sse-buffering").unwrap();
    assert_eq!(buffering["status"], "pass", "{probe:#}");
    let idle = pf.iter().find(|f| f["id"] == "idle-timeout").unwrap();
    assert_eq!(idle["status"], "skip", "declined idle test is --quick");
    let probe_text = std::fs::read_to_string(&probe_path).unwrap();
    assert!(!probe_text.contains("s3cret"), "{probe_text}");
    assert_eq!(probe["summary"]["fail"], 0, "{probe:#}");

    let a =
        rtcheck::review::answers::load("--answers", &review_path, &rtcheck::review::known_ids())
            .unwrap();
    assert_eq!(
        a.get(open).unwrap().answer,
        rtcheck::review::answers::Answer::Yes
    );
    assert_eq!(
        a.get("seq-numbers").unwrap().answer,
        rtcheck::review::answers::Answer::Na
    );

    // Exit code follows the audit (the probe and the review above failed nothing): 1
    // exactly when something failed on this host.
    let fails = report["summary"]["fail"].as_u64().unwrap();
    let expected = if fails > 0 { 1 } else { 0 };
    assert_eq!(code, expected, "{}", s.text());
}

#[test]
fn a_url_that_cannot_be_probed_is_one_line_and_the_review_is_still_offered() {
    let refused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = refused.local_addr().unwrap().port();
    drop(refused);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.env("NO_COLOR", "1").env("TERM", "xterm");
    let mut s = Session::spawn(cmd).expect("spawn rtcheck in a pty");
    s.set_expect_timeout(Some(Duration::from_secs(30)));
    answer(&mut s, "Visible within", &format!("10m{ENTER}"));
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
        "What does this host do",
        "Service PID",
    ] {
        answer(&mut s, p, ENTER);
    }
    answer(&mut s, "Save the profile", "n");
    answer(&mut s, "Save the audit report", "n");
    answer(&mut s, "Probe a deployed endpoint", "y");
    answer(
        &mut s,
        "URL to probe",
        &format!("http://127.0.0.1:{port}/sse{ENTER}"),
    );
    answer(&mut s, "Also hold a connection idle", "n");
    s.expect("rtcheck: probe: ").unwrap();
    s.expect("refused").unwrap();
    answer(&mut s, "Walk the application checklist", "n");
    s.expect(Eof).expect("rtcheck exits");
    let status = s.get_process().wait().expect("exit status");
    // Something failed (the probe), so 1; not 2: the run itself completed.
    assert_eq!(
        status,
        expectrl::WaitStatus::Exited(s.get_process().pid(), 1)
    );
}

#[test]
fn without_a_terminal_it_says_so_in_one_line_and_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_rtcheck"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    // One line naming what to run instead, not the whole help (issue 27).
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no terminal") && err.contains("rtcheck --help"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

fn guided() -> common::pty::Recorded {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.env("NO_COLOR", "1").env("TERM", "xterm");
    let mut s = Session::spawn(cmd).expect("spawn rtcheck in a pty");
    s.set_expect_timeout(Some(Duration::from_secs(30)));
    // ptyprocess opens 80 x 24; say so, the assertions below depend on it.
    s.get_process_mut().set_window_size(80, 40).unwrap();
    common::pty::Recorded::new(s)
}

/// Q1..Q4 and the sizing for a shared stream over SSE on 3 machines, then the role and PID.
fn answer_questions(s: &mut common::pty::Recorded) {
    s.answer("Visible within", &format!("200ms{ENTER}"));
    s.answer("Upstream", ENTER); // sparse
    s.answer("Binary payloads?", ENTER);
    s.answer("If one message is lost", &format!("{DOWN}{ENTER}")); // shared
    s.answer("Connections", &format!("20000{ENTER}"));
    s.answer("Machines", &format!("3{ENTER}"));
    for p in [
        "Messages per second per client",
        "Bytes per message",
        "Max disconnect",
        "Hops between users and server",
        "What does this host do",
        "Service PID",
    ] {
        s.answer(p, ENTER);
    }
}

/// At 80 columns no line of the guided run reaches the edge (so no word is split: issue 27,
/// item 3); the summary shows each decision with its why and the must-haves (item 6); a
/// save onto an existing file asks first, and the report's format follows the extension,
/// said when saved (item 9).
#[test]
fn at_80_columns_the_run_fits_its_summary_shows_what_matters_and_saves_ask_first() {
    let dir = tempfile::tempdir().unwrap();
    let taken = dir.path().join("p.yaml");
    std::fs::write(&taken, "# mine\n").unwrap();
    let profile = dir.path().join("p2.yaml");
    let html = dir.path().join("audit.html");
    let mut s = guided();
    answer_questions(&mut s);
    s.expect("Summary");
    s.expect("Recommendation: sse + seq-ring + pubsub");
    s.expect("Must-haves that apply (6 of 6)");
    s.expect("Audit:");
    // The summary as read, wrapped lines joined.
    let text = s.text();
    let summary = &text[text.rfind("Summary").unwrap()..];
    let flat = summary.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "Q2 sse upstream as POST; needs HTTP/2 at the edge and buffering off on every proxy",
        "Q3 seq-ring seq in every payload, a ring buffer shared by all clients",
        "Q4 pubsub Redis pub/sub between the 3 machines, one path per event",
        "presence by a TTL key",
        "SIZE ring buffer 30.7 KB",
        "write-deadline",
        "proxy-config",
    ] {
        assert!(flat.contains(want), "{want}: {summary}");
    }
    s.answer("Save the profile", "y");
    s.answer("Profile file", &format!("{}{ENTER}", taken.display()));
    s.expect(&format!("{} already exists", taken.display()));
    s.answer("Overwrite it?", ENTER); // no, give another name
    s.answer("Profile file", &format!("{}{ENTER}", profile.display()));
    s.answer("Save the audit report", "y");
    s.expect("The format follows the extension");
    s.answer("Report file", &format!("{}{ENTER}", html.display()));
    s.expect(&format!(
        "saved {} (html, from the extension .html)",
        html.display()
    ));
    s.answer("Probe a deployed endpoint", "n");
    s.answer("Walk the application checklist", "n");
    let code = s.finish();
    assert!(matches!(code, 0 | 1), "{code}: {}", s.text());

    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "# mine\n");
    let p = Profile::load("--answers", &profile).unwrap();
    assert_eq!(p.transport, Some(Transport::Sse));
    assert_eq!(p.loss, Some(Loss::Shared));
    assert_eq!(p.machines, 3);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.trim_start()
            .to_ascii_lowercase()
            .starts_with("<!doctype html"),
        "{}",
        &page[..page.len().min(200)]
    );
    s.assert_no_line_wider(80);
}

/// Ctrl-C in the guided run says what happened and what was kept, and exits 130 (issue 27,
/// item 10): in a menu (raw mode, no SIGINT) before anything was saved, and in a text
/// prompt after the profile was saved.
#[test]
fn ctrl_c_in_the_guided_run_says_what_was_kept_and_exits_130() {
    let mut s = guided();
    s.answer("Visible within", &format!("200ms{ENTER}"));
    s.answer("Upstream", "\x03");
    assert_eq!(s.finish(), 130, "{}", s.text());
    assert!(
        says(&s.text(), "rtcheck: guided run interrupted; nothing saved"),
        "{}",
        s.text()
    );

    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.yaml");
    let report = dir.path().join("audit.json");
    let mut s = guided();
    answer_questions(&mut s);
    s.answer("Save the profile", "y");
    s.answer("Profile file", &format!("{}{ENTER}", profile.display()));
    s.answer("Save the audit report", "y");
    s.answer("Report file", &format!("half{}", "\x03"));
    assert_eq!(s.finish(), 130, "{}", s.text());
    assert!(
        says(
            &s.text(),
            &format!(
                "rtcheck: guided run interrupted; kept: profile {} (nothing else saved)",
                profile.display()
            )
        ),
        "{}",
        s.text()
    );
    Profile::load("--answers", &profile).expect("the saved profile is whole");
    assert!(!report.exists());

    // In the review offer, Ctrl-C keeps the answers given (saved as they are given).
    let answers = dir.path().join("review.yaml");
    let open = ["seq-numbers", "hot-path-alloc"];
    let mut text = String::from("answers:\n");
    for id in rtcheck::review::known_ids()
        .into_iter()
        .filter(|i| !open.contains(i))
    {
        text.push_str(&format!(
            "  - id: {id}\n    answer: na\n    reason: not here\n"
        ));
    }
    std::fs::write(&answers, text).unwrap();
    let mut s = guided();
    answer_questions(&mut s);
    s.answer("Save the profile", "n");
    s.answer("Save the audit report", "n");
    s.answer("Probe a deployed endpoint", "n");
    s.answer("Walk the application checklist", "y");
    s.answer("Answers file", &format!("{}{ENTER}", answers.display()));
    s.expect("[1/2]");
    s.answer("Done?", ENTER); // yes
    s.expect("[2/2]");
    s.answer("Done?", "\x03");
    assert_eq!(s.finish(), 130, "{}", s.text());
    assert!(
        says(&s.text(), "prompt interrupted; 1 answer saved to"),
        "{}",
        s.text()
    );
    let known = rtcheck::review::known_ids();
    let a = rtcheck::review::answers::load("--answers", &answers, &known).unwrap();
    let given = open.iter().filter(|id| a.get(id).is_some()).count();
    assert_eq!(
        given, 1,
        "the answer given is kept, the open one stays open"
    );
}
