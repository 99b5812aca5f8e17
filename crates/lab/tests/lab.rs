//! `lab::run_plan` end to end against the simulator on loopback: a sweep of two
//! variants, a capacity search that must find a known capacity, and the sad paths
//! (a server that is down, a hanging setup hook, a plan typo, Ctrl-C). The run folder's
//! `index.html` and each step's `plot.html` are checked on real runs, and `index.html`
//! of a fixed summary against `tests/golden/index.html` (`UPDATE_GOLDEN=1 cargo test -p
//! loadlab-lab` rewrites it; review the diff).

use std::net::SocketAddr;
use std::path::Path;

use engine::StopHandle;
use lab::{
    Mode, Plan, RunOptions, RunSummary, StepKind, StepRow, StepVerdict, VariantResult, run_plan,
};
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
        .map(|s| (s.step.clone(), s.verdict.word().to_owned()))
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
    // index.html: each variant, and a link to every step's plot page, which exists.
    let index = std::fs::read_to_string(run_dir.join("index.html")).expect("index.html");
    assert!(summary.started.is_some());
    assert!(index.contains("<dd>complete</dd>"), "{index}");
    for variant in ["fast", "slow"] {
        assert!(
            index.contains(&format!("\"name\":\"{variant}\"")),
            "{variant}"
        );
    }
    for step in &summary.steps {
        let plot = step.plot.as_deref().unwrap_or_else(|| panic!("{step:?}"));
        assert_eq!(plot, format!("steps/{}/plot.html", step.step));
        let page = std::fs::read_to_string(run_dir.join(plot)).expect("plot.html");
        assert!(page.contains(&step.step) && page.contains("id=\"chart-latency\""));
        assert!(
            index.contains(&format!("<a href=\"{plot}\">plot</a>")),
            "{plot}"
        );
    }
    assert_links_exist(&index, &run_dir);

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
    assert_eq!(summary.steps.last().map(|s| s.kind.word()), Some("confirm"));
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
# The down variant's step runs, to be judged (the check would stop the plan there).
check_targets = false

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
        .map(|s| (s.variant.as_str(), s.verdict.word()))
        .collect();
    // A server that is down fails its step, whatever the generator's lag, and the
    // reason says nothing listened; the plan goes on.
    assert_eq!(rows[0], ("down", "fail"), "{:#?}", summary.steps);
    assert!(
        (summary.steps[0].why).contains("nothing listened: every request failed to connect"),
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
    // Every step has its row in index.html; the hung one (no records, no plot) links
    // only to its hooks, and no link is broken.
    let run_dir = dir.path().join("run");
    let index = std::fs::read_to_string(run_dir.join("index.html")).expect("index.html");
    for step in &summary.steps {
        assert!(
            index.contains(&format!("<tr><td>{}</td>", step.step)),
            "{}",
            step.step
        );
    }
    let hung = &summary.steps[1];
    assert_eq!((&hung.plot, &hung.report), (&None, &None));
    let hung_row = index
        .lines()
        .find(|l| l.contains(&format!("<td>{}</td>", hung.step)))
        .expect("the hung step's row");
    assert!(
        hung_row.contains("v-failed")
            && !hung_row.contains(">plot<")
            && hung_row.contains(">hooks<"),
        "{hung_row}"
    );
    assert_links_exist(&index, &run_dir);
}

/// Every `href` of a run folder's page names a file in it (in its markup: the page's
/// script, last, draws traced requests' links from a plot's data).
fn assert_links_exist(html: &str, run_dir: &Path) {
    let markup = html
        .rsplit_once("<script>\n")
        .map_or(html, |(markup, _)| markup);
    let mut links = 0;
    for piece in markup.split("href=\"").skip(1) {
        let link = &piece[..piece.find('"').expect("a closed href")];
        let path = percent_decode(link);
        assert!(run_dir.join(&path).is_file(), "broken link {link}");
        links += 1;
    }
    assert!(links > 0, "no links in {html}");
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' && at + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[at + 1..at + 3]).expect("hex");
            out.push(u8::from_str_radix(hex, 16).expect("hex"));
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn an_interrupted_plan_leaves_an_index_that_says_incomplete() {
    let _turn = one_at_a_time();
    let server = simulator(&capacity_recipe(50, 1));
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = format!(
        r#"mode = "sweep"
[[variant]]
name = "a"
targets = ["GET http://{}/"]

[load]
rates = [20, 40]
step_duration = "2s"
"#,
        server.local_addr()
    );
    let plan = Plan::parse(&plan, "test.toml", dir.path()).expect("plan");
    let stop = StopHandle::new();
    // Ctrl-C before the first step: it is interrupted and the plan ends there.
    stop.drain();
    let options = RunOptions {
        output: dir.path().join("run"),
        ..RunOptions::default()
    };
    let summary = run_plan(&plan, &options, &stop, &mut std::io::sink()).expect("runs");
    assert!(!summary.complete);
    assert_eq!(
        verdicts(&summary),
        [("000-a-20".to_owned(), "interrupted".to_owned())]
    );
    let index = std::fs::read_to_string(dir.path().join("run/index.html")).expect("index.html");
    assert!(index.contains("<strong>INCOMPLETE:</strong>"), "{index}");
    assert!(index.contains("1 step not judged"), "{index}");
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
        summary.steps.iter().all(|s| s.verdict == StepVerdict::Pass),
        "{:#?}",
        summary.steps
    );
    // The cells' table reads in plan order, however the run was shuffled.
    let cells: Vec<(&str, Option<f64>)> = summary
        .cells
        .iter()
        .map(|c| (c.params["pool"].as_str(), c.rate_asked))
        .collect();
    assert_eq!(
        cells,
        [
            ("small", Some(20.0)),
            ("small", Some(40.0)),
            ("big", Some(20.0)),
            ("big", Some(40.0))
        ]
    );
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
    // index.html: the cells, and a series per variant and pool size (a line through
    // both sizes would draw a knee that is not there).
    let run_dir = dir.path().join("run");
    let index = std::fs::read_to_string(run_dir.join("index.html")).expect("index.html");
    assert!(index.contains("<h2>Cells</h2>"), "{index}");
    for series in ["m (pool=big)", "m (pool=small)"] {
        assert!(
            index.contains(&format!("\"name\":\"{series}\"")),
            "{series}"
        );
    }
    assert_links_exist(&index, &run_dir);
}

