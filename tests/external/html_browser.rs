//! `--format html` checked in a real browser: every report kind is rendered from a real
//! small run, loaded in headless Chromium (Debian package `chromium`; a missing browser
//! fails naming it), screenshotted, and read back from the DOM Chromium built: each plot
//! with its axes and series, every number on the page equal to the JSON of the same run,
//! and that the page made no request: Chromium's own network log (`--log-net-log`) of the
//! page load lists no request the page started, besides the static checks (CSP, no
//! external src/href). A control page with an image on a loopback port shows the log
//! check can fail.
use crate::common;
use assert_cmd::Command;
use common::Server;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("headless Chromium not found on PATH: install the Debian package `chromium` (apt-get install -y chromium; .ci/run does)")
        })
}

/// One headless Chromium run with a fresh profile, bounded in time; `net_log` writes
/// Chromium's network log there.
fn browse(action: &str, page: &Path, net_log: Option<&Path>) -> Vec<u8> {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1200,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(net_log.map(|p| format!("--log-net-log={}", p.display())))
        .arg(action)
        .arg(format!("file://{}", page.display()))
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium {action} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

struct Page {
    dom: String,
    /// The report's JSON as the page carries it.
    json: Value,
}

/// Dump the DOM and take a screenshot (in parallel), check the screenshot is a PNG of the
/// window's width, and the page's offline guarantees.
fn load(html: &Path) -> Page {
    let png = html.with_extension("png");
    let (h, p) = (html.to_path_buf(), png.clone());
    let shot =
        std::thread::spawn(move || browse(&format!("--screenshot={}", p.display()), &h, None));
    let log = html.with_extension("netlog.json");
    let dom = String::from_utf8(browse("--dump-dom", html, Some(&log))).unwrap();
    shot.join().unwrap();
    let fetched = page_requests(&log);
    assert!(fetched.is_empty(), "the page made requests: {fetched:?}");
    let img = std::fs::read(&png).unwrap();
    assert_eq!(&img[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(u32::from_be_bytes(img[16..20].try_into().unwrap()), 1200);
    let file = std::fs::read_to_string(html).unwrap();
    offline(&file);
    offline(&dom);
    let data = between(
        &dom,
        "<script type=\"application/json\" id=\"report-json\">",
        "</script>",
    )
    .expect("the page carries its JSON");
    let json = serde_json::from_str(data).unwrap();
    Page { dom, json }
}

/// The URLs of the requests the page started, from Chromium's network log. Chromium's own
/// background requests (updates, time) have no origin as initiator; a request from a
/// `file://` page has the opaque origin `null`, from any other page its origin.
fn page_requests(net_log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(net_log).unwrap();
    let log: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not a complete network log: {e}", net_log.display()));
    let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].clone();
    assert!(
        start.is_u64(),
        "no URL_REQUEST_START_JOB in the log's constants"
    );
    log["events"]
        .as_array()
        .expect("events in the network log")
        .iter()
        .filter(|e| e["type"] == start)
        .map(|e| &e["params"])
        .filter(|p| p["url"].is_string() && p["initiator"] != "not an origin")
        .map(|p| p["url"].as_str().unwrap().to_string())
        .collect()
}

fn between<'a>(s: &'a str, a: &str, b: &str) -> Option<&'a str> {
    let i = s.find(a)? + a.len();
    Some(&s[i..i + s[i..].find(b)?])
}

/// No element that fetches, every src/href local, the CSP in place, no script but data.
fn offline(html: &str) {
    assert!(
        html.contains(&format!(
            "http-equiv=\"Content-Security-Policy\" content=\"{CSP}\""
        )),
        "no CSP"
    );
    for tag in [
        "<link", "<img", "<iframe", "<object", "<embed", "<base", "<audio", "<video",
    ] {
        assert!(!html.contains(tag), "{tag} on the page");
    }
    assert_eq!(html.matches("<script").count(), 1, "one script element");
    assert!(html.contains("<script type=\"application/json\""));
    for attr in ["src=", "href=", "xlink:href=", "url("] {
        for part in html.split(attr).skip(1) {
            let v = part.trim_start_matches(['"', '\'']);
            assert!(
                !(v.starts_with("http") || v.starts_with("//") || v.starts_with("ftp")),
                "a network reference: {attr}{:.60}",
                part
            );
        }
    }
}

/// The value at `a.0.b` in the JSON.
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| match k.parse::<usize>() {
        Ok(i) if v.is_array() => &v[i],
        _ => &v[k],
    })
}

