//! Flows end to end: `loadlab attack -scenarios` runs flows (docs/FLOWS.md) against the
//! simulator's application recipe on loopback, in both models, and the record file
//! says what each step got and which checks failed; bad flows are refused by name.
//! Steps that hold a connection open (`ws`, `sse`; docs/STREAMING.md) run against the
//! simulator's streaming routes and Python's `websockets` echo: a record per connect,
//! action and event, named by step; refusals, timeouts and early ends counted by kind.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use record::{ErrorKind, Record, RunTables};

fn loadlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "loadlab-flows-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The application recipe the docs ship, served on a free loopback port.
fn app() -> simulator::Simulator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/recipes/app_login.json"
    );
    serve(&std::fs::read_to_string(path).unwrap())
}

fn serve(recipe: &str) -> simulator::Simulator {
    let recipe = simulator::parse_recipe(recipe, "test recipe").unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    simulator::Simulator::start(options, &recipe).unwrap()
}

/// Log in (the cookie and a token), list the items, open one from the list.
fn shop_flow(addr: std::net::SocketAddr, pacing: &str) -> String {
    format!(
        r#"
[[scenario]]
name = "shop"
{pacing}

[[scenario.step]]
name = "login"
request = "POST http://{addr}/login?user=u{{{{user}}}}\nContent-Type: application/json"
body = '{{"user":"u{{{{user}}}}"}}'
extract = {{ token = "json $.token" }}
checks = ["status 200", "json $.token exists", "header content-type contains json"]

[[scenario.step]]
name = "list"
request = "GET http://{addr}/items\nAuthorization: Bearer {{{{token}}}}"
extract = {{ item = "json $.items[*].id" }}
checks = ["status 200", {{ name = "has items", expect = "json $.items[0].id exists" }}]
think = "uniform(1ms, 5ms)"

[[scenario.step]]
name = "item"
request = "GET http://{addr}/items/{{{{item}}}}"
checks = ["status 200", "json $.id exists", "latency < 5s"]
"#
    )
}

/// Every record and the run's tables.
fn read(path: &str) -> (Vec<Record>, RunTables) {
    let mut source = record::open_input(path).unwrap();
    let (mut all, mut batch) = (Vec::new(), Vec::new());
    while source.next_batch(&mut batch).unwrap() {
        all.extend_from_slice(&batch);
    }
    (all, source.tables().clone())
}

/// Records per step name.
/// The figures of every `ws` and `sse` connection of the record file at `path`, by
/// their step's name.
fn connections(path: &str) -> BTreeMap<String, Vec<record::Connection>> {
    let mut source = record::open_input(path).unwrap();
    let (mut all, mut batch) = (Vec::new(), Vec::new());
    while source.next_batch(&mut batch).unwrap() {
        source.drain_connections(&mut all);
    }
    source.drain_connections(&mut all);
    let mut out: BTreeMap<String, Vec<record::Connection>> = BTreeMap::new();
    for c in all {
        let step = source.tables().targets[c.target as usize].step.clone();
        out.entry(step.unwrap()).or_default().push(c);
    }
    out
}

fn per_step(records: &[Record], tables: &RunTables) -> BTreeMap<String, Vec<Record>> {
    let mut out: BTreeMap<String, Vec<Record>> = BTreeMap::new();
    for record in records {
        let step = tables.targets[record.target as usize].step.clone().unwrap();
        out.entry(step).or_default().push(*record);
    }
    out
}

fn attack(dir: &TempDir, flow: &str) -> (Output, String) {
    let (mut command, output) = attack_command(dir, flow);
    (command.output().unwrap(), output)
}

/// `loadlab attack` of `flow` (written in `dir`), and its record file's path.
fn attack_command(dir: &TempDir, flow: &str) -> (Command, String) {
    let scenarios = dir.write("flow.toml", flow);
    let output = dir.0.join("run.llr").to_string_lossy().into_owned();
    let mut command = Command::new(env!("CARGO_BIN_EXE_loadlab"));
    let args = ["-scenarios", &scenarios, "-output", &output, "-quiet"];
    command.arg("attack").args(args);
    (command, output)
}

/// Users (`pacing`) that connect to the [`STREAMS`] echo at `addr` and hold it.
fn hold_flow(addr: std::net::SocketAddr, name: &str, pacing: &str, hold: &str) -> String {
    format!(
        r#"
[[scenario]]
name = "{name}"
{pacing}
duration = "1s"
timeout = "2s"

[[scenario.step]]
name = "{name}"
ws = "ws://{addr}/chat\nAuthorization: Bearer t1"
actions = [{{ hold = "{hold}" }}]
"#
    )
}

/// Records by step name.
type Steps = BTreeMap<String, Vec<Record>>;

/// Runs `flow` in `dir` and checks it exited 0: the record file, its records, its
/// tables and its records by step.
fn attack_ok(dir: &TempDir, flow: &str) -> (String, Vec<Record>, RunTables, Steps) {
    let (run, path) = attack(dir, flow);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let (records, tables) = read(&path);
    let steps = per_step(&records, &tables);
    (path, records, tables, steps)
}

#[test]
fn an_open_model_flow_logs_in_lists_and_opens_an_item() {
    let server = app();
    let dir = TempDir::new();
    let (path, records, tables, steps) = attack_ok(
        &dir,
        &shop_flow(server.local_addr(), "rate = \"40/1s\"\nmax_requests = 30"),
    );
    assert_eq!(steps.keys().collect::<Vec<_>>(), ["item", "list", "login"]);
    for (name, got) in &steps {
        assert_eq!(got.len(), 30, "{name}: one per flow started");
        // /items needs the session cookie and /items/{id} an id of the list: a 200
        // proves the jar and the extraction.
        assert!(
            got.iter()
                .all(|r| r.status == 200 && r.error == 0 && r.checks_failed == 0),
            "{name}: {got:?}"
        );
    }
    let login = tables
        .targets
        .iter()
        .find(|t| t.step.as_deref() == Some("login"))
        .unwrap();
    assert_eq!(
        login.checks,
        [
            "status 200",
            "json $.token exists",
            "header content-type contains json"
        ]
    );
    assert!(tables.attacks[0].flow);
    // Each step is timed from its own intended time: after the list's answer and a think.
    let runs: BTreeMap<u64, Vec<&Record>> = records.iter().fold(BTreeMap::new(), |mut acc, r| {
        acc.entry(r.seq >> 16).or_insert_with(Vec::new).push(r);
        acc
    });
    assert_eq!(runs.len(), 30);
    // The report holds the flow to the flows it started, and counts every check.
    let report = text(&loadlab(&["report", &path]).stdout);
    let asked = report
        .lines()
        .find(|l| l.starts_with("Asked Rate"))
        .unwrap();
    let figures: Vec<f64> = asked[48..]
        .split(", ")
        .take(2)
        .map(|f| f.parse().unwrap())
        .collect();
    // Asked over the span of the 30 starts' intended times (29 gaps of 25 ms), as a
    // plain attack's is: 41.38, and the starts achieved on the same footing.
    assert!(
        (40.0..42.0).contains(&figures[0]) && (36.0..44.0).contains(&figures[1]),
        "{asked}"
    );
    assert!(
        report.contains("login: json $.token exists                    30      0    100.00%"),
        "{report}"
    );
    for requests in runs.values() {
        let mut requests = requests.clone();
        requests.sort_by_key(|r| r.seq);
        assert_eq!(requests.len(), 3);
        for pair in requests.windows(2) {
            assert!(
                pair[1].intended_unix_ns >= pair[0].end_unix_ns(),
                "{pair:?}"
            );
        }
    }
}

