//! Golden page and charts for the fixed run in `fixture.rs`, and what they must say
//! whatever the golden files hold. `UPDATE_GOLDEN=1 cargo test -p loadlab-plot`
//! rewrites the golden files; review the diff.

use std::path::{Path, PathBuf};

use plot::{Chart, DEFAULT_EVERY_NS, PlotConfig, RunPlot, Style};

use crate::fixture::{self, S};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares `actual` with the golden file `name`, or rewrites it with UPDATE_GOLDEN.
pub fn check_golden(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "{}: {err}; run UPDATE_GOLDEN=1 cargo test -p loadlab-plot",
            path.display()
        )
    });
    if expected == actual {
        return;
    }
    let (line, want, got) = expected
        .lines()
        .zip(actual.lines())
        .enumerate()
        .find(|(_, (want, got))| want != got)
        .map_or_else(
            || (expected.lines().count().min(actual.lines().count()), "", ""),
            |(n, (want, got))| (n, want, got),
        );
    let clip = |text: &str| text.chars().take(300).collect::<String>();
    panic!(
        "{name} differs from the golden file at line {}:\n  want: {}\n  got:  {}\n\
         (UPDATE_GOLDEN=1 cargo test -p loadlab-plot rewrites it; review the diff)",
        line + 1,
        clip(want),
        clip(got)
    );
}

pub fn config(threshold: usize) -> PlotConfig {
    PlotConfig::new(Some("golden run".to_owned()), threshold, DEFAULT_EVERY_NS).unwrap()
}

/// The golden run read from a temporary file; outputs name it without its directory.
pub fn golden_plot(threshold: usize) -> (RunPlot, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture::golden_run(dir.path());
    let run = RunPlot::read(&[path.display().to_string()], &config(threshold)).unwrap();
    (run, format!("{}/", dir.path().display()))
}

#[test]
fn golden_page_and_charts() {
    let (run, dir) = golden_plot(plot::DEFAULT_THRESHOLD);
    let ids: Vec<&str> = run.charts().iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        [
            "latency",
            "percentiles",
            "rate",
            "status",
            "distribution",
            "send-lag",
            "generator-cpu",
            "generator-queue"
        ]
    );
    let html = run.html().replace(&dir, "");
    // Nothing to fetch: no sources or links, only in-page references (`url(#clip-...)`).
    // The page's own script (last) can draw a traced request's link, on a traced page.
    let (markup, script) = html.rsplit_once("<script>\n").unwrap();
    for reference in [" src=", " href=", "@import"] {
        assert!(
            !markup.contains(reference),
            "the page refers to {reference}"
        );
    }
    assert!(!script.contains(" src=") && !script.contains("@import"));
    assert_eq!(html.matches("url(").count(), html.matches("url(#").count());
    check_golden("golden.html", &html);
    for chart in run.charts() {
        let svg = run.chart_svg(chart).replace(&dir, "");
        check_golden(&format!("golden-{}.svg", chart.id), &svg);
    }
}

/// The page names the protocol mix beside the attacks, and the report under it has the
/// Protocols row, only when some request went over h2: the golden run (all
/// HTTP/1.1) shows neither.
#[test]
fn the_page_shows_the_protocol_mix_only_when_not_pure_http1() {
    let (golden, _) = golden_plot(plot::DEFAULT_THRESHOLD);
    let html = golden.html();
    assert!(!html.contains("<dt>protocols</dt>") && !html.contains("Protocols "));

    let dir = tempfile::tempdir().unwrap();
    // Every 4th request of the golden run over HTTP/1.1, the rest over h2.
    let records: Vec<record::Record> = fixture::golden_records()
        .into_iter()
        .enumerate()
        .map(|(n, r)| record::Record {
            protocol: if n.is_multiple_of(4) {
                record::Protocol::Http1
            } else {
                record::Protocol::Http2
            },
            ..r
        })
        .collect();
    let path = dir.path().join("mixed.llr");
    let header = fixture::header(vec![
        fixture::attack("search", 40.0),
        fixture::attack("news", 2.0),
    ]);
    fixture::write_run(
        &path,
        &header,
        &records,
        Some(&fixture::end(&[480, 24], 12 * S)),
    );
    let run = RunPlot::read(
        &[path.display().to_string()],
        &config(plot::DEFAULT_THRESHOLD),
    )
    .unwrap();
    let html = run.html();
    assert!(
        html.contains("<dt>protocols</dt><dd>h2 75% (378), http/1.1 25% (126)</dd>"),
        "{:.3000}",
        &html[html.find("<dl").unwrap_or(0)..]
    );
    assert!(html.contains("Protocols     [h2, http/1.1]                    378, 126"));
}

#[test]
fn golden_downsampled_latency() {
    let (run, dir) = golden_plot(60);
    let chart = chart(&run, "latency");
    let svg = run.chart_svg(chart).replace(&dir, "");
    let search_ok = fixture::golden_records()
        .iter()
        .filter(|r| r.attack == 0 && r.is_success())
        .count();
    assert!(
        svg.contains(&format!(" of {search_ok} drawn)")),
        "{svg:.2000}"
    );
    check_golden("golden-threshold-60-latency.svg", &svg);
}

