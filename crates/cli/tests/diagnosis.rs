//! The diagnosis from the outside: stand-ins with a planted bottleneck, each loaded
//! past its knee by `loadlab attack -monitor`, then `loadlab report -type=json`, whose
//! `diagnosis` must name the planted limit first and nothing that is not there:
//! a pool (the simulator's, over Prometheus), one nginx worker on one core (one thread's
//! ceiling), nginx confined to one core by its affinity (its allowance), nginx under a
//! low fd limit, a generator starved beside a CPU hog, and an app (gunicorn) whose
//! PostgreSQL pool holds one connection.
//!
//! nginx, gunicorn and PostgreSQL come from Debian (`.ci/setup/nginx.sh`,
//! `gunicorn.sh`, `postgres.sh`); without them these tests skip, unless
//! LOADLAB_REQUIRE_NGINX / LOADLAB_REQUIRE_GUNICORN is set. Loopback only; every run is bounded. The stand-ins
//! need the machine's cores to themselves, so they run one at a time.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// One test at a time: each plants a limit (CPU, fds, refused connects) that the host's
/// counters, which every other test's diagnosis reads, would show too.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

/// A scratch directory removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir(name: &str) -> TempDir {
    let path = std::env::temp_dir().join(format!(
        "loadlab-diagnosis-test-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(path.join("html")).unwrap();
    std::fs::create_dir_all(path.join("logs")).unwrap();
    TempDir(path)
}

/// A port free right now (nginx cannot report the port it was given for `:0`).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Attacks `target` with `args`, writes the records in `dir`, and returns the report's
/// `diagnosis` object (and the whole report, for the failure message).
fn diagnose(
    dir: &Path,
    target: &str,
    args: &[&str],
    wrapper: &[&str],
) -> (serde_json::Value, String) {
    let records = dir.join("run.llr");
    let targets = dir.join("targets.txt");
    std::fs::write(&targets, format!("GET {target}\nAccept-Encoding: gzip\n")).unwrap();
    let mut command = match wrapper.split_first() {
        Some((program, rest)) => {
            let mut command = Command::new(program);
            command.args(rest).arg(env!("CARGO_BIN_EXE_loadlab"));
            command
        }
        None => loadlab(),
    };
    let out = command
        .arg("attack")
        .args(["-quiet", "-targets", targets.to_str().unwrap()])
        .args(["-output", records.to_str().unwrap()])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "attack: {stderr}");
    let (json, text) = reports(&records);
    (json["diagnosis"].clone(), text)
}

/// `loadlab report -type=json` of `records` (its `loadlab` object) and the text report.
fn reports(records: &Path) -> (serde_json::Value, String) {
    let report = loadlab()
        .args(["report", "-type=json"])
        .arg(records)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let text = loadlab().arg("report").arg(records).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    (json["loadlab"].clone(), text)
}

