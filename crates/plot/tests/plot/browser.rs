//! The page in a real browser: headless Chromium opens each page from `file://` with
//! `#selftest` (the page's script redraws every chart under every scale, zooms, hovers,
//! and reports on `<html>`), must log nothing to the console (our script logs nothing,
//! so any console line is an error or a blocked fetch), and takes a screenshot that
//! must show the charts. Screenshots stay in `target/tmp/plot-browser/` to look at.
//!
//! Without Chromium the test is skipped with a loud message, unless
//! `LOADLAB_REQUIRE_BROWSER` is set (CI sets it): then it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use plot::{Chart, ChartPage, PlotConfig, RunPlot, Series, Style, Unit};

use crate::fixture::{self, MS, S};

const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("LOADLAB_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
}

/// What a Chromium run printed.
struct Printed {
    stdout: String,
    stderr: String,
}

/// Runs headless Chromium with a fresh profile in `dir` (its output goes to files
/// there, so a full pipe cannot stall it); kills it past the timeout.
fn run_chromium(chromium: &Path, dir: &Path, args: &[String]) -> Printed {
    std::fs::create_dir_all(dir).unwrap();
    let (stdout, stderr) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap_or_else(|err| panic!("{}: {err}", chromium.display()));
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            panic!("chromium did not finish in {BROWSER_TIMEOUT:?}: {args:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let read = |path: PathBuf| String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
    Printed {
        stdout: read(stdout),
        stderr: read(stderr),
    }
}

/// Console lines Chromium logged for the page (our page logs none).
fn console_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|line| line.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect()
}

/// The value of attribute `name` on the root `<html>` element of a dumped DOM.
fn root_attribute(dom: &str, name: &str) -> Option<String> {
    let start = dom.find("<html")?;
    let tag = &dom[start..start + dom[start..].find('>')?];
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(tag[at..at + tag[at..].find('"')?].to_owned())
}

/// Share of the screenshot's pixels that are not page background or white.
fn inked_share(png: &[u8]) -> f64 {
    let pixmap = resvg::tiny_skia::Pixmap::decode_png(png).unwrap();
    let inked = pixmap
        .pixels()
        .iter()
        .filter(|p| {
            let (r, g, b) = (p.red(), p.green(), p.blue());
            !((r, g, b) == (255, 255, 255) || (r, g, b) == (0xf3, 0xf4, 0xf6))
        })
        .count();
    inked as f64 / pixmap.pixels().len() as f64
}

fn check_page(chromium: &Path, name: &str, run: &RunPlot, shots: &Path) {
    check_html(chromium, name, &run.html(), run.charts().len(), 0.04, shots);
}

/// Opens `html` with `#selftest` and takes a screenshot, `min_inked` of it not
/// background or white (a run page's summary and figures ink more than charts alone).
fn check_html(
    chromium: &Path,
    name: &str,
    html: &str,
    charts: usize,
    min_inked: f64,
    shots: &Path,
) {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join(format!("{name}.html"));
    std::fs::write(&page, html).unwrap();
    let url = format!("file://{}", page.display());

    let output = run_chromium(
        chromium,
        &dir.path().join("dom"),
        &["--dump-dom".to_owned(), format!("{url}#selftest")],
    );
    let dom = &output.stdout;
    let attribute = |key: &str| root_attribute(dom, key).unwrap_or_default();
    assert_eq!(
        attribute("data-plot"),
        "ready",
        "{name}: the script did not finish"
    );
    assert_eq!(attribute("data-selftest"), "ok", "{name}");
    assert_eq!(
        attribute("data-plot-errors"),
        "0",
        "{name}: errors on the page"
    );
    assert_eq!(attribute("data-plot-charts"), charts.to_string(), "{name}");
    let drawn = attribute("data-plot-drawn");
    assert!(
        drawn
            .split(',')
            .all(|n| n.parse::<u32>().is_ok_and(|n| n > 0)),
        "{name}: a chart drew nothing: {drawn}"
    );
    let console = console_lines(&output.stderr);
    assert!(
        console.is_empty(),
        "{name}: console output:\n{}",
        console.join("\n")
    );

    let shot = shots.join(format!("{name}.png"));
    // Tall enough for the whole page: the header, then about 360 px a chart.
    let height = 900 + 360 * charts;
    let output = run_chromium(
        chromium,
        &dir.path().join("shot"),
        &[
            format!("--window-size=1280,{height}"),
            format!("--screenshot={}", shot.display()),
            url,
        ],
    );
    let console = console_lines(&output.stderr);
    assert!(
        console.is_empty(),
        "{name}: console output:\n{}",
        console.join("\n")
    );
    let png = std::fs::read(&shot).unwrap_or_else(|err| panic!("{}: {err}", shot.display()));
    let inked = inked_share(&png);
    assert!(
        inked > min_inked,
        "{name}: the screenshot is nearly blank ({inked:.3})"
    );
    eprintln!("screenshot: {}", shot.display());
}

