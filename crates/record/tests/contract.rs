//! The record file contract: round trips, torn tails at every byte, time-sorted merging,
//! and a golden file per format version, so the bytes cannot change without a bump.
//!
//! Regenerate the golden file for a new version with `UPDATE_GOLDEN=1 cargo test -p loadlab-record`.

#![allow(clippy::unwrap_used)]

use std::io::Cursor;

use record::{
    AttackEnd, AttackInfo, Compression, ErrorEntry, ErrorKind, FORMAT_VERSION, GeneratorStats,
    Inputs, LoadModel, Record, RecordError, RecordSource, RecordWriter, RunEnd, RunHeader,
    StopReason, TargetInfo, open_reader,
};

const START_NS: u64 = 1_763_700_000_000_000_000;

fn header() -> RunHeader {
    RunHeader {
        tool: "loadlab test".to_owned(),
        start_unix_ns: START_NS,
        attacks: vec![AttackInfo {
            name: "search".to_owned(),
            model: LoadModel::Open,
            schedule: "const(1000, 1s)".to_owned(),
            rate_per_sec: Some(1000.0),
            concurrency: Some(100),
            timeout_ns: 30_000_000_000,
        }],
        targets: vec![TargetInfo {
            method: "GET".to_owned(),
            url: "http://127.0.0.1:8080/".to_owned(),
        }],
    }
}

fn record(n: u64) -> Record {
    Record {
        attack: 0,
        target: (n % 2) as u32,
        seq: n,
        intended_unix_ns: START_NS + n * 1_000_000,
        send_lag_ns: 1_000 + n % 7,
        latency_ns: 150_000 + (n * 7919) % 50_000,
        ttfb_ns: 140_000,
        status: if n % 10 == 9 { 503 } else { 200 },
        error: u32::from(n % 10 == 9),
        bytes_in: 180,
        bytes_out: 40,
    }
}

/// A small run: header, a second target and an error in dictionaries, three record
/// blocks with watermarks, statistics and the end.
fn write_run(compression: Compression) -> (Vec<u8>, Vec<Record>) {
    let records: Vec<Record> = (0..300).map(record).collect();
    let mut writer = RecordWriter::new(Vec::new(), &header(), compression).unwrap();
    writer
        .add_targets(
            1,
            &[TargetInfo {
                method: "POST".to_owned(),
                url: "http://127.0.0.1:8080/things".to_owned(),
            }],
        )
        .unwrap();
    writer
        .add_errors(
            0,
            &[ErrorEntry {
                kind: ErrorKind::Status,
                text: "503 Service Unavailable".to_owned(),
            }],
        )
        .unwrap();
    for (index, chunk) in records.chunks(100).enumerate() {
        writer.extend(chunk);
        writer
            .flush_records(Some(START_NS + (index as u64 + 1) * 100_000_000))
            .unwrap();
        writer
            .write_stats(&GeneratorStats {
                at_unix_ns: START_NS + index as u64,
                cpu_ns: 5,
                sent: 100,
                ..GeneratorStats::default()
            })
            .unwrap();
    }
    let end = RunEnd {
        at_unix_ns: START_NS + 1_000_000_000,
        reason: StopReason::Completed,
        detail: String::new(),
        attacks: vec![AttackEnd {
            asked: 300,
            sent: 300,
            unsent: 0,
            asked_span_ns: 299_000_000,
        }],
        cpu_ns: 12_345,
        peak_rss_bytes: 8 << 20,
    };
    (writer.finish(&end).unwrap(), records)
}

fn read_all(bytes: &[u8]) -> Result<(Vec<Record>, Box<dyn RecordSource>), RecordError> {
    let mut source = open_reader(Box::new(Cursor::new(bytes.to_vec())), "run.llr")?;
    let mut all = Vec::new();
    let mut batch = Vec::new();
    while source.next_batch(&mut batch)? {
        all.extend_from_slice(&batch);
    }
    Ok((all, source))
}

