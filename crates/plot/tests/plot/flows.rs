//! A flow run on the page: the checks panel and tile, each check's failures over time
//! on the shared axis, the latency distribution by step; golden page and charts. A
//! run without checks shows none of it (`golden.rs` holds its page as it was).

use plot::{Chart, RunPlot, Style, Unit};
use record::Record;

use crate::fixture::{self, S};
use crate::golden::{chart, check_golden, config};

/// The flow run read from a temporary file; outputs name it without its directory.
pub fn flow_plot(threshold: usize) -> (RunPlot, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture::flow_run(dir.path());
    let run = RunPlot::read(&[path.display().to_string()], &config(threshold)).unwrap();
    (run, format!("{}/", dir.path().display()))
}

#[test]
fn golden_flow_page_and_charts() {
    let (run, dir) = flow_plot(plot::DEFAULT_THRESHOLD);
    let ids: Vec<&str> = run.charts().iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        [
            "latency",
            "percentiles",
            "rate",
            "status",
            "checks",
            "distribution",
            "step-distribution",
            "send-lag",
            "generator-cpu",
            "generator-queue"
        ]
    );
    check_golden("golden-flow.html", &run.html().replace(&dir, ""));
    for id in ["checks", "step-distribution"] {
        let svg = run.chart_svg(chart(&run, id)).replace(&dir, "");
        check_golden(&format!("golden-flow-{id}.svg"), &svg);
    }
}

/// Passes and failures of each check of `step` (a target id), counted from the records.
fn counted(records: &[Record], step: u32, checks: usize) -> Vec<(u64, u64)> {
    (0..checks)
        .map(|bit| {
            let runs = records.iter().filter(|r| r.target == step);
            runs.fold((0, 0), |(passed, failed), r| {
                if r.check_failed(bit) {
                    (passed, failed + 1)
                } else {
                    (passed + 1, failed)
                }
            })
        })
        .collect()
}

#[test]
fn the_checks_panel_counts_every_check_and_names_the_worst() {
    let (run, _) = flow_plot(plot::DEFAULT_THRESHOLD);
    let html = run.html();
    let records = fixture::flow_records();
    let names = [
        ("login: status 200", 0, 0),
        ("login: json $.token exists", 0, 1),
        ("list: status 200", 1, 0),
        ("list: has items", 1, 1),
        ("item: status 200", 2, 0),
        ("item: latency &lt; 200ms", 2, 1),
        ("item: body contains &quot;id&quot;", 2, 2),
    ];
    let mut rows = Vec::new();
    for (name, step, bit) in names {
        let (passed, failed) = counted(&records, step, 3)[bit];
        let row = format!(
            "<td>{name}</td><td>{}</td><td>{passed}</td><td>{failed}</td>",
            passed + failed
        );
        assert!(html.contains(&row), "no row {row}");
        rows.push((name, passed, failed));
    }
    // Every login answered 200; every other check failed some time.
    let failing: Vec<bool> = rows.iter().map(|(_, _, failed)| *failed > 0).collect();
    assert_eq!(
        failing,
        [false, true, true, true, true, true, true],
        "{rows:?}"
    );
    assert!(html.contains("<tr><td>login: status 200</td>"));
    assert!(html.contains("<tr class=\"bad\"><td>list: has items</td>"));
    // The slow items fail their latency check most, as a share of their runs.
    let (_, passed, failed) = rows[5];
    let share = format!(
        "worst: item: latency &lt; 200ms, {} passed ({failed} of {} failed)",
        pass_rate(passed, passed + failed),
        passed + failed
    );
    assert!(html.contains(&share), "{share}");
    assert!(html.contains("<section class=\"checks failed\""));
    assert!(html.contains("<span class=\"label\">checks</span>"));
    // The targets read as their steps.
    assert!(html.contains("<dd>login: POST http://127.0.0.1:8080/login, list: GET"));
}

/// The page's rule for a pass rate, as the test reads it: hundredths rounded down.
fn pass_rate(passed: u64, runs: u64) -> String {
    let hundredths = passed * 10_000 / runs;
    let text = format!("{}.{:02}", hundredths / 100, hundredths % 100);
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}

fn series<'a>(chart: &'a Chart, name: &str) -> &'a plot::Series {
    chart
        .series
        .iter()
        .find(|s| s.name.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("{}: no series {name}", chart.id))
}

/// The share that failed in each whole second `from..to`.
fn per_second(series: &plot::Series, from: u64, to: u64) -> Vec<f64> {
    (from..to)
        .map(|second| {
            let x = second as f64 + 0.5;
            let at = series.x.iter().position(|&t| t == x).unwrap();
            series.y[at]
        })
        .collect()
}

