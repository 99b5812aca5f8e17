//! Steering end to end (`attack -steer`, `loadlab steer`, docs/DISTRIBUTED.md): real
//! shard processes against a loopback simulator, steered by a real coordinator. A rule
//! fires on the merged figures and stops every shard; a rule that one shard's figures
//! alone would trip waits for the merged ones; a shard that dies is named and its
//! share counted as not delivered; a shard whose coordinator goes silent judges its
//! own rules; bad addresses and rules are refused by name.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use record::{RunEnd, StopReason};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "loadlab-steer-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A simulator: `/ok` answers 200 and `/bad` 500, both after `latency`.
fn server(latency: &str) -> simulator::Simulator {
    let recipe = format!(
        r#"[{{"route": "/ok", "body": "ok", "stages": [{{"at": 0, "status": 200, "latency": "{latency}"}}]}},
            {{"route": "/bad", "body": "no", "stages": [{{"at": 0, "status": 500, "latency": "{latency}"}}]}}]"#
    );
    let recipe = simulator::parse_recipe(&recipe, "test recipe").unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    simulator::Simulator::start(options, &recipe).unwrap()
}

/// A shard process and the address of its feed (read from its first stderr line);
/// the rest of its stderr is drained in the background.
struct Shard {
    child: Child,
    feed: String,
    output: String,
}

fn start_shard(dir: &TempDir, index: usize, count: usize, start_at: &str, args: &[&str]) -> Shard {
    let output = dir.path(&format!("s{index}.llr"));
    let shard = format!("{index}/{count}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["attack", "-quiet", "-steer", "127.0.0.1:0", "-seed", "1"])
        .args(["-shard", &shard, "-start-at", start_at, "-output", &output])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let feed = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.strip_suffix("/seconds\n"))
        .unwrap_or_else(|| panic!("no feed address in {first:?}"))
        .to_owned();
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
    });
    Shard {
        child,
        feed,
        output,
    }
}

/// Starts `count` shards from one `-start-at` two seconds ahead.
fn start_shards(dir: &TempDir, count: usize, args: &[&str]) -> Vec<Shard> {
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(2);
    let at = at.round(jiff::Unit::Millisecond).unwrap().to_string();
    (0..count)
        .map(|index| start_shard(dir, index, count, &at, args))
        .collect()
}