/// The resource kinds found at or before the knee, in order: what the diagnosis blames.
/// Each stand-in checks them against what it planted, so a bottleneck that is not
/// there fails the test; `bench/diagnosis/ground_truth.sh` collects the line it prints.
fn blamed(test: &str, diagnosis: &serde_json::Value, allowed: &[&str], text: &str) {
    let findings = diagnosis["findings"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    // Without a knee (a ramp too short to read one), what came within the knee's
    // tolerance of the first finding.
    let first_at = findings
        .first()
        .and_then(|f| f["at_ns"].as_u64())
        .unwrap_or(0);
    let early: Vec<&str> = findings
        .iter()
        .filter(|f| match f["timing"].as_str() {
            Some("no_knee") => f["at_ns"].as_u64().unwrap_or(0) <= first_at + 2_000_000_000,
            timing => timing != Some("after"),
        })
        .filter_map(|f| f["resource"].as_str())
        .collect();
    eprintln!(
        "ground truth: {test}: verdict {} first {:?} at or before the knee {early:?}",
        diagnosis["verdict"],
        first_limit(diagnosis)
    );
    for resource in &early {
        assert!(
            allowed.contains(resource),
            "{resource} is not planted: {text}"
        );
    }
}

/// The finding the verdict names (symptoms such as resets may come before it).
fn first(diagnosis: &serde_json::Value) -> &serde_json::Value {
    let index = diagnosis["first_limit"].as_u64().unwrap_or(0) as usize;
    &diagnosis["findings"][index]
}

/// The first limit's resource kind and name, or the verdict when there is none.
fn first_limit(diagnosis: &serde_json::Value) -> (String, String) {
    let verdict = diagnosis["verdict"].as_str().unwrap_or("none").to_owned();
    if verdict != "first_limit" {
        return (verdict, String::new());
    }
    let first = first(diagnosis);
    (
        first["resource"].as_str().unwrap().to_owned(),
        first["name"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn a_pool_at_its_size_is_the_first_limit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 10 workers x 50 ms = 200 req/s, the pool exposed on the simulator's /metrics.
    let recipe = r#"{"route": "/*", "body": "ok", "stages": [{"at": 0, "status": 200, "latency": "50ms"}],
        "capacity": {"workers": 10, "overflow": 0, "queue": 5, "queue_timeout": "1s", "reject_status": 503}}"#;
    let server = simulator(recipe);
    let addr = server.local_addr();
    let dir = tempdir("pool");
    let prom = format!("app:prom=http://{addr}/metrics;metric=loadlab_sim_pool_.*");
    let (diagnosis, text) = diagnose(
        &dir.0,
        &format!("http://{addr}/"),
        &[
            "-schedule",
            "line(40, 400, 10s)",
            "-monitor",
            "host",
            "-monitor",
            &prom,
        ],
        &[],
    );
    let (resource, name) = first_limit(&diagnosis);
    blamed("pool", &diagnosis, &["pool"], &text);
    assert_eq!(resource, "pool", "{text}");
    assert!(name.contains("loadlab_sim_pool_busy"), "{text}");
    assert_eq!(first(&diagnosis)["limit"], 10.0, "{text}");
}

/// An nginx started on 127.0.0.1 from `conf` (with `PORT` and `UPSTREAM` filled in),
/// optionally under a wrapper (`taskset -c 0`); stopped on drop.
struct Nginx {
    dir: TempDir,
    port: u16,
}

impl Nginx {
    fn start(name: &str, conf: &str, wrapper: &[&str]) -> Option<Nginx> {
        let binary = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
            .into_iter()
            .find(|path| Path::new(path).exists());
        let Some(binary) = binary else {
            assert!(
                std::env::var_os("LOADLAB_REQUIRE_NGINX").is_none(),
                "LOADLAB_REQUIRE_NGINX is set but nginx is not installed"
            );
            eprintln!("skipped: nginx is not installed (.ci/setup/nginx.sh)");
            return None;
        };
        let dir = tempdir(name);
        let port = free_port();
        std::fs::write(dir.0.join("html/index.html"), page()).unwrap();
        let conf = conf.replace("PORT", &port.to_string());
        std::fs::write(dir.0.join("nginx.conf"), conf).unwrap();
        let mut command = match wrapper.split_first() {
            Some((program, rest)) => {
                let mut command = Command::new(program);
                command.args(rest).arg(binary);
                command
            }
            None => Command::new(binary),
        };
        let prefix = format!("{}/", dir.0.display());
        let status = command
            .args(["-p", &prefix, "-c", "nginx.conf"])
            .args(["-e", &format!("{prefix}error.log")])
            .status()
            .unwrap();
        assert!(status.success(), "nginx did not start");
        let nginx = Nginx { dir, port };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() && nginx.pid().is_some() {
                return Some(nginx);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("nginx did not listen on {port}");
    }

    fn pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.dir.0.join("nginx.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/index.html", self.port)
    }

    /// A ramp of `schedule` against it (under `wrapper`, e.g. `taskset -c 1`), watched
    /// with the host, its processes and `more` monitors; the report's diagnosis.
    fn diagnose(
        &self,
        schedule: &str,
        more: &[String],
        wrapper: &[&str],
    ) -> (serde_json::Value, String) {
        let pid = format!("nginx:pid={}", self.pid().unwrap());
        let mut args = vec![
            "-schedule",
            schedule,
            "-timeout",
            "2s",
            "-monitor",
            "host",
            "-monitor",
            &pid,
        ];
        for spec in more {
            args.extend(["-monitor", spec.as_str()]);
        }
        diagnose(&self.dir.0, &self.url(), &args, wrapper)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

/// 70 KB of words in a pseudo-random order: gzip at level 9 works hard on it (about a
/// millisecond of CPU per answer), so one core runs out at a few hundred answers a second.
fn page() -> String {
    let words = [
        "load", "lab", "capacity", "knee", "queue", "pool", "core", "thread", "limit", "socket",
    ];
    let mut state = 1u64;
    let mut text = String::new();
    for _ in 0..12_000 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        text.push_str(words[(state >> 33) as usize % words.len()]);
        text.push(' ');
    }
    text
}

const GZIP_CONF: &str = "worker_processes WORKERS;
pid nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    gzip on;
    gzip_comp_level 9;
    gzip_min_length 0;
    gzip_types text/plain;
    default_type text/plain;
    server {
        listen 127.0.0.1:PORT;
        location / { root html; }
    }
}
";

#[test]
fn one_nginx_worker_is_one_thread_s_ceiling() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let conf = GZIP_CONF.replace("WORKERS", "1");
    let Some(nginx) = Nginx::start("one-core", &conf, &[]) else {
        return;
    };
    let (diagnosis, text) = nginx.diagnose("line(5, 150, 12s)", &[], &[]);
    // The host's busiest core is nginx's own core.
    blamed("one_core", &diagnosis, &["one_core", "busiest_core"], &text);
    assert_eq!(
        first_limit(&diagnosis),
        ("one_core".to_owned(), "nginx".to_owned()),
        "{text}"
    );
}

#[test]
fn nginx_pinned_to_one_core_reaches_its_allowance() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let conf = GZIP_CONF.replace("WORKERS", "2");
    let Some(nginx) = Nginx::start("allowance", &conf, &["taskset", "-c", "0"]) else {
        return;
    };
    // The generator on the other core, so the two do not share the planted one.
    let (diagnosis, text) = nginx.diagnose("line(5, 150, 12s)", &[], &["taskset", "-c", "1"]);
    blamed(
        "cpu_allowance",
        &diagnosis,
        &["cpu_allowance", "busiest_core"],
        &text,
    );
    assert_eq!(
        first_limit(&diagnosis),
        ("cpu_allowance".to_owned(), "nginx".to_owned()),
        "{text}"
    );
    assert_eq!(first(&diagnosis)["limit"], 100.0, "{text}");
}

