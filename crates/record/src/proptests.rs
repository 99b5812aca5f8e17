//! Property tests of the record readers, which read files that crashes, disks and
//! other tools produce: any bytes are an error naming the input or a stream of
//! records, never a panic; records written are the records read; and a valid file cut
//! or damaged anywhere reads as an exact prefix of what was written.
//!
//! Cases default to a CI-sized count; `PROPTEST_CASES=100000 cargo test -p
//! loadlab-record proptest` runs longer. Failures are not persisted: a case found
//! becomes a table row beside the reader instead.

use std::io::Cursor;

use proptest::prelude::*;

use crate::codec_csv::{OUR_EXTRA_COLUMNS, VEGETA_COLUMNS};
use crate::{
    AttackInfo, Compression, ErrorEntry, ErrorKind, FORMAT_VERSION, MAGIC, Protocol, Record,
    RecordError, RecordWriter, RunEnd, RunHeader, TargetInfo, open_reader,
};

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok());
    let config = ProptestConfig::with_cases(cases.unwrap_or(128));
    ProptestConfig {
        failure_persistence: None,
        ..config
    }
}

/// Reads every record and sample of `bytes`.
fn read_all(bytes: &[u8]) -> Result<Vec<Record>, RecordError> {
    let mut source = open_reader(Box::new(Cursor::new(bytes.to_vec())), "in.llr")?;
    let (mut all, mut batch, mut samples) = (Vec::new(), Vec::new(), Vec::new());
    while source.next_batch(&mut batch)? {
        all.extend_from_slice(&batch);
        source.drain_samples(&mut samples);
    }
    Ok(all)
}

fn record() -> impl Strategy<Value = Record> {
    (
        // Ids must point into the dictionaries `write` puts in the file.
        (
            Just(0u16),
            Just(0u32),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
        ),
        (
            any::<u64>(),
            any::<u16>(),
            0u32..=1,
            any::<u64>(),
            any::<u64>(),
            prop::sample::select(Protocol::ALL.to_vec()),
        ),
    )
        .prop_map(
            |(
                (attack, target, seq, intended_unix_ns, send_lag_ns, latency_ns),
                (ttfb_ns, status, error, bytes_in, bytes_out, protocol),
            )| {
                Record {
                    checks_failed: 0,
                    attack,
                    target,
                    seq,
                    intended_unix_ns,
                    send_lag_ns,
                    latency_ns,
                    ttfb_ns,
                    status,
                    error,
                    bytes_in,
                    bytes_out,
                    protocol,
                    grpc_status: None,
                }
            },
        )
}

/// Records close to a real run (small ids, rising times), so the codec's deltas see
/// both the usual and the extreme values.
fn records() -> impl Strategy<Value = Vec<Record>> {
    prop_oneof![
        prop::collection::vec(record(), 0..40),
        prop::collection::vec((0u64..1_000_000, 0u64..5_000, 0u16..600), 0..200).prop_map(
            |steps| {
                let mut at = 1_763_700_000_000_000_000u64;
                steps
                    .into_iter()
                    .enumerate()
                    .map(|(n, (gap, lag, status))| {
                        at += gap;
                        Record {
                            seq: n as u64,
                            intended_unix_ns: at,
                            send_lag_ns: lag,
                            latency_ns: gap * 3,
                            status,
                            bytes_in: 180,
                            ..Record::default()
                        }
                    })
                    .collect()
            }
        ),
    ]
}

fn compression() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::Raw),
        (1i32..4).prop_map(|level| Compression::Zstd { level })
    ]
}

/// Writes `records` in blocks of the sizes given (cycled), with dictionaries.
fn write(records: &[Record], block_sizes: &[usize], compression: Compression) -> Vec<u8> {
    let header = RunHeader {
        tool: "proptest".to_owned(),
        attacks: vec![AttackInfo {
            name: "a".to_owned(),
            ..AttackInfo::default()
        }],
        targets: vec![TargetInfo {
            step: None,
            checks: Vec::new(),
            method: "GET".to_owned(),
            url: "http://127.0.0.1/".to_owned(),
        }],
        ..RunHeader::default()
    };
    let written = (|| {
        let mut writer = RecordWriter::new(Vec::new(), &header, compression)?;
        writer.add_errors(
            0,
            &[ErrorEntry {
                kind: ErrorKind::Status,
                text: "503".to_owned(),
            }],
        )?;
        let mut rest = records;
        for size in block_sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (block, after) = rest.split_at((*size).clamp(1, rest.len()));
            writer.extend(block);
            writer.flush_records(block.last().map(Record::sent_unix_ns))?;
            rest = after;
        }
        writer.finish(&RunEnd::default())
    })();
    written.unwrap_or_else(|err| panic!("writing: {err}"))
}

