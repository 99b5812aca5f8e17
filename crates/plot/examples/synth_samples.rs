//! Writes a synthetic monitor file (`loadlab monitor -output`) for the plot benchmark:
//! one reading a second from 10 s before `crates/report/examples/synth_records.rs`'s
//! run starts: the host with 16 cores and two interfaces, three process groups, a
//! PostgreSQL server with two databases, and a Prometheus endpoint with many series
//! (most of them left out of the charts' top 8), a few gaps.
//!
//! Usage: `cargo run --release -p loadlab-plot --example synth_samples -- OUT [SECONDS] [PROM_SERIES]`
//! (defaults: 530 s, 300 Prometheus series).

use std::fs::File;
use std::io::BufWriter;
use std::process::ExitCode;

use record::{
    Compression, RecordWriter, RunHeader, SampleBatch, SampleFrame, SampleGap, SampleValue,
    SamplerInfo, SeriesInfo, SeriesKind,
};

/// `synth_records`' time zero.
const START_UNIX_NS: u64 = 1_763_700_000_000_000_000;
const S: u64 = 1_000_000_000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: synth_samples OUT [SECONDS] [PROM_SERIES]");
        return ExitCode::FAILURE;
    };
    let seconds: u64 = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(530);
    let prom_series: u32 = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(300);
    match write(path, seconds, prom_series) {
        Ok(values) => {
            eprintln!("{path}: {seconds} s, {values} values");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("synth_samples: {err}");
            ExitCode::FAILURE
        }
    }
}

fn sampler(kind: &str, name: &str) -> SamplerInfo {
    SamplerInfo {
        kind: kind.into(),
        name: name.to_owned(),
    }
}

fn series(sampler: u32, name: &str, labels: &[(&str, &str)], unit: &str) -> SeriesInfo {
    SeriesInfo {
        sampler,
        name: name.to_owned(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        unit: unit.to_owned(),
        kind: if unit.ends_with("/s") {
            SeriesKind::Rate
        } else {
            SeriesKind::Gauge
        },
    }
}

/// Every series, by sampler: host 0, groups 1-3, postgres 4, prom 5.
fn tables(prom_series: u32) -> (Vec<SamplerInfo>, Vec<SeriesInfo>) {
    let samplers = vec![
        sampler("host", "host"),
        sampler("process", "nginx"),
        sampler("process", "app"),
        sampler("process", "worker"),
        sampler(
            "postgres",
            "postgres://loadlab:REDACTED@127.0.0.1:5432/shop",
        ),
        sampler("prom", "http://127.0.0.1:9100/metrics"),
    ];
    let mut all = vec![series(0, "host.cpu_percent", &[("cpu", "all")], "percent")];
    for core in 0..16 {
        all.push(series(
            0,
            "host.cpu_percent",
            &[("cpu", &core.to_string())],
            "percent",
        ));
    }
    for name in [
        "host.memory_total_bytes",
        "host.memory_used_bytes",
        "host.memory_available_bytes",
    ] {
        all.push(series(0, name, &[], "bytes"));
    }
    for name in ["host.tcp_established", "host.tcp_time_wait"] {
        all.push(series(0, name, &[], "count"));
    }
    for state in ["close_wait", "syn_recv", "fin_wait1", "fin_wait2"] {
        all.push(series(0, "host.tcp_sockets", &[("state", state)], "count"));
    }
    for interface in ["lo", "eth0"] {
        for name in ["host.net_rx_bytes_per_sec", "host.net_tx_bytes_per_sec"] {
            all.push(series(0, name, &[("interface", interface)], "bytes/s"));
        }
    }
    all.push(series(0, "host.tcp_retransmits_per_sec", &[], "1/s"));
    for (sampler, group) in [(1, "nginx"), (2, "app"), (3, "worker")] {
        for (name, unit) in [
            ("process.cpu_percent", "percent"),
            ("process.rss_bytes", "bytes"),
            ("process.sockets", "count"),
            ("process.fds", "count"),
            ("process.fd_limit", "count"),
            ("process.threads", "count"),
        ] {
            all.push(series(sampler, name, &[("group", group)], unit));
        }
    }
    for database in ["shop", "auth"] {
        all.push(series(
            4,
            "postgres.transactions_per_sec",
            &[("database", database)],
            "1/s",
        ));
        all.push(series(
            4,
            "postgres.connections",
            &[("database", database)],
            "count",
        ));
    }
    let units = ["seconds", "1/s", "bytes", "", "count"];
    for i in 0..prom_series {
        let unit = units[i as usize % units.len()];
        let handler = format!("/api/v{}/item{}", i % 3, i / 15);
        all.push(series(
            5,
            &format!("app_metric_{}", i % 15),
            &[("handler", &handler)],
            unit,
        ));
    }
    (samplers, all)
}

/// A value that moves: a base, a ramp with the load, and some wobble.
fn value(series: u32, tick: u64, unit: &str) -> f64 {
    let load = if (10..510).contains(&tick) { 1.0 } else { 0.1 };
    let wobble = ((tick * 7 + u64::from(series) * 13) % 17) as f64 / 17.0;
    let scale = match unit {
        "percent" => 60.0,
        "bytes" => 512.0 * 1024.0 * 1024.0,
        "bytes/s" => 8.0 * 1024.0 * 1024.0,
        "seconds" => 0.05,
        _ => 200.0,
    };
    scale * (0.2 + load * (0.5 + 0.3 * wobble)) * (1.0 + f64::from(series % 7) * 0.1)
}

fn write(path: &str, seconds: u64, prom_series: u32) -> std::io::Result<u64> {
    let start = START_UNIX_NS - 10 * S;
    let header = RunHeader {
        tool: "loadlab monitor (synthetic)".to_owned(),
        start_unix_ns: start,
        ..RunHeader::default()
    };
    let file = BufWriter::new(File::create(path)?);
    let mut writer = RecordWriter::new(file, &header, Compression::Zstd { level: 3 })
        .map_err(std::io::Error::other)?;
    let (samplers, series) = tables(prom_series);
    let mut frame = SampleFrame {
        samplers: samplers.clone(),
        series: series.clone(),
        ..SampleFrame::default()
    };
    let mut values = 0;
    for tick in 0..seconds {
        for sampler in 0..samplers.len() as u32 {
            let at_unix_ns = start + tick * S + u64::from(sampler) * 2_000_000;
            // The worker restarts every 100 s; the scrape times out now and then.
            let gone = (sampler == 3 && tick % 100 == 50) || (sampler == 5 && tick % 97 == 3);
            frame.batch = SampleBatch {
                at_unix_ns,
                values: if gone {
                    Vec::new()
                } else {
                    series
                        .iter()
                        .enumerate()
                        .filter(|(_, s)| s.sampler == sampler)
                        .map(|(id, s)| SampleValue {
                            series: id as u32,
                            value: value(id as u32, tick, &s.unit),
                        })
                        .collect()
                },
                gaps: if gone {
                    vec![SampleGap {
                        sampler,
                        series: None,
                        reason: "timed out after 1s".to_owned(),
                    }]
                } else {
                    Vec::new()
                },
            };
            values += frame.batch.values.len() as u64;
            writer
                .write_samples(&frame)
                .map_err(std::io::Error::other)?;
            frame.first_sampler += frame.samplers.len() as u32;
            frame.first_series += frame.series.len() as u32;
            frame.samplers.clear();
            frame.series.clear();
        }
    }
    writer.close().map_err(std::io::Error::other)?;
    Ok(values)
}
