//! `loadlab compare` over run folders end to end: two small runs of a real plan against
//! in-process simulators on loopback (port 0), compared as whole runs, as variants of one
//! run, and with -threshold; then the sad rows on hand-written folders.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        stdout(output),
        stderr(output)
    );
    stdout(output)
}

/// A directory of its own for one test, removed afterwards.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "loadlab-compare-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        if let Some(parent) = std::path::Path::new(&path).parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A simulator on 127.0.0.1, port 0, answering every request after `latency`.
fn simulator(latency: &str) -> simulator::Simulator {
    let recipe = format!(
        r#"{{"route": "/*", "body": "ok", "stages": [{{"at": 0, "status": 200, "latency": "{latency}"}}]}}"#
    );
    let recipe = simulator::parse_recipe(&recipe, "test recipe").unwrap();
    let options = simulator::SimulatorOptions {
        threads: 1,
        ..simulator::SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    simulator::Simulator::start(options, &recipe).unwrap()
}

#[test]
fn run_folders_compare_side_by_side_with_the_noise_of_their_records() {
    let (fast, slow) = (simulator("0ms"), simulator("30ms"));
    let dir = TempDir::new();
    // Three seconds per step: the bootstrap needs at least three per-second windows.
    let plan = dir.write(
        "plan.toml",
        &format!(
            "name = \"tiny\"\nmode = \"sweep\"\n\
             [[variant]]\nname = \"fast\"\nbase_url = \"http://{}\"\n\
             [[variant]]\nname = \"slow\"\nbase_url = \"http://{}\"\n\
             [load]\ntargets = [\"GET http://placeholder/\"]\nrates = [40]\n\
             step_duration = \"3s\"\nwarmup = \"300ms\"\n\
             [slo]\nmax_lag = \"1s\"\nachieved = 0.5\n",
            fast.local_addr(),
            slow.local_addr()
        ),
    );
    let (a, b) = (dir.path("a"), dir.path("b"));
    for out in [&a, &b] {
        ok(&run(&["run", &plan, "-output", out]));
    }

    let text = ok(&run(&["compare", &a, &b]));
    assert!(text.starts_with(&format!("A: {a}\nB: {b}\n")), "{text}");
    for want in [
        "max rate held (req/s)",
        "step fast 40/s",
        "step slow 40/s",
        "000-fast-40",
        "both record files",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    for row in ["achieved/s", "success", "p50", "p99", "max", "verdict"] {
        assert!(text.lines().any(|l| l.starts_with(row)), "{row}: {text}");
    }
    let markdown = ok(&run(&["compare", "-format", "markdown", &a, &b]));
    assert!(
        markdown.contains("| figure | A | B | diff B |"),
        "{markdown}"
    );
    let json = ok(&run(&["compare", "-format=json", &a, &b]));
    assert!(
        json.contains("\"inputs\": [") && json.contains("\"interval\": ["),
        "{json}"
    );

    // One folder alone: every variant against the first; 30 ms is beyond the noise.
    let variants = ok(&run(&["compare", &a]));
    assert!(
        variants.starts_with(&format!("A: {a}#fast\nB: {a}#slow\n")),
        "{variants}"
    );
    let p50 = variants.lines().find(|l| l.starts_with("p50")).unwrap();
    assert!(p50.ends_with("beyond"), "{variants}");
    // Picked variants, across runs, as a CI gate.
    let fast_a = format!("{a}#fast");
    let slow_b = format!("{b}#slow");
    let gate = run(&["compare", "-threshold", "5%", &fast_a, &slow_b]);
    assert_eq!(gate.status.code(), Some(7), "{}", stderr(&gate));
    assert!(
        stderr(&gate).contains("regression: p99 at fast vs slow 40/s is ")
            && stderr(&gate).contains(&slow_b),
        "{}",
        stderr(&gate)
    );
    ok(&run(&["compare", "-threshold", "5%", &slow_b, &fast_a]));

    // Without B's record files a step is a single run with no noise estimate.
    std::fs::remove_dir_all(format!("{b}/steps")).unwrap();
    let single = ok(&run(&["compare", &a, &b]));
    assert!(single.contains("no noise estimate"), "{single}");
    assert!(!single.lines().any(|l| l.ends_with("beyond")), "{single}");
}

const SUMMARY: &str = r#"{
  "plan": "p",
  "plan_file": "p.toml",
  "mode": "sweep",
  "complete": true,
  "variants": [
    { "variant": "go", "max_rate_held": HELD, "how": "sweep", "probes": null, "seconds": null },
    { "variant": "ruby", "max_rate_held": 100.0, "how": "sweep", "probes": null, "seconds": null }
  ],
  "steps": []
}"#;

#[test]
fn bad_run_folders_are_named_and_fail() {
    let dir = TempDir::new();
    let good = dir.write("good/summary.json", &SUMMARY.replace("HELD", "1000.0"));
    let good = good.trim_end_matches("/summary.json").to_owned();
    let worse = dir.write("worse/summary.json", &SUMMARY.replace("HELD", "800.0"));
    let worse = worse.trim_end_matches("/summary.json").to_owned();
    let broken = dir.write(
        "broken/summary.json",
        "{\n  \"plan\": \"p\",\n  \"mode\": \n}\n",
    );
    let broken = broken.trim_end_matches("/summary.json").to_owned();
    std::fs::create_dir_all(dir.path("empty")).unwrap();
    let empty = dir.path("empty");
    let record = dir.write("a.llr", "not really");
    let rows: Vec<(Vec<String>, String)> = vec![
        (
            vec![good.clone(), record.clone()],
            format!("not both: {good} is a folder, {record} is not"),
        ),
        (
            vec![good.clone(), empty.clone()],
            format!("{empty}/summary.json: not found"),
        ),
        (
            vec![good.clone(), broken.clone()],
            format!("{broken}/summary.json:4: expected value"),
        ),
        (
            vec![format!("{good}#python")],
            "no variant \"python\"".to_owned(),
        ),
        (vec![format!("{good}/ruby")], format!("write {good}#ruby")),
        (
            vec![format!("{good}#go"), worse.clone()],
            "not both".to_owned(),
        ),
    ];
    for (args, want) in rows {
        let args: Vec<&str> = std::iter::once("compare")
            .chain(args.iter().map(String::as_str))
            .collect();
        let output = run(&args);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(&want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    // A lower max rate held beyond the threshold is a regression, with no noise estimate.
    let gate = run(&["compare", "-threshold", "10%", &good, &worse]);
    assert_eq!(gate.status.code(), Some(7), "{}", stderr(&gate));
    assert!(
        stderr(&gate).contains("regression: max rate held of go is 20.00% worse in")
            && stderr(&gate).contains("no noise estimate"),
        "{}",
        stderr(&gate)
    );
    ok(&run(&["compare", "-threshold", "25%", &good, &worse]));
    let table = ok(&run(&["compare", &good, &worse]));
    assert!(
        table.contains("go       1000  800  -200.0  -20.00%  0.80x"),
        "{table}"
    );
}