#[test]
fn nginx_under_a_low_fd_limit_runs_out_of_fds() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Each request holds two fds (the client's and the upstream's) for 100 ms.
    let recipe = r#"{"route": "/*", "body": "ok", "stages": [{"at": 0, "status": 200, "latency": "100ms"}]}"#;
    let recipe = simulator::parse_recipe(recipe, "test recipe").unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    let origin = simulator::Simulator::start(options, &recipe).unwrap();
    let conf = format!(
        "worker_processes 1;
worker_rlimit_nofile 128;
pid nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    server {{
        listen 127.0.0.1:PORT;
        location / {{ proxy_pass http://{}; }}
    }}
}}
",
        origin.local_addr()
    );
    let Some(nginx) = Nginx::start("fds", &conf, &[]) else {
        return;
    };
    let log = format!("nginx:log={}", nginx.dir.0.join("error.log").display());
    let (diagnosis, text) = nginx.diagnose("line(50, 1500, 12s)", &[log], &[]);
    // nginx's own words for it, and the symptoms that follow at once.
    blamed(
        "fds",
        &diagnosis,
        &["fds", "log", "log_symptom", "tcp_resets"],
        &text,
    );
    assert_eq!(
        first_limit(&diagnosis),
        ("fds".to_owned(), "nginx".to_owned()),
        "{text}"
    );
    // nginx's own words on the same timeline, quoted with their first line.
    let findings = diagnosis["findings"].as_array().unwrap();
    let said = findings
        .iter()
        .find(|f| f["resource"] == "log")
        .expect(&text);
    assert_eq!(said["name"], "nginx log (too_many_open_files)", "{text}");
    assert!(text.contains("Too many open files"), "{text}");
    assert_eq!(first(&diagnosis)["limit"], 128.0, "{text}");
}