fn plot_of(path: &Path) -> RunPlot {
    RunPlot::read(&[path.display().to_string()], &PlotConfig::default()).unwrap()
}

#[test]
fn pages_render_in_chromium_without_errors() {
    let Some(chromium) = chromium() else {
        if std::env::var_os("LOADLAB_REQUIRE_BROWSER").is_some() {
            panic!(
                "LOADLAB_REQUIRE_BROWSER is set but chromium is not installed \
                 (.ci/setup/chromium.sh installs it)"
            );
        }
        eprintln!(
            "\n*** SKIPPED: the browser test needs chromium (apt-get install chromium, or \
             source .ci/setup/chromium.sh); set LOADLAB_REQUIRE_BROWSER=1 to fail instead ***\n"
        );
        return;
    };
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plot-browser");
    std::fs::create_dir_all(&shots).unwrap();
    let dir = tempfile::tempdir().unwrap();

    let (golden, _) = crate::golden::golden_plot(plot::DEFAULT_THRESHOLD);
    check_page(&chromium, "golden", &golden, &shots);

    let one = fixture::single_attack_run(dir.path(), "one.llr", &[fixture::ok(0, 0, 0, 3 * MS)]);
    check_page(&chromium, "single-record", &plot_of(&one), &shots);

    let failures: Vec<record::Record> = (0..200)
        .map(|seq| {
            let mut r = fixture::ok(
                0,
                seq,
                seq * 20 * MS,
                if seq % 50 == 0 { 30 * S } else { 120_000 },
            );
            (r.status, r.error) = if seq % 50 == 0 { (0, 2) } else { (503, 1) };
            r
        })
        .collect();
    let failed = fixture::single_attack_run(dir.path(), "failures.llr", &failures);
    check_page(&chromium, "only-failures", &plot_of(&failed), &shots);

    // A flow: the checks panel and table, the checks chart, the distribution by step.
    let (flow, _) = crate::flows::flow_plot(plot::DEFAULT_THRESHOLD);
    check_page(&chromium, "flow", &flow, &shots);

    // A replay: the original's rate line, the panel, the replay-vs-original chart.
    let (replay, _, _keep) = crate::replay::replay_plot();
    check_page(&chromium, "replay", &replay, &shots);

    // Resource charts under the request charts: samples in the run's file, a monitor
    // file alone, and a monitor file beside the run (the axis starts before t = 0).
    let (samples, _) = crate::samples::samples_plot();
    check_page(&chromium, "samples", &samples, &shots);
    let monitor = fixture::monitor_file(dir.path());
    check_page(&chromium, "monitor-only", &plot_of(&monitor), &shots);
    let run = fixture::golden_run(dir.path());
    let paths = [run.display().to_string(), monitor.display().to_string()];
    let beside = RunPlot::read(&paths, &PlotConfig::default()).unwrap();
    check_page(&chromium, "run-and-monitor", &beside, &shots);

    // The diagnosis: its panel above the charts, its markers on every time chart.
    let ramp = plot_of(&fixture::ramp_run(dir.path(), true));
    check_page(&chromium, "diagnosis", &ramp, &shots);
    check_diagnosis_layout(&chromium, &ramp, &shots);

    // Traced requests: linked rings on the latency chart, drawn again on every view.
    let traced = crate::traces::traced_plot(dir.path());
    check_page(&chromium, "traced", &traced, &shots);

    // A page of charts over the offered rate (a run folder's index.html).
    let page = rate_page();
    let html = page.render();
    check_html(
        &chromium,
        "rate-charts",
        &html,
        page.charts().len(),
        0.01,
        &shots,
    );
}

