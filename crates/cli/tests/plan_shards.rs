//! `loadlab run` with `[load] shards = N`: each step runs as N shards of one run (child
//! processes of the binary, or a command template per shard) against a simulator on
//! loopback, and the step's row is the merge of the shards' record files.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const OK_RECIPE: &str =
    r#"{"route": "/*", "body": "hello", "stages": [{"at": 0, "status": 200, "latency": 0}]}"#;

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
    let recipe = simulator::parse_recipe(OK_RECIPE, "test recipe").unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    simulator::Simulator::start(options, &recipe).unwrap()
}

/// A one-step sweep at 40 req/s for 2 s over 2 shards, `via` as given.
fn plan(server: &simulator::Simulator, via: &str) -> String {
    format!(
        "mode = \"sweep\"\n[[variant]]\nname = \"a\"\nbase_url = \"http://{}\"\n\
         [load]\ntargets = [\"GET http://origin.example/x\"]\nrates = [40]\nstep_duration = \"2s\"\n\
         shards = 2\nstart_delay = \"1s\"\n{via}\n[slo]\nmax_lag = \"100ms\"\n",
        server.local_addr()
    )
}

fn run_plan(dir: &Path, text: &str) -> (Output, serde_json::Value) {
    let plan = dir.join("plan.toml");
    std::fs::write(&plan, text).unwrap();
    let out = dir.join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["run", "-quiet"])
        .arg(&plan)
        .arg("-output")
        .arg(&out)
        .output()
        .unwrap();
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap_or_else(|e| {
        panic!(
            "{e}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output, serde_json::from_str(&summary).unwrap())
}

/// Requests in a record file, as `loadlab report -type json` counts them.
fn requests_in(path: &Path) -> u64 {
    let output = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["report", "-type", "json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    report["requests"].as_u64().unwrap()
}

#[test]
fn a_sharded_step_merges_both_local_shards() {
    let server = simulator();
    let dir = TempDir::new("plan-shards-local");
    let (output, summary) = run_plan(&dir.0, &plan(&server, ""));
    let step = &summary["steps"][0];
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(step["verdict"], "pass", "{step:#}\n{stderr}");
    assert!(step["records"].is_null(), "{step:#}");
    let shards: Vec<PathBuf> = step["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| dir.0.join("out").join(p.as_str().unwrap()))
        .collect();
    assert_eq!(shards.len(), 2, "{step:#}");
    let each: Vec<u64> = shards.iter().map(|p| requests_in(p)).collect();
    assert!(
        each.iter().all(|&n| n >= 35),
        "each shard sends half: {each:?}"
    );
    assert_eq!(
        step["requests"].as_u64(),
        Some(each.iter().sum()),
        "{step:#}"
    );
    let achieved = step["achieved_per_sec"].as_f64().unwrap();
    assert!((38.0..=42.0).contains(&achieved), "{step:#}");
    let folder = shards[0].parent().unwrap();
    let scenarios = std::fs::read_to_string(folder.join("scenarios.toml")).unwrap();
    assert!(
        scenarios.contains(&format!("GET http://{}/x", server.local_addr())),
        "the variant's base_url is applied: {scenarios}"
    );
    let report = std::fs::read_to_string(folder.join("report.txt")).unwrap();
    assert!(!report.contains("missing"), "{report}");
}

#[test]
fn a_template_shard_that_fails_is_named_and_fails_the_step() {
    let server = simulator();
    let dir = TempDir::new("plan-shards-template");
    let via = "via = \"if [ {index} = 1 ]; then echo 'no route to gen1' >&2; exit 3; fi; \
               {exe} attack -scenarios {scenarios} -shard {index}/{count} -start-at {start_at} -quiet -output {output}\"";
    let (_, summary) = run_plan(&dir.0, &plan(&server, via));
    let step = &summary["steps"][0];
    assert_eq!(step["verdict"], "failed", "{step:#}");
    let why = step["why"].as_str().unwrap();
    assert!(
        why.starts_with("shard 1/2 failed (exit status: 3; no record file): no route to gen1"),
        "{why}"
    );
    assert!(
        why.contains("the figures are those of 1 of 2 shards"),
        "{why}"
    );
    assert_eq!(step["shards"].as_array().map(Vec::len), Some(1), "{step:#}");
    let requests = step["requests"].as_u64().unwrap();
    assert!(
        (35..=45).contains(&requests),
        "shard 0's half only: {step:#}"
    );
    let folder = dir.0.join("out").join("steps");
    let step_dir = std::fs::read_dir(&folder)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let report = std::fs::read_to_string(step_dir.join("report.txt")).unwrap();
    assert!(report.contains("shard 1/2 missing"), "{report}");
}

#[test]
fn ctrl_c_drains_every_shard_and_keeps_their_records() {
    let server = simulator();
    let dir = TempDir::new("plan-shards-ctrl-c");
    let text = plan(&server, "").replace("step_duration = \"2s\"", "step_duration = \"60s\"");
    let plan_path = dir.0.join("plan.toml");
    std::fs::write(&plan_path, text).unwrap();
    let out = dir.0.join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["run", "-quiet"])
        .arg(&plan_path)
        .arg("-output")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Both shards are sending once their files hold records.
    let step_dir = |out: &Path| {
        std::fs::read_dir(out.join("steps"))
            .ok()?
            .next()?
            .ok()
            .map(|e| e.path())
    };
    let sending = |dir: &Path| {
        (0..2).all(|i| {
            std::fs::metadata(dir.join(format!("shard-{i}.llr"))).is_ok_and(|m| m.len() > 4096)
        })
    };
    let started = std::time::Instant::now();
    while !step_dir(&out).is_some_and(|d| sending(&d)) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the shards never sent"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let interrupted = std::time::Instant::now();
    let output = child.wait_with_output().unwrap();
    assert!(
        interrupted.elapsed() < Duration::from_secs(15),
        "{:?}",
        interrupted.elapsed()
    );
    assert_eq!(
        output.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let step = &summary["steps"][0];
    assert_eq!(step["verdict"], "interrupted", "{step:#}");
    let dir = step_dir(&out).unwrap();
    for i in 0..2 {
        let path = dir.join(format!("shard-{i}.llr"));
        // Each shard drained: its file ends in order (an end block, reason interrupted).
        let output = Command::new(env!("CARGO_BIN_EXE_loadlab"))
            .args(["report"])
            .arg(&path)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&output.stdout);
        assert!(report.contains("interrupted"), "shard {i}: {report}");
    }
}