/// Every tagged number on the page equals its JSON value at the precision shown.
/// Returns how many were compared.
fn numbers_match(p: &Page) -> usize {
    let mut n = 0;
    for part in p.dom.split("data-path=\"").skip(1) {
        let path = &part[..part.find('"').unwrap()];
        let text = between(part, ">", "<").unwrap();
        let clean = text.replace(',', "");
        let shown: f64 = clean
            .parse()
            .unwrap_or_else(|_| panic!("{path}: `{text}` is not a number"));
        let want = at(&p.json, path)
            .as_f64()
            .unwrap_or_else(|| panic!("{path}: no number in the JSON"));
        let decimals = clean.split('.').nth(1).map_or(0, str::len) as i32;
        let tol = 0.5 * 10f64.powi(-decimals) + 1e-9 * want.abs();
        assert!(
            (shown - want).abs() <= tol,
            "{path}: page shows {text}, JSON has {want}"
        );
        n += 1;
    }
    n
}

struct Plot<'a> {
    id: &'a str,
    /// The SVG's text elements, trimmed (plotters puts them on lines of their own).
    texts: Vec<String>,
}

impl Plot<'_> {
    fn has(&self, t: &str) -> bool {
        self.texts.iter().any(|x| x == t)
    }
}

/// A plot's numeric texts (its value-axis tick labels where the other axis is named),
/// ascending.
#[cfg(feature = "redis")]
fn numeric_ticks(p: &Plot) -> Vec<f64> {
    let mut v: Vec<f64> = p
        .texts
        .iter()
        .filter_map(|t| t.replace(',', "").parse().ok())
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    between(tag, &format!("{name}=\""), "\"").unwrap_or_else(|| panic!("no {name} in {tag:.200}"))
}

/// Every plot on the page: an SVG with its axis titles, one line and legend entry per
/// series.
fn plots(dom: &str) -> Vec<Plot<'_>> {
    let mut out = Vec::new();
    for part in dom.split("<figure class=\"plot\"").skip(1) {
        let body = &part[..part.find("</figure>").unwrap()];
        let tag = &body[..body.find('>').unwrap()];
        let (id, x, y) = (
            attr(tag, "data-plot"),
            attr(tag, "data-x"),
            attr(tag, "data-y"),
        );
        let series: Vec<&str> = attr(tag, "data-series").split('|').collect();
        assert!(body.contains("<svg"), "{id}: no svg");
        let texts: Vec<String> = body
            .split("<text")
            .skip(1)
            .filter_map(|t| between(t, ">", "</text>"))
            .map(|t| t.trim().to_string())
            .collect();
        let p = Plot { id, texts };
        for axis in [x, y] {
            assert!(p.has(axis), "{id}: no axis {axis}");
        }
        assert!(
            body.matches("<polyline").count() >= series.len(),
            "{id}: fewer lines than series {series:?}"
        );
        for s in &series {
            assert!(p.has(s), "{id}: no legend {s}");
        }
        out.push(p);
    }
    out
}

fn rtcheck(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("rtcheck")
        .unwrap()
        .args(args)
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap()
}

fn ok(args: &[&str]) {
    ok_or_findings(args, &[0]);
}

