//! The monitor against the real thing: this host's /proc, processes that start and
//! exit, a loopback HTTP endpoint serving exporter text (with resets, garbage, a slow
//! answer), a real PostgreSQL server (`.ci/setup/postgres.sh`), and an agent over TCP.
//! Every run is bounded in time; traffic stays on loopback.

#![allow(clippy::unwrap_used)]

use std::io::{Cursor, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use monitor::{AgentServer, ClockAnchor, Monitor, MonitorConfig};
use record::{
    Compression, RecordWriter, RunHeader, SampleBatch, SampleFrame, SampleTables, open_reader,
};

/// Frames written to a record file and read back: what `report` and `plot` will see.
struct Run {
    tables: SampleTables,
    batches: Vec<SampleBatch>,
    anchor: ClockAnchor,
    elapsed_ns: u64,
}

impl Run {
    fn values(&self, sampler: &str, series: &str) -> Vec<(u64, f64)> {
        self.values_where(sampler, series, None)
    }

    /// Values of the series named `series` of samplers whose name holds `sampler`,
    /// with label `key=value` when given.
    fn values_where(
        &self,
        sampler: &str,
        series: &str,
        label: Option<(&str, &str)>,
    ) -> Vec<(u64, f64)> {
        self.matching(sampler, series, label, |batch, id| {
            batch
                .values
                .iter()
                .filter(|v| v.series == id)
                .map(|v| (batch.at_unix_ns, v.value))
                .collect()
        })
    }

    fn gaps(&self, sampler: &str) -> Vec<String> {
        let ids: Vec<u32> = (0..self.tables.samplers.len() as u32)
            .filter(|&id| self.tables.samplers[id as usize].name.contains(sampler))
            .collect();
        self.batches
            .iter()
            .flat_map(|b| &b.gaps)
            .filter(|g| ids.contains(&g.sampler))
            .map(|g| g.reason.clone())
            .collect()
    }

    fn matching<T>(
        &self,
        sampler: &str,
        series: &str,
        label: Option<(&str, &str)>,
        pick: impl Fn(&SampleBatch, u32) -> Vec<T>,
    ) -> Vec<T> {
        let mut out = Vec::new();
        for (id, info) in self.tables.series.iter().enumerate() {
            let owner = &self.tables.samplers[info.sampler as usize];
            let labelled = label.is_none_or(|(k, v)| info.labels.get(k).is_some_and(|l| l == v));
            if owner.name.contains(sampler) && info.name == series && labelled {
                for batch in &self.batches {
                    out.extend(pick(batch, id as u32));
                }
            }
        }
        out
    }
}

/// Runs a monitor for `seconds`, calling `during` once it started.
fn monitor(specs: &[&str], interval_ms: u64, seconds: f64, during: impl FnOnce()) -> Run {
    let mut config = MonitorConfig::new(Duration::from_millis(interval_ms)).unwrap();
    for spec in specs {
        config.add_spec(spec).unwrap();
    }
    let anchor = ClockAnchor::now();
    let handle = Monitor::start(config, anchor).unwrap();
    during();
    let mut frames: Vec<SampleFrame> = Vec::new();
    let end = anchor.instant + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        if let Ok(frame) = handle.frames().recv_timeout(Duration::from_millis(50)) {
            frames.push(frame);
        }
    }
    let stopped = handle.stop();
    frames.extend(stopped.remaining);
    assert_eq!(stopped.stats.dropped_frames, 0);
    let elapsed_ns = anchor.instant.elapsed().as_nanos() as u64;
    read_back(&frames, anchor, elapsed_ns)
}

