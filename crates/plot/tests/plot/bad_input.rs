//! Bad and odd inputs: each gets a readable page or a clear error naming the input,
//! never a panic or a page with NaN coordinates.

use std::path::Path;

use plot::{PlotConfig, PlotError, RunPlot, Scale};

use crate::fixture::{self, MS, S, START_NS};
use crate::golden::chart;

fn read(paths: &[&Path], config: &PlotConfig) -> Result<RunPlot, PlotError> {
    let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    RunPlot::read(&paths, config)
}

/// The error as the CLI prints it: the message and its causes.
fn error_text(paths: &[&Path]) -> String {
    match read(paths, &PlotConfig::default()) {
        Ok(_) => panic!("{paths:?}: expected an error"),
        Err(err) => {
            let mut text = err.to_string();
            let mut cause = std::error::Error::source(&err);
            while let Some(inner) = cause {
                text.push_str(&format!(": {inner}"));
                cause = inner.source();
            }
            text
        }
    }
}

/// The `d` of every drawn series in an SVG.
fn drawn_paths(svg: &str) -> Vec<&str> {
    svg.split("class=\"series\" d=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect()
}

/// Every chart draws something, and no coordinate or datum is NaN or infinite.
pub fn assert_clean(run: &RunPlot) -> String {
    for chart in run.charts() {
        let svg = run.chart_svg(chart);
        for bad in ["NaN", "inf"] {
            assert!(!svg.contains(bad), "{}: {bad} in\n{svg:.3000}", chart.id);
        }
        let drawn = drawn_paths(&svg);
        assert!(
            drawn.iter().any(|d| !d.is_empty()),
            "{}: nothing drawn",
            chart.id
        );
    }
    let html = run.html();
    let data_start = html.find("id=\"plot-data\">").unwrap();
    let data = &html[data_start..html[data_start..].find("</script>").unwrap() + data_start];
    for bad in ["NaN", "inf"] {
        assert!(!data.contains(bad), "{bad} in the page data");
    }
    html
}

#[test]
fn unreadable_inputs_are_clear_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.llr");
    std::fs::write(&empty, b"").unwrap();
    let garbage = dir.path().join("garbage.bin");
    std::fs::write(&garbage, b"\x00\x01\x02 not a record file").unwrap();
    let missing = dir.path().join("missing.llr");
    let no_records = dir.path().join("no-records.llr");
    fixture::single_attack_run(dir.path(), "no-records.llr", &[]);
    let rows: [(&Path, &str); 4] = [
        (&empty, "empty.llr: input is empty"),
        (&garbage, "garbage.bin: not a record file"),
        (&missing, "missing.llr: No such file"),
        (
            &no_records,
            "no-records.llr: no records or resource samples to plot",
        ),
    ];
    for (path, want) in rows {
        let text = error_text(&[path]);
        assert!(text.contains(want), "{}: {text}", path.display());
    }
}

#[test]
fn a_run_of_only_errors_is_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<record::Record> = (0..300)
        .map(|seq| {
            let mut r = fixture::ok(0, seq, seq * 10 * MS, 2 * S);
            (r.status, r.error) = (0, 2);
            r
        })
        .collect();
    let path = fixture::single_attack_run(dir.path(), "errors.llr", &records);
    let run = read(&[&path], &PlotConfig::default()).unwrap();
    let html = assert_clean(&run);
    let names: Vec<&str> = chart(&run, "latency")
        .series
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["failed"]);
    assert!(
        html.contains("<span class=\"value\">0%</span>"),
        "success tile"
    );
}

#[test]
fn a_single_record_is_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture::single_attack_run(dir.path(), "one.llr", &[fixture::ok(0, 0, 0, 3 * MS)]);
    let run = read(&[&path], &PlotConfig::default()).unwrap();
    assert_clean(&run);
    assert_eq!(run.requests(), 1);
    assert!(run.time_axis().end_s > 0.0);
}

#[test]
fn a_torn_file_is_drawn_up_to_its_cut_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture::golden_run(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let torn = dir.path().join("torn.llr");
    std::fs::write(&torn, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let run = read(&[&torn], &PlotConfig::default()).unwrap();
    assert!(
        run.requests() > 0 && run.requests() < 504,
        "{}",
        run.requests()
    );
    let warnings = run.torn_warnings();
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains("torn.llr: cut at byte"),
        "{warnings:?}"
    );
    let html = assert_clean(&run);
    assert!(html.contains("torn.llr: cut at byte"));
    assert!(html.contains("cut short"));
}