/// Run and accept these exit codes (1: a finding at --fail-on, or an invalid measurement,
/// which a loaded machine may produce and the page must still show).
fn ok_or_findings(args: &[&str], codes: &[i32]) {
    let out = rtcheck(args);
    assert!(
        out.status.code().is_some_and(|c| codes.contains(&c)),
        "{args:?}: exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Write a page rendered by the library and load it like one the CLI wrote.
fn load_rendered(dir: &Path, name: &str, html: String) -> Page {
    let p = dir.join(name);
    std::fs::write(&p, html).unwrap();
    load(&p)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn fanout_page_plots_each_scenario_against_the_floor_with_the_runs_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let (html, json) = (
        dir.path().join("fanout.html"),
        dir.path().join("fanout.json"),
    );
    ok(&[
        "bench",
        "fanout",
        "--connections",
        "30",
        "--rounds",
        "12",
        "--rate",
        "20",
        "--scenario",
        "A",
        "--drain",
        "2s",
        "--format",
        "html",
        "-o",
        s(&html),
        "--save-json",
        s(&json),
    ]);
    let page = load(&html);
    let saved: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(page.json, saved, "the page carries this run's JSON");
    let n = numbers_match(&page);
    assert!(n >= 2 * 9 + 10, "only {n} numbers on the page");
    let ids: Vec<&str> = plots(&page.dom).iter().map(|p| p.id).collect();
    assert_eq!(
        ids,
        ["distribution-F", "rounds-F", "distribution-A", "rounds-A"]
    );
    let p = plots(&page.dom);
    assert!(p[2].has("A") && p[2].has("F (floor)"));
    for label in ["90", "99", "99.9", "99.99"] {
        assert!(p[2].has(label), "no tick {label}");
    }
    assert!(p[3].has("last client") && p[3].has("hub"));
    assert!(page.dom.contains("every result valid"));

    // The same run with A judged invalid: drawn as invalid, with its reason, no number.
    let mut rep: rtcheck::bench::model::BenchReport = serde_json::from_value(saved).unwrap();
    let a = &mut rep.scenarios[1];
    a.valid = false;
    (a.p50_ms, a.p99_ms, a.p999_ms, a.max_ms) = (None, None, None, None);
    (
        a.last_client_median_ms,
        a.last_client_max_ms,
        a.p99_vs_floor,
    ) = (None, None, None);
    a.percentiles.clear();
    a.per_round.clear();
    a.notes.insert(
        0,
        "INVALID: samples accounted: 3 samples unexplained".into(),
    );
    rep.valid = false;
    let bad = dir.path().join("invalid.html");
    let doc = rtcheck::report::fanout::bench_doc(&rep, true).unwrap();
    std::fs::write(&bad, rtcheck::report::doc::html::render(&doc)).unwrap();
    let page = load(&bad);
    numbers_match(&page);
    let ids: Vec<&str> = plots(&page.dom).iter().map(|p| p.id).collect();
    assert_eq!(ids, ["distribution-F", "rounds-F"]);
    assert!(
        !page.dom.contains("data-path=\"scenarios.1."),
        "a number for the invalid row"
    );
    let row = between(&page.dom, "<tr class=\"invalid\" data-row=\"A\">", "</tr>").unwrap();
    assert!(row.contains("3 samples unexplained"), "{row}");
    assert!(page.dom.contains("INVALID: A"));
}

/// `bench cluster` over a real redis-server (Debian package `redis-server`): per scenario
/// its verdict and numbers (equal to the JSON), latency and duplicate bars, ghosts over
/// time after the kill (ttl vs events); the same run with one scenario made invalid shows
/// its reasons and none of its numbers.
#[cfg(feature = "redis")]
#[test]
fn cluster_page_has_each_scenarios_numbers_bars_and_ghosts_over_time() {
    common::require_binary("redis-server", "redis-server");
    let dir = tempfile::tempdir().unwrap();
    let (html, json) = (
        dir.path().join("cluster.html"),
        dir.path().join("cluster.json"),
    );
    #[rustfmt::skip]
    ok_or_findings(&[
        "bench", "cluster", "--nodes", "2", "--connections", "8", "--rounds", "40",
        "--rate", "20", "--drain", "5s", "--scenario", "single,naive,node-kill",
        "--format", "html", "-o", s(&html), "--save-json", s(&json),
    ], &[0, 1]);
    let page = load(&html);
    let saved: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(page.json, saved, "the page carries this run's JSON");
    let rows = saved["scenarios"].as_array().unwrap();
    let valid: Vec<&str> = rows
        .iter()
        .filter(|r| r["valid"] == true)
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(
        numbers_match(&page) >= 8 + valid.len() * 14,
        "too few numbers"
    );
    for (i, r) in rows.iter().enumerate() {
        let tagged = page
            .dom
            .contains(&format!("data-path=\"scenarios.{i}.p50_ms\""));
        assert_eq!(tagged, r["valid"] == true, "{}", r["name"]);
    }
    let p = plots(&page.dom);
    let ids: Vec<&str> = p.iter().map(|p| p.id).collect();
    let mut want = vec!["latency", "duplicates"];
    if valid.contains(&"node-kill") {
        want.push("ghosts-node-kill");
    }
    assert_eq!(ids, want, "{valid:?}");
    for (name, texts) in [
        ("latency", ["p50", "p99", "p99.9"].as_slice()),
        ("duplicates", valid.as_slice()),
    ] {
        let plot = p.iter().find(|x| x.id == name).unwrap();
        for t in texts.iter().chain(valid.iter()) {
            assert!(plot.has(t), "{name}: no {t}");
        }
    }
    if valid.contains(&"naive") {
        assert!(p[1].has("a"), "naive duplicates come from node a");
    }
    // Latency on a log scale (ticks a constant ratio apart, none at 0), so a Redis
    // restart's seconds beside a millisecond baseline stay readable; counts in whole numbers.
    let lat = numeric_ticks(&p[0]);
    assert!(lat.len() >= 2 && lat[0] > 0.0, "log ms ticks: {lat:?}");
    let ratios: Vec<f64> = lat.windows(2).map(|w| w[1] / w[0]).collect();
    assert!(
        ratios
            .iter()
            .all(|r| *r > 1.5 && (r / ratios[0] - 1.0).abs() < 0.1),
        "log ms ticks: {lat:?}"
    );
    assert!(p[0].has("ms (log scale)"));
    let dups = numeric_ticks(&p[1]);
    assert!(
        !dups.is_empty() && dups.iter().all(|t| t.fract() == 0.0),
        "count ticks: {dups:?}"
    );
    if let Some(g) = p.get(2) {
        assert!(
            g.has("ttl") && g.has("events"),
            "ghost series ttl and events"
        );
    }

    // The same run with naive judged invalid: its reasons, no number, no bar.
    let mut rep: rtcheck::bench::cluster::model::ClusterReport =
        serde_json::from_value(saved).unwrap();
    let n = rep
        .scenarios
        .iter()
        .position(|s| s.name == "naive")
        .unwrap();
    rep.scenarios[n].valid = false;
    rep.scenarios[n]
        .notes
        .insert(0, "INVALID: 7 samples unexplained".into());
    rep.valid = false;
    let doc = rtcheck::report::cluster::cluster_doc(&rep).unwrap();
    let page = load_rendered(
        dir.path(),
        "invalid.html",
        rtcheck::report::doc::html::render(&doc),
    );
    numbers_match(&page);
    assert!(!page.dom.contains(&format!("data-path=\"scenarios.{n}.")));
    let row = between(
        &page.dom,
        "<tr class=\"invalid\" data-row=\"naive\">",
        "</tr>",
    )
    .expect("naive drawn as invalid");
    assert!(row.contains("7 samples unexplained"), "{row}");
    assert!(page.dom.contains("INVALID: naive"));
    let bars = plots(&page.dom);
    assert!(!bars[0].has("naive"), "a bar for the invalid scenario");
}

#[test]
fn idle_page_plots_rss_against_connections() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("idle.html");
    ok(&[
        "bench",
        "idle",
        "--connections",
        "120",
        "--settle",
        "0s",
        "--format",
        "html",
        "-o",
        s(&html),
    ]);
    let page = load(&html);
    assert!(numbers_match(&page) >= 2 * 4);
    let p = plots(&page.dom);
    assert_eq!(p.len(), 1);
    assert!(p[0].has("ws") && p[0].has("sse"));
    for r in page.json["results"].as_array().unwrap() {
        let samples = r["samples"].as_array().unwrap();
        assert!(samples.len() >= 2, "{r}");
        assert_eq!(samples[0]["connections"], 0);
        assert_eq!(samples.last().unwrap()["connections"], r["connected"]);
    }
}

#[test]
fn audit_page_shows_every_finding_with_its_status_fix_and_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("audit.html");
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stock-distro");
    let (procfs, sysfs) = (tree.join("proc"), tree.join("sys"));
    let args = [
        "audit",
        "--procfs",
        s(&procfs),
        "--sysfs",
        s(&sysfs),
        "--fail-on",
        "never",
    ];
    ok(&[&args[..], &["--format", "html", "-o", s(&html)]].concat());
    let page = load(&html);
    let out = rtcheck(&[&args[..], &["--format", "json"]].concat());
    let mut json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut carried = page.json.clone();
    json["duration_ms"] = Value::Null;
    carried["duration_ms"] = Value::Null;
    assert_eq!(carried, json, "the page's findings are the audit's");
    assert!(numbers_match(&page) >= 4);
    let findings = json["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|f| f["status"] == "fail"),
        "fixture has a fail"
    );
    // Most severe first: fail, warn, pass, skip (the report's order within a status).
    let rank = |s: &str| {
        ["fail", "warn", "pass", "skip", "suppressed"]
            .iter()
            .position(|x| *x == s)
    };
    let mut at: Vec<(Option<usize>, usize)> = Vec::new();
    for (i, f) in findings.iter().enumerate() {
        let id = f["id"].as_str().unwrap();
        let st = f["status"].as_str().unwrap();
        let anchor = format!("id=\"finding-{i}-{id}\"");
        assert_eq!(page.dom.matches(&anchor).count(), 1, "{anchor}");
        at.push((rank(st), page.dom.find(&anchor).unwrap()));
        let card = between(&page.dom, &anchor, "</div>").unwrap();
        assert!(card.contains(&format!("data-status=\"{st}\"")), "{id}");
        assert!(
            card.contains(&format!("class=\"status s-{st}\">{st}</span>")),
            "{id}"
        );
        for e in f["evidence"].as_array().unwrap() {
            assert!(
                card.contains(&format!("<b>{}</b>", e["id"].as_str().unwrap())),
                "{id}"
            );
        }
        if st == "fail" {
            assert!(card.contains("<b>Fix</b>"), "{id}: no fix");
        }
    }
    let mut by_place = at.clone();
    by_place.sort_by_key(|(_, place)| *place);
    let ranks: Vec<_> = by_place.iter().map(|(r, _)| *r).collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
    assert!(
        page.dom.contains(".s-fail{background:#c62828}"),
        "status colours"
    );
}