/// The rate after `label ` in a progress line: `runs started 20.0/s` -> 20.
/// A flow held back by its cap (2 in flight, 100 ms answers: 20 requests a second for
/// 3-step runs asked at 20 a second) starts fewer runs than asked; its unsent are the
/// runs it never started, not the runs asked less every step's requests (about 0).
#[test]
fn a_flow_held_back_counts_the_runs_it_never_started_as_unsent() {
    let server = serve(r#"[{"route": "/*", "stages": [{"status": 200, "latency": "100ms"}]}]"#);
    let addr = server.local_addr();
    let step = |name: &str| {
        format!("[[scenario.step]]\nname = \"{name}\"\nrequest = \"GET http://{addr}/{name}\"\n")
    };
    let flow = format!(
        "[[scenario]]\nname = \"held\"\nrate = 20\nduration = \"2s\"\nmax_workers = 2\n\n{}{}{}",
        step("a"),
        step("b"),
        step("c")
    );
    let dir = TempDir::new();
    let (path, records, _, _) = attack_ok(&dir, &flow);
    let started = records.iter().filter(|r| r.seq & 0xffff == 0).count() as u64;
    let report = text(&loadlab(&["report", &path]).stdout);
    let asked = (report.lines())
        .find(|l| l.starts_with("Asked Rate"))
        .unwrap_or_else(|| panic!("{report}"));
    let unsent: u64 = asked.rsplit(", ").next().unwrap().trim().parse().unwrap();
    assert!(
        started < 30,
        "{started} runs started: the cap held them back"
    );
    assert_eq!(unsent, 40 - started, "{asked} ({started} started)");
}

fn progress_rate(line: &str, label: &str) -> f64 {
    let at = line
        .find(label)
        .unwrap_or_else(|| panic!("no {label:?} in {line}"));
    let rest = &line[at + label.len()..];
    rest.split('/').next().unwrap().parse().unwrap()
}

#[test]
fn the_progress_line_holds_a_flow_to_its_runs_started_with_its_requests_beside() {
    // A flow of 3 steps at 20 runs a second: the line's last second says about 20 runs
    // started of 20 asked (the engine's count as it goes), and about 60 requests.
    let server = app();
    let dir = TempDir::new();
    let flow = shop_flow(server.local_addr(), "rate = 20\nduration = \"6s\"");
    let scenarios = dir.write("flow.toml", &flow);
    let output = dir.0.join("run.llr").to_string_lossy().into_owned();
    let out = loadlab(&["attack", "-scenarios", &scenarios, "-output", &output]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let line = (stderr.lines())
        .find(|line| line.contains("s/6s  "))
        .unwrap_or_else(|| panic!("a progress line after 5 s: {stderr}"));
    let (started, asked) = (
        progress_rate(line, "runs started "),
        progress_rate(line, "/s of "),
    );
    let requests = progress_rate(line, "requests sent ");
    // Over a stats interval of about a second: a start at its very edge may fall on
    // either side of it on a busy machine.
    assert!((started - asked).abs() <= 2.0, "{line}");
    assert!((18.0..=22.0).contains(&asked), "{line}");
    assert!((requests - 3.0 * started).abs() <= 6.0, "{line}");
}

#[test]
fn a_closed_model_flow_loops_its_users_with_one_data_row_each() {
    let server = app();
    let dir = TempDir::new();
    dir.write("users.csv", "user\nann\nbob\n");
    let flow = shop_flow(
        server.local_addr(),
        "concurrency = 2\nthink_time = \"5ms\"\nduration = \"1s\"\ndata = \"users.csv\"",
    )
    .replace("u{{user}}", "{{csv.user}}");
    let (_, _, _, steps) = attack_ok(&dir, &flow);
    let logins = steps["login"].len();
    assert!(logins >= 4, "two users loop: {logins} logins");
    assert!(
        steps
            .values()
            .flatten()
            .all(|r| r.status == 200 && r.checks_failed == 0)
    );
    // One more user than rows: refused before the run, naming the file and the field.
    let (run, _) = attack(&dir, &flow.replace("concurrency = 2", "concurrency = 3"));
    let err = text(&run.stderr);
    assert!(!run.status.success());
    assert!(
        err.contains("flow.toml:2: scenario \"shop\": data: 2 rows for 3 users"),
        "{err}"
    );
}

#[test]
fn failed_checks_and_extractions_are_counted_and_named() {
    let server = app();
    let dir = TempDir::new();
    let flow = shop_flow(server.local_addr(), "rate = \"50/1s\"\nmax_requests = 10")
        .replace(
            "\"status 200\", \"json $.token exists\"",
            "\"status 201\", \"json $.token exists\"",
        )
        .replace("json $.items[*].id", "json $.things[0].id");
    let (path, _, tables, steps) = attack_ok(&dir, &flow);
    // The live view's last line says how the checks went.
    let scenarios = dir.write("again.toml", &flow);
    let live = loadlab(&["attack", "-scenarios", &scenarios, "-output", &path]);
    let last = text(&live.stderr)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    assert!(
        last.ends_with("checks 80% passed (worst: login: status 201, 10 failed)"),
        "{last}"
    );
    // The item step needs {{item}}, which the list never gives: it is never sent.
    assert_eq!(steps.keys().collect::<Vec<_>>(), ["list", "login"]);
    let error = |r: &Record| tables.errors[r.error as usize - 1].clone();
    for r in &steps["login"] {
        assert_eq!(r.checks_failed, 0b001 | Record::FAILED_BY_FLOW);
        assert!(!r.is_success());
        assert_eq!(
            (error(r).kind, error(r).text.as_str()),
            (
                ErrorKind::Check,
                "step \"login\": check \"status 201\" failed"
            )
        );
    }
    for r in &steps["list"] {
        assert_eq!(
            r.checks_failed,
            Record::FAILED_BY_FLOW,
            "its checks pass: items are there"
        );
        assert_eq!(error(r).kind, ErrorKind::Extract);
        assert_eq!(
            error(r).text,
            "step \"list\": extract item: \"json $.things[0].id\" found nothing"
        );
    }
    // With checks_fail_requests = false, a failed check is counted but not a failure.
    let lenient = flow.replace(
        "max_requests = 10",
        "max_requests = 10\nchecks_fail_requests = false",
    );
    let (_, _, _, steps) = attack_ok(&dir, &lenient);
    let login = &steps["login"];
    assert!(
        login
            .iter()
            .all(|r| r.checks_failed == 0b001 && r.is_success() && r.error == 0)
    );
}

#[test]
fn refused_cookies_and_huge_answers_are_counted_not_fatal() {
    let server = serve(
        r#"[{"route": "/login", "body": "{}", "headers": {"set-cookie": "sid=1; Domain=evil.test"}, "stages": [{"at": 0, "status": 200}]},
            {"route": "/big", "random_content": "3mb", "stages": [{"at": 0, "status": 200}]}]"#,
    );
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = format!(
        "[[scenario]]\nname = \"odd\"\nrate = 20\nmax_requests = 4\n\n[[scenario.step]]\nname = \"login\"\nrequest = \"GET http://{addr}/login\"\n\n[[scenario.step]]\nname = \"big\"\nrequest = \"GET http://{addr}/big\"\nchecks = [\"size > 2mb\", \"body matches [a-z]\"]\n"
    );
    let (_, _, tables, steps) = attack_ok(&dir, &flow);
    for r in &steps["login"] {
        let entry = &tables.errors[r.error as usize - 1];
        assert_eq!(entry.kind, ErrorKind::Cookie);
        assert!(
            entry.text.contains("Domain does not cover"),
            "{}",
            entry.text
        );
    }
    // 3 MiB read whole (its size passes), the first MiB kept for the body check.
    assert!(
        steps["big"]
            .iter()
            .all(|r| r.checks_failed == 0 && r.bytes_in > 3 << 20),
        "{:?}",
        steps["big"]
    );
}

#[test]
fn a_login_that_redirects_sets_its_cookie_for_the_next_hop_and_steps() {
    let server = serve(
        r#"[{"route": "/login", "headers": {"location": "/home", "set-cookie": "session=s{{id}}; Path=/"}, "stages": [{"at": 0, "status": 302}]},
            {"route": "/home", "body": "home of {{request.cookie.session}}", "requires": {"cookie": "session"}, "stages": [{"at": 0, "status": 200}]}]"#,
    );
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = format!(
        "[[scenario]]\nname = \"r\"\nrate = 20\nmax_requests = 3\n\n[[scenario.step]]\nname = \"login\"\nrequest = \"POST http://{addr}/login\"\nbody = \"user=ann\"\nchecks = [\"status 200\", \"body contains home of s\"]\nextract = {{ sid = \"cookie session\" }}\n\n[[scenario.step]]\nname = \"home\"\nrequest = \"GET http://{addr}/home\\nX-Sid: {{{{sid}}}}\"\nchecks = [\"status 200\"]\n"
    );
    let (_, records, _, steps) = attack_ok(&dir, &flow);
    assert_eq!(steps["login"].len(), 3);
    assert_eq!(steps["home"].len(), 3);
    assert!(
        records
            .iter()
            .all(|r| r.status == 200 && r.checks_failed == 0),
        "{records:?}"
    );
}

#[test]
fn a_flow_imported_from_a_har_runs_against_the_app_it_was_recorded_from() {
    let server = app();
    let dir = TempDir::new();
    let har = with_a_third_party(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/har/app_login.har"
    ));
    let har = dir.write("app_login.har", &har);
    // The recording's port is another run's: -base-url sends the steps to this server,
    // and leaves out the analytics beacon recorded beside them (kept, its host would not
    // resolve and its step would fail every time).
    let base = format!("http://{}", server.local_addr());
    let import = loadlab(&["encode", "-from", "har", "-base-url", &base, &har]);
    assert!(import.status.success(), "{}", text(&import.stderr));
    let flow = text(&import.stdout);
    assert_eq!(flow.matches(&format!(" {base}/")).count(), 4, "{flow}");
    assert!(flow.contains(&format!("Origin: {base}\n")), "{flow}");
    assert!(flow.contains("1 to other hosts (analytics.test)"), "{flow}");
    assert!(
        !flow.contains("request = \"POST https://analytics.test"),
        "{flow}"
    );
    // Its think times are a person's. As imported (one user looping: the closed
    // model), then as flows started at a rate.
    let imported = flow
        .replace("duration = \"1m\"", "duration = \"10s\"\nmax_requests = 3")
        .lines()
        .filter(|line| !line.starts_with("think = "))
        .collect::<Vec<_>>()
        .join("\n");
    let open = imported.replace("concurrency = 1", "rate = 20");
    for flow in [imported, open] {
        let (path, _, _, steps) = attack_ok(&dir, &flow);
        assert_eq!(steps.len(), 4, "{steps:?}");
        // /items needs the jar's session cookie, /items/{id} a listed id, /me the token.
        for (name, got) in &steps {
            assert_eq!(got.len(), 3, "{name}");
            assert!(
                got.iter().all(|r| r.status == 200 && r.checks_failed == 0),
                "{name}: {got:?}"
            );
        }
        // Each step's latency, each check's pass rate.
        let report = text(&loadlab(&["report", "-by", "step", &path]).stdout);
        for step in ["POST login", "GET items", "GET items/{item_id}", "GET me"] {
            assert!(report.contains(&format!("=== step {step} ===")), "{report}");
            let check = format!("{step}: status 200");
            assert!(
                report
                    .lines()
                    .any(|l| l.starts_with(&check) && l.ends_with(" 3      0    100.00%")),
                "{check}: {report}"
            );
        }
    }
}

/// The HAR file at `path` with an analytics beacon to another host after its first
/// entry, as browsers record them.
fn with_a_third_party(path: &str) -> String {
    let mut har: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let entries = har["log"]["entries"].as_array_mut().unwrap();
    let mut beacon = entries[0].clone();
    beacon["request"]["method"] = "POST".into();
    beacon["request"]["url"] = "https://analytics.test/collect?v=2".into();
    entries.insert(1, beacon);
    serde_json::to_string_pretty(&har).unwrap()
}

