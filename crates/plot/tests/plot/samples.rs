//! Resource samples on the page: the golden run with `attack -monitor` samples in the
//! same file (golden page and resource charts), a monitor file on its own, a monitor
//! file beside the run (inputs merged, one time axis), gaps, and chart files.

use std::path::Path;

use plot::{Chart, Format, PlotConfig, RunPlot, Scale, Style, TimeZero, Unit};

use crate::bad_input::assert_clean;
use crate::fixture::{self, APP_GONE, PROM_DOWN, S, START_NS};
use crate::golden::{chart, check_golden, config};

fn read(paths: &[&Path], config: &PlotConfig) -> RunPlot {
    let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    RunPlot::read(&paths, config).unwrap()
}

/// The golden run with samples, read from a temporary file; outputs name it without
/// its directory.
pub fn samples_plot() -> (RunPlot, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture::golden_run_with_samples(dir.path());
    let run = read(&[&path], &config(plot::DEFAULT_THRESHOLD));
    (run, format!("{}/", dir.path().display()))
}

const RESOURCE_CHARTS: [&str; 12] = [
    "cpu",
    "cpu-cores",
    "memory",
    "connections",
    "fd-use",
    "tcp-errors",
    "network",
    "database-transactions",
    "database-connections",
    "other-count",
    "other-seconds",
    "other-values",
];

/// Each chart's x domain as the page's data gives it: `[min, max]`.
fn x_domains(html: &str) -> Vec<(String, String)> {
    html.split("{\"id\":\"")
        .skip(1)
        .map(|rest| {
            let id = rest[..rest.find('"').unwrap()].to_owned();
            let xd = &rest[rest.find("\"xd\":[").unwrap() + 6..];
            (id, xd[..xd.find(']').unwrap()].to_owned())
        })
        .collect()
}

/// Every time chart has the same x domain (the distribution's is its own).
fn assert_one_time_axis(html: &str) -> String {
    let domains: Vec<(String, String)> = x_domains(html)
        .into_iter()
        .filter(|(id, _)| id != "distribution")
        .collect();
    assert!(domains.len() > 1);
    let first = domains[0].1.clone();
    for (id, domain) in &domains {
        assert_eq!(*domain, first, "{id} is not on the page's time axis");
    }
    first
}

fn series<'a>(chart: &'a Chart, prefix: &str) -> &'a plot::Series {
    chart
        .series
        .iter()
        .find(|s| s.name.starts_with(prefix))
        .unwrap_or_else(|| {
            let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
            panic!("{}: no series {prefix} in {names:?}", chart.id)
        })
}

/// x of the points with no value.
fn gaps_at(series: &plot::Series) -> Vec<f64> {
    series
        .x
        .iter()
        .zip(&series.y)
        .filter(|(_, y)| y.is_nan())
        .map(|(x, _)| (x * 10.0).round() / 10.0)
        .collect()
}

#[test]
fn golden_page_with_samples() {
    let (run, dir) = samples_plot();
    let ids: Vec<&str> = run.charts().iter().map(|c| c.id).collect();
    let mut want = vec!["latency", "percentiles", "rate", "status"];
    want.extend(RESOURCE_CHARTS);
    want.extend([
        "distribution",
        "send-lag",
        "generator-cpu",
        "generator-queue",
    ]);
    assert_eq!(ids, want);
    let html = assert_clean(&run).replace(&dir, "");
    check_golden("golden-samples.html", &html);
    for id in RESOURCE_CHARTS {
        let svg = run.chart_svg(chart(&run, id)).replace(&dir, "");
        check_golden(&format!("golden-samples-{id}.svg"), &svg);
    }
    // Samples start with the run and end after it: the axis starts at 0 as before.
    let axis = run.time_axis();
    assert_eq!((axis.zero, axis.start_s), (TimeZero::FirstRequest, 0.0));
    assert!(axis.end_s > 13.0, "{axis:?}");
    assert_eq!(assert_one_time_axis(&html), format!("0,{}", axis.end_s));
}

