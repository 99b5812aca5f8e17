//! Golden files for every report layout, built from small fixed record files written
//! here with `RecordWriter`; plus the vegeta column positions checked on their own, and
//! torn files cut at every byte.
//!
//! Regenerate after an intended change with `UPDATE_GOLDEN=1 cargo test -p loadlab-report`
//! and review the diff.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use record::{
    AttackEnd, AttackInfo, Compression, ErrorEntry, ErrorKind, GeneratorStats, LoadModel, Protocol,
    Record, RecordWriter, RunEnd, RunHeader, StopReason, TargetInfo,
};
use report::{Buckets, GroupBy, ReportConfig, ReportType, run_report};

const START_NS: u64 = 1_763_700_000_000_000_000;
const MS: u64 = 1_000_000;
const US: u64 = 1_000;

fn attack(name: &str, model: LoadModel, rate: Option<f64>) -> AttackInfo {
    AttackInfo {
        replay: None,
        flow: false,
        name: name.to_owned(),
        model,
        schedule: String::new(),
        rate_per_sec: rate,
        concurrency: None,
        timeout_ns: 30_000 * MS,
    }
}

fn target(method: &str, url: &str) -> TargetInfo {
    TargetInfo {
        step: None,
        checks: Vec::new(),
        method: method.to_owned(),
        url: url.to_owned(),
    }
}

/// A steady run: attack "api" (open, 100/s, 50 requests 10 ms apart over two
/// targets, every 10th a 500, one connection refused) and attack "static" (open, 10
/// requests 45 ms apart). Nothing to warn about.
fn steady_run() -> Vec<u8> {
    let header = RunHeader {
        trace: None,
        seed: None,
        tool: "loadlab test".to_owned(),
        start_unix_ns: START_NS,
        attacks: vec![
            attack("api", LoadModel::Open, Some(100.0)),
            attack("static", LoadModel::Open, Some(20.0)),
        ],
        targets: vec![target("GET", "http://127.0.0.1:8080/")],
        shard: None,
        precision_ns: None,
    };
    let mut writer =
        RecordWriter::new(Vec::new(), &header, Compression::Zstd { level: 3 }).unwrap();
    writer
        .add_targets(1, &[target("POST", "http://127.0.0.1:8080/items")])
        .unwrap();
    writer
        .add_errors(
            0,
            &[
                ErrorEntry {
                    kind: ErrorKind::Status,
                    text: "500 Internal Server Error".to_owned(),
                },
                ErrorEntry {
                    kind: ErrorKind::Connect,
                    text: "dial tcp 127.0.0.1:8080: connect: connection refused".to_owned(),
                },
            ],
        )
        .unwrap();
    let mut records: Vec<Record> = (0..50).map(api_record).collect();
    records.extend((0..10).map(static_record));
    records.sort_by_key(Record::sent_unix_ns);
    for chunk in records.chunks(16) {
        writer.extend(chunk);
        let watermark = chunk.last().map(|r| r.sent_unix_ns() + 1);
        writer.flush_records(watermark).unwrap();
    }
    writer
        .write_stats(&GeneratorStats {
            at_unix_ns: START_NS + 500 * MS,
            cpu_ns: 3 * MS,
            sent: 60,
            completed: 60,
            rss_bytes: 11 << 20,
            ..GeneratorStats::default()
        })
        .unwrap();
    let end = RunEnd {
        exemplars: Vec::new(),
        replays: Vec::new(),
        at_unix_ns: START_NS + 600 * MS,
        reason: StopReason::Completed,
        detail: String::new(),
        attacks: vec![
            AttackEnd {
                asked: 50,
                sent: 50,
                unsent: 0,
                asked_span_ns: 490 * MS,
            },
            AttackEnd {
                asked: 10,
                sent: 10,
                unsent: 0,
                asked_span_ns: 405 * MS,
            },
        ],
        cpu_ns: 4_200 * US,
        peak_rss_bytes: 12 << 20,
    };
    writer.finish(&end).unwrap()
}

fn api_record(n: u64) -> Record {
    let (status, error, bytes_in) = match n {
        23 => (0, 2, 0),
        _ if n % 10 == 9 => (500, 1, 64),
        _ => (200, 0, 120 + n % 3),
    };
    let send_lag_ns = 5 * US + (n * 7 % 40) * US;
    Record {
        checks_failed: 0,
        attack: 0,
        target: (n % 2) as u32,
        seq: n,
        intended_unix_ns: START_NS + n * 10 * MS,
        send_lag_ns,
        latency_ns: send_lag_ns + 800 * US + (n * 37 % 23) * 100 * US,
        ttfb_ns: 700 * US,
        status,
        error,
        bytes_in,
        bytes_out: if n % 2 == 1 { 48 } else { 0 },
        protocol: Protocol::Http1,
        grpc_status: None,
    }
}

fn static_record(n: u64) -> Record {
    Record {
        checks_failed: 0,
        attack: 1,
        target: 0,
        seq: n,
        intended_unix_ns: START_NS + 3 * MS + n * 45 * MS,
        send_lag_ns: 0,
        latency_ns: 300 * US + n * 10 * US,
        ttfb_ns: 250 * US,
        status: 304,
        error: 0,
        bytes_in: 90,
        bytes_out: 0,
        protocol: Protocol::Http1,
        grpc_status: None,
    }
}

/// The steady run's "api" attack alone, most of it over h2: every 4th request went
/// over HTTP/1.1 (13 of 50), the rest over h2 (37).
fn mixed_protocol_run() -> Vec<u8> {
    let header = RunHeader {
        trace: None,
        seed: None,
        tool: "loadlab test".to_owned(),
        start_unix_ns: START_NS,
        attacks: vec![attack("api", LoadModel::Open, Some(100.0))],
        targets: vec![
            target("GET", "https://127.0.0.1:8443/"),
            target("POST", "https://127.0.0.1:8443/items"),
        ],
        shard: None,
        precision_ns: None,
    };
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    writer
        .add_errors(
            0,
            &[
                ErrorEntry {
                    kind: ErrorKind::Status,
                    text: "500 Internal Server Error".to_owned(),
                },
                ErrorEntry {
                    kind: ErrorKind::Connect,
                    text: "dial tcp 127.0.0.1:8443: connect: connection refused".to_owned(),
                },
            ],
        )
        .unwrap();
    for n in 0..50u64 {
        writer.push(&Record {
            protocol: if n.is_multiple_of(4) {
                Protocol::Http1
            } else {
                Protocol::Http2
            },
            ..api_record(n)
        });
    }
    let end = RunEnd {
        exemplars: Vec::new(),
        replays: Vec::new(),
        at_unix_ns: START_NS + 600 * MS,
        reason: StopReason::Completed,
        detail: String::new(),
        attacks: vec![AttackEnd {
            asked: 50,
            sent: 50,
            unsent: 0,
            asked_span_ns: 490 * MS,
        }],
        cpu_ns: 4_200 * US,
        peak_rss_bytes: 12 << 20,
    };
    writer.finish(&end).unwrap()
}

/// A run where the generator fell behind: 80 of 100 asked requests sent at 1000/s
/// asked, with send lag growing to 4 ms.
fn behind_run() -> Vec<u8> {
    let header = RunHeader {
        trace: None,
        seed: None,
        tool: "loadlab test".to_owned(),
        start_unix_ns: START_NS,
        attacks: vec![attack("flood", LoadModel::Open, Some(1000.0))],
        targets: vec![target("GET", "http://127.0.0.1:8080/")],
        shard: None,
        precision_ns: None,
    };
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    for n in 0..80u64 {
        let send_lag_ns = n * 50 * US;
        writer.push(&Record {
            seq: n,
            intended_unix_ns: START_NS + n * MS,
            send_lag_ns,
            latency_ns: send_lag_ns + 500 * US,
            status: 200,
            bytes_in: 100,
            ..Record::default()
        });
    }
    let end = RunEnd {
        exemplars: Vec::new(),
        replays: Vec::new(),
        at_unix_ns: START_NS + 100 * MS,
        reason: StopReason::Interrupted,
        detail: "SIGINT".to_owned(),
        attacks: vec![AttackEnd {
            asked: 100,
            sent: 80,
            unsent: 20,
            asked_span_ns: 99 * MS,
        }],
        cpu_ns: 90 * MS,
        peak_rss_bytes: 30 << 20,
    };
    writer.finish(&end).unwrap()
}

