//! `loadlab plot` as a binary: what the library tests of `loadlab-plot` cannot see:
//! vegeta's single-dash flags, stdin, exit codes, messages, and a closed pipe.

#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use record::{
    AttackInfo, Compression, LoadModel, Record, RecordWriter, RunHeader, SampleBatch, SampleFrame,
    SampleGap, SampleValue, SamplerInfo, SeriesInfo, SeriesKind, TargetInfo,
};

const START_NS: u64 = 1_763_700_000_000_000_000;

/// A fresh directory for one test under cargo's temporary directory for tests.
fn temp_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("plot-cli-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = loadlab()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A small record file: 200 requests at 100/s, every 20th a 503.
fn run_file(dir: &Path) -> PathBuf {
    let path = dir.join("run.llr");
    let header = RunHeader {
        start_unix_ns: START_NS,
        attacks: vec![AttackInfo {
            name: "cli".to_owned(),
            model: LoadModel::Open,
            rate_per_sec: Some(100.0),
            ..AttackInfo::default()
        }],
        targets: vec![TargetInfo {
            step: None,
            checks: Vec::new(),
            method: "GET".to_owned(),
            url: "http://127.0.0.1:8080/".to_owned(),
        }],
        ..RunHeader::default()
    };
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = RecordWriter::new(file, &header, Compression::Zstd { level: 3 }).unwrap();
    for seq in 0..200u64 {
        let status = if seq % 20 == 19 { 500 } else { 200 };
        writer.push(&Record {
            seq,
            intended_unix_ns: START_NS + seq * 10_000_000,
            send_lag_ns: 5_000,
            latency_ns: 1_000_000 + seq * 10_000,
            status,
            bytes_in: 100,
            bytes_out: 40,
            ..Record::default()
        });
    }
    writer.close().unwrap();
    path
}

#[test]
fn plots_a_file_with_vegeta_flags() {
    let dir = temp_dir("plots_a_file_with_vegeta_flags");
    let file = run_file(&dir);
    let out = run(
        &[
            "plot",
            "-title=cli run",
            "-threshold",
            "50",
            file.to_str().unwrap(),
        ],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = text(&out.stdout);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<title>cli run</title>"));
    assert!(
        html.contains(" of 190 drawn)"),
        "-threshold 50 reduces the 190 OK requests"
    );
}

#[test]
fn plots_stdin_into_an_output_file() {
    let dir = temp_dir("plots_stdin_into_an_output_file");
    let bytes = std::fs::read(run_file(&dir)).unwrap();
    let page = &dir.join("page.html");
    let out = run(&["plot", "-output", page.to_str().unwrap()], &bytes);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let html = std::fs::read_to_string(page).unwrap();
    assert!(html.contains("stdin (record file"), "the input is named");
}

#[test]
fn writes_chart_files_and_lists_them() {
    let dir = temp_dir("writes_chart_files_and_lists_them");
    let file = run_file(&dir);
    let charts = &dir.join("charts/");
    for (format, magic) in [("svg", &b"<svg"[..]), ("png", &b"\x89PNG"[..])] {
        let out = run(
            &[
                "plot",
                &format!("-format={format}"),
                "-output",
                &charts.display().to_string(),
                file.to_str().unwrap(),
            ],
            b"",
        );
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        let listed: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
        assert!(listed.len() >= 5, "{listed:?}");
        for path in &listed {
            assert!(path.ends_with(&format!(".{format}")), "{path}");
            let bytes = std::fs::read(path).unwrap();
            assert!(bytes.starts_with(magic), "{path}");
        }
    }
}

#[test]
fn bad_input_and_flags_fail_with_a_clear_message() {
    let dir = temp_dir("bad_input_and_flags_fail_with_a_clear_message");
    let empty = &dir.join("empty.llr");
    std::fs::write(empty.clone(), b"").unwrap();
    let file = run_file(&dir);
    let rows: [(Vec<&str>, &str); 4] = [
        (
            vec!["plot", empty.to_str().unwrap()],
            "empty.llr: input is empty",
        ),
        (
            vec!["plot", "-format", "png", file.to_str().unwrap()],
            "-format png: writes one file per chart",
        ),
        (
            vec!["plot", "-format", "gif", file.to_str().unwrap()],
            "-format: unknown format \"gif\"",
        ),
        (
            vec!["plot", "-every", "soon", file.to_str().unwrap()],
            "-every",
        ),
    ];
    for (args, want) in rows {
        let out = run(&args, b"");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: no page on failure");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let dir = temp_dir("a_closed_pipe_is_not_an_error");
    let file = run_file(&dir);
    let mut child = loadlab()
        .args(["plot", file.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut head = [0u8; 64];
    stdout.read_exact(&mut head).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A monitor file (`loadlab monitor -output run.mon`): the host's CPU and nginx's, one
/// reading a second from 1 s before the run to 1 s after, nginx gone for 0.5 s.
fn monitor_file(dir: &Path) -> PathBuf {
    let path = dir.join("run.mon");
    let header = RunHeader {
        tool: "loadlab monitor".to_owned(),
        start_unix_ns: START_NS - 1_000_000_000,
        ..RunHeader::default()
    };
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = RecordWriter::new(file, &header, Compression::Zstd { level: 3 }).unwrap();
    let series = |sampler, name: &str, label: (&str, &str)| SeriesInfo {
        sampler,
        name: name.to_owned(),
        labels: [(label.0.to_owned(), label.1.to_owned())]
            .into_iter()
            .collect(),
        unit: "percent".to_owned(),
        kind: SeriesKind::Gauge,
    };
    let mut frame = SampleFrame {
        samplers: vec![
            SamplerInfo {
                kind: "host".into(),
                name: "host".to_owned(),
            },
            SamplerInfo {
                kind: "process".into(),
                name: "nginx".to_owned(),
            },
        ],
        series: vec![
            series(0, "host.cpu_percent", ("cpu", "all")),
            series(1, "process.cpu_percent", ("group", "nginx")),
        ],
        ..SampleFrame::default()
    };
    for tenth in 0..=40u64 {
        let at_unix_ns = START_NS - 1_000_000_000 + tenth * 100_000_000;
        let gone = (15..20).contains(&tenth);
        frame.batch = SampleBatch {
            at_unix_ns,
            values: [(0, 30.0 + tenth as f64)]
                .into_iter()
                .chain((!gone).then_some((1, 50.0 + tenth as f64)))
                .map(|(series, value)| SampleValue { series, value })
                .collect(),
            gaps: gone
                .then(|| SampleGap {
                    sampler: 1,
                    series: None,
                    reason: "no process matches nginx".to_owned(),
                })
                .into_iter()
                .collect(),
        };
        writer.write_samples(&frame).unwrap();
        frame.first_sampler += frame.samplers.len() as u32;
        frame.first_series += frame.series.len() as u32;
        frame.samplers.clear();
        frame.series.clear();
    }
    writer.close().unwrap();
    path
}

#[test]
fn plots_a_monitor_file_beside_the_run_and_alone() {
    let dir = temp_dir("plots_a_monitor_file_beside_the_run_and_alone");
    let run_path = run_file(&dir);
    let monitor = monitor_file(&dir);
    let out = run(
        &[
            "plot",
            run_path.to_str().unwrap(),
            monitor.to_str().unwrap(),
        ],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = text(&out.stdout);
    for want in [
        "id=\"chart-latency\"",
        "id=\"chart-cpu\"",
        "nginx: peak 90%",
        "no process matches nginx",
        "Process CPU   [group: peak, mean]",
    ] {
        assert!(html.contains(want), "the page lacks {want:?}");
    }

    // Alone, and as chart files: each resource chart is a file.
    let charts = dir.join("charts/");
    for format in ["svg", "png"] {
        let out = run(
            &[
                "plot",
                "-format",
                format,
                "-output",
                &charts.display().to_string(),
                monitor.to_str().unwrap(),
            ],
            b"",
        );
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        let listed: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
        assert_eq!(
            listed,
            [charts.join(format!("cpu.{format}")).display().to_string()]
        );
    }
}

/// A ramp (20/s up by 20/s each second for 20 s) against a server that answers 200 a
/// second and 503s the rest, with the samples `attack -monitor` would write each
/// second: nginx's fds at 95% of their limit from 7 s, 3 s before the knee (10 s),
/// and its log writing timeouts from 14 s, its first line quoting markup.
fn ramp_with_samples(dir: &Path) -> PathBuf {
    let path = dir.join("ramp.llr");
    let header = RunHeader {
        start_unix_ns: START_NS,
        attacks: vec![AttackInfo {
            name: "ramp".to_owned(),
            model: LoadModel::Open,
            schedule: "line(20, 400, 20s)".to_owned(),
            ..AttackInfo::default()
        }],
        targets: vec![TargetInfo {
            step: None,
            checks: Vec::new(),
            method: "GET".to_owned(),
            url: "http://127.0.0.1:8080/".to_owned(),
        }],
        ..RunHeader::default()
    };
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = RecordWriter::new(file, &header, Compression::Zstd { level: 3 }).unwrap();
    let mut frames = ramp_frames().into_iter().peekable();
    let mut seq = 0;
    for second in 0..20u64 {
        let offered = 20 + 20 * second;
        for n in 0..offered {
            let failed = n >= 200;
            writer.push(&Record {
                seq,
                intended_unix_ns: START_NS + second * 1_000_000_000 + n * 1_000_000_000 / offered,
                send_lag_ns: 20_000,
                latency_ns: if failed { 300_000 } else { 2_000_000 },
                status: if failed { 503 } else { 200 },
                bytes_in: 100,
                ..Record::default()
            });
            seq += 1;
        }
        let next_second = START_NS + (second + 1) * 1_000_000_000;
        writer.flush_records(Some(next_second)).unwrap();
        while let Some(frame) = frames.next_if(|f| f.batch.at_unix_ns < next_second) {
            writer.write_samples(&frame).unwrap();
        }
    }
    writer.flush_records(None).unwrap();
    for frame in frames {
        writer.write_samples(&frame).unwrap();
    }
    writer.close().unwrap();
    path
}

/// One frame a second per sampler (host, nginx's process, nginx's log), the first
/// carrying the tables.
fn ramp_frames() -> Vec<SampleFrame> {
    let series = |sampler: u32, name: &str, labels: &[(&str, &str)]| SeriesInfo {
        sampler,
        name: name.to_owned(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        unit: String::new(),
        kind: SeriesKind::Gauge,
    };
    let sampler = |kind: &str| SamplerInfo {
        kind: kind.into(),
        name: if kind == "host" { "host" } else { "nginx" }.to_owned(),
    };
    let timeout = [("pattern", "timeout")];
    let mut first = Some((
        vec![sampler("host"), sampler("process"), sampler("log")],
        vec![
            series(0, "host.cpu_percent", &[("cpu", "all")]),
            series(1, "process.fd_use_percent", &[("group", "nginx")]),
            series(1, "process.fd_limit", &[("group", "nginx")]),
            series(2, "log.lines_per_sec", &timeout),
            series(
                2,
                "log.example",
                &[
                    ("pattern", "timeout"),
                    ("line", "timed out <script>x</script>"),
                ],
            ),
        ],
    ));
    let mut frames = Vec::new();
    for tick in 0..=21u64 {
        let fds = if tick >= 7 { 95.0 } else { 40.0 };
        let lines = if tick >= 14 { 5.0 } else { 0.0 };
        let mut log = vec![(3, lines)];
        if tick == 14 {
            log.push((4, 1.0));
        }
        let readings = [vec![(0, 30.0)], vec![(1, fds), (2, 1024.0)], log];
        for (offset_ms, values) in (0u64..).map(|s| s * 3).zip(readings) {
            let (samplers, series) = first.take().unwrap_or_default();
            let first_sampler = if samplers.is_empty() { 3 } else { 0 };
            let first_series = if series.is_empty() { 5 } else { 0 };
            frames.push(SampleFrame {
                first_sampler,
                samplers,
                first_series,
                series,
                batch: SampleBatch {
                    at_unix_ns: START_NS + tick * 1_000_000_000 + offset_ms * 1_000_000,
                    values: values
                        .into_iter()
                        .map(|(series, value)| SampleValue { series, value })
                        .collect(),
                    gaps: Vec::new(),
                },
            });
        }
    }
    frames
}

/// The page's diagnosis panel as a reader sees it: each line, tags gone and entities
/// read back.
fn panel_lines(html: &str) -> Vec<String> {
    let Some(start) = html.find("<section class=\"diagnosis") else {
        return Vec::new();
    };
    let panel = &html[start..start + html[start..].find("</section>").unwrap()];
    let strip = |line: &str| {
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
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    };
    panel
        .lines()
        .filter(|line| line.starts_with("<p class=\"headline\">") || line.starts_with("<li>"))
        .map(strip)
        .collect()
}

#[test]
fn the_page_s_diagnosis_says_what_report_says() {
    let dir = temp_dir("the_page_s_diagnosis_says_what_report_says");
    let file = ramp_with_samples(&dir);
    let out = run(&["report", file.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    let reported: Vec<String> = report
        .lines()
        .skip_while(|line| *line != "Diagnosis:")
        .skip(1)
        .take_while(|line| !line.starts_with("WARNING: "))
        .map(str::to_owned)
        .collect();
    assert!(
        reported[0].contains("first limit nginx fds") && reported.len() == 3,
        "{report}"
    );

    let out = run(&["plot", file.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = text(&out.stdout);
    assert_eq!(panel_lines(&html), reported);
    assert!(!html.contains("<script>x</script>"), "a log line as markup");
    for marker in ["knee", "first_limit", "finding"] {
        assert!(
            html.contains(&format!("<g class=\"marker {marker}\">")),
            "no {marker} marker"
        );
    }

    // Chart files carry the markers too.
    let charts = dir.join("charts/");
    for format in ["svg", "png"] {
        let out = run(
            &[
                "plot",
                "-format",
                format,
                "-output",
                &charts.display().to_string(),
                file.to_str().unwrap(),
            ],
            b"",
        );
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
    }
    let cpu = std::fs::read_to_string(charts.join("cpu.svg")).unwrap();
    assert!(cpu.contains("<g class=\"marker knee\"><title>the knee: max 200 req/s held"));
    assert!(std::fs::metadata(charts.join("cpu.png")).unwrap().len() > 1000);
}

/// A flow's record file: `shop` logs in then lists, 5 flows a second for 10 s; from
/// 5 s one list in four has no items (its check fails the request).
fn flow_file(dir: &Path) -> PathBuf {
    let path = dir.join("flow.llr");
    let step = |name: &str, path: &str, checks: &[&str]| TargetInfo {
        step: Some(name.to_owned()),
        checks: checks.iter().map(|c| (*c).to_owned()).collect(),
        method: "GET".to_owned(),
        url: format!("http://127.0.0.1:8080{path}"),
    };
    let header = RunHeader {
        start_unix_ns: START_NS,
        attacks: vec![AttackInfo {
            name: "shop".to_owned(),
            model: LoadModel::Open,
            ..AttackInfo::default()
        }],
        targets: vec![
            step("login", "/login", &["status 200"]),
            step("list", "/items", &["status 200", "has items"]),
        ],
        ..RunHeader::default()
    };
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = RecordWriter::new(file, &header, Compression::Zstd { level: 3 }).unwrap();
    writer
        .add_errors(
            0,
            &[record::ErrorEntry {
                kind: record::ErrorKind::Check,
                text: "list: has items".to_owned(),
            }],
        )
        .unwrap();
    for flow in 0..50u64 {
        let start = START_NS + flow * 200_000_000;
        let empty = flow >= 25 && flow % 4 == 0;
        for (step, offset) in [(0u32, 0u64), (1, 50_000_000)] {
            let failed = step == 1 && empty;
            writer.push(&Record {
                seq: flow * 2 + u64::from(step),
                target: step,
                intended_unix_ns: start + offset,
                send_lag_ns: 5_000,
                latency_ns: 3_000_000,
                status: 200,
                error: u32::from(failed),
                checks_failed: if failed {
                    0b10 | Record::FAILED_BY_FLOW
                } else {
                    0
                },
                bytes_in: 100,
                bytes_out: 40,
                ..Record::default()
            });
        }
    }
    writer.close().unwrap();
    path
}

/// The checks panel of a page.
fn checks_panel(html: &str) -> &str {
    let start = html
        .find("<section class=\"checks")
        .expect("a checks panel");
    &html[start..start + html[start..].find("</section>").unwrap()]
}

#[test]
fn a_flow_s_checks_are_drawn_and_survive_json_and_csv_exports() {
    let dir = temp_dir("a_flow_s_checks_are_drawn_and_survive_json_and_csv_exports");
    let file = flow_file(&dir);
    let out = run(&["plot", file.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = text(&out.stdout);
    let panel = checks_panel(&html);
    assert!(
        panel.contains(
            "144 of 150 check runs passed; worst: list: has items, 88% passed (6 of 50 failed)"
        ),
        "{panel}"
    );
    // Exported and read back, the page says the same.
    for to in ["json", "csv"] {
        let export = dir.join(format!("flow.{to}"));
        let out = run(
            &[
                "encode",
                "-to",
                to,
                "-output",
                export.to_str().unwrap(),
                file.to_str().unwrap(),
            ],
            b"",
        );
        assert!(out.status.success(), "{to}: {}", text(&out.stderr));
        let out = run(&["plot", export.to_str().unwrap()], b"");
        assert!(out.status.success(), "{to}: {}", text(&out.stderr));
        assert_eq!(checks_panel(&text(&out.stdout)), panel, "{to}");
    }
    // One file per chart, the checks and the steps' among them.
    let charts = dir.join("charts/");
    let out = run(
        &[
            "plot",
            "-format=png",
            "-output",
            &charts.display().to_string(),
            file.to_str().unwrap(),
        ],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    for name in ["checks.png", "step-distribution.png"] {
        assert!(listed.lines().any(|l| l.ends_with(name)), "{listed}");
    }
}