/// A fixed summary with every kind of row: two variants (names that need escaping), rate
/// steps out of order, a repeat, a closed-model step, a cell that could not run, a step
/// whose records could not be read, and one interrupted.
fn golden_summary() -> RunSummary {
    let row = |step: &str, variant: &str, rate: Option<f64>, verdict: StepVerdict| {
        let dir = format!("steps/{step}");
        StepRow {
            step: step.to_owned(),
            variant: variant.to_owned(),
            kind: StepKind::Sweep,
            repeat: 1,
            rate_asked: rate,
            users: rate.is_none().then_some(8),
            asked_per_sec: rate.unwrap_or(0.0),
            achieved_per_sec: rate.unwrap_or(40.0),
            requests: rate.map_or(400, |r| (r * 10.0) as u64),
            success: 1.0,
            p50_ms: Some(1.25),
            p90_ms: Some(2.5),
            p99_ms: Some(4.0),
            max_ms: Some(9.0),
            verdict,
            why: "every SLO met".to_owned(),
            records: Some(format!("{dir}/records.llr")),
            report: Some(format!("{dir}/report.txt")),
            plot: Some(format!("{dir}/plot.html")),
            seconds: 11.0,
            ..StepRow::default()
        }
    };
    let ruby = "ruby <1.0>";
    let go = "go & \"fast\"";
    let mut saturated = row("003-ruby <1.0>-400", ruby, Some(400.0), StepVerdict::Fail);
    (saturated.achieved_per_sec, saturated.success) = (396.0, 0.62);
    (saturated.p50_ms, saturated.p99_ms, saturated.max_ms) =
        (Some(850.0), Some(1900.0), Some(2000.0));
    saturated.errors = [("503".to_owned(), 1500)].into();
    saturated.why = "success 62.00% under 99.00%; p99 1.9s over 500ms <limit>".to_owned();
    let mut repeat = row(
        "001-ruby <1.0>-100-r2",
        ruby,
        Some(100.0),
        StepVerdict::Pass,
    );
    repeat.repeat = 2;
    repeat.p99_ms = Some(5.0);
    let not_judged = |row: StepRow| StepRow {
        achieved_per_sec: 0.0,
        requests: 0,
        success: 0.0,
        p50_ms: None,
        p90_ms: None,
        p99_ms: None,
        max_ms: None,
        ..row
    };
    let mut unreadable = row(
        "005-go & \"fast\"-200",
        go,
        Some(200.0),
        StepVerdict::Failed,
    );
    unreadable.why = "cannot read the records: steps/005/records.llr: not a record file".to_owned();
    (unreadable.report, unreadable.plot) = (None, None);
    let mut hung = row(
        "006-go & \"fast\"-400",
        go,
        Some(400.0),
        StepVerdict::Failed,
    );
    hung.why = "setup still running after 300ms".to_owned();
    (hung.records, hung.report, hung.plot) = (None, None, None);
    hung.hooks = Some("steps/006-go & \"fast\"-400/hooks.txt".to_owned());
    let mut stopped = row(
        "008-go & \"fast\"-800",
        go,
        Some(800.0),
        StepVerdict::Interrupted,
    );
    stopped.why = "stopped by Ctrl-C; not judged".to_owned();
    (stopped.report, stopped.plot) = (None, None);
    RunSummary {
        plan: "pool <sizes> & \"overflow\"".to_owned(),
        plan_file: "plans/pools.toml".to_owned(),
        mode: Mode::Sweep,
        complete: true,
        started: Some("2026-11-23T19:00:00Z".to_owned()),
        variants: vec![
            VariantResult {
                variant: ruby.to_owned(),
                max_rate_held: Some(200.0),
                how: "highest pass below 400/s (fail)".to_owned(),
                ..VariantResult::default()
            },
            VariantResult {
                variant: go.to_owned(),
                max_rate_held: Some(100.0),
                how: "highest pass below 200/s (failed)".to_owned(),
                ..VariantResult::default()
            },
        ],
        steps: vec![
            row("000-ruby <1.0>-100", ruby, Some(100.0), StepVerdict::Pass),
            repeat,
            row("002-ruby <1.0>-200", ruby, Some(200.0), StepVerdict::Pass),
            saturated,
            row("004-go & \"fast\"-100", go, Some(100.0), StepVerdict::Pass),
            not_judged(unreadable),
            not_judged(hung),
            row(
                "007-go & \"fast\"-8users",
                go,
                None,
                StepVerdict::Inconclusive,
            ),
            not_judged(stopped),
        ],
        ..RunSummary::default()
    }
}

/// Headless Chromium, when installed (`.ci/setup/chromium.sh`), as the plot crate's
/// browser test finds it.
fn chromium() -> Option<std::path::PathBuf> {
    if let Some(path) = std::env::var_os("LOADLAB_CHROMIUM") {
        return Some(path.into());
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|path| path.exists())
}