fn read_back(frames: &[SampleFrame], anchor: ClockAnchor, elapsed_ns: u64) -> Run {
    let header = RunHeader {
        tool: "test".to_owned(),
        start_unix_ns: anchor.unix_ns,
        ..RunHeader::default()
    };
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    for frame in frames {
        writer.write_samples(frame).unwrap();
    }
    let bytes = writer.close().unwrap();
    let mut source = open_reader(Box::new(Cursor::new(bytes)), "run.mon").unwrap();
    let (mut records, mut batches) = (Vec::new(), Vec::new());
    while source.next_batch(&mut records).unwrap() {
        source.drain_samples(&mut batches);
    }
    source.drain_samples(&mut batches);
    assert!(source.summary().torn.is_none());
    Run {
        tables: source.summary().samples.tables.clone(),
        batches,
        anchor,
        elapsed_ns,
    }
}

#[test]
fn samples_host_and_processes_on_the_anchor_clock() {
    let me = std::process::id();
    let run = monitor(&["host", &format!("pid={me}")], 200, 1.3, || {});
    let cpu = run.values("host", "host.cpu_percent");
    assert!(
        cpu.len() >= 8,
        "all + per core, several ticks: {}",
        cpu.len()
    );
    assert!(cpu.iter().all(|(_, v)| (0.0..=100.0).contains(v)));
    let rss = run.values(&format!("pid {me}"), "process.rss_bytes");
    assert!(rss.len() >= 5, "{rss:?}");
    assert!(rss.iter().all(|(_, v)| *v > 1e6));
    for batch in &run.batches {
        let offset = batch
            .at_unix_ns
            .checked_sub(run.anchor.unix_ns)
            .expect("after the anchor");
        assert!(offset <= run.elapsed_ns, "{offset} > {}", run.elapsed_ns);
    }
    // Ticks are on the anchor's 200 ms grid (give or take scheduling).
    let first = rss[0].0 - run.anchor.unix_ns;
    assert!(
        first < 100_000_000,
        "the first reading is taken at once: {first}"
    );
    let established = run.values("host", "host.tcp_sockets");
    assert!(!established.is_empty());
}

fn spawn_sleeper(marker: &str, seconds: &str) -> Child {
    // `exec -a` names argv[0], so the pattern finds exactly this process.
    Command::new("bash")
        .args(["-c", &format!("exec -a {marker} sleep {seconds}")])
        .spawn()
        .unwrap()
}

#[test]
fn processes_that_start_late_or_exit_are_gaps() {
    let marker = format!("loadlab-test-sleeper-{}", std::process::id());
    let pattern = format!("process={marker}.*");
    let child: Arc<Mutex<Option<Child>>> = Arc::new(Mutex::new(None));
    let started = Arc::clone(&child);
    let marker_for_thread = marker.clone();
    let run = monitor(&[&pattern], 200, 2.4, move || {
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(600));
            *started.lock().unwrap() = Some(spawn_sleeper(&marker_for_thread, "1"));
        });
    });
    if let Some(mut child) = child.lock().unwrap().take() {
        let _ = child.wait();
    }
    let gaps = run.gaps(&marker);
    let counts = run.values(&marker, "process.count");
    assert!(
        gaps.len() >= 4,
        "before it started and after it exited: {gaps:?}"
    );
    assert!(
        gaps.iter().all(|g| g.starts_with("no process matches")),
        "{gaps:?}"
    );
    assert!(
        counts.len() >= 3 && counts.iter().all(|(_, v)| *v == 1.0),
        "{counts:?}"
    );
    let first_value = counts[0].0;
    let last_value = counts[counts.len() - 1].0;
    let gap_times: Vec<u64> = run
        .batches
        .iter()
        .filter(|b| !b.gaps.is_empty())
        .map(|b| b.at_unix_ns)
        .collect();
    assert!(
        gap_times.iter().any(|&t| t < first_value),
        "a gap before it started"
    );
    assert!(
        gap_times.iter().any(|&t| t > last_value),
        "a gap after it exited"
    );
}

/// What the test endpoint answers, request by request (the last one repeats).
#[derive(Clone)]
enum Answer {
    Text(String),
    Status(u16),
    Slow(Duration),
    Garbage,
}