fn steer(shards: &[Shard], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .arg("steer")
        .args(shards.iter().map(|shard| shard.feed.as_str()))
        .args(["-quiet", "-wait", "10s", "-deadline", "60s"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn end_of(shard: &mut Shard) -> RunEnd {
    shard.child.wait().unwrap();
    let mut source = record::open_input(&shard.output).unwrap();
    let mut batch = Vec::new();
    while source.next_batch(&mut batch).unwrap() {}
    source.summary().end.clone().expect("an end block")
}

fn targets(dir: &TempDir, address: std::net::SocketAddr, paths: &[&str]) -> String {
    let lines: Vec<String> = paths
        .iter()
        .map(|path| format!("GET http://{address}{path}"))
        .collect();
    let file = dir.path("targets.txt");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    file
}

#[test]
fn a_rule_fires_on_the_merged_figures_and_stops_every_shard() {
    let server = server("30ms");
    let dir = TempDir::new();
    let targets = targets(&dir, server.local_addr(), &["/ok"]);
    let started = Instant::now();
    let mut shards = start_shards(
        &dir,
        2,
        &["-targets", &targets, "-rate", "100", "-duration", "30s"],
    );
    let out = steer(&shards, &["-stop-when", "p50 > 20ms for 2s"]);
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(4),
        "a latency rule's exit code: {stderr}"
    );
    assert!(stderr.contains("stopping every shard"), "{stderr}");
    assert!(stderr.contains("2 shards: 2 finished, 0 lost"), "{stderr}");
    let ends: Vec<RunEnd> = shards.iter_mut().map(end_of).collect();
    for end in &ends {
        assert_eq!(end.reason, StopReason::StopRule, "{end:?}");
        assert!(
            end.detail.contains("'p50 > 20ms for 2s' fired at")
                && end.detail.contains("on the merged figures of 2 shards"),
            "{}",
            end.detail
        );
    }
    let spread_ns = ends[0].at_unix_ns.abs_diff(ends[1].at_unix_ns);
    assert!(
        spread_ns < 1_500_000_000,
        "the shards stopped {spread_ns} ns apart"
    );
    assert!(started.elapsed() < Duration::from_secs(20), "stopped early");
}

#[test]
fn a_rule_one_shard_alone_would_trip_waits_for_the_merged_figures() {
    // Round robin over two targets in two shards: shard 0 sends only /bad, shard 1
    // only /ok, so shard 0 alone sees 100% errors and the whole run 50%.
    let server = server("1ms");
    let dir = TempDir::new();
    let targets = targets(&dir, server.local_addr(), &["/bad", "/ok"]);
    let mut shards = start_shards(
        &dir,
        2,
        &[
            "-targets",
            &targets,
            "-rate",
            "100",
            "-duration",
            "5s",
            "-stop-when",
            "errors > 60% for 2s",
        ],
    );
    let out = steer(&shards, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("fired"), "{stderr}");
    for shard in &mut shards {
        let end = end_of(shard);
        assert_eq!(end.reason, StopReason::Completed, "{end:?}");
    }
}

#[test]
fn a_shard_that_dies_is_named_and_its_share_counted_as_not_delivered() {
    let server = server("1ms");
    let dir = TempDir::new();
    let targets = targets(&dir, server.local_addr(), &["/ok"]);
    let mut shards = start_shards(
        &dir,
        2,
        &["-targets", &targets, "-rate", "200", "-duration", "8s"],
    );
    let killer = {
        let pid = shards[1].child.id();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(4));
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        })
    };
    let out = steer(&shards, &[]);
    killer.join().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lost = format!("shard 1/2 ({}) lost", shards[1].feed);
    assert!(stderr.contains(&lost), "{stderr}");
    let share: f64 = stderr
        .split("% of the asked load was not delivered")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no undelivered share in {stderr}"));
    assert!(
        (20.0..=45.0).contains(&share),
        "{share}% not delivered: {stderr}"
    );
    assert_eq!(end_of(&mut shards[0]).reason, StopReason::Completed);
    let _ = shards[1].child.wait();
}