#[test]
fn the_steps_table_fits_the_page_at_1400_px() {
    let Some(chromium) = chromium() else {
        assert!(
            std::env::var_os("LOADLAB_REQUIRE_BROWSER").is_none(),
            "LOADLAB_REQUIRE_BROWSER is set but chromium is not installed"
        );
        eprintln!("\n*** SKIPPED: the plan page's layout test needs chromium ***\n");
        return;
    };
    // The page measures itself once laid out: how far the steps table runs past its box.
    let probe = "<script>addEventListener('load', function () { \
        var wrap = document.getElementById('steps').parentElement; \
        document.documentElement.setAttribute('data-overflow', \
        String(wrap.scrollWidth - wrap.clientWidth)); });</script>\n</body>";
    let page = golden_summary().index_html().replace("</body>", probe);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.html");
    std::fs::write(&path, page).unwrap();
    let output = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,1000",
            "--virtual-time-budget=2000",
            "--dump-dom",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg(format!("file://{}", path.display()))
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&output.stdout);
    let overflow = dom
        .split("data-overflow=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("the page did not measure itself: {dom:.300}"));
    assert_eq!(
        overflow, "0",
        "the steps table runs {overflow} px past its box"
    );
}

#[test]
fn index_page_matches_the_golden_file() {
    let summary = golden_summary();
    let html = summary.index_html();
    check_golden("index.html", &html);
    // Whatever the golden file holds: text is escaped, the failed rows link to no plot,
    // the closed-model and unjudged steps are said to be left out of the charts.
    assert!(!html.contains("ruby <1.0>") && html.contains("ruby &lt;1.0&gt;"));
    assert!(html.contains("<h1>pool &lt;sizes&gt; &amp; &quot;overflow&quot;</h1>"));
    assert!(html.contains("p99 1.9s over 500ms &lt;limit&gt;"));
    assert!(html.contains("href=\"steps/003-ruby%20%3C1.0%3E-400/plot.html\""));
    for failed in ["005-go", "006-go"] {
        let line = html
            .lines()
            .find(|l| l.contains(&format!("<tr><td>{failed}")))
            .expect("the failed row");
        assert!(
            line.contains("v-failed") && !line.contains(">plot<"),
            "{line}"
        );
    }
    assert!(
        html.contains("1 judged step without an offered rate"),
        "{html}"
    );
    assert!(html.contains("3 steps not judged"), "{html}");
    assert!(html.contains("<dd>complete</dd>") && !html.contains("INCOMPLETE"));
    let incomplete = RunSummary {
        complete: false,
        ..summary
    };
    let html = incomplete.index_html();
    assert!(
        html.contains("<dd>INCOMPLETE: interrupted or still running</dd>"),
        "{html}"
    );
    // Older summary.json files (no plot, no started) still read.
    let old = r#"{"plan":"p","plan_file":"p.toml","mode":"sweep","complete":true,"variants":[],
        "steps":[{"step":"000-a-1","variant":"a","params":{},"kind":"sweep","repeat":1,
        "rate_asked":1.0,"users":null,"asked_per_sec":1.0,"achieved_per_sec":1.0,"requests":1,
        "success":1.0,"p50_ms":null,"p90_ms":null,"p99_ms":null,"max_ms":null,"lag_p99_ms":0.0,
        "errors":{},"verdict":"pass","why":"","records":null,"report":null,"hooks":null,
        "seconds":1.0}]}"#;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("summary.json"), old).expect("write");
    let read = RunSummary::read(dir.path())
        .expect("reads")
        .expect("a summary");
    assert_eq!(
        (read.steps[0].plot.as_deref(), read.started.as_deref()),
        (None, None)
    );
    assert!(read.index_html().contains("<dd>not recorded</dd>"));
}

/// Compares `actual` with `tests/golden/NAME`, or rewrites it with UPDATE_GOLDEN=1.
fn check_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "{}: {err}; run UPDATE_GOLDEN=1 cargo test -p loadlab-lab",
            path.display()
        )
    });
    if let Some((line, (want, got))) = expected
        .lines()
        .zip(actual.lines())
        .enumerate()
        .find(|(_, (want, got))| want != got)
    {
        panic!(
            "{name} differs from the golden file at line {}:\n  want: {want}\n  got:  {got}\n\
             (UPDATE_GOLDEN=1 cargo test -p loadlab-lab rewrites it; review the diff)",
            line + 1
        );
    }
    assert_eq!(
        expected.lines().count(),
        actual.lines().count(),
        "{name}: line count differs from the golden file (UPDATE_GOLDEN=1 rewrites it)"
    );
}

#[test]
fn a_sweep_skips_a_variants_higher_rates_once_it_fails() {
    let _turn = one_at_a_time();
    let slow = simulator(&capacity_recipe(10, 100)); // W/S = 100/s
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = format!(
        r#"mode = "sweep"
[[variant]]
name = "slow"
targets = ["GET http://{}/"]

[load]
rates = [200, 50, 400]
step_duration = "1s"
stop_after_failures = 1

[slo]
max_lag = "1s"
achieved = 0.9
"#,
        slow.local_addr()
    );
    let summary = run(&plan, dir.path());
    // Rates run in the order written: 200 fails, 50 (lower) still runs, 400 is skipped.
    let rows: Vec<(&str, &str)> = summary
        .steps
        .iter()
        .map(|s| (s.step.as_str(), s.verdict.word()))
        .collect();
    assert_eq!(
        rows,
        [
            ("000-slow-200", "fail"),
            ("001-slow-50", "pass"),
            ("002-slow-400", "skipped")
        ],
        "{:#?}",
        summary.steps
    );
    let skipped = &summary.steps[2];
    assert!(
        skipped.why.contains("load.stop_after_failures = 1") && skipped.records.is_none(),
        "{skipped:?}"
    );
    assert!(!dir.path().join("run/steps/002-slow-400").exists());
    assert_eq!(summary.variants[0].max_rate_held, Some(50.0));
}

