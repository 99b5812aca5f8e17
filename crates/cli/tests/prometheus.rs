//! `attack -prometheus-addr`, `-prometheus-remote-write` and `-otlp-endpoint` end to
//! end: the real binary against the built-in simulator on loopback, scraped during the
//! run; fake receivers that are closed, answer 500 or hang; a real Prometheus server
//! from Debian's `prometheus` package (`.ci/setup/prometheus.sh`) and a real
//! OpenTelemetry Collector (`.ci/setup/otelcol.sh`). Every run is bounded.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

/// Runs `attack` with `args` on `targets` and waits for it.
fn attack(args: &[&str], targets: &str) -> Output {
    let mut child = loadlab()
        .arg("attack")
        .args(args)
        // The standard variable would add an OTLP push to every run here.
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // An attack refused for its flags may exit before it reads its targets: the write
    // then meets a closed pipe, which is not the test's business.
    let _ = child.stdin.take().unwrap().write_all(targets.as_bytes());
    child.wait_with_output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// The report's request count of a record file.
fn report_requests(file: &str) -> u64 {
    let output = loadlab()
        .args(["report", "-type=json", file])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let json = String::from_utf8(output.stdout).unwrap();
    let rest = &json[json.find("\"requests\":").unwrap() + 11..];
    rest[..rest.find(',').unwrap()].parse().unwrap()
}

fn simulator() -> simulator::Simulator {
    let recipe = simulator::parse_recipe(
        r#"{"route": "/*", "body": "hello", "stages": [{"at": 0, "status": 200, "latency": 0}]}"#,
        "test recipe",
    )
    .unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    simulator::Simulator::start(options, &recipe).unwrap()
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "loadlab-prom-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A blocking GET of `path` on `address`; the body.
fn get(address: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    // HTTP/1.0: a large answer comes whole, not chunked.
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.contains(" 200 "), "{head}");
    body.to_owned()
}

/// The sum of a metric's samples (all label sets) in a text exposition.
fn sum_of(exposition: &str, name: &str) -> f64 {
    exposition
        .lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(['{', ' ']))
        })
        .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

#[test]
fn a_scrape_during_the_run_agrees_with_the_report() {
    let server = simulator();
    let targets = format!("GET http://{}/scraped\n", server.local_addr());
    let dir = TempDir::new("scrape");
    let file = dir.path("run.llr");
    let mut child = loadlab()
        .args([
            "attack",
            "-rate=200",
            "-duration=4s",
            "-quiet",
            "-prometheus-addr=127.0.0.1:0",
            &format!("-output={file}"),
        ])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(targets.as_bytes())
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let address = first
        .strip_prefix("loadlab: prometheus metrics on http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    std::thread::sleep(Duration::from_secs(2));
    let scraped = get(&address, "/metrics");
    let status = child.wait().unwrap();
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(status.success(), "{rest:?}");
    let total = report_requests(&file);
    assert_eq!(total, 800, "the scrapes change no record");
    let count = sum_of(&scraped, "request_seconds_count");
    let completed = sum_of(&scraped, "loadlab_requests_completed_total");
    let sent = sum_of(&scraped, "loadlab_requests_sent_total");
    assert!(
        (200.0..=700.0).contains(&count),
        "about 2 s of 200/s so far, not the {total} of the report: {count}"
    );
    assert_eq!(count, completed, "{scraped}");
    assert!(sent >= completed, "{scraped}");
    let url = format!("url=\"http://{}/scraped\"", server.local_addr());
    let line = scraped
        .lines()
        .find(|line| line.starts_with("request_seconds_count{"))
        .unwrap();
    assert!(line.contains(&url), "{line}");
    assert!(line.contains("method=\"GET\""), "{line}");
    assert!(line.contains("status=\"200\""), "{line}");
    assert!(
        scraped.contains("# TYPE request_seconds histogram\n"),
        "{scraped}"
    );
    assert_eq!(sum_of(&scraped, "loadlab_schedule_rate_per_second"), 200.0);
}

#[test]
fn a_taken_port_is_a_warning_and_the_run_goes_on() {
    let server = simulator();
    let targets = format!("GET http://{}/taken\n", server.local_addr());
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let dir = TempDir::new("taken");
    let file = dir.path("run.llr");
    let output = attack(
        &[
            "-rate=100",
            "-duration=1s",
            &format!("-prometheus-addr={address}"),
            &format!("-output={file}"),
        ],
        &targets,
    );
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "loadlab: -prometheus-addr {address}: cannot listen: "
        )),
        "{err}"
    );
    assert!(err.contains("the run goes on without it"), "{err}");
    assert_eq!(report_requests(&file), 100);
}