/// Bytes that start like a record file (or a JSON or CSV export), then anything.
fn input_bytes() -> impl Strategy<Value = Vec<u8>> {
    let mut preamble = MAGIC.to_vec();
    preamble.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    let start = prop_oneof![
        Just(Vec::new()),
        Just(MAGIC.to_vec()),
        Just(preamble),
        Just(b"{\"timestamp\":\"2025-01-01T00:00:00Z\",\"code\":200,\"latency\":5".to_vec()),
        Just(b"1763700000000000000,200,5,0,0,,".to_vec()),
        Just(b"timestamp,code,latency,bytes_out,bytes_in,error\n".to_vec()),
    ];
    (start, prop::collection::vec(any::<u8>(), 0..300)).prop_map(|(mut start, rest)| {
        start.extend_from_slice(&rest);
        start
    })
}

/// A JSON results line (vegeta's keys and ours) with mostly plausible values.
fn json_line() -> impl Strategy<Value = String> {
    // Every column name is a key (vegeta's and ours), and one no reader knows.
    let mut keys: Vec<&str> = (VEGETA_COLUMNS.iter().chain(&OUR_EXTRA_COLUMNS))
        .copied()
        .collect();
    keys.push("x");
    let key = prop::sample::select(keys);
    let value = prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        (-1i64..70_000).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|ns| format!("{:?}", crate::format_timestamp(ns))),
        Just("\"2025-13-40T25:61:61.1234567891+25:00\"".to_owned()),
        Just("\"1969-12-31T23:59:59Z\"".to_owned()),
        "\"[ -!#-\\[\\]-~]{0,10}\"",
        Just("null".to_owned()),
        Just("1.5".to_owned()),
        Just("[]".to_owned()),
        Just("\"h2\"".to_owned()),
        Just("true".to_owned()),
        Just("[\"status 200\",\"#3\"]".to_owned()),
        Just("[\"#31\",1]".to_owned()),
    ];
    // Mostly with the two required keys valid, so lines get to the other fields.
    let required = prop::option::weighted(0.8, (any::<u64>(), any::<u32>()));
    (required, prop::collection::vec((key, value), 0..8)).prop_map(|(required, fields)| {
        let mut fields: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        if let Some((ns, latency)) = required {
            let timestamp = crate::format_timestamp(ns);
            fields.insert(
                0,
                format!("\"timestamp\":\"{timestamp}\",\"latency\":{latency}"),
            );
        }
        format!("{{{}}}", fields.join(","))
    })
}

/// A CSV results row: vegeta's columns (6, 11 or 12 of them), plus ours sometimes.
fn csv_row() -> impl Strategy<Value = String> {
    let cell = prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        (0u32..1000).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(crate::format_timestamp),
        "[a-zA-Z0-9 =/\"]{0,6}",
        Just(String::new()),
        Just("h2".to_owned()),
    ];
    prop::collection::vec(cell, 5..17).prop_map(|cells| cells.join(","))
}

/// A flow step's target: a step name (not blank at either end: CSV cells are read
/// trimmed) and up to 6 check names of any printable text, some alike.
fn flow_target() -> impl Strategy<Value = TargetInfo> {
    let name = prop_oneof![
        "[ -~]{0,12}",
        Just("status 200".to_owned()),
        (0u32..8).prop_map(|n| format!("#{n}")),
    ];
    (
        prop::option::of("[!-~]([ -~]{0,8}[!-~])?"),
        prop::collection::vec(name, 0..6),
    )
        .prop_map(|(step, checks)| TargetInfo {
            method: "POST".to_owned(),
            url: "http://127.0.0.1:8080/login".to_owned(),
            step,
            checks,
        })
}

