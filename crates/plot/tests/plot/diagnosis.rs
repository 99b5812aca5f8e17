//! The diagnosis on the page: the panel says what `loadlab report` says of the same
//! file (same evidence, same words), the time charts mark the knee and each finding
//! where they fall on the wall clock, and what the system wrote (a log line) is
//! escaped wherever it shows.

use std::path::Path;

use plot::{MarkerKind, PlotConfig, RunPlot, XAxis};
use report::{ReportConfig, ReportType};

use crate::bad_input::assert_clean;
use crate::fixture::{self, MS, S, SCRIPT_LINE};

fn plot_of(path: &Path) -> RunPlot {
    RunPlot::read(&[path.display().to_string()], &PlotConfig::default()).unwrap()
}

/// The lines of `loadlab report`'s `Diagnosis:` block for `path`, or none.
pub fn report_lines(path: &Path) -> Vec<String> {
    let config = ReportConfig::new(ReportType::Text, None, None).unwrap();
    let text = crate::summary::report_of(path, &config);
    text.lines()
        .skip_while(|line| *line != "Diagnosis:")
        .skip(1)
        .take_while(|line| !line.starts_with("WARNING: "))
        .map(str::to_owned)
        .collect()
}

/// The panel's lines as a reader sees them: tags gone, entities back to characters.
pub fn panel_lines(html: &str) -> Vec<String> {
    let Some(start) = html.find("<section class=\"diagnosis") else {
        return Vec::new();
    };
    let panel = &html[start..start + html[start..].find("</section>").unwrap()];
    panel
        .lines()
        .filter(|line| line.starts_with("<p class=\"headline\">") || line.starts_with("<li>"))
        .map(|line| unescape(&strip_tags(line)))
        .collect()
}

fn strip_tags(line: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in line.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[test]
fn the_panel_says_what_report_says_and_the_time_charts_mark_it() {
    let dir = tempfile::tempdir().unwrap();
    // (case, file, the panel's class or none, the markers' labels in time order)
    type Case<'a> = (&'a str, std::path::PathBuf, Option<&'a str>, &'a [&'a str]);
    let cases: Vec<Case<'_>> = vec![
        (
            "a constant rate, unwatched, some failed: what the answers said",
            fixture::golden_run(dir.path()),
            Some("nothing_watched"),
            &[],
        ),
        (
            "a ramp, unwatched: the knee only",
            fixture::ramp_run(dir.path(), false),
            Some("nothing_watched"),
            &["knee"],
        ),
        (
            "a ramp, watched: a limit before the knee, a symptom after it",
            fixture::ramp_run(dir.path(), true),
            Some("first_limit"),
            &["nginx fds", "knee", "nginx log (timeout)"],
        ),
    ];
    for (case, path, class, labels) in cases {
        let run = plot_of(&path);
        let html = assert_clean(&run);
        let panel = panel_lines(&html);
        assert_eq!(panel, report_lines(&path), "{case}");
        match class {
            Some(class) => {
                let section = format!("<section class=\"diagnosis {class}\"");
                assert!(html.contains(&section), "{case}: no {section}");
                assert!(!panel.is_empty(), "{case}");
            }
            None => assert!(!html.contains("class=\"diagnosis"), "{case}"),
        }
        for chart in run.charts() {
            let got: Vec<&str> = chart.markers.iter().map(|m| m.label.as_str()).collect();
            let want: &[&str] = if chart.x_axis == XAxis::Time {
                labels
            } else {
                &[]
            };
            assert_eq!(got, want, "{case}: {}", chart.id);
            let svg = run.chart_svg(chart);
            assert_eq!(
                svg.contains("class=\"markers\""),
                !want.is_empty(),
                "{case}"
            );
        }
    }
}

#[test]
fn markers_fall_where_the_diagnosis_says_on_the_wall_clock() {
    let dir = tempfile::tempdir().unwrap();
    let run = plot_of(&fixture::ramp_run(dir.path(), true));
    // x = 0 is the first request's intended time, the start of the ramp.
    assert_eq!(run.time_axis().origin_unix_ns, fixture::START_NS);
    let cpu = crate::golden::chart(&run, "cpu");
    // (label, kind, seconds on the axis, the title's start): the samplers read a few
    // ms after each tick (nginx's process 3 ms, its log 6 ms); the knee is a whole
    // second of the ramp.
    let want = [
        (
            "nginx fds",
            MarkerKind::FirstLimit,
            7.0 + 3.0 * MS as f64 / S as f64,
            "first limit nginx fds at 95% of their limit (1024 fds) from 7.0 s",
        ),
        (
            "knee",
            MarkerKind::Knee,
            10.0,
            "the knee: max 200 req/s held; the knee at 220/s offered, 10.0 s",
        ),
        (
            "nginx log (timeout)",
            MarkerKind::Finding,
            14.0 + 6.0 * MS as f64 / S as f64,
            "then: nginx log (timeout) wrote matching lines",
        ),
    ];
    assert_eq!(cpu.markers.len(), want.len(), "{:?}", cpu.markers);
    for (marker, (label, kind, at_s, title)) in cpu.markers.iter().zip(want) {
        assert_eq!((marker.label.as_str(), marker.kind), (label, kind));
        assert!(
            (marker.at_s - at_s).abs() < 1e-9,
            "{label}: {}",
            marker.at_s
        );
        assert!(marker.title.starts_with(title), "{}", marker.title);
    }
    // The same moments as the samples drawn: the fds line steps up at the marker.
    let fds = cpu_step(&run);
    assert!((fds - cpu.markers[0].at_s).abs() < 1e-9, "{fds}");
}

/// Where nginx's fd use first reaches 95% on the fd chart.
fn cpu_step(run: &RunPlot) -> f64 {
    let chart = crate::golden::chart(run, "fd-use");
    let nginx = chart
        .series
        .iter()
        .find(|s| s.name.starts_with("nginx"))
        .unwrap();
    let at = nginx.y.iter().position(|&y| y >= 95.0).unwrap();
    nginx.x[at]
}

#[test]
fn what_the_system_wrote_is_escaped_on_the_page_and_in_chart_files() {
    let dir = tempfile::tempdir().unwrap();
    let run = plot_of(&fixture::ramp_run(dir.path(), true));
    let html = run.html();
    let escaped = "upstream timed out &lt;script&gt;alert(1)&lt;/script&gt; while reading";
    assert!(html.contains(escaped), "the page lacks the escaped line");
    assert!(
        !html.contains(SCRIPT_LINE),
        "the line is on the page as markup"
    );
    // In the chart data (JSON inside <script>), as \u003c.
    assert!(html.contains("\\u003cscript\\u003ealert(1)"));
    // Each of the panel, the report text and the markers' titles quotes it escaped.
    assert!(
        html.matches(escaped).count() >= 3,
        "{}",
        html.matches(escaped).count()
    );
    let svg = run.chart_svg(crate::golden::chart(&run, "latency"));
    assert!(svg.contains(escaped) && !svg.contains(SCRIPT_LINE));
}