#[test]
fn bad_flows_are_refused_before_the_run_by_file_line_step_and_field() {
    let dir = TempDir::new();
    let rows: &[(&str, &str)] = &[
        (
            "[[scenario]]\nname = \"s\"\nrate = 1\n\n[[scenario.step]]\nname = \"a\"\nrequest = \"GET http://127.0.0.1:1/{{tokn}}\"\n",
            "flow.toml:5: scenario \"s\": step \"a\": request: template \"/{{tokn}}\": unknown variable {{tokn}}",
        ),
        (
            "[[scenario]]\nname = \"s\"\nrate = 1\n\n[[scenario.step]]\nrequest = \"GET http://127.0.0.1:1/\"\nextract = { t = \"json $.a[\" }\n",
            "flow.toml:5: scenario \"s\": step 1: extract.t: JSON path \"$.a[\": a '[' without its ']'",
        ),
        (
            "[[scenario]]\nname = \"s\"\nrate = 1\n\n[[scenario.step]]\nrequest = \"GET http://127.0.0.1:1/\"\nchecks = [\"json $.a equals 1\"]\n",
            "flow.toml:5: scenario \"s\": step 1: checks: json check",
        ),
        (
            "[[scenario]]\nname = \"s\"\nrate = 1\n\n[[scenario.step]]\nrequest = \"GET http://127.0.0.1:1/{{csv.user}}\"\n",
            "flow.toml:1: scenario \"s\": data: a step reads {{csv.user}} but the scenario gives no data file",
        ),
    ];
    for (flow, want) in rows {
        let (run, _) = attack(&dir, flow);
        let err = text(&run.stderr);
        assert!(!run.status.success(), "{flow}");
        assert!(err.contains(want), "{flow}\n{err}");
    }
}

/// A login, a WebSocket echo that wants the login's token, an event stream of 5
/// events 20 ms apart, and a plain route that refuses.
const STREAMS: &str = r#"[
  {"route": "/login", "body": "{\"token\": \"t{{id}}\"}", "stages": [{"status": 200}]},
  {"route": "/chat", "websocket": "echo",
   "requires": {"header": "authorization", "matches": "^Bearer t[0-9]+$"},
   "stages": [{"status": 200}]},
  {"route": "/ticks", "events": {"count": 5, "every": "20ms", "data": "tick"},
   "stages": [{"status": 200}]},
  {"route": "/plain", "body": "no streams here", "stages": [{"status": 403}]}
]"#;

/// The simulator serving [`STREAMS`].
fn streams() -> simulator::Simulator {
    serve(STREAMS)
}

/// A chat: log in over HTTP, connect with the token, send, expect the echo (taking a
/// value from it), close.
fn chat_flow(addr: std::net::SocketAddr) -> String {
    format!(
        r#"
[[scenario]]
name = "chat"
rate = 5
duration = "1s"
timeout = "2s"

[[scenario.step]]
name = "login"
request = "POST http://{addr}/login"
extract = {{ token = "json $.token" }}
checks = ["status 200"]

[[scenario.step]]
name = "chat"
ws = "ws://{addr}/chat\nAuthorization: Bearer {{{{token}}}}"
actions = [
  {{ send = '{{"text": "hi from {{{{token}}}}"}}' }},
  {{ name = "reply", expect = "json $.text exists", within = "1s", extract = {{ echoed = "json $.text" }} }},
  {{ close = 1000 }},
]

[[scenario.step]]
name = "after"
request = "POST http://{addr}/login\nX-Echoed: {{{{echoed}}}}"
checks = ["status 200"]
"#
    )
}

#[test]
fn a_chat_flow_logs_in_connects_with_the_token_and_gets_its_echo() {
    let server = streams();
    let dir = TempDir::new();
    let (output, _, tables, steps) = run_chat(&dir, &chat_flow(server.local_addr()));
    let names: Vec<&str> = steps.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "after",
            "chat",
            "chat close 3",
            "chat reply",
            "chat send 1",
            "login"
        ]
    );
    // The echo carried the token the login gave, so `after` could send it on.
    assert!(steps["chat reply"].iter().all(|r| r.bytes_in > 10));
    let chat = tables
        .targets
        .iter()
        .find(|t| t.step.as_deref() == Some("chat"));
    assert_eq!(chat.unwrap().method, "WS");
    assert!(chat.unwrap().url.starts_with("ws://"));
    // One entry per connection: a message each way, its round trip, our close.
    let held = &connections(&output)["chat"];
    assert_eq!(held.len(), steps["chat"].len());
    for c in held {
        assert_eq!(
            (c.messages_out, c.messages_in, c.latency.count()),
            (1, 1, 1),
            "{c:?}"
        );
        assert_eq!(
            c.close,
            record::Close {
                by: record::ClosedBy::Client,
                code: 1000
            }
        );
        assert!(c.opened_unix_ns < c.closed_unix_ns, "{c:?}");
    }
    let report = loadlab(&["report", "-by=step", &output]);
    assert!(report.status.success(), "{}", text(&report.stderr));
    let report = text(&report.stdout);
    assert!(report.contains("chat reply"), "{report}");
    // The chat step's group has the connection rows; the login's has none.
    let chat_group = report.split("\n\n").find(|g| g.contains("Connections"));
    let rows = format!("{}, {}", held.len(), held.len());
    assert!(chat_group.is_some_and(|g| g.contains(&rows)), "{report}");
    assert!(report.contains("client 1000:"), "{report}");
    assert_eq!(report.matches("Connections ").count(), 1, "{report}");
}

#[test]
fn refusals_timeouts_and_early_ends_are_counted_error_kinds() {
    let server = streams();
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "sad"
rate = 2
duration = "1s"
timeout = "2s"

[[scenario.step]]
name = "no token"
ws = "ws://{addr}/chat"

[[scenario.step]]
name = "silent"
ws = "ws://{addr}/chat\nAuthorization: Bearer t1"
actions = [{{ name = "never", expect = "body contains nobody said this", within = "200ms" }}]

[[scenario.step]]
name = "not a stream"
sse = "http://{addr}/plain"
events = 1

[[scenario.step]]
name = "short stream"
sse = "http://{addr}/ticks"
events = 10
"#
    );
    let (output, _, tables, steps) = attack_ok(&dir, &flow);
    let error = |step: &str| {
        let record = steps[step][0];
        assert!(!record.is_success(), "{step}: {record:?}");
        let entry = &tables.errors[record.error as usize - 1];
        (entry.kind, entry.text.clone(), record.status)
    };
    let (kind, why, status) = error("no token");
    assert_eq!((kind, status), (ErrorKind::Status, 401), "{why}");
    assert!(why.starts_with("websocket upgrade refused: 401"), "{why}");
    assert!(steps["silent"][0].is_success(), "the connect itself worked");
    let (kind, why, _) = error("silent never");
    assert_eq!(kind, ErrorKind::Timeout, "{why}");
    assert!(why.contains("within 200ms"), "{why}");
    assert_eq!(
        steps["silent never"][0].checks_failed & 1,
        1,
        "its check failed"
    );
    let (kind, why, status) = error("not a stream");
    assert_eq!(status, 403, "{why}");
    assert_eq!(kind, ErrorKind::Status, "{why}");
    // The stream's events came (5), then its end, short of the 10 asked: one
    // record for the events, failed, and the five counted in its connection.
    let events = &steps["short stream events"];
    let flows = steps["no token"].len();
    assert_eq!(events.len(), flows, "one events record per stream");
    for record in events {
        let entry = &tables.errors[record.error as usize - 1];
        assert_eq!(entry.kind, ErrorKind::Closed, "{}", entry.text);
        assert!(
            entry.text.contains("after 5 of 10 events"),
            "{}",
            entry.text
        );
    }
    let held = connections(&output);
    for c in &held["short stream"] {
        assert_eq!((c.messages_in, c.latency.count()), (5, 5), "{c:?}");
        assert_eq!(c.close.by, record::ClosedBy::Server, "{c:?}");
    }
    // A refused upgrade or stream never opened: no figures.
    assert!(!held.contains_key("no token") && !held.contains_key("not a stream"));
    // The silent expect gave up: we closed, with 1000.
    for c in &held["silent"] {
        assert_eq!(
            c.close,
            record::Close {
                by: record::ClosedBy::Client,
                code: 1000
            }
        );
    }
}

#[test]
fn an_event_stream_is_timed_to_its_first_event_and_each_event_is_checked() {
    let server = streams();
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "ticks"
concurrency = 1
max_requests = 2
duration = "5s"

[[scenario.step]]
name = "ticks"
sse = "http://{addr}/ticks"
events = 3
checks = ["body contains tick", {{ name = "fourth", expect = "body contains tick 4" }}]
"#
    );
    let (output, _, _, steps) = attack_ok(&dir, &flow);
    assert_eq!(steps["ticks"].len(), 2, "two runs of the flow");
    for first in &steps["ticks"] {
        assert!(first.is_success(), "{first:?}");
        // The first event comes 20 ms after the answer's head.
        assert!(first.latency_ns >= 15_000_000, "{first:?}");
        assert!(first.ttfb_ns < first.latency_ns, "{first:?}");
    }
    let events = &steps["ticks events"];
    assert_eq!(
        events.len(),
        2,
        "one record for a run's 3 events, not one each"
    );
    // "tick 1" .. "tick 3": every one passes the first check and fails the second.
    assert!(
        events.iter().all(|e| e.checks_failed & 0b11 == 0b10),
        "{events:?}"
    );
    // From the first event to the third: two gaps of 20 ms.
    assert!(
        events.iter().all(|e| e.latency_ns >= 30_000_000),
        "{events:?}"
    );
    let held = &connections(&output)["ticks"];
    assert_eq!(held.len(), 2);
    for c in held {
        assert_eq!((c.messages_in, c.messages_failed), (3, 3), "{c:?}");
        assert_eq!(c.bytes_in, 3 * "tick 1".len() as u64, "{c:?}");
        // Each gap (the first: since the answer's head) is about 20 ms.
        let median_ns = c.latency.quantile(0.5).unwrap();
        assert!((15_000_000..200_000_000).contains(&median_ns), "{c:?}");
        assert_eq!(
            c.close.by,
            record::ClosedBy::Client,
            "we stopped at 3: {c:?}"
        );
    }
}

