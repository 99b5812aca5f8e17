//! Small fixed record files, written the way `attack` writes them: the golden run (two
//! attacks, a slowdown, 503s, timeouts, stats, an end block), the same run with the
//! system under test's resource samples (`attack -monitor`), a monitor file on its
//! own (`loadlab monitor -output`), a flow run (steps with checks, some failing), and
//! the bad inputs.

use std::path::{Path, PathBuf};

use record::{
    AttackEnd, AttackInfo, Compression, ErrorEntry, ErrorKind, GeneratorStats, LoadModel, Protocol,
    Record, RecordWriter, RunEnd, RunHeader, SampleBatch, SampleFrame, SampleGap, SampleValue,
    SamplerInfo, SeriesInfo, SeriesKind, StopReason, TargetInfo,
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
        step: None,
        checks: Vec::new(),
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
        checks_failed: 0,
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
        protocol: Protocol::Http1,
        grpc_status: None,
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
    write_run_with_samples(path, header, records, end, &[]);
}

/// [`write_run`], with sample `frames` (in time order) written as the collector writes
/// them: each second, the frames taken before it, then the records.
pub fn write_run_with_samples(
    path: &Path,
    header: &RunHeader,
    records: &[Record],
    end: Option<&RunEnd>,
    frames: &[SampleFrame],
) {
    write_run_with_errors(path, header, &errors(), records, end, frames);
}