#[test]
fn a_generator_starved_beside_a_cpu_hog_is_the_verdict() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let recipe =
        r#"{"route": "/*", "body": "ok", "stages": [{"at": 0, "status": 200, "latency": 0}]}"#;
    let recipe = simulator::parse_recipe(recipe, "test recipe").unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    let server = simulator::Simulator::start(options, &recipe).unwrap();
    // Two busy loops on core 0 beside the generator, for as long as the run (and no
    // longer: each stops by itself).
    let hogs: Vec<std::process::Child> = (0..2)
        .map(|_| {
            Command::new("taskset")
                .args([
                    "-c",
                    "0",
                    "timeout",
                    "20",
                    "sh",
                    "-c",
                    "while :; do :; done",
                ])
                .spawn()
                .unwrap()
        })
        .collect();
    let dir = tempdir("starved");
    let (diagnosis, text) = diagnose(
        &dir.0,
        &format!("http://{}/", server.local_addr()),
        &["-rate", "4000", "-duration", "6s", "-monitor", "host"],
        &["taskset", "-c", "0"],
    );
    for mut hog in hogs {
        // TERM, which `timeout` passes on to its loop (KILL would orphan the loop).
        let _ = Command::new("kill").arg(hog.id().to_string()).status();
        let _ = hog.wait();
    }
    eprintln!("ground truth: generator: verdict {}", diagnosis["verdict"]);
    assert_eq!(diagnosis["verdict"], "generator", "{text}");
    let lines = diagnosis["lines"].to_string();
    assert!(lines.contains("says nothing about the server"), "{text}");
}

/// gunicorn serving `examples/apps/one_connection.py` (a pool of one PostgreSQL
/// connection) on 127.0.0.1, against the test server of `.ci/setup/postgres.sh`;
/// stopped on drop.
struct Gunicorn {
    child: std::process::Child,
    port: u16,
}

impl Gunicorn {
    fn start() -> Option<Gunicorn> {
        let required = std::env::var_os("LOADLAB_REQUIRE_GUNICORN").is_some();
        let url = std::env::var("LOADLAB_TEST_POSTGRES_URL").ok();
        let installed = Command::new("gunicorn")
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success());
        let Some(url) = url.filter(|_| installed) else {
            assert!(
                !required,
                "LOADLAB_REQUIRE_GUNICORN is set but gunicorn or LOADLAB_TEST_POSTGRES_URL \
                 is missing (source .ci/setup/postgres.sh and .ci/setup/gunicorn.sh)"
            );
            eprintln!("skipped: no gunicorn or PostgreSQL (.ci/setup/gunicorn.sh, postgres.sh)");
            return None;
        };
        let apps = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/apps");
        let port = free_port();
        let child = Command::new("gunicorn")
            .args(["-k", "gthread", "--threads", "16", "-w", "1"])
            .args(["-b", &format!("127.0.0.1:{port}")])
            .arg("--chdir")
            .arg(&apps)
            .arg("one_connection:app")
            .env("DATABASE_URL", url)
            // 8 ms in the database per request against ~1 ms of the app's own work
            // around it: the server sees its one connection ~88% busy once the pool
            // is full, well clear of the 75% a full pool is judged at, even where a
            // noisy host (CI's) doubles the app's share.
            .env("QUERY_MS", "8")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut gunicorn = Gunicorn { child, port };
        for _ in 0..200 {
            if Self::healthy(port) {
                return Some(gunicorn);
            }
            assert!(
                gunicorn.child.try_wait().unwrap().is_none(),
                "gunicorn exited"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("gunicorn did not answer on {port}");
    }

    /// Whether `/health` answers 200 (the app has loaded and seeded its table).
    fn healthy(port: u16) -> bool {
        use std::io::{Read, Write};
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
            return false;
        };
        let request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with("HTTP/1.1 200")
    }
}