/// Token streams: after a 50 ms wait for the head, 5 events (or plain chunks) 20 ms
/// apart, to a POST of JSON.
const TOKENS: &str = r#"[
  {"route": "/v1/chat", "events": {"count": 5, "every": "20ms", "first": "50ms", "data": "tok"},
   "requires": {"header": "content-type", "matches": "^application/json$"},
   "stages": [{"status": 200}]},
  {"route": "/v1/text", "events": {"count": 5, "every": "20ms", "first": "50ms", "data": "tok", "format": "text"},
   "stages": [{"status": 200}]},
  {"route": "/v1/busy", "stages": [{"status": 429}]}
]"#;

/// A `stream` step: POST `path` with a JSON body and read its answer as it comes.
fn token_flow(addr: std::net::SocketAddr, path: &str, checks: &str) -> String {
    format!(
        r#"
[[scenario]]
name = "llm"
concurrency = 1
max_requests = 2
duration = "5s"
timeout = "2s"

[[scenario.step]]
name = "llm"
stream = "POST http://{addr}{path}\nContent-Type: application/json"
body = '{{"prompt": "hello from {{{{user}}}}", "stream": true}}'
checks = [{checks}]
"#
    )
}

#[test]
fn a_posted_token_stream_is_timed_to_its_first_event_its_end_and_its_gaps() {
    let server = serve(TOKENS);
    let dir = TempDir::new();
    let flow = token_flow(server.local_addr(), "/v1/chat", r#""body contains tok""#);
    let (output, _, tables, steps) = attack_ok(&dir, &flow);
    let llm = tables
        .targets
        .iter()
        .find(|t| t.step.as_deref() == Some("llm"));
    assert_eq!(llm.unwrap().method, "POST");
    assert_eq!(steps["llm"].len(), 2, "two runs of the flow");
    for first in &steps["llm"] {
        assert!(first.is_success(), "{first:?}");
        // The head waits 50 ms, the first event 20 ms more.
        assert!(first.ttfb_ns >= 45_000_000, "{first:?}");
        assert!(first.latency_ns >= first.ttfb_ns + 15_000_000, "{first:?}");
        assert!(
            first.bytes_out > "POST".len() as u64 + 40,
            "the body went: {first:?}"
        );
    }
    for body in &steps["llm body"] {
        assert!(body.is_success() && body.checks_failed == 0, "{body:?}");
        // The first event to the end: four gaps of 20 ms.
        assert!(body.latency_ns >= 70_000_000, "{body:?}");
        assert_eq!(body.bytes_in, 5 * "tok 1".len() as u64, "{body:?}");
    }
    for c in &connections(&output)["llm"] {
        assert_eq!((c.messages_in, c.messages_failed), (5, 0), "{c:?}");
        assert_eq!(c.close.by, record::ClosedBy::Server, "its end: {c:?}");
        let median_ns = c.latency.quantile(0.5).unwrap();
        assert!((15_000_000..200_000_000).contains(&median_ns), "{c:?}");
        // Its first event 20 ms after the head: where the body starts.
        let first_ns = c.first_message_ns.unwrap();
        assert!((15_000_000..200_000_000).contains(&first_ns), "{c:?}");
    }
    // The body's bytes a second: 25 bytes over its four gaps of 20 ms (at most 420
    // a second, fewer when the machine is slow), apart from the run-wide rows.
    let json = loadlab(&["report", "-type=json", &output]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let rate = &value["loadlab"]["connections"]["body_bytes_per_sec"];
    assert_eq!(rate["streams"], 2, "{value}");
    for figure in [
        rate["50th"].as_f64().unwrap(),
        rate["total"].as_f64().unwrap(),
    ] {
        assert!((25.0..=420.0).contains(&figure), "{value}");
    }
    let report = text(&loadlab(&["report", "-by=step", &output]).stdout);
    let row = report.lines().find(|l| l.starts_with("Body Bytes/s"));
    let p50 = rate["50th"].as_u64().unwrap().to_string();
    assert!(row.is_some_and(|r| r.contains(&p50)), "{report}");
}

#[test]
fn a_long_chunked_answer_that_is_not_an_event_stream_is_read_chunk_by_chunk() {
    let server = serve(TOKENS);
    let dir = TempDir::new();
    let flow = token_flow(
        server.local_addr(),
        "/v1/text",
        r#""body matches ^tok [0-9]\n$""#,
    );
    let (output, _, _, steps) = attack_ok(&dir, &flow);
    for body in &steps["llm body"] {
        assert!(body.is_success() && body.checks_failed == 0, "{body:?}");
        assert_eq!(body.bytes_in, 5 * "tok 1\n".len() as u64, "{body:?}");
    }
    for c in &connections(&output)["llm"] {
        // 20 ms apart, each chunk is a read of its own unless the machine stalls.
        assert!((2..=5).contains(&c.messages_in), "{c:?}");
        assert_eq!(c.bytes_in, 5 * "tok 1\n".len() as u64, "{c:?}");
        assert_eq!(c.close.by, record::ClosedBy::Server, "{c:?}");
    }
}

#[test]
fn a_refused_token_stream_quotes_the_answer_and_a_stalled_one_times_out() {
    let server = serve(TOKENS);
    let dir = TempDir::new();
    let addr = server.local_addr();
    let flow = token_flow(addr, "/v1/busy", "")
        + &format!(
            r#"
[[scenario]]
name = "stall"
concurrency = 1
max_requests = 1
duration = "5s"
timeout = "30ms"

[[scenario.step]]
name = "stall"
stream = "POST http://{addr}/v1/chat\nContent-Type: application/json"
body = "{{}}"
"#
        );
    let (_, _, tables, steps) = attack_ok(&dir, &flow);
    let error = |r: &Record| tables.errors[r.error as usize - 1].clone();
    for refused in &steps["llm"] {
        assert_eq!(refused.status, 429, "{refused:?}");
        let entry = error(refused);
        assert_eq!(entry.kind, ErrorKind::Status);
        assert!(entry.text.contains("stream refused: 429"), "{entry:?}");
        assert!(
            entry.text.contains("\"Error 429\""),
            "its body quoted: {entry:?}"
        );
    }
    let stalled = &steps["stall"][0];
    let entry = error(stalled);
    // The head comes after 50 ms: past a 30 ms timeout.
    assert_eq!(entry.kind, ErrorKind::Timeout, "{entry:?}");
}

#[test]
fn checks_name_an_event_type_and_extract_takes_from_the_first_event_passing_them() {
    let server = serve(
        r#"[
  {"route": "/prices", "events": {"count": 3, "every": "10ms", "data": "price", "event": "quote"},
   "stages": [{"status": 200}]},
  {"route": "/n", "requires": {"header": "x-n", "matches": "^2$"}, "stages": [{"status": 200}]}
]"#,
    );
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "quotes"
concurrency = 1
max_requests = 2
duration = "5s"

[[scenario.step]]
name = "quotes"
sse = "http://{addr}/prices"
events = 3
checks = ["event quote: body matches ^price [23]$", "event trade: body contains never"]
extract = {{ n = "regex price ([0-9]+)" }}

[[scenario.step]]
name = "after"
request = "GET http://{addr}/n\nX-N: {{{{n}}}}"
if = "n"

[[scenario]]
name = "missing"
concurrency = 1
max_requests = 1
duration = "5s"

[[scenario.step]]
name = "missing"
sse = "http://{addr}/prices"
events = 1
extract = {{ id = "json $.id" }}
"#
    );
    let (output, _, tables, steps) = attack_ok(&dir, &flow);
    for events in &steps["quotes events"] {
        // "price 1" fails the quote check; no trade event came, so that one never failed.
        assert_eq!(events.checks_failed & 0b11, 0b01, "{events:?}");
        // Failed checks fail requests: the error is the check's, not an extract's.
        let entry = &tables.errors[events.error as usize - 1];
        assert_eq!(entry.kind, ErrorKind::Check, "n was found: {entry:?}");
    }
    // From "price 2", the first event passing every check.
    let after = &steps["after"];
    assert!(
        after.len() == 2 && after.iter().all(Record::is_success),
        "{after:?}"
    );
    for c in &connections(&output)["quotes"] {
        assert_eq!((c.messages_in, c.messages_failed), (3, 1), "{c:?}");
    }
    let missing = &steps["missing events"][0];
    let entry = &tables.errors[missing.error as usize - 1];
    assert_eq!(entry.kind, ErrorKind::Extract, "{entry:?}");
    assert!(entry.text.contains("extract id"), "{entry:?}");
}

/// Each event stream's entry counts its events by type (`event:`, `message` when
/// none), and `report` adds them up: for the run, per step and in its JSON.
#[test]
fn events_are_counted_by_type_in_each_entry_and_the_report() {
    let server = serve(
        r#"[
  {"route": "/prices", "events": {"count": 3, "every": "10ms", "data": "price", "event": "quote"},
   "stages": [{"status": 200}]},
  {"route": "/ticks", "events": {"count": 2, "every": "10ms", "data": "tick"},
   "stages": [{"status": 200}]}
]"#,
    );
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "feeds"
concurrency = 1
max_requests = 2
duration = "5s"
timeout = "2s"