#[test]
fn verify_page_shows_measurements_beside_their_references() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("verify.html");
    ok(&[
        "verify",
        "tcp-wmem",
        "fd-limit",
        "--limit",
        "64",
        "--quiet",
        "--format",
        "html",
        "-o",
        s(&html),
    ]);
    let page = load(&html);
    assert!(numbers_match(&page) >= 2 + 3);
    let v = page.json["verifications"].as_array().unwrap();
    assert!(v.len() >= 2);
    for (i, m) in v.iter().enumerate() {
        let name = m["name"].as_str().unwrap();
        // Its row in the table of measurements beside their references.
        let refs = between(&page.dom, "id=\"references\"", "</table>").unwrap();
        let t = between(refs, &format!("data-row=\"{name}\""), "</tr>").unwrap();
        let reference = m["reference"].as_str().unwrap().replace('&', "&amp;");
        assert!(t.contains(&reference), "{name}: no reference beside it");
        if m["valid"] == true {
            assert!(
                t.contains(&format!("data-path=\"verifications.{i}.measured\"")),
                "{name}"
            );
        }
    }
}

#[test]
fn choose_page_is_the_recommendation_with_its_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("choose.html");
    let args = [
        "choose",
        "--visible-within",
        "5s",
        "--upstream",
        "sparse",
        "--loss",
        "shared",
    ];
    ok(&[&args[..], &["--format", "html", "-o", s(&html)]].concat());
    let page = load(&html);
    let json: Value =
        serde_json::from_slice(&rtcheck(&[&args[..], &["--format", "json"]].concat()).stdout)
            .unwrap();
    assert_eq!(page.json, json);
    assert!(
        !json["alternatives"].as_array().unwrap().is_empty(),
        "5s shows both"
    );
    assert!(numbers_match(&page) >= 7 + 4 * 2);
    let verdict = between(&page.dom, "id=\"verdict\">", "<").unwrap();
    assert!(
        verdict.starts_with(json["transport"].as_str().unwrap()),
        "{verdict}"
    );
    for r in json["reasons"].as_array().unwrap() {
        assert!(page
            .dom
            .contains(&format!("id=\"reason-{}\"", r["id"].as_str().unwrap())));
    }
}

