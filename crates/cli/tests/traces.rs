//! `attack -trace` end to end (docs/TRACES.md): the real binary sends a W3C
//! `traceparent` to a loopback server of the test's own, which records what arrived;
//! the ids it saw are the ids the record keeps and `report` lists and links. A seed
//! repeats them, a share samples them, a target's own header wins, and bad flags are
//! named.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

fn run(args: &[&str]) -> Output {
    loadlab().args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// (path, traceparent) of each request, in arrival order.
type Arrivals = Vec<(String, Option<String>)>;

/// A keep-alive HTTP/1.1 server on a loopback port of its own that records each
/// request's path and `traceparent` and answers 200; `/slow` after 30 ms.
struct Server {
    port: u16,
    arrived: Arc<Mutex<Arrivals>>,
    /// (path, tracestate) of each request, in arrival order.
    states: Arc<Mutex<Arrivals>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let arrived = Arc::new(Mutex::new(Vec::new()));
        let states = Arc::new(Mutex::new(Vec::new()));
        let logs = (Arc::clone(&arrived), Arc::clone(&states));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let logs = (Arc::clone(&logs.0), Arc::clone(&logs.1));
                std::thread::spawn(move || serve(stream, &logs.0, &logs.1));
            }
        });
        Server {
            port,
            arrived,
            states,
        }
    }

    fn take(&self) -> Arrivals {
        std::mem::take(&mut *self.arrived.lock().unwrap())
    }
}

fn serve(stream: TcpStream, log: &Mutex<Arrivals>, states: &Mutex<Arrivals>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split(' ').nth(1).unwrap_or_default().to_owned();
        let (mut traceparent, mut tracestate) = (None, None);
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = Some(value.trim().to_owned());
                if name.eq_ignore_ascii_case("traceparent") {
                    traceparent = value;
                } else if name.eq_ignore_ascii_case("tracestate") {
                    tracestate = value;
                }
            }
        }
        if path == "/slow" {
            std::thread::sleep(Duration::from_millis(30));
        }
        states.lock().unwrap().push((path.clone(), tracestate));
        log.lock().unwrap().push((path, traceparent));
        let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        if writer.write_all(answer).is_err() {
            return;
        }
    }
}