/// Drains `stop` once the run folder's summary holds `rows` judged steps.
fn interrupt_after(
    summary_json: std::path::PathBuf,
    rows: usize,
    stop: StopHandle,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            let judged = std::fs::read_to_string(&summary_json)
                .ok()
                .and_then(|text| serde_json::from_str::<RunSummary>(&text).ok())
                .map_or(0, |s| s.steps.len());
            if judged >= rows {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        stop.drain();
    })
}

#[test]
fn an_interrupted_search_resumes_from_its_finished_probes() {
    let _turn = one_at_a_time();
    let server = simulator(&queued_recipe(100, 200, 10)); // W/S = 500/s
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        r#"mode = "search"
[[variant]]
name = "pool"
targets = ["GET http://{}/"]

[load]
step_duration = "1s"
warmup = "200ms"
cooldown = "100ms"

[slo]
max_lag = "1s"
achieved = 0.97

[search]
start = 100
precision = 0.05
max_probes = 16
"#,
        server.local_addr()
    );
    let plan = Plan::parse(&text, "test.toml", dir.path()).expect("plan");
    let run_dir = dir.path().join("run");
    let stop = StopHandle::new();
    let watcher = interrupt_after(run_dir.join("summary.json"), 2, stop.clone());
    let options = RunOptions {
        output: run_dir.clone(),
        ..RunOptions::default()
    };
    let first = run_plan(&plan, &options, &stop, &mut std::io::sink()).expect("first run");
    watcher.join().expect("watcher");
    assert!(!first.complete, "{first:#?}");
    // Ctrl-C lands in a probe (its row is `interrupted`) or in a cool-down.
    let finished = first
        .steps
        .iter()
        .take_while(|s| s.verdict != StepVerdict::Interrupted)
        .count();
    assert!(first.steps.len() - finished <= 1, "{:#?}", first.steps);
    assert!(finished >= 2, "{:#?}", first.steps);

    let resumed = RunOptions {
        resume: true,
        ..options
    };
    let second =
        run_plan(&plan, &resumed, &StopHandle::new(), &mut std::io::sink()).expect("resume");
    assert!(second.complete);
    // The finished probes are replayed from the summary, not sent again.
    let key = |s: &StepRow| (s.step.clone(), s.verdict, s.requests);
    assert_eq!(
        second.steps[..finished].iter().map(key).collect::<Vec<_>>(),
        first.steps[..finished].iter().map(key).collect::<Vec<_>>()
    );
    let log = std::fs::read_to_string(run_dir.join("log.txt")).expect("log");
    assert_eq!(
        log.matches("kept from the resumed run").count(),
        finished,
        "{log}"
    );
    let found = second.variants[0].max_rate_held.expect("a rate held");
    assert!((475.0..=525.0).contains(&found), "{:#?}", second.variants);
}

