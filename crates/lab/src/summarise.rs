//! A step's record file to the figures of its measured window: the records whose
//! *intended* send time falls after the warm-up and before the step's end
//! ([`report::keep_window`], the rule the step's `report.txt` and `plot.html` read
//! by). Judging by intended time keeps a late generator's backlog in the step that
//! caused it. A step with background scenarios holds several attacks; each record
//! carries its attack's index (the step's main load is 0, the scenarios 1.. in plan
//! order), so each attack gets figures of its own. A flow's plan asks for flow starts,
//! so its sent rate counts the records that start a run of the flow.
//!
//! The figures are not folded here: the window goes through [`report::Measure`] by
//! attack, and each attack's [`report::Report`] (with the whole run's exact limit) is
//! read into the [`StepSummary`] the verdict judges. So a step's `p99`, success ratio
//! and failures are those its `report.txt` prints, by construction.

mod held;

use analysis::{CheckCount, ConnectionsAsked, Percentile, StepSummary};
use record::RunTables;
use report::{Bounds, GroupBy, Measure, Metrics, Report};

use crate::LabError;
use held::{StreamRecords, stream_window};

/// The measured window, as offsets from the run's time zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Warm-up end.
    pub start_ns: u64,
    /// Step end.
    pub end_ns: u64,
}

/// A step's window in figures: what [`analysis::judge`] needs, plus the error counts
/// by kind (HTTP statuses by their code, transport errors by their kind name).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// The step's main load (attack 0), for the verdict.
    pub summary: StepSummary,
    /// Each background scenario's (attacks 1..), in plan order.
    pub scenarios: Vec<StepSummary>,
    /// Requests the file holds in all (warm-up included).
    pub all_records: u64,
    /// What each file says besides its records (header, end): a sharded step's
    /// shards, each with its index and how it ended.
    pub sources: Vec<record::SourceSummary>,
}

/// Reads `paths` (on [`record::RecordStream`]'s reader thread, one file after the
/// other, in file order: the window's figures do not depend on order) and sums up
/// their window for each of their `attacks`; `asked` gives the requests an attack's
/// plan made due between two offsets (open model), `None` for the closed model, whose
/// `users` the step's held connections are judged against (`held`).
/// Several files are the shards of one run, read as `loadlab report` reads them: the
/// shards of different runs, or one shard twice, are refused.
pub fn summarise(
    paths: &[String],
    window: Window,
    (attacks, users): (usize, Option<u64>),
    asked: &dyn Fn(usize, u64, u64) -> Option<u64>,
) -> Result<Figures, LabError> {
    let fail = |e: record::RecordError| LabError::Folder(e.to_string());
    let mut stream =
        record::RecordStream::open(paths, record::ReadOrder::Input, false).map_err(fail)?;
    // A step has a few attacks: each keeps the whole run's exact limit, so its
    // percentiles are those of the step's report (which is of the whole window).
    let mut measure = Measure::new(Some(GroupBy::Attack), Metrics::new(None));
    let mut batch = Vec::new();
    let mut all = 0;
    let mut stream_records = StreamRecords::default();
    let mut entries = Vec::new();
    while stream.next_batch(&mut batch).map_err(fail)? {
        all += batch.len() as u64;
        let span = (window.start_ns, window.end_ns);
        report::keep_window(&mut batch, stream.summaries(), span);
        measure.add_records(&batch, stream.tables());
        stream_records.add(&batch, stream.tables());
        stream_records.take_connections(&mut stream, &mut entries);
    }
    // The entries come with their batch, and once more after the last.
    stream_records.take_connections(&mut stream, &mut entries);
    let sources = stream.summaries().to_vec();
    let tables = stream.tables();
    let summary = measure.close(&sources, tables, Bounds::default());
    let mut summaries = (0..attacks.max(1)).map(|attack| {
        let report = (summary.groups.iter())
            .find(|(key, _)| key.0 == attack as u64)
            .map(|(_, report)| report);
        let asked = asked(attack, window.start_ns, window.end_ns);
        step_summary(report, attack, window, asked, tables)
    });
    let mut main = summaries.next().unwrap_or_default();
    main.users = users.unwrap_or(0);
    let connections_asked = match users {
        Some(users) => ConnectionsAsked::Users(users),
        None => ConnectionsAsked::Arrivals(asked(0, window.start_ns, window.end_ns).unwrap_or(0)),
    };
    main.streams = stream_window(&sources, window, &stream_records, connections_asked);
    Ok(Figures {
        summary: main,
        scenarios: summaries.collect(),
        all_records: all,
        sources,
    })
}