impl Drop for Gunicorn {
    fn drop(&mut self) {
        // TERM: gunicorn stops its worker and exits.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

#[test]
fn an_app_with_one_database_connection_runs_out_of_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(app) = Gunicorn::start() else {
        return;
    };
    let url = std::env::var("LOADLAB_TEST_POSTGRES_URL").unwrap();
    let dir = tempdir("db-pool");
    let db = format!("db:postgres={url}");
    let gunicorn = format!("app:pid={}", app.child.id());
    // Each request holds the one connection ~9 ms: ~110 req/s, reached at ~6 s.
    let (diagnosis, text) = diagnose(
        &dir.0,
        &format!("http://127.0.0.1:{}/item/7", app.port),
        &[
            "-schedule",
            "line(20, 200, 12s)",
            "-timeout",
            "2s",
            "-monitor",
            "host",
            "-monitor",
            &db,
            "-monitor",
            &gunicorn,
        ],
        &[],
    );
    // Nothing else is named at or before the knee: not the host, not max_connections.
    blamed("db_busy", &diagnosis, &["db_busy"], &text);
    assert_eq!(
        first_limit(&diagnosis),
        ("db_busy".to_owned(), "db".to_owned()),
        "{text}"
    );
    assert_eq!(first(&diagnosis)["limit"], 1.0, "{text}");
    assert!(text.contains("transactions peaked at"), "{text}");
}

/// Runs `plan` (a TOML text) in `dir` with `args`; the exit status, stderr, and the
/// run folder.
fn run_plan(dir: &Path, plan: &str, args: &[&str]) -> (std::process::ExitStatus, String, PathBuf) {
    let file = dir.join("plan.toml");
    std::fs::write(&file, plan).unwrap();
    let out = dir.join("run");
    let output = loadlab()
        .arg("run")
        .arg(&file)
        .arg("-output")
        .arg(&out)
        .arg("-quiet")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status, stderr, out)
}

/// A search against a port nothing listens on stops before its first step, naming it;
/// with the check turned off, the step's verdict, its report, its page and the
/// write-up all say the same: nothing listened there.
#[test]
fn a_search_against_a_closed_port_names_it() {
    // Its refused connects count in the host's TCP counters, which the other tests judge.
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempdir("closed-port");
    let port = free_port();
    let plan = format!(
        "mode = \"search\"\n[[variant]]\nname = \"nothing\"\n[load]\n\
         targets = [\"GET http://127.0.0.1:{port}/\"]\nstep_duration = \"1s\"\nMORE\n\
         [search]\nstart = 20\nmax_probes = 2\n"
    );
    let refused = format!("nothing listened at 127.0.0.1:{port}: connection refused");
    let started = std::time::Instant::now();
    let (status, stderr, out) = run_plan(&dir.0, &plan.replace("MORE", ""), &[]);
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains(&refused), "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{stderr}"
    );
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(summary.contains(&refused), "{summary}");
    assert!(!out.join("steps/000-nothing-20/records.llr").exists());

    let _ = std::fs::remove_dir_all(&out);
    let (status, stderr, out) =
        run_plan(&dir.0, &plan.replace("MORE", "check_targets = false"), &[]);
    assert!(status.success(), "{stderr}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let every = format!("{refused}, every request");
    assert!(
        md.contains("step 000-nothing-20 (fail: nothing listened: every request failed to connect"),
        "{md}"
    );
    assert!(md.contains(&every), "{md}");
    assert!(
        !md.contains("generator ran out") && !md.contains("held what was delivered"),
        "{md}"
    );
    let step = out.join("steps/000-nothing-20");
    let report = std::fs::read_to_string(step.join("report.txt")).unwrap();
    assert!(report.contains(&every), "{report}");
    let page = std::fs::read_to_string(step.join("plot.html")).unwrap();
    assert!(page.contains(&every), "the page says it too");
}