/// A ramp of 30 s, the open-model rate rising from 20/s by 10/s each second, against a
/// server that answers in 2 ms up to `capacity` req/s and, above it, turns the excess
/// away with 503s while its latency grows 20 ms a second.
fn ramp_run(capacity: u64) -> Vec<u8> {
    let header = RunHeader {
        trace: None,
        seed: None,
        tool: "loadlab test".to_owned(),
        start_unix_ns: START_NS,
        attacks: vec![AttackInfo {
            schedule: "line(20, 310, 30s)".to_owned(),
            ..attack("ramp", LoadModel::Open, None)
        }],
        targets: vec![target("GET", "http://127.0.0.1:8080/")],
        shard: None,
        precision_ns: None,
    };
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    writer
        .add_errors(
            0,
            &[ErrorEntry {
                kind: ErrorKind::Status,
                text: "503 Service Unavailable".to_owned(),
            }],
        )
        .unwrap();
    let mut seq = 0;
    for second in 0..30u64 {
        let offered = 20 + 10 * second;
        let over_s = (offered.saturating_sub(capacity) * 2).min(second);
        for n in 0..offered {
            // Of each second's requests, those past the capacity are turned away.
            let (status, error) = if n < capacity { (200, 0) } else { (503, 1) };
            writer.push(&Record {
                seq,
                intended_unix_ns: START_NS + second * 1_000 * MS + n * 1_000 * MS / offered,
                send_lag_ns: 20 * US,
                latency_ns: 2 * MS + over_s * 20 * MS,
                status,
                error,
                bytes_in: 100,
                ..Record::default()
            });
            seq += 1;
        }
    }
    let end = RunEnd {
        exemplars: Vec::new(),
        replays: Vec::new(),
        at_unix_ns: START_NS + 30_500 * MS,
        reason: StopReason::Completed,
        detail: String::new(),
        attacks: vec![AttackEnd {
            asked: seq,
            sent: seq,
            unsent: 0,
            asked_span_ns: 29_990 * MS,
        }],
        cpu_ns: 300 * MS,
        peak_rss_bytes: 20 << 20,
    };
    writer.finish(&end).unwrap()
}

/// A flow target: a step with its checks.
fn step(method: &str, path: &str, name: &str, checks: &[&str]) -> TargetInfo {
    TargetInfo {
        step: Some(name.to_owned()),
        checks: checks.iter().map(|&c| c.to_owned()).collect(),
        ..target(method, &format!("http://127.0.0.1:8080{path}"))
    }
}

/// A flow "shop" (open model, 20 users 50 ms apart): login (checks `status 200`,
/// `json $.token exists`), list (`status 200`, `has items`), then item twice
/// (`status 200`, `latency < 200ms`, `body contains "id"`). User 7's login gets a
/// 500 and user 13's is refused (every check fails): their flows end there. User 4's
/// list has no items: its flow ends there. The first item of users 2 and 9 takes
/// 250 ms. With `news`, a plain attack "news" polls /news every 100 ms beside it.
fn flow_run(news: bool) -> Vec<u8> {
    // No asked rate for the flow: its schedule counts flows started, not requests.
    let mut attacks = vec![attack("shop", LoadModel::Open, None)];
    if news {
        attacks.push(attack("news", LoadModel::Open, Some(10.0)));
    }
    let header = RunHeader {
        trace: None,
        seed: None,
        tool: "loadlab test".to_owned(),
        start_unix_ns: START_NS,
        attacks,
        targets: vec![
            step(
                "POST",
                "/login",
                "login",
                &["status 200", "json $.token exists"],
            ),
            step("GET", "/items", "list", &["status 200", "has items"]),
        ],
        shard: None,
        precision_ns: None,
    };
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    // Targets also come in dictionary blocks: the step after the header's.
    writer
        .add_targets(
            2,
            &[
                step(
                    "GET",
                    "/items/{{item}}",
                    "item",
                    &["status 200", "latency < 200ms", "body contains \"id\""],
                ),
                target("GET", "http://127.0.0.1:8080/news"),
            ],
        )
        .unwrap();
    let error = |kind: ErrorKind, text: &str| ErrorEntry {
        kind,
        text: text.to_owned(),
    };
    writer
        .add_errors(
            0,
            &[
                error(ErrorKind::Status, "500 Internal Server Error"),
                error(
                    ErrorKind::Connect,
                    "dial tcp 127.0.0.1:8080: connect: connection refused",
                ),
                error(ErrorKind::Check, "list: check \"has items\" failed"),
                error(ErrorKind::Check, "item: check \"latency < 200ms\" failed"),
            ],
        )
        .unwrap();
    let mut records: Vec<Record> = (0..20).flat_map(flow_records).collect();
    if news {
        records.extend((0..10).map(news_record));
    }
    records.sort_by_key(Record::sent_unix_ns);
    for record in &records {
        writer.push(record);
    }
    let end = RunEnd {
        exemplars: Vec::new(),
        replays: Vec::new(),
        at_unix_ns: START_NS + 1_500 * MS,
        reason: StopReason::Completed,
        detail: String::new(),
        attacks: if news {
            vec![AttackEnd::default(), AttackEnd::default()]
        } else {
            vec![AttackEnd::default()]
        },
        cpu_ns: 5 * MS,
        peak_rss_bytes: 12 << 20,
    };
    writer.finish(&end).unwrap()
}

/// A chat flow (open model): login, then a WebSocket "chat" whose 4 users each
/// send 3 messages and get 3 echoes 2, 4 and 8 ms later. Users 0 and 1 close with
/// 1000 after 1 s; the server closes user 2's with 1011; user 3's is still open
/// when the run is stopped (Ctrl-C) at 2.5 s. Users 0 and 1 then read an event
/// stream "ticks": 45 `message` events and 5 `tick` ones, the first 10 ms after
/// its head, the server ending it 1 s after the head.
fn chat_run() -> Vec<u8> {
    let header = RunHeader {
        trace: None,
        seed: None,
        tool: "loadlab test".to_owned(),
        start_unix_ns: START_NS,
        attacks: vec![attack("chat", LoadModel::Open, None)],
        targets: vec![
            step("POST", "/login", "login", &[]),
            TargetInfo {
                step: Some("chat".to_owned()),
                ..target("WS", "ws://127.0.0.1:8080/chat")
            },
            TargetInfo {
                step: Some("ticks".to_owned()),
                ..target("SSE", "http://127.0.0.1:8080/ticks")
            },
        ],
        shard: None,
        precision_ns: None,
    };
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    let mut connections = Vec::new();
    for user in 0..2u64 {
        let intended_unix_ns = START_NS + user * 300 * MS + 10 * MS;
        writer.push(&Record {
            attack: 0,
            target: 2,
            seq: (user << 16) | 2,
            intended_unix_ns,
            latency_ns: 11 * MS,
            status: 200,
            bytes_in: 120,
            bytes_out: 60,
            ..Record::default()
        });
        let mut gaps = record::MessageLatency::default();
        for _ in 0..50 {
            gaps.add(20 * MS);
        }
        connections.push(record::Connection {
            attack: 0,
            target: 2,
            seq: (user << 16) | 2,
            opened_unix_ns: intended_unix_ns + MS,
            closed_unix_ns: intended_unix_ns + 1_001 * MS,
            messages_in: 50,
            bytes_in: 4_950 * (user + 1),
            latency: gaps,
            first_message_ns: Some(10 * MS),
            events: [("message".to_owned(), 45), ("tick".to_owned(), 5)].into(),
            close: record::Close {
                by: record::ClosedBy::Server,
                code: 0,
            },
            ..record::Connection::default()
        });
    }
    for user in 0..4u64 {
        let intended_unix_ns = START_NS + user * 300 * MS;
        for (step, latency_ns) in [(0u32, 3 * MS), (1, MS)] {
            writer.push(&Record {
                attack: 0,
                target: step,
                seq: (user << 16) | u64::from(step),
                intended_unix_ns: intended_unix_ns + u64::from(step) * 5 * MS,
                latency_ns,
                status: 200,
                bytes_in: 100,
                bytes_out: 50,
                ..Record::default()
            });
        }
        let mut latency = record::MessageLatency::default();
        for ms in [2, 4, 8] {
            latency.add(ms * MS);
        }
        let opened_unix_ns = intended_unix_ns + 6 * MS;
        let (close, closed_unix_ns) = match user {
            0 | 1 => (
                (record::ClosedBy::Client, 1000),
                opened_unix_ns + 1_000 * MS,
            ),
            2 => ((record::ClosedBy::Server, 1011), opened_unix_ns + 500 * MS),
            _ => ((record::ClosedBy::Open, 0), START_NS + 2_500 * MS),
        };
        connections.push(record::Connection {
            attack: 0,
            target: 1,
            seq: (user << 16) | 1,
            opened_unix_ns,
            closed_unix_ns,
            messages_out: 3,
            bytes_out: 30,
            messages_in: 3,
            bytes_in: 30,
            latency,
            close: record::Close {
                by: close.0,
                code: close.1,
            },
            ..record::Connection::default()
        });
    }
    writer.write_connections(&connections).unwrap();
    let end = RunEnd {
        exemplars: Vec::new(),
        replays: Vec::new(),
        at_unix_ns: START_NS + 2_500 * MS,
        reason: StopReason::Interrupted,
        detail: String::new(),
        attacks: vec![AttackEnd::default()],
        cpu_ns: 5 * MS,
        peak_rss_bytes: 12 << 20,
    };
    writer.finish(&end).unwrap()
}

