//! The record file contract: round trips, torn tails at every byte, time-sorted merging,
//! and a golden file per format version, so the bytes cannot change without a bump.
//!
//! Regenerate the golden file for a new version with `UPDATE_GOLDEN=1 cargo test -p loadlab-record`.

#![allow(clippy::unwrap_used)]

use std::io::Cursor;

use record::{
    AttackEnd, AttackInfo, Compression, ErrorEntry, ErrorKind, Exemplar, ExemplarKind,
    FORMAT_VERSION, GeneratorStats, GrpcStatus, Inputs, LoadModel, Logged, Protocol, ReadOrder,
    Record, RecordError, RecordSource, RecordStream, RecordWriter, ReplayEnd, ReplayInfo, RunEnd,
    RunHeader, SampleBatch, SampleFrame, SampleGap, SampleValue, SamplerInfo, SeriesInfo,
    SeriesKind, StopReason, TargetInfo, TraceInfo, open_reader,
};

const START_NS: u64 = 1_763_700_000_000_000_000;

fn header() -> RunHeader {
    RunHeader {
        seed: None,
        tool: "loadlab test".to_owned(),
        start_unix_ns: START_NS,
        attacks: vec![AttackInfo {
            replay: None,
            flow: false,
            name: "search".to_owned(),
            model: LoadModel::Open,
            schedule: "const(1000, 1s)".to_owned(),
            rate_per_sec: Some(1000.0),
            concurrency: Some(100),
            timeout_ns: 30_000_000_000,
        }],
        targets: vec![TargetInfo {
            step: None,
            checks: Vec::new(),
            method: "GET".to_owned(),
            url: "http://127.0.0.1:8080/".to_owned(),
        }],
        shard: None,
        precision_ns: None,
        trace: None,
    }
}

fn record(n: u64) -> Record {
    Record {
        // Target 1 is a flow step with two checks: its first fails now and then.
        checks_failed: if n % 4 == 1 { 0b01 } else { 0 },
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
        protocol: if n.is_multiple_of(3) {
            Protocol::Http2
        } else {
            Protocol::Http1
        },
        // Every fifth request a gRPC call, now and then UNAVAILABLE.
        grpc_status: (n % 5 == 2).then_some(GrpcStatus(if n % 10 == 7 { 14 } else { 0 })),
    }
}

/// A small run: header, a second target and an error in dictionaries, three record
/// blocks with watermarks, statistics and the end.
fn write_run(compression: Compression) -> (Vec<u8>, Vec<Record>) {
    write_run_with_samples(compression, false)
}

