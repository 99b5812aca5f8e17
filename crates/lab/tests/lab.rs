//! `lab::run_plan` end to end against the simulator on loopback: a sweep of two
//! variants, a capacity search that must find a known capacity, and the sad paths
//! (a server that is down, a hanging setup hook, a plan typo).

use std::net::SocketAddr;
use std::path::Path;

use engine::StopHandle;
use lab::{Plan, RunOptions, RunSummary, run_plan};
use simulator::{Simulator, SimulatorOptions, parse_recipe};

/// The tests that send load take turns: on a small shared machine, two at once would
/// starve each other's generator and turn steps inconclusive.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn simulator(recipe: &str) -> Simulator {
    let recipe = parse_recipe(recipe, "test recipe").expect("recipe");
    let mut options = SimulatorOptions::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.threads = 1;
    options.seed = Some(1);
    Simulator::start(options, &recipe).expect("simulator starts")
}

/// A pool of `workers` each holding a request `service_ms`: capacity workers/service.
fn capacity_recipe(workers: u32, service_ms: u32) -> String {
    queued_recipe(workers, service_ms, 0)
}

/// With a short queue, the pool absorbs the timer's jitter and serves up to W/S
/// (docs/SIMULATOR.md); beyond it the queue fills within a probe and answers 503.
fn queued_recipe(workers: u32, service_ms: u32, queue: u32) -> String {
    format!(
        r#"{{"route": "/*", "stages": [{{"at": 0, "status": 200, "latency": "{service_ms}ms"}}],
            "capacity": {{"workers": {workers}, "overflow": 0, "queue": {queue}, "queue_timeout": "1s", "reject_status": 503}}}}"#
    )
}

fn run(plan_text: &str, dir: &Path) -> RunSummary {
    let plan = Plan::parse(plan_text, "test.toml", dir).unwrap_or_else(|e| panic!("{e}"));
    let options = RunOptions {
        output: dir.join("run"),
        ..RunOptions::default()
    };
    run_plan(&plan, &options, &StopHandle::new(), &mut std::io::sink()).expect("the plan runs")
}

fn verdicts(summary: &RunSummary) -> Vec<(String, String)> {
    summary
        .steps
        .iter()
        .map(|s| (s.step.clone(), s.verdict.clone()))
        .collect()
}