[[scenario.step]]
name = "quotes"
sse = "http://{addr}/prices"
events = 3

[[scenario.step]]
name = "ticks"
sse = "http://{addr}/ticks"
events = 2
"#
    );
    let (output, _, _, _) = attack_ok(&dir, &flow);
    let held = connections(&output);
    let (quotes, ticks) = (&held["quotes"], &held["ticks"]);
    assert!(!quotes.is_empty() && !ticks.is_empty(), "{held:?}");
    let typed = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
        pairs.iter().map(|&(n, c)| (n.to_owned(), c)).collect()
    };
    for c in quotes {
        assert_eq!(c.events, typed(&[("quote", 3)]), "{c:?}");
    }
    for c in ticks {
        assert_eq!(c.events, typed(&[("message", 2)]), "{c:?}");
    }
    let (q, t) = (3 * quotes.len(), 2 * ticks.len());
    let report = loadlab(&["report", &output]);
    assert!(report.status.success(), "{}", text(&report.stderr));
    let report = text(&report.stdout);
    let row = format!("message:{t} quote:{q}");
    let events = report.lines().find(|l| l.starts_with("Events"));
    assert!(events.is_some_and(|l| l.ends_with(&row)), "{row}: {report}");
    let by_step = text(&loadlab(&["report", "-by=step", &output]).stdout);
    let group = |name: &str| {
        by_step
            .split("\n\n")
            .skip_while(|g| !g.contains(&format!("step {name}")))
            .find(|g| g.contains("Events"))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        group("quotes").contains(&format!("quote:{q}\n")),
        "{by_step}"
    );
    assert!(
        group("ticks").contains(&format!("message:{t}\n")),
        "{by_step}"
    );
    let json = loadlab(&["report", "-type=json", &output]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let events = &value["loadlab"]["connections"]["events"];
    assert_eq!(events["quote"], q, "{value}");
    assert_eq!(events["message"], t, "{value}");
}

#[test]
fn messages_carrying_their_send_time_give_one_way_delays_and_a_bad_one_an_error() {
    let server = streams();
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "owd"
concurrency = 1
max_requests = 2
duration = "5s"
timeout = "2s"

[[scenario.step]]
name = "owd"
ws = "ws://{addr}/chat\nAuthorization: Bearer t1"
send_time = "json $.sent"
actions = [
  {{ send = '{{"sent": {{{{send_time_ns}}}}, "text": "hi {{{{user}}}}"}}', every = "10ms", count = 5 }},
  {{ hold = "300ms" }},
]

[[scenario]]
name = "bad"
concurrency = 1
max_requests = 1
duration = "5s"
timeout = "2s"

[[scenario.step]]
name = "bad"
ws = "ws://{addr}/chat\nAuthorization: Bearer t1"
send_time = "json $.sent"
actions = [{{ send = '{{"sent": "soon"}}' }}, {{ hold = "1s" }}]
"#
    );
    let (output, _, tables, steps) = attack_ok(&dir, &flow);
    let held = connections(&output);
    assert_eq!(held["owd"].len(), 2);
    for c in &held["owd"] {
        // Each echo carries the time its message went: one delay each (without
        // send_time, a step with no expect times none).
        assert_eq!((c.messages_out, c.messages_in), (5, 5), "{c:?}");
        assert_eq!(c.latency.count(), 5, "{c:?}");
        let max_ns = c.latency.quantile(1.0).unwrap();
        assert!(max_ns < 1_000_000_000, "{c:?}");
    }
    let bad = &steps["bad hold 2"][0];
    let entry = &tables.errors[bad.error as usize - 1];
    assert_eq!(entry.kind, ErrorKind::Extract, "{entry:?}");
    assert!(entry.text.contains("is not unix nanoseconds"), "{entry:?}");
    assert_eq!(held["bad"][0].latency.count(), 0);
}

#[test]
fn a_send_on_a_schedule_waits_out_its_pause_and_stops_at_its_end_or_its_count() {
    let server = streams();
    let addr = server.local_addr();
    let dir = TempDir::new();
    // A 300 ms pause, then 50 messages a second for 400 ms: 20 messages, the last
    // due 680 ms after the send began; the capped one sends 8, the last at 440 ms.
    let scenario = |name: &str, count: &str| {
        format!(
            r#"
[[scenario]]
name = "{name}"
concurrency = 1
max_requests = 1
duration = "5s"
timeout = "2s"

[[scenario.step]]
name = "{name}"
ws = "ws://{addr}/chat\nAuthorization: Bearer t1"
actions = [
  {{ send = "tick", schedule = "const(0, 300ms) const(50, 400ms)"{count} }},
  {{ hold = "200ms" }},
]
"#
        )
    };
    let flow = scenario("whole", "") + &scenario("capped", ", count = 8");
    let (output, _, _, steps) = attack_ok(&dir, &flow);
    let held = connections(&output);
    for (name, messages, last_due_ms) in [("whole", 20, 680), ("capped", 8, 440)] {
        let entry = &held[name][0];
        assert_eq!(
            (entry.messages_out, entry.messages_in),
            (messages, messages),
            "{name}: {entry:?}"
        );
        let send = &steps[&format!("{name} send 1")][0];
        let last_due_ns = last_due_ms * 1_000_000;
        assert!(
            (last_due_ns..last_due_ns + 1_000_000_000).contains(&send.latency_ns),
            "{name}: the send ended {} ns in",
            send.latency_ns
        );
    }
}

#[test]
fn an_echo_paired_in_order_times_each_round_trip_from_when_its_message_was_due() {
    let server = streams();
    let addr = server.local_addr();
    let dir = TempDir::new();
    let scenario = |name: &str, pairing: &str| {
        format!(
            r#"
[[scenario]]
name = "{name}"
concurrency = 2
max_requests = 2
duration = "5s"
timeout = "2s"

[[scenario.step]]
name = "{name}"
ws = "ws://{addr}/chat\nAuthorization: Bearer t1"
{pairing}
actions = [{{ send = "tick", every = "10ms", count = 20 }}, {{ hold = "200ms" }}]
"#
        )
    };
    let flow = scenario("paired", "round_trip = \"in order\"") + &scenario("unpaired", "");
    let (output, ..) = attack_ok(&dir, &flow);
    let held = connections(&output);
    for entry in &held["paired"] {
        assert_eq!(
            (entry.messages_out, entry.messages_in),
            (20, 20),
            "{entry:?}"
        );
        assert_eq!(entry.latency.count(), 20, "{entry:?}");
        // Timed from the paced send's start instead, the median would be ~100 ms.
        let p50_ns = entry.latency.quantile(0.5).unwrap();
        assert!(p50_ns < 40_000_000, "a loopback echo: {p50_ns} ns");
    }
    for entry in &held["unpaired"] {
        assert_eq!(
            (entry.messages_in, entry.latency.count()),
            (20, 0),
            "{entry:?}"
        );
    }
}

#[test]
fn echoes_read_late_under_a_large_precision_budget_are_timed_when_they_arrived() {
    let server = streams();
    let addr = server.local_addr();
    let dir = TempDir::new();
    // Pings every 1 ms keep a deadline within the 10 ms budget, so the session loop
    // sleeps a budget before each read: an echo that came meanwhile is read up to
    // 11 ms late. Its round trip and its expect are timed by its arrival all the same.
    let exchanges = 20;
    let actions: String = (1..=exchanges)
        .map(|n| format!("{{ send = \"m{n}\" }}, {{ name = \"echo {n}\", expect = \"body contains m{n}\", within = \"1s\" }},\n"))
        .collect();
    let flow = format!(
        r#"
[[scenario]]
name = "late"
concurrency = 1
max_requests = 1
duration = "5s"
timeout = "2s"

[[scenario.step]]
name = "late"
ws = "ws://{addr}/chat\nAuthorization: Bearer t1"
ping = "1ms"
round_trip = "in order"
actions = [
{actions}]
"#
    );
    let (mut command, output) = attack_command(&dir, &flow);
    let run = command.args(["-precision", "10ms"]).output().unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    let (records, tables) = read(&output);
    let steps = per_step(&records, &tables);
    let mut expects_ns: Vec<u64> = (1..=exchanges)
        .map(|n| {
            let [expect] = &steps[&format!("late echo {n}")][..] else {
                panic!("{steps:?}");
            };
            assert_eq!(expect.error, 0, "{expect:?}");
            expect.latency_ns
        })
        .collect();
    expects_ns.sort_unstable();
    // Timed at the reads, each would be about 11 ms (as the first may still be: the
    // kernel turns stamping on a moment after the host's first socket asks).
    let p50_ns = expects_ns[expects_ns.len() / 2];
    assert!(p50_ns < 5_000_000, "expects timed at {expects_ns:?} ns");
    let [entry] = &connections(&output)["late"][..] else {
        panic!("one connection");
    };
    assert_eq!(entry.latency.count(), exchanges, "{entry:?}");
    let p50_ns = entry.latency.quantile(0.5).unwrap();
    assert!(
        p50_ns < 5_000_000,
        "a loopback echo's round trip: {p50_ns} ns"
    );
}

#[test]
fn an_event_stream_goes_over_a_unix_socket() {
    use std::io::{Read as _, Write as _};
    let dir = TempDir::new();
    let socket = dir.0.join("events.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    // Two streams of two events, each to a request read to its head's end, each
    // connection on a thread of its own (the run may hold others open, unused).
    let (answered, answers) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut done = 0;
        while done < 2 && std::time::Instant::now() < deadline {
            done += answers.try_iter().count();
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            };
            let answered = answered.clone();
            std::thread::spawn(move || {
                stream.set_nonblocking(false).unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let body = "data: a\n\ndata: b\n\n";
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                if head.ends_with(b"\r\n\r\n") && stream.write_all(answer.as_bytes()).is_ok() {
                    let _ = answered.send(());
                }
            });
        }
    });
    let flow = r#"
