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
                kind: "host".to_owned(),
                name: "host".to_owned(),
            },
            SamplerInfo {
                kind: "process".to_owned(),
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