/// One attack's figures in its window, read from its report (`None`: no request).
fn step_summary(
    report: Option<&Report>,
    attack: usize,
    window: Window,
    asked: Option<u64>,
    tables: &RunTables,
) -> StepSummary {
    let seconds = (window.end_ns - window.start_ns) as f64 / 1e9;
    let asked_per_sec = asked.map_or(0.0, |n| n as f64 / seconds);
    let Some(report) = report.filter(|r| r.requests > 0) else {
        return StepSummary {
            asked_per_sec,
            ..StepSummary::default()
        };
    };
    let latencies = &report.latencies;
    let latency_ns = vec![
        (Percentile::P50, latencies.p50_ns),
        (Percentile::P90, latencies.p90_ns),
        (Percentile::P95, latencies.p95_ns),
        (Percentile::P99, latencies.p99_ns),
        (Percentile::P999, latencies.quantiles.quantile(0.999)),
        (Percentile::Max, latencies.max_ns),
        (Percentile::Mean, latencies.mean_ns),
    ];
    let flow = tables.attacks.get(attack).is_some_and(|a| a.flow);
    let sent = match report.attacks.get(attack) {
        Some(activity) if flow => activity.flow_starts,
        _ => report.requests,
    };
    StepSummary {
        asked_per_sec,
        sent_per_sec: sent as f64 / seconds,
        users: 0,
        requests_per_sec: report.requests as f64 / seconds,
        requests: report.requests,
        success_ratio: report.success_ratio,
        latency_ns,
        errors_by_kind: report.failures.clone(),
        lag_p99_ns: report.send_lag.p99_ns,
        checks: (report.checks.iter())
            .map(|c| CheckCount {
                name: c.step_check(),
                passes: c.passes,
                fails: c.fails,
            })
            .collect(),
        streams: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::Record;

    /// A step's record file of one attack, 200 records 10 ms apart from its start:
    /// latencies that do not divide evenly, every 7th answered 503, every 11th
    /// refused, every 13th a 200 with an error that does not fail it, send lag rising.
    fn plain_file(dir: &std::path::Path) -> String {
        use record::{Compression, ErrorEntry, ErrorKind, RecordWriter, RunEnd, RunHeader};
        let header = RunHeader {
            tool: "loadlab test".to_owned(),
            start_unix_ns: 1_000_000_000_000,
            attacks: vec![record::AttackInfo::default()],
            targets: vec![record::TargetInfo {
                method: "GET".to_owned(),
                url: "http://h/".to_owned(),
                ..record::TargetInfo::default()
            }],
            ..RunHeader::default()
        };
        let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
        let errors = [
            ErrorEntry {
                kind: ErrorKind::Status,
                text: "503 Service Unavailable".to_owned(),
            },
            ErrorEntry {
                kind: ErrorKind::Connect,
                text: "connection refused".to_owned(),
            },
            ErrorEntry {
                kind: ErrorKind::Io,
                text: "reading the body's trailer".to_owned(),
            },
        ];
        writer.add_errors(0, &errors).unwrap();
        for n in 0..200u64 {
            let (status, error) = match n {
                _ if n % 7 == 0 => (503, 1),
                _ if n % 11 == 0 => (0, 2),
                _ if n % 13 == 0 => (200, 3),
                _ => (200, 0),
            };
            writer.push(&Record {
                seq: n,
                intended_unix_ns: header.start_unix_ns + n * 10_000_000,
                latency_ns: 1_000_003 + (n * 7_919) % 3_000_001,
                send_lag_ns: 1_000 * n,
                status,
                error,
                ..Record::default()
            });
        }
        let path = dir.join("records.llr");
        std::fs::write(&path, writer.finish(&RunEnd::default()).unwrap()).unwrap();
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn the_verdicts_figures_are_the_step_reports() {
        let dir = tempfile::tempdir().unwrap();
        let path = plain_file(dir.path());
        // A warm-up of 0.3 s and an end at 1.7 s leave records 30..170 judged.
        let window = Window {
            start_ns: 300_000_000,
            end_ns: 1_700_000_000,
        };
        let figures = summarise(
            std::slice::from_ref(&path),
            window,
            (1, None),
            &|_, _, _| None,
        )
        .unwrap();
        let mut config =
            report::ReportConfig::new(report::ReportType::Json { buckets: None }, None, None)
                .unwrap();
        config.window_ns = Some((window.start_ns, window.end_ns));
        let mut out = Vec::new();
        report::run_report(&[path], &config, &mut out, &mut Vec::new()).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let step = &figures.summary;
        assert_eq!(Some(step.requests), json["requests"].as_u64());
        assert_eq!(Some(step.success_ratio), json["success"].as_f64());
        let latency = |p: Percentile| step.latency_ns.iter().find(|(q, _)| *q == p).unwrap().1;
        for (p, key) in [
            (Percentile::Mean, "mean"),
            (Percentile::P50, "50th"),
            (Percentile::P90, "90th"),
            (Percentile::P95, "95th"),
            (Percentile::P99, "99th"),
            (Percentile::Max, "max"),
        ] {
            assert_eq!(Some(latency(p)), json["latencies"][key].as_u64(), "{key}");
        }
        assert_eq!(
            Some(step.lag_p99_ns),
            json["loadlab"]["send_lag"]["99th"].as_u64()
        );
        // The failures are the statuses' (503) and the errors' kinds, so they add up
        // with the successes to the requests.
        let failed: u64 = step.errors_by_kind.iter().map(|(_, n)| n).sum();
        let successes = json["status_codes"]["200"].as_u64();
        assert_eq!(Some(step.requests - failed), successes);
        let kinds: Vec<&str> = step
            .errors_by_kind
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(kinds, ["503", "connect"]);
    }

    /// A step's record file with a flow "shop" (attack 0) and a background "news"
    /// (attack 1) sharing the step "login": 10 logins each, one in the warm-up.
    fn flow_file(dir: &std::path::Path) -> String {
        use record::{AttackInfo, Compression, RecordWriter, RunEnd, RunHeader, TargetInfo};
        let attack = |name: &str| AttackInfo {
            name: name.to_owned(),
            ..AttackInfo::default()
        };
        let header = RunHeader {
            tool: "loadlab test".to_owned(),
            start_unix_ns: 1_000_000_000_000,
            attacks: vec![attack("shop"), attack("news")],
            targets: vec![TargetInfo {
                method: "POST".to_owned(),
                url: "http://h/login".to_owned(),
                step: Some("login".to_owned()),
                checks: vec!["status 200".to_owned(), "json $.token exists".to_owned()],
            }],
            ..RunHeader::default()
        };
        let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
        for n in 0..20u64 {
            let (attack, failed) = match n {
                // In the warm-up: not judged.
                0 => (0, 0b11),
                3 => (0, 0b10 | Record::FAILED_BY_FLOW),
                _ => (u16::from(n >= 10), 0),
            };
            writer.push(&Record {
                attack,
                seq: n,
                intended_unix_ns: header.start_unix_ns + (n % 10) * 100_000_000,
                latency_ns: 1_000_000,
                status: 200,
                checks_failed: failed,
                ..Record::default()
            });
        }
        let path = dir.join("records.llr");
        std::fs::write(&path, writer.finish(&RunEnd::default()).unwrap()).unwrap();
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn each_attack_counts_its_checks_by_step_and_check_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = flow_file(dir.path());
        let window = Window {
            start_ns: 50_000_000,
            end_ns: 1_000_000_000,
        };
        let figures = summarise(&[path], window, (2, None), &|_, _, _| None).unwrap();
        let counts = |summary: &StepSummary| -> Vec<(String, u64, u64)> {
            summary
                .checks
                .iter()
                .map(|c| (c.name.clone(), c.passes, c.fails))
                .collect()
        };
        let owned = |rows: &[(&str, u64, u64)]| -> Vec<(String, u64, u64)> {
            rows.iter().map(|&(n, p, f)| (n.to_owned(), p, f)).collect()
        };
        // Named without the attack: each attack's SLO judges its own.
        /// (attack, its summary, its checks' (name, passes, fails))
        type Row<'a> = (&'a str, &'a StepSummary, Vec<(String, u64, u64)>);
        let rows: [Row<'_>; 2] = [
            (
                "shop",
                &figures.summary,
                owned(&[
                    ("login: status 200", 9, 0),
                    ("login: json $.token exists", 8, 1),
                ]),
            ),
            (
                "news",
                &figures.scenarios[0],
                owned(&[
                    ("login: status 200", 9, 0),
                    ("login: json $.token exists", 9, 0),
                ]),
            ),
        ];
        for (attack, summary, want) in rows {
            assert_eq!(counts(summary), want, "{attack}");
        }
        assert_eq!(figures.summary.success_ratio, 8.0 / 9.0);
        assert_eq!(figures.all_records, 20);
    }
}