struct Endpoint {
    url: String,
    served: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn endpoint(answers: Vec<Answer>) -> Endpoint {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let served = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (count, done) = (Arc::clone(&served), Arc::clone(&stop));
    thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done.load(Ordering::Relaxed) && Instant::now() < deadline {
            let Ok((stream, _)) = listener.accept() else {
                thread::sleep(Duration::from_millis(5));
                continue;
            };
            let index = count.fetch_add(1, Ordering::Relaxed);
            let answer = answers[index.min(answers.len() - 1)].clone();
            thread::spawn(move || answer_one(stream, &answer));
        }
    });
    Endpoint { url, served, stop }
}

fn answer_one(mut stream: TcpStream, answer: &Answer) {
    stream.set_nonblocking(false).unwrap();
    let mut head = [0u8; 4096];
    let _ = stream.read(&mut head);
    let reply = match answer {
        Answer::Text(text) => format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{text}\r\n0\r\n\r\n",
            text.len()
        ),
        Answer::Status(code) => format!("HTTP/1.1 {code} Oops\r\nContent-Length: 0\r\n\r\n"),
        Answer::Slow(delay) => {
            thread::sleep(*delay);
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nup 1\n".to_owned()
        }
        Answer::Garbage => {
            "HTTP/1.1 200 OK\r\nContent-Length: 29\r\n\r\n<html>502 Bad Gateway</html>\n".to_owned()
        }
    };
    let _ = stream.write_all(reply.as_bytes());
}

/// An exporter page in the shape node_exporter and client_golang serve, with label
/// values holding `,` `=` `}` `"` and escapes; `requests` drives the counter.
fn exporter_page(requests: u64, bucket_fast: u64, bucket_all: u64) -> String {
    format!(
        r#"# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 8
# HELP http_requests_total Total HTTP requests.
# TYPE http_requests_total counter
http_requests_total{{code="200",handler="/search?q=a,b",query="x=1}}"}} {requests}
# HELP node_filesystem_avail_bytes Filesystem space available to non-root users in bytes.
# TYPE node_filesystem_avail_bytes gauge
node_filesystem_avail_bytes{{device="/dev/vda1",fstype="ext4",mountpoint="/srv/data \"main\""}} 1.2345e+10
# HELP http_request_duration_seconds Request latency.
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{{le="0.005"}} {bucket_fast}
http_request_duration_seconds_bucket{{le="0.1"}} {bucket_all}
http_request_duration_seconds_bucket{{le="+Inf"}} {bucket_all}
http_request_duration_seconds_sum {sum}
http_request_duration_seconds_count {bucket_all}
# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.70000000012e+09
"#,
        sum = bucket_all as f64 * 0.004
    )
}