/// One user's requests of the flow in `flow_run`.
fn flow_records(user: u64) -> Vec<Record> {
    let failed = Record::FAILED_BY_FLOW;
    let at = |n: u64, target: u32, latency_ms: u64| Record {
        attack: 0,
        target,
        seq: user * 4 + n,
        intended_unix_ns: START_NS + user * 50 * MS + n * 10 * MS,
        send_lag_ns: 20 * US,
        latency_ns: latency_ms * MS + n * 100 * US,
        ttfb_ns: latency_ms * MS,
        status: 200,
        bytes_in: 200,
        bytes_out: 60,
        ..Record::default()
    };
    let login = at(0, 0, 2);
    match user {
        7 => {
            return vec![Record {
                status: 500,
                error: 1,
                checks_failed: 0b11 | failed,
                ..login
            }];
        }
        13 => {
            return vec![Record {
                status: 0,
                error: 2,
                bytes_in: 0,
                ttfb_ns: 0,
                checks_failed: 0b11 | failed,
                ..login
            }];
        }
        _ => {}
    }
    let list = at(1, 1, 3);
    if user == 4 {
        let empty = Record {
            error: 3,
            checks_failed: 0b10 | failed,
            ..list
        };
        return vec![login, empty];
    }
    let slow = |item: Record| Record {
        latency_ns: 250 * MS,
        error: 4,
        checks_failed: 0b10 | failed,
        ..item
    };
    let first = at(2, 2, 4);
    let first = if user == 2 || user == 9 {
        slow(first)
    } else {
        first
    };
    vec![login, list, first, at(3, 2, 4)]
}

fn news_record(n: u64) -> Record {
    Record {
        attack: 1,
        target: 3,
        seq: n,
        intended_unix_ns: START_NS + 5 * MS + n * 100 * MS,
        send_lag_ns: 15 * US,
        latency_ns: MS,
        ttfb_ns: 900 * US,
        status: 200,
        bytes_in: 500,
        ..Record::default()
    }
}