/// Measures the diagnosis panel once the page is drawn: whether it fits its box and the
/// window (nothing to scroll sideways), and whether it ends above the first chart.
const LAYOUT_PROBE: &str = "<script>(function () {
  var root = document.documentElement, panel = document.querySelector('section.diagnosis');
  var chart = document.querySelector('figure.chart-box');
  var fits = !!panel && panel.scrollWidth <= panel.clientWidth && root.scrollWidth <= window.innerWidth;
  var above = !!panel && !!chart && panel.getBoundingClientRect().bottom <= chart.getBoundingClientRect().top;
  root.setAttribute('data-test-panel', fits && above ? 'fits' : 'fits ' + fits + ', above the charts ' + above);
})();</script>";

/// The diagnosis panel at 1400 px and in a narrow window: it fits, above the charts,
/// and every time chart draws its markers (three each: a limit, the knee, a symptom).
fn check_diagnosis_layout(chromium: &Path, run: &RunPlot, shots: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("diagnosis-layout.html");
    let html = run
        .html()
        .replace("</body>", &format!("{LAYOUT_PROBE}</body>"));
    std::fs::write(&page, html).unwrap();
    let url = format!("file://{}", page.display());
    let time_charts = run
        .charts()
        .iter()
        .filter(|c| c.x_axis == plot::XAxis::Time)
        .count();
    for width in [1400, 420] {
        let output = run_chromium(
            chromium,
            &dir.path().join(format!("dom-{width}")),
            &[
                format!("--window-size={width},1000"),
                "--dump-dom".to_owned(),
                url.clone(),
            ],
        );
        let attribute = |key: &str| root_attribute(&output.stdout, key).unwrap_or_default();
        assert_eq!(attribute("data-test-panel"), "fits", "at {width} px");
        assert_eq!(
            attribute("data-plot-markers"),
            (3 * time_charts).to_string(),
            "at {width} px"
        );
        let shot = shots.join(format!("diagnosis-{width}.png"));
        run_chromium(
            chromium,
            &dir.path().join(format!("shot-{width}")),
            &[
                format!("--window-size={width},1600"),
                format!("--screenshot={}", shot.display()),
                url.clone(),
            ],
        );
        eprintln!("screenshot: {}", shot.display());
    }
}

/// Two variants' steps against the offered rate, as `lab` draws a run folder.
fn rate_page() -> ChartPage {
    let rates = vec![50.0, 100.0, 200.0, 400.0];
    let variant = |name: &str, color: &'static str, style: Style, y: Vec<f64>| {
        Series::new(name, color, style).with_points(rates.clone(), y)
    };
    let mut fast = variant(
        "fast",
        "#2563eb",
        Style::LinePoints,
        vec![50.0, 99.0, 198.0, 260.0],
    );
    fast.labels = vec![0, 1, 2, 3];
    let mut throughput = Chart::time_series(
        "throughput",
        "successful requests per second",
        Unit::PerSecond,
        vec![
            Series::new("offered (y = x)", "#9ca3af", Style::Dashed)
                .with_points(vec![0.0, 400.0], vec![0.0, 400.0]),
            fast,
            variant(
                "slow",
                "#ea580c",
                Style::LinePoints,
                vec![50.0, 80.0, 81.0, 79.0],
            ),
        ],
    )
    .over_rate();
    throughput.labels = ["000 pass", "001 pass", "002 pass", "003 <fail>"]
        .map(str::to_owned)
        .to_vec();
    let latency = Chart::time_series(
        "latency",
        "latency p99",
        Unit::Duration,
        vec![variant(
            "fast p99",
            "#2563eb",
            Style::LinePoints,
            vec![2e6, 3e6, 9e6, f64::NAN],
        )],
    )
    .over_rate()
    .with_scale(plot::Scale::Log, true);
    let mut page = ChartPage::new("rate <charts>");
    page.html("<h1>rate charts</h1>\n")
        .chart(throughput)
        .chart(latency);
    page
}