/// [`write_run`], with a frame of resource samples after each records block when
/// `samples` is set (the frames of [`sample_frame`]).
fn write_run_with_samples(compression: Compression, samples: bool) -> (Vec<u8>, Vec<Record>) {
    let records: Vec<Record> = (0..300).map(record).collect();
    let mut writer = RecordWriter::new(Vec::new(), &header(), compression).unwrap();
    writer
        .add_targets(
            1,
            &[TargetInfo {
                step: Some("add thing".to_owned()),
                checks: vec!["status 201".to_owned(), "json $.id exists".to_owned()],
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
        if samples {
            writer.write_samples(&sample_frame(index as u32)).unwrap();
        }
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
        replays: Vec::new(),
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
        exemplars: Vec::new(),
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
                step: None,
                checks: Vec::new(),
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
    // Each record keeps its protocol through the merge: every 3rd of each file is h2.
    let h2 = all.iter().filter(|r| r.protocol == Protocol::Http2).count();
    assert_eq!(h2, 200);
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

#[test]
fn the_version_1_golden_file_reads_every_record_as_http1() {
    for name in ["format_v1.llr", "format_v1_samples.llr"] {
        let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            &bytes[8..10],
            &1u16.to_le_bytes(),
            "{name} is a version 1 file"
        );
        let (read, source) = read_all(&bytes).unwrap();
        // The same run as `write_run` writes today, from before records had a protocol.
        let want: Vec<Record> = (0..300)
            .map(|n| Record {
                protocol: Protocol::Http1,
                checks_failed: 0,
                grpc_status: None,
                ..record(n)
            })
            .collect();
        assert_eq!(read, want, "{name}");
        assert_eq!(source.summary().header, header(), "{name}");
        assert_eq!(source.summary().torn, None, "{name}");
    }
}

#[test]
fn the_protocol_failed_checks_and_grpc_statuses_round_trip_as_the_last_columns() {
    let (bytes, records) = write_run(Compression::Raw);
    assert_eq!(&bytes[8..10], &FORMAT_VERSION.to_le_bytes());
    const { assert!(FORMAT_VERSION >= 2, "version 2 added the protocol column") };
    let (read, _) = read_all(&bytes).unwrap();
    assert_eq!(read, records);
    assert!(read.iter().any(|r| r.protocol == Protocol::Http2));
    assert!(read.iter().any(|r| r.protocol == Protocol::Http1));
    assert!(read.iter().any(|r| r.check_failed(0) && !r.check_failed(1)));
    assert!(read.iter().any(|r| r.grpc_status == Some(GrpcStatus(14))));
    // The first records block (records 0..100) ends with their protocol ids, then
    // their failed checks, then their gRPC statuses (code + 1, 0 for none).
    let (_, block) = blocks(&bytes)
        .into_iter()
        .find(|(kind, _)| *kind == 3)
        .unwrap();
    let ids: Vec<u8> = records[..100].iter().map(|r| r.protocol.id()).collect();
    assert_eq!(&block[block.len() - 300..block.len() - 200], &ids[..]);
    let checks: Vec<u8> = records[..100]
        .iter()
        .map(|r| r.checks_failed as u8)
        .collect();
    assert_eq!(&block[block.len() - 200..block.len() - 100], &checks[..]);
    let grpc: Vec<u8> = records[..100]
        .iter()
        .map(|r| r.grpc_status.map_or(0, |s| s.0 + 1))
        .collect();
    assert_eq!(&block[block.len() - 100..], &grpc[..]);
}

/// The first records block of `bytes` (a raw run) with the protocol id of its last
/// record set to `id`, and its checksum made good again: damage the checksum cannot see.
fn with_protocol_id(bytes: &[u8], id: u8) -> (Vec<u8>, usize) {
    let (_, block) = blocks(bytes)
        .into_iter()
        .find(|(kind, _)| *kind == 3)
        .unwrap();
    let start = block.as_ptr() as usize - bytes.as_ptr() as usize;
    let end = start + block.len();
    let mut patched = bytes.to_vec();
    // The last protocol id sits before the block's 100 `checks_failed` and 100
    // `grpc_status` bytes.
    patched[end - 201] = id;
    let crc = crc32fast::hash(&patched[start + 9..end]);
    patched[start + 5..start + 9].copy_from_slice(&crc.to_le_bytes());
    (patched, start)
}

#[test]
fn an_unknown_protocol_id_stops_the_reader_naming_the_block() {
    let (bytes, records) = write_run(Compression::Raw);
    let rows: &[(u8, Result<Protocol, &str>)] = &[
        (0, Ok(Protocol::Http1)),
        (1, Ok(Protocol::Http2)),
        (
            2,
            Err(
                "records block: record seq 99: protocol id 2 is unknown (known: 0 = http/1.1, 1 = h2)",
            ),
        ),
        (0x7f, Err("protocol id 127 is unknown")),
    ];
    for &(id, ref want) in rows {
        let (patched, block_start) = with_protocol_id(&bytes, id);
        let (read, source) = read_all(&patched).unwrap();
        match want {
            Ok(protocol) => {
                assert_eq!(read.len(), records.len(), "id {id}");
                assert_eq!(read[99].protocol, *protocol, "id {id}");
                assert_eq!(source.summary().torn, None, "id {id}");
            }
            Err(want) => {
                assert!(read.is_empty(), "id {id}: nothing past the first block");
                let summary = source.summary();
                assert_eq!(summary.name, "run.llr");
                let torn = summary.torn.clone().expect("the damage is reported");
                assert_eq!(torn.offset, block_start as u64, "id {id}: names the block");
                assert!(torn.reason.contains(want), "id {id}: {torn:?}");
            }
        }
    }
}

/// Frame `n` of a small monitor: frame 0 defines the host sampler and two series,
/// frame 1 adds a process sampler whose process is gone (a whole-sampler gap), and
/// every frame carries values (one NaN, to check bits survive).
fn sample_frame(n: u32) -> SampleFrame {
    let series = |sampler: u32, name: &str, unit: &str, kind: SeriesKind| SeriesInfo {
        sampler,
        name: name.to_owned(),
        labels: [("cpu".to_owned(), "all".to_owned())].into_iter().collect(),
        unit: unit.to_owned(),
        kind,
    };
    let (samplers, new_series) = match n {
        0 => (
            vec![SamplerInfo {
                kind: "host".into(),
                name: "host".to_owned(),
            }],
            vec![
                series(0, "host.cpu_percent", "percent", SeriesKind::Gauge),
                series(0, "host.net_rx_bytes", "bytes/s", SeriesKind::Rate),
            ],
        ),
        1 => (
            vec![SamplerInfo {
                kind: "process".into(),
                name: "nginx".to_owned(),
            }],
            vec![series(1, "process.rss_bytes", "bytes", SeriesKind::Gauge)],
        ),
        _ => (Vec::new(), Vec::new()),
    };
    let mut gaps = Vec::new();
    if n >= 1 {
        gaps.push(SampleGap {
            sampler: 1,
            series: None,
            reason: "no process matches nginx".to_owned(),
        });
    }
    SampleFrame {
        first_sampler: n.min(2),
        samplers,
        first_series: [0, 2, 3][n.min(2) as usize],
        series: new_series,
        batch: SampleBatch {
            at_unix_ns: START_NS + u64::from(n + 1) * 100_000_000,
            values: vec![
                SampleValue {
                    series: 0,
                    value: 12.5 * f64::from(n + 1),
                },
                SampleValue {
                    series: 1,
                    value: if n == 2 { f64::NAN } else { 1e6 },
                },
            ],
            gaps,
        },
    }
}

/// Every block of a record file: (kind, whole block bytes).
fn blocks(bytes: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    let mut at = 12;
    while at < bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
        out.push((bytes[at], &bytes[at..at + 9 + len]));
        at += 9 + len;
    }
    out
}

fn read_samples(bytes: &[u8]) -> (Vec<Record>, Vec<SampleBatch>, Box<dyn RecordSource>) {
    let mut source = open_reader(Box::new(Cursor::new(bytes.to_vec())), "run.llr").unwrap();
    let (mut records, mut samples, mut batch) = (Vec::new(), Vec::new(), Vec::new());
    while source.next_batch(&mut batch).unwrap() {
        records.extend_from_slice(&batch);
        source.drain_samples(&mut samples);
    }
    source.drain_samples(&mut samples);
    (records, samples, source)
}

#[test]
fn samples_round_trip_beside_the_records() {
    for compression in [Compression::Raw, Compression::Zstd { level: 3 }] {
        let (bytes, records) = write_run_with_samples(compression, true);
        let (read, samples, source) = read_samples(&bytes);
        assert_eq!(read, records);
        let summary = source.summary();
        assert_eq!(summary.torn, None);
        let want: Vec<SampleBatch> = (0..3).map(|n| sample_frame(n).batch).collect();
        assert_eq!(samples.len(), 3);
        for (got, want) in samples.iter().zip(&want) {
            assert_eq!(got.at_unix_ns, want.at_unix_ns);
            assert_eq!(got.gaps, want.gaps);
            let bits = |b: &SampleBatch| -> Vec<(u32, u64)> {
                b.values
                    .iter()
                    .map(|v| (v.series, v.value.to_bits()))
                    .collect()
            };
            assert_eq!(bits(got), bits(want));
        }
        let tables = &summary.samples.tables;
        assert_eq!(tables.samplers.len(), 2);
        assert_eq!(tables.series.len(), 3);
        assert_eq!(tables.series[2].name, "process.rss_bytes");
        assert_eq!(tables.series[1].kind, SeriesKind::Rate);
        assert_eq!(
            (
                summary.samples.batches,
                summary.samples.values,
                summary.samples.gaps
            ),
            (3, 6, 2)
        );
    }
}

#[test]
fn samples_blocks_are_optional_so_the_records_bytes_do_not_change() {
    let (with_samples, _) = write_run_with_samples(Compression::Raw, true);
    let (without, _) = write_run(Compression::Raw);
    let mut stripped = with_samples[..12].to_vec();
    for (kind, block) in blocks(&with_samples) {
        if kind < 0x40 {
            stripped.extend_from_slice(block);
        }
    }
    assert_eq!(
        stripped, without,
        "removing the samples blocks gives the file without them"
    );
    let kinds: Vec<u8> = blocks(&with_samples).iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds.iter().filter(|&&k| k == 0x40).count(), 2);
    assert_eq!(kinds.iter().filter(|&&k| k == 0x41).count(), 3);
}

#[test]
fn format_with_samples_matches_its_golden_file() {
    let (bytes, _) = write_run_with_samples(Compression::Raw, true);
    assert_golden(&bytes, "samples", "series or samples");
}

/// `bytes` are those of `format_vN_{name}.llr` for this version (written under
/// `UPDATE_GOLDEN=1`); `blocks` names what changed when they are not.
fn assert_golden(bytes: &[u8], name: &str, blocks: &str) {
    let path = format!(
        "{}/tests/golden/format_v{FORMAT_VERSION}_{name}.llr",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, bytes).unwrap();
    }
    let golden = std::fs::read(&path)
        .unwrap_or_else(|_| panic!("{path} is missing: run with UPDATE_GOLDEN=1"));
    assert!(
        golden == bytes,
        "the bytes of the {blocks} blocks changed but FORMAT_VERSION is still \
         {FORMAT_VERSION}: bump it and document the change in docs/RECORD_FORMAT.md"
    );
}

#[test]
fn a_file_with_samples_cut_at_any_byte_keeps_a_prefix() {
    let (bytes, records) = write_run_with_samples(Compression::Zstd { level: 3 }, true);
    let full: Vec<u64> = (0..3).map(|n| sample_frame(n).batch.at_unix_ns).collect();
    for cut in 0..=bytes.len() {
        let Ok(mut source) = open_reader(Box::new(Cursor::new(bytes[..cut].to_vec())), "cut")
        else {
            continue;
        };
        let (mut read, mut samples, mut batch) = (Vec::new(), Vec::new(), Vec::new());
        while source.next_batch(&mut batch).unwrap() {
            read.extend_from_slice(&batch);
        }
        source.drain_samples(&mut samples);
        assert_eq!(read[..], records[..read.len()], "cut at {cut}");
        let times: Vec<u64> = samples.iter().map(|b| b.at_unix_ns).collect();
        assert_eq!(times[..], full[..times.len()], "cut at {cut}");
        if cut == bytes.len() {
            assert_eq!(times.len(), 3);
        }
    }
}