/// How a fake remote-write receiver behaves.
#[derive(Clone, Copy, Debug)]
enum Receiver {
    Closed,
    Fails,
    Hangs,
}

/// A receiver on loopback; stops when dropped.
struct Fake {
    url: String,
    stop: Arc<AtomicBool>,
    _listener: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn fake(receiver: Receiver) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/api/v1/write", listener.local_addr().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    if let Receiver::Closed = receiver {
        drop(listener);
        return Fake {
            url,
            stop,
            _listener: None,
        };
    }
    listener.set_nonblocking(true).unwrap();
    let stopped = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        let mut held = Vec::new();
        // Bounded: 30 s of polling at most.
        for _ in 0..3000 {
            if stopped.load(Ordering::Relaxed) {
                return;
            }
            match listener.accept() {
                Ok((mut stream, _)) => {
                    if let Receiver::Fails = receiver {
                        let _ = stream.set_nonblocking(false);
                        let mut head = [0u8; 1024];
                        let _ = stream.read(&mut head);
                        let _ = stream.write_all(
                            b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 13\r\n\r\nout of memory",
                        );
                    } else {
                        // Hangs: reads nothing, answers nothing, keeps the connection.
                        held.push(stream);
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    Fake {
        url,
        stop,
        _listener: Some(thread),
    }
}

#[test]
fn a_failing_receiver_is_a_warning_and_the_records_are_intact() {
    let server = simulator();
    let targets = format!("GET http://{}/pushed\n", server.local_addr());
    let dir = TempDir::new("receivers");
    let rows = [
        (Receiver::Closed, "connect: "),
        (Receiver::Fails, "HTTP 500: out of memory"),
        (Receiver::Hangs, "timed out after 500ms"),
    ];
    for (receiver, reason) in rows {
        let receiver_at = fake(receiver);
        let file = dir.path(&format!("{receiver:?}.llr"));
        let started = Instant::now();
        let output = attack(
            &[
                "-rate=100",
                "-duration=2s",
                "-quiet",
                &format!("-prometheus-remote-write={}", receiver_at.url),
                "-prometheus-remote-write-every=500ms",
                &format!("-output={file}"),
            ],
            &targets,
        );
        let err = stderr(&output);
        assert!(output.status.success(), "{receiver:?}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{receiver:?}: bounded"
        );
        assert_eq!(report_requests(&file), 200, "{receiver:?}: records intact");
        let warnings: Vec<&str> = err.lines().filter(|l| l.contains("push failed")).collect();
        assert_eq!(
            warnings.len(),
            1,
            "{receiver:?}: one warning, not one per push: {err}"
        );
        assert!(warnings[0].contains(reason), "{receiver:?}: {err}");
        let summary = err.lines().last().unwrap();
        assert!(
            summary.starts_with(&format!(
                "loadlab: -prometheus-remote-write {}: ",
                receiver_at.url
            )) && summary.contains(" pushes failed (last: "),
            "{receiver:?}: {err}"
        );
    }
}

#[test]
fn bad_prometheus_flags_are_named_before_the_run() {
    let rows = [
        (
            vec!["-prometheus-remote-write=ftp://prom.example/api/v1/write"],
            "-prometheus-remote-write ftp://prom.example/api/v1/write: only http:// and https://",
        ),
        (
            vec!["-prometheus-remote-write=127.0.0.1:9090"],
            "expected http://HOST:PORT/PATH",
        ),
        (
            vec!["-otlp-endpoint=127.0.0.1:4318"],
            "-otlp-endpoint 127.0.0.1:4318: relative URL without a base; expected http://HOST:PORT",
        ),
        (
            vec!["-trace", "-trace-spans"],
            "-trace-spans: needs -otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT)",
        ),
        (
            vec![
                "-otlp-endpoint=http://127.0.0.1:4318",
                "-otlp-headers=api-key=s3cret%0A",
            ],
            "-otlp-headers: pair 1 (api-key): the value is not",
        ),
        (
            vec!["-prometheus-remote-write-every=soon"],
            "-prometheus-remote-write-every",
        ),
        (
            vec!["-prometheus-remote-write-every=0s"],
            "-prometheus-remote-write-every: must be more than 0",
        ),
    ];
    for (args, want) in rows {
        let output = attack(&args, "GET http://127.0.0.1:1/\n");
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            !err.contains("s3cret"),
            "a header's value is never shown: {err}"
        );
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

// ---------------------------------------------------------------------------------
// A real Prometheus server.

/// The `prometheus` binary, or `None` (a loud skip) when it is not installed and
/// CI did not ask for it (`LOADLAB_REQUIRE_PROMETHEUS`, set by `.ci/setup/prometheus.sh`).
fn prometheus_binary() -> Option<PathBuf> {
    let name = std::env::var_os("LOADLAB_TEST_PROMETHEUS").unwrap_or_else(|| "prometheus".into());
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(&name))
        .chain(std::iter::once(PathBuf::from(&name)))
        .find(|path| path.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("LOADLAB_REQUIRE_PROMETHEUS").is_none(),
            "LOADLAB_REQUIRE_PROMETHEUS is set but no prometheus binary was found: run .ci/setup/prometheus.sh"
        );
        eprintln!(
            "\n!!! SKIPPED: no prometheus binary (apt-get install prometheus, or source .ci/setup/prometheus.sh) !!!\n"
        );
    }
    found
}

/// A Prometheus server on loopback, killed when dropped.
struct Prometheus {
    child: Child,
    address: String,
    _dir: TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_prometheus(binary: &PathBuf) -> Prometheus {
    start_prometheus_with(binary, "global:\n  scrape_interval: 15s\n", &[])
}

/// A Prometheus server with `config` (YAML) and `flags` beside the usual ones.
fn start_prometheus_with(binary: &PathBuf, config: &str, flags: &[&str]) -> Prometheus {
    let dir = TempDir::new("server");
    let config_path = dir.path("prometheus.yml");
    std::fs::write(&config_path, config).unwrap();
    let address = format!("127.0.0.1:{}", free_port());
    let log = std::fs::File::create(dir.path("prometheus.log")).unwrap();
    let child = Command::new(binary)
        .args([
            &format!("--config.file={config_path}"),
            &format!("--storage.tsdb.path={}", dir.path("data")),
            &format!("--web.listen-address={address}"),
            // 2.x and 3.x both take this flag for the /api/v1/write receiver.
            "--web.enable-remote-write-receiver",
        ])
        .args(flags)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut server = Prometheus {
        child,
        address,
        _dir: dir,
    };
    // Bounded: 30 s for the server to be ready.
    for _ in 0..300 {
        if let Some(status) = server.child.try_wait().unwrap() {
            let log = std::fs::read_to_string(server._dir.path("prometheus.log")).unwrap();
            panic!("prometheus exited ({status}):\n{log}");
        }
        let ready = TcpStream::connect(&server.address).is_ok_and(|mut stream| {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = write!(
                stream,
                "GET /-/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            );
            let mut answer = String::new();
            let _ = stream.read_to_string(&mut answer);
            answer.starts_with("HTTP/1.1 200")
        });
        if ready {
            return server;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("prometheus on {} was not ready within 30 s", server.address);
}

/// The single value of an instant PromQL query (percent-encoded by the caller).
fn query(prometheus: &Prometheus, encoded: &str) -> Option<f64> {
    let body = get(
        &prometheus.address,
        &format!("/api/v1/query?query={encoded}"),
    );
    let body = body.trim();
    assert!(body.contains("\"status\":\"success\""), "{body}");
    let at = body.find("\"value\":[")?;
    let rest = &body[at..];
    let value = rest.split('"').nth(3)?;
    Some(value.parse().unwrap())
}

#[test]
fn remote_write_reaches_a_real_prometheus_with_the_report_s_count() {
    let Some(binary) = prometheus_binary() else {
        return;
    };
    let prometheus = start_prometheus(&binary);
    let server = simulator();
    let targets = format!("GET http://{}/real\n", server.local_addr());
    let dir = TempDir::new("real");
    let file = dir.path("run.llr");
    let run_id = format!("test-{}", std::process::id());
    let output = attack(
        &[
            "-rate=150",
            "-duration=3s",
            "-quiet",
            &format!("-run-id={run_id}"),
            &format!(
                "-prometheus-remote-write=http://{}/api/v1/write",
                prometheus.address
            ),
            "-prometheus-remote-write-every=1s",
            &format!("-output={file}"),
        ],
        &targets,
    );
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert_eq!(err, "", "every push was taken");
    let total = report_requests(&file);
    assert_eq!(total, 450);
    // sum(request_seconds_count{run_id="..."})
    let count = query(
        &prometheus,
        &format!("sum%28request_seconds_count%7Brun_id%3D%22{run_id}%22%7D%29"),
    );
    assert_eq!(
        count,
        Some(total as f64),
        "the final push holds the whole run"
    );
    let finished = query(
        &prometheus,
        &format!("loadlab_run_finished%7Brun_id%3D%22{run_id}%22%2Cjob%3D%22loadlab%22%7D"),
    );
    assert_eq!(finished, Some(1.0));
    let other_run = query(
        &prometheus,
        "sum%28request_seconds_count%7Brun_id%3D%22no-such-run%22%7D%29",
    );
    assert_eq!(other_run, None, "series carry their run id");
}

/// The trace ids a run of one attack under `-trace -seed=SEED` sends on its first
/// `requests` requests (the sampler's, every request sampled).
fn sent_trace_ids(seed: u64, requests: u64) -> std::collections::HashSet<String> {
    let sampler = workload::TraceSampler::new(workload::TraceSettings { sample: 1.0 }, seed);
    (0..requests)
        .filter_map(|seq| sampler.ids(0, seq))
        .map(|ids| ids.trace_hex())
        .collect()
}

/// Under `-trace`, Prometheus scrapes `-prometheus-addr` in OpenMetrics (it asks for it)
/// and, with exemplar storage on, keeps each latency bucket's traced request: the
/// trace ids are ones the run sent (the sampler's, for its seed).
#[test]
fn a_real_prometheus_keeps_the_trace_exemplars_of_a_traced_run() {
    let Some(binary) = prometheus_binary() else {
        return;
    };
    let port = free_port();
    let config = format!(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: loadlab\n    \
         static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
    );
    let prometheus =
        start_prometheus_with(&binary, &config, &["--enable-feature=exemplar-storage"]);
    // Prometheus hands new targets to its scrapers every 5 s: wait until it has ours
    // (bounded: 30 s), so the run is scraped while it goes.
    let listed = (0..300).any(|_| {
        let targets = get(&prometheus.address, "/api/v1/targets");
        let found = targets.contains(&format!(
            "\"scrapeUrl\":\"http://127.0.0.1:{port}/metrics\""
        ));
        if !found {
            std::thread::sleep(Duration::from_millis(100));
        }
        found
    });
    assert!(listed, "prometheus never listed the scrape target");
    let server = simulator();
    let targets = format!("GET http://{}/traced\n", server.local_addr());
    let dir = TempDir::new("exemplars");
    let file = dir.path("run.llr");
    let output = attack(
        &[
            "-rate=50",
            "-duration=5s",
            "-quiet",
            "-trace",
            "-seed=3",
            &format!("-prometheus-addr=127.0.0.1:{port}"),
            &format!("-output={file}"),
        ],
        &targets,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let body = get(
        &prometheus.address,
        &format!(
            "/api/v1/query_exemplars?query=request_seconds_bucket&start={}&end={}",
            now_s - 120,
            now_s + 1
        ),
    );
    let json: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(json["status"], "success", "{json}");
    let sent = sent_trace_ids(3, 250);
    let series = json["data"].as_array().unwrap();
    assert!(!series.is_empty(), "no exemplar kept: {json}");
    for exemplars in series {
        assert_eq!(exemplars["seriesLabels"]["job"], "loadlab", "{exemplars}");
        for exemplar in exemplars["exemplars"].as_array().unwrap() {
            let id = exemplar["labels"]["trace_id"].as_str().unwrap();
            assert!(sent.contains(id), "{id} was never sent: {exemplar}");
        }
    }
}

// ---------------------------------------------------------------------------------
// A real OpenTelemetry Collector.

/// The Collector `.ci/setup/otelcol.sh` builds, or `None` (a loud skip) when it is
/// missing and CI did not ask for it (`LOADLAB_REQUIRE_OTELCOL`).
fn otelcol_binary() -> Option<PathBuf> {
    let found = std::env::var_os("LOADLAB_OTELCOL_BIN")
        .map(PathBuf::from)
        .or_else(|| {
            let home = PathBuf::from(std::env::var_os("HOME")?);
            Some(home.join(".cache/loadlab/otelcol/v0.165.0/otelcol"))
        })
        .filter(|path| path.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("LOADLAB_REQUIRE_OTELCOL").is_none(),
            "LOADLAB_REQUIRE_OTELCOL is set but the collector is missing: source .ci/setup/otelcol.sh"
        );
        eprintln!("\n!!! SKIPPED: no OpenTelemetry Collector (source .ci/setup/otelcol.sh) !!!\n");
    }
    found
}

/// A Collector whose OTLP/HTTP receiver listens on `address` and whose debug exporter
/// logs every metric it receives (names, attributes, values) to `collector.log`.
struct Collector {
    child: Child,
    address: String,
    dir: TempDir,
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Collector {
    fn start(binary: &PathBuf) -> Collector {
        let dir = TempDir::new("otelcol");
        let address = format!("127.0.0.1:{}", free_port());
        let config = format!(
            "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: {address}\n\
             exporters:\n  debug:\n    verbosity: detailed\n\
             service:\n  telemetry:\n    metrics:\n      level: none\n\
             \x20 pipelines:\n    metrics:\n      receivers: [otlp]\n      exporters: [debug]\n"
        );
        let config_path = dir.path("otelcol.yaml");
        std::fs::write(&config_path, config).unwrap();
        let log = std::fs::File::create(dir.path("collector.log")).unwrap();
        let child = Command::new(binary)
            .arg(format!("--config=file:{config_path}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut collector = Collector {
            child,
            address,
            dir,
        };
        // Bounded: 30 s for the receiver to listen.
        for _ in 0..300 {
            if let Some(status) = collector.child.try_wait().unwrap() {
                panic!("the collector exited ({status}):\n{}", collector.log());
            }
            if TcpStream::connect(&collector.address).is_ok() {
                return collector;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "the collector on {} did not listen within 30 s",
            collector.address
        );
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path("collector.log")).unwrap_or_default()
    }

    /// The debug exporter's lines of the last export whose resource named `run_id`,
    /// once `done` holds for it (bounded: 10 s, for the exporter to write).
    fn last_export_of(&self, run_id: &str, done: impl Fn(&str) -> bool) -> String {
        let marker = format!("-> run_id: Str({run_id})");
        for _ in 0..100 {
            let log = self.log();
            if let Some(at) = log.rfind(&marker) {
                let export = &log[at..];
                let end = export.find("Resource attributes:").unwrap_or(export.len());
                if done(&export[..end]) {
                    return export[..end].to_owned();
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("no finished export of {run_id}:\n{}", self.log());
    }
}

/// The value printed after `-> Name: name` (its first data point's `Value:` or
/// `Count:`) in one export of the debug exporter.
fn debug_value(export: &str, name: &str, field: &str) -> Option<f64> {
    let at = export.find(&format!("-> Name: {name}\n"))?;
    let line = export[at..].lines().find(|l| l.starts_with(field))?;
    line[field.len()..].trim().parse().ok()
}

#[test]
fn otlp_metrics_reach_a_real_collector_with_the_report_s_count() {
    let Some(binary) = otelcol_binary() else {
        return;
    };
    let collector = Collector::start(&binary);
    let server = simulator();
    let targets = format!("GET http://{}/otlp\n", server.local_addr());
    let dir = TempDir::new("otlp");
    let file = dir.path("run.llr");
    let run_id = format!("otlp-{}", std::process::id());
    let output = attack(
        &[
            "-rate=100",
            "-duration=2s",
            "-quiet",
            "-trace",
            "-seed=4",
            &format!("-run-id={run_id}"),
            &format!("-otlp-endpoint=http://{}", collector.address),
            "-prometheus-remote-write-every=500ms",
            &format!("-output={file}"),
        ],
        &targets,
    );
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert_eq!(err, "", "every push was taken");
    let total = report_requests(&file);
    assert_eq!(total, 200);
    let finished =
        |export: &str| debug_value(export, "loadlab_run_finished", "Value:") == Some(1.0);
    let export = collector.last_export_of(&run_id, finished);
    let completed = debug_value(&export, "loadlab_requests_completed_total", "Value:");
    assert_eq!(completed, Some(total as f64), "{export}");
    let latency = debug_value(&export, "request_seconds", "Count:");
    assert_eq!(latency, Some(total as f64), "{export}");
    assert!(
        export.contains("ExplicitBounds #10: 10.000000\n"),
        "{export}"
    );
    assert!(
        !export.contains("ExplicitBounds #11"),
        "+Inf is no bound: {export}"
    );
    let log = collector.log();
    let resource = &log[..log.rfind(&format!("-> run_id: Str({run_id})")).unwrap()];
    assert!(
        resource.ends_with("-> service.name: Str(loadlab)\n     "),
        "{resource}"
    );
    // The latency buckets' exemplars are trace ids the run sent.
    let sent = sent_trace_ids(4, 200);
    let exemplars: Vec<&str> = (export.lines())
        .filter_map(|line| line.trim().strip_prefix("-> Trace ID: "))
        .collect();
    assert!(!exemplars.is_empty(), "{export}");
    for id in exemplars {
        assert!(sent.contains(id), "{id} was never sent");
    }
}

/// `-trace-spans` on a run without `-trace` says it sends no span, and the run goes on.
#[test]
fn trace_spans_without_trace_is_said() {
    let server = simulator();
    let closed = format!("-otlp-endpoint=http://127.0.0.1:{}", free_port());
    let output = attack(
        &[
            "-rate=10",
            "-duration=500ms",
            "-quiet",
            "-trace-spans",
            &closed,
        ],
        &format!("GET http://{}/untraced\n", server.local_addr()),
    );
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.lines()
            .next()
            .unwrap()
            .contains("-trace-spans: this run does not -trace, so it sends no span"),
        "{err}"
    );
    assert!(
        !err.contains("-trace-spans http"),
        "no span push was tried: {err}"
    );
}

/// An endpoint from the standard variable that refuses: said once, summed up at the
/// end, the records whole.
#[test]
fn a_refusing_otlp_endpoint_from_the_environment_is_said_and_the_run_goes_on() {
    let server = simulator();
    let closed = format!("http://127.0.0.1:{}", free_port());
    let dir = TempDir::new("otlp-refused");
    let file = dir.path("run.llr");
    let output = loadlab()
        .args(["attack", "-rate=50", "-duration=2s", "-quiet"])
        .args([
            "-prometheus-remote-write-every=500ms",
            &format!("-output={file}"),
        ])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &closed)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let targets = format!("GET http://{}/refused\n", server.local_addr());
            child.stdin.take().unwrap().write_all(targets.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert_eq!(report_requests(&file), 100, "records intact");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "said once, summed up once: {err}");
    assert!(
        lines[0].starts_with(&format!(
            "loadlab: -otlp-endpoint {closed}: push failed: connect: "
        )),
        "{err}"
    );
    assert!(
        lines[1].contains(" pushes failed (last: connect: "),
        "{err}"
    );
}