#[test]
fn the_checks_chart_shows_when_each_check_failed() {
    let (run, _) = flow_plot(plot::DEFAULT_THRESHOLD);
    let checks = chart(&run, "checks");
    assert_eq!(checks.unit, Unit::Share);
    assert_eq!(checks.series.len(), 7, "every check drawn apart");
    assert!(checks.series.iter().all(|s| s.style == Style::Line));
    let time_axis = run.time_axis();
    let rate = chart(&run, "rate");
    assert!(rate.series[0].x.len() == checks.series[0].x.len());
    assert!(time_axis.end_s >= 12.0);
    // No token from 8 s, one login in four: 0% before, 25% of logins after.
    let token = series(checks, "login: json $.token exists");
    assert_eq!(per_second(token, 0, 8), [0.0; 8]);
    assert_eq!(per_second(token, 8, 12), [25.0; 4]);
    // Items slow down at 6 s: their latency check fails only from then.
    let latency = series(checks, "item: latency < 200ms");
    assert!(per_second(latency, 0, 6).iter().all(|&y| y == 0.0));
    assert!(per_second(latency, 6, 12).iter().all(|&y| y > 0.0));
    // The legend says each check's failures over the run.
    let failed = counted(&fixture::flow_records(), 0, 2)[1].1;
    assert_eq!(
        token.name,
        format!("login: json $.token exists: {failed} failed")
    );
}

#[test]
fn more_checks_than_lines_keep_the_worst_apart() {
    // One step with 12 checks; check i fails in i of every 12 requests.
    let dir = tempfile::tempdir().unwrap();
    let checks: Vec<String> = (0..12).map(|i| format!("check {i:02}")).collect();
    let mut header = fixture::header(vec![fixture::attack("one", 24.0)]);
    header.targets[0].step = Some("only".to_owned());
    header.targets[0].checks.clone_from(&checks);
    let records: Vec<Record> = (0..240u64)
        .map(|seq| {
            let failed = (0..12u32)
                .filter(|&i| seq % 12 < u64::from(i))
                .fold(0, |bits, i| bits | 1 << i);
            Record {
                target: 0,
                checks_failed: failed,
                ..fixture::ok(0, seq, seq * S / 24, 5_000_000)
            }
        })
        .collect();
    let path = dir.path().join("many.llr");
    fixture::write_run(&path, &header, &records, None);
    let run = RunPlot::read(&[path.display().to_string()], &config(1000)).unwrap();
    let names: Vec<String> = chart(&run, "checks")
        .series
        .iter()
        .map(|s| s.name.split(':').next().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "only",
            "only",
            "only",
            "only",
            "only",
            "only",
            "only",
            "5 other checks"
        ]
    );
    let shown: Vec<&str> = chart(&run, "checks").series[..7]
        .iter()
        .map(|s| &s.name[6..14])
        .collect();
    assert_eq!(
        shown,
        [
            "check 05", "check 06", "check 07", "check 08", "check 09", "check 10", "check 11"
        ]
    );
    // One step: no distribution by step.
    assert!(run.charts().iter().all(|c| c.id != "step-distribution"));
}

#[test]
fn a_run_without_checks_has_no_checks_anywhere() {
    let (run, _) = crate::golden::golden_plot(plot::DEFAULT_THRESHOLD);
    let html = run.html();
    assert!(run.charts().iter().all(|c| c.id != "checks"));
    for text in [
        "class=\"checks",
        "<span class=\"label\">checks</span>",
        "Checks",
    ] {
        assert!(!html.contains(text), "{text}");
    }
}

#[test]
fn the_step_distribution_has_a_curve_per_step() {
    let (run, _) = flow_plot(plot::DEFAULT_THRESHOLD);
    let steps = chart(&run, "step-distribution");
    let names: Vec<&str> = steps
        .series
        .iter()
        .map(|s| s.name.split(':').next().unwrap())
        .collect();
    assert_eq!(names, ["login", "list", "item"]);
    // The item timeout ends its curve at 30 s.
    assert_eq!(steps.series[2].y.last().copied(), Some((30 * S) as f64));
}

#[test]
fn a_flow_s_rate_chart_plots_its_runs_started_against_the_runs_asked() {
    let (run, _) = flow_plot(plot::DEFAULT_THRESHOLD);
    let rate = chart(&run, "rate");
    assert_eq!(rate.title, "Runs started and requests per second");
    let series = |name: &str| {
        let found = rate.series.iter().find(|s| s.name == name);
        found
            .unwrap_or_else(|| panic!("no {name} series"))
            .y
            .clone()
    };
    // A run every 250 ms, each of up to 4 requests (from 8 s one login in four is
    // alone), counted from the records by the second they were sent in.
    let records = fixture::flow_records();
    let per_second = |second: u64, first_only: bool| {
        let in_second = |r: &&Record| (r.sent_unix_ns() - fixture::START_NS) / S == second;
        let starts = |r: &&Record| !first_only || r.seq & 0xffff == 0;
        records.iter().filter(in_second).filter(starts).count() as f64
    };
    let (asked, achieved, requests) = (series("asked"), series("achieved"), series("requests"));
    for second in 0..12 {
        let at = second as usize;
        assert_eq!(asked[at], 4.0, "second {second}: runs asked");
        assert_eq!(achieved[at], per_second(second, true), "second {second}");
        assert_eq!(achieved[at], 4.0, "second {second}: runs started");
        assert_eq!(requests[at], per_second(second, false), "second {second}");
        assert!(
            requests[at] > achieved[at],
            "second {second}: the steps of the runs"
        );
    }
}