#[test]
fn a_samples_only_file_streams_in_bounded_steps() {
    // What `loadlab monitor -output run.mon` writes: a header without attacks, then
    // series and samples blocks only.
    let header = RunHeader {
        tool: "loadlab monitor".to_owned(),
        start_unix_ns: START_NS,
        ..RunHeader::default()
    };
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    let mut first = sample_frame(0);
    first.batch.values.truncate(1);
    writer.write_samples(&first).unwrap();
    for n in 1..2000u64 {
        let frame = SampleFrame {
            first_sampler: 1,
            first_series: 2,
            batch: SampleBatch {
                at_unix_ns: START_NS + n * 1_000_000_000,
                values: vec![SampleValue {
                    series: 0,
                    value: n as f64,
                }],
                gaps: Vec::new(),
            },
            ..SampleFrame::default()
        };
        writer.write_samples(&frame).unwrap();
    }
    let bytes = writer.close().unwrap();
    let mut source = open_reader(Box::new(Cursor::new(bytes)), "run.mon").unwrap();
    let (mut batch, mut samples, mut most_pending) = (Vec::new(), Vec::new(), 0);
    while source.next_batch(&mut batch).unwrap() {
        assert!(batch.is_empty(), "no records in a monitor file");
        let before = samples.len();
        source.drain_samples(&mut samples);
        most_pending = most_pending.max(samples.len() - before);
    }
    source.drain_samples(&mut samples);
    assert_eq!(samples.len(), 2000);
    assert_eq!(most_pending, 1, "streamed batch by batch, not read whole");
    assert_eq!(source.watermark(), Some(START_NS + 1999 * 1_000_000_000));
    assert_eq!(samples[0].values[0].value, 12.5);
    assert!(
        samples[1..]
            .iter()
            .enumerate()
            .all(|(n, b)| b.values[0].value == (n + 1) as f64)
    );
}

/// A monitor file beside a run: the time-sorted merge reads it in step with the
/// records (its watermark is its latest sample), not whole before the first record.
#[test]
fn a_sorted_merge_reads_a_monitor_file_in_step() {
    let seconds = 600u64;
    let monitor_header = RunHeader {
        tool: "loadlab monitor".to_owned(),
        start_unix_ns: START_NS,
        ..RunHeader::default()
    };
    let mut monitor = RecordWriter::new(Vec::new(), &monitor_header, Compression::Raw).unwrap();
    let mut first = sample_frame(0);
    first.batch.values.truncate(1);
    monitor.write_samples(&first).unwrap();
    for n in 1..seconds {
        monitor
            .write_samples(&SampleFrame {
                first_sampler: 1,
                first_series: 2,
                batch: SampleBatch {
                    at_unix_ns: START_NS + n * 1_000_000_000,
                    values: vec![SampleValue {
                        series: 0,
                        value: n as f64,
                    }],
                    gaps: Vec::new(),
                },
                ..SampleFrame::default()
            })
            .unwrap();
    }
    let mut run = RecordWriter::new(Vec::new(), &header(), Compression::Raw).unwrap();
    for n in 0..seconds {
        let intended_unix_ns = START_NS + n * 1_000_000_000;
        run.push(&Record {
            seq: n,
            intended_unix_ns,
            ..Record::default()
        });
        run.flush_records(Some(intended_unix_ns + 1)).unwrap();
    }
    let sources = [
        ("run.llr", run.close().unwrap()),
        ("run.mon", monitor.close().unwrap()),
    ]
    .map(|(name, bytes)| open_reader(Box::new(Cursor::new(bytes)), name).unwrap());
    let mut sorted = Inputs::from_sources(sources.into()).sorted();
    let (mut batch, mut samples, mut most_ahead) = (Vec::new(), Vec::new(), 0i64);
    let mut records = 0i64;
    while sorted.next_batch(&mut batch).unwrap() {
        records += batch.len() as i64;
        sorted.drain_samples(&mut samples);
        most_ahead = most_ahead.max(samples.len() as i64 - records);
    }
    sorted.drain_samples(&mut samples);
    assert_eq!((records, samples.len()), (seconds as i64, seconds as usize));
    assert!(
        most_ahead < 64,
        "samples read {most_ahead} seconds ahead of the records"
    );
}

#[test]
fn the_writer_refuses_frames_that_do_not_continue_its_tables() {
    let rows: Vec<(SampleFrame, &str)> = vec![
        (sample_frame(1), "frame starts at sampler 1"),
        (
            SampleFrame {
                batch: SampleBatch {
                    values: vec![SampleValue {
                        series: 0,
                        value: 1.0,
                    }],
                    ..SampleBatch::default()
                },
                ..SampleFrame::default()
            },
            "undefined id",
        ),
        (
            SampleFrame {
                samplers: vec![SamplerInfo::default()],
                series: vec![SeriesInfo {
                    sampler: 3,
                    ..SeriesInfo::default()
                }],
                ..SampleFrame::default()
            },
            "undefined id",
        ),
    ];
    for (frame, want) in rows {
        let mut writer = RecordWriter::new(Vec::new(), &header(), Compression::Raw).unwrap();
        let err = writer.write_samples(&frame).unwrap_err();
        // The reason travels as the error's source, as the CLI prints it.
        let err = format!(
            "{err}: {}",
            std::error::Error::source(&err)
                .map(ToString::to_string)
                .unwrap_or_default()
        );
        assert!(err.contains(want), "{err}");
    }
}

#[test]
fn samples_merge_across_inputs_by_sampler_and_series() {
    let (first, _) = write_run_with_samples(Compression::Raw, true);
    // A monitor file whose only sampler is the second file's "process nginx" and whose
    // series is the same process.rss_bytes: it must map onto the first file's ids.
    let header = RunHeader {
        tool: "loadlab monitor".to_owned(),
        start_unix_ns: START_NS,
        ..RunHeader::default()
    };
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    let nginx = sample_frame(1);
    writer
        .write_samples(&SampleFrame {
            first_sampler: 0,
            samplers: nginx.samplers.clone(),
            first_series: 0,
            series: vec![SeriesInfo {
                sampler: 0,
                ..nginx.series[0].clone()
            }],
            batch: SampleBatch {
                at_unix_ns: START_NS + 50_000_000,
                values: vec![SampleValue {
                    series: 0,
                    value: 4096.0,
                }],
                gaps: vec![SampleGap {
                    sampler: 0,
                    series: Some(0),
                    reason: "x".to_owned(),
                }],
            },
        })
        .unwrap();
    let second = writer.close().unwrap();
    let sources = vec![
        open_reader(Box::new(Cursor::new(first)), "a.llr").unwrap(),
        open_reader(Box::new(Cursor::new(second)), "b.mon").unwrap(),
    ];
    let mut inputs = Inputs::from_sources(sources).sorted();
    let (mut batch, mut samples) = (Vec::new(), Vec::new());
    while inputs.next_batch(&mut batch).unwrap() {
        inputs.drain_samples(&mut samples);
    }
    inputs.drain_samples(&mut samples);
    let tables = inputs.sample_tables();
    assert_eq!(tables.samplers.len(), 2, "{:?}", tables.samplers);
    assert_eq!(tables.series.len(), 3);
    assert_eq!(samples.len(), 4);
    let from_monitor = samples
        .iter()
        .find(|b| b.at_unix_ns == START_NS + 50_000_000)
        .unwrap();
    // Ids depend on reading order; names do not.
    let rss = from_monitor.values[0].series;
    let info = &tables.series[rss as usize];
    assert_eq!(info.name, "process.rss_bytes");
    assert_eq!(tables.samplers[info.sampler as usize].name, "nginx");
    assert_eq!(from_monitor.gaps[0].sampler, info.sampler);
    assert_eq!(from_monitor.gaps[0].series, Some(rss));
    let from_run = samples
        .iter()
        .find(|b| b.at_unix_ns == START_NS + 200_000_000)
        .unwrap();
    assert_eq!(
        from_run.gaps[0].sampler, info.sampler,
        "the run's nginx gap is on the same merged sampler"
    );
}

