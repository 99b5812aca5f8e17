//! A replay on the page (`attack -replay`): the original's rate on the rate chart, the
//! original's p99 against the replay's per interval, the "Replay vs original" panel;
//! golden page and charts. A run without a replay shows none of it (`golden.rs` holds
//! its page as it was).

use std::path::{Path, PathBuf};

use plot::{Format, RunPlot, Style};
use record::{
    AttackInfo, Compression, ErrorEntry, ErrorKind, LoadModel, Logged, Protocol, Record,
    RecordWriter, ReplayEnd, ReplayInfo, RunHeader, TargetInfo,
};

use crate::fixture::{self, MS, S, START_NS};
use crate::golden::{chart, check_golden, config};

/// The path groups: `/search` (the incident), `/` and `/login`.
const GROUPS: [(&str, &str); 3] = [("GET", "/search"), ("GET", "/"), ("POST", "/login")];

/// An incident log replayed at 2x: 20 s of replay whose rate rises from 20/s to 58/s;
/// from 10 s the log's `/search` took 1.2 s and failed one time in five, while the
/// replay (against the fix) answers in 180 ms. Returns each request's record and
/// what the log said about it.
fn incident() -> Vec<(Record, Logged)> {
    let mut out = Vec::new();
    let mut seq = 0u64;
    for second in 0..20u64 {
        let count = 20 + 2 * second;
        for n in 0..count {
            let target = [0, 0, 1, 0, 2][(seq % 5) as usize];
            let intended = START_NS + second * S + n * S / count;
            let incident = second >= 10 && target == 0;
            let record = Record {
                checks_failed: 0,
                attack: 0,
                target,
                seq,
                intended_unix_ns: intended,
                send_lag_ns: 40_000,
                latency_ns: if target == 0 { 180 * MS } else { 20 * MS },
                ttfb_ns: 10 * MS,
                status: if target == 2 { 302 } else { 200 },
                error: 0,
                bytes_in: 900,
                bytes_out: 80,
                protocol: Protocol::Http1,
                grpc_status: None,
            };
            let logged = Logged {
                attack: 0,
                target,
                seq,
                intended_unix_ns: intended,
                status: match () {
                    () if incident && seq % 5 == 1 => 503,
                    () => record.status,
                },
                latency_ns: Some(if incident { 1_200 * MS } else { 15 * MS }),
                bytes: Some(2_048),
            };
            out.push((record, logged));
            seq += 1;
        }
    }
    out
}

#[allow(clippy::field_reassign_with_default)]
fn replay_header() -> RunHeader {
    let mut attack = AttackInfo::default();
    attack.name = "incident".to_owned();
    attack.model = LoadModel::Open;
    attack.schedule = "replay".to_owned();
    attack.timeout_ns = 30 * S;
    attack.replay = Some(ReplayInfo {
        files: vec!["logs/incident_001.log.gz".to_owned()],
        format: "nginx".to_owned(),
        speed: 2.0,
        log_start_unix_ns: START_NS - 3_600 * S,
    });
    let mut header = RunHeader::default();
    header.tool = "loadlab 0.1.0".to_owned();
    header.start_unix_ns = START_NS;
    header.attacks = vec![attack];
    header.targets = GROUPS
        .iter()
        .map(|(method, path)| TargetInfo {
            method: (*method).to_owned(),
            url: (*path).to_owned(),
            ..TargetInfo::default()
        })
        .collect();
    header
}

/// The incident replay as the engine writes it: each second's records, then their
/// originals, then the end block with how reading the log went.
fn replay_run(dir: &Path) -> PathBuf {
    let path = dir.join("replay.llr");
    let file = std::fs::File::create(&path).unwrap();
    let mut writer =
        RecordWriter::new(file, &replay_header(), Compression::Zstd { level: 3 }).unwrap();
    let errors = [ErrorEntry {
        kind: ErrorKind::Status,
        text: "503 Service Unavailable".to_owned(),
    }];
    writer.add_errors(0, &errors).unwrap();
    let requests = incident();
    for second in 0..20u64 {
        let (records, logged): (Vec<Record>, Vec<Logged>) = requests
            .iter()
            .filter(|(r, _)| (r.intended_unix_ns - START_NS) / S == second)
            .copied()
            .unzip();
        writer.extend(&records);
        writer
            .flush_records(Some(START_NS + (second + 1) * S))
            .unwrap();
        writer.write_logged(&logged).unwrap();
    }
    let mut end = fixture::end(&[requests.len() as u64], 20 * S);
    end.replays = vec![ReplayEnd {
        attack: 0,
        lines: requests.len() as u64 + 3,
        requests: requests.len() as u64,
        bad_lines: 3,
        bad_examples: vec!["logs/incident_001.log.gz:42: no request line in \"-\"".to_owned()],
        filtered: 0,
        reordered: 12,
        max_reorder_ns: 2_100 * MS,
        loops: 0,
    }];
    writer.finish(&end).unwrap();
    path
}