[[scenario]]
name = "local"
concurrency = 1
max_requests = 2
duration = "5s"
timeout = "2s"

[[scenario.step]]
name = "local"
sse = "http://localhost/events"
events = 2
"#;
    let (mut command, output) = attack_command(&dir, flow);
    let run = command
        .args(["-unix-socket", &socket.to_string_lossy()])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    server.join().unwrap();
    let (records, tables) = read(&output);
    let steps = per_step(&records, &tables);
    assert!(steps["local"].iter().all(Record::is_success), "{steps:?}");
    for c in &connections(&output)["local"] {
        assert_eq!((c.messages_in, c.bytes_in), (2, 2), "{c:?}");
    }
}

/// The Python of `.ci/setup/traced-app.sh`'s venv, which has Flask, or `None` (a loud
/// skip) when it has not run and CI did not ask for it (`LOADLAB_REQUIRE_TRACED_APP`).
fn flask_python() -> Option<PathBuf> {
    venv_python(
        ("LOADLAB_TRACED_APP_VENV", ".cache/loadlab/traced-app-venv"),
        "flask",
        ("LOADLAB_REQUIRE_TRACED_APP", "traced-app.sh"),
    )
}

#[test]
fn an_openai_style_token_stream_from_flask_is_read_event_by_event() {
    let Some(python) = flask_python() else {
        return;
    };
    let app = PythonEcho::run(&python, "token_stream.py");
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "llm"
concurrency = 1
max_requests = 2
duration = "10s"
timeout = "5s"

[[scenario.step]]
name = "llm"
stream = "POST http://127.0.0.1:{}/v1/chat/completions\nContent-Type: application/json"
body = '{{"prompt": "say hello to user {{{{user}}}}", "stream": true}}'
checks = ['body matches ^(\{{"choices".*\}}|\[DONE\])$']
"#,
        app.port
    );
    let (output, _, _, steps) = attack_ok(&dir, &flow);
    for first in &steps["llm"] {
        assert!(first.is_success() && first.ttfb_ns > 0, "{first:?}");
    }
    for body in &steps["llm body"] {
        assert!(body.is_success() && body.checks_failed == 0, "{body:?}");
    }
    let held = &connections(&output)["llm"];
    assert_eq!(held.len(), 2);
    for c in held {
        // A word of the prompt's five each (the body went, rendered), then [DONE].
        assert_eq!((c.messages_in, c.messages_failed), (6, 0), "{c:?}");
        assert_eq!(c.close.by, record::ClosedBy::Server, "{c:?}");
    }
}

/// Routes for pings, subprotocols and broadcasts: an echo that chooses `chat`, a
/// server that never reads (so never answers a ping), and a room that sends every
/// message to everyone, with a `news N` tick every 50 ms, for logged-in users.
const ROOMS: &str = r#"[
  {"route": "/login", "body": "{\"token\": \"t{{id}}\"}", "stages": [{"status": 200}]},
  {"route": "/proto", "websocket": {"mode": "echo", "subprotocol": "chat"}, "stages": [{"status": 200}]},
  {"route": "/deaf", "websocket": "silent", "stages": [{"status": 200}]},
  {"route": "/traced", "websocket": "echo",
   "requires": {"header": "traceparent", "matches": "^00-[0-9a-f]{32}-[0-9a-f]{16}-01$"},
   "stages": [{"status": 200}]},
  {"route": "/news", "events": {"count": 3, "every": "20ms", "data": "tick", "retry": "50ms"},
   "stages": [{"status": 200}]},
  {"route": "/room", "websocket": {"mode": "broadcast", "every": "50ms", "data": "news"},
   "requires": {"header": "authorization", "matches": "^Bearer t[0-9]+$"},
   "stages": [{"status": 200}]}
]"#;

#[test]
fn pings_unanswered_fail_the_session_as_a_timeout_and_answered_ones_are_counted() {
    let server = serve(ROOMS);
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "pings"
concurrency = 1
max_requests = 4
duration = "4s"
timeout = "300ms"

[[scenario.step]]
name = "answered"
ws = "ws://{addr}/proto"
ping = "50ms"
actions = [{{ send = "x", every = "20ms", count = 10 }}, {{ hold = "400ms" }}, {{ close = 1000 }}]

[[scenario.step]]
name = "deaf"
ws = "ws://{addr}/deaf"
ping = "50ms"
actions = [{{ hold = "2s" }}]

# Twenty sessions whose pings fall due around their close: none may follow our
# close frame (one did, and broke the close, before the fix).
[[scenario]]
name = "closing"
rate = 20
duration = "1s"
timeout = "1s"

[[scenario.step]]
name = "closing"
ws = "ws://{addr}/proto"
ping = "200ms"
actions = [{{ hold = "1s" }}, {{ close = 1000 }}]
"#
    );
    let (output, _, tables, steps) = attack_ok(&dir, &flow);
    assert_eq!(steps["closing close 2"].len(), 20);
    for name in ["answered hold 2", "answered close 3", "closing close 2"] {
        assert!(
            steps[name].iter().all(Record::is_success),
            "{name}: {steps:?}"
        );
    }
    // Ten messages 20 ms apart: the paced send's one record spans them.
    for record in &steps["answered send 1"] {
        assert!(
            record.is_success() && record.latency_ns >= 175_000_000,
            "{record:?}"
        );
        assert_eq!(record.bytes_out, 10, "{record:?}");
    }
    for record in &steps["deaf hold 1"] {
        let entry = &tables.errors[record.error as usize - 1];
        assert_eq!(entry.kind, ErrorKind::Timeout, "{}", entry.text);
        assert_eq!(entry.text, "no pong answered a ping within 300ms");
        // Failed at the pong's deadline, not at the hold's 2 s end.
        assert!(record.latency_ns < 1_000_000_000, "{record:?}");
    }
    let held = connections(&output);
    for c in &held["answered"] {
        assert!(c.pings >= 5 && c.pings_unanswered == 0, "{c:?}");
        assert_eq!(
            c.close,
            record::Close {
                by: record::ClosedBy::Client,
                code: 1000
            }
        );
        // Every echo came back, counted without a record each.
        assert_eq!((c.messages_out, c.messages_in), (10, 10), "{c:?}");
    }
    for c in &held["deaf"] {
        assert_eq!((c.pings, c.pings_unanswered), (1, 1), "{c:?}");
        assert_eq!(c.close.by, record::ClosedBy::Client, "{c:?}");
    }
    let report = loadlab(&["report", "-by=step", &output]);
    let report = text(&report.stdout);
    assert!(report.contains("Pings"), "{report}");
}

#[test]
fn an_event_stream_reconnects_with_the_last_event_id_a_bounded_number_of_times() {
    let server = serve(ROOMS);
    let addr = server.local_addr();
    let dir = TempDir::new();
    // Each stream of the route is 3 events: 8 need two reconnects, 20 more than 2.
    let flow = format!(
        r#"
[[scenario]]
name = "news"
concurrency = 1
max_requests = 8
duration = "10s"
timeout = "1s"

[[scenario.step]]
name = "eight"
sse = "http://{addr}/news"
events = 8
reconnect = 3
checks = [{{ name = "first three", expect = "body matches ^tick [1-3]$" }}]

[[scenario.step]]
name = "twenty"
sse = "http://{addr}/news"
events = 20
reconnect = 2
"#
    );
    let (output, _, tables, steps) = attack_ok(&dir, &flow);
    let held = connections(&output);
    for c in &held["eight"] {
        assert_eq!((c.messages_in, c.reconnects), (8, 2), "{c:?}");
        // Ticks 4 to 8 came after the reconnects: the ids went on, not from 1.
        assert_eq!(c.messages_failed, 5, "{c:?}");
        // The gaps include the server's 50 ms retry, twice.
        assert!(c.latency.quantile(1.0).unwrap() >= 50_000_000, "{c:?}");
    }
    for record in &steps["twenty events"] {
        let entry = &tables.errors[record.error as usize - 1];
        assert_eq!(entry.kind, ErrorKind::Closed, "{}", entry.text);
        assert!(
            entry.text.contains("after 9 of 20 events"),
            "{}",
            entry.text
        );
    }
    for c in &held["twenty"] {
        assert_eq!((c.messages_in, c.reconnects), (9, 2), "{c:?}");
        assert_eq!(c.close.by, record::ClosedBy::Server, "{c:?}");
    }
    let report = text(&loadlab(&["report", "-by=step", &output]).stdout);
    assert!(report.contains("Reconnects"), "{report}");
}

#[test]
fn a_chat_room_on_the_websockets_librarys_broadcast_hears_every_user() {
    let Some(python) = websockets_python() else {
        return;
    };
    let room = PythonEcho::run(&python, "websockets_broadcast.py");
    let login = serve(ROOMS);
    let dir = TempDir::new();
    // Three users at once in Python's room: each hears its own message through the
    // broadcast, and the others' when they overlap.
    let url = format!("ws://127.0.0.1:{}/", room.port);
    let held = run_room(&dir, login.local_addr(), &url, r#"{ hold = "100ms" }"#);
    assert!(held.iter().all(|c| c.messages_in >= 1), "{held:?}");
    // Users overlapped: some heard more than their own message.
    assert!(held.iter().any(|c| c.messages_in > 1), "{held:?}");
}

#[test]
fn under_trace_the_upgrade_carries_its_traceparent() {
    let server = serve(ROOMS);
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "traced"
concurrency = 1
max_requests = 3
duration = "5s"

[[scenario.step]]
name = "traced"
ws = "ws://{}/traced"
actions = [{{ send = "hi" }}, {{ expect = "body contains hi" }}]
"#,
        server.local_addr()
    );
    let scenarios = dir.write("flow.toml", &flow);
    // The route refuses an upgrade without a traceparent: with -trace, none is refused.
    for (trace, want_ok) in [(false, false), (true, true)] {
        let output = dir
            .0
            .join(format!("{trace}.llr"))
            .to_string_lossy()
            .into_owned();
        let mut args = vec![
            "attack",
            "-scenarios",
            &scenarios,
            "-output",
            &output,
            "-quiet",
        ];
        if trace {
            args.push("-trace");
        }
        let run = loadlab(&args);
        assert!(run.status.success(), "{}", text(&run.stderr));
        let (records, tables) = read(&output);
        let upgrades = &per_step(&records, &tables)["traced"];
        assert!(!upgrades.is_empty());
        assert!(
            upgrades.iter().all(|r| r.is_success() == want_ok),
            "-trace {trace}: {upgrades:?}"
        );
    }
}

