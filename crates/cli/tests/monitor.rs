//! `loadlab monitor` from the outside: files that `report` reads alone and merged with
//! an attack's records, bad specs, Ctrl-C, agent mode between two processes, and a real
//! PostgreSQL server (`.ci/setup/postgres.sh`). Loopback only; every run is bounded.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use record::{
    AttackInfo, Compression, LoadModel, Record, RecordWriter, RunEnd, RunHeader, TargetInfo,
};

fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

fn run(args: &[&str]) -> Output {
    loadlab().args(args).stdin(Stdio::null()).output().unwrap()
}

/// A scratch directory removed on drop (the CLI crate has no tempfile dependency).
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir(name: &str) -> TempDir {
    let path = std::env::temp_dir().join(format!(
        "loadlab-monitor-test-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&path).unwrap();
    TempDir(path)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn monitor_file(dir: &TempDir, args: &[&str]) -> String {
    let path = dir.path().join("run.mon").to_str().unwrap().to_owned();
    let mut all = vec!["monitor", "-output", &path];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("samples"),
        "{}",
        text(&out.stderr)
    );
    path
}

#[test]
fn a_monitor_file_reports_on_its_own() {
    let dir = tempdir("own");
    let me = format!("pid={}", std::process::id());
    let path = monitor_file(
        &dir,
        &[
            "-duration",
            "1500ms",
            "-interval",
            "250ms",
            "host",
            &me,
            "process=no-such-process-q",
        ],
    );
    let out = run(&["report", &path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    for want in [
        "Host CPU      [peak, mean]",
        "TCP Sockets   [peak estab, peak time_wait]",
        "Process CPU   [group: peak, mean]               pid ",
        "Process FDs   [group: peak, limit/proc, max %]",
        "Samples       [series, values, gaps]",
    ] {
        assert!(report.contains(want), "{want}\n{report}");
    }
    // The monitor's gaps, said as what the diagnosis could not judge.
    assert!(
        report.contains("not judged: no-such-process-q: ")
            && report.contains("(no process matches no-such-process-q)"),
        "{report}"
    );
    let json = run(&["report", "-type", "json", &path]);
    let json = text(&json.stdout);
    assert!(
        json.starts_with("{\"loadlab\":{\"resources\":{\"samplers\":["),
        "{json}"
    );
    assert!(json.contains("\"kind\":\"host\""), "{json}");
}

/// An attack's record file written here: 40 requests over 2 s starting at `start_ns`.
fn attack_file(dir: &TempDir, start_ns: u64) -> String {
    let header = RunHeader {
        trace: None,
        seed: None,
        tool: "loadlab test".to_owned(),
        start_unix_ns: start_ns,
        attacks: vec![AttackInfo {
            name: "api".to_owned(),
            model: LoadModel::Open,
            rate_per_sec: Some(20.0),
            ..AttackInfo::default()
        }],
        targets: vec![TargetInfo {
            step: None,
            checks: Vec::new(),
            method: "GET".to_owned(),
            url: "http://127.0.0.1:8080/".to_owned(),
        }],
        shard: None,
        precision_ns: None,
    };
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    for n in 0..40u64 {
        writer.push(&Record {
            seq: n,
            intended_unix_ns: start_ns + n * 50_000_000,
            latency_ns: 1_000_000,
            status: 200,
            ..Record::default()
        });
    }
    let bytes = writer.finish(&RunEnd::default()).unwrap();
    let path = dir.path().join("run.llr");
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn report_merges_records_and_samples_on_one_clock() {
    let dir = tempdir("merge");
    let start_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mon = monitor_file(&dir, &["-duration", "1s", "-interval", "200ms", "host"]);
    let llr = attack_file(&dir, start_ns);
    let out = run(&["report", &llr, &mon]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.starts_with("Requests      [total, rate, throughput]         40, "),
        "{report}"
    );
    assert!(report.contains("\nHost CPU      [peak, mean]"), "{report}");
    let json = text(&run(&["report", "-type", "json", &llr, &mon]).stdout);
    assert!(
        json.contains(",\"resources\":{\"samplers\":[{\"kind\":\"host\""),
        "{json}"
    );
}

#[test]
fn bad_specs_fail_with_the_spec_and_no_password() {
    let dir = tempdir("bad-specs");
    let log_dir = format!("log={}", dir.path().display());
    let is_a_directory = format!("{} is a directory", dir.path().display());
    let rows: &[(&[&str], &str)] = &[
        (&["monitor", &log_dir], &is_a_directory),
        (
            &["monitor", "disk"],
            "monitor spec \"disk\": unknown sampler",
        ),
        (&["monitor", "process=(x"], "bad regex"),
        (
            &["monitor", "postgres=mysql://u:hunter2@127.0.0.1/db"],
            "u:REDACTED@127.0.0.1",
        ),
        (&["monitor", "-interval", "10ms", "host"], "at least 100ms"),
        (&["monitor", "-interval", "soon", "host"], "-interval"),
        (&["monitor", "-serve", "nonsense", "host"], "-serve"),
    ];
    for (args, want) in rows {
        let out = run(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("hunter2"), "{stderr}");
    }
}

fn interrupt(child: &Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
}

fn wait_bounded(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("the monitor did not stop within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_closes_the_file_cleanly() {
    let dir = tempdir("ctrlc");
    let path = dir.path().join("run.mon");
    let mut child = loadlab()
        .args([
            "monitor",
            "-interval",
            "200ms",
            "-output",
            path.to_str().unwrap(),
            "host",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(900));
    interrupt(&child);
    let status = wait_bounded(&mut child, Duration::from_secs(10));
    assert!(status.success());
    let out = run(&["report", path.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(
        !text(&out.stderr).contains("cut at byte"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("Host CPU"));
}

#[test]
fn an_agent_serves_another_loadlab_process() {
    let me = std::process::id();
    let mut agent = loadlab()
        .args([
            "monitor",
            "-serve",
            "127.0.0.1:0",
            "-interval",
            "200ms",
            &format!("pid={me}"),
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(agent.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(addr) = line.strip_prefix("loadlab monitor: serving samples on ") {
            break addr.to_owned();
        }
    };
    let dir = tempdir("agent");
    let path = monitor_file(
        &dir,
        &[
            "-duration",
            "1500ms",
            "-interval",
            "200ms",
            &format!("agent={addr}"),
        ],
    );
    interrupt(&agent);
    wait_bounded(&mut agent, Duration::from_secs(10));
    let report = text(&run(&["report", &path]).stdout);
    assert!(
        report.contains(&format!(
            "Process CPU   [group: peak, mean]               pid {me}@{addr}: "
        )),
        "{report}"
    );
}

#[test]
fn postgres_rows_without_the_password() {
    let url = match std::env::var("LOADLAB_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ if std::env::var_os("LOADLAB_REQUIRE_POSTGRES").is_some() => {
            panic!("LOADLAB_REQUIRE_POSTGRES is set but LOADLAB_TEST_POSTGRES_URL is not")
        }
        _ => {
            eprintln!("\n!!! SKIPPED: no PostgreSQL (source .ci/setup/postgres.sh) !!!\n");
            return;
        }
    };
    let dir = tempdir("pg");
    let path = monitor_file(
        &dir,
        &[
            "-duration",
            "1500ms",
            "-interval",
            "300ms",
            &format!("postgres={url}"),
        ],
    );
    let report = text(&run(&["report", &path]).stdout);
    assert!(
        report.contains(
            "Database      [server: peak tx/s, mean, conns]  postgres://loadlab:REDACTED@127.0.0.1:"
        ),
        "{report}"
    );
    let bytes = std::fs::read(&path).unwrap();
    let password = url.split(':').nth(2).unwrap().split('@').next().unwrap();
    assert!(
        !String::from_utf8_lossy(&bytes).contains(password),
        "the file holds no password"
    );
}

// ---------------------------------------------------------------------------------
// attack -monitor: samples beside the records, on the run's clock.

/// A simulator on 127.0.0.1, port 0, answering 200 at once.
fn simulator() -> simulator::Simulator {
    let recipe =
        r#"{"route": "/*", "body": "ok", "stages": [{"at": 0, "status": 200, "latency": 0}]}"#;
    let recipe = simulator::parse_recipe(recipe, "test recipe").unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    simulator::Simulator::start(options, &recipe).unwrap()
}

fn attack_with(args: &[&str], targets: &str) -> Output {
    let mut child = loadlab()
        .arg("attack")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), targets.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// `attack -monitor ... | report` on one terminal: attack says its last lines before
/// its output closes, so they never land after (or inside) the report's text.
#[test]
fn attack_speaks_before_report_in_a_pipeline_sharing_one_terminal() {
    let server = simulator();
    let dir = tempdir("pipeline");
    let targets = dir.path().join("targets.txt");
    std::fs::write(&targets, format!("GET http://{}/\n", server.local_addr())).unwrap();
    let terminal = std::fs::File::create(dir.path().join("terminal")).unwrap();
    let mut attack = loadlab()
        .args([
            "attack",
            "-rate=50",
            "-duration=1s",
            "-quiet",
            "-monitor",
            "host",
        ])
        .args([
            "-monitor-interval",
            "1s",
            "-targets",
            targets.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(terminal.try_clone().unwrap())
        .spawn()
        .unwrap();
    let report = loadlab()
        .arg("report")
        .stdin(attack.stdout.take().unwrap())
        .stdout(terminal.try_clone().unwrap())
        .stderr(terminal)
        .status()
        .unwrap();
    assert!(attack.wait().unwrap().success());
    assert!(report.success());
    let screen = std::fs::read_to_string(dir.path().join("terminal")).unwrap();
    let lines: Vec<&str> = screen.lines().collect();
    let monitor_line = lines
        .iter()
        .position(|line| line.starts_with("loadlab: monitor: "));
    let report_line = lines.iter().position(|line| line.starts_with("Requests "));
    assert!(
        monitor_line.is_some() && monitor_line < report_line,
        "attack spoke after the report:\n{screen}"
    );
}

#[test]
fn attack_monitor_writes_samples_on_the_run_clock() {
    let server = simulator();
    let dir = tempdir("attached");
    let path = dir.path().join("run.llr");
    let me = format!("pid={}", std::process::id());
    let out = attack_with(
        &[
            "-rate=100",
            "-duration=1s",
            "-monitor",
            "host",
            "-monitor",
            &me,
            "-monitor-interval",
            "200ms",
            "-output",
            path.to_str().unwrap(),
        ],
        &format!("GET http://{}/\n", server.local_addr()),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("loadlab: monitor: "),
        "{}",
        text(&out.stderr)
    );
    let mut source = record::open_input(path.to_str().unwrap()).unwrap();
    let (mut records, mut samples, mut batch) = (0, Vec::new(), Vec::new());
    while source.next_batch(&mut batch).unwrap() {
        records += batch.len();
        source.drain_samples(&mut samples);
    }
    source.drain_samples(&mut samples);
    assert_eq!(records, 100);
    let start_ns = source.summary().header.start_unix_ns;
    let end_ns = source.summary().end.as_ref().unwrap().at_unix_ns;
    // The grid is anchored at the run's time zero: each sampler reads at 0 (as soon
    // as it starts), 200 ms, 400 ms, ... on the records' clock.
    let offsets_ms: Vec<u64> = samples
        .iter()
        .map(|s| (s.at_unix_ns - start_ns) / 1_000_000)
        .collect();
    assert!(offsets_ms.len() >= 8, "{offsets_ms:?}");
    assert!(
        offsets_ms.iter().all(|offset_ms| offset_ms % 200 <= 50),
        "{offsets_ms:?}"
    );
    assert!(
        offsets_ms
            .iter()
            .min()
            .is_some_and(|first_ms| *first_ms < 50),
        "a reading at time zero: {offsets_ms:?}"
    );
    assert!(
        samples.iter().all(|s| s.at_unix_ns <= end_ns),
        "no sample after the run's end"
    );
    let kinds: Vec<&str> = source
        .summary()
        .samples
        .tables
        .samplers
        .iter()
        .map(|s| s.kind.name())
        .collect();
    assert_eq!(kinds, ["host", "process"]);
    let report = text(&run(&["report", path.to_str().unwrap()]).stdout);
    for want in [
        "\nHost CPU      [peak, mean]",
        "\nProcess CPU   [group: peak, mean]",
    ] {
        assert!(report.contains(want), "{want}\n{report}");
    }
}

#[test]
fn attack_monitor_rejects_bad_specs_before_reading_targets() {
    let rows: &[(&[&str], &str)] = &[
        (
            &["-monitor", "disk"],
            "monitor spec \"disk\": unknown sampler",
        ),
        (
            &["-monitor", "postgres=mysql://u:hunter2@127.0.0.1/db"],
            "u:REDACTED@127.0.0.1",
        ),
        (
            &["-monitor", "host", "-monitor-interval", "10ms"],
            "at least 100ms",
        ),
        (
            &["-monitor", "host", "-monitor-interval", "soon"],
            "-monitor-interval",
        ),
    ];
    for (args, want) in rows {
        let mut all = vec!["attack", "-rate=10", "-duration=1s"];
        all.extend_from_slice(args);
        // stdin is never read: it is /dev/null and there is no -targets.
        let out = run(&all);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("hunter2"), "{stderr}");
        assert!(!stderr.contains("no targets"), "{stderr}");
    }
}

/// issue 11 item 5: `-monitor 'prom=http://127.0.0.1:1/metrics?token=s3cr3t'` put the
/// token in the record file, the report and the page. Neither it nor a target URL's
/// secret may appear in any of them, nor on stderr.
#[test]
fn secrets_in_urls_reach_no_output() {
    let server = simulator();
    let dir = tempdir("secrets");
    let path = dir.path().join("run.llr");
    let path = path.to_str().unwrap();
    let prom = format!(
        "prom=http://scraper:pw-s3cr3t@{}/metrics?token=s3cr3t&job=sim",
        server.local_addr()
    );
    let out = attack_with(
        &[
            "-rate=50",
            "-duration=1s",
            "-monitor",
            &prom,
            "-monitor-interval",
            "200ms",
            "-output",
            path,
        ],
        &format!("GET http://{}/x?api_key=s3cr3t\n", server.local_addr()),
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("s3cr3t"), "{stderr}");
    let mut source = record::open_input(path).unwrap();
    let mut batch = Vec::new();
    while source.next_batch(&mut batch).unwrap() {}
    let summary = format!("{:?}", source.summary());
    assert!(summary.contains("token=REDACTED&job=sim"), "{summary}");
    assert!(summary.contains("api_key=REDACTED"), "{summary}");
    assert!(!summary.contains("s3cr3t"), "{summary}");
    assert!(!text(&std::fs::read(path).unwrap()).contains("s3cr3t"));
    let page = dir.path().join("run.html");
    let outputs = [
        run(&["report", path]),
        run(&["report", "-type", "json", path]),
        run(&["plot", path, "-output", page.to_str().unwrap()]),
    ];
    for output in &outputs {
        assert!(output.status.success(), "{}", text(&output.stderr));
        let all = text(&output.stdout) + &text(&output.stderr);
        assert!(!all.contains("s3cr3t"), "{all}");
    }
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("token=REDACTED"),
        "the page names the sampler"
    );
    assert!(!html.contains("s3cr3t"));
}

/// The samplers' table in the help keeps one sampler per line (clap reflows plain
/// doc comments into one paragraph).
#[test]
fn monitor_help_lists_one_sampler_per_line() {
    let out = run(&["monitor", "--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for sampler in [
        "host ",
        "process=NAME ",
        "pid=N ",
        "postgres=URL ",
        "agent=HOST:PORT ",
    ] {
        assert!(
            help.lines()
                .any(|line| line.trim_start().starts_with(sampler)),
            "no line starts with {sampler:?}:\n{help}"
        );
    }
}