/// `/fast` and `/slow` on the server, and a loopback port nobody listens on.
fn targets(dir: &Path, server: &Server, own_traceparent: Option<&str>) -> String {
    let port = server.port;
    let closed = free_port();
    let own = own_traceparent.map_or_else(String::new, |value| format!("traceparent: {value}\n"));
    let body = format!(
        "GET http://127.0.0.1:{port}/fast\n{own}\nGET http://127.0.0.1:{port}/slow\n\nGET http://127.0.0.1:{closed}/refused\n"
    );
    let path = dir.join("targets.txt");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

/// `attack` at 60 requests a second for a second with `extra` flags, into `out`.
fn attack(targets: &str, out: &Path, extra: &[&str]) -> Output {
    let out = format!("-output={}", out.display());
    let targets = format!("-targets={targets}");
    let mut args = vec![
        "attack",
        &targets,
        "-rate=60",
        "-duration=1s",
        "-timeout=2s",
        &out,
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// The trace ids of the `traceparent`s that arrived, checking each one's shape.
fn trace_ids(arrived: &[(String, Option<String>)]) -> BTreeSet<String> {
    arrived
        .iter()
        .filter_map(|(_, traceparent)| traceparent.as_deref())
        .map(|value| {
            let parts: Vec<&str> = value.split('-').collect();
            assert_eq!(parts.len(), 4, "{value}");
            assert_eq!((parts[0], parts[3]), ("00", "01"), "{value}");
            assert_eq!((parts[1].len(), parts[2].len()), (32, 16), "{value}");
            let hex = |s: &str| {
                s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            };
            assert!(hex(parts[1]) && hex(parts[2]), "{value}");
            parts[1].to_owned()
        })
        .collect()
}

#[test]
fn the_ids_sent_are_the_ids_the_record_keeps_and_the_report_links() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let targets = targets(dir.path(), &server, None);
    let first = dir.path().join("a.llr");
    let output = attack(&targets, &first, &["-trace", "-seed=11"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let arrived = server.take();
    let sent = trace_ids(&arrived);
    assert_eq!(
        sent.len(),
        arrived.len(),
        "every request traced, each its own id"
    );
    assert!(arrived.len() >= 30, "{}", arrived.len());

    let link = "http://127.0.0.1:16686/trace/{trace_id}";
    let report = run(&[
        "report",
        "-type=json",
        &format!("-trace-link={link}"),
        first.to_str().unwrap(),
    ]);
    assert!(report.status.success(), "{}", text(&report.stderr));
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let traces = &json["loadlab"]["traces"];
    assert_eq!(traces["sample"], 1.0, "{traces}");
    let slowest = traces["slowest"].as_array().unwrap();
    assert!(!slowest.is_empty(), "{traces}");
    for request in slowest {
        let id = request["trace_id"].as_str().unwrap();
        assert!(sent.contains(id), "{id} was never sent");
        assert_eq!(request["link"], link.replace("{trace_id}", id));
    }
    assert!(
        slowest[0]["target"].as_str().unwrap().ends_with("/slow"),
        "{traces}"
    );
    assert!(
        slowest[0]["latency"].as_u64().unwrap() >= 30_000_000,
        "{traces}"
    );
    // The refused requests never reached a server, but their ids are kept all the same.
    let failed = &traces["failures"][0];
    assert!(
        failed["target"].as_str().unwrap().ends_with("/refused"),
        "{traces}"
    );
    assert_eq!(failed["trace_id"].as_str().unwrap().len(), 32, "{traces}");

    let report = run(&["report", first.to_str().unwrap()]);
    let words = text(&report.stdout);
    assert!(
        words.contains("Traced requests (-trace, 100% sampled)"),
        "{words}"
    );
    let slowest_id = slowest[0]["trace_id"].as_str().unwrap();
    assert!(words.contains(&format!("trace {slowest_id}")), "{words}");

    // The page links the same requests from its latency chart and its panel.
    let page = dir.path().join("a.html");
    let plot = run(&[
        "plot",
        &format!("-trace-link={link}"),
        &format!("-output={}", page.display()),
        first.to_str().unwrap(),
    ]);
    assert!(plot.status.success(), "{}", text(&plot.stderr));
    let page = std::fs::read_to_string(page).unwrap();
    let href = format!("href=\"{}\"", link.replace("{trace_id}", slowest_id));
    assert!(
        page.contains(&format!("<a class=\"trace\" {href}")),
        "a ring on the latency chart"
    );
    assert!(page.contains(&format!("<a {href}")), "a row of the panel");

    // The same seed sends the same ids.
    let again = dir.path().join("b.llr");
    let output = attack(&targets, &again, &["-trace", "-seed=11"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(trace_ids(&server.take()), sent);
}

#[test]
fn a_share_is_sampled_and_an_untraced_run_sends_none() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let targets = targets(dir.path(), &server, None);
    let out = dir.path().join("a.llr");
    let output = attack(&targets, &out, &["-trace", "-trace-sample=0.25", "-seed=3"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let arrived = server.take();
    let traced = trace_ids(&arrived).len();
    assert!(
        (3..=arrived.len() / 2).contains(&traced),
        "{traced} of {}",
        arrived.len()
    );
    let report = run(&["report", out.to_str().unwrap()]);
    assert!(
        text(&report.stdout).contains("(-trace, 25% sampled)"),
        "{}",
        text(&report.stdout)
    );

    let output = attack(&targets, &out, &["-seed=3"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        server
            .take()
            .iter()
            .all(|(_, traceparent)| traceparent.is_none())
    );
    let report = run(&["report", out.to_str().unwrap()]);
    assert!(
        !text(&report.stdout).contains("Traced requests"),
        "{}",
        text(&report.stdout)
    );
    // A link asked of a run that was not traced is answered, not guessed.
    let report = run(&[
        "report",
        "-trace-link=http://j/{trace_id}",
        out.to_str().unwrap(),
    ]);
    assert!(
        text(&report.stdout).contains("Traced requests: not judged"),
        "{}",
        text(&report.stdout)
    );
}

#[test]
fn a_traceparent_the_target_sets_wins_and_is_said_once() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let theirs = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let targets = targets(dir.path(), &server, Some(theirs));
    let out = dir.path().join("a.llr");
    let output = attack(&targets, &out, &["-trace", "-seed=5"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert_eq!(
        stderr.matches("set their own traceparent").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("/fast"), "{stderr}");
    for (path, traceparent) in server.take() {
        let traceparent = traceparent.unwrap();
        assert_eq!(
            traceparent == theirs,
            path == "/fast",
            "{path}: {traceparent}"
        );
    }
}

#[test]
fn the_tracestate_goes_beside_each_traceparent_unless_the_target_sets_its_own() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let port = server.port;
    let targets = dir.path().join("targets.txt");
    std::fs::write(
        &targets,
        format!(
            "GET http://127.0.0.1:{port}/fast\nTraceState: theirs=1\n\nGET http://127.0.0.1:{port}/slow\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("a.llr");
    let output = attack(
        targets.to_str().unwrap(),
        &out,
        &[
            "-trace",
            "-trace-sample=0.5",
            "-trace-state= vendor=abc ,tenant@sys=x",
            "-seed=2",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert_eq!(
        stderr.matches("set their own tracestate").count(),
        1,
        "{stderr}"
    );
    let (arrived, states) = (
        server.take(),
        std::mem::take(&mut *server.states.lock().unwrap()),
    );
    assert!(arrived.len() >= 30, "{}", arrived.len());
    let mut traced = 0;
    for ((path, traceparent), (_, tracestate)) in arrived.iter().zip(&states) {
        let want = match (path.as_str(), traceparent) {
            ("/fast", _) => Some("theirs=1"),
            (_, Some(_)) => Some("vendor=abc,tenant@sys=x"),
            (_, None) => None,
        };
        traced += usize::from(traceparent.is_some());
        assert_eq!(tracestate.as_deref(), want, "{path}: {traceparent:?}");
    }
    assert!((3..arrived.len()).contains(&traced), "{traced} sampled");

    // A flow's steps carry it too.
    let flow = dir.path().join("flow.toml");
    std::fs::write(
        &flow,
        format!(
            "[[scenario]]\nname = \"f\"\nconcurrency = 1\nmax_requests = 4\nduration = \"5s\"\n\n[[scenario.step]]\nname = \"s\"\nrequest = \"GET http://127.0.0.1:{port}/step/{{{{seq}}}}\"\n"
        ),
    )
    .unwrap();
    let output = run(&[
        "attack",
        &format!("-scenarios={}", flow.display()),
        "-trace",
        "-trace-state=vendor=abc",
        &format!("-output={}", out.display()),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let states = std::mem::take(&mut *server.states.lock().unwrap());
    assert_eq!(states.len(), 4, "{states:?}");
    for (path, tracestate) in states {
        assert!(path.starts_with("/step/"), "{path}");
        assert_eq!(tracestate.as_deref(), Some("vendor=abc"), "{path}");
    }
}

#[test]
fn bad_trace_flags_are_named_and_fail() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("none.llr");
    // (arguments, what stderr must say)
    let rows: [(&[&str], &str); 7] = [
        (
            &[
                "report",
                "-trace-link=http://127.0.0.1:16686/trace/",
                "x.llr",
            ],
            "-trace-link: \"http://127.0.0.1:16686/trace/\" has no {trace_id}",
        ),
        (
            &["plot", "-trace-link=http://j/trace/", "x.llr"],
            "-trace-link: \"http://j/trace/\" has no {trace_id}",
        ),
        (
            &["attack", "-trace", "-trace-sample=0", "-duration=1s"],
            "-trace-sample: want a share above 0 and at most 1",
        ),
        (
            &["attack", "-trace", "-trace-sample=2", "-duration=1s"],
            "-trace-sample: want a share above 0 and at most 1",
        ),
        (
            &["attack", "-trace-sample=0.5", "-duration=1s"],
            "-trace-sample: samples the traced requests: give -trace too",
        ),
        (
            &["attack", "-trace-state=a=1", "-duration=1s"],
            "-trace-state: goes beside the traceparent: give -trace too",
        ),
        (
            &["attack", "-trace", "-trace-state=a=1,B=2", "-duration=1s"],
            "-trace-state: member \"B=2\": the key is not",
        ),
    ];
    for (args, want) in rows {
        let output = loadlab()
            .args(args)
            .arg(format!("-output={}", record.display()))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// A trace store that is down or answers garbage gives a "not judged" line naming
/// why; the rest of the report is unharmed and the exit is 0.
#[test]
fn a_trace_store_down_or_answering_garbage_is_not_judged() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let targets = targets(dir.path(), &server, None);
    let out = dir.path().join("a.llr");
    let output = attack(&targets, &out, &["-trace", "-seed=2"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let closed = free_port();
    // (-trace-store, what the "not judged" reason says): the test's server answers
    // every path with an empty 200, which is no trace JSON.
    let rows = [
        (format!("http://127.0.0.1:{closed}"), "could not be read"),
        (format!("http://127.0.0.1:{}", server.port), "not JSON"),
    ];
    for (store, want) in rows {
        let report = run(&[
            "report",
            &format!("-trace-store={store}"),
            out.to_str().unwrap(),
        ]);
        assert!(report.status.success(), "{}", text(&report.stderr));
        let words = text(&report.stdout);
        assert!(
            words.contains("Where the time went (-trace-store): not judged: the trace store"),
            "{words}"
        );
        assert!(words.contains(want), "{words}");
        assert!(
            words.contains("Traced requests (-trace, 100% sampled)"),
            "{words}"
        );
        assert!(words.contains("Latencies"), "{words}");
        let report = run(&[
            "report",
            "-type=json",
            &format!("-trace-store={store}"),
            out.to_str().unwrap(),
        ]);
        let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
        let spans = &json["loadlab"]["traces"]["spans"];
        assert_eq!(spans["judged"], false, "{spans}");
        assert!(spans["reason"].as_str().unwrap().contains(want), "{spans}");
        assert_eq!(spans["reason_kind"], "store_unreadable", "{spans}");
    }
    // compare says it per input, and names no span moving between runs it could not read.
    let file = out.to_str().unwrap();
    let store = format!("-trace-store=http://127.0.0.1:{closed}");
    let compare = run(&["compare", &store, file, file]);
    assert!(compare.status.success(), "{}", text(&compare.stderr));
    let words = text(&compare.stdout);
    let block = words
        .split("\nWhere the time went (-trace-store):\n")
        .nth(1)
        .expect(&words);
    assert_eq!(
        block.matches("not judged: the trace store").count(),
        2,
        "{block}"
    );
    assert!(!block.contains(" against "), "{block}");
    let report = run(&["report", "-trace-store=ftp://x", out.to_str().unwrap()]);
    assert!(!report.status.success());
    assert!(
        text(&report.stderr).contains("-trace-store \"ftp://x\": want the store's query API"),
        "{}",
        text(&report.stderr)
    );
}

/// A process of the end-to-end test, killed and reaped on drop.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port free right now (Jaeger and gunicorn are told their ports).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The status line of `GET url`'s answer, or none.
fn get_status(port: u16, path: &str) -> Option<String> {
    use std::io::Read;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.lines().next().map(str::to_owned)
}

/// Waits until `GET path` on `port` answers 200, while `child` runs.
fn wait_for(child: &mut Child, port: u16, path: &str, what: &str) {
    for _ in 0..300 {
        if get_status(port, path).is_some_and(|s| s.starts_with("HTTP/1.1 200")) {
            return;
        }
        assert!(child.0.try_wait().unwrap().is_none(), "{what} exited");
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what} did not answer on {port}");
}

/// What the end-to-end test needs, from `.ci/setup/jaeger.sh`, `postgres.sh` and
/// `traced-app.sh`; `None` (said on stderr) when missing, unless one of their
/// LOADLAB_REQUIRE_* says it must be there.
fn traced_app_parts() -> Option<(std::path::PathBuf, String, std::path::PathBuf)> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let cached = |var: &str, under: &str| {
        std::env::var_os(var)
            .map(std::path::PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".cache/loadlab").join(under)))
            .filter(|path| path.exists())
    };
    let jaeger = cached("LOADLAB_JAEGER_BIN", "jaeger/v1.76.0/jaeger");
    let venv = cached("LOADLAB_TRACED_APP_VENV", "traced-app-venv")
        .filter(|venv| venv.join("bin/gunicorn").exists());
    let postgres = std::env::var("LOADLAB_TEST_POSTGRES_URL").ok();
    let required = ["LOADLAB_REQUIRE_JAEGER", "LOADLAB_REQUIRE_TRACED_APP"]
        .iter()
        .any(|var| std::env::var_os(var).is_some());
    match (jaeger, postgres, venv) {
        (Some(jaeger), Some(postgres), Some(venv)) => Some((jaeger, postgres, venv)),
        (jaeger, postgres, venv) => {
            let missing = format!(
                "jaeger: {}, postgres: {}, traced app venv: {} (source .ci/setup/jaeger.sh, postgres.sh and traced-app.sh)",
                jaeger.is_some(),
                postgres.is_some(),
                venv.is_some()
            );
            assert!(
                !required,
                "LOADLAB_REQUIRE_JAEGER or _TRACED_APP is set but {missing}"
            );
            eprintln!("skipped: the traced app's parts are missing: {missing}");
            None
        }
    }
}

/// Jaeger (OTLP in, memory store, query API) on ports of its own, configured in `dir`.
fn start_jaeger(bin: &Path, dir: &Path) -> (Child, u16, u16) {
    let (query, otlp, grpc) = (free_port(), free_port(), free_port());
    let config = format!(
        "service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {{receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter]}}
    metrics: {{receivers: [otlp], exporters: [nop]}}
  telemetry: {{metrics: {{level: none}}, logs: {{level: warn}}}}
extensions:
  jaeger_query:
    storage: {{traces: memstore}}
    http: {{endpoint: 127.0.0.1:{query}}}
    grpc: {{endpoint: 127.0.0.1:{grpc}}}
  jaeger_storage:
    backends: {{memstore: {{memory: {{max_traces: 100000}}}}}}
receivers:
  otlp:
    protocols: {{http: {{endpoint: 127.0.0.1:{otlp}}}}}
processors:
  batch: {{timeout: 100ms}}
exporters:
  jaeger_storage_exporter: {{trace_storage: memstore}}
  nop: {{}}
"
    );
    let path = dir.join("jaeger.yaml");
    std::fs::write(&path, config).unwrap();
    let log = std::fs::File::create(dir.join("jaeger.log")).unwrap();
    let mut child = Child(
        Command::new(bin)
            .arg(format!("--config={}", path.display()))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    wait_for(&mut child, query, "/api/services", "jaeger");
    (child, query, otlp)
}

/// The slowest traced request's trace in Jaeger: its root is loadlab's client span
/// (`-trace-spans`, the span id the request sent) and the app's server span is its child.
fn assert_trace_starts_at_loadlab(query: u16, record: &str) {
    let report = run(&["report", "-type=json", record]);
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let trace_id = json["loadlab"]["traces"]["slowest"][0]["trace_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut stream = TcpStream::connect(("127.0.0.1", query)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    // HTTP/1.0: the answer comes whole, not chunked.
    let request = format!("GET /api/traces/{trace_id} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    let trace: serde_json::Value = serde_json::from_str(body).unwrap();
    let trace = &trace["data"][0];
    let service = |span: &serde_json::Value| {
        let process = span["processID"].as_str().unwrap();
        trace["processes"][process]["serviceName"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let spans = trace["spans"].as_array().unwrap();
    let roots: Vec<&serde_json::Value> = (spans.iter())
        .filter(|span| span["references"].as_array().is_none_or(Vec::is_empty))
        .collect();
    assert_eq!(roots.len(), 1, "{trace}");
    assert_eq!(service(roots[0]), "loadlab", "{trace}");
    let client_id = roots[0]["spanID"].as_str().unwrap();
    let server_parents: Vec<&str> = (spans.iter())
        .filter(|span| service(span) == "traced-orders")
        .filter(|span| span["operationName"].as_str().unwrap().starts_with("GET"))
        .filter_map(|span| span["references"][0]["spanID"].as_str())
        .collect();
    assert_eq!(server_parents, [client_id], "{trace}");
}

/// The whole story, as a user would run it: a Flask app traced by OpenTelemetry's own
/// SDK (examples/apps/traced_orders.py, under gunicorn) exports to a real Jaeger; a
/// ramp with `-trace` pushes it past the capacity of its hot-row UPDATE; `report
/// -trace-store` reads the traces back and must name that UPDATE as where the slow
/// requests' time went.
#[test]
fn the_report_names_the_planted_slow_span_of_a_real_traced_app() {
    let Some((jaeger_bin, postgres, venv)) = traced_app_parts() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_jaeger, query, otlp) = start_jaeger(&jaeger_bin, dir.path());
    let port = free_port();
    let apps = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/apps");
    let mut app = Child(
        Command::new(venv.join("bin/gunicorn"))
            .args([
                "-k",
                "gthread",
                "--threads",
                "64",
                "-w",
                "1",
                "--no-control-socket",
            ])
            .args(["-b", &format!("127.0.0.1:{port}")])
            .arg("--chdir")
            .arg(&apps)
            .arg("traced_orders:app")
            .env("DATABASE_URL", postgres)
            .env(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                format!("http://127.0.0.1:{otlp}/v1/traces"),
            )
            // Each request holds the hot row ~11 ms: ~85 requests a second at most. The
            // threads and the pool outnumber the requests in flight past the knee, so
            // they wait in the UPDATE, not in a queue before the server's first span.
            .env("HOLD_MS", "10")
            .env("POOL_SIZE", "64")
            .env("EXPORT_MS", "200")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for(&mut app, port, "/health", "gunicorn (traced_orders)");

    let targets = dir.path().join("targets.txt");
    std::fs::write(&targets, format!("GET http://127.0.0.1:{port}/orders/7\n")).unwrap();
    let out = dir.path().join("run.llr");
    // Under the knee (~60-90/s, the host's load decides) for most of the run, so typical
    // requests are quick, then past it for 2-4 s: the 50 or so requests queued wait in
    // the UPDATE (64 threads, 64 connections); bounded by its 10 s and -timeout.
    let output = run(&[
        "attack",
        &format!("-targets={}", targets.display()),
        "-schedule=line(5, 120, 10s)",
        "-timeout=5s",
        "-trace",
        "-seed=40",
        // loadlab's own client spans to the same Jaeger: each trace starts at loadlab.
        "-trace-spans",
        &format!("-otlp-endpoint=http://127.0.0.1:{otlp}"),
        "-prometheus-remote-write-every=1s",
        &format!("-output={}", out.display()),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        !text(&output.stderr).contains("push"),
        "{}",
        text(&output.stderr)
    );

    // The SDK exports every 200 ms and Jaeger batches every 100 ms: read back until
    // the slow traces have all arrived, 20 s at most.
    let store = format!("-trace-store=http://127.0.0.1:{query}");
    // A trace is found as soon as one of its spans is stored, and the server span
    // ends (and is exported) last: read until two readings a second apart agree.
    let mut spans = serde_json::Value::Null;
    for _ in 0..20 {
        let report = run(&["report", "-type=json", &store, out.to_str().unwrap()]);
        assert!(report.status.success(), "{}", text(&report.stderr));
        let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
        let now = json["loadlab"]["traces"]["spans"].clone();
        let settled = now == spans;
        spans = now;
        let found = &spans["found"];
        if settled && spans["judged"] == true && found["slow"] == found["slow_asked"] {
            break;
        }
        std::thread::sleep(Duration::from_millis(1000));
    }
    assert_eq!(spans["judged"], true, "{spans}");
    assert_trace_starts_at_loadlab(query, out.to_str().unwrap());
    let grew = &spans["operations"][0];
    assert_eq!(
        (grew["service"].as_str(), grew["operation"].as_str()),
        (Some("traced-orders"), Some("UPDATE")),
        "{spans}"
    );
    assert!(
        grew["slow_median"].as_u64().unwrap() > 3 * grew["typical_median"].as_u64().unwrap(),
        "{spans}"
    );
    let report = run(&["report", &store, out.to_str().unwrap()]);
    let words = text(&report.stdout);
    eprintln!("{words}");
    assert!(
        words.contains("of their time in traced-orders UPDATE (median"),
        "{words}"
    );
    // The page says it in its panel, with a row per operation.
    let page = dir.path().join("run.html");
    let plot = run(&[
        "plot",
        &store,
        "-trace-link=http://127.0.0.1:16686/trace/{trace_id}",
        &format!("-output={}", page.display()),
        out.to_str().unwrap(),
    ]);
    assert!(plot.status.success(), "{}", text(&plot.stderr));
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(
        page.contains("of their time in traced-orders UPDATE (median"),
        "the page's panel"
    );
    assert!(page.contains("<td>traced-orders UPDATE</td>"));
    // compare reads the same traces for each side: the same run moved no span.
    let file = out.to_str().unwrap();
    let compare = run(&["compare", &store, file, file]);
    let words = text(&compare.stdout);
    assert!(
        words.contains(&format!("{file} against {file}: no span's median moved")),
        "{words}"
    );
    // JSON carries the same judgements.
    let compare = run(&["compare", "-format=json", &store, file, file]);
    let json: serde_json::Value = serde_json::from_slice(&compare.stdout).unwrap();
    assert_eq!(json["traces"][1]["spans"]["judged"], true, "{json}");
    assert_eq!(
        json["span_shift"][0]["moved"],
        serde_json::Value::Null,
        "{json}"
    );

    // A plan with the store: its step past the knee says where its slow requests'
    // time went in its write-up, read back right after the step.
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"traced\"\nmode = \"sweep\"\ntrace_store = \"http://127.0.0.1:{query}\"\n\n[[variant]]\nname = \"app\"\n\n[load]\ntargets = [\"GET http://127.0.0.1:{port}/orders/7\"]\nrates = [120]\nstep_duration = \"4s\"\nwarmup = \"1s\"\ntimeout = \"5s\"\ntrace = true\nseed = 41\n"
        ),
    )
    .unwrap();
    let folder = dir.path().join("runs");
    let output = run(&[
        "run",
        "-quiet",
        "-output",
        folder.to_str().unwrap(),
        plan.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let markdown = text(&output.stdout);
    assert!(
        markdown.contains("## Where the time went (trace_store)"),
        "{markdown}"
    );
    let summary = std::fs::read_to_string(folder.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let spans = summary["steps"][0]["spans"][0].as_str().unwrap();
    assert!(
        spans.starts_with("the slowest traced requests spent") && spans.contains("traced-orders"),
        "{spans}"
    );
    drop(app);
}