#[test]
fn scrapes_turn_counters_into_rates_and_faults_into_gaps() {
    let answers = vec![
        Answer::Text(exporter_page(100, 10, 10)),
        Answer::Text(exporter_page(300, 110, 110)),
        Answer::Text(exporter_page(500, 210, 210)),
        // The exporter restarted: counters drop.
        Answer::Text(exporter_page(20, 5, 5)),
        Answer::Garbage,
        Answer::Status(503),
        Answer::Slow(Duration::from_secs(3)),
    ];
    let server = endpoint(answers);
    let spec = format!("prom={};drop=go_.*;timeout=300ms", server.url);
    let run = monitor(&[&spec], 400, 3.9, || {});
    assert!(server.served.load(Ordering::Relaxed) >= 8);
    let rates = run.values("metrics", "http_requests_total");
    assert!(rates.len() >= 2, "{rates:?}");
    // 200 requests between scrapes ~400 ms apart: ~500/s.
    assert!(
        rates.iter().all(|(_, r)| (350.0..700.0).contains(r)),
        "{rates:?}"
    );
    let labels = &run
        .tables
        .series
        .iter()
        .find(|s| s.name == "http_requests_total")
        .unwrap()
        .labels;
    assert_eq!(labels["handler"], "/search?q=a,b");
    assert_eq!(labels["query"], "x=1}");
    let mount = &run
        .tables
        .series
        .iter()
        .find(|s| s.name == "node_filesystem_avail_bytes")
        .unwrap()
        .labels;
    assert_eq!(mount["mountpoint"], "/srv/data \"main\"");
    assert!(
        run.tables.series.iter().all(|s| !s.name.starts_with("go_")),
        "drop= filter"
    );
    let p99 = run.values("metrics", "http_request_duration_seconds");
    assert!(
        p99.iter().any(|(_, v)| *v <= 0.005),
        "quantiles from the buckets: {p99:?}"
    );
    let gaps = run.gaps("metrics");
    let has = |want: &str| gaps.iter().any(|g| g.contains(want));
    assert!(has("counter reset (500 -> 20)"), "{gaps:?}");
    assert!(has("histogram reset"), "{gaps:?}");
    assert!(has("not the Prometheus text format"), "{gaps:?}");
    assert!(has("HTTP 503"), "{gaps:?}");
    assert!(has("timed out after 300ms"), "{gaps:?}");
}

#[test]
fn a_slow_endpoint_does_not_delay_the_other_samplers() {
    let server = endpoint(vec![Answer::Slow(Duration::from_secs(5))]);
    let spec = format!("prom={};timeout=2s", server.url);
    let run = monitor(&[&spec, "host"], 250, 2.1, || {});
    let host_ticks = run.values("host", "host.memory_used_bytes");
    assert!(
        host_ticks.len() >= 7,
        "host kept its 250 ms ticks: {}",
        host_ticks.len()
    );
    for pair in host_ticks.windows(2) {
        let step_ms = (pair[1].0 - pair[0].0) / 1_000_000;
        assert!(step_ms < 400, "host ticks stayed regular: {step_ms} ms");
    }
}

#[test]
fn an_endpoint_that_is_down_is_a_gap_per_tick() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", closed.local_addr().unwrap());
    drop(closed);
    let run = monitor(&[&format!("prom={url}")], 200, 1.1, || {});
    let gaps = run.gaps("metrics");
    assert!(gaps.len() >= 5, "{gaps:?}");
    assert!(gaps.iter().all(|g| g.starts_with("connect:")), "{gaps:?}");
}

fn postgres_url() -> Option<String> {
    match std::env::var("LOADLAB_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("LOADLAB_REQUIRE_POSTGRES").is_some() => {
            panic!(
                "LOADLAB_REQUIRE_POSTGRES is set but LOADLAB_TEST_POSTGRES_URL is not: run .ci/setup/postgres.sh"
            )
        }
        _ => {
            eprintln!(
                "\n!!! SKIPPED: no PostgreSQL (set LOADLAB_TEST_POSTGRES_URL, e.g. `source .ci/setup/postgres.sh`) !!!\n"
            );
            None
        }
    }
}