#[test]
fn a_sweep_of_two_variants_writes_the_folder_and_judges_each_step() {
    let _turn = one_at_a_time();
    // "fast" holds 400/s (40 workers x 100 ms), "slow" only 100/s: 200/s splits them.
    let (fast, slow) = (
        simulator(&capacity_recipe(40, 100)),
        simulator(&capacity_recipe(10, 100)),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = format!(
        r#"name = "two variants"
mode = "sweep"

[[variant]]
name = "fast"
base_url = "http://{}"

[[variant]]
name = "slow"
base_url = "http://{}"

[load]
targets = ["GET http://placeholder/info\nAuthorization: bearer s3cret"]
rates = [50, 200]
step_duration = "1s"
warmup = "200ms"

[slo]
success = 0.99
# These tests check the runner, not the generator: a busy machine must not make the
# steps inconclusive (the generator's health is judged in analysis's own tests).
max_lag = "1s"
achieved = 0.9
"#,
        fast.local_addr(),
        slow.local_addr()
    );
    let summary = run(&plan, dir.path());
    let want = [
        ("000-fast-50", "pass"),
        ("001-fast-200", "pass"),
        ("002-slow-50", "pass"),
        ("003-slow-200", "fail"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(verdicts(&summary), want, "{:#?}", summary.steps);
    assert!(summary.complete);
    let held: Vec<Option<f64>> = summary.variants.iter().map(|v| v.max_rate_held).collect();
    assert_eq!(held, [Some(200.0), Some(50.0)]);
    let slow_200 = &summary.steps[3];
    assert!(slow_200.why.contains("success"), "{}", slow_200.why);
    assert!(
        slow_200.errors.get("503").is_some_and(|n| *n > 0),
        "{:?}",
        slow_200.errors
    );
    // The warm-up is sent but not judged: the window holds about 1 s of requests.
    assert!(
        (180..=220).contains(&summary.steps[1].requests),
        "{}",
        summary.steps[1].requests
    );

    let run_dir = dir.path().join("run");
    for file in ["plan.toml", "log.txt", "summary.json", "summary.md"] {
        assert!(run_dir.join(file).is_file(), "{file}");
    }
    for step in &summary.steps {
        for file in [step.records.as_deref(), step.report.as_deref()] {
            let file = file.expect("a path");
            assert!(run_dir.join(file).is_file(), "{file}");
        }
    }
    let plan_copy = std::fs::read_to_string(run_dir.join("plan.toml")).expect("plan.toml");
    assert!(
        plan_copy.contains("Authorization: REDACTED") && !plan_copy.contains("s3cret"),
        "{plan_copy}"
    );
    let log = std::fs::read_to_string(run_dir.join("log.txt")).expect("log");
    assert_eq!(
        log.lines().filter(|l| l.contains(" step ")).count(),
        4,
        "{log}"
    );
    let md = std::fs::read_to_string(run_dir.join("summary.md")).expect("md");
    assert!(md.contains("| slow | 50 | 0.25x |"), "{md}");
    let report =
        std::fs::read_to_string(run_dir.join(summary.steps[0].report.as_deref().expect("report")))
            .expect("report");
    assert!(report.contains("Requests"), "{report}");

    // -resume skips every finished cell.
    let plan = Plan::parse(&plan, "test.toml", dir.path()).expect("plan");
    let options = RunOptions {
        output: run_dir.clone(),
        resume: true,
        ..RunOptions::default()
    };
    let again =
        run_plan(&plan, &options, &StopHandle::new(), &mut std::io::sink()).expect("resume");
    assert_eq!(verdicts(&again), want);
    let log = std::fs::read_to_string(run_dir.join("log.txt")).expect("log");
    assert_eq!(log.matches("kept from the resumed run").count(), 4, "{log}");
    // Without -resume, a folder that holds a run is refused.
    let refused = run_plan(
        &plan,
        &RunOptions {
            output: run_dir,
            ..RunOptions::default()
        },
        &StopHandle::new(),
        &mut std::io::sink(),
    );
    assert!(refused.is_err_and(|e| e.to_string().contains("-resume")));
}

#[test]
fn search_finds_a_known_capacity_within_5_percent() {
    let _turn = one_at_a_time();
    let server = simulator(&queued_recipe(100, 200, 10)); // W/S = 500/s
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = format!(
        r#"mode = "search"
[[variant]]
name = "pool"
targets = ["GET http://{}/"]

[load]
step_duration = "1s"
warmup = "200ms"
cooldown = "100ms"

[slo]
success = 0.99
# Generous: the search is judged on the server's 503s, not on a busy test machine.
max_lag = "1s"
achieved = 0.97

[search]
start = 100
precision = 0.02
max_probes = 16
"#,
        server.local_addr()
    );
    let summary = run(&plan, dir.path());
    let result = &summary.variants[0];
    let found = result
        .max_rate_held
        .unwrap_or_else(|| panic!("{result:?}: {:#?}", summary.steps));
    assert!(
        (475.0..=525.0).contains(&found),
        "found {found}: {result:?}\n{}",
        summary_table(&summary)
    );
    assert!(result.how.contains("confirmed"), "{result:?}");
    assert_eq!(
        summary.steps.last().map(|s| s.kind.as_str()),
        Some("confirm")
    );
    assert!(summary.complete);
}

#[test]
fn sad_paths_fail_their_cell_and_the_plan_goes_on() {
    let _turn = one_at_a_time();
    let up = simulator(&capacity_recipe(50, 1));
    // A port nothing listens on: bind one, then let it go.
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = format!(
        r#"mode = "sweep"
[[variant]]
name = "down"
targets = ["GET http://{down}/"]

[[variant]]
name = "hangs"
targets = ["GET http://{up}/"]
setup = "echo starting {{{{variant}}}} at {{{{rate}}}}; sleep 30"
hook_timeout = "300ms"

[[variant]]
name = "up"
targets = ["GET http://{up}/"]
teardown = "echo done {{{{variant}}}}"

[load]
rates = [20]
step_duration = "1500ms"
timeout = "500ms"
# Ends the "down" step early; the plan must go on (a fired rule is not a Ctrl-C).
stop_when = ["errors > 50% for 1s"]

[slo]
max_lag = "1s"
achieved = 0.9
"#,
        up = up.local_addr()
    );
    let started = std::time::Instant::now();
    let summary = run(&plan, dir.path());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let rows: Vec<(&str, &str)> = summary
        .steps
        .iter()
        .map(|s| (s.variant.as_str(), s.verdict.as_str()))
        .collect();
    // A server that is down fails its step (or, on a starved generator, leaves it
    // inconclusive); either way the reason says nothing succeeded, and the plan goes on.
    assert!(
        matches!(rows[0], ("down", "fail" | "inconclusive")),
        "{:#?}",
        summary.steps
    );
    assert!(
        summary.steps[0].why.contains("success 0.00% under 99.00%"),
        "{}",
        summary.steps[0].why
    );
    assert_eq!(
        rows[1..],
        [("hangs", "failed"), ("up", "pass")],
        "{:#?}",
        summary.steps
    );
    assert!(
        summary.steps[0].errors.contains_key("connect"),
        "{:?}",
        summary.steps[0]
    );
    assert!(
        summary.steps[1]
            .why
            .contains("setup still running after 300ms"),
        "{}",
        summary.steps[1].why
    );
    assert_eq!(summary.steps[1].records, None, "no attack, no record file");
    let hooks = std::fs::read_to_string(
        dir.path()
            .join("run")
            .join(summary.steps[1].hooks.as_deref().expect("hooks")),
    )
    .expect("hooks.txt");
    assert!(hooks.contains("starting hangs at 20"), "{hooks}");
    let hooks = std::fs::read_to_string(
        dir.path()
            .join("run")
            .join(summary.steps[2].hooks.as_deref().expect("hooks")),
    )
    .expect("hooks.txt");
    assert!(hooks.contains("done up"), "{hooks}");
    assert!(summary.complete);
}

#[test]
fn a_plan_typo_names_the_file_line_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("typo.toml");
    std::fs::write(&path, "mode = \"sweep\"\n[[variant]]\nname = \"a\"\ntargets = [\"GET http://127.0.0.1:1/\"]\n[load]\nrates = [1]\nstep_durration = \"1s\"\n").expect("write");
    let err = Plan::read(&path).expect_err("a typo").to_string();
    assert!(
        err.starts_with(&format!(
            "{}:7: step_durration: unknown field",
            path.display()
        )),
        "{err}"
    );
}

fn summary_table(summary: &RunSummary) -> String {
    summary.markdown()
}

#[test]
fn a_matrix_runs_every_combination_with_its_values_in_the_hooks() {
    let _turn = one_at_a_time();
    let server = simulator(&capacity_recipe(50, 1));
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = format!(
        r#"mode = "matrix"
[[variant]]
name = "m"
targets = ["GET http://{}/"]
setup = "echo cell {{{{variant}}}} {{{{rate}}}} {{{{pool}}}} {{{{repeat}}}}"

[load]
step_duration = "300ms"

[slo]
max_lag = "1s"
achieved = 0.9

[matrix]
axes = {{ rate = [20, 40], pool = ["small", "big"] }}
repeat = 2
order = "shuffled"
seed = 3
"#,
        server.local_addr()
    );
    let summary = run(&plan, dir.path());
    assert_eq!(summary.steps.len(), 8, "{:#?}", summary.steps);
    assert!(
        summary.steps.iter().all(|s| s.verdict == "pass"),
        "{:#?}",
        summary.steps
    );
    assert_eq!(summary.cells.len(), 4);
    assert!(
        summary.cells.iter().all(|c| c.runs == 2 && c.passed == 2),
        "{:#?}",
        summary.cells
    );
    let hooks = std::fs::read_to_string(
        dir.path()
            .join("run")
            .join(summary.steps[0].hooks.as_deref().expect("hooks")),
    )
    .expect("hooks");
    let step = &summary.steps[0];
    let want = format!(
        "cell m {} {} {}",
        step.rate_asked.map_or(0, |r| r as u64),
        step.params["pool"],
        step.repeat
    );
    assert!(hooks.contains(&want), "{want}: {hooks}");
    let md = std::fs::read_to_string(dir.path().join("run/summary.md")).expect("md");
    assert!(md.contains("the median of its repeats"), "{md}");
}

#[test]
fn a_background_scenario_with_its_own_slo_fails_a_step_the_main_load_passes() {
    let _turn = one_at_a_time();
    // 001's question: /search is served at once, while the /news poll beside it answers
    // after 300 ms, over the poll's own p99 bound of 100 ms.
    let server = simulator(
        r#"[{"route": "/search", "stages": [{"at": 0, "status": 200, "latency": "1ms"}]},
            {"route": "/news", "stages": [{"at": 0, "status": 200, "latency": "300ms"}]},
            {"route": "/home", "stages": [{"at": 0, "status": 200, "latency": "1ms"}]}]"#,
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = format!(
        r#"mode = "sweep"
[[variant]]
name = "pool"
base_url = "http://{}"

[load]
targets = ["GET http://placeholder/search?q=x"]
rates = [50]
step_duration = "1s"
warmup = "300ms"

[[load.scenario]]
name = "news"
targets = ["GET http://placeholder/news"]
rate = 10
slo = {{ success = 0.99, p99 = "100ms" }}

[[load.scenario]]
name = "home"
targets = ["GET http://placeholder/home"]
rate = 20

[slo]
success = 0.99
p99 = "100ms"
max_lag = "1s"
achieved = 0.9
"#,
        server.local_addr()
    );
    let summary = run(&plan, dir.path());
    let step = &summary.steps[0];
    assert_eq!(step.verdict, "fail", "{step:#?}");
    assert!(step.why.starts_with("news: p99"), "{}", step.why);
    // The main load's figures are its own: ~50 fast requests, none of the polls'.
    assert!((45..=55).contains(&step.requests), "{step:#?}");
    assert!(step.p99_ms.is_some_and(|ms| ms < 100.0), "{step:#?}");
    let [news, home] = &step.scenarios[..] else {
        panic!("{step:#?}")
    };
    assert_eq!(
        (news.name.as_str(), news.verdict.as_deref()),
        ("news", Some("fail"))
    );
    assert!((9..=11).contains(&news.requests), "{news:?}");
    assert_eq!(news.success, 1.0, "{news:?}");
    assert!(news.p99_ms.is_some_and(|ms| ms >= 290.0), "{news:?}");
    // Without an SLO a scenario is measured, not judged.
    assert_eq!(
        (home.name.as_str(), home.verdict.as_deref()),
        ("home", None)
    );
    assert!((18..=22).contains(&home.requests), "{home:?}");
    let md = std::fs::read_to_string(dir.path().join("run/summary.md")).expect("md");
    assert!(md.contains("| scenarios |"), "{md}");
    assert!(md.contains("news: 100% ok, p99 3"), "{md}");
    assert!(md.contains("(fail); home: 100% ok, p99 "), "{md}");
    let json = std::fs::read_to_string(dir.path().join("run/summary.json")).expect("json");
    assert!(json.contains("\"scenarios\""), "{json}");
}