#[test]
fn round_trips_with_and_without_compression() {
    for compression in [Compression::Raw, Compression::Zstd { level: 3 }] {
        let (bytes, records) = write_run(compression);
        let (read, source) = read_all(&bytes).unwrap();
        assert_eq!(read, records, "{compression:?}");
        let summary = source.summary();
        assert_eq!(summary.header, header());
        assert_eq!(summary.stats.len(), 3);
        assert_eq!(summary.end.as_ref().map(|e| e.cpu_ns), Some(12_345));
        assert_eq!(summary.torn, None);
        assert_eq!(source.tables().targets.len(), 2);
        assert_eq!(
            source.tables().error(1).map(|e| e.kind),
            Some(ErrorKind::Status)
        );
        assert_eq!(source.watermark(), Some(START_NS + 300_000_000));
    }
}

#[test]
fn a_file_cut_at_any_byte_reports_everything_before_the_cut() {
    let (bytes, records) = write_run(Compression::Zstd { level: 3 });
    // Where each block ends, so we know how many records a cut must keep.
    let mut complete_prefixes = Vec::new();
    for cut in 0..=bytes.len() {
        match read_all(&bytes[..cut]) {
            Ok((read, source)) => {
                assert_eq!(
                    read[..],
                    records[..read.len()],
                    "cut at {cut}: records must be an exact prefix"
                );
                let summary = source.summary();
                if cut < bytes.len() {
                    if let Some(torn) = &summary.torn {
                        assert_eq!(
                            torn.offset + torn.skipped_bytes,
                            cut as u64,
                            "cut at {cut}: {torn:?}"
                        );
                    }
                } else {
                    assert_eq!(summary.torn, None);
                }
                complete_prefixes.push((cut, read.len()));
            }
            Err(err) => {
                // Only a cut inside the preamble or header may fail, and it must say so.
                let message = err.to_string();
                assert!(
                    message.contains("empty")
                        || message.contains("header")
                        || message.contains("LLRECORD"),
                    "cut at {cut}: {message}"
                );
                assert!(
                    complete_prefixes.is_empty(),
                    "cut at {cut} failed after a readable prefix"
                );
            }
        }
    }
    // Each complete records block is kept once its last byte is present.
    let kept: Vec<usize> = complete_prefixes.iter().map(|&(_, n)| n).collect();
    assert!(
        kept.contains(&100) && kept.contains(&200) && kept.contains(&300),
        "{kept:?}"
    );
}

#[test]
fn a_damaged_block_stops_the_reader_cleanly() {
    let (bytes, records) = write_run(Compression::Raw);
    // Flip one byte in the middle of the file: some block fails its checksum.
    let mut damaged = bytes;
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0xff;
    let (read, source) = read_all(&damaged).unwrap();
    assert!(read.len() < records.len());
    assert_eq!(read[..], records[..read.len()]);
    let torn = source.summary().torn.clone().expect("damage is reported");
    assert!(
        torn.reason.contains("checksum") || torn.reason.contains("length"),
        "{torn:?}"
    );
}

#[test]
fn rejects_inputs_that_are_not_record_files() {
    let (bytes, _) = write_run(Compression::Raw);
    let mut newer = bytes.clone();
    newer[8] = 0xff;
    let rows: Vec<(Vec<u8>, &str)> = vec![
        (Vec::new(), "input is empty"),
        (b"LLREC".to_vec(), "LLRECORD magic"),
        (vec![0x0e, 0xff, 0x81, 0x03, 0x01], "vegeta encode -to json"),
        (
            b"hello world\n".to_vec(),
            "first line starts with \"hello world",
        ),
        (newer, "newer than this loadlab reads"),
        (bytes[..20].to_vec(), "header"),
    ];
    for (input, want) in rows {
        let err = read_all(&input).err().expect("must fail").to_string();
        assert!(err.contains(want), "{err}");
        assert!(err.starts_with("run.llr"), "names the input: {err}");
    }
}