/// The checks block (text) and array (json) come only when some target has checks,
/// so every other report is vegeta's as it was; merged inputs sum their checks, and a
/// record file re-encoded keeps them.
#[test]
fn checks_show_only_for_targets_with_checks() {
    let fixture = Fixture::new();
    let text = config(ReportType::Text, None, None);
    let json = config(ReportType::Json { buckets: None }, None, None);
    for input in ["steady.llr", "behind.llr", "mixed.llr", "vegeta.json"] {
        let (out, _) = fixture.report(&[input], &text);
        assert!(!out.contains("Checks"), "{input}:\n{out}");
        let (out, _) = fixture.report(&[input], &json);
        assert!(!out.contains("\"checks\""), "{input}:\n{out}");
    }
    let total = |out: &str| {
        out.lines()
            .find(|line| line.starts_with("Total "))
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    let (out, _) = fixture.report(&["flow.llr"], &text);
    assert_eq!(total(&out).as_deref(), Some("Total 171 7 96.06%"), "{out}");
    // The block is a table of its own, between the error set and our rows, each after
    // a blank line; its pass rates end in one column.
    let block: Vec<&str> = out
        .split("\n\n")
        .find(|part| part.starts_with("Checks "))
        .unwrap()
        .lines()
        .collect();
    assert_eq!(block.len(), 9, "header, 7 checks, total:\n{out}");
    assert!(
        block.iter().all(|line| line.len() == block[0].len()),
        "{out}"
    );
    assert!(out.contains("connection refused\n\nChecks "), "{out}");
    let (merged, _) = fixture.report(&["flow.llr", "flow.llr"], &text);
    assert_eq!(total(&merged).as_deref(), Some("Total 342 14 96.06%"));
    let mut encoded = Vec::new();
    report::run_encode(
        &[fixture.path("flow_news.llr")],
        report::EncodeFormat::Record,
        &mut encoded,
        &mut Vec::new(),
    )
    .unwrap();
    std::fs::write(fixture.dir.join("flow-encoded.llr"), encoded).unwrap();
    // The checks' part: the text's block, the json's array.
    let checks = |out: &str| -> Option<String> {
        let (start, end) = match out.find("\nChecks ") {
            Some(start) => (start, "\n\n"),
            None => (out.find(",\"checks\":")?, ",\"loadlab\":"),
        };
        let part = &out[start..];
        Some(part[..part.find(end)?].to_owned())
    };
    for config in [&text, &json] {
        let (before, _) = fixture.report(&["flow_news.llr"], config);
        let (after, _) = fixture.report(&["flow-encoded.llr"], config);
        assert!(checks(&before).is_some_and(|c| c.contains("shop: list: has items")));
        assert_eq!(checks(&before), checks(&after), "{after}");
    }
}

/// vegeta `encode -to json` lines: no lag, no CPU, no asked rate.
const VEGETA_JSON: &str = concat!(
    r#"{"attack":"","seq":0,"code":200,"timestamp":"2020-05-09T11:52:50.5+02:00","latency":2315900,"bytes_out":0,"bytes_in":12,"error":"","body":null,"method":"GET","url":"http://localhost:8080/","headers":null}"#,
    "\n",
    r#"{"attack":"","seq":1,"code":500,"timestamp":"2020-05-09T11:52:50.6+02:00","latency":1200000,"bytes_out":0,"bytes_in":21,"error":"500 Internal Server Error","body":null,"method":"GET","url":"http://localhost:8080/","headers":null}"#,
    "\n",
    r#"{"attack":"","seq":2,"code":200,"timestamp":"2020-05-09T11:52:50.7+02:00","latency":3000000,"bytes_out":0,"bytes_in":12,"error":"","body":null,"method":"GET","url":"http://localhost:8080/","headers":null}"#,
    "\n",
);

struct Fixture {
    dir: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap().keep();
        std::fs::write(dir.join("steady.llr"), steady_run()).unwrap();
        std::fs::write(dir.join("behind.llr"), behind_run()).unwrap();
        std::fs::write(dir.join("mixed.llr"), mixed_protocol_run()).unwrap();
        std::fs::write(dir.join("vegeta.json"), VEGETA_JSON).unwrap();
        std::fs::write(dir.join("ramp_saturating.llr"), ramp_run(200)).unwrap();
        std::fs::write(dir.join("ramp_holding.llr"), ramp_run(1_000)).unwrap();
        std::fs::write(dir.join("flow.llr"), flow_run(false)).unwrap();
        std::fs::write(dir.join("flow_news.llr"), flow_run(true)).unwrap();
        std::fs::write(dir.join("chat.llr"), chat_run()).unwrap();
        Fixture { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }

    /// The report's stdout and stderr.
    fn report(&self, inputs: &[&str], config: &ReportConfig) -> (String, String) {
        let paths: Vec<String> = inputs.iter().map(|name| self.path(name)).collect();
        let (mut out, mut diagnostics) = (Vec::new(), Vec::new());
        run_report(&paths, config, &mut out, &mut diagnostics).unwrap();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(diagnostics).unwrap(),
        )
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn config(report_type: ReportType, every_ns: Option<u64>, by: Option<GroupBy>) -> ReportConfig {
    ReportConfig::new(report_type, every_ns, by).unwrap()
}

fn check_golden(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_GOLDEN=1", path.display()));
    assert!(
        got == want,
        "{name} differs from the golden file (UPDATE_GOLDEN=1 to accept):\n--- got\n{got}\n--- want\n{want}"
    );
}

#[test]
fn golden_reports() {
    let fixture = Fixture::new();
    let hist = || ReportType::Hist(Buckets::parse("[0,1ms,2ms,3ms]").unwrap());
    let json = || ReportType::Json { buckets: None };
    let rows: Vec<(&str, &[&str], ReportConfig)> = vec![
        (
            "text.txt",
            &["steady.llr"],
            config(ReportType::Text, None, None),
        ),
        ("json.json", &["steady.llr"], config(json(), None, None)),
        (
            "json_buckets.json",
            &["steady.llr"],
            config(
                ReportType::Json {
                    buckets: Some(Buckets::parse("[0,1ms,2ms]").unwrap()),
                },
                None,
                None,
            ),
        ),
        ("hist.txt", &["steady.llr"], config(hist(), None, None)),
        (
            "hdrplot.txt",
            &["steady.llr"],
            config(ReportType::HdrPlot, None, None),
        ),
        (
            "every.txt",
            &["steady.llr"],
            config(ReportType::Text, Some(100 * MS), None),
        ),
        (
            "every.json",
            &["steady.llr"],
            config(json(), Some(100 * MS), None),
        ),
        (
            "every_by_attack.txt",
            &["steady.llr"],
            config(ReportType::Text, Some(200 * MS), Some(GroupBy::Attack)),
        ),
        (
            "by_attack.txt",
            &["steady.llr"],
            config(ReportType::Text, None, Some(GroupBy::Attack)),
        ),
        (
            "by_status.txt",
            &["steady.llr"],
            config(ReportType::Text, None, Some(GroupBy::Status)),
        ),
        (
            "by_target.json",
            &["steady.llr"],
            config(json(), None, Some(GroupBy::Target)),
        ),
        (
            "by_attack_hist.txt",
            &["steady.llr"],
            config(hist(), None, Some(GroupBy::Attack)),
        ),
        (
            "behind.txt",
            &["behind.llr"],
            config(ReportType::Text, None, None),
        ),
        ("behind.json", &["behind.llr"], config(json(), None, None)),
        (
            "vegeta_import.txt",
            &["vegeta.json"],
            config(ReportType::Text, None, None),
        ),
        (
            "vegeta_import.json",
            &["vegeta.json"],
            config(json(), None, None),
        ),
        (
            "merged.txt",
            &["steady.llr", "behind.llr"],
            config(ReportType::Text, None, None),
        ),
        (
            "ramp_saturating.txt",
            &["ramp_saturating.llr"],
            config(ReportType::Text, None, None),
        ),
        (
            "ramp_saturating.json",
            &["ramp_saturating.llr"],
            config(json(), None, None),
        ),
        (
            "ramp_holding.txt",
            &["ramp_holding.llr"],
            config(ReportType::Text, None, None),
        ),
        (
            "ramp_holding.json",
            &["ramp_holding.llr"],
            config(json(), None, None),
        ),
        (
            "protocols.txt",
            &["mixed.llr"],
            config(ReportType::Text, None, None),
        ),
        ("protocols.json", &["mixed.llr"], config(json(), None, None)),
        (
            "by_protocol.txt",
            &["mixed.llr"],
            config(ReportType::Text, None, Some(GroupBy::Protocol)),
        ),
        (
            "by_protocol.json",
            &["mixed.llr"],
            config(json(), None, Some(GroupBy::Protocol)),
        ),
        (
            "every_by_protocol.txt",
            &["mixed.llr"],
            config(ReportType::Text, Some(200 * MS), Some(GroupBy::Protocol)),
        ),
        (
            "checks.txt",
            &["flow.llr"],
            config(ReportType::Text, None, None),
        ),
        ("checks.json", &["flow.llr"], config(json(), None, None)),
        (
            "checks_two_attacks.txt",
            &["flow_news.llr"],
            config(ReportType::Text, None, None),
        ),
        (
            "checks_two_attacks.json",
            &["flow_news.llr"],
            config(json(), None, None),
        ),
        (
            "by_step.txt",
            &["flow.llr"],
            config(ReportType::Text, None, Some(GroupBy::Step)),
        ),
        (
            "by_step.json",
            &["flow_news.llr"],
            config(json(), None, Some(GroupBy::Step)),
        ),
        (
            "by_step_two_attacks.txt",
            &["flow_news.llr"],
            config(ReportType::Text, None, Some(GroupBy::Step)),
        ),
        (
            "chat.txt",
            &["chat.llr"],
            config(ReportType::Text, None, None),
        ),
        ("chat.json", &["chat.llr"], config(json(), None, None)),
        (
            "chat_by_step.json",
            &["chat.llr"],
            config(json(), None, Some(GroupBy::Step)),
        ),
        (
            "every_by_step.txt",
            &["flow_news.llr"],
            config(ReportType::Text, Some(250 * MS), Some(GroupBy::Step)),
        ),
    ];
    for (name, inputs, config) in rows {
        let (out, diagnostics) = fixture.report(inputs, &config);
        assert_eq!(
            diagnostics, "",
            "{name}: no warnings on stderr for whole inputs"
        );
        check_golden(name, &out);
    }
}

/// vegeta's columns, checked without the golden files: label padded to 14, the bracket
/// field to 34, values from column 49; our extra rows on the same columns.
#[test]
fn text_keeps_vegeta_columns() {
    let fixture = Fixture::new();
    for input in ["steady.llr", "behind.llr", "vegeta.json"] {
        let (out, _) = fixture.report(&[input], &config(ReportType::Text, None, None));
        let labels = [
            "Requests",
            "Duration",
            "Latencies",
            "Bytes In",
            "Bytes Out",
            "Success",
            "Status Codes",
            "Send Lag",
            "Asked Rate",
            "Generator",
            "Run",
        ];
        let mut rows = 0;
        for line in out.lines() {
            let Some(label) = labels.iter().find(|l| line.starts_with(&format!("{l} "))) else {
                continue;
            };
            rows += 1;
            let chars: Vec<char> = line.chars().collect();
            assert!(chars[label.len()..14].iter().all(|&c| c == ' '), "{line}");
            assert_eq!(chars[14], '[', "bracket at column 15: {line}");
            let bracket_end = chars.iter().position(|&c| c == ']').unwrap();
            assert!(
                chars[bracket_end + 1..48].iter().all(|&c| c == ' '),
                "{line}"
            );
            assert_ne!(chars[48], ' ', "values from column 49: {line}");
        }
        let want_rows = if input == "vegeta.json" { 7 } else { 11 };
        assert_eq!(rows, want_rows, "{input}:\n{out}");
        assert!(out.contains("\nError Set:\n"), "{out}");
    }
}

/// The protocol mix is a row (and a json key) only when some request did not go over
/// HTTP/1.1, so vegeta's output is unchanged for every HTTP/1.1 run; the row keeps
/// vegeta's columns.
#[test]
fn protocols_show_only_when_a_run_is_not_pure_http1() {
    let fixture = Fixture::new();
    let text = config(ReportType::Text, None, None);
    let json = config(ReportType::Json { buckets: None }, None, None);
    let rows: &[(&str, Option<&str>, Option<&str>)] = &[
        ("steady.llr", None, None),
        ("behind.llr", None, None),
        ("vegeta.json", None, None),
        (
            "mixed.llr",
            Some("\nProtocols     [h2, http/1.1]                    37, 13\n"),
            Some(",\"protocols\":{\"h2\":37,\"http/1.1\":13},"),
        ),
    ];
    for &(input, want_row, want_key) in rows {
        let (out, _) = fixture.report(&[input], &text);
        match want_row {
            Some(row) => assert!(out.contains(row), "{input}:\n{out}"),
            None => assert!(!out.contains("Protocols"), "{input}:\n{out}"),
        }
        let (out, _) = fixture.report(&[input], &json);
        match want_key {
            Some(key) => assert!(out.contains(key), "{input}:\n{out}"),
            None => assert!(!out.contains("protocols"), "{input}:\n{out}"),
        }
    }
    // Each group of -by protocol counts its own requests.
    let (by, _) = fixture.report(
        &["mixed.llr"],
        &config(ReportType::Text, None, Some(GroupBy::Protocol)),
    );
    let titles: Vec<&str> = by.lines().filter(|l| l.starts_with("===")).collect();
    assert_eq!(
        titles,
        ["=== protocol http/1.1 ===", "=== protocol h2 ==="],
        "{by}"
    );
    assert!(
        by.contains("Requests      [total, rate, throughput]         13, "),
        "{by}"
    );
    assert!(
        by.contains("Requests      [total, rate, throughput]         37, "),
        "{by}"
    );
    assert!(
        by.contains("Protocols     [h2]                              37\n"),
        "{by}"
    );
    // Merged with an HTTP/1.1 run and converted to one record file, every record keeps
    // its protocol: 37 h2, 13 + 80 HTTP/1.1.
    let mut merged = Vec::new();
    let inputs = [fixture.path("mixed.llr"), fixture.path("behind.llr")];
    report::run_encode(
        &inputs,
        report::EncodeFormat::Record,
        &mut merged,
        &mut Vec::new(),
    )
    .unwrap();
    std::fs::write(fixture.dir.join("merged-protocols.llr"), merged).unwrap();
    let (out, _) = fixture.report(&["merged-protocols.llr"], &text);
    assert!(
        out.contains("\nProtocols     [h2, http/1.1]                    37, 93\n"),
        "{out}"
    );
}

#[test]
fn warnings_appear_only_when_the_generator_fell_behind() {
    let fixture = Fixture::new();
    let text = config(ReportType::Text, None, None);
    let (steady, _) = fixture.report(&["steady.llr"], &text);
    assert!(!steady.contains("WARNING"), "{steady}");
    let (behind, _) = fixture.report(&["behind.llr"], &text);
    let warnings: Vec<&str> = behind
        .lines()
        .filter(|l| l.starts_with("WARNING: "))
        .collect();
    assert_eq!(warnings.len(), 2, "{behind}");
    assert!(
        warnings[0]
            .contains("send lag p99 was 3.95ms (> 1ms, and not under the median latency 2.45ms)"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains("20 requests were due but never sent"),
        "{}",
        warnings[1]
    );
    let (imported, _) = fixture.report(&["vegeta.json"], &text);
    assert!(
        !imported.contains("Send Lag") && !imported.contains("Generator"),
        "{imported}"
    );
}

#[test]
fn a_file_cut_at_any_byte_reports_what_came_before() {
    let fixture = Fixture::new();
    let bytes = steady_run();
    let text = config(ReportType::Json { buckets: None }, None, None);
    let mut last_requests = 0;
    let mut reported = 0;
    for cut in 0..bytes.len() {
        let path = fixture.dir.join("cut.llr");
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let paths = [path.to_string_lossy().into_owned()];
        let (mut out, mut diagnostics) = (Vec::new(), Vec::new());
        match run_report(&paths, &text, &mut out, &mut diagnostics) {
            Ok(outcome) => {
                assert!(
                    outcome.requests >= last_requests,
                    "cut at {cut}: fewer records"
                );
                last_requests = outcome.requests;
                reported += 1;
                let diagnostics = String::from_utf8(diagnostics).unwrap();
                if outcome.torn_inputs == 0 {
                    // A cut between two blocks looks like a run that stopped there.
                    assert_eq!(diagnostics, "", "cut at {cut}");
                    continue;
                }
                assert_eq!(outcome.torn_inputs, 1, "cut at {cut}: {diagnostics}");
                let want = format!("warning: {}: cut at byte ", paths[0]);
                assert!(
                    diagnostics.starts_with(&want),
                    "cut at {cut}: {diagnostics}"
                );
                assert!(diagnostics.contains("; skipped "), "{diagnostics}");
                let skipped: u64 = diagnostics
                    .split("; skipped ")
                    .nth(1)
                    .and_then(|rest| rest.split(' ').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap();
                let offset: u64 = diagnostics[want.len()..]
                    .split(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap();
                assert_eq!(offset + skipped, cut as u64, "cut at {cut}: {diagnostics}");
            }
            Err(err) => {
                let message = err.to_string();
                assert!(message.contains(&paths[0]), "names the file: {message}");
                assert!(
                    message.contains("empty")
                        || message.contains("header")
                        || message.contains("LLRECORD"),
                    "cut at {cut}: {message}"
                );
            }
        }
    }
    assert!(reported > bytes.len() / 2, "most cuts still report");
    assert_eq!(
        last_requests, 60,
        "the last cut before the end keeps every record"
    );
}

#[test]
fn bad_inputs_name_the_file() {
    let fixture = Fixture::new();
    std::fs::write(fixture.dir.join("empty.llr"), b"").unwrap();
    std::fs::write(fixture.dir.join("hello.txt"), b"hello world\n").unwrap();
    std::fs::write(
        fixture.dir.join("bad.json"),
        b"{\"timestamp\":\"soon\",\"latency\":1}\n",
    )
    .unwrap();
    let header_only = RecordWriter::new(Vec::new(), &RunHeader::default(), Compression::Raw)
        .unwrap()
        .finish(&RunEnd::default())
        .unwrap();
    std::fs::write(fixture.dir.join("header_only.llr"), header_only).unwrap();
    let rows: &[(&str, &str)] = &[
        ("missing.llr", "missing.llr: No such file"),
        ("empty.llr", "empty.llr: input is empty"),
        ("hello.txt", "hello.txt: not a record file"),
        ("bad.json", "bad.json:1: field \"timestamp\""),
        (
            "header_only.llr",
            "header_only.llr: input is empty: no records",
        ),
    ];
    for (name, want) in rows {
        let paths = [fixture.path(name)];
        let config = config(ReportType::Text, None, None);
        let err = run_report(&paths, &config, &mut Vec::new(), &mut Vec::new())
            .err()
            .unwrap_or_else(|| panic!("{name} must fail"));
        // The CLI prints the whole chain; so does this check.
        let chain = std::iter::successors(Some(&err as &dyn std::error::Error), |e| e.source())
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(": ");
        assert!(chain.contains(want), "{name}: {chain}");
    }
}

/// What `loadlab monitor` writes beside a run: 20 samples a second apart from the
/// run's start. Host CPU 40%, nginx (a process group) at 100% of one core from 12 s,
/// its fds at 96% of the limit at 15 s, PostgreSQL with two databases, and a scrape
/// endpoint that was down throughout.
fn monitor_run() -> Vec<u8> {
    use record::{SampleBatch, SampleFrame, SampleGap, SamplerInfo, SeriesInfo, SeriesKind};
    let sampler = |kind: &str, name: &str| SamplerInfo {
        kind: kind.into(),
        name: name.to_owned(),
    };
    let series = |sampler: u32, name: &str, label: (&str, &str), unit: &str| SeriesInfo {
        sampler,
        name: name.to_owned(),
        labels: [(label.0.to_owned(), label.1.to_owned())]
            .into_iter()
            .collect(),
        unit: unit.to_owned(),
        kind: SeriesKind::Gauge,
    };
    let header = RunHeader {
        tool: "loadlab test monitor".to_owned(),
        start_unix_ns: START_NS,
        ..RunHeader::default()
    };
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    let mut frame = SampleFrame {
        samplers: vec![
            sampler("host", "host"),
            sampler("process", "nginx"),
            sampler(
                "postgres",
                "postgres://loadlab:REDACTED@127.0.0.1:5432/loadlab",
            ),
            sampler("prom", "http://127.0.0.1:9113/metrics"),
        ],
        series: vec![
            series(0, "host.cpu_percent", ("cpu", "all"), "percent"),
            series(0, "host.memory_used_bytes", ("host", ""), "bytes"),
            series(0, "host.memory_total_bytes", ("host", ""), "bytes"),
            series(0, "host.tcp_established", ("host", ""), "count"),
            series(0, "host.tcp_time_wait", ("host", ""), "count"),
            series(1, "process.cpu_percent", ("group", "nginx"), "percent"),
            series(1, "process.rss_bytes", ("group", "nginx"), "bytes"),
            series(1, "process.fds", ("group", "nginx"), "count"),
            series(1, "process.fd_limit", ("group", "nginx"), "count"),
            series(1, "process.fd_use_percent", ("group", "nginx"), "percent"),
            series(2, "postgres.transactions_per_sec", ("database", "a"), "1/s"),
            series(2, "postgres.transactions_per_sec", ("database", "b"), "1/s"),
            series(2, "postgres.connections", ("database", "a"), "count"),
        ],
        ..SampleFrame::default()
    };
    for second in 0..20u64 {
        let at_unix_ns = START_NS + second * 1_000 * MS;
        let fds = if second == 15 {
            983.0
        } else {
            100.0 + second as f64
        };
        let values = [
            40.0,
            (2u64 << 30) as f64,
            (8u64 << 30) as f64,
            100.0 + second as f64,
            5.0,
            if second >= 12 { 100.0 } else { 30.0 },
            (50u64 << 20) as f64,
            fds,
            1024.0,
            fds / 1024.0 * 100.0,
            200.0 + second as f64,
            10.0,
            12.0,
        ];
        frame.batch = SampleBatch {
            gaps: vec![SampleGap {
                sampler: 3,
                series: None,
                reason: "connect: Connection refused (os error 111)".to_owned(),
            }],
            ..SampleBatch::dense(at_unix_ns, &values)
        };
        writer.write_samples(&frame).unwrap();
        frame.first_sampler += frame.samplers.len() as u32;
        frame.first_series += frame.series.len() as u32;
        frame.samplers.clear();
        frame.series.clear();
    }
    writer.close().unwrap()
}

#[test]
fn golden_resource_reports() {
    let fixture = Fixture::new();
    std::fs::write(fixture.dir.join("run.mon"), monitor_run()).unwrap();
    let json = || ReportType::Json { buckets: None };
    let rows: Vec<(&str, Vec<&str>, ReportConfig)> = vec![
        (
            "resources.txt",
            vec!["steady.llr", "run.mon"],
            config(ReportType::Text, None, None),
        ),
        (
            "resources.json",
            vec!["steady.llr", "run.mon"],
            config(json(), None, None),
        ),
        (
            "monitor_only.txt",
            vec!["run.mon"],
            config(ReportType::Text, None, None),
        ),
        (
            "monitor_only.json",
            vec!["run.mon"],
            config(json(), None, None),
        ),
    ];
    for (name, inputs, config) in rows {
        let (out, diagnostics) = fixture.report(&inputs, &config);
        assert_eq!(diagnostics, "", "{name}");
        check_golden(name, &out);
    }
    // The resource rows keep vegeta's columns: brackets at 14, values at 48.
    let (text, _) = fixture.report(
        &["steady.llr", "run.mon"],
        &config(ReportType::Text, None, None),
    );
    let resources = text.lines().skip_while(|l| !l.starts_with("Host CPU"));
    // The diagnosis below the rows is sentences, not columns.
    for line in resources.take_while(|l| !l.starts_with("Diagnosis:")) {
        assert_eq!(line.find('['), Some(14), "{line}");
        assert!(line.find(']').unwrap() < 14 + 34, "{line}");
        assert_ne!(line.as_bytes()[48], b' ', "{line}");
    }
    // -by reports keep the resources for the whole run only.
    let (by_attack, _) = fixture.report(
        &["steady.llr", "run.mon"],
        &config(ReportType::Text, None, Some(GroupBy::Attack)),
    );
    assert!(!by_attack.contains("Host CPU"), "{by_attack}");
}

#[test]
fn encode_to_record_keeps_the_samples() {
    let fixture = Fixture::new();
    std::fs::write(fixture.dir.join("run.mon"), monitor_run()).unwrap();
    let inputs = [fixture.path("steady.llr"), fixture.path("run.mon")];
    let mut merged = Vec::new();
    report::run_encode(
        &inputs,
        report::EncodeFormat::Record,
        &mut merged,
        &mut Vec::new(),
    )
    .unwrap();
    std::fs::write(fixture.dir.join("merged.llr"), merged).unwrap();
    let text = config(ReportType::Text, None, None);
    let (apart, _) = fixture.report(&["steady.llr", "run.mon"], &text);
    let (together, diagnostics) = fixture.report(&["merged.llr"], &text);
    assert_eq!(diagnostics, "");
    let resources = |report: &str| -> Vec<String> {
        report
            .lines()
            .skip_while(|line| !line.starts_with("Host CPU"))
            .map(str::to_owned)
            .collect()
    };
    assert!(resources(&apart).len() > 5, "{apart}");
    assert_eq!(resources(&together), resources(&apart));
}

/// The saturation rows: only for rising open-model loads, and near the capacity.
#[test]
fn saturation_appears_only_for_rising_open_loads() {
    let fixture = Fixture::new();
    let text = config(ReportType::Text, None, None);
    for input in ["steady.llr", "behind.llr", "vegeta.json"] {
        let (out, _) = fixture.report(&[input], &text);
        assert!(!out.contains("Saturation"), "{input}: {out}");
    }
    let (holding, _) = fixture.report(&["ramp_holding.llr"], &text);
    assert!(
        holding.contains("Saturation    [none]                            no saturation: "),
        "{holding}"
    );
    let (saturating, _) = fixture.report(&["ramp_saturating.llr"], &text);
    let rows: Vec<&str> = saturating
        .lines()
        .filter(|l| l.starts_with("Saturation "))
        .collect();
    assert_eq!(rows.len(), 4, "the point and three turns: {saturating}");
    for line in rows
        .iter()
        .copied()
        .chain(holding.lines().filter(|l| l.starts_with("Saturation ")))
    {
        let chars: Vec<char> = line.chars().collect();
        assert_eq!(chars[14], '[', "vegeta's columns: {line}");
        assert_ne!(chars[48], ' ', "values from column 49: {line}");
    }
    let (json, _) = fixture.report(
        &["ramp_saturating.llr"],
        &config(ReportType::Json { buckets: None }, None, None),
    );
    let offered: f64 = json
        .split("\"point\":{\"signal\":\"throughput\",\"offered_rate\":")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    // The capacity is 200/s and the rate rises 10/s a second: the knee within a step.
    assert!((200.0..=210.0).contains(&offered), "{offered}: {json}");
}

/// 10 s at 50/s, answered in about `latency_ms`, every `fail_every`-th request timing out.
fn compare_run(latency_ms: u64, fail_every: u64) -> Vec<u8> {
    let header = compare_header();
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    writer
        .add_errors(
            0,
            &[ErrorEntry {
                kind: ErrorKind::Timeout,
                text: "timeout".to_owned(),
            }],
        )
        .unwrap();
    for record in compare_records(latency_ms, fail_every) {
        writer.push(&record);
    }
    writer.finish(&RunEnd::default()).unwrap()
}

fn compare_header() -> RunHeader {
    RunHeader {
        trace: None,
        seed: Some(7),
        tool: "loadlab test".to_owned(),
        start_unix_ns: START_NS,
        attacks: vec![attack("api", LoadModel::Open, Some(50.0))],
        targets: vec![target("GET", "http://127.0.0.1:8080/")],
        shard: None,
        precision_ns: None,
    }
}

/// `compare_run`'s records: every `fail_every`-th a timeout (none when 1).
fn compare_records(latency_ms: u64, fail_every: u64) -> Vec<Record> {
    (0..500u64)
        .map(|n| {
            let failed = n % fail_every == 3;
            Record {
                seq: n,
                intended_unix_ns: START_NS + n * 20 * MS,
                send_lag_ns: 10 * US + (n % 7) * US,
                latency_ns: latency_ms * MS * (80 + n * 37 % 41) / 100,
                status: if failed { 0 } else { 200 },
                error: u32::from(failed),
                bytes_in: if failed { 0 } else { 512 },
                bytes_out: 0,
                ..Record::default()
            }
        })
        .collect()
}

#[test]
fn golden_compare() {
    use report::{CompareFormat, CompareInput, run_compare};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.llr"), compare_run(10, 100)).unwrap();
    std::fs::write(dir.path().join("b.llr"), compare_run(14, 10)).unwrap();
    // Names as the user typed them, so the goldens do not hold the temporary folder.
    let inputs = [
        CompareInput::RecordFile(dir.path().join("a.llr").to_string_lossy().into_owned()),
        CompareInput::RecordFile(dir.path().join("b.llr").to_string_lossy().into_owned()),
    ];
    let prefix = format!("{}/", dir.path().display());
    for (name, format) in [
        ("compare.txt", CompareFormat::Text),
        ("compare.md", CompareFormat::Markdown),
        ("compare.json", CompareFormat::Json),
    ] {
        let mut out = Vec::new();
        let regressions = run_compare(&inputs, format, (Some(0.05), None), &mut out).unwrap();
        let rows: Vec<&str> = regressions.iter().map(|r| r.row.as_str()).collect();
        assert_eq!(rows, ["throughput", "success", "latency p99"], "{name}");
        check_golden(name, &String::from_utf8(out).unwrap().replace(&prefix, ""));
    }
}

/// `compare_run`'s records, traced: each second's first request is its typical
/// exemplar and its slowest its slow one (trace ids `run`, second, kind); the store
/// answers each slow trace with an `UPDATE` of `update_ms` under the server's span.
fn traced_compare_run(run: u64, latency_ms: u64) -> Vec<u8> {
    let mut header = compare_header();
    header.trace = Some(record::TraceInfo { sample: 1.0 });
    let records = compare_records(latency_ms, 1);
    let exemplar = |kind, second: u64, r: &Record| record::Exemplar {
        kind,
        attack: 0,
        target: 0,
        seq: r.seq,
        trace_id: format!(
            "{run:08x}{second:08x}{:016x}",
            u8::from(kind == record::ExemplarKind::Slow)
        ),
        span_id: format!("{:016x}", r.seq + 1),
        intended_unix_ns: r.intended_unix_ns,
        latency_ns: r.latency_ns,
        status: 200,
        error: 0,
    };
    let mut end = RunEnd::default();
    for (second, requests) in records.chunks(50).enumerate() {
        let second = second as u64;
        end.exemplars.push(exemplar(
            record::ExemplarKind::Typical,
            second,
            &requests[0],
        ));
        let mut slow = requests[1];
        slow.latency_ns = 10 * latency_ms * MS;
        end.exemplars
            .push(exemplar(record::ExemplarKind::Slow, second, &slow));
    }
    let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
    for record in &records {
        writer.push(record);
    }
    writer.finish(&end).unwrap()
}

/// Answers a slow trace (its id's last digit 1) with most of its time in `UPDATE`
/// (more in run 2 than run 1), a typical one with a 1 ms `UPDATE`.
struct GoldenStore;

impl report::TraceStore for GoldenStore {
    fn name(&self) -> &str {
        "http://store.test/"
    }

    fn fetch(&self, trace_ids: &[String]) -> Result<analysis::Fetched, String> {
        let span = |id: &str, parent: Option<&str>, operation: &str, duration_us| analysis::Span {
            span_id: id.to_owned(),
            parent_id: parent.map(str::to_owned),
            service: "orders".to_owned(),
            operation: operation.to_owned(),
            start_us: 0,
            duration_us,
        };
        Ok(trace_ids
            .iter()
            .map(|id| {
                let run: u64 = id[..8].parse().unwrap();
                let update_us = if id.ends_with('1') {
                    run * 40_000
                } else {
                    1_000
                };
                Some(vec![
                    span("server", None, "GET /orders", update_us + 2_000),
                    span("update", Some("server"), "UPDATE", update_us),
                ])
            })
            .collect())
    }
}

/// compare's JSON with `-trace-store`: each input's span judgement and which span
/// grew from A, beside the rows.
#[test]
fn golden_compare_traced() {
    use report::{CompareFormat, CompareInput, TraceStoreHandle, run_compare};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.llr"), traced_compare_run(1, 10)).unwrap();
    std::fs::write(dir.path().join("b.llr"), traced_compare_run(2, 14)).unwrap();
    let inputs = [
        CompareInput::RecordFile(dir.path().join("a.llr").to_string_lossy().into_owned()),
        CompareInput::RecordFile(dir.path().join("b.llr").to_string_lossy().into_owned()),
    ];
    let prefix = format!("{}/", dir.path().display());
    let store = TraceStoreHandle(std::sync::Arc::new(GoldenStore));
    let mut text = Vec::new();
    run_compare(
        &inputs,
        CompareFormat::Text,
        (None, Some(&store)),
        &mut text,
    )
    .unwrap();
    let text = String::from_utf8(text).unwrap().replace(&prefix, "");
    assert!(
        text.contains("b.llr against a.llr: orders UPDATE grew most"),
        "{text}"
    );
    let mut out = Vec::new();
    run_compare(&inputs, CompareFormat::Json, (None, Some(&store)), &mut out).unwrap();
    let json = String::from_utf8(out).unwrap().replace(&prefix, "");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        value["span_shift"][0]["moved"]["operation"], "UPDATE",
        "{json}"
    );
    check_golden("compare_traced.json", &json);
}

/// Text and Markdown comparisons end with each run's diagnosis, when it has one (a
/// knee here; resource samples elsewhere); JSON stays as it was.
#[test]
fn compare_says_what_ran_out_first_in_each_run_that_can_tell() {
    use report::{CompareFormat, CompareInput, run_compare};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("steady.llr"), compare_run(10, 100)).unwrap();
    std::fs::write(dir.path().join("ramp.llr"), ramp_run(200)).unwrap();
    let inputs = ["steady.llr", "ramp.llr"]
        .map(|name| CompareInput::RecordFile(dir.path().join(name).to_string_lossy().into_owned()));
    let prefix = format!("{}/", dir.path().display());
    let compare = |format| {
        let mut out = Vec::new();
        run_compare(&inputs, format, (None, None), &mut out).unwrap();
        String::from_utf8(out).unwrap().replace(&prefix, "")
    };
    let text = compare(CompareFormat::Text);
    let block = text.split("\nWhat ran out first:\n").nth(1).expect(&text);
    assert_eq!(
        block,
        "ramp.llr: max 201 req/s held; the knee at 210/s offered, 19.0 s (throughput turned \
         first): 127.0.0.1:8080 answered 503 (660) from 220/s with nothing watched: a limit \
         the server is configured with (a rate limit, a queue, an upstream)\n"
    );
    assert!(
        compare(CompareFormat::Markdown)
            .contains("\n**What ran out first**\n\n- `ramp.llr`: max 201 req/s held;")
    );
    assert!(!compare(CompareFormat::Json).contains("ran out"));
}

/// Path groups of the replay: the busiest first, then 22 rare ones (past the top 20).
fn replay_targets() -> Vec<TargetInfo> {
    let mut targets = vec![
        target("GET", "/search"),
        target("GET", "/"),
        target("POST", "/login"),
    ];
    targets.extend((0..22).map(|n| target("GET", &format!("/item/{n}"))));
    targets
}

/// Replayed request `n` (5 ms apart): half to `/search`, a quarter to `/`, the rest
/// over `/login` and the items; the fix made `/search` fast and its 503s rare.
fn replay_record(n: u64) -> Record {
    let target = match n % 8 {
        0 | 1 | 4 | 5 => 0,
        2 | 6 => 1,
        3 => 2,
        _ => 3 + ((n / 8) % 22) as u32,
    };
    let (status, error) = match n {
        77 => (0, 2),
        _ if target == 0 && n % 100 == 4 => (503, 1),
        _ => (200, 0),
    };
    Record {
        checks_failed: 0,
        attack: 0,
        target,
        seq: n,
        intended_unix_ns: START_NS + n * 5 * MS,
        send_lag_ns: 30 * US,
        latency_ns: if target == 0 { 180 * MS } else { 20 * MS } + (n % 10) * MS,
        ttfb_ns: 10 * MS,
        status,
        error,
        bytes_in: 500,
        bytes_out: 90,
        protocol: Protocol::Http1,
        grpc_status: None,
    }
}

/// What the log said about replayed request `n`: `/search` took over a second and
/// failed one time in ten; every 50th line has no latency, every 90th no status.
fn replay_logged(record: &Record) -> record::Logged {
    let n = record.seq;
    let status = match n {
        _ if n.is_multiple_of(90) => 0,
        _ if record.target == 0 && n % 10 == 1 => 503,
        _ if record.target == 2 => 302,
        _ => 200,
    };
    let latency = if record.target == 0 {
        1_200 * MS
    } else {
        15 * MS
    } + (n % 7) * MS;
    record::Logged {
        attack: record.attack,
        target: record.target,
        seq: n,
        intended_unix_ns: record.intended_unix_ns,
        status,
        latency_ns: (!n.is_multiple_of(50)).then_some(latency),
        bytes: Some(2_000),
    }
}

/// A replay of an access log at 2x (400 requests over 2 s) beside a plain attack,
/// with its logged originals after each records block and how reading the log went.
fn replay_run() -> Vec<u8> {
    let mut replay = attack("incident", LoadModel::Open, None);
    replay.schedule = "replay".to_owned();
    replay.replay = Some(record::ReplayInfo {
        files: vec!["logs/access.log.gz".to_owned()],
        format: "nginx".to_owned(),
        speed: 2.0,
        log_start_unix_ns: START_NS - 86_400_000 * MS,
    });
    let header = RunHeader {
        trace: None,
        seed: None,
        tool: "loadlab test".to_owned(),
        start_unix_ns: START_NS,
        attacks: vec![replay, attack("background", LoadModel::Open, Some(10.0))],
        targets: replay_targets(),
        shard: None,
        precision_ns: None,
    };
    let mut writer =
        RecordWriter::new(Vec::new(), &header, Compression::Zstd { level: 3 }).unwrap();
    let errors = [
        (ErrorKind::Status, "503 Service Unavailable"),
        (ErrorKind::Connect, "connect: connection refused"),
    ]
    .map(|(kind, text)| ErrorEntry {
        kind,
        text: text.to_owned(),
    });
    writer.add_errors(0, &errors).unwrap();
    let mut records: Vec<Record> = (0..400).map(replay_record).collect();
    // The plain attack: it is no replay, so the section leaves it out.
    records.extend((0..20).map(|n| Record {
        attack: 1,
        target: 1,
        seq: n,
        intended_unix_ns: START_NS + n * 100 * MS,
        ..replay_record(2)
    }));
    records.sort_by_key(Record::sent_unix_ns);
    for chunk in records.chunks(64) {
        writer.extend(chunk);
        writer
            .flush_records(chunk.last().map(|r| r.sent_unix_ns() + 1))
            .unwrap();
        let originals: Vec<record::Logged> = chunk
            .iter()
            .filter(|r| r.attack == 0)
            .map(replay_logged)
            .collect();
        writer.write_logged(&originals).unwrap();
    }
    let end = RunEnd {
        replays: vec![record::ReplayEnd {
            attack: 0,
            lines: 412,
            requests: 400,
            bad_lines: 2,
            bad_examples: vec![
                "logs/access.log.gz:17: no request line in \"-\"".to_owned(),
                "logs/access.log.gz:230: timestamp \"32/Foo/2025\" is not a date".to_owned(),
            ],
            filtered: 10,
            reordered: 12,
            max_reorder_ns: 2_100 * MS,
            loops: 0,
        }],
        at_unix_ns: START_NS + 2_100 * MS,
        reason: StopReason::Completed,
        attacks: vec![
            AttackEnd {
                asked: 400,
                sent: 400,
                unsent: 0,
                asked_span_ns: 1_995 * MS,
            },
            AttackEnd {
                asked: 20,
                sent: 20,
                unsent: 0,
                asked_span_ns: 1_900 * MS,
            },
        ],
        cpu_ns: 9 * MS,
        peak_rss_bytes: 14 << 20,
        ..RunEnd::default()
    };
    writer.finish(&end).unwrap()
}

#[test]
fn golden_replay_reports() {
    let fixture = Fixture::new();
    std::fs::write(fixture.dir.join("replay.llr"), replay_run()).unwrap();
    let json = || ReportType::Json { buckets: None };
    for (name, config) in [
        ("replay.txt", config(ReportType::Text, None, None)),
        ("replay.json", config(json(), None, None)),
    ] {
        let (out, diagnostics) = fixture.report(&["replay.llr"], &config);
        assert_eq!(diagnostics, "", "{name}");
        check_golden(name, &out);
    }
    let (text, _) = fixture.report(&["replay.llr"], &config(ReportType::Text, None, None));
    for want in [
        "Replay \"incident\": logs/access.log.gz (nginx) at 2x",
        "12 of the requests logged out of order put back, at most 2.1s",
        "5 more groups  10",
        "transport errors    n/a           1 (0.25%)",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    assert!(!text.contains("\"background\""), "{text}");
    // A run without replays has no section: the steady run's report is unchanged.
    let (steady, _) = fixture.report(&["steady.llr"], &config(ReportType::Text, None, None));
    assert!(!steady.contains("Replay"), "{steady}");
    // -by reports keep it for the whole run only.
    let (by_attack, _) = fixture.report(
        &["replay.llr"],
        &config(ReportType::Text, None, Some(GroupBy::Attack)),
    );
    assert!(!by_attack.contains("Replay vs original"), "{by_attack}");
}

/// `encode -to record` of a replay keeps its originals and its log counts: the
/// re-encoded file reports the same section.
#[test]
fn encode_to_record_keeps_a_replays_originals() {
    let fixture = Fixture::new();
    std::fs::write(fixture.dir.join("replay.llr"), replay_run()).unwrap();
    let mut encoded = Vec::new();
    report::run_encode(
        &[fixture.path("replay.llr")],
        report::EncodeFormat::Record,
        &mut encoded,
        &mut Vec::new(),
    )
    .unwrap();
    std::fs::write(fixture.dir.join("encoded.llr"), encoded).unwrap();
    let text = config(ReportType::Text, None, None);
    let section = |report: &str| -> String {
        let start = report
            .find("Replay \"incident\"")
            .expect("a replay section");
        report[start..].to_owned()
    };
    let (original, _) = fixture.report(&["replay.llr"], &text);
    let (encoded, diagnostics) = fixture.report(&["encoded.llr"], &text);
    assert_eq!(diagnostics, "");
    assert_eq!(section(&encoded), section(&original));
}
