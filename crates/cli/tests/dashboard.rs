//! `loadlab attack -dashboard`: the run page served live on loopback, against the
//! built-in simulator. During the run the page says it is live; at the end it is the
//! page `loadlab plot` draws from the output file. Sad rows: a taken port, a client
//! that sends nothing, many fetches at once.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

fn temp_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("dashboard-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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

/// Starts an attack with `flags`, its targets on stdin, stderr read line by line.
fn attack(server: &simulator::Simulator, flags: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = loadlab()
        .arg("attack")
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let targets = format!("GET http://{}/dash\n", server.local_addr());
    child
        .stdin
        .take()
        .unwrap()
        .write_all(targets.as_bytes())
        .unwrap();
    let (lines, received) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    (child, received)
}

/// The address in "loadlab: dashboard on http://ADDR/".
fn dashboard_address(lines: &mpsc::Receiver<String>) -> String {
    let line = lines.recv_timeout(Duration::from_secs(20)).unwrap();
    let rest = line
        .strip_prefix("loadlab: dashboard on http://")
        .unwrap_or_else(|| panic!("{line}"));
    rest.trim_end_matches('/').to_owned()
}

/// (status line, body) of a GET.
fn get(address: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn interrupt(child: &Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
}

/// The live page without what only it has: its policy's `connect-src` and its script.
fn as_plotted(live: &str) -> String {
    let cut = live
        .find("<script type=\"application/json\" id=\"live-state\">")
        .unwrap();
    format!("{}</body>\n</html>\n", &live[..cut]).replace("; connect-src 'self'", "")
}

#[test]
fn the_page_is_live_during_the_run_and_plot_s_page_at_the_end() {
    let server = simulator();
    let dir = temp_dir("live");
    let output = dir.join("run.llr").display().to_string();
    let (mut child, lines) = attack(
        &server,
        &[
            "-rate=200",
            "-duration=3s",
            "-quiet",
            &format!("-output={output}"),
            "-dashboard=127.0.0.1:0",
            "-dashboard-linger=60s",
        ],
    );
    let address = dashboard_address(&lines);
    // A client that connects and says nothing holds no one up.
    let _silent = TcpStream::connect(&address).unwrap();
    wait_for("the first snapshot", || {
        get(&address, "/data").1.contains("\"version\":1")
            || !get(&address, "/data").1.contains("\"version\":0")
    });
    let (status, page) = get(&address, "/");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(page.contains("\"finished\":false"), "{page}");
    assert!(
        page.contains("live · updated"),
        "the live script is on the page"
    );
    assert!(page.contains("connect-src 'self'"));
    assert!(page.contains("id=\"plot-data\""), "a page with charts");
    // Many tabs at once: every one is answered.
    let fetches: Vec<_> = (0..40)
        .map(|_| {
            let address = address.clone();
            std::thread::spawn(move || get(&address, "/"))
        })
        .collect();
    for fetch in fetches {
        let (status, body) = fetch.join().unwrap();
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(body.contains("id=\"live-state\""));
    }
    assert_eq!(get(&address, "/nope").0, "HTTP/1.1 404 Not Found");
    wait_for("the final page", || {
        get(&address, "/data").1.contains("\"finished\":true")
    });
    let (_, live) = get(&address, "/");
    assert!(live.contains("\"finished\":true"));
    interrupt(&child);
    assert!(child.wait().unwrap().success());
    let plotted = loadlab().args(["plot", &output]).output().unwrap();
    assert!(plotted.status.success());
    let plotted = String::from_utf8(plotted.stdout).unwrap();
    assert!(plotted.contains("600 requests"), "the whole run is plotted");
    assert_eq!(as_plotted(&live), plotted);
}

#[test]
fn a_plan_s_dashboard_and_metrics_follow_each_step() {
    let server = simulator();
    let dir = temp_dir("plan");
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "mode = \"sweep\"\n[[variant]]\nname = \"sim\"\n[load]\ntargets = [\"GET http://{}/step\"]\nrates = [50, 100]\nstep_duration = \"2s\"\n",
            server.local_addr()
        ),
    )
    .unwrap();
    let mut child = loadlab()
        .args([
            "run",
            "-quiet",
            "-dashboard=127.0.0.1:0",
            "-prometheus-addr=127.0.0.1:0",
        ])
        .arg("-dashboard-linger=60s")
        .arg(format!("-output={}", dir.join("run").display()))
        .arg(&plan)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, received) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let metrics = received.recv_timeout(Duration::from_secs(20)).unwrap();
    let metrics = metrics
        .strip_prefix("loadlab: prometheus metrics on http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{metrics}"))
        .to_owned();
    let address = dashboard_address(&received);
    // Each step's page in turn at the one address, its versions counting on.
    let mut versions = Vec::new();
    for step in ["000-sim-50", "001-sim-100"] {
        wait_for(step, || get(&address, "/").1.contains(step));
        let version = get(&address, "/data").1;
        versions.push(version);
        let (status, scraped) = get(&metrics, "/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(scraped.contains("/step"), "{scraped}");
    }
    wait_for("the last step's final page", || {
        get(&address, "/data").1.contains("\"finished\":true")
            && get(&address, "/").1.contains("001-sim-100")
    });
    interrupt(&child);
    assert!(child.wait().unwrap().success());
    let version = |data: &str| -> u64 {
        let rest = data.split("\"version\":").nth(1).unwrap();
        rest[..rest.find(',').unwrap()].parse().unwrap()
    };
    assert!(
        version(&versions[1]) > version(&versions[0]),
        "a browser on the address moves on: {versions:?}"
    );
    let summary = std::fs::read_to_string(dir.join("run/summary.json")).unwrap();
    assert!(summary.contains("\"complete\": true"), "{summary}");
}