#[test]
fn merges_files_in_send_time_order_on_shared_tables() {
    let (first, _) = write_run(Compression::Zstd { level: 1 });
    // A second run 0.5 ms later with its own error table order.
    let mut writer = RecordWriter::new(Vec::new(), &header(), Compression::Raw).unwrap();
    writer
        .add_targets(
            1,
            &[TargetInfo {
                method: "POST".to_owned(),
                url: "http://127.0.0.1:8080/things".to_owned(),
            }],
        )
        .unwrap();
    writer
        .add_errors(
            0,
            &[
                ErrorEntry {
                    kind: ErrorKind::Timeout,
                    text: "timeout".to_owned(),
                },
                ErrorEntry {
                    kind: ErrorKind::Status,
                    text: "503 Service Unavailable".to_owned(),
                },
            ],
        )
        .unwrap();
    for n in 0..300 {
        let mut r = record(n);
        r.intended_unix_ns += 500_000;
        r.error = if n % 10 == 9 {
            2
        } else if n == 5 {
            1
        } else {
            0
        };
        writer.push(&r);
        if n % 50 == 49 {
            writer
                .flush_records(Some(START_NS + n * 1_000_000))
                .unwrap();
        }
    }
    let second = writer.finish(&RunEnd::default()).unwrap();
    let sources = vec![
        open_reader(Box::new(Cursor::new(first)), "a.llr").unwrap(),
        open_reader(Box::new(Cursor::new(second)), "b.llr").unwrap(),
    ];
    let inputs = Inputs::from_sources(sources);
    let mut sorted = inputs.sorted();
    let mut all = Vec::new();
    let mut batch = Vec::new();
    while sorted.next_batch(&mut batch).unwrap() {
        all.extend_from_slice(&batch);
    }
    assert!(
        sorted.summaries().all(|s| s.torn.is_none()),
        "both files read whole"
    );
    assert_eq!(all.len(), 600);
    assert!(
        all.windows(2)
            .all(|w| w[0].sent_unix_ns() <= w[1].sent_unix_ns()),
        "sorted by send time"
    );
    let tables = sorted.tables();
    assert_eq!(
        tables.errors.len(),
        2,
        "the shared 503 entry is merged: {:?}",
        tables.errors
    );
    assert_eq!(tables.attacks.len(), 1, "same attack name, one attack");
    let unavailable = all
        .iter()
        .filter(|r| {
            tables
                .error(r.error)
                .is_some_and(|e| e.text.starts_with("503"))
        })
        .count();
    assert_eq!(unavailable, 60);
}

#[test]
fn record_size_is_compact_for_a_steady_attack() {
    // 50k req/s for 2 s: realistic jitter in latency and lag.
    let records: Vec<Record> = (0..100_000u64)
        .map(|n| Record {
            intended_unix_ns: START_NS + n * 20_000,
            latency_ns: 80_000 + (n.wrapping_mul(2_654_435_761) % 120_000),
            send_lag_ns: 2_000 + n.wrapping_mul(40_503) % 9_000,
            ttfb_ns: 70_000 + (n.wrapping_mul(2_654_435_761) % 110_000),
            status: 200,
            bytes_in: 853,
            bytes_out: 38,
            seq: n,
            ..Record::default()
        })
        .collect();
    let mut writer =
        RecordWriter::new(Vec::new(), &header(), Compression::Zstd { level: 3 }).unwrap();
    for chunk in records.chunks(12_500) {
        writer.extend(chunk);
        writer.flush_records(None).unwrap();
    }
    let bytes = writer.finish(&RunEnd::default()).unwrap();
    let per_record = bytes.len() as f64 / records.len() as f64;
    println!("{per_record:.2} bytes/record");
    assert!(per_record <= 16.0, "{per_record:.2} bytes per record");
}

#[test]
fn format_matches_the_golden_file_for_this_version() {
    let (bytes, _) = write_run(Compression::Raw);
    let path = format!(
        "{}/tests/golden/format_v{FORMAT_VERSION}.llr",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &bytes).unwrap();
    }
    let golden = std::fs::read(&path).unwrap_or_else(|_| {
        panic!("{path} is missing: run with UPDATE_GOLDEN=1 once per new FORMAT_VERSION")
    });
    assert!(
        golden == bytes,
        "the bytes written changed but FORMAT_VERSION is still {FORMAT_VERSION}: bump it, \
         document the change in docs/RECORD_FORMAT.md, and add a golden file for the new version"
    );
}

#[test]
fn every_golden_file_of_older_versions_still_reads() {
    let dir = format!("{}/tests/golden", env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "llr") {
            let (records, source) = read_all(&std::fs::read(&path).unwrap()).unwrap();
            assert_eq!(records.len(), 300, "{}", path.display());
            assert_eq!(source.summary().torn, None);
            seen += 1;
        }
    }
    assert!(seen >= 1);
}