/// A search against nginx's own rate limit (`limit_req`, which no monitor can watch),
/// with nginx's process watched and with nothing watched: the write-up reports on each
/// variant's first step that did not pass, says why in the verdict table's words, and
/// says what the answers say (nginx's 503s, from which rate), judged with the plan's
/// `max_lag`, not a rule of its own. Unwatched, it still says it (it said nothing).
#[test]
fn a_search_against_nginx_rate_limit_says_what_the_answers_say() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let conf = "worker_processes 1;
pid nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    default_type text/plain;
    limit_req_zone $binary_remote_addr zone=one:1m rate=100r/s;
    server {
        listen 127.0.0.1:PORT;
        location / { limit_req zone=one; root html; }
    }
}
";
    let Some(nginx) = Nginx::start("limit-req", conf, &[]) else {
        return;
    };
    // nginx's own process is watched in one variant (the host is shared with whatever
    // else runs), nothing in the other.
    let plan = format!(
        "mode = \"search\"\n[[variant]]\nname = \"watched\"\nmonitor = [\"nginx:pid={}\"]\n\
         [[variant]]\nname = \"unwatched\"\n[load]\n\
         targets = [\"GET {}\"]\nstep_duration = \"2s\"\n\
         [slo]\nmax_lag = \"25ms\"\n[search]\nstart = 50\nmax_probes = 3\nprecision = 0.5\n",
        nginx.pid().unwrap(),
        nginx.url(),
    );
    let (status, stderr, out) = run_plan(&nginx.dir.0, &plan, &[]);
    assert!(status.success(), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let steps = summary["steps"].as_array().unwrap();
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    let ran_out = md.split("## What ran out first").nth(1).unwrap();
    let ran_out = ran_out.trim_start().split("\n\n").next().unwrap();
    for variant in ["watched", "unwatched"] {
        let first_miss = steps
            .iter()
            .find(|s| s["variant"] == variant && s["verdict"] != "pass")
            .unwrap_or_else(|| panic!("nginx's limit never failed {variant}: {summary}"));
        let (name, why) = (
            first_miss["step"].as_str().unwrap(),
            first_miss["why"].as_str().unwrap(),
        );
        assert_eq!(first_miss["verdict"], "fail", "{summary}");
        let lead = format!("**{variant}**, step {name} (fail: {why})");
        let said = (ran_out
            .split("\n- ")
            .map(|item| item.trim_start_matches("- ")))
        .find(|item| item.starts_with(&lead))
        .unwrap_or_else(|| panic!("{lead}\n{md}"));
        assert!(said.contains("answered 503 ("), "{variant}: {said}");
        assert!(
            said.contains("a limit the server is configured with (a rate limit"),
            "{variant}: {said}"
        );
        let lead = format!("step {name} (fail: {why})");
        assert!(page.contains(&lead), "index.html says it as summary.md");
    }
    for wrong in ["generator ran out", "lies in something not watched"] {
        assert!(!md.contains(wrong), "{wrong}: {md}");
    }
}

/// A `process=` pattern that matches nothing is said at the run's start (stderr) and in
/// the report, never read as a resource that held.
#[test]
fn a_process_pattern_that_matches_nothing_is_said() {
    // Its refused connects count in the host's TCP counters, which the other tests judge.
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempdir("no-process");
    let records = dir.0.join("run.llr");
    let port = free_port();
    let output = loadlab()
        .args(["attack", "-rate", "20", "-duration", "2s", "-quiet"])
        .args(["-monitor", "process=no-such-process-xyz"])
        .arg("-output")
        .arg(&records)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            let target = format!("GET http://127.0.0.1:{port}/\n");
            child.stdin.take().unwrap().write_all(target.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "-monitor process no-such-process-xyz: no process matches no-such-process-xyz at \
             the run's start"
        ),
        "{stderr}"
    );
    let report = loadlab().arg("report").arg(&records).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains(
            "not judged: no-such-process-xyz: every reading missing (no process matches \
             no-such-process-xyz): nothing of it was watched"
        ),
        "{text}"
    );
}

/// The simulator serving `recipe` on a free loopback port, stopped on drop.
fn simulator(recipe: &str) -> simulator::Simulator {
    let recipe = simulator::parse_recipe(recipe, "test recipe").unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    simulator::Simulator::start(options, &recipe).unwrap()
}

/// Runs the flow file `flow` (written in `dir`) and returns its report's `diagnosis`
/// and `saturation` (JSON) and its text.
fn flow_report(dir: &Path, flow: &str) -> (serde_json::Value, serde_json::Value, String) {
    let scenarios = dir.join("flow.toml");
    std::fs::write(&scenarios, flow).unwrap();
    let records = dir.join("run.llr");
    let out = loadlab()
        .args(["attack", "-quiet", "-scenarios"])
        .arg(&scenarios)
        .arg("-output")
        .arg(&records)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (json, text) = reports(&records);
    (json["diagnosis"].clone(), json["saturation"].clone(), text)
}

