//! `loadlab search URL -slo ...` against a simulator of a known capacity on loopback:
//! it finds the capacity, writes the run folder with the plan it ran as plan.toml, and
//! `loadlab run DIR/plan.toml` reruns that plan.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// 10 workers at 50 ms: 200 req/s, then 503s (a queue of 2 absorbs the timer's jitter).
const CAPACITY_PER_SEC: f64 = 200.0;
const RECIPE: &str = r#"{"route": "/*", "body": "ok",
  "stages": [{"at": 0, "status": 200, "latency": "50ms"}],
  "capacity": {"workers": 10, "overflow": 0, "queue": 2, "queue_timeout": "1s",
               "reject_status": 503, "reject_latency": "0"}}"#;

/// A fresh folder, removed at the end.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("loadlab-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn simulator() -> simulator::Simulator {
    let recipe = simulator::parse_recipe(RECIPE, "capacity recipe").unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    simulator::Simulator::start(options, &recipe).unwrap()
}

fn loadlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(args)
        .output()
        .unwrap()
}

/// The rate the search held, from the folder's summary.json.
fn rate_held(folder: &Path, output: &Output) -> f64 {
    let summary = std::fs::read_to_string(folder.join("summary.json")).unwrap_or_else(|e| {
        panic!(
            "{e}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(summary["complete"], true, "{summary}");
    summary["variants"][0]["max_rate_held"]
        .as_f64()
        .unwrap_or_else(|| panic!("no rate held: {summary}"))
}

fn assert_near_capacity(held: f64, what: &str) {
    // Short steps near the knee: a probe a little below it may miss by a 503 or two.
    assert!(
        (0.7 * CAPACITY_PER_SEC..=1.15 * CAPACITY_PER_SEC).contains(&held),
        "{what}: held {held} req/s, the capacity is {CAPACITY_PER_SEC}"
    );
}

#[test]
fn search_finds_the_capacity_and_its_plan_reruns() {
    let server = simulator();
    let dir = TempDir::new("search");
    let url = format!("http://{}/", server.local_addr());
    let first = dir.0.join("first");
    let output = loadlab(&[
        "search",
        &url,
        "-slo",
        "p99 < 200ms",
        "-slo",
        "success > 98%",
        "-slo",
        "lag < 50ms",
        "-H",
        "X-Team: perf",
        "-max-rate",
        "1000",
        "-step-duration",
        "500ms",
        "-warmup",
        "100ms",
        "-precision",
        "0.1",
        "-quiet",
        "-output",
        first.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    assert_near_capacity(rate_held(&first, &output), "search");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let plan = first.join("plan.toml");
    assert!(
        stderr.contains(&format!("loadlab run {}", plan.display())),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&plan).unwrap();
    for line in [
        "mode = \"search\"",
        &format!("targets = [\"GET {url}\"]"),
        "headers = [\"X-Team: perf\"]",
        "p99 = \"200ms\"",
        "success = 0.98",
        "max_rate = 1000.0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}:\n{text}");
    }
    assert!(
        !text.contains("setup") && !text.contains("simulate"),
        "{text}"
    );

    let again = dir.0.join("again");
    let output = loadlab(&[
        "run",
        plan.to_str().unwrap(),
        "-quiet",
        "-output",
        again.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    assert_near_capacity(rate_held(&again, &output), "rerun");
    assert_eq!(
        std::fs::read_to_string(again.join("plan.toml")).unwrap(),
        text
    );
}

#[test]
fn bad_search_flags_are_named() {
    let rows: &[(&[&str], &str)] = &[
        (
            &["search", "http://127.0.0.1:9/", "-slo", "p99 > 1s"],
            "loadlab: -slo \"p99 > 1s\": a latency is bounded from above",
        ),
        (
            &["search", "http://127.0.0.1:9/", "-max-rate", "0"],
            "loadlab: -max-rate: must be above 0",
        ),
        (
            &["search", "-slo", "p99 < 1s"],
            "loadlab: no targets: stdin held none",
        ),
    ];
    for (args, want) in rows {
        let output = Command::new(env!("CARGO_BIN_EXE_loadlab"))
            .args(*args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

/// Every example in `search --help` is on one line of its own, as it is typed.
#[test]
fn help_examples_are_not_wrapped() {
    let output = loadlab(&["search", "--help"]);
    let help = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = help.lines().collect();
    let examples: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_start().starts_with("loadlab "))
        .collect();
    assert!(examples.len() >= 3, "{help}");
    for i in examples {
        let next = lines.get(i + 1).copied().unwrap_or_default();
        assert!(
            next.trim().is_empty(),
            "wrapped: {:?} then {next:?}",
            lines[i]
        );
    }
}