#[test]
fn a_subprotocol_is_asked_recorded_and_checked() {
    let server = serve(ROOMS);
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "protocols"
concurrency = 1
max_requests = 4
duration = "10s"
timeout = "1s"

[[scenario.step]]
name = "chosen"
ws = "ws://{addr}/proto"
subprotocols = ["chat.v2", "chat"]
actions = [{{ send = "hi" }}, {{ expect = "body contains hi" }}]

[[scenario.step]]
name = "refused"
ws = "ws://{addr}/proto"
subprotocols = ["chat.v2"]
actions = [{{ send = "hi" }}]
"#
    );
    let (output, _, tables, steps) = attack_ok(&dir, &flow);
    assert!(steps["chosen"].iter().all(Record::is_success), "{steps:?}");
    for record in &steps["refused"] {
        let entry = &tables.errors[record.error as usize - 1];
        assert_eq!(entry.kind, ErrorKind::Protocol, "{}", entry.text);
        assert_eq!(
            entry.text,
            "websocket upgrade: the server chose no subprotocol (asked: chat.v2)"
        );
    }
    let held = connections(&output);
    assert!(
        !held.contains_key("refused"),
        "a refused upgrade never opened"
    );
    for c in &held["chosen"] {
        assert_eq!(c.subprotocol.as_deref(), Some("chat"), "{c:?}");
    }
}

#[test]
fn a_chat_room_logs_in_sends_and_hears_the_broadcast_and_the_ticks() {
    let server = serve(ROOMS);
    let dir = TempDir::new();
    let url = format!("ws://{}/room", server.local_addr());
    let news = r#"{ name = "news", expect = "body contains news", within = "1s" }"#;
    for c in run_room(&dir, server.local_addr(), &url, news) {
        // Its own message came back through the room, with the ticks around it.
        assert!(c.messages_in >= 2, "{c:?}");
        assert_eq!(c.latency.count(), 2, "{c:?}");
    }
}

/// Three users log in (at `login`), enter the room at `url` with the token, send a
/// message, hear one, do `then`, leave; every record a success, each connection one
/// message out. The connections' figures.
fn run_room(
    dir: &TempDir,
    login: std::net::SocketAddr,
    url: &str,
    then: &str,
) -> Vec<record::Connection> {
    let flow = format!(
        r#"
[[scenario]]
name = "room"
concurrency = 3
max_requests = 60
duration = "3s"
timeout = "2s"

[[scenario.step]]
name = "login"
request = "POST http://{login}/login"
extract = {{ token = "json $.token" }}

[[scenario.step]]
name = "room"
ws = "{url}\nAuthorization: Bearer {{{{token}}}}"
actions = [
  {{ send = '{{"text": "hi from {{{{token}}}}"}}' }},
  {{ name = "heard", expect = "json $.text exists", within = "1s" }},
  {then},
  {{ close = 1000 }},
]
"#
    );
    let (output, _, _, steps) = attack_ok(dir, &flow);
    for name in ["login", "room", "room heard", "room close 4"] {
        let records = &steps[name];
        let all_ok = records.iter().all(Record::is_success);
        assert!(!records.is_empty() && all_ok, "{name}: {records:?}");
    }
    let held = connections(&output).remove("room").unwrap();
    assert!(held.iter().all(|c| c.messages_out == 1), "{held:?}");
    held
}

/// Runs a chat flow (5 a second for a second) and checks that each of its steps has
/// one record per flow, every one a success (`after` runs only when the echo gave it
/// `echoed`).
fn run_chat(dir: &TempDir, flow: &str) -> (String, Vec<Record>, RunTables, Steps) {
    let ran = attack_ok(dir, flow);
    let (_, _, tables, steps) = &ran;
    let flows = steps["login"].len();
    assert!(flows >= 4, "5 flows a second for a second: {flows}");
    assert_eq!(steps.len(), 6, "{:?}", steps.keys());
    for (name, records) in steps {
        assert_eq!(records.len(), flows, "{name}: one record per flow");
        for record in records {
            assert!(
                record.is_success(),
                "{name}: {record:?} {:?}",
                tables.errors.get(record.error as usize - 1)
            );
        }
    }
    ran
}

/// The venv `.ci/setup/websockets.sh` made, or `None` (a loud skip) when it has not
/// run and CI did not ask for it (`LOADLAB_REQUIRE_WEBSOCKETS`).
fn websockets_python() -> Option<PathBuf> {
    venv_python(
        ("LOADLAB_WEBSOCKETS", ".cache/loadlab/websockets"),
        "websockets.asyncio.server",
        ("LOADLAB_REQUIRE_WEBSOCKETS", "websockets.sh"),
    )
}

/// The Python of the venv at `$VAR` (else `~/DEFAULT`) when it imports `module`;
/// else `None` and a loud skip, or a failure when `$REQUIRED` is set (CI ran
/// `.ci/setup/SCRIPT`).
fn venv_python(
    (var, default): (&str, &str),
    module: &str,
    (required, script): (&str, &str),
) -> Option<PathBuf> {
    let dir = std::env::var_os(var).map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(default),
        PathBuf::from,
    );
    let python = dir.join("bin/python");
    let found = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os(required).is_none(),
            "{required} is set but {} cannot import {module}: run .ci/setup/{script}",
            dir.display()
        );
        eprintln!("\n!!! SKIPPED: {module} is not installed (source .ci/setup/{script}) !!!\n");
    }
    found.then_some(python)
}

/// `examples/apps/websockets_echo.py` on a free loopback port, killed when dropped.
struct PythonEcho {
    child: std::process::Child,
    port: u16,
}

impl PythonEcho {
    fn start(python: &std::path::Path) -> PythonEcho {
        PythonEcho::run(python, "websockets_echo.py")
    }