/// Issue 39's chat: each run holds a WebSocket for 40 paced sends 50 ms apart (2 s by
/// design), then reads 20 events 100 ms apart. Its records last their sessions; read
/// as requests they made "the knee at 2/s offered (throughput turned first) ... the
/// limit lies in something not watched". Judged apart, a healthy run has no knee.
#[test]
fn a_healthy_chat_and_event_stream_have_no_knee() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = simulator(
        r#"[{"route": "/chat", "websocket": {"mode": "echo", "limit": 30}},
            {"route": "/ticks", "events": {"count": 20, "every": "100ms", "data": "tick"}}]"#,
    );
    let addr = server.local_addr();
    let dir = tempdir("held-chat");
    let flow = format!(
        r#"
[[scenario]]
name = "chat"
rate = 10
duration = "6s"
timeout = "5s"

[[scenario.step]]
name = "chat"
ws = "ws://{addr}/chat"
send_time = "regex sent=([0-9]+)"
actions = [{{ send = "sent={{{{send_time_ns}}}} hi", every = "50ms", count = 40 }}, {{ close = 1000 }}]

[[scenario.step]]
name = "ticks"
sse = "http://{addr}/ticks"
events = 20
listen = "10s"
"#
    );
    let (diagnosis, saturation, text) = flow_report(&dir.0, &flow);
    assert_ne!(saturation["finding"], "saturated", "{text}");
    assert!(
        saturation["reason"]
            .as_str()
            .unwrap()
            .contains("every request held its connection open"),
        "{text}"
    );
    assert!(diagnosis.is_null() || diagnosis["knee"].is_null(), "{text}");
    assert!(!text.contains("not watched"), "{text}");
    assert!(text.contains("Connections"), "{text}");
}

/// Users arrive at a rising rate and hold a WebSocket 2 s each against a route that
/// holds 10 at once (the simulator refuses the upgrade past it with a 503): the
/// diagnosis names the connection limit with the most held and the refusals, not a
/// guess about the unwatched.
#[test]
fn websockets_past_a_servers_connection_limit_name_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = simulator(r#"[{"route": "/room", "websocket": {"mode": "echo", "limit": 10}}]"#);
    let addr = server.local_addr();
    let dir = tempdir("held-limit");
    let flow = format!(
        r#"
[[scenario]]
name = "room"
schedule = "line(2, 20, 6s)"
timeout = "5s"

[[scenario.step]]
name = "room"
ws = "ws://{addr}/room"
actions = [{{ hold = "2s" }}, {{ close = 1000 }}]
"#
    );
    let (diagnosis, _, text) = flow_report(&dir.0, &flow);
    let findings = diagnosis["findings"].as_array().unwrap();
    let limit = findings
        .iter()
        .find(|f| f["resource"] == "connections")
        .unwrap_or_else(|| panic!("no connection limit: {text}"));
    assert_eq!(limit["limit"], 10.0, "{text}");
    assert_eq!(limit["name"], format!("ws://{addr}/room"), "{text}");
    assert!(
        limit["note"].as_str().unwrap().contains("refused with 503"),
        "{text}"
    );
    assert!(limit["example"].as_str().unwrap().contains("503"), "{text}");
    assert!(
        text.contains("held at most 10 connections at once, then refused more from"),
        "{text}"
    );
    // The flow's asked rate counts its runs started (the schedule's, not every
    // step's request: without it the lag was weighed with no gap between starts, and
    // a few ms of timer jitter at ~10/s made the generator the verdict, the limit
    // second).
    assert!(text.lines().any(|l| l.starts_with("Asked Rate")), "{text}");
    assert_eq!(first_limit(&diagnosis).0, "connections", "{text}");
    assert!(!text.contains("not watched"), "{text}");
}

/// Plain requests ramping past the simulator's pool (10 workers x 50 ms, 503 past its
/// queue), with nothing watched: their knee is read as before held steps were judged
/// apart.
#[test]
fn a_plain_ramp_past_a_limit_keeps_its_knee() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = simulator(
        r#"{"route": "/*", "body": "ok", "stages": [{"at": 0, "status": 200, "latency": "50ms"}],
        "capacity": {"workers": 10, "overflow": 0, "queue": 5, "queue_timeout": "1s", "reject_status": 503}}"#,
    );
    let addr = server.local_addr();
    let dir = tempdir("plain-ramp");
    // Time zero on a whole second, so the ramp's last window is a whole one: a partial
    // last second (its few requests) reads as an offered rate that did not rise, a
    // flaw of the ramp rule this test is not about.
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let start_at = record::format_timestamp((now_s + 2) * 1_000_000_000);
    let (diagnosis, text) = diagnose(
        &dir.0,
        &format!("http://{addr}/"),
        &["-schedule", "line(40, 400, 10s)", "-start-at", &start_at],
        &[],
    );
    assert!(diagnosis["knee"].is_object(), "{text}");
    assert!(text.contains("the knee at"), "{text}");
}