/// Each finding of the page's JSON as a card with its status colour and its evidence.
fn cards_match(dom: &str, json: &Value, anchor: impl Fn(usize, &Value) -> String) {
    for (i, f) in json["findings"].as_array().unwrap().iter().enumerate() {
        let st = f["status"].as_str().unwrap();
        let a = anchor(i, f);
        let card = between(dom, &format!("id=\"finding-{a}\""), "</div>")
            .unwrap_or_else(|| panic!("no card finding-{a}"));
        assert!(card.contains(&format!("data-status=\"{st}\"")), "{a}");
        assert!(
            card.contains(&format!("class=\"status s-{st}\">{st}</span>")),
            "{a}"
        );
        for e in f["evidence"].as_array().unwrap() {
            assert!(
                card.contains(&format!("<b>{}</b>", e["id"].as_str().unwrap())),
                "{a}: evidence"
            );
        }
    }
}

#[test]
fn load_page_plots_throughput_and_p99_against_concurrency_with_the_knee() {
    // 4 workers x 20 ms: capacity 200 req/s, so the sweep passes it.
    let server = Server::start(&["--workers", "4"]);
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("load.html");
    let url = format!("http://{}/work?ms=20", server.addr);
    let metrics = format!("http://{}/metrics", server.addr);
    let levels = ["1", "2", "4", "8", "16"];
    ok_or_findings(
        &[
            "load",
            &url,
            "--concurrency",
            &levels.join(","),
            "--step",
            "700ms",
            "--metrics",
            &metrics,
            "--format",
            "html",
            "-o",
            s(&html),
        ],
        &[0, 1],
    );
    let page = load(&html);
    let rep: rtcheck::load::model::LoadReport =
        serde_json::from_value(page.json.clone()).expect("the page carries a load report");
    assert_eq!(rep.levels.len(), levels.len());
    let valid = rep.levels.iter().filter(|l| l.valid).count();
    assert!(numbers_match(&page) >= valid * 9, "too few numbers");
    for (i, l) in rep.levels.iter().enumerate() {
        let tagged = page
            .dom
            .contains(&format!("data-path=\"levels.{i}.p99_ms\""));
        assert_eq!(tagged, l.valid, "C = {}", l.concurrency);
    }
    let p = plots(&page.dom);
    if valid == 0 {
        assert!(p.is_empty() && page.dom.contains("no valid level to plot"));
    } else {
        let ids: Vec<&str> = p.iter().map(|p| p.id).collect();
        assert_eq!(ids, ["throughput", "p99"]);
        for plot in &p {
            assert!(plot.has("concurrency"), "{}", plot.id);
            assert_eq!(plot.has("knee"), rep.knee.is_some(), "{}", plot.id);
        }
        // One marker per valid level, two for the knee line's ends.
        let knee_ends = if rep.knee.is_some() { 2 } else { 0 };
        assert_eq!(circles(&page.dom, "throughput"), valid + knee_ends);
        let first = rep.levels.iter().find(|l| l.valid).unwrap();
        assert!(p[0].has(&first.concurrency.to_string()), "a tick at C");
        assert!(p[0].has("throughput") && p[1].has("p99"));
    }
    if let Some(k) = &rep.knee {
        assert!(page
            .dom
            .contains(&format!("<td>{} (knee)</td>", k.concurrency)));
    }
    cards_match(&page.dom, &page.json, |_, f| {
        f["id"].as_str().unwrap().to_string()
    });

    // A level judged invalid: its row says why, no number of it on the page or the plot.
    let mut bad = rep.clone();
    bad.levels[1].valid = false;
    bad.levels[1].invalid = vec!["loadgen saturated: CPU 99% of its threads".into()];
    bad.knee = None;
    let doc = rtcheck::report::load::load_doc(&bad).unwrap();
    let page = load_rendered(
        dir.path(),
        "invalid.html",
        rtcheck::report::doc::html::render(&doc),
    );
    numbers_match(&page);
    assert!(!page.dom.contains("data-path=\"levels.1."));
    let row = between(&page.dom, "<tr class=\"invalid\" data-row=\"2\">", "</tr>").unwrap();
    assert!(row.contains("loadgen saturated"), "{row}");
    let verdict = between(&page.dom, "id=\"verdict\">", "<").unwrap();
    assert!(
        verdict.starts_with("INVALID: ") && verdict.contains("C = 2"),
        "{verdict}"
    );
    for plot in plots(&page.dom) {
        assert!(!plot.has("knee"));
    }
    let still_valid = bad.levels.iter().filter(|l| l.valid).count();
    assert_eq!(
        circles(&page.dom, "p99"),
        still_valid,
        "a marker for the invalid level"
    );
}