#[test]
fn postgres_connections_and_transactions_per_second() {
    let Some(url) = postgres_url() else { return };
    const TRANSACTIONS: u64 = 240;
    let load_url = url.clone();
    let run = monitor(&[&format!("postgres={url}")], 500, 4.5, move || {
        thread::spawn(move || {
            let mut clients: Vec<postgres::Client> = (0..3)
                .map(|_| postgres::Client::connect(&load_url, postgres::NoTls).unwrap())
                .collect();
            for n in 0..TRANSACTIONS {
                let client = &mut clients[(n % 3) as usize];
                client.simple_query("SELECT 1").unwrap();
                thread::sleep(Duration::from_millis(8));
            }
            // One connection busy for a second, in a transaction.
            clients[0]
                .batch_execute("BEGIN; SELECT pg_sleep(1.0); COMMIT")
                .unwrap();
            thread::sleep(Duration::from_millis(700));
            // Closing flushes each backend's statistics.
            drop(clients);
        });
    });
    let ours = Some(("database", "loadlab"));
    let connections = run.values_where("loadlab", "postgres.connections", ours);
    assert!(
        connections.iter().any(|(_, c)| *c >= 3.0),
        "our 3 connections: {connections:?}"
    );
    let rates = run.values_where("loadlab", "postgres.transactions_per_sec", ours);
    let (mut total, mut previous) = (0.0, connections[0].0);
    for &(at, rate) in &rates {
        total += rate * (at - previous) as f64 / 1e9;
        previous = at;
    }
    let want = TRANSACTIONS as f64;
    assert!(
        (total - want).abs() <= 12.0,
        "transactions summed over the run: {total:.1}, want {want}: {rates:?}"
    );
    // Busy connections summed over the run: the second in pg_sleep, the 240 short
    // transactions and the sampler's own queries (a few milliseconds each).
    let busy = run.values_where("loadlab", "postgres.busy_connections", ours);
    let (mut busy_seconds, mut previous) = (0.0, connections[0].0);
    for &(at, connections) in &busy {
        busy_seconds += connections * (at - previous) as f64 / 1e9;
        previous = at;
    }
    assert!(
        (0.95..2.0).contains(&busy_seconds),
        "busy seconds summed over the run: {busy_seconds:.2}: {busy:?}"
    );
    assert!(
        run.tables
            .samplers
            .iter()
            .all(|s| !s.name.contains("loadlab-test")),
        "no password in names"
    );
}

#[test]
fn postgres_refusing_the_login_is_a_gap_without_the_password() {
    let Some(url) = postgres_url() else { return };
    let wrong = url.replace(":loadlab-test@", ":wrong-secret@");
    assert_ne!(wrong, url);
    let run = monitor(&[&format!("postgres={wrong}")], 300, 1.0, || {});
    let gaps = run.gaps("postgres://");
    assert!(gaps.len() >= 2, "{gaps:?}");
    assert!(
        gaps[0].contains("login refused: password authentication failed"),
        "{gaps:?}"
    );
    let names: Vec<&str> = run
        .tables
        .samplers
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n.contains("loadlab:REDACTED@") && !n.contains("wrong-secret")),
        "{names:?}"
    );
    assert!(gaps.iter().all(|g| !g.contains("wrong-secret")));
}

#[test]
fn an_agent_streams_to_a_client_that_waited_for_it() {
    // The port is free, so the client first records gaps, then the agent appears.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let me = std::process::id();
    let agent_addr = addr.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let stop_agent = Arc::clone(&stop);
    let run = monitor(&[&format!("agent={addr}")], 200, 2.6, move || {
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(500));
            let server = AgentServer::bind(&agent_addr).unwrap();
            let mut config = MonitorConfig::new(Duration::from_millis(200)).unwrap();
            config.add_spec(&format!("pid={me}")).unwrap();
            let local = Monitor::start(config, ClockAnchor::now()).unwrap();
            while !stop_agent.load(Ordering::Relaxed) {
                if let Ok(frame) = local.frames().recv_timeout(Duration::from_millis(50)) {
                    server.broadcast(&frame);
                }
            }
            local.stop();
        });
    });
    stop.store(true, Ordering::Relaxed);
    let gaps = run.gaps(&addr);
    assert!(gaps.iter().any(|g| g.starts_with("connect:")), "{gaps:?}");
    let remote = format!("pid {me}@{addr}");
    let rss = run.values(&remote, "process.rss_bytes");
    assert!(rss.len() >= 4, "{rss:?} {:?}", run.tables.samplers);
    // Loopback: the clock offset is near zero, so times fall inside the run.
    for (at, _) in rss {
        let offset = at.checked_sub(run.anchor.unix_ns).unwrap();
        assert!(offset <= run.elapsed_ns + 50_000_000);
    }
}
