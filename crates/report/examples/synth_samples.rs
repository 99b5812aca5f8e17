//! Writes a synthetic monitor file for the diagnosis benchmark: an hour (or SECONDS) of
//! 1 s samples on the clock of `synth_records` (same start), from a host (CPU all and 8
//! cores, memory, fds, listen overflows), a process group (CPU and its allowance, fds
//! and their limit) and a Prometheus pool (busy beside its size): the series the
//! diagnosis reads, the pool filling up halfway through.
//!
//! Usage: `cargo run --release -p loadlab-report --example synth_samples -- OUT [SECONDS]`

use std::fs::File;
use std::io::BufWriter;
use std::process::ExitCode;

use record::{
    Compression, RecordWriter, RunEnd, RunHeader, SampleBatch, SampleFrame, SamplerInfo,
    SeriesInfo, SeriesKind,
};

const START_UNIX_NS: u64 = 1_763_700_000_000_000_000;
const CORES: usize = 8;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: synth_samples OUT [SECONDS]");
        return ExitCode::FAILURE;
    };
    let seconds: u64 = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(3600);
    match write(path, seconds) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("synth_samples: {err}");
            ExitCode::FAILURE
        }
    }
}

fn series(sampler: u32, name: &str, labels: &[(&str, &str)], kind: SeriesKind) -> SeriesInfo {
    SeriesInfo {
        sampler,
        name: name.to_owned(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        unit: String::new(),
        kind,
    }
}

fn tables() -> (Vec<SamplerInfo>, Vec<SeriesInfo>) {
    let sampler = |kind: &str, name: &str| SamplerInfo {
        kind: kind.to_owned(),
        name: name.to_owned(),
    };
    let gauge = SeriesKind::Gauge;
    let mut all = vec![
        series(0, "host.cpu_percent", &[("cpu", "all")], gauge),
        series(0, "host.memory_used_bytes", &[], gauge),
        series(0, "host.memory_total_bytes", &[], gauge),
        series(0, "host.fds_open", &[], gauge),
        series(0, "host.fds_max", &[], gauge),
        series(
            0,
            "host.tcp_listen_overflows_per_sec",
            &[],
            SeriesKind::Rate,
        ),
        series(1, "process.cpu_percent", &[("group", "app")], gauge),
        series(1, "process.cpu_limit_percent", &[("group", "app")], gauge),
        series(1, "process.fd_use_percent", &[("group", "app")], gauge),
        series(1, "process.fd_limit", &[("group", "app")], gauge),
        series(2, "app_pool_busy", &[("route", "/")], gauge),
        series(2, "app_pool_workers", &[("route", "/")], gauge),
    ];
    let cores: Vec<String> = (0..CORES).map(|c| c.to_string()).collect();
    all.extend(
        cores
            .iter()
            .map(|core| series(0, "host.cpu_percent", &[("cpu", core)], gauge)),
    );
    let samplers = vec![
        sampler("host", "host"),
        sampler("process", "app"),
        sampler("prom", "app"),
    ];
    (samplers, all)
}

fn write(path: &str, seconds: u64) -> Result<(), String> {
    let file = File::create(path).map_err(|e| format!("{path}: {e}"))?;
    let header = RunHeader {
        tool: "synth_samples".to_owned(),
        start_unix_ns: START_UNIX_NS,
        ..RunHeader::default()
    };
    let mut writer = RecordWriter::new(BufWriter::new(file), &header, Compression::Raw)
        .map_err(|e| e.to_string())?;
    let (samplers, series) = tables();
    let mut frame = SampleFrame {
        samplers,
        series,
        ..SampleFrame::default()
    };
    for second in 0..seconds {
        let load = second as f64 / seconds.max(1) as f64;
        let busy = (load * 2.0 * 50.0).min(50.0);
        let mut values = vec![
            30.0 + 40.0 * load,
            8e9,
            32e9,
            2000.0,
            1e6,
            0.0,
            150.0 * load,
            800.0,
            10.0 + 20.0 * load,
            1024.0,
            busy,
            50.0,
        ];
        values.extend((0..CORES).map(|core| 20.0 + 5.0 * core as f64 * load));
        frame.batch = SampleBatch::dense(START_UNIX_NS + second * 1_000_000_000, &values);
        writer.write_samples(&frame).map_err(|e| e.to_string())?;
        frame.first_sampler += frame.samplers.len() as u32;
        frame.first_series += frame.series.len() as u32;
        frame.samplers.clear();
        frame.series.clear();
    }
    writer
        .finish(&RunEnd::default())
        .map_err(|e| e.to_string())?;
    Ok(())
}