/// Point markers in one plot.
fn circles(dom: &str, plot: &str) -> usize {
    let fig = between(dom, &format!("data-plot=\"{plot}\""), "</figure>").unwrap();
    fig.matches("<circle").count()
}

#[test]
fn budget_page_shows_the_four_ways_computed_and_live_as_table_and_bars() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("budget.html");
    let args = [
        "budget",
        "--hop",
        "auth:24ms:18ms",
        "--hop",
        "db:24ms:18ms",
        "--hop",
        "search:24ms:118ms",
        "--budget",
        "200ms",
        "--deadline",
        "120ms",
        "--hedge-after",
        "80ms",
        "--fail-on",
        "never",
    ];
    ok(&[&args[..], &["--format", "html", "-o", s(&html)]].concat());
    let page = load(&html);
    let json: Value =
        serde_json::from_slice(&rtcheck(&[&args[..], &["--format", "json"]].concat()).stdout)
            .unwrap();
    assert_eq!(page.json, json, "the page carries the same report");
    assert!(numbers_match(&page) >= 4 + 3 * 2 + 3 + 3, "too few numbers");
    for key in [
        "sequential_ms",
        "parallel_ms",
        "sequential_reused_ms",
        "parallel_reused_ms",
    ] {
        assert!(page.dom.contains(&format!("data-path=\"{key}\"")), "{key}");
    }
    let p = plots(&page.dom);
    assert_eq!(p.len(), 1);
    for t in ["seq new", "par new", "seq reused", "par reused", "computed"] {
        assert!(p[0].has(t), "no {t}");
    }
    cards_match(&page.dom, &page.json, |_, f| {
        f["id"].as_str().unwrap().to_string()
    });

    // Live: two serve instances stand in for the hops.
    let (a, b) = (
        Server::start(&["--workers", "4"]),
        Server::start(&["--workers", "4"]),
    );
    let live = dir.path().join("live.html");
    let urls = [a.addr, b.addr].map(|x| format!("http://{x}/work?ms=10"));
    ok_or_findings(
        &[
            "budget",
            "--rounds",
            "3",
            "--format",
            "html",
            "-o",
            s(&live),
            "--live",
            &urls[0],
            &urls[1],
        ],
        &[0, 1],
    );
    let page = load(&live);
    numbers_match(&page);
    let rep: rtcheck::budget::model::BudgetReport =
        serde_json::from_value(page.json.clone()).unwrap();
    let l = rep.live.as_ref().expect("a live run");
    let p = plots(&page.dom);
    if l.invalid.is_none() {
        for key in ["sequential_ms", "parallel_reused_ms"] {
            for path in [format!("live.{key}"), format!("live.computed.{key}")] {
                assert!(
                    page.dom.contains(&format!("data-path=\"{path}\"")),
                    "{path}"
                );
            }
        }
        assert!(p[0].has("live, measured") && p[0].has("live, computed"));
    }

    // An invalid live run: its reason, none of its numbers, no live bars.
    let mut bad = rep.clone();
    if let Some(l) = bad.live.as_mut() {
        l.invalid = Some("hop 2: connection refused".into());
    }
    let page = load_rendered(
        dir.path(),
        "invalid.html",
        rtcheck::report::doc::html::render(&rtcheck::report::budget::doc(&bad).unwrap()),
    );
    numbers_match(&page);
    assert!(!page.dom.contains("data-path=\"live.sequential_ms\""));
    assert!(page.dom.contains("hop 2: connection refused"));
    assert!(page.dom.contains("INVALID live run"));
    let p = plots(&page.dom);
    assert!(p[0].has("computed") && !p[0].has("live, measured"));
}