#[test]
fn a_full_disk_fails_the_cell_or_the_run_and_keeps_the_summary() {
    let _turn = one_at_a_time();
    let server = simulator(&capacity_recipe(50, 1));
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        r#"mode = "sweep"
[[variant]]
name = "a"
targets = ["GET http://{}/"]

[load]
rates = [20, 30]
step_duration = "500ms"

[slo]
max_lag = "1s"
achieved = 0.9
"#,
        server.local_addr()
    );
    // /dev/full answers every write with ENOSPC: the first step's records "fill the disk".
    let run_dir = dir.path().join("run");
    let full_step = run_dir.join("steps/000-a-20");
    std::fs::create_dir_all(&full_step).expect("mkdir");
    std::os::unix::fs::symlink("/dev/full", full_step.join("records.llr")).expect("symlink");
    let summary = run(&text, dir.path());
    let verdicts: Vec<&str> = summary.steps.iter().map(|s| s.verdict.word()).collect();
    assert_eq!(verdicts, ["failed", "pass"], "{:#?}", summary.steps);
    assert!(
        summary.steps[0].why.contains("records.llr") && summary.steps[0].why.contains("space"),
        "{}",
        summary.steps[0].why
    );

    // The summary cannot be written: the run stops with the file named, and the
    // summary already on disk stays whole.
    let before = std::fs::read_to_string(run_dir.join("summary.json")).expect("summary");
    std::os::unix::fs::symlink("/dev/full", run_dir.join("summary.tmp")).expect("symlink");
    let plan = Plan::parse(&text, "test.toml", dir.path()).expect("plan");
    let options = RunOptions {
        output: run_dir.clone(),
        resume: true,
        ..RunOptions::default()
    };
    let err = run_plan(&plan, &options, &StopHandle::new(), &mut std::io::sink())
        .expect_err("a full disk")
        .to_string();
    assert!(
        err.contains("summary.json") && err.contains("space"),
        "{err}"
    );
    let after = std::fs::read_to_string(run_dir.join("summary.json")).expect("summary");
    assert_eq!(before, after);
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
    assert_eq!(step.verdict, StepVerdict::Fail, "{step:#?}");
    assert!(step.why.starts_with("news: p99"), "{}", step.why);
    // The main load's figures are its own: ~50 fast requests, none of the polls'.
    assert!((45..=55).contains(&step.requests), "{step:#?}");
    assert!(step.p99_ms.is_some_and(|ms| ms < 100.0), "{step:#?}");
    let [news, home] = &step.scenarios[..] else {
        panic!("{step:#?}")
    };
    assert_eq!(
        (news.name.as_str(), news.verdict.map(StepVerdict::word)),
        ("news", Some("fail"))
    );
    assert!((9..=11).contains(&news.requests), "{news:?}");
    assert_eq!(news.success, 1.0, "{news:?}");
    assert!(news.p99_ms.is_some_and(|ms| ms >= 290.0), "{news:?}");
    // Without an SLO a scenario is measured, not judged.
    assert_eq!(
        (home.name.as_str(), home.verdict.map(StepVerdict::word)),
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

/// Counts the records a step's watch is shown.
struct CountingWatch(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl engine::RunObserver for CountingWatch {
    fn start(&mut self, _clock: engine::Clock) {}
    fn records(&mut self, records: &[record::Record]) {
        self.0
            .fetch_add(records.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }
    fn stats(&mut self, _stats: &record::GeneratorStats) {}
    fn errors(&mut self, _first_index: usize, _new: &[record::ErrorEntry]) {}
}

#[test]
fn each_step_is_shown_to_a_watch_that_is_finished_after_it() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let _turn = one_at_a_time();
    let server = simulator(&capacity_recipe(50, 1));
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = format!(
        r#"mode = "sweep"
[[variant]]
name = "pool"
targets = ["GET http://{}/"]

[load]
rates = [40, 80]
step_duration = "500ms"
"#,
        server.local_addr()
    );
    let plan = Plan::parse(&plan, "test.toml", dir.path()).expect("plan");
    let (seen, finished) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let make: Arc<lab::MakeWatch> = {
        let (seen, finished) = (Arc::clone(&seen), Arc::clone(&finished));
        Arc::new(move |_config, _stop, out, _name| {
            let finished = Arc::clone(&finished);
            let watch = lab::Watch {
                observer: Box::new(CountingWatch(Arc::clone(&seen))),
                finish: Box::new(move |_completed| {
                    finished.fetch_add(1, Ordering::Relaxed);
                }),
            };
            (out, Some(watch))
        })
    };
    let options = RunOptions {
        output: dir.path().join("run"),
        watch: Some(lab::WatchFactory(make)),
        ..RunOptions::default()
    };
    let summary =
        run_plan(&plan, &options, &StopHandle::new(), &mut std::io::sink()).expect("runs");
    let requests: u64 = summary.steps.iter().map(|s| s.requests).sum();
    assert_eq!(summary.steps.len(), 2);
    assert!(requests >= 50, "{requests}");
    assert_eq!(
        seen.load(Ordering::Relaxed),
        requests,
        "every record of every step"
    );
    assert_eq!(finished.load(Ordering::Relaxed), 2, "one finish per step");
}

#[test]
fn a_plan_sweeps_a_user_flow_and_each_step_holds_its_flow_starts() {
    let _turn = one_at_a_time();
    let app = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/recipes/app_login.json"
    );
    let server = simulator(&std::fs::read_to_string(app).expect("recipe"));
    let dir = tempfile::tempdir().expect("tempdir");
    // The flow's URLs name a placeholder host: the variant's base_url rebases each step.
    let plan = format!(
        r#"mode = "sweep"
[[variant]]
name = "app"
base_url = "http://{}"

[load]
rates = [20, 40]
step_duration = "1s"
warmup = "200ms"

[[load.step]]
name = "login"
request = "POST http://placeholder/login?user=u{{{{user}}}}"
extract = {{ token = "json $.token" }}
checks = ["status 200"]

[[load.step]]
name = "list"
request = "GET http://placeholder/items\nAuthorization: Bearer {{{{token}}}}"
extract = {{ item = "json $.items[*].id" }}
checks = ["status 200"]

[[load.step]]
name = "item"
request = "GET http://placeholder/items/{{{{item}}}}"
checks = ["status 200"]

[slo]
success = 1.0
max_lag = "1s"
achieved = 0.9
"#,
        server.local_addr()
    );
    let summary = run(&plan, dir.path());
    assert_eq!(
        verdicts(&summary),
        [
            ("000-app-20".to_owned(), "pass".to_owned()),
            ("001-app-40".to_owned(), "pass".to_owned())
        ],
        "{summary:#?}"
    );
    // Three requests per flow started; the rate held is the flows'.
    let requests: Vec<u64> = summary.steps.iter().map(|s| s.requests).collect();
    let held: Vec<f64> = summary.steps.iter().map(|s| s.achieved_per_sec).collect();
    assert!(
        (18.0..=22.0).contains(&held[0]) && (36.0..=44.0).contains(&held[1]),
        "{held:?}"
    );
    assert!(
        (57..=63).contains(&requests[0]) && (114..=126).contains(&requests[1]),
        "{requests:?}"
    );
}

/// A trace store that answers every trace with the same small server span, or is down.
struct FakeStore {
    down: bool,
    asked: std::sync::atomic::AtomicUsize,
}

impl report::TraceStore for FakeStore {
    fn name(&self) -> &str {
        "http://store.test/"
    }

    fn fetch(&self, trace_ids: &[String]) -> Result<analysis::Fetched, String> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.down {
            return Err("connection refused".to_owned());
        }
        let span = analysis::Span {
            span_id: "server".to_owned(),
            parent_id: None,
            service: "orders".to_owned(),
            operation: "GET /orders".to_owned(),
            start_us: 0,
            duration_us: 1_000,
        };
        Ok(trace_ids.iter().map(|_| Some(vec![span.clone()])).collect())
    }
}