/// The replay read from a temporary file (kept while the third value lives); outputs
/// name it without its directory.
pub fn replay_plot() -> (RunPlot, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = replay_run(dir.path());
    let run = RunPlot::read(
        &[path.display().to_string()],
        &config(plot::DEFAULT_THRESHOLD),
    )
    .unwrap();
    let prefix = format!("{}/", dir.path().display());
    (run, prefix, dir)
}

fn values<'a>(chart: &'a plot::Chart, name: &str) -> &'a [f64] {
    &chart
        .series
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{}: no series {name}", chart.id))
        .y
}

#[test]
fn golden_replay_page_and_charts() {
    let (run, dir, _keep) = replay_plot();
    let ids: Vec<&str> = run.charts().iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        [
            "latency",
            "percentiles",
            "rate",
            "replay-latency",
            "status",
            "distribution",
            "send-lag"
        ]
    );
    check_golden("golden-replay.html", &run.html().replace(&dir, ""));
    for id in ["rate", "replay-latency"] {
        let svg = run.chart_svg(chart(&run, id)).replace(&dir, "");
        check_golden(&format!("golden-replay-{id}.svg"), &svg);
    }
}

#[test]
fn the_original_rate_follows_the_log_and_the_p99s_tell_the_fix() {
    let (run, _, _keep) = replay_plot();
    let rate = chart(&run, "rate");
    let original = values(rate, "original (logged)");
    let style = rate.series.iter().find(|s| s.name == "original (logged)");
    assert_eq!(style.map(|s| s.style), Some(Style::Dashed));
    // One row a second: the log's 20, 22, ... 58 requests, as replayed.
    let want: Vec<f64> = (0..20).map(|s| f64::from(20 + 2 * s)).collect();
    assert_eq!(&original[..20], &want[..], "{original:?}");
    assert_eq!(&values(rate, "achieved")[..20], &want[..]);
    let latency = chart(&run, "replay-latency");
    let (logged, replayed) = (
        values(latency, "original p99 (logged)"),
        values(latency, "replay p99"),
    );
    // Before the incident the log's p99 was 15 ms, after it 1.2 s; the replay's is
    // 180 ms (its /search) throughout.
    assert_eq!(logged[2], 15.0 * 1e6);
    assert_eq!(logged[15], 1_200.0 * 1e6);
    assert!(
        replayed[..20].iter().all(|&p99| p99 == 180.0 * 1e6),
        "{replayed:?}"
    );
}

#[test]
fn the_panel_says_what_report_says() {
    let (run, _, _keep) = replay_plot();
    let html = run.html();
    for want in [
        "<section class=\"replay\" aria-labelledby=\"replay-title\">",
        "<p class=\"headline\">incident: logs/incident_001.log.gz (nginx) at 2x</p>",
        "; 12 of the requests logged out of order put back, at most 2.1s</p>",
        "<code>logs/incident_001.log.gz:42: no request line in &quot;-&quot;</code>",
        "<tr><td>latency p99</td><td>1.2s</td><td>180ms</td></tr>",
        "<tr><td>transport errors</td><td>n/a</td><td>0 (0.00%)</td></tr>",
        "<tr><td>GET /search</td><td>468</td><td>1.2s</td><td>180ms</td>",
    ] {
        assert!(html.contains(want), "no {want}");
    }
    // The report block on the page is `loadlab report`'s, replay section included.
    assert!(
        html.contains("Replay vs original  Original"),
        "the report's section"
    );
}

#[test]
fn a_run_without_a_replay_has_no_replay_parts() {
    let (run, _) = crate::golden::golden_plot(plot::DEFAULT_THRESHOLD);
    let html = run.html();
    assert!(!html.contains("class=\"replay\""));
    assert!(!html.contains("original (logged)"));
    assert!(run.charts().iter().all(|c| c.id != "replay-latency"));
}

/// The charts as PNG, when this machine has fonts: the files a reader looks at
/// (`LOADLAB_PLOT_SHOTS=dir` keeps them there).
#[test]
fn the_replay_charts_render_as_png() {
    let (run, _, keep) = replay_plot();
    let shots = std::env::var_os("LOADLAB_PLOT_SHOTS")
        .map_or_else(|| keep.path().join("shots"), PathBuf::from);
    let files = plot::ChartFiles::new(&format!("{}/", shots.display()));
    match run.write_chart_files(&files, Format::Png) {
        Ok(paths) => {
            let latency = paths
                .iter()
                .find(|p| p.display().to_string().contains("replay-latency"));
            let bytes = std::fs::read(latency.expect("the replay chart's file")).unwrap();
            assert!(bytes.starts_with(b"\x89PNG"), "a PNG");
        }
        Err(err) => assert!(err.to_string().contains("no fonts"), "{err}"),
    }
}