#[test]
fn delivery_page_has_every_run_and_finding_with_the_runs_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("delivery.html");
    ok(&[
        "verify",
        "delivery",
        "--delivery",
        "seq-ring",
        "--rate",
        "50",
        "--size",
        "256",
        "--max-disconnect",
        "600ms",
        "--connections",
        "3",
        "--format",
        "html",
        "-o",
        s(&html),
    ]);
    let page = load(&html);
    let runs = page.json["runs"].as_array().unwrap();
    assert!(runs.len() >= 2, "{}", page.json);
    assert!(numbers_match(&page) >= runs.len() * 8, "too few numbers");
    for (i, r) in runs.iter().enumerate() {
        let name = format!(
            "{}/{}/{}",
            r["delivery"].as_str().unwrap(),
            r["disconnect"].as_str().unwrap(),
            r["case"].as_str().unwrap()
        );
        let st = r["status"].as_str().unwrap();
        let row = between(&page.dom, &format!("data-row=\"{name}\""), "</tr>")
            .unwrap_or_else(|| panic!("no row {name}"));
        assert!(row.contains(&format!("s-{st}\">{st}<")), "{name}");
        // Every numeric key of the run, flattened, is on its row.
        for (k, v) in r.as_object().unwrap() {
            let keys: Vec<String> = match v {
                Value::Number(_) => vec![k.clone()],
                Value::Object(m) => m.keys().map(|x| format!("{k}.{x}")).collect(),
                _ => vec![],
            };
            for k in keys {
                assert!(
                    row.contains(&format!("data-path=\"runs.{i}.{k}\"")),
                    "{name}: no {k}"
                );
            }
        }
    }
    cards_match(&page.dom, &page.json, |_, f| {
        f["id"].as_str().unwrap().to_string()
    });
    assert!(page.dom.contains("id=\"verdict\">verify delivery"));
    let p = plots(&page.dom);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].id, "losses");
    for t in ["lost silently", "announced in gaps", "duplicated"] {
        assert!(p[0].has(t), "no {t}");
    }
    assert!(
        p[0].has("1") && p[0].has(&runs.len().to_string()),
        "run ticks"
    );
}