/// With a trace store, each traced step's write-up (summary.json, summary.md,
/// index.html) says where its slow requests' time went, as its report.txt judged it,
/// once per step; a store that is down is a "not judged" line and the plan unharmed.
#[test]
fn each_traced_step_says_where_its_slow_requests_time_went() {
    let _turn = one_at_a_time();
    // Three fast targets and one 30x slower: the typical exemplars (one per second and
    // target) are mostly fast, so the slow requests take 3x their median.
    let server = simulator(
        r#"[{"route": "/fast/*", "stages": [{"at": 0, "status": 200, "latency": "2ms"}]},
            {"route": "/slow", "stages": [{"at": 0, "status": 200, "latency": "60ms"}]}]"#,
    );
    let addr = server.local_addr();
    let plan = format!(
        r#"name = "traced"
mode = "sweep"
trace_store = "http://127.0.0.1:1"

[[variant]]
name = "app"

[load]
targets = ["GET http://{addr}/fast/1", "GET http://{addr}/fast/2", "GET http://{addr}/fast/3", "GET http://{addr}/slow"]
rates = [30, 60]
step_duration = "1s"
warmup = "100ms"
trace = true
seed = 4

[slo]
max_lag = "1s"
achieved = 0.5
"#
    );
    let mut folders = Vec::new();
    for (down, want) in [
        (false, "the slowest traced requests spent"),
        (
            true,
            "not judged: the trace store http://store.test/ could not be read: connection refused",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = Plan::parse(&plan, "test.toml", dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.trace_store.as_ref().map(|k| k.line), Some(3));
        let store = std::sync::Arc::new(FakeStore {
            down,
            asked: std::sync::atomic::AtomicUsize::new(0),
        });
        let options = RunOptions {
            output: dir.path().join("run"),
            trace_store: Some(report::TraceStoreHandle(store.clone())),
            ..RunOptions::default()
        };
        let summary = run_plan(&plan, &options, &StopHandle::new(), &mut std::io::sink())
            .expect("the plan runs");
        // Judged once per step: one read of the store each.
        assert_eq!(
            store.asked.load(std::sync::atomic::Ordering::SeqCst),
            2,
            "down: {down}"
        );
        let md = summary.markdown();
        let section = md
            .split("## Where the time went (trace_store)\n\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{md}"));
        for step in &summary.steps {
            assert!(step.spans[0].contains(want), "{:?}", step.spans);
            assert!(
                section.contains(&format!(
                    "- **app**, step {}:\n  - {}",
                    step.step, step.spans[0]
                )),
                "{md}"
            );
            let report = std::fs::read_to_string(
                dir.path()
                    .join("run")
                    .join(step.report.as_deref().expect("report")),
            )
            .expect("report.txt");
            assert!(
                report.contains(&format!(
                    "Where the time went (-trace-store): {}",
                    step.spans[0]
                )),
                "{report}"
            );
        }
        if !down {
            assert!(
                summary.steps[0].spans[1].starts_with("traces found: "),
                "{:?}",
                summary.steps[0].spans
            );
        }
        let json = std::fs::read_to_string(dir.path().join("run/summary.json")).expect("json");
        let json: serde_json::Value = serde_json::from_str(&json).expect("summary.json");
        assert_eq!(
            json["steps"][1]["spans"][0],
            summary.steps[1].spans[0].as_str()
        );
        let html = std::fs::read_to_string(dir.path().join("run/index.html")).expect("html");
        assert!(html.contains("<h2>Where the time went (trace_store)</h2>"));
        assert!(
            verdicts(&summary).iter().all(|(_, v)| v == "pass"),
            "{:?}",
            verdicts(&summary)
        );
        folders.push(dir);
    }
    // compare of the two run folders reads each one's step where its limit shows
    // (here its last) back from the store, once per side, and says it in JSON too.
    let names: Vec<String> = (folders.iter())
        .map(|d| d.path().join("run").display().to_string())
        .collect();
    let inputs = match lab::compare::classify(&names).expect("folders") {
        lab::compare::CompareArgs::Folders(folders) => folders,
        lab::compare::CompareArgs::RecordFiles(_) => panic!("folders"),
    };
    let store = std::sync::Arc::new(FakeStore {
        down: false,
        asked: std::sync::atomic::AtomicUsize::new(0),
    });
    let handle = report::TraceStoreHandle(store.clone());
    for format in [report::CompareFormat::Text, report::CompareFormat::Json] {
        let mut out = Vec::new();
        lab::compare::run_compare_folders(&inputs, format, (None, Some(&handle)), &mut out)
            .expect("compare");
        let out = String::from_utf8(out).expect("utf-8");
        if format == report::CompareFormat::Json {
            let json: serde_json::Value = serde_json::from_str(&out).expect(&out);
            let traces = json["traces"].as_array().expect(&out);
            assert_eq!(traces.len(), 2, "{out}");
            assert!(traces.iter().all(|t| t["spans"]["judged"] == true), "{out}");
            assert_eq!(
                json["span_shift"][0]["against"],
                format!("{}#app", names[0]),
                "{out}"
            );
        } else {
            let block = out
                .split("\nWhere the time went (-trace-store):\n")
                .nth(1)
                .expect(&out);
            assert!(
                block.contains(&format!(
                    "{}#app: the slowest traced requests spent",
                    names[1]
                )),
                "{out}"
            );
        }
    }
    assert_eq!(store.asked.load(std::sync::atomic::Ordering::SeqCst), 4);
    // The key wants a traced load and a URL, named with its line.
    for (key, want) in [
        (
            "trace_store = \"http://j:16686\"\n",
            "test.toml:1: trace_store: reads back the traces of the steps' traced requests: give trace = true in [load]",
        ),
        (
            "trace_store = \"j:16686\"\n",
            "test.toml:1: trace_store: \"j:16686\": want the trace store's query API",
        ),
    ] {
        let text = format!(
            "{key}mode = \"sweep\"\n[[variant]]\nname = \"app\"\n[load]\ntargets = [\"GET http://{addr}/fast/1\"]\nrates = [1]\n"
        );
        let err = Plan::parse(&text, "test.toml", Path::new("."))
            .expect_err(key)
            .to_string();
        assert!(err.starts_with(want), "{err}");
    }
}