pub fn chart<'a>(run: &'a RunPlot, id: &str) -> &'a Chart {
    run.charts()
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no chart {id}"))
}

fn series<'a>(chart: &'a Chart, name: &str) -> &'a plot::Series {
    chart
        .series
        .iter()
        .find(|s| s.name == name || s.name.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("{}: no series {name}", chart.id))
}

/// Values at whole seconds 1..=10, where every interval is complete.
fn full_seconds(series: &plot::Series) -> Vec<f64> {
    series
        .x
        .iter()
        .zip(&series.y)
        .filter(|(x, _)| (1.0..11.0).contains(*x))
        .map(|(_, y)| *y)
        .collect()
}

#[test]
fn the_golden_run_reads_right() {
    let (run, _) = golden_plot(plot::DEFAULT_THRESHOLD);
    assert_eq!(run.requests(), 504);

    // The scatter: OK and failed per attack; both timeouts are drawn at 30 s.
    let latency = chart(&run, "latency");
    let failed = series(latency, "search failed");
    assert_eq!(failed.style, Style::Points);
    assert!(failed.emphasis);
    let timeouts = failed.y.iter().filter(|&&y| y == (30 * S) as f64).count();
    assert_eq!(timeouts, 2);
    assert_eq!(series(latency, "news OK").x.len(), 24);
    assert!(latency.labels.contains(&"timeout after 30s".to_owned()));

    // Asked: 40/s + 2/s from the headers' constant rates; sent the same.
    let rate = chart(&run, "rate");
    for name in ["asked", "achieved"] {
        let values = full_seconds(series(rate, name));
        assert_eq!(values.len(), 10, "{name}");
        assert!(values.iter().all(|&v| v == 42.0), "{name}: {values:?}");
    }
    // Status codes stack up to what was sent, failures at the bottom.
    let status = chart(&run, "status");
    let records = fixture::golden_records();
    let with_status = |code: u16| records.iter().filter(|r| r.status == code).count();
    let names: Vec<&str> = status.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "0 timeout: 2".to_owned(),
            format!("503: {}", with_status(503)),
            format!("200: {}", with_status(200))
        ]
    );
    assert!(with_status(503) > 5, "the fixture has 503s");
    let sums: f64 = status
        .series
        .iter()
        .flat_map(|s| s.y.iter().copied().filter(|y| y.is_finite()))
        .sum();
    assert_eq!(sums, 504.0);

    // Percentiles per second show the slowdown from 6 s on.
    let p50 = series(chart(&run, "percentiles"), "p50");
    let at = |t: f64| p50.y[p50.x.iter().position(|&x| x == t).unwrap()];
    assert!(at(2.5) < 10e6 && at(9.5) > 40e6, "{:?}", p50.y);

    // The percentile curve: all requests and each attack, ending at the slowest.
    let distribution = chart(&run, "distribution");
    let all = series(distribution, "all");
    assert_eq!(all.y.last().copied(), Some((30 * S) as f64));
    assert!(
        all.name.starts_with("all: p50 ") && all.name.ends_with(", max 30s"),
        "{}",
        all.name
    );
    assert!(
        series(distribution, "news")
            .y
            .iter()
            .all(|&y| y >= S as f64)
    );

    // The generator: CPU between samples, in % of one core.
    let cpu = series(chart(&run, "generator-cpu"), "CPU");
    assert!((cpu.y[0] - 3.1).abs() < 1e-9, "{:?}", cpu.y);
    assert!((cpu.y[1] - 3.3).abs() < 1e-9, "{:?}", cpu.y);
}

/// A run whose stats samples counted stream connections gets the connections held,
/// messages a second and message latency charts, under the request charts; the
/// golden run, without them, has none (above).
#[test]
fn a_run_with_stream_connections_charts_them_over_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture::streams_run(dir.path());
    let run = RunPlot::read(
        &[path.display().to_string()],
        &config(plot::DEFAULT_THRESHOLD),
    )
    .unwrap();
    let ids: Vec<&str> = run.charts().iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        [
            "latency",
            "percentiles",
            "rate",
            "status",
            "streams-open",
            "streams-messages",
            "streams-latency",
            "distribution",
            "send-lag",
            "generator-cpu",
            "generator-queue"
        ]
    );
    let dir_text = format!("{}/", dir.path().display());
    for chart in run.charts().iter().filter(|c| c.id.starts_with("streams-")) {
        let svg = run.chart_svg(chart).replace(&dir_text, "");
        check_golden(&format!("golden-{}.svg", chart.id), &svg);
    }
    let open = &run.charts()[4].series[0];
    assert_eq!(open.name, "open");
    assert_eq!(
        open.y.iter().copied().fold(0.0, f64::max),
        30.0,
        "{:?}",
        open.y
    );
    let html = run.html();
    assert!(html.contains("Connections held") && html.contains("Message latency"));
}