#[test]
fn probe_page_groups_checks_per_url_and_renders_any_finding() {
    let server = Server::start(&["--rate", "5", "--size", "256", "--ping", "2s"]);
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("probe.html");
    let (ws, sse) = (
        format!("ws://{}/ws", server.addr),
        format!("http://{}/sse", server.addr),
    );
    ok_or_findings(
        &[
            "probe",
            "--quick",
            &ws,
            &sse,
            "--format",
            "html",
            "-o",
            s(&html),
        ],
        &[0, 1],
    );
    let page = load(&html);
    assert!(numbers_match(&page) >= 4);
    let findings = page.json["findings"].as_array().unwrap();
    for (n, u) in [&ws, &sse].iter().enumerate() {
        let section = between(&page.dom, &format!("data-part=\"{u}\""), "</section>")
            .unwrap_or_else(|| panic!("no section for {u}"));
        let mine = findings
            .iter()
            .filter(|f| f["title"].as_str().unwrap().ends_with(u.as_str()));
        let mut count = 0;
        for f in mine {
            let (id, st) = (f["id"].as_str().unwrap(), f["status"].as_str().unwrap());
            assert!(
                section.contains(&format!("<tr data-row=\"{id}\" data-status=\"{st}\">")),
                "{u}: {id}"
            );
            assert!(
                section.contains(&format!("id=\"finding-{n}-{id}\"")),
                "{u}: {id}"
            );
            count += 1;
        }
        assert!(count >= 3, "{u}: {count} findings");
    }
    let urls = [ws.clone(), sse.clone()];
    cards_match(&page.dom, &page.json, |_, f| {
        let t = f["title"].as_str().unwrap();
        let n = urls.iter().position(|u| t.ends_with(u.as_str())).unwrap();
        format!("{n}-{}", f["id"].as_str().unwrap())
    });

    // A finding of a kind this page never saw (a browser check, say) renders as it is.
    let mut rep: rtcheck::report::FindingsReport =
        serde_json::from_value(page.json.clone()).unwrap();
    let mut extra = rep.findings[0].clone();
    extra.id = "browser-sse-limit".into();
    extra.title = format!("Seventh EventSource waits: {sse}");
    extra.status = rtcheck::findings::Status::Warn;
    extra.numbers.insert("seventh_wait_ms".into(), 1234.0);
    rep.findings.push(extra);
    rep.summary = rtcheck::findings::Summary::of(&rep.findings);
    let page = load_rendered(
        dir.path(),
        "extra.html",
        rtcheck::report::doc::html::render(&rtcheck::report::probe::probe_page(&rep).unwrap()),
    );
    numbers_match(&page);
    let section = between(&page.dom, &format!("data-part=\"{sse}\""), "</section>").unwrap();
    assert!(section.contains("<tr data-row=\"browser-sse-limit\" data-status=\"warn\">"));
    let i = rep.findings.len() - 1;
    assert!(section.contains(&format!(
        "data-path=\"findings.{i}.numbers.seventh_wait_ms\">1,234<"
    )));
}

#[test]
fn the_network_log_check_catches_a_page_that_fetches() {
    // An image on a loopback port nobody answers well: the request is made, then fails.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("fetches.html");
    let url = format!("http://{}/x.png", l.local_addr().unwrap());
    std::fs::write(
        &html,
        format!("<!DOCTYPE html><html><body><img src=\"{url}\"><p>x</p></body></html>"),
    )
    .unwrap();
    let log = dir.path().join("net.json");
    std::thread::spawn(move || {
        // Answer nothing and close: the browser gives up at once.
        for c in l.incoming() {
            drop(c);
        }
    });
    browse("--dump-dom", &html, Some(&log));
    assert_eq!(page_requests(&log), [url]);
}