/// A simulator route that echoes WebSocket messages and holds at most `limit`
/// connections at once (beyond it the upgrade is refused with a 503).
fn room(limit: u32) -> Simulator {
    simulator(&format!(
        r#"[{{"route": "/room", "websocket": {{"mode": "echo", "limit": {limit}}}}}]"#
    ))
}

/// `[load]`'s flow: each user holds a WebSocket while it sends `count` messages, one
/// every 100 ms, each with its send time, timing the echoes' one-way delay.
fn room_load(addr: SocketAddr, count: u32) -> String {
    format!(
        r#"step_duration = "2s"
warmup = "1s"
timeout = "2s"

[[load.step]]
name = "room"
ws = "ws://{addr}/room"
send_time = "regex sent=([0-9]+)"
actions = [{{ send = "sent={{{{send_time_ns}}}}", every = "100ms", count = {count} }}]
"#
    )
}

/// "How many connections does it hold": a search over users against a room that
/// holds six finds six, worded in connections held and messages a second; the step
/// past the limit fails on the connections it did not hold (the upgrades it refused),
/// the confirmation at six holds every bound. Each user holds its connection from the
/// warm-up through the window (3 s of sends), so a passing step's window has no request
/// of its own: it is judged on its connections and messages.
#[test]
fn a_search_over_users_finds_how_many_connections_a_server_holds() {
    let _turn = one_at_a_time();
    let server = room(6);
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = format!(
        r#"mode = "search"
[[variant]]
name = "room"

[load]
think_time = "100ms"
{}
[slo]
success = 0
connections_held = 1.0
message_p99 = "1s"
max_lag = "1s"
achieved = 0.9

[search]
over = "users"
start = 2
max_rate = 16
"#,
        room_load(server.local_addr(), 30)
    );
    let summary = run(&plan, dir.path());
    let offers: Vec<(Option<u64>, &str)> = (summary.steps.iter())
        .map(|s| (s.users, s.verdict.word()))
        .collect();
    let want = [
        (Some(2), "pass"),
        (Some(4), "pass"),
        (Some(8), "fail"),
        (Some(6), "pass"),
        (Some(7), "fail"),
        (Some(6), "pass"),
    ];
    let whys: Vec<(&str, &str)> = (summary.steps.iter())
        .map(|s| (s.step.as_str(), s.why.as_str()))
        .collect();
    assert_eq!(offers, want, "{whys:#?}");
    let answer = &summary.variants[0];
    assert_eq!(
        answer.max_rate_held, None,
        "a search over users finds no rate"
    );
    assert!(
        answer.how.starts_with("search: found and confirmed"),
        "{}",
        answer.how
    );
    let held = answer.held.as_ref().expect("answered in connections held");
    assert_eq!((held.users, held.connections), (Some(6), 6), "{held:?}");
    assert_eq!(
        answer.max_users_held,
        Some(6),
        "compare reads the users held"
    );
    assert!(held.messages_in_per_sec > 0.0, "{held:?}");

    let past = &summary.steps[2];
    assert!(
        past.why
            .contains("connections held 6 at most of 8 users (75.00%, under 100.00%)")
            && past.why.contains("upgrades refused"),
        "{}",
        past.why
    );
    let past = past.connections.as_ref().expect("connections figures");
    assert_eq!(
        (past.asked_by.as_str(), past.asked, past.peak_held),
        ("users", 8, 6)
    );
    assert!(past.refused > 0, "{past:?}");

    let confirmed = &summary.steps[5];
    assert_eq!(confirmed.kind, StepKind::Confirm);
    let figures = confirmed.connections.as_ref().expect("connections figures");
    assert_eq!(
        (figures.held, figures.refused, figures.cut),
        (6, 0, 0),
        "{figures:?}"
    );
    // Six users sending ten a second each, echoed.
    assert!(
        (40.0..=70.0).contains(&figures.messages_out_per_sec)
            && (40.0..=70.0).contains(&figures.messages_in_per_sec),
        "{figures:?}"
    );
    assert!(
        figures.message_p99_ms.is_some_and(|ms| ms < 1000.0),
        "{figures:?}"
    );

    let run_dir = dir.path().join("run");
    let md = std::fs::read_to_string(run_dir.join("summary.md")).expect("summary.md");
    assert!(
        md.contains("| variant | connections held | messages/s in | messages/s out | offered | improvement | how |")
            && md.contains("| room | 6 | ")
            && md.contains("## Connections"),
        "{md}"
    );
    let html = std::fs::read_to_string(run_dir.join("index.html")).expect("index.html");
    assert!(
        html.contains("<h2>Connections held</h2>") && html.contains("id=\"connections\""),
        "index.html has no connections"
    );
}