/// A monitor file (no attacks) of `total` sample batches, one value each.
fn monitor_file(total: u64) -> Vec<u8> {
    let header = RunHeader {
        tool: "loadlab monitor".to_owned(),
        start_unix_ns: START_NS,
        ..RunHeader::default()
    };
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    let mut first = sample_frame(0);
    first.batch.values.truncate(1);
    writer.write_samples(&first).unwrap();
    for n in 1..total {
        let frame = SampleFrame {
            first_sampler: 1,
            first_series: 2,
            batch: SampleBatch {
                at_unix_ns: START_NS + n,
                values: vec![SampleValue {
                    series: 0,
                    value: 1.0,
                }],
                gaps: Vec::new(),
            },
            ..SampleFrame::default()
        };
        writer.write_samples(&frame).unwrap();
    }
    writer.close().unwrap()
}

#[test]
fn samples_nobody_drains_are_dropped_and_counted_not_hoarded() {
    let total = record::MAX_PENDING_SAMPLE_BATCHES as u64 + 100;
    let bytes = monitor_file(total);
    let mut source = open_reader(Box::new(Cursor::new(bytes)), "run.mon").unwrap();
    let mut records = Vec::new();
    while source.next_batch(&mut records).unwrap() {}
    let summary = source.summary().samples.clone();
    assert_eq!(summary.batches, total);
    assert_eq!(summary.dropped_batches, 100);
    let mut samples = Vec::new();
    source.drain_samples(&mut samples);
    assert_eq!(samples.len(), record::MAX_PENDING_SAMPLE_BATCHES);
}

/// A monitor file alone in the time-sorted merge: it vouches for no request, so the
/// merge would read it whole before returning; it returns after each samples block
/// instead, and a consumer that drains as it goes loses nothing.
#[test]
fn a_sorted_merge_hands_over_a_monitor_file_alone_as_it_reads() {
    let total = record::MAX_PENDING_SAMPLE_BATCHES as u64 + 100;
    let source = open_reader(Box::new(Cursor::new(monitor_file(total))), "run.mon").unwrap();
    let mut sorted = Inputs::from_sources(vec![source]).sorted();
    let (mut batch, mut samples) = (Vec::new(), Vec::new());
    while sorted.next_batch(&mut batch).unwrap() {
        assert!(batch.is_empty());
        sorted.drain_samples(&mut samples);
    }
    sorted.drain_samples(&mut samples);
    assert_eq!(samples.len() as u64, total);
    let summary = &sorted.summaries().next().unwrap().samples;
    assert_eq!(summary.dropped_batches, 0);
}

/// The threaded reader every command uses: both orders give every record and sample
/// once, samplers merged by name whichever file comes first, and the summaries in the
/// order the paths were given.
#[test]
fn a_record_stream_merges_a_run_and_its_monitor_file_in_either_order() {
    let dir = tempfile::tempdir().unwrap();
    let (run, records) = write_run_with_samples(Compression::Zstd { level: 1 }, true);
    let run_path = dir.path().join("run.llr");
    let monitor_path = dir.path().join("run.mon");
    std::fs::write(&run_path, run).unwrap();
    std::fs::write(&monitor_path, monitor_file(1000)).unwrap();
    let [run_path, monitor_path] = [run_path, monitor_path].map(|p| p.display().to_string());
    for order in [ReadOrder::Input, ReadOrder::SendTime] {
        for paths in [
            [run_path.clone(), monitor_path.clone()],
            [monitor_path.clone(), run_path.clone()],
        ] {
            let mut stream = RecordStream::open(&paths, order, false).unwrap();
            let (mut batch, mut samples, mut seen) = (Vec::new(), Vec::new(), 0);
            while stream.next_batch(&mut batch).unwrap() {
                seen += batch.len();
                stream.take_samples(&mut samples);
            }
            let tables = stream.take_samples(&mut samples).clone();
            let hosts = tables.samplers.iter().filter(|s| s.name == "host").count();
            assert_eq!(hosts, 1, "{order:?} {paths:?}: {:?}", tables.samplers);
            let (run_tables, summaries) = stream.into_parts();
            assert_eq!(seen, records.len(), "{order:?} {paths:?}");
            assert_eq!(run_tables.attacks[0].name, "search");
            let names: Vec<&str> = summaries.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, paths.iter().map(String::as_str).collect::<Vec<_>>());
            let run_batches = summaries.iter().map(|s| s.samples.batches).sum::<u64>();
            assert_eq!(samples.len() as u64, run_batches, "{order:?} {paths:?}");
            for batch in &samples {
                assert!(tables.check(batch).is_ok(), "merged ids resolve");
            }
        }
    }
    let missing = [dir.path().join("nope.llr").display().to_string()];
    let err = RecordStream::open(&missing, ReadOrder::Input, false)
        .err()
        .unwrap();
    assert!(err.to_string().contains("nope.llr"), "{err}");
}

/// A replay run's header: [`header`] with the attack's `replay` set.
fn replay_header() -> RunHeader {
    let mut header = header();
    header.attacks[0].replay = Some(ReplayInfo {
        files: vec!["access.log.gz".to_owned()],
        format: "nginx".to_owned(),
        speed: 2.0,
        log_start_unix_ns: START_NS - 3_600_000_000_000,
    });
    header
}

/// What the log said about [`record`] `n`: its status then, a latency for most, bytes
/// for some.
fn logged_of(record: &Record) -> Logged {
    let n = record.seq;
    Logged {
        attack: record.attack,
        target: record.target,
        seq: n,
        intended_unix_ns: record.intended_unix_ns,
        status: if n % 10 == 3 { 502 } else { 200 },
        latency_ns: (!n.is_multiple_of(7)).then_some(1_000_000 + n * 10_000),
        bytes: (!n.is_multiple_of(5)).then_some(512 + n),
    }
}

/// A replay: [`write_run`]'s records with the replay header and end, and with
/// `logged` a logged block after each records block, as the engine writes them.
fn write_replay_run(compression: Compression, logged: bool) -> (Vec<u8>, Vec<Record>) {
    let records: Vec<Record> = (0..300).map(record).collect();
    let mut writer = RecordWriter::new(Vec::new(), &replay_header(), compression).unwrap();
    let target = TargetInfo {
        method: "POST".to_owned(),
        url: "/things".to_owned(),
        ..TargetInfo::default()
    };
    writer.add_targets(1, &[target]).unwrap();
    let error = ErrorEntry {
        kind: ErrorKind::Status,
        text: "503 Service Unavailable".to_owned(),
    };
    writer.add_errors(0, &[error]).unwrap();
    for (index, chunk) in records.chunks(100).enumerate() {
        writer.extend(chunk);
        writer
            .flush_records(Some(START_NS + (index as u64 + 1) * 100_000_000))
            .unwrap();
        if logged {
            let originals: Vec<Logged> = chunk.iter().map(logged_of).collect();
            writer.write_logged(&originals).unwrap();
        }
    }
    let end = RunEnd {
        replays: vec![replay_end()],
        at_unix_ns: START_NS + 1_000_000_000,
        attacks: vec![AttackEnd {
            asked: 300,
            sent: 300,
            unsent: 0,
            asked_span_ns: 299_000_000,
        }],
        ..RunEnd::default()
    };
    (writer.finish(&end).unwrap(), records)
}