/// `record` through our JSON or CSV export and back.
fn export_and_read(record: &Record, tables: &crate::RunTables, csv: bool) -> (Record, TargetInfo) {
    let bytes = if csv {
        let mut encoder = crate::CsvEncoder::new(Vec::new()).unwrap();
        encoder.write(record, tables).unwrap();
        encoder.finish().unwrap()
    } else {
        let mut encoder = crate::JsonEncoder::new(Vec::new());
        encoder.write(record, tables).unwrap();
        encoder.finish().unwrap()
    };
    let mut source = open_reader(Box::new(Cursor::new(bytes)), "export").unwrap();
    let mut batch = Vec::new();
    assert!(source.next_batch(&mut batch).unwrap());
    let target = source.tables().targets[batch[0].target as usize].clone();
    (batch[0], target)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn proptest_record_exports_round_trip_flow_checks(
        target in flow_target(),
        checks_failed in prop_oneof![any::<u32>(), 0u32..256],
        csv in any::<bool>(),
    ) {
        let tables = crate::RunTables {
            attacks: vec![AttackInfo::default()],
            targets: vec![target.clone()],
            errors: Vec::new(),
        };
        let record = Record {
            intended_unix_ns: 1_763_700_000_000_000_000,
            latency_ns: 5,
            status: 200,
            checks_failed,
            ..Record::default()
        };
        let (read, read_target) = export_and_read(&record, &tables, csv);
        prop_assert_eq!(read.checks_failed, checks_failed);
        prop_assert_eq!(read_target, target);
    }

    #[test]
    fn proptest_record_json_lines_never_panic(lines in prop::collection::vec(json_line(), 1..6)) {
        let result = read_all(lines.join("\n").as_bytes());
        if let Err(err) = result {
            prop_assert!(err.to_string().starts_with("in.llr"), "names the input: {err}");
        }
    }

    #[test]
    fn proptest_record_csv_rows_never_panic(rows in prop::collection::vec(csv_row(), 1..6), ours in any::<bool>()) {
        let mut text = if ours { "timestamp,code,latency,bytes_out,bytes_in,error,body,attack,seq,method,url,headers,send_lag,ttfb,error_kind,protocol\n".to_owned() } else { String::new() };
        text += &rows.join("\n");
        if let Err(err) = read_all(text.as_bytes()) {
            prop_assert!(err.to_string().starts_with("in.llr"), "names the input: {err}");
        }
    }

    #[test]
    fn proptest_record_timestamp_round_trips(ns in any::<u64>()) {
        let text = crate::format_timestamp(ns);
        prop_assert_eq!(crate::import::parse_timestamp(&text), Ok(ns), "{}", text);
    }

    #[test]
    fn proptest_record_arbitrary_bytes_never_panic(bytes in input_bytes()) {
        if let Err(err) = read_all(&bytes) {
            prop_assert!(err.to_string().starts_with("in.llr"), "names the input: {err}");
        }
    }

    #[test]
    fn proptest_record_round_trips(
        records in records(),
        block_sizes in prop::collection::vec(1usize..64, 1..4),
        compression in compression(),
    ) {
        let bytes = write(&records, &block_sizes, compression);
        let read = read_all(&bytes).map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(read, records);
    }

    #[test]
    fn proptest_record_cut_or_flipped_reads_a_prefix(
        records in records(),
        compression in compression(),
        cut in any::<prop::sample::Index>(),
        flip in prop::option::of((any::<prop::sample::Index>(), 1u8..=255)),
    ) {
        let mut bytes = write(&records, &[17], compression);
        if let Some((at, mask)) = flip {
            let at = at.index(bytes.len());
            bytes[at] ^= mask;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        // A cut in the preamble or header may fail; anything read is a prefix.
        if let Ok(read) = read_all(&bytes) {
            prop_assert_eq!(&read[..], &records[..read.len()]);
        }
    }

    #[test]
    fn proptest_record_many_flips_never_panic(
        records in records(),
        compression in compression(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut bytes = write(&records, &[17], compression);
        for (at, byte) in flips {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        let _ = read_all(&bytes);
    }
}