#[test]
fn the_samples_read_right() {
    let (run, _) = samples_plot();
    let html = run.html();
    // The report's resource rows and diagnosis, as `loadlab report` prints them (the
    // diagnosis says what the resource warnings would, so neither shows them).
    assert!(
        !html.contains("WARNING: nginx at 98% of one core"),
        "folded"
    );
    assert!(
        !html.contains("<strong>Warning:</strong> nginx at 98%"),
        "folded"
    );
    for text in [
        "Process CPU   [group: peak, mean]",
        "nginx: 99.00%",
        "first limit nginx held at 98% of one core (its allowance was not sampled) from 6.0 s",
        "<dt>samples</dt><dd>host, nginx, app, postgres postgres://loadlab:REDACTED@127.0.0.1:5432/shop, prom http://127.0.0.1:9113/metrics",
    ] {
        assert!(html.contains(text), "the page lacks {text:?}");
    }

    // CPU: the host first (dark), then the groups in their page-wide colours.
    let cpu = chart(&run, "cpu");
    let names: Vec<&str> = cpu.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "host: peak 99.6%",
            "host iowait: peak 2%",
            "nginx: peak 99%",
            "app: peak 140%"
        ]
    );
    assert_eq!((cpu.unit, cpu.scale), (Unit::Percent, Scale::Linear));
    assert!(cpu.caption.contains("all its 2 cores"), "{}", cpu.caption);
    let app = series(cpu, "app");
    assert_eq!(app.color, series(chart(&run, "memory"), "app").color);
    // The app is gone at 10 and 11 s: its line breaks and the gap is shaded, named.
    assert_eq!(gaps_at(app), [10.0, 11.0]);
    let band = cpu
        .bands
        .iter()
        .find(|b| b.label.contains(APP_GONE))
        .unwrap();
    assert!(band.from_s < 10.0 && band.to_s > 11.0, "{band:?}");
    assert!(cpu.caption.contains(&format!("app: {APP_GONE}: 2 samples")));

    // Memory: host memory dwarfs the processes, so the chart starts on a log scale;
    // total memory is near enough to the use to be drawn as its ceiling.
    let memory = chart(&run, "memory");
    assert_eq!(
        (memory.unit, memory.scale, memory.toggle),
        (Unit::Bytes, Scale::Log, true)
    );
    assert!(
        memory.caption.contains("of 8 GiB in all"),
        "{}",
        memory.caption
    );
    assert_eq!(series(memory, "host total").name, "host total: 8 GiB");

    // fds are summed over a group's processes, the limit is per process: the limit
    // is not drawn against the sum, the fullest process's share of it is.
    let connections = chart(&run, "connections");
    assert!(connections.series.iter().all(|s| !s.name.contains("limit")));
    let fd_use = chart(&run, "fd-use");
    assert_eq!((fd_use.unit, fd_use.scale), (Unit::Percent, Scale::Linear));
    let nginx = series(fd_use, "nginx");
    let nginx_peak = nginx
        .y
        .iter()
        .copied()
        .filter(|y| y.is_finite())
        .fold(0.0, f64::max);
    assert!(nginx_peak > 60.0 && nginx_peak < 100.0, "{nginx_peak}");
    assert_eq!(nginx.color, series(chart(&run, "cpu"), "nginx").color);
    assert!(
        fd_use.caption.contains("too many open files"),
        "{}",
        fd_use.caption
    );
    let limit = series(fd_use, "limit");
    assert_eq!((limit.y[0], limit.style), (100.0, Style::Dashed));

    // A counter reset names one series: only its line breaks.
    let errors = chart(&run, "tcp-errors");
    assert_eq!(gaps_at(series(errors, "retransmits")), [4.0]);
    assert!(gaps_at(series(errors, "listen overflows")).is_empty());

    // Prometheus durations are drawn as durations; the endpoint's outage is shaded.
    let seconds = chart(&run, "other-seconds");
    assert_eq!(seconds.title, "Prometheus: seconds");
    assert_eq!(seconds.unit, Unit::Duration);
    let p99 = series(seconds, "http_request_duration_seconds{quantile=\"0.99\"}");
    let p99_peak_ns = p99
        .y
        .iter()
        .copied()
        .filter(|y| y.is_finite())
        .fold(0.0, f64::max);
    assert!((p99_peak_ns - 0.31e9).abs() < 1.0, "{p99_peak_ns}");
    assert_eq!(gaps_at(p99), [9.0, 10.0]);
    assert!(seconds.bands[0].label.contains(PROM_DOWN));

    // The database pool fills at 6 s.
    let pool = series(chart(&run, "database-connections"), "shop");
    assert_eq!(pool.y.iter().copied().fold(0.0, f64::max), 20.0);
}