fn replay_end() -> ReplayEnd {
    ReplayEnd {
        attack: 0,
        lines: 310,
        requests: 300,
        bad_lines: 2,
        bad_examples: vec!["access.log.gz:7: no request line".to_owned()],
        filtered: 8,
        reordered: 12,
        max_reorder_ns: 2_100_000_000,
        loops: 0,
    }
}

/// Every record and logged original of `bytes`, drained after each batch.
fn read_logged(bytes: &[u8]) -> (Vec<Record>, Vec<Logged>, Box<dyn RecordSource>) {
    let mut source = open_reader(Box::new(Cursor::new(bytes.to_vec())), "run.llr").unwrap();
    let (mut records, mut logged, mut batch) = (Vec::new(), Vec::new(), Vec::new());
    while source.next_batch(&mut batch).unwrap() {
        records.extend_from_slice(&batch);
        source.drain_logged(&mut logged);
    }
    source.drain_logged(&mut logged);
    (records, logged, source)
}

#[test]
fn logged_originals_round_trip_beside_the_records() {
    for compression in [Compression::Raw, Compression::Zstd { level: 3 }] {
        let (bytes, records) = write_replay_run(compression, true);
        let (read, logged, source) = read_logged(&bytes);
        assert_eq!(read, records, "{compression:?}");
        let want: Vec<Logged> = records.iter().map(logged_of).collect();
        assert_eq!(logged, want, "{compression:?}");
        let summary = source.summary();
        assert_eq!((summary.logged, summary.torn.clone()), (300, None));
        assert_eq!(summary.header, replay_header(), "the replay key reads back");
        let end = summary.end.clone().unwrap();
        assert_eq!(end.replays, vec![replay_end()]);
    }
}

#[test]
fn logged_originals_nobody_drains_are_dropped_batch_by_batch() {
    let (bytes, _) = write_replay_run(Compression::Raw, true);
    let mut source = open_reader(Box::new(Cursor::new(bytes)), "run.llr").unwrap();
    let (mut batch, mut logged) = (Vec::new(), Vec::new());
    while source.next_batch(&mut batch).unwrap() {}
    source.drain_logged(&mut logged);
    // Only the last block, read by the final call, is still there.
    assert_eq!(logged.len(), 100);
    assert_eq!(logged[0].seq, 200);
    assert_eq!(source.summary().logged, 300, "all were read and counted");
}

#[test]
fn logged_blocks_are_optional_so_older_readers_skip_them() {
    let (with_logged, records) = write_replay_run(Compression::Raw, true);
    let (without, _) = write_replay_run(Compression::Raw, false);
    let mut stripped = with_logged[..12].to_vec();
    // A reader that predates kind 0x42 skips it as it skips any optional kind: the
    // same blocks under a kind nobody knows (the checksum covers the payload only).
    let mut unknown_kind = stripped.clone();
    for (kind, block) in blocks(&with_logged) {
        if kind != 0x42 {
            stripped.extend_from_slice(block);
        }
        unknown_kind.extend_from_slice(block);
        if kind == 0x42 {
            let at = unknown_kind.len() - block.len();
            unknown_kind[at] = 0x7e;
        }
    }
    assert_eq!(
        stripped, without,
        "removing the logged blocks gives the run"
    );
    let kinds: Vec<u8> = blocks(&with_logged).iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds.iter().filter(|&&k| k == 0x42).count(), 3);
    let (read, logged, source) = read_logged(&unknown_kind);
    assert_eq!(read, records);
    assert!(logged.is_empty());
    assert_eq!(
        (source.summary().logged, source.summary().torn.clone()),
        (0, None)
    );
}

#[test]
fn format_with_logged_blocks_matches_its_golden_file() {
    let (bytes, _) = write_replay_run(Compression::Raw, true);
    let path = format!(
        "{}/tests/golden/format_v{FORMAT_VERSION}_logged.llr",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &bytes).unwrap();
    }
    let golden = std::fs::read(&path)
        .unwrap_or_else(|_| panic!("{path} is missing: run with UPDATE_GOLDEN=1"));
    assert!(
        golden == bytes,
        "the bytes of the logged blocks, or of the replay keys, changed but FORMAT_VERSION \
         is still {FORMAT_VERSION}: bump it and document the change in docs/RECORD_FORMAT.md"
    );
    let (_, logged, _) = read_logged(&golden);
    assert_eq!(logged.len(), 300);
}

#[test]
fn a_file_with_logged_blocks_cut_at_any_byte_keeps_a_prefix() {
    let (bytes, records) = write_replay_run(Compression::Zstd { level: 3 }, true);
    let want: Vec<Logged> = records.iter().map(logged_of).collect();
    for cut in 0..=bytes.len() {
        let Ok(mut source) = open_reader(Box::new(Cursor::new(bytes[..cut].to_vec())), "cut")
        else {
            continue;
        };
        let (mut read, mut logged, mut batch) = (Vec::new(), Vec::new(), Vec::new());
        while source.next_batch(&mut batch).unwrap() {
            read.extend_from_slice(&batch);
            source.drain_logged(&mut logged);
        }
        source.drain_logged(&mut logged);
        assert_eq!(read[..], records[..read.len()], "cut at {cut}");
        assert_eq!(logged[..], want[..logged.len()], "cut at {cut}");
        if let Some(torn) = &source.summary().torn {
            assert_eq!(torn.offset + torn.skipped_bytes, cut as u64, "cut at {cut}");
        }
        if cut == bytes.len() {
            assert_eq!(logged.len(), 300);
        }
    }
}

/// The first logged block of `bytes` (a raw replay run), changed by `patch` (given the
/// column bytes), with its checksum made good: damage only the decoder can see.
fn patched_logged_block(bytes: &[u8], patch: impl Fn(&mut Vec<u8>)) -> (Vec<u8>, usize) {
    let (_, block) = blocks(bytes)
        .into_iter()
        .find(|(kind, _)| *kind == 0x42)
        .unwrap();
    let start = block.as_ptr() as usize - bytes.as_ptr() as usize;
    let mut data = block[9 + 9..].to_vec();
    patch(&mut data);
    let mut payload = block[9..9 + 9].to_vec();
    payload[5..9].copy_from_slice(&(data.len() as u32).to_le_bytes());
    payload.extend_from_slice(&data);
    let mut patched = bytes[..start].to_vec();
    patched.push(0x42);
    patched.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    patched.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    patched.extend_from_slice(&payload);
    patched.extend_from_slice(&bytes[start + block.len()..]);
    (patched, start)
}

#[test]
fn a_damaged_logged_block_is_damage_named_with_its_offset() {
    let (bytes, _) = write_replay_run(Compression::Raw, true);
    type Patch = fn(&mut Vec<u8>);
    let rows: &[(Patch, &str)] = &[
        (
            |data| data.truncate(data.len() - 1),
            "logged block: the columns end in the middle of a number",
        ),
        (|data| data.push(0), "logged block: 1 bytes left over"),
        // The first target id (column 2 starts after 100 one-byte attack ids).
        (
            |data| data[100] = 9,
            "logged block: request seq 0 names attack 0 or target 9 not in the dictionary",
        ),
        (|data| data[0] = 1, "names attack 1"),
    ];
    for (patch, want) in rows {
        let (patched, start) = patched_logged_block(&bytes, patch);
        let (read, logged, source) = read_logged(&patched);
        assert_eq!(read.len(), 100, "{want}: the records before it are kept");
        assert!(logged.is_empty(), "{want}");
        let torn = source
            .summary()
            .torn
            .clone()
            .expect("the damage is reported");
        assert_eq!(torn.offset, start as u64, "{want}: names the block");
        assert!(torn.reason.contains(want), "{want}: {torn:?}");
    }
}