/// [`write_run_with_samples`] with these error entries.
pub fn write_run_with_errors(
    path: &Path,
    header: &RunHeader,
    errors: &[ErrorEntry],
    records: &[Record],
    end: Option<&RunEnd>,
    frames: &[SampleFrame],
) {
    let file = std::fs::File::create(path).unwrap();
    let mut writer = RecordWriter::new(file, header, Compression::Zstd { level: 3 }).unwrap();
    writer.add_errors(0, errors).unwrap();
    let mut frames = frames.iter().peekable();
    let mut second = 1;
    for record in records {
        while record.sent_unix_ns() >= START_NS + second * S {
            while let Some(frame) = frames.next_if(|f| f.batch.at_unix_ns < START_NS + second * S) {
                writer.write_samples(frame).unwrap();
            }
            writer.flush_records(Some(START_NS + second * S)).unwrap();
            writer.write_stats(&stats(second)).unwrap();
            second += 1;
        }
        writer.push(record);
    }
    writer.flush_records(None).unwrap();
    for frame in frames {
        writer.write_samples(frame).unwrap();
    }
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

/// The golden run with the system under test's samples in the same file, as
/// `attack -monitor` writes them: one reading a second from t = 0 to 13 s.
pub fn golden_run_with_samples(dir: &Path) -> PathBuf {
    let path = dir.join("golden-samples.llr");
    let header = header(vec![attack("search", 40.0), attack("news", 2.0)]);
    write_run_with_samples(
        &path,
        &header,
        &golden_records(),
        Some(&end(&[480, 24], 12 * S)),
        &sut_frames(0..=13),
    );
    path
}

/// A monitor file on its own (`loadlab monitor -output golden.mon`), started 3 s
/// before the golden run and stopped 4 s after its last request: the host and the
/// database only, the database refusing the login for two readings.
#[allow(clippy::field_reassign_with_default)]
pub fn monitor_file(dir: &Path) -> PathBuf {
    let path = dir.join("golden.mon");
    let header = RunHeader {
        tool: "loadlab monitor".to_owned(),
        start_unix_ns: START_NS - 3 * S,
        ..RunHeader::default()
    };
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = RecordWriter::new(file, &header, Compression::Zstd { level: 3 }).unwrap();
    let samplers = [sampler("host", "host"), sampler("postgres", PG)];
    let series = [
        series(0, "host.cpu_percent", &[("cpu", "all")], "percent"),
        series(0, "host.memory_used_bytes", &[], "bytes"),
        series(0, "host.tcp_established", &[], "count"),
        series(
            1,
            "postgres.transactions_per_sec",
            &[("database", "shop")],
            "1/s",
        ),
        series(1, "postgres.connections", &[("database", "shop")], "count"),
    ];
    let mut frames = Frames::new(&samplers, &series);
    for tick in -3i64..=16 {
        let t = tick as f64;
        let load = if (0..12).contains(&tick) { 1.0 } else { 0.0 };
        frames.push(
            tick,
            0,
            &[
                (0, 8.0 + 40.0 * load),
                (1, GIB * (1.5 + 0.01 * t)),
                (2, 4.0 + 80.0 * load),
            ],
            &[],
        );
        if tick == 5 || tick == 6 {
            let refused = "login refused: password authentication failed for user \"loadlab\"";
            frames.push(tick, 1, &[], &[(1, None, refused)]);
        } else {
            frames.push(
                tick,
                1,
                &[(3, 2.0 + 38.0 * load), (4, 3.0 + 9.0 * load)],
                &[],
            );
        }
    }
    for frame in &frames.frames {
        writer.write_samples(frame).unwrap();
    }
    let mut run_end = RunEnd::default();
    run_end.at_unix_ns = START_NS + 16 * S;
    run_end.reason = StopReason::Completed;
    writer.finish(&run_end).unwrap();
    path
}

pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
pub const MIB: f64 = 1024.0 * 1024.0;
pub const PG: &str = "postgres://loadlab:REDACTED@127.0.0.1:5432/shop";
pub const PROM: &str = "http://127.0.0.1:9113/metrics";
pub const APP_GONE: &str = "no process matches app";
pub const PROM_DOWN: &str = "connect: Connection refused (os error 111)";

fn sampler(kind: &str, name: &str) -> SamplerInfo {
    SamplerInfo {
        kind: kind.into(),
        name: name.to_owned(),
    }
}

fn series(sampler: u32, name: &str, labels: &[(&str, &str)], unit: &str) -> SeriesInfo {
    let kind = if unit.ends_with("/s") {
        SeriesKind::Rate
    } else {
        SeriesKind::Gauge
    };
    SeriesInfo {
        sampler,
        name: name.to_owned(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        unit: unit.to_owned(),
        kind,
    }
}

/// Sample frames in time order; the first carries every sampler and series.
struct Frames {
    frames: Vec<SampleFrame>,
    tables: Option<(Vec<SamplerInfo>, Vec<SeriesInfo>)>,
    /// Samplers and series written so far: where the next frame's entries would start.
    known: (u32, u32),
}

impl Frames {
    fn new(samplers: &[SamplerInfo], series: &[SeriesInfo]) -> Frames {
        Frames {
            frames: Vec::new(),
            tables: Some((samplers.to_vec(), series.to_vec())),
            known: (0, 0),
        }
    }

    /// One sampler's reading `tick` seconds from the run's start (a few ms after the
    /// tick, each sampler at its own offset, as threads read).
    fn push(
        &mut self,
        tick: i64,
        sampler: u32,
        values: &[(u32, f64)],
        gaps: &[(u32, Option<u32>, &str)],
    ) {
        let at_unix_ns = (START_NS as i64 + tick * S as i64) as u64 + u64::from(sampler) * 3 * MS;
        let (samplers, series) = self.tables.take().unwrap_or_default();
        let (first_sampler, first_series) = self.known;
        self.known.0 += samplers.len() as u32;
        self.known.1 += series.len() as u32;
        self.frames.push(SampleFrame {
            first_sampler,
            samplers,
            first_series,
            series,
            batch: SampleBatch {
                at_unix_ns,
                values: values
                    .iter()
                    .map(|&(series, value)| SampleValue { series, value })
                    .collect(),
                gaps: gaps
                    .iter()
                    .map(|&(sampler, series, reason)| SampleGap {
                        sampler,
                        series,
                        reason: reason.to_owned(),
                    })
                    .collect(),
            },
        });
    }
}

/// What the system under test did during the golden run, one reading a second: nginx
/// climbs to a full core by 6 s (where latency steps up) and its listen queue
/// overflows from 7 s; the app leaks memory, holds the database pool at its 20
/// connections from 6 s, and is gone at 10-11 s (restarted); the Prometheus endpoint
/// refuses connections at 9-10 s; one counter reset at 4 s.
pub fn sut_frames(ticks: std::ops::RangeInclusive<i64>) -> Vec<SampleFrame> {
    let samplers = [
        sampler("host", "host"),
        sampler("process", "nginx"),
        sampler("process", "app"),
        sampler("postgres", PG),
        sampler("prom", PROM),
    ];
    let q = |q: &'static str| [("quantile", q)];
    let series = [
        // host: 0..=14
        series(0, "host.cpu_percent", &[("cpu", "all")], "percent"),
        series(0, "host.cpu_percent", &[("cpu", "0")], "percent"),
        series(0, "host.cpu_percent", &[("cpu", "1")], "percent"),
        series(0, "host.cpu_iowait_percent", &[("cpu", "all")], "percent"),
        series(0, "host.memory_total_bytes", &[], "bytes"),
        series(0, "host.memory_available_bytes", &[], "bytes"),
        series(0, "host.memory_used_bytes", &[], "bytes"),
        series(0, "host.tcp_established", &[], "count"),
        series(0, "host.tcp_time_wait", &[], "count"),
        series(0, "host.tcp_sockets", &[("state", "close_wait")], "count"),
        series(0, "host.tcp_sockets", &[("state", "established")], "count"),
        series(0, "host.tcp_retransmits_per_sec", &[], "1/s"),
        series(0, "host.tcp_listen_overflows_per_sec", &[], "1/s"),
        series(
            0,
            "host.net_rx_bytes_per_sec",
            &[("interface", "lo")],
            "bytes/s",
        ),
        series(
            0,
            "host.net_tx_bytes_per_sec",
            &[("interface", "lo")],
            "bytes/s",
        ),
        // nginx: 15..=20
        series(1, "process.cpu_percent", &[("group", "nginx")], "percent"),
        series(1, "process.rss_bytes", &[("group", "nginx")], "bytes"),
        series(1, "process.sockets", &[("group", "nginx")], "count"),
        series(1, "process.fds", &[("group", "nginx")], "count"),
        series(1, "process.fd_limit", &[("group", "nginx")], "count"),
        series(1, "process.threads", &[("group", "nginx")], "count"),
        // app: 21..=25
        series(2, "process.cpu_percent", &[("group", "app")], "percent"),
        series(2, "process.rss_bytes", &[("group", "app")], "bytes"),
        series(2, "process.sockets", &[("group", "app")], "count"),
        series(2, "process.fds", &[("group", "app")], "count"),
        series(2, "process.fd_limit", &[("group", "app")], "count"),
        // postgres: 26..=28
        series(
            3,
            "postgres.transactions_per_sec",
            &[("database", "shop")],
            "1/s",
        ),
        series(
            3,
            "postgres.rollbacks_per_sec",
            &[("database", "shop")],
            "1/s",
        ),
        series(3, "postgres.connections", &[("database", "shop")], "count"),
        // prom: 29..=31
        series(4, "nginx_connections_active", &[], ""),
        series(4, "http_request_duration_seconds", &q("0.5"), "seconds"),
        series(4, "http_request_duration_seconds", &q("0.99"), "seconds"),
        // The fullest process's share of its fd limit: nginx 32, app 33.
        series(
            1,
            "process.fd_use_percent",
            &[("group", "nginx")],
            "percent",
        ),
        series(2, "process.fd_use_percent", &[("group", "app")], "percent"),
    ];
    let mut frames = Frames::new(&samplers, &series);
    for tick in ticks {
        let t = tick as f64;
        let busy = (t / 6.0).min(1.0);
        let saturated = tick >= 6;
        let app_gone = tick == 10 || tick == 11;
        let nginx_cpu = if saturated {
            97.0 + (tick % 3) as f64
        } else {
            20.0 + 75.0 * busy
        };
        let app_cpu = if app_gone { 0.0 } else { 40.0 + 100.0 * busy };
        let established = 20.0
            + 90.0 * busy
            + if saturated {
                (tick % 4) as f64 * 6.0
            } else {
                0.0
            };
        let used = GIB * (3.1 + 0.04 * t);
        let mut host = vec![
            (0, (nginx_cpu + app_cpu) / 2.5 + 4.0),
            (1, (nginx_cpu + 8.0).min(100.0)),
            (2, app_cpu / 1.5),
            (3, 1.0 + (tick % 3) as f64 * 0.5),
            (4, 8.0 * GIB),
            (5, 8.0 * GIB - used),
            (6, used),
            (7, established),
            (8, 3.0 + 40.0 * busy * busy),
            (
                9,
                if tick >= 8 {
                    (tick - 7) as f64 * 2.0
                } else {
                    0.0
                },
            ),
            (10, established - 1.0),
            (
                12,
                if tick >= 7 {
                    5.0 + (tick % 3) as f64 * 4.0
                } else {
                    0.0
                },
            ),
            (13, 60.0 * 1024.0 * (0.3 + busy)),
            (14, 9.0 * 1024.0 * (0.3 + busy)),
        ];
        let mut host_gaps = Vec::new();
        if tick == 4 {
            host_gaps.push((0, Some(11), "counter reset (150 -> 20)"));
        } else {
            host.push((
                11,
                if saturated {
                    3.0 + (tick % 2) as f64 * 4.0
                } else {
                    0.0
                },
            ));
        }
        frames.push(tick, 0, &host, &host_gaps);
        let nginx_fds = 40.0 + 5.0 * established;
        frames.push(
            tick,
            1,
            &[
                (15, nginx_cpu),
                (16, 48.0 * MIB + t * 0.5 * MIB),
                (17, nginx_fds - 30.0),
                (18, nginx_fds),
                (19, 1024.0),
                (20, 3.0),
                (32, nginx_fds / 1024.0 * 100.0),
            ],
            &[],
        );
        if app_gone {
            frames.push(tick, 2, &[], &[(2, None, APP_GONE)]);
        } else {
            let since_start = if tick >= 12 { t - 12.0 } else { t };
            frames.push(
                tick,
                2,
                &[
                    (21, app_cpu),
                    (22, 300.0 * MIB + since_start * 45.0 * MIB),
                    (23, 20.0 + 10.0 * busy),
                    (24, 60.0 + 12.0 * busy),
                    (25, 1_048_576.0),
                    (33, (60.0 + 12.0 * busy) / 1_048_576.0 * 100.0),
                ],
                &[],
            );
        }
        let pool = (5.0 + 15.0 * busy).round();
        frames.push(
            tick,
            3,
            &[
                (26, 38.0 * busy + if tick % 2 == 0 { 3.0 } else { -2.0 }),
                (
                    27,
                    if tick >= 8 {
                        6.0 + (tick % 3) as f64
                    } else {
                        0.0
                    },
                ),
                (28, pool),
            ],
            &[],
        );
        if tick == 9 || tick == 10 {
            frames.push(tick, 4, &[], &[(4, None, PROM_DOWN)]);
        } else {
            frames.push(
                tick,
                4,
                &[
                    (29, established - 4.0),
                    (30, if saturated { 0.045 } else { 0.003 + 0.001 * t }),
                    (31, if saturated { 0.31 } else { 0.008 + 0.002 * t }),
                ],
                &[],
            );
        }
    }
    frames.frames
}

/// The seconds of [`ramp_records`].
pub const RAMP_SECONDS: u64 = 20;
/// The first line nginx's log quotes in [`ramp_run`]: markup a page must escape.
pub const SCRIPT_LINE: &str = "upstream timed out <script>alert(1)</script> while reading";

/// A ramp against a server that answers 200 a second and 503s the rest: 20/s, up by
/// 20/s each second for [`RAMP_SECONDS`] s. Past 200/s the failures pass 1%: the knee
/// is at 10 s, where 220/s are offered.
pub fn ramp_records() -> Vec<Record> {
    let mut records = Vec::new();
    for second in 0..RAMP_SECONDS {
        let offered = 20 + 20 * second;
        for n in 0..offered {
            let seq = records.len() as u64;
            let mut record = ok(0, seq, second * S + n * S / offered, 2 * MS);
            if n >= 200 {
                (record.status, record.error, record.latency_ns) = (503, 1, 300_000);
            }
            records.push(record);
        }
    }
    records.sort_by_key(Record::sent_unix_ns);
    records
}

/// [`ramp_records`] as a record file; `watched`, with samples one a second: the host's
/// CPU at 30%, nginx's fds at 95% of their limit from 7 s (3 s before the knee: the
/// first limit), and its log writing timeouts from 14 s (after the knee), its first
/// line [`SCRIPT_LINE`].
#[allow(clippy::field_reassign_with_default)]
pub fn ramp_run(dir: &Path, watched: bool) -> PathBuf {
    let path = dir.join(if watched {
        "ramp-watched.llr"
    } else {
        "ramp.llr"
    });
    let mut ramp = attack("ramp", 20.0);
    ramp.schedule = format!("line(20, {}, {RAMP_SECONDS}s)", 20 * RAMP_SECONDS);
    ramp.rate_per_sec = None;
    let records = ramp_records();
    let frames = if watched { ramp_frames() } else { Vec::new() };
    write_run_with_samples(
        &path,
        &header(vec![ramp]),
        &records,
        Some(&end(&[records.len() as u64], RAMP_SECONDS * S)),
        &frames,
    );
    path
}

fn ramp_frames() -> Vec<SampleFrame> {
    let samplers = [
        sampler("host", "host"),
        sampler("process", "nginx"),
        sampler("log", "nginx"),
    ];
    let timeout = [("pattern", "timeout")];
    let series = [
        series(0, "host.cpu_percent", &[("cpu", "all")], "percent"),
        series(
            1,
            "process.fd_use_percent",
            &[("group", "nginx")],
            "percent",
        ),
        series(1, "process.fd_limit", &[("group", "nginx")], "count"),
        series(2, "log.lines_per_sec", &timeout, "1/s"),
        series(
            2,
            "log.example",
            &[("pattern", "timeout"), ("line", SCRIPT_LINE)],
            "count",
        ),
    ];
    let mut frames = Frames::new(&samplers, &series);
    for tick in 0..=RAMP_SECONDS as i64 + 1 {
        frames.push(tick, 0, &[(0, 30.0)], &[]);
        let fds = if tick >= 7 { 95.0 } else { 40.0 };
        frames.push(tick, 1, &[(1, fds), (2, 1024.0)], &[]);
        let lines = if tick >= 14 { 5.0 } else { 0.0 };
        let mut log = vec![(3, lines)];
        if tick == 14 {
            log.push((4, 1.0));
        }
        frames.push(tick, 2, &log, &[]);
    }
    frames.frames
}

/// The flow run's steps: (method, path, step, checks).
const FLOW_STEPS: [(&str, &str, &str, &[&str]); 3] = [
    (
        "POST",
        "/login",
        "login",
        &["status 200", "json $.token exists"],
    ),
    ("GET", "/items", "list", &["status 200", "has items"]),
    (
        "GET",
        "/items/{{item}}",
        "item",
        &["status 200", "latency < 200ms", "body contains \"id\""],
    ),
];

/// The flow run's error entries (ids from 1): what `attack` writes for a flow whose
/// failed checks fail requests.
pub fn flow_errors() -> Vec<ErrorEntry> {
    let entry = |kind, text: &str| ErrorEntry {
        kind,
        text: text.to_owned(),
    };
    vec![
        entry(ErrorKind::Status, "503 Service Unavailable"),
        entry(ErrorKind::Timeout, "timeout after 30s"),
        entry(ErrorKind::Check, "login: json $.token exists"),
        entry(ErrorKind::Check, "item: latency < 200ms"),
    ]
}

/// A flow's request: step `step` (its target) at `offset_ns`, answered 200 after
/// `latency_ns` with every check passed.
fn flow_request(seq: u64, step: u32, offset_ns: u64, latency_ns: u64) -> Record {
    Record {
        target: step,
        ..ok(0, seq, offset_ns, latency_ns)
    }
}

/// Runs of the flow run's flow: one every 250 ms for 12 s.
const FLOW_RUNS: u64 = 48;

/// The flow run: 12 s of `shop`, a flow started every 250 ms (login, list, then the
/// item twice, 100 ms apart). From 6 s items slow down past their 200 ms check; from
/// 8 s one login in four has no token (its flow ends there), from 9 s one list in
/// three is a 503, and one item times out (every check of its step fails).
pub fn flow_records() -> Vec<Record> {
    const FLOW: u32 = Record::FAILED_BY_FLOW;
    let mut rng = Rng::new(11);
    let mut records = Vec::new();
    for flow in 0..FLOW_RUNS {
        // As the engine numbers a flow's requests: `run << 16 | request in the run`.
        let next = |request: u64, step: u32, offset_ns: u64, latency_ns: u64| {
            flow_request((flow << 16) | request, step, offset_ns, latency_ns)
        };
        let start = flow * S / 4;
        let mut login = next(0, 0, start, 20 * MS + rng.below(5 * MS));
        let no_token = start >= 8 * S && flow % 4 == 1;
        if no_token {
            (login.checks_failed, login.error) = (0b10 | FLOW, 3);
        }
        records.push(login);
        if no_token {
            continue;
        }
        let mut list = next(1, 1, start + 100 * MS, 30 * MS + rng.below(10 * MS));
        if start >= 9 * S && flow % 3 == 0 {
            (list.status, list.error, list.checks_failed) = (503, 1, 0b11);
        }
        records.push(list);
        for repeat in 0..2 {
            let slow = if start >= 6 * S { 120 * MS } else { 0 };
            let latency = 50 * MS + slow + rng.below(150 * MS);
            let mut item = next(2 + repeat, 2, start + (200 + repeat * 100) * MS, latency);
            if latency >= 200 * MS {
                (item.checks_failed, item.error) = (0b10 | FLOW, 4);
            }
            if flow == 40 && repeat == 1 {
                (item.status, item.error, item.latency_ns) = (0, 2, 30 * S);
                (item.checks_failed, item.bytes_in) = (0b111, 0);
            }
            records.push(item);
        }
    }
    records.sort_by_key(Record::sent_unix_ns);
    records
}

/// The flow run as a record file in `dir`.
#[allow(clippy::field_reassign_with_default)]
pub fn flow_run(dir: &Path) -> PathBuf {
    let path = dir.join("flow.llr");
    let mut shop = AttackInfo::default();
    shop.name = "shop".to_owned();
    shop.model = LoadModel::Open;
    shop.schedule = "const(4)".to_owned();
    shop.concurrency = Some(10_000);
    shop.timeout_ns = 30 * S;
    shop.flow = true;
    let mut header = header(vec![shop]);
    header.targets = FLOW_STEPS
        .iter()
        .map(|(method, path, step, checks)| TargetInfo {
            method: (*method).to_owned(),
            url: format!("http://127.0.0.1:8080{path}"),
            step: Some((*step).to_owned()),
            checks: checks.iter().map(|c| (*c).to_owned()).collect(),
        })
        .collect();
    let records = flow_records();
    // As the engine ends a flow: runs asked, requests sent.
    let mut end = end(&[FLOW_RUNS], 12 * S);
    end.attacks[0].sent = records.len() as u64;
    write_run_with_errors(&path, &header, &flow_errors(), &records, Some(&end), &[]);
    path
}

/// The stream figures of second `second` of [`streams_run`]: connections climbing
/// to a limit of 30 and held there, messages each way, latencies slowing at the top.
fn streams_stats(second: u64) -> record::StreamStats {
    let open = (second * 6).min(30);
    let mut latency = record::MessageLatency::default();
    for i in 0..open {
        latency.add((2 + second * second / 4) * MS + i * 100_000);
    }
    record::StreamStats {
        open,
        opened: if open < 30 { 6 } else { 0 },
        closed: 0,
        messages_out: open * 2,
        bytes_out: open * 40,
        messages_in: open * 5,
        bytes_in: open * 300,
        latency,
    }
}

/// The golden run's records, with stats samples that count stream connections.
pub fn streams_run(dir: &Path) -> PathBuf {
    let path = dir.join("streams.llr");
    let header = header(vec![attack("search", 40.0), attack("news", 2.0)]);
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = RecordWriter::new(file, &header, Compression::Zstd { level: 3 }).unwrap();
    let mut second = 1;
    for record in golden_records() {
        while record.sent_unix_ns() >= START_NS + second * S {
            writer.flush_records(Some(START_NS + second * S)).unwrap();
            let sample = GeneratorStats {
                streams: Some(streams_stats(second)),
                ..stats(second)
            };
            writer.write_stats(&sample).unwrap();
            second += 1;
        }
        writer.push(&record);
    }
    writer.flush_records(None).unwrap();
    writer.finish(&end(&[480, 24], 12 * S)).unwrap();
    path
}
