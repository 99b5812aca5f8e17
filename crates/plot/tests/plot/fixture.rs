//! Small fixed record files, written the way `attack` writes them: the golden run (two
//! attacks, a slowdown, 503s, timeouts, stats, an end block) and the bad inputs.

use std::path::{Path, PathBuf};

use record::{
    AttackEnd, AttackInfo, Compression, ErrorEntry, ErrorKind, GeneratorStats, LoadModel, Record,
    RecordWriter, RunEnd, RunHeader, StopReason, TargetInfo,
};

pub const START_NS: u64 = 1_763_700_000_000_000_000;
pub const MS: u64 = 1_000_000;
pub const S: u64 = 1_000_000_000;

/// A tiny deterministic generator (SplitMix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

// Headers and end blocks are built field by field, so fields the record crate adds
// later take their defaults instead of breaking this fixture.
#[allow(clippy::field_reassign_with_default)]
pub fn attack(name: &str, rate_per_sec: f64) -> AttackInfo {
    let mut info = AttackInfo::default();
    info.name = name.to_owned();
    info.model = LoadModel::Open;
    info.schedule = format!("const({rate_per_sec})");
    info.rate_per_sec = Some(rate_per_sec);
    info.concurrency = Some(10_000);
    info.timeout_ns = 30 * S;
    info
}

#[allow(clippy::field_reassign_with_default)]
pub fn header(attacks: Vec<AttackInfo>) -> RunHeader {
    let target = |path: &str| TargetInfo {
        method: "GET".to_owned(),
        url: format!("http://127.0.0.1:8080{path}"),
    };
    let mut header = RunHeader::default();
    header.tool = "loadlab 0.1.0".to_owned();
    header.start_unix_ns = START_NS;
    header.attacks = attacks;
    header.targets = vec![
        target("/search?q=a"),
        target("/search?q=b"),
        target("/news"),
    ];
    header
}

pub fn errors() -> Vec<ErrorEntry> {
    vec![
        ErrorEntry {
            kind: ErrorKind::Status,
            text: "503 Service Unavailable".to_owned(),
        },
        ErrorEntry {
            kind: ErrorKind::Timeout,
            text: "timeout after 30s".to_owned(),
        },
    ]
}

/// An OK request of `attack` due at `offset_ns`.
pub fn ok(attack: u16, seq: u64, offset_ns: u64, latency_ns: u64) -> Record {
    Record {
        attack,
        target: if attack == 1 { 2 } else { (seq % 2) as u32 },
        seq,
        intended_unix_ns: START_NS + offset_ns,
        send_lag_ns: 20_000 + seq % 7 * 3_000,
        latency_ns,
        ttfb_ns: latency_ns.saturating_sub(100_000),
        status: 200,
        error: 0,
        bytes_in: 1_200,
        bytes_out: 90,
    }
}

/// The golden run: 12 s of `search` at 40/s, slowing down from 6 s on with 503s from
/// 8 s and two 30 s timeouts, and `news` at 2/s answering in about 1 s.
pub fn golden_records() -> Vec<Record> {
    let mut rng = Rng::new(7);
    let mut records = Vec::new();
    for seq in 0..480u64 {
        let offset = seq * S / 40;
        let slow = offset > 6 * S;
        let base = if slow { 40 * MS } else { 2 * MS };
        let mut record = ok(0, seq, offset, base + rng.below(6 * MS));
        if offset > 8 * S && rng.below(5) == 0 {
            (record.status, record.error, record.latency_ns) = (503, 1, 300_000 + rng.below(MS));
        }
        if seq == 300 || seq == 401 {
            (record.status, record.error, record.latency_ns) = (0, 2, 30 * S);
            record.bytes_in = 0;
        }
        records.push(record);
    }
    for seq in 0..24u64 {
        records.push(ok(1, seq, seq * S / 2, S + rng.below(60 * MS)));
    }
    records.sort_by_key(Record::sent_unix_ns);
    records
}

/// Writes `records` as a record file, with stats every second and an end block when
/// `end` is given.
pub fn write_run(path: &Path, header: &RunHeader, records: &[Record], end: Option<&RunEnd>) {
    let file = std::fs::File::create(path).unwrap();
    let mut writer = RecordWriter::new(file, header, Compression::Zstd { level: 3 }).unwrap();
    writer.add_errors(0, &errors()).unwrap();
    let mut second = 1;
    for record in records {
        while record.sent_unix_ns() >= START_NS + second * S {
            writer.flush_records(Some(START_NS + second * S)).unwrap();
            writer.write_stats(&stats(second)).unwrap();
            second += 1;
        }
        writer.push(record);
    }
    writer.flush_records(None).unwrap();
    match end {
        Some(end) => {
            writer.finish(end).unwrap();
        }
        None => {
            writer.close().unwrap();
        }
    }
}

fn stats(second: u64) -> GeneratorStats {
    GeneratorStats {
        at_unix_ns: START_NS + second * S,
        cpu_ns: second * 30 * MS + second * second * MS,
        sent: second * 42,
        completed: second * 40,
        in_flight: 2 + second % 3,
        connections_open: 4,
        behind: u64::from(second == 9) * 3,
        rss_bytes: 12 << 20,
        ..GeneratorStats::default()
    }
}

#[allow(clippy::field_reassign_with_default)]
pub fn end(asked: &[u64], asked_span_ns: u64) -> RunEnd {
    let mut end = RunEnd::default();
    end.at_unix_ns = START_NS + 42 * S;
    end.reason = StopReason::Completed;
    end.attacks = asked
        .iter()
        .map(|&asked| AttackEnd {
            asked,
            sent: asked,
            unsent: 0,
            asked_span_ns,
        })
        .collect();
    end.cpu_ns = 500 * MS;
    end.peak_rss_bytes = 12 << 20;
    end
}

/// The golden run as a record file in `dir`.
pub fn golden_run(dir: &Path) -> PathBuf {
    let path = dir.join("golden.llr");
    let header = header(vec![attack("search", 40.0), attack("news", 2.0)]);
    write_run(
        &path,
        &header,
        &golden_records(),
        Some(&end(&[480, 24], 12 * S)),
    );
    path
}

/// One attack's records (due at a constant rate) as a complete record file.
pub fn single_attack_run(dir: &Path, name: &str, records: &[Record]) -> PathBuf {
    let path = dir.join(name);
    let span_ns = match (records.first(), records.last()) {
        (Some(first), Some(last)) => last.intended_unix_ns - first.intended_unix_ns,
        _ => 0,
    };
    let rate = if span_ns > 0 {
        (records.len() - 1) as f64 / (span_ns as f64 / 1e9)
    } else {
        100.0
    };
    let header = header(vec![attack("only", rate)]);
    write_run(
        &path,
        &header,
        records,
        Some(&end(&[records.len() as u64], span_ns)),
    );
    path
}