#[test]
fn the_writer_refuses_logged_requests_naming_ids_not_written() {
    let mut writer = RecordWriter::new(Vec::new(), &replay_header(), Compression::Raw).unwrap();
    let rows = [
        (Logged::default(), None),
        (
            Logged {
                target: 1,
                seq: 7,
                ..Logged::default()
            },
            Some("logged: request seq 7 names attack 0 or target 1, but 1 attacks and 1 targets"),
        ),
        (
            Logged {
                attack: 1,
                ..Logged::default()
            },
            Some("names attack 1"),
        ),
    ];
    for (logged, want) in rows {
        match (writer.write_logged(&[logged]), want) {
            (Ok(()), None) => {}
            (Err(err), Some(want)) => {
                let io = err.io_error().expect("an input error");
                assert_eq!(io.kind(), std::io::ErrorKind::InvalidInput);
                assert!(io.to_string().contains(want), "{io}");
            }
            (got, want) => panic!("{logged:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn merged_and_streamed_logged_originals_take_the_merged_ids() {
    // The plain run first: its POST target is id 1; the replay's `/things` comes after.
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.llr");
    let replay = dir.path().join("replay.llr");
    std::fs::write(&plain, write_run(Compression::Raw).0).unwrap();
    let (replay_bytes, records) = write_replay_run(Compression::Zstd { level: 1 }, true);
    std::fs::write(&replay, replay_bytes).unwrap();
    let paths = [plain, replay].map(|p| p.display().to_string());
    let want = |tables: &record::RunTables, logged: &[Logged]| {
        assert_eq!(logged.len(), records.len());
        for (got, record) in logged.iter().zip(&records) {
            let target = &tables.targets[got.target as usize];
            let url = if record.target == 0 {
                "http://127.0.0.1:8080/"
            } else {
                "/things"
            };
            assert_eq!(target.url, url, "seq {}", got.seq);
            assert_eq!(tables.attacks[usize::from(got.attack)].name, "search");
        }
    };
    let mut inputs = Inputs::open(&paths).unwrap();
    let (mut batch, mut logged) = (Vec::new(), Vec::new());
    while inputs.next_batch(&mut batch).unwrap() {
        inputs.drain_logged(&mut logged);
    }
    inputs.drain_logged(&mut logged);
    want(inputs.tables(), &logged);
    for order in [ReadOrder::Input, ReadOrder::SendTime] {
        let mut stream = RecordStream::open(&paths, order, false).unwrap();
        let mut logged = Vec::new();
        while stream.next_batch(&mut batch).unwrap() {
            stream.take_logged(&mut logged);
        }
        stream.take_logged(&mut logged);
        let (tables, summaries) = stream.into_parts();
        logged.sort_by_key(|l| l.seq);
        want(&tables, &logged);
        assert_eq!(summaries[1].logged, 300, "{order:?}");
    }
}

fn exemplar_of(record: &Record, kind: ExemplarKind) -> Exemplar {
    Exemplar {
        kind,
        attack: record.attack,
        target: record.target,
        seq: record.seq,
        trace_id: format!("{:032x}", u128::from(record.seq) + 1),
        span_id: format!("{:016x}", record.seq + 1),
        intended_unix_ns: record.intended_unix_ns,
        latency_ns: record.latency_ns,
        status: record.status,
        error: record.error,
    }
}

/// A traced run's header and exemplars round-trip, and merged with another run (whose
/// tables number the same target and error differently) they take the merged ids.
#[test]
fn a_traced_runs_exemplars_read_back_with_merged_ids() {
    let (plain, _) = write_run(Compression::Raw);
    let traced_header = RunHeader {
        trace: Some(TraceInfo { sample: 0.25 }),
        targets: Vec::new(),
        ..header()
    };
    let mut writer = RecordWriter::new(Vec::new(), &traced_header, Compression::Raw).unwrap();
    // Its own order: "things" is target 0 here, 1 in the plain run.
    let things = TargetInfo {
        step: Some("add thing".to_owned()),
        checks: vec!["status 201".to_owned(), "json $.id exists".to_owned()],
        method: "POST".to_owned(),
        url: "http://127.0.0.1:8080/things".to_owned(),
    };
    writer
        .add_targets(0, &[things, header().targets[0].clone()])
        .unwrap();
    let timeout = ErrorEntry {
        kind: ErrorKind::Timeout,
        text: "timeout".to_owned(),
    };
    writer.add_errors(0, &[timeout]).unwrap();
    let slow = Record {
        target: 0,
        latency_ns: 9_000_000,
        ..record(3)
    };
    let failed = Record {
        target: 1,
        status: 0,
        error: 1,
        ..record(4)
    };
    writer.extend(&[slow, failed]);
    writer.flush_records(None).unwrap();
    let exemplars = vec![
        exemplar_of(&slow, ExemplarKind::Slow),
        exemplar_of(&failed, ExemplarKind::Failed),
        exemplar_of(&slow, ExemplarKind::Typical),
    ];
    let end = RunEnd {
        exemplars: exemplars.clone(),
        ..RunEnd::default()
    };
    let traced = writer.finish(&end).unwrap();
    let (_, source) = read_all(&traced).unwrap();
    assert_eq!(
        source.summary().header.trace,
        Some(TraceInfo { sample: 0.25 })
    );
    assert_eq!(source.summary().end.as_ref().unwrap().exemplars, exemplars);
    let sources = vec![
        open_reader(Box::new(Cursor::new(plain)), "a.llr").unwrap(),
        open_reader(Box::new(Cursor::new(traced)), "b.llr").unwrap(),
    ];
    let mut inputs = Inputs::from_sources(sources);
    let mut batch = Vec::new();
    while inputs.next_batch(&mut batch).unwrap() {}
    let merged = inputs.exemplars();
    let tables = inputs.tables();
    let names: Vec<(&str, Option<&str>)> = merged
        .iter()
        .map(|e| {
            (
                tables.targets[e.target as usize].url.as_str(),
                tables.error(e.error).map(|error| error.text.as_str()),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("http://127.0.0.1:8080/things", None),
            ("http://127.0.0.1:8080/", Some("timeout")),
            ("http://127.0.0.1:8080/things", None),
        ]
    );
    assert_eq!(merged[1].trace_id, exemplars[1].trace_id);
    assert_eq!(merged[2].kind, ExemplarKind::Typical);
}

/// A file whose header declares no attack and no target (a monitor's file, or a damaged
/// one) that holds a record anyway: the record names ids nothing declared, which is
/// damage named with its block, never an index out of bounds in the merge.
#[test]
fn a_record_naming_ids_the_file_never_declared_is_damage_not_a_panic() {
    let empty = RunHeader {
        attacks: Vec::new(),
        targets: Vec::new(),
        ..header()
    };
    let mut writer = RecordWriter::new(Vec::new(), &empty, Compression::Raw).unwrap();
    writer.push(&record(0));
    writer.flush_records(Some(START_NS)).unwrap();
    let bytes = writer.finish(&RunEnd::default()).unwrap();
    let source = open_reader(Box::new(Cursor::new(bytes)), "bare.llr").unwrap();
    let mut sorted = Inputs::from_sources(vec![source]).sorted();
    let mut batch = Vec::new();
    let mut read = 0;
    while sorted.next_batch(&mut batch).unwrap() {
        read += batch.len();
    }
    assert_eq!(read, 0, "no record with undeclared ids is handed on");
    let torn = sorted
        .summaries()
        .find_map(|s| s.torn.clone())
        .expect("the damage is reported");
    assert!(
        torn.reason
            .contains("record seq 0 names attack 0, target 0 or error 0 not in the dictionary"),
        "{torn:?}"
    );
}

/// The figures of the connection opened by [`record`] `n` (a `ws` step's upgrade).
fn connection_of(record: &Record) -> record::Connection {
    let n = record.seq;
    let mut latency = record::MessageLatency::default();
    for i in 0..n % 5 {
        latency.add(1_000_000 + i * 250_000);
    }
    // Every sixth a bidirectional call's, its answers timed (version 8 on).
    let round_trips = if n.is_multiple_of(6) {
        latency.clone()
    } else {
        record::MessageLatency::default()
    };
    record::Connection {
        attack: record.attack,
        target: record.target,
        seq: n,
        opened_unix_ns: record.intended_unix_ns + 500_000,
        closed_unix_ns: record.intended_unix_ns + 2_000_000_000,
        messages_out: n % 5,
        bytes_out: 20 * (n % 5),
        messages_in: n % 7,
        bytes_in: 30 * (n % 7),
        messages_failed: n % 3,
        latency,
        close: record::Close {
            by: if n.is_multiple_of(2) {
                record::ClosedBy::Client
            } else {
                record::ClosedBy::Server
            },
            code: if n.is_multiple_of(11) { 0 } else { 1000 },
        },
        subprotocol: n.is_multiple_of(4).then(|| "chat".to_owned()),
        // Every third a gRPC streaming call's (version 7 on).
        kind: if n.is_multiple_of(3) {
            record::EntryKind::GrpcCall
        } else {
            record::EntryKind::Connection
        },
        first_message_ns: n.is_multiple_of(3).then_some(400_000 + n),
        round_trips,
        // Every fifth an event stream's, its events by type (version 9 on).
        events: if n.is_multiple_of(5) {
            [("message".to_owned(), n % 7), ("tick".to_owned(), 1)].into()
        } else {
            Default::default()
        },
        ..record::Connection::default()
    }
}

/// [`write_run`]'s records with, when `connections` is set, a connections block
/// after each records block, as the engine writes them.
fn write_streams_run(connections: bool) -> (Vec<u8>, Vec<Record>) {
    let records: Vec<Record> = (0..300).map(record).collect();
    let mut writer = RecordWriter::new(Vec::new(), &header(), Compression::Raw).unwrap();
    let target = TargetInfo {
        step: Some("chat".to_owned()),
        method: "GET".to_owned(),
        url: "http://127.0.0.1:8080/things".to_owned(),
        ..TargetInfo::default()
    };
    writer.add_targets(1, &[target]).unwrap();
    let error = ErrorEntry {
        kind: ErrorKind::Status,
        text: "503 Service Unavailable".to_owned(),
    };
    writer.add_errors(0, &[error]).unwrap();
    for (index, chunk) in records.chunks(100).enumerate() {
        writer.extend(chunk);
        writer.flush_records(None).unwrap();
        if connections {
            let figures: Vec<record::Connection> = chunk.iter().map(connection_of).collect();
            writer.write_connections(&figures).unwrap();
        }
        writer.write_stats(&streams_stats(index as u64)).unwrap();
    }
    (writer.finish(&RunEnd::default()).unwrap(), records)
}

/// The stats sample of second `n` of [`write_streams_run`] (version 8 on).
fn streams_stats(n: u64) -> GeneratorStats {
    let mut latency = record::MessageLatency::default();
    for i in 0..=n {
        latency.add(2_000_000 + i * 300_000);
    }
    GeneratorStats {
        at_unix_ns: START_NS + (n + 1) * 1_000_000_000,
        sent: 100 * (n + 1),
        streams: Some(record::StreamStats {
            open: 100 - n,
            opened: 100,
            closed: n,
            messages_out: 40 + n,
            bytes_out: 800 + n,
            messages_in: 70 + n,
            bytes_in: 2100 + n,
            latency,
        }),
        ..GeneratorStats::default()
    }
}

#[test]
fn stream_figures_per_second_round_trip_in_the_stats_samples() {
    let (bytes, _) = write_streams_run(true);
    let (_, _, source) = read_connections(&bytes);
    let read: Vec<GeneratorStats> = source.summary().stats.clone();
    let want: Vec<GeneratorStats> = (0..3).map(streams_stats).collect();
    assert_eq!(read, want);
}

#[test]
fn stats_samples_of_version_7_read_without_streams_and_write_as_they_were() {
    let path = format!("{}/tests/golden/format_v7.llr", env!("CARGO_MANIFEST_DIR"));
    let (_, source) = read_all(&std::fs::read(&path).unwrap()).unwrap();
    let stats = &source.summary().stats;
    assert_eq!(stats.len(), 3);
    assert!(stats.iter().all(|s| s.streams.is_none()), "{stats:?}");
    // A run without streams writes its samples as version 7 did.
    let json = r#"{"at_unix_ns":1,"cpu_ns":2,"sent":3,"completed":3,"in_flight":0,"connections_open":1,"behind":0,"rss_bytes":9}"#;
    let sample: GeneratorStats = serde_json::from_str(json).unwrap();
    assert_eq!(serde_json::to_string(&sample).unwrap(), json);
}

#[test]
fn a_stats_sample_with_bad_stream_buckets_or_unknown_keys_is_damage() {
    let rows: &[(&str, &str)] = &[
        (
            r#"{"at_unix_ns":1,"cpu_ns":2,"sent":3,"completed":3,"in_flight":0,"connections_open":1,"behind":0,"rss_bytes":9,"streams":{"open":1,"opened":1,"closed":0,"messages_out":0,"bytes_out":0,"messages_in":0,"bytes_in":0,"latency":[[9,1],[3,1]]}}"#,
            "stats block: streams: latency buckets",
        ),
        (
            r#"{"at_unix_ns":1,"cpu_ns":2,"sent":3,"completed":3,"in_flight":0,"connections_open":1,"behind":0,"rss_bytes":9,"streams":{"open":1,"held":2}}"#,
            "unknown field `held`",
        ),
    ];
    for (json, want) in rows {
        let (mut bytes, _) = write_streams_run(false);
        let end = blocks(&bytes).last().unwrap().1.len();
        let end_block = bytes.split_off(bytes.len() - end);
        let payload = json.as_bytes();
        bytes.push(4);
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        bytes.extend_from_slice(payload);
        bytes.extend_from_slice(&end_block);
        let (read, _, source) = read_connections(&bytes);
        assert_eq!(read.len(), 300, "{want}");
        let torn = source.summary().torn.clone().unwrap();
        assert!(torn.reason.contains(want), "{want}: {}", torn.reason);
    }
}

fn read_connections(bytes: &[u8]) -> (Vec<Record>, Vec<record::Connection>, Box<dyn RecordSource>) {
    let mut source = open_reader(Box::new(Cursor::new(bytes.to_vec())), "run.llr").unwrap();
    let (mut records, mut connections, mut batch) = (Vec::new(), Vec::new(), Vec::new());
    while source.next_batch(&mut batch).unwrap() {
        records.extend_from_slice(&batch);
        source.drain_connections(&mut connections);
    }
    source.drain_connections(&mut connections);
    (records, connections, source)
}

#[test]
fn connection_figures_round_trip_and_older_readers_skip_them() {
    let (with, records) = write_streams_run(true);
    let (without, _) = write_streams_run(false);
    let (read, connections, source) = read_connections(&with);
    assert_eq!(read, records);
    let want: Vec<record::Connection> = records.iter().map(connection_of).collect();
    assert_eq!(connections, want);
    assert_eq!(source.summary().torn, None);
    // Without its 0x43 blocks the file is the plain run, byte for byte; a reader that
    // predates the kind skips it as any optional kind (here: renamed to one unknown).
    let (mut stripped, mut unknown) = (with[..12].to_vec(), with[..12].to_vec());
    for (kind, block) in blocks(&with) {
        if kind != 0x43 {
            stripped.extend_from_slice(block);
        }
        unknown.extend_from_slice(block);
        if kind == 0x43 {
            let at = unknown.len() - block.len();
            unknown[at] = 0x7e;
        }
    }
    assert_eq!(stripped, without);
    let (read, connections, source) = read_connections(&unknown);
    assert_eq!((read, connections.len()), (records, 0));
    assert_eq!(source.summary().torn, None);
}

#[test]
fn format_with_connections_matches_its_golden_file() {
    let (bytes, _) = write_streams_run(true);
    assert_golden(&bytes, "connections", "connections");
}

#[test]
fn connections_entries_of_version_6_read_as_connections() {
    // A version 6 entry has neither `kind` nor `first_message_ns`.
    let json = r#"{"attack":0,"target":0,"seq":1,"opened_unix_ns":1,"closed_unix_ns":2,"messages_out":1,"bytes_out":3,"messages_in":2,"bytes_in":4,"close":{"by":"server"}}"#;
    let entry: record::Connection = serde_json::from_str(json).unwrap();
    assert_eq!(entry.kind, record::EntryKind::Connection);
    assert_eq!(entry.first_message_ns, None);
    let call = record::Connection {
        kind: record::EntryKind::GrpcCall,
        first_message_ns: Some(7),
        ..entry.clone()
    };
    let written = serde_json::to_string(&call).unwrap();
    assert!(
        written.contains(r#""kind":"grpc_call","first_message_ns":7"#),
        "{written}"
    );
    assert_eq!(serde_json::to_string(&entry).unwrap(), json);
}

#[test]
fn connections_entries_of_version_8_read_without_event_types() {
    let path = format!(
        "{}/tests/golden/format_v8_connections.llr",
        env!("CARGO_MANIFEST_DIR")
    );
    let (records, connections, source) = read_connections(&std::fs::read(&path).unwrap());
    assert_eq!((records.len(), connections.len()), (300, 300));
    assert_eq!(source.summary().torn, None);
    assert!(connections.iter().all(|c| c.events.is_empty()));
    // What version 9 added reads back, and an entry without it writes as before.
    let (bytes, _) = write_streams_run(true);
    let (_, connections, _) = read_connections(&bytes);
    let typed = connections.iter().filter(|c| !c.events.is_empty()).count();
    assert_eq!(typed, 60, "every fifth entry counts its events by type");
    let json = r#"{"attack":0,"target":0,"seq":1,"opened_unix_ns":1,"closed_unix_ns":2,"messages_out":0,"bytes_out":0,"messages_in":2,"bytes_in":4,"close":{"by":"server"},"events":{"message":1,"tick":1}}"#;
    let entry: record::Connection = serde_json::from_str(json).unwrap();
    assert_eq!(entry.events.get("tick"), Some(&1));
    assert_eq!(serde_json::to_string(&entry).unwrap(), json);
    let plain = record::Connection {
        events: Default::default(),
        ..entry
    };
    assert!(!serde_json::to_string(&plain).unwrap().contains("events"));
}

#[test]
fn a_connections_block_naming_unknown_ids_or_bad_buckets_is_damage() {
    let rows: &[(&str, &str)] = &[
        (
            r#"{"connections":[{"attack":0,"target":9,"seq":4,"opened_unix_ns":1,"closed_unix_ns":2,"messages_out":0,"bytes_out":0,"messages_in":0,"bytes_in":0,"close":{"by":"client"}}]}"#,
            "seq 4 names attack 0 or target 9",
        ),
        (
            r#"{"connections":[{"attack":0,"target":0,"seq":5,"opened_unix_ns":1,"closed_unix_ns":2,"messages_out":0,"bytes_out":0,"messages_in":0,"bytes_in":0,"latency":[[3,1],[2,1]],"close":{"by":"client"}}]}"#,
            "seq 5: latency buckets",
        ),
        (
            r#"{"connections":[{"attack":0,"target":0,"seq":6,"opened_unix_ns":1,"closed_unix_ns":2,"messages_out":0,"bytes_out":0,"messages_in":0,"bytes_in":0,"round_trips":[[2,0]],"close":{"by":"server"},"kind":"grpc_call"}]}"#,
            "seq 6: latency buckets",
        ),
        (r#"{"connections":[{"attack":0}]}"#, "missing field"),
    ];
    for (json, want) in rows {
        let (mut bytes, _) = write_streams_run(false);
        let end = blocks(&bytes).last().unwrap().1.len();
        let end_block = bytes.split_off(bytes.len() - end);
        let payload = json.as_bytes();
        bytes.push(0x43);
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        bytes.extend_from_slice(payload);
        bytes.extend_from_slice(&end_block);
        let (read, connections, source) = read_connections(&bytes);
        assert_eq!((read.len(), connections.len()), (300, 0), "{want}");
        let torn = source.summary().torn.clone().unwrap();
        assert!(
            torn.reason.contains("connections block") && torn.reason.contains(want),
            "{want}: {}",
            torn.reason
        );
    }
}

#[test]
fn the_writer_refuses_connections_naming_ids_not_written_and_merges_remap_them() {
    let mut writer = RecordWriter::new(Vec::new(), &header(), Compression::Raw).unwrap();
    let bad = record::Connection {
        target: 5,
        ..record::Connection::default()
    };
    let err = writer.write_connections(&[bad]).unwrap_err();
    assert!(
        format!("{err:?}").contains("names attack 0 or target 5"),
        "{err:?}"
    );
    // Two inputs: the second's ids move when merged, and its figures move with them.
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.llr");
    let streams = dir.path().join("streams.llr");
    let (replay_bytes, _) = write_replay_run(Compression::Raw, false);
    std::fs::write(&plain, replay_bytes).unwrap();
    std::fs::write(&streams, write_streams_run(true).0).unwrap();
    let paths = [plain, streams].map(|p| p.display().to_string());
    for order in [ReadOrder::Input, ReadOrder::SendTime] {
        let mut stream = RecordStream::open(&paths, order, false).unwrap();
        let (mut batch, mut connections) = (Vec::new(), Vec::new());
        while stream.next_batch(&mut batch).unwrap() {
            stream.take_connections(&mut connections);
        }
        stream.take_connections(&mut connections);
        let (tables, _) = stream.into_parts();
        assert_eq!(connections.len(), 300, "{order:?}");
        for c in &connections {
            let url = &tables.targets[c.target as usize].url;
            let want = if c.seq.is_multiple_of(2) {
                "http://127.0.0.1:8080/"
            } else {
                "http://127.0.0.1:8080/things"
            };
            assert_eq!(url, want, "{order:?} seq {}", c.seq);
        }
    }
}