#[test]
fn a_taken_or_bad_address_is_a_warning_and_the_run_goes_on() {
    let server = simulator();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    let dir = temp_dir("taken");
    for (address, want) in [
        (taken.as_str(), format!("-dashboard {taken}: cannot listen")),
        (
            "nowhere:x",
            "-dashboard nowhere:x: cannot listen".to_owned(),
        ),
    ] {
        let output = dir.join("run.llr").display().to_string();
        let (mut child, lines) = attack(
            &server,
            &[
                "-rate=100",
                "-duration=1s",
                "-quiet",
                &format!("-output={output}"),
                &format!("-dashboard={address}"),
            ],
        );
        assert!(child.wait().unwrap().success());
        let stderr: Vec<String> = lines.iter().collect();
        let warning = stderr.join("\n");
        assert!(warning.contains(&want), "{warning}");
        assert!(warning.contains("the run goes on"), "{warning}");
        let report = loadlab().args(["report", &output]).output().unwrap();
        let report = String::from_utf8(report.stdout).unwrap();
        let requests = report.lines().find(|l| l.starts_with("Requests")).unwrap();
        assert!(requests.contains(" 100, "), "records intact: {report}");
        eprintln!("{warning}");
    }
}

#[test]
fn a_bad_linger_is_named_before_the_run() {
    let output = loadlab()
        .args(["attack", "-dashboard=127.0.0.1:0", "-dashboard-linger=soon"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("-dashboard-linger: "), "{stderr}");
}

/// Headless Chromium, when installed (`.ci/setup/chromium.sh`), as the plot crate's
/// browser test finds it.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("LOADLAB_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
}

/// The value of attribute `name` on the root `<html>` element of a dumped DOM.
fn root_attribute(dom: &str, name: &str) -> String {
    let start = dom.find("<html").unwrap();
    let tag = &dom[start..start + dom[start..].find('>').unwrap()];
    let key = format!(" {name}=\"");
    tag.find(&key).map_or_else(String::new, |at| {
        let at = at + key.len();
        tag[at..at + tag[at..].find('"').unwrap()].to_owned()
    })
}

#[test]
fn the_live_page_runs_in_chromium_without_errors() {
    let Some(chromium) = chromium() else {
        if std::env::var_os("LOADLAB_REQUIRE_BROWSER").is_some() {
            panic!("LOADLAB_REQUIRE_BROWSER is set but chromium is not installed");
        }
        eprintln!("\n*** SKIPPED: the live page's browser test needs chromium ***\n");
        return;
    };
    let server = simulator();
    let dir = temp_dir("chromium");
    let output = dir.join("run.llr").display().to_string();
    let (mut child, lines) = attack(
        &server,
        &[
            "-rate=100",
            "-duration=4s",
            "-quiet",
            &format!("-output={output}"),
            "-dashboard=127.0.0.1:0",
            "-dashboard-linger=60s",
        ],
    );
    let address = dashboard_address(&lines);
    wait_for("the first snapshot", || {
        !get(&address, "/data").1.contains("\"version\":0")
    });
    let (stdout, stderr) = (dir.join("stdout"), dir.join("stderr"));
    let mut browser = Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("http://{address}/#selftest"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while browser.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(90) {
            let _ = browser.kill();
            panic!("chromium did not finish in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    interrupt(&child);
    assert!(child.wait().unwrap().success());
    let dom = std::fs::read_to_string(&stdout).unwrap();
    assert_eq!(root_attribute(&dom, "data-plot"), "ready", "{dom}");
    assert_eq!(root_attribute(&dom, "data-selftest"), "ok");
    assert_eq!(root_attribute(&dom, "data-plot-errors"), "0");
    let live = root_attribute(&dom, "data-live");
    assert!(
        live == "live" || live == "finished",
        "the live script ran: {live}"
    );
    assert!(dom.contains("id=\"live-badge\""));
    let console: Vec<String> = std::fs::read_to_string(&stderr)
        .unwrap()
        .lines()
        .filter(|line| line.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    assert!(
        console.is_empty(),
        "console output:\n{}",
        console.join("\n")
    );
    eprintln!(
        "chromium saw the page at version {} ({live})",
        root_attribute(&dom, "data-live-version")
    );
}