/// Connections arriving at a rate: each arrival asks for one, so a room that holds ten
/// holds every arrival at 4/s (each held 1 s, about four at once) and turns most away
/// at 40/s; the step is judged on the connections its arrivals opened, and on the
/// messages a second they heard back.
#[test]
fn a_sweep_of_arrivals_judges_the_connections_they_opened() {
    let _turn = one_at_a_time();
    let server = room(10);
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = format!(
        r#"mode = "sweep"
[[variant]]
name = "room"

[load]
rates = [4, 40]
{}
[slo]
success = 0
connections_held = 0.95
messages_in_per_sec = 10
max_lag = "1s"
achieved = 0.9
"#,
        room_load(server.local_addr(), 10)
    );
    let summary = run(&plan, dir.path());
    assert_eq!(
        verdicts(&summary),
        [
            ("000-room-4".to_owned(), "pass".to_owned()),
            ("001-room-40".to_owned(), "fail".to_owned())
        ],
        "{:#?}",
        summary.steps
    );
    let held = summary.steps[0].connections.as_ref().expect("figures");
    // 4/s over the 2 s window: 8 arrivals, give or take the one on its edge.
    assert_eq!(held.asked_by, "arrivals");
    assert!((7..=8).contains(&held.asked), "{held:?}");
    assert!(held.opened >= held.asked && held.refused == 0, "{held:?}");
    let turned_away = &summary.steps[1];
    assert!(
        turned_away.why.contains("connections opened ")
            && turned_away.why.contains(" arrivals (")
            && turned_away.why.contains("upgrades refused"),
        "{}",
        turned_away.why
    );
    assert_eq!(summary.variants[0].max_rate_held, Some(4.0));
    // Its answer: the most the passing step held at once, its arrivals' connections.
    let answer = summary.variants[0].held.as_ref().expect("held");
    assert_eq!((answer.users, answer.connections), (None, held.peak_held));
    assert!((2..=6).contains(&answer.connections), "{answer:?}");
}

/// A search over users against a room that holds 60: its steps' connections and the
/// variant's answer in connections held, as a fixed summary.
fn held_summary() -> RunSummary {
    let connections = |users: u64, held: u64, refused: u64| lab::ConnectionsRow {
        asked_by: "users".to_owned(),
        asked: users,
        held,
        peak_held: held,
        held_at_end: held,
        opened: held + refused.min(3),
        refused,
        cut: u64::from(refused > 0),
        messages_out_per_sec: held as f64 * 10.0,
        messages_in_per_sec: held as f64 * 9.5,
        message_p50_ms: Some(0.6),
        message_p90_ms: Some(2.5),
        message_p99_ms: (held > 0).then_some(12.5),
        message_max_ms: Some(17.0),
    };
    let row = |index: u32, users: u64, kind: StepKind, verdict: StepVerdict, why: &str| StepRow {
        step: format!("{index:03}-room-users-{users}"),
        variant: "room".to_owned(),
        kind,
        repeat: 1,
        users: Some(users),
        achieved_per_sec: users as f64 / 2.0,
        requests: users * 3,
        success: 1.0,
        p50_ms: Some(1.0),
        p90_ms: Some(1900.0),
        p99_ms: Some(1901.0),
        max_ms: Some(1902.0),
        verdict,
        why: why.to_owned(),
        connections: Some(connections(
            users,
            users.min(60),
            users.saturating_sub(60) * 28,
        )),
        ..StepRow::default()
    };
    let held = "every bound held";
    let over =
        "connections held 60 at most of 80 users (75.00%, under 100.00%): 560 upgrades refused";
    // The confirmation's users held from the warm-up through its window: no request
    // of its own there, no success to show.
    let mut through = row(2, 60, StepKind::Confirm, StepVerdict::Pass, held);
    (through.requests, through.achieved_per_sec, through.success) = (0, 0.0, 0.0);
    (
        through.p50_ms,
        through.p90_ms,
        through.p99_ms,
        through.max_ms,
    ) = (None, None, None, None);
    let steps = vec![
        row(0, 40, StepKind::Probe, StepVerdict::Pass, held),
        row(1, 80, StepKind::Probe, StepVerdict::Fail, over),
        through,
    ];
    RunSummary {
        plan: "how many connections".to_owned(),
        plan_file: "held.toml".to_owned(),
        mode: Mode::Search,
        complete: true,
        started: Some("2026-11-27T21:00:00Z".to_owned()),
        variants: vec![VariantResult {
            variant: "room".to_owned(),
            max_rate_held: None,
            max_users_held: Some(6),
            how: "search: found and confirmed in 3 probes, 15s".to_owned(),
            probes: Some(3),
            seconds: Some(15.0),
            held: lab::HeldAnswer::of(&steps[2]),
        }],
        steps,
        ..RunSummary::default()
    }
}

/// The write-up of held connections: the answer in connections held and messages a
/// second, and a connections row per step, in `index.html` and `summary.md` alike.
#[test]
fn held_connections_pages_match_their_golden_files() {
    let summary = held_summary();
    let html = summary.index_html();
    check_golden("held_index.html", &html);
    let md = summary.markdown();
    check_golden("held_summary.md", &md);
    for page in [&html, &md] {
        assert!(page.contains("Connections held") || page.contains("connections held"));
        assert!(page.contains("560 upgrades refused"), "the limit's why");
        assert!(!page.contains("max req/s held"), "no rate answer");
    }
    assert!(
        md.contains("| 002-room-users-60 | room | 60 users | 0.0 | - |"),
        "a window without requests has no success: {md}"
    );
}
