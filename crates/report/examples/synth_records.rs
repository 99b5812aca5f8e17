//! Writes a realistic synthetic record file for benchmarks: one open-model attack at a
//! constant rate over three targets, log-normal-ish latencies with a slow tail, a few
//! 503s and timeouts, microsecond send lag, statistics every second, an end block;
//! zstd blocks flushed four times a second, as the engine writes them.
//!
//! Usage: `cargo run --release -p loadlab-report --example synth_records -- OUT [RECORDS] [RATE]`
//! (defaults: 10000000 records at 20000 req/s).

use std::fs::File;
use std::io::BufWriter;
use std::process::ExitCode;

use record::{
    AttackEnd, AttackInfo, Compression, ErrorEntry, ErrorKind, GeneratorStats, LoadModel, Protocol,
    Record, RecordWriter, RunEnd, RunHeader, StopReason, TargetInfo,
};

const START_UNIX_NS: u64 = 1_763_700_000_000_000_000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: synth_records OUT [RECORDS] [RATE]");
        return ExitCode::FAILURE;
    };
    let records: u64 = args
        .get(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000_000);
    let rate_per_sec: u64 = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    match write(path, records, rate_per_sec.max(1)) {
        Ok(bytes) => {
            eprintln!(
                "{path}: {records} records, {bytes} bytes ({:.2} bytes/record)",
                bytes as f64 / records.max(1) as f64
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("synth_records: {err}");
            ExitCode::FAILURE
        }
    }
}

fn header(rate_per_sec: u64) -> RunHeader {
    let target = |url: &str| TargetInfo {
        step: None,
        checks: Vec::new(),
        method: "GET".to_owned(),
        url: url.to_owned(),
    };
    RunHeader {
        trace: None,
        seed: None,
        tool: "synth_records".to_owned(),
        start_unix_ns: START_UNIX_NS,
        attacks: vec![AttackInfo {
            replay: None,
            flow: false,
            name: "synthetic".to_owned(),
            model: LoadModel::Open,
            schedule: format!("const({rate_per_sec}, ...)"),
            rate_per_sec: Some(rate_per_sec as f64),
            concurrency: None,
            timeout_ns: 30_000_000_000,
        }],
        targets: vec![
            target("http://127.0.0.1:8080/"),
            target("http://127.0.0.1:8080/search?q=x"),
            target("http://127.0.0.1:8080/item/42"),
        ],
        shard: None,
        precision_ns: None,
    }
}

fn write(path: &str, count: u64, rate_per_sec: u64) -> Result<u64, Box<dyn std::error::Error>> {
    let file = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut writer =
        RecordWriter::new(file, &header(rate_per_sec), Compression::Zstd { level: 3 })?;
    writer.add_errors(
        0,
        &[
            ErrorEntry {
                kind: ErrorKind::Status,
                text: "503 Service Unavailable".to_owned(),
            },
            ErrorEntry {
                kind: ErrorKind::Timeout,
                text: "timeout after 30s".to_owned(),
            },
        ],
    )?;
    let gap_ns = 1_000_000_000 / rate_per_sec;
    let per_flush = (rate_per_sec / 4).max(1);
    let mut rng = SplitMix(0x5eed);
    for seq in 0..count {
        writer.push(&synth(seq, gap_ns, &mut rng));
        if (seq + 1) % per_flush == 0 {
            writer.flush_records(Some(START_UNIX_NS + (seq + 1) * gap_ns))?;
        }
        if (seq + 1) % rate_per_sec == 0 {
            writer.write_stats(&GeneratorStats {
                at_unix_ns: START_UNIX_NS + (seq + 1) * gap_ns,
                cpu_ns: (seq + 1) * 5_000,
                sent: seq + 1,
                completed: seq + 1,
                rss_bytes: 24 << 20,
                ..GeneratorStats::default()
            })?;
        }
    }
    let end = RunEnd {
        exemplars: Vec::new(),
        replays: Vec::new(),
        at_unix_ns: START_UNIX_NS + count * gap_ns,
        reason: StopReason::Completed,
        detail: String::new(),
        attacks: vec![AttackEnd {
            asked: count,
            sent: count,
            unsent: 0,
            asked_span_ns: count.saturating_sub(1) * gap_ns,
        }],
        cpu_ns: count * 5_000,
        peak_rss_bytes: 25 << 20,
    };
    let file = writer.finish(&end)?;
    let file = file.into_inner().map_err(|e| e.into_error())?;
    Ok(file.metadata()?.len())
}

/// One request: a log-normal-ish latency around 0.8 ms, 0.1% slow (50-250 ms), 0.5%
/// 503s, 0.01% timeouts.
fn synth(seq: u64, gap_ns: u64, rng: &mut SplitMix) -> Record {
    let intended_unix_ns = START_UNIX_NS + seq * gap_ns;
    let send_lag_ns = 2_000 + rng.below(8_000) + if rng.below(10_000) == 0 { 900_000 } else { 0 };
    let roll = rng.below(10_000);
    let (status, error, latency_ns) = match roll {
        0 => (0, 2, 30_000_000_000),
        1..=50 => (503, 1, 200_000 + rng.below(300_000)),
        51..=60 => (200, 0, 50_000_000 + rng.below(200_000_000)),
        _ => (200, 0, 300_000 + (rng.exponential() * 500_000.0) as u64),
    };
    let latency_ns = latency_ns + send_lag_ns;
    Record {
        checks_failed: 0,
        attack: 0,
        target: (seq % 3) as u32,
        seq,
        intended_unix_ns,
        send_lag_ns,
        latency_ns,
        ttfb_ns: if status == 0 {
            0
        } else {
            (latency_ns - send_lag_ns).saturating_sub(20_000)
        },
        status,
        error,
        bytes_in: if status == 200 {
            853 + rng.below(4)
        } else if status == 0 {
            0
        } else {
            180
        },
        bytes_out: 38,
        protocol: Protocol::Http1,
        grpc_status: None,
    }
}

/// SplitMix64: small, fast, deterministic.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An exponential variate with mean 1.
    fn exponential(&mut self) -> f64 {
        let unit = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        -(1.0 - unit).ln()
    }
}