#[test]
fn a_monitor_file_alone_is_a_page_of_resource_charts() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture::monitor_file(dir.path());
    let run = read(&[&path], &PlotConfig::default());
    assert_eq!(run.requests(), 0);
    let ids: Vec<&str> = run.charts().iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        [
            "cpu",
            "memory",
            "connections",
            "database-transactions",
            "database-connections"
        ]
    );
    let axis = run.time_axis();
    assert_eq!(axis.zero, TimeZero::FirstSample);
    assert_eq!(axis.origin_unix_ns, START_NS - 3 * S);
    assert_eq!(axis.start_s, 0.0);
    let html = assert_clean(&run);
    for text in [
        "(the first resource sample); no requests",
        "<summary>Resources</summary>",
        "Host CPU      [peak, mean]",
        "Database      [server: peak tx/s, mean, conns]",
        // The monitor's gaps, said as what could not be judged.
        "not judged: postgres://loadlab:REDACTED@127.0.0.1:5432/shop: 2 readings missing from",
        "time from the first sample",
        "resource samples &middot;",
    ] {
        assert!(html.contains(text), "the page lacks {text:?}");
    }
    for absent in [
        "Requests      [total",
        "class=\"figures\"",
        "id=\"chart-latency\"",
    ] {
        assert!(!html.contains(absent), "the page has {absent:?}");
    }
    // The login refused at 5 and 6 s (8 and 9 s from the first sample).
    let tx = chart(&run, "database-transactions");
    assert_eq!(gaps_at(&tx.series[0]), [8.0, 9.0]);
    assert!(
        tx.bands[0].label.contains("login refused"),
        "{:?}",
        tx.bands
    );
}

#[test]
fn a_monitor_file_beside_the_run_shares_its_time_axis() {
    let dir = tempfile::tempdir().unwrap();
    let run_path = fixture::golden_run(dir.path());
    let monitor = fixture::monitor_file(dir.path());
    // Either order: the inputs merge by send time and sample time.
    for paths in [[&run_path, &monitor], [&monitor, &run_path]] {
        let run = read(&paths.map(|p| p.as_path()), &PlotConfig::default());
        assert_eq!(run.requests(), 504);
        let axis = run.time_axis();
        assert_eq!(axis.zero, TimeZero::FirstRequest);
        // The monitor started 3 s before the first request (its band half an
        // interval earlier) and stopped 16 s after: the axis grows to show both.
        assert!((-3.6..=-3.0).contains(&axis.start_s), "{axis:?}");
        assert!(axis.end_s >= 16.0, "{axis:?}");
        let html = assert_clean(&run);
        assert_one_time_axis(&html);
        let cpu = chart(&run, "cpu");
        let host = &cpu.series[0];
        assert_eq!(host.x.first().copied(), Some(-3.0));
        // The latency chart starts at the same place as the resource charts.
        assert!(
            run.chart_svg(chart(&run, "latency"))
                .contains(">-2s</text>")
        );
        assert!(html.contains("from t = -3s to 16s"), "samples fact");
    }
}

#[test]
fn resource_charts_are_written_as_files_too() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = samples_plot();
    let files = plot::ChartFiles::new(&format!("{}/", dir.path().display()));
    let written = run.write_chart_files(&files, Format::Svg).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for id in RESOURCE_CHARTS {
        assert!(names.contains(&format!("{id}.svg")), "{names:?}");
    }
    let cpu = std::fs::read_to_string(dir.path().join("cpu.svg")).unwrap();
    assert!(cpu.contains("golden run: CPU"), "{cpu:.500}");
    assert!(cpu.contains("class=\"bands\""));
}

#[test]
fn pages_without_samples_draw_no_resource_chart() {
    let (run, _) = crate::golden::golden_plot(plot::DEFAULT_THRESHOLD);
    assert!(
        run.charts()
            .iter()
            .all(|c| !RESOURCE_CHARTS.contains(&c.id))
    );
    assert!(!run.html().contains("<dt>samples</dt>"));
}