#[test]
fn timeouts_among_fast_responses_get_a_log_scale_and_are_never_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = fixture::Rng::new(3);
    let records: Vec<record::Record> = (0..100_000u64)
        .map(|seq| {
            let latency = if seq % 25_000 == 7 {
                30 * S
            } else {
                100_000 + rng.below(50_000)
            };
            fixture::ok(0, seq, seq * S / 10_000, latency)
        })
        .collect();
    let path = fixture::single_attack_run(dir.path(), "huge.llr", &records);
    let config = PlotConfig::new(None, 50, plot::DEFAULT_EVERY_NS).unwrap();
    let run = read(&[&path], &config).unwrap();
    let html = assert_clean(&run);
    let latency = chart(&run, "latency");
    assert_eq!(latency.scale, Scale::Log);
    let ok = &latency.series[0];
    assert!(ok.x.len() <= 50, "{}", ok.x.len());
    assert_eq!(ok.total, Some(100_000));
    let slow = ok.y.iter().filter(|&&y| y == (30 * S) as f64).count();
    assert_eq!(slow, 4, "every 30 s response is drawn");
    assert!(
        html.contains("<span class=\"value\">30s</span>"),
        "max tile"
    );
}

#[test]
fn vegeta_results_are_drawn_without_generator_charts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vegeta.json");
    let mut lines = String::new();
    for seq in 0..50u64 {
        let (code, error) = if seq % 10 == 9 {
            (500, "500 Internal Server Error")
        } else {
            (200, "")
        };
        lines.push_str(&format!(
            "{{\"attack\":\"\",\"seq\":{seq},\"code\":{code},\"timestamp\":\"{}\",\
             \"latency\":{},\"bytes_out\":0,\"bytes_in\":12,\"error\":\"{error}\",\
             \"body\":null,\"method\":\"GET\",\"url\":\"http://127.0.0.1:8080/\",\
             \"headers\":null}}\n",
            record::format_timestamp(START_NS + seq * 100 * MS),
            5 * MS + seq * 1000
        ));
    }
    std::fs::write(&path, lines).unwrap();
    let run = read(&[&path], &PlotConfig::default()).unwrap();
    assert_clean(&run);
    let ids: Vec<&str> = run.charts().iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        ["latency", "percentiles", "rate", "status", "distribution"]
    );
    let rate = chart(&run, "rate");
    assert!(
        rate.series.iter().all(|s| s.name != "asked"),
        "no asked rate"
    );
}

#[test]
fn names_from_the_input_cannot_break_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.llr");
    let mut header = fixture::header(vec![fixture::attack(
        "</script><script>alert(1)</script>",
        10.0,
    )]);
    header.targets[0].url = "http://127.0.0.1/\"><img src=x onerror=alert(2)>".to_owned();
    let mut record = fixture::ok(0, 0, 0, MS);
    (record.status, record.error) = (503, 1);
    fixture::write_run(&path, &header, &[record], None);
    let run = read(&[&path], &PlotConfig::default()).unwrap();
    let html = assert_clean(&run);
    for raw in ["<script>alert(1)", "<img src=x", "\"><img"] {
        assert!(!html.contains(raw), "{raw} reached the page unescaped");
    }
    assert_eq!(html.matches("<script").count(), 3, "our three scripts only");
}

#[test]
fn a_large_run_keeps_its_page_small() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = fixture::Rng::new(11);
    let records: Vec<record::Record> = (0..400_000u64)
        .map(|seq| {
            let mut r = fixture::ok(0, seq, seq * S / 20_000, 300_000 + rng.below(2 * MS));
            if rng.below(200) == 0 {
                (r.status, r.error) = (503, 1);
            }
            r
        })
        .collect();
    let path = fixture::single_attack_run(dir.path(), "large.llr", &records);
    let run = read(&[&path], &PlotConfig::default()).unwrap();
    let html = assert_clean(&run);
    assert!(html.len() < 1_500_000, "page is {} bytes", html.len());
    for series in &chart(&run, "latency").series {
        let limit = if series.emphasis { 4 * 4000 } else { 4000 };
        assert!(
            series.x.len() <= limit,
            "{}: {}",
            series.name,
            series.x.len()
        );
    }
}