#[test]
fn a_shard_whose_coordinator_goes_silent_judges_its_own_rules() {
    let server = server("1ms");
    let dir = TempDir::new();
    let targets = targets(&dir, server.local_addr(), &["/bad"]);
    let mut shards = start_shards(
        &dir,
        1,
        &[
            "-targets",
            &targets,
            "-rate",
            "50",
            "-duration",
            "30s",
            "-stop-when",
            "errors > 60% for 2s",
        ],
    );
    // The coordinator is killed after 4 s, before it can judge (its rule needs 5 s).
    let mut coordinator = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args([
            "steer",
            &shards[0].feed,
            "-quiet",
            "-stop-when",
            "errors > 60% for 5s",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    coordinator.kill().unwrap();
    coordinator.wait().unwrap();
    let end = end_of(&mut shards[0]);
    assert_eq!(end.reason, StopReason::StopRule, "{end:?}");
    assert!(
        end.detail.starts_with("'errors > 60% for 2s' fired at") && !end.detail.contains("merged"),
        "{}",
        end.detail
    );
}

#[test]
fn bad_coordinator_flags_are_refused_by_name() {
    let rows: [(&[&str], &str); 3] = [
        (&["steer", "http://127.0.0.1:9/seconds"], "want HOST:PORT"),
        (
            &["steer", ":9", "-stop-when", "p99 > lots"],
            "-stop-when 'p99 > lots'",
        ),
        (&["steer"], "<ADDR>"),
    ];
    for (args, want) in rows {
        let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
            .args(args)
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(want),
            "{args:?}: {stderr}"
        );
    }
}

/// GET `path` from `address`: the body, or nothing while nothing listens there.
fn http_get(address: &str, path: &str) -> String {
    use std::io::Write;
    let Ok(mut stream) = std::net::TcpStream::connect(address) else {
        return String::new();
    };
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

#[test]
fn the_run_s_prometheus_series_hold_every_shard_s() {
    // Round robin over two targets in two shards: each shard sends one of them, so
    // the run's exposition holds both only if it holds both shards' series.
    let server = server("1ms");
    let dir = TempDir::new();
    let targets = targets(&dir, server.local_addr(), &["/ok?from=0", "/ok?from=1"]);
    let mut shards = start_shards(
        &dir,
        2,
        &["-targets", &targets, "-rate", "200", "-duration", "5s"],
    );
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .to_string();
    let mut coordinator = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["steer", &shards[0].feed, &shards[1].feed, "-quiet"])
        .args(["-prometheus-addr", &address])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let series = |from: usize| {
        format!(
            "request_seconds_count{{method=\"GET\",url=\"http://{}/ok?from={from}\",status=\"200\"}}",
            server.local_addr()
        )
    };
    let deadline = Instant::now() + Duration::from_secs(6);
    let mut metrics = String::new();
    while Instant::now() < deadline {
        metrics = http_get(&address, "/metrics");
        if metrics.contains(&series(0)) && metrics.contains(&series(1)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        metrics.contains(&series(0)) && metrics.contains(&series(1)),
        "{metrics}"
    );
    assert!(
        metrics.contains("loadlab_shards{health=\"in_step\"} 2"),
        "{metrics}"
    );
    assert_eq!(
        metrics.matches("# TYPE request_seconds histogram").count(),
        1
    );
    coordinator.wait().unwrap();
    for shard in &mut shards {
        assert_eq!(end_of(shard).reason, StopReason::Completed);
    }
}

#[test]
fn the_shards_records_are_pulled_whole_as_they_are_written() {
    let server = server("1ms");
    let dir = TempDir::new();
    let targets = targets(&dir, server.local_addr(), &["/ok"]);
    let mut shards = start_shards(
        &dir,
        2,
        &["-targets", &targets, "-rate", "100", "-duration", "3s"],
    );
    let pulled = dir.path("pulled");
    let out = steer(&shards, &["-records", &pulled]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for (index, shard) in shards.iter_mut().enumerate() {
        assert_eq!(end_of(shard).reason, StopReason::Completed);
        let copy = std::fs::read(format!("{pulled}/shard-{index}.llr")).unwrap();
        let original = std::fs::read(&shard.output).unwrap();
        assert!(original.len() > 1000, "{} bytes", original.len());
        assert!(
            copy == original,
            "shard {index}: {} of {} bytes",
            copy.len(),
            original.len()
        );
    }
}

/// The sum over the shards' record files of each stats sample's stream figures:
/// (opened, messages out, messages in, bytes out, bytes in, latencies timed), and the
/// same summed over their connection entries.
fn streams_in_records(shards: &[Shard]) -> ([u64; 6], [u64; 6]) {
    let add = |sums: &mut [u64; 6], figures: [u64; 6]| {
        sums.iter_mut().zip(figures).for_each(|(sum, n)| *sum += n);
    };
    let (mut samples, mut entries) = ([0u64; 6], [0u64; 6]);
    for shard in shards {
        let mut source = record::open_input(&shard.output).unwrap();
        let (mut batch, mut connections) = (Vec::new(), Vec::new());
        while source.next_batch(&mut batch).unwrap() {
            source.drain_connections(&mut connections);
        }
        source.drain_connections(&mut connections);
        let stats = &source.summary().stats;
        for s in stats.iter().filter_map(|s| s.streams.as_ref()) {
            let (out, got, timed) = (s.messages_out, s.messages_in, s.latency.count());
            add(
                &mut samples,
                [s.opened, out, got, s.bytes_out, s.bytes_in, timed],
            );
        }
        for c in &connections {
            let (out, got, timed) = (c.messages_out, c.messages_in, c.latency.count());
            add(&mut entries, [1, out, got, c.bytes_out, c.bytes_in, timed]);
        }
    }
    (samples, entries)
}

/// The coordinator's `streams: ...` verdict line as the same six figures.
fn streams_in_verdict(stderr: &str) -> [u64; 6] {
    let line = (stderr.lines())
        .find_map(|line| line.strip_prefix("loadlab steer: streams: "))
        .unwrap_or_else(|| panic!("no streams verdict in {stderr}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|word| word.parse().ok())
        .collect();
    // opened, closed, out, in, bytes out, bytes in, then the latencies' p50 ... and
    // how many were timed, last.
    [
        numbers[0],
        numbers[2],
        numbers[3],
        numbers[4],
        numbers[5],
        *numbers.last().unwrap(),
    ]
}

#[test]
fn a_connections_rule_fires_on_the_shards_connections_summed() {
    // Six users in all, three a shard, each holding a WebSocket to the simulator's
    // echo with a message every 100 ms that carries its send time. Neither shard
    // alone ever holds more than four; the run holds six.
    let recipe = r#"[{"route": "/echo", "websocket": "echo", "stages": [{"status": 200}]}]"#;
    let recipe = simulator::parse_recipe(recipe, "test recipe").unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    let server = simulator::Simulator::start(options, &recipe).unwrap();
    let dir = TempDir::new();
    let flow = dir.path("echo.toml");
    let scenario = format!(
        r#"
[[scenario]]
name = "echo"
rate = 6
max_requests = 6
duration = "2s"
timeout = "2s"

[[scenario.step]]
name = "echo"
ws = "ws://{}/echo"
send_time = "json $.sent"
actions = [{{ send = '{{"sent": {{{{send_time_ns}}}}}}', every = "100ms", count = 300 }}]
"#,
        server.local_addr()
    );
    std::fs::write(&flow, scenario).unwrap();
    let started = Instant::now();
    let mut shards = start_shards(&dir, 2, &["-scenarios", &flow]);
    let out = steer(&shards, &["-stop-when", "connections_open > 4 for 2s"]);
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(7),
        "a stream rule's exit code: {stderr}"
    );
    for shard in &mut shards {
        let end = end_of(shard);
        assert_eq!(end.reason, StopReason::StopRule, "{end:?}");
        assert!(
            end.detail
                .contains("'connections_open > 4 for 2s' fired at")
                && end
                    .detail
                    .contains("(value 6) on the merged figures of 2 shards"),
            "{}",
            end.detail
        );
    }
    assert!(started.elapsed() < Duration::from_secs(20), "stopped early");
    let (samples, entries) = streams_in_records(&shards);
    assert_eq!(
        samples, entries,
        "the shards' samples add up to their entries"
    );
    assert_eq!(entries[0], 6, "{entries:?}");
    assert!(entries[2] > 0 && entries[5] > 0, "{entries:?}");
    assert_eq!(streams_in_verdict(&stderr), entries, "{stderr}");
}

#[test]
fn a_steered_flow_s_delivered_load_counts_its_runs_started() {
    // A flow of two steps at 10 runs a second for 2 s over two shards: 20 runs asked
    // and started, 40 requests.
    let server = server("1ms");
    let dir = TempDir::new();
    let flow = dir.path("two.toml");
    let address = server.local_addr();
    let scenario = format!(
        r#"
[[scenario]]
name = "two"
rate = 10
duration = "2s"

[[scenario.step]]
name = "first"
request = "GET http://{address}/ok"

[[scenario.step]]
name = "second"
request = "GET http://{address}/ok"
"#
    );
    std::fs::write(&flow, scenario).unwrap();
    let mut shards = start_shards(&dir, 2, &["-scenarios", &flow]);
    let out = steer(&shards, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("0.0% of the asked load was not delivered (20 of about 20 runs started)"),
        "{stderr}"
    );
    let requests: u64 = shards.iter_mut().map(|s| end_of(s).attacks[0].sent).sum();
    assert_eq!(requests, 40, "two requests a run");
}