    /// `examples/apps/SCRIPT` under `python`, on the port it prints.
    fn run(python: &std::path::Path, script: &str) -> PythonEcho {
        use std::io::BufRead as _;
        let script = format!(
            "{}/../../examples/apps/{script}",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut child = Command::new(python)
            .args([script.as_str(), "0"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().unwrap();
        PythonEcho { child, port }
    }
}

impl Drop for PythonEcho {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_chat_flow_runs_against_the_websockets_librarys_own_echo_server() {
    let Some(python) = websockets_python() else {
        return;
    };
    let echo = PythonEcho::start(&python);
    let login = streams();
    let dir = TempDir::new();
    // The login is the simulator's; the WebSocket is Python's.
    let flow = chat_flow(login.local_addr()).replace(
        &format!("ws://{}/chat", login.local_addr()),
        &format!("ws://127.0.0.1:{}/", echo.port),
    );
    let (_, _, _, steps) = run_chat(&dir, &flow);
    assert!(steps.contains_key("chat reply"), "{steps:?}");
}

/// permessage-deflate: Python's websockets agrees to it (as it does by default) and
/// compresses its echoes, which come back whole, and the entry says it was agreed;
/// the simulator does not, and the same step runs uncompressed.
#[test]
fn permessage_deflate_is_used_when_the_server_agrees_and_not_when_it_does_not() {
    let Some(python) = websockets_python() else {
        return;
    };
    let echo = PythonEcho::start(&python);
    let plain = streams();
    let dir = TempDir::new();
    let long = "the same words again and again, ".repeat(40);
    let step = |name: &str, url: &str| {
        format!(
            r#"
[[scenario.step]]
name = "{name}"
ws = "{url}"
compression = "deflate"
actions = [
  {{ send = "{long}" }}, {{ expect = "body contains again, the same" }},
  {{ send = "short" }}, {{ expect = "body contains short" }},
]
"#
        )
    };
    let flow = format!(
        "[[scenario]]\nname = \"deflate\"\nconcurrency = 1\nmax_requests = 4\nduration = \"10s\"\ntimeout = \"2s\"\n{}{}",
        step("agreed", &format!("ws://127.0.0.1:{}/", echo.port)),
        step(
            "declined",
            &format!(
                "ws://{}/chat\\nAuthorization: Bearer t1",
                plain.local_addr()
            ),
        ),
    );
    let (run, output) = attack(&dir, &flow);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let (records, tables) = read(&output);
    let failed: Vec<_> = records.iter().filter(|r| !r.is_success()).collect();
    assert!(failed.is_empty(), "{failed:?} {:?}", tables.errors);
    let held = connections(&output);
    for (step, compression) in [("agreed", Some("deflate")), ("declined", None)] {
        let entries = &held[step];
        assert_eq!(entries.len(), 4, "{step}: {entries:?}");
        for c in entries {
            assert_eq!(c.compression.as_deref(), compression, "{step}: {c:?}");
            assert_eq!((c.messages_in, c.latency.count()), (2, 2), "{step}: {c:?}");
            assert_eq!(c.bytes_in, long.len() as u64 + 5, "{step}: {c:?}");
        }
    }
}

/// Open model: WebSocket connections arrive at the rate asked, whatever the server
/// does. Here it never answers the upgrade (a listener that accepts nothing: the
/// kernel completes the connects), so each session waits out its timeout, and still
/// the next starts on time; each connect's latency counts from its intended start.
#[test]
fn websocket_connections_arrive_at_the_rate_while_the_server_never_answers() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "arrive"
rate = 20
duration = "1s"
timeout = "400ms"

[[scenario.step]]
name = "upgrade"
ws = "ws://{addr}/chat"
"#
    );
    let (_, _, tables, mut steps) = attack_ok(&dir, &flow);
    let mut upgrades = steps.remove("upgrade").unwrap();
    assert!(
        (19..=21).contains(&upgrades.len()),
        "20 a second for a second: {}",
        upgrades.len()
    );
    upgrades.sort_by_key(|r| r.intended_unix_ns);
    for pair in upgrades.windows(2) {
        let gap_ns = pair[1].intended_unix_ns - pair[0].intended_unix_ns;
        assert!(
            (45_000_000..=55_000_000).contains(&gap_ns),
            "one every 50 ms: {gap_ns}"
        );
    }
    for upgrade in &upgrades {
        let entry = &tables.errors[upgrade.error as usize - 1];
        assert_eq!(entry.kind, ErrorKind::Timeout, "{}", entry.text);
        assert!(upgrade.latency_ns >= 400_000_000, "{upgrade:?}");
        // Started when due, not after the sessions before it (8 overlap at a time):
        // waiting for one would lag by its whole timeout at least.
        assert!(upgrade.send_lag_ns < 400_000_000, "{upgrade:?}");
    }
    drop(silent);
}

/// Closed model: N users each hold a connection, then connect again; never more than
/// N are open at once, and the users keep them busy.
#[test]
fn websocket_users_hold_their_connections_one_at_a_time_each() {
    let server = streams();
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = hold_flow(addr, "held", "concurrency = 3", "250ms");
    let (_, _, _, steps) = attack_ok(&dir, &flow);
    let (connects, holds) = (&steps["held"], &steps["held hold 1"]);
    assert!(connects.iter().chain(holds).all(Record::is_success));
    assert!(
        (6..=15).contains(&connects.len()),
        "3 users, ~4 sessions each: {}",
        connects.len()
    );
    // Each session's span: its connect's intended start to its hold's end.
    let mut edges: Vec<(u64, i32)> = Vec::new();
    for connect in connects {
        let hold = holds
            .iter()
            .find(|h| h.seq >> 16 == connect.seq >> 16)
            .unwrap();
        edges.push((connect.intended_unix_ns, 1));
        edges.push((hold.intended_unix_ns + hold.latency_ns, -1));
    }
    edges.sort();
    let mut open = 0;
    let peak = edges
        .iter()
        .map(|(_, step)| {
            open += step;
            open
        })
        .max();
    assert_eq!(peak, Some(3), "three users, three connections at most");
}

/// A run stopped while its users hold their connections (Ctrl-C here; a stop rule
/// stops the same way): each connection still open gets its entry at the stop,
/// marked open at the end (closed by neither side), the hold's record ends there,
/// and the record file is whole: every upgrade has its entry, no block is damaged.
#[test]
fn connections_open_when_the_run_is_stopped_are_written_as_open_at_the_end() {
    let server = streams();
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = hold_flow(addr, "idle", "rate = 20\nmax_requests = 10", "60s");
    let (mut command, output) = attack_command(&dir, &flow);
    let started = std::time::Instant::now();
    let child = command
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let run = child.wait_with_output().unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the stop ended the 60 s holds: {:?}",
        started.elapsed()
    );
    let (records, tables) = read(&output);
    let steps = per_step(&records, &tables);
    assert_eq!(steps["idle"].len(), 10, "every upgrade's record");
    assert_eq!(
        steps["idle hold 1"].len(),
        10,
        "every hold's, ended at the stop"
    );
    let held = connections(&output).remove("idle").unwrap();
    let mut seqs: Vec<u64> = held.iter().map(|c| c.seq).collect();
    seqs.sort_unstable();
    let mut upgrades: Vec<u64> = steps["idle"].iter().map(|r| r.seq).collect();
    upgrades.sort_unstable();
    assert_eq!(seqs, upgrades, "one entry per upgrade");
    for c in &held {
        assert_eq!(c.close.by, record::ClosedBy::Open, "{c:?}");
        assert_eq!(c.close.code, 0, "{c:?}");
        assert!(c.opened_unix_ns < c.closed_unix_ns, "{c:?}");
    }
    let report = loadlab(&["report", &output]);
    assert!(report.status.success(), "{}", text(&report.stderr));
    let report = text(&report.stdout);
    assert!(report.contains("Connections"), "{report}");
    // Opened and the most held at once: 10 (the "last second" figure counts the clock
    // second of the last close; the 10 closes at the stop may straddle a second).
    assert!(report.contains("10, 10, "), "{report}");
    assert!(report.contains("open:10"), "{report}");
}

/// The stats samples (about one a second) of the record file at `path`.
fn stats(path: &str) -> Vec<record::GeneratorStats> {
    let mut source = record::open_input(path).unwrap();
    let mut batch = Vec::new();
    while source.next_batch(&mut batch).unwrap() {}
    source.summary().stats.clone()
}

/// While the run goes the stats samples count the connections open, opened and
/// closed, and the messages each way with their latencies, second by second; over
/// the run they add up to the connections' own entries, and nothing is left open.
#[test]
fn stream_figures_per_second_add_up_to_the_connections_entries() {
    let server = streams();
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "paced"
rate = 10
max_requests = 8
duration = "1s"
timeout = "2s"

[[scenario.step]]
name = "paced"
ws = "ws://{addr}/chat\nAuthorization: Bearer t1"
actions = [
  {{ send = "ping" }},
  {{ expect = "body contains ping", within = "1s" }},
  {{ send = "tick", every = "100ms", count = 20 }},
  {{ close = 1000 }},
]
"#
    );
    let (path, _, _, _) = attack_ok(&dir, &flow);
    let held = connections(&path).remove("paced").unwrap();
    assert_eq!(held.len(), 8);
    let samples = stats(&path);
    let seconds: Vec<&record::StreamStats> =
        samples.iter().filter_map(|s| s.streams.as_ref()).collect();
    assert!(
        seconds.len() >= 2,
        "a 2 s paced send spans samples: {samples:?}"
    );
    let sum =
        |field: fn(&record::StreamStats) -> u64| seconds.iter().map(|s| field(s)).sum::<u64>();
    let entries = |field: fn(&record::Connection) -> u64| held.iter().map(field).sum::<u64>();
    assert_eq!(sum(|s| s.opened), 8);
    assert_eq!(sum(|s| s.closed), 8);
    assert_eq!(sum(|s| s.messages_out), entries(|c| c.messages_out));
    assert_eq!(sum(|s| s.bytes_out), entries(|c| c.bytes_out));
    assert_eq!(sum(|s| s.messages_in), entries(|c| c.messages_in));
    assert_eq!(sum(|s| s.bytes_in), entries(|c| c.bytes_in));
    assert_eq!(entries(|c| c.messages_out), 8 * 21);
    let timed: u64 = seconds.iter().map(|s| s.latency.count()).sum();
    assert_eq!(timed, entries(|c| c.latency.count()));
    assert_eq!(timed, 8, "one round trip per connection");
    assert!(
        seconds.iter().any(|s| s.open == 8),
        "all eight held at once mid-run: {seconds:?}"
    );
    assert_eq!(seconds.last().unwrap().open, 0, "{seconds:?}");
}

/// Users that each hold a WebSocket to a route that holds at most `limit` at once
/// (the simulator refuses the upgrade beyond it), stopped by `rule`: the run's exit
/// status, its end reason and detail, and how long it took.
fn run_against_limit(limit: u32, rule: &str) -> (Output, record::RunEnd, std::time::Duration) {
    let recipe = format!(
        r#"[{{"route": "/held", "websocket": {{"mode": "echo", "limit": {limit}}},
            "stages": [{{"status": 200}}]}}]"#
    );
    let server = serve(&recipe);
    let addr = server.local_addr();
    let dir = TempDir::new();
    let flow = format!(
        r#"
[[scenario]]
name = "held"
concurrency = 12
think_time = "50ms"
duration = "6s"
timeout = "2s"

[[scenario.step]]
name = "held"
ws = "ws://{addr}/held"
actions = [{{ hold = "3s" }}]
"#
    );
    let (mut command, output) = attack_command(&dir, &flow);
    let started = std::time::Instant::now();
    let run = command.args(["-stop-when", rule]).output().unwrap();
    let took = started.elapsed();
    let mut source = record::open_input(&output).unwrap();
    let mut batch = Vec::new();
    while source.next_batch(&mut batch).unwrap() {}
    let end = source.summary().end.clone().expect("an orderly end");
    (run, end, took)
}

/// "How many connections does it hold": twelve users against a server that holds
/// six; the stream rule sees six open and stops the run with its own exit status.
/// Against a server that holds them all, the same rule never holds.
#[test]
fn a_connections_held_stop_rule_stops_a_run_at_the_servers_connection_limit() {
    let rule = "connections_open < 10 for 2s";
    let (run, end, took) = run_against_limit(6, rule);
    assert_eq!(run.status.code(), Some(7), "{}", text(&run.stderr));
    assert_eq!(end.reason, record::StopReason::StopRule);
    assert!(
        end.detail.contains("connections_open < 10 for 2s") && end.detail.contains("(value 6)"),
        "{}",
        end.detail
    );
    assert!(
        took < std::time::Duration::from_secs(6),
        "stopped early: {took:?}"
    );
    let (run, end, _) = run_against_limit(20, rule);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert_eq!(end.reason, record::StopReason::Completed, "{}", end.detail);
}
