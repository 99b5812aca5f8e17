//! A step's record file to the figures of its measured window: the records whose
//! *intended* send time falls after the warm-up and before the step's end. Judging by
//! intended time keeps a late generator's backlog in the step that caused it. A step
//! with background scenarios holds several attacks; each record carries its attack's
//! index (the step's main load is 0, the scenarios 1.. in plan order), so each attack
//! gets figures of its own. A flow's plan asks for flow starts, so its sent rate counts
//! the records that start a run of the flow (`seq & 0xffff == 0`).
//!
//! Latency and send-lag percentiles come from [`report::Distribution`], the report's own:
//! exact up to [`report::EXACT_LIMIT`] values, then a log-linear histogram (relative error
//! below 1/1024), nearest rank in both regimes. So a step's `p99` is the `p99` its
//! `report.txt` prints, and a 10M-record step needs kilobytes, not 160 MB of `Vec`s.
//! Flow checks are counted by the report's own [`report::CheckCounts`] too, and named
//! `STEP: CHECK` (each attack is judged apart, so without the attack's name).

use std::collections::BTreeMap;

use analysis::{CheckCount, Percentile, StepSummary};
use record::{Record, RunTables};
use report::{CheckCounts, CheckedTargets, Distribution};

use crate::LabError;

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
/// plan made due between two offsets (open model), `None` for the closed model.
/// Several files are the shards of one run, read as `loadlab report` reads them: the
/// shards of different runs, or one shard twice, are refused.
pub fn summarise(
    paths: &[String],
    window: Window,
    attacks: usize,
    asked: &dyn Fn(usize, u64, u64) -> Option<u64>,
) -> Result<Figures, LabError> {
    let fail = |e: record::RecordError| LabError::Folder(e.to_string());
    let mut stream =
        record::RecordStream::open(paths, record::ReadOrder::Input, false).map_err(fail)?;
    let mut batch: Vec<Record> = Vec::new();
    let mut accs: Vec<Accumulator> = (0..attacks.max(1))
        .map(|_| Accumulator::default())
        .collect();
    let mut all = 0;
    let mut checked = CheckedTargets::default();
    while stream.next_batch(&mut batch).map_err(fail)? {
        let start_unix_ns = stream
            .summaries()
            .first()
            .map_or(0, |s| s.header.start_unix_ns);
        checked.update(stream.tables());
        for record in &batch {
            all += 1;
            let at_ns = record.intended_unix_ns.saturating_sub(start_unix_ns);
            if (window.start_ns..window.end_ns).contains(&at_ns)
                && let Some(acc) = accs.get_mut(usize::from(record.attack))
            {
                acc.add(record, stream.tables());
                if let Some(target) = checked.get(record.target) {
                    acc.checks.add(record, target);
                }
            }
        }
    }
    let sources = stream.summaries().to_vec();
    let tables = stream.tables();
    let mut summaries = accs.into_iter().enumerate().map(|(attack, acc)| {
        acc.finish(
            window,
            asked(attack, window.start_ns, window.end_ns),
            tables,
        )
    });
    Ok(Figures {
        summary: summaries.next().unwrap_or_default(),
        scenarios: summaries.collect(),
        all_records: all,
        sources,
    })
}

#[derive(Default)]
struct Accumulator {
    latencies_ns: Distribution,
    lags_ns: Distribution,
    successes: u64,
    errors: BTreeMap<String, u64>,
    /// A flow's runs started (its first requests), and whether the attack is a flow.
    flow_starts: Option<u64>,
    checks: CheckCounts,
}

impl Accumulator {
    fn add(&mut self, record: &Record, tables: &RunTables) {
        if tables
            .attacks
            .get(usize::from(record.attack))
            .is_some_and(|a| a.flow)
        {
            *self.flow_starts.get_or_insert(0) += u64::from(record.seq & 0xffff == 0);
        }
        self.latencies_ns.add(record.latency_ns);
        self.lags_ns.add(record.send_lag_ns);
        if record.is_success() && record.error == 0 {
            self.successes += 1;
            return;
        }
        let kind = match (record.status, tables.error(record.error)) {
            (status, _) if status != 0 => status.to_string(),
            (_, Some(entry)) => entry.kind.name().to_owned(),
            (_, None) => "other".to_owned(),
        };
        *self.errors.entry(kind).or_default() += 1;
    }

    fn finish(self, window: Window, asked: Option<u64>, tables: &RunTables) -> StepSummary {
        let requests = self.latencies_ns.count();
        let seconds = (window.end_ns - window.start_ns) as f64 / 1e9;
        // The exact mean (the report's own truncates a float division).
        let mean_ns = (self.latencies_ns.sum() / u128::from(requests.max(1))) as u64;
        let latencies = self.latencies_ns.into_quantiles();
        let mut latency_ns: Vec<(Percentile, u64)> = [
            (Percentile::P50, 0.50),
            (Percentile::P90, 0.90),
            (Percentile::P95, 0.95),
            (Percentile::P99, 0.99),
            (Percentile::P999, 0.999),
            (Percentile::Max, 1.0),
        ]
        .into_iter()
        .filter(|_| requests > 0)
        .map(|(p, q)| (p, latencies.quantile(q)))
        .collect();
        if requests > 0 {
            latency_ns.push((Percentile::Mean, mean_ns));
        }
        let lag_p99_ns = self.lags_ns.into_quantiles().quantile(0.99);
        StepSummary {
            asked_per_sec: asked.map_or(0.0, |n| n as f64 / seconds),
            sent_per_sec: self.flow_starts.unwrap_or(requests) as f64 / seconds,
            requests,
            success_ratio: if requests > 0 {
                self.successes as f64 / requests as f64
            } else {
                0.0
            },
            latency_ns,
            errors_by_kind: self.errors.into_iter().collect(),
            lag_p99_ns,
            checks: self
                .checks
                .close(tables)
                .into_iter()
                .map(|c| CheckCount {
                    name: c.step_check(),
                    passes: c.passes,
                    fails: c.fails,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window's quantile as [`Accumulator::finish`] takes it.
    fn quantile(values: &mut [u64], q: f64) -> u64 {
        let mut distribution = Distribution::new();
        for &value in values.iter() {
            distribution.add(value);
        }
        distribution.into_quantiles().quantile(q)
    }

    fn latency_record(latency_ns: u64) -> Record {
        Record {
            status: 200,
            latency_ns,
            send_lag_ns: latency_ns / 1000,
            ..Record::default()
        }
    }

    #[test]
    fn big_windows_agree_with_the_report_in_bounded_memory() {
        // Past the exact limit both switch to the histogram: the step's percentiles are
        // the report's (the old exact Vec gave the exact rank instead, off by up to 1/1024).
        let n = report::EXACT_LIMIT as u64 * 2;
        let latency = |i: u64| 1_000_000 + (i * 7_919) % 50_000_000;
        let mut acc = Accumulator::default();
        let mut report_side = report::Metrics::new(None);
        let tables = RunTables::default();
        for i in 0..n {
            let record = latency_record(latency(i));
            acc.add(&record, &tables);
            report_side.add(&record);
        }
        let report_latencies = report_side.close(&tables).latencies;
        let window = Window {
            start_ns: 0,
            end_ns: 1_000_000_000,
        };
        let summary = acc.finish(window, None, &tables);
        let got = |p: Percentile| {
            summary
                .latency_ns
                .iter()
                .find(|(q, _)| *q == p)
                .map(|(_, ns)| *ns)
        };
        assert_eq!(got(Percentile::P50), Some(report_latencies.p50_ns));
        assert_eq!(got(Percentile::P90), Some(report_latencies.p90_ns));
        assert_eq!(got(Percentile::P99), Some(report_latencies.p99_ns));
        assert_eq!(got(Percentile::Max), Some(report_latencies.max_ns));
        let mean = (0..n).map(|i| u128::from(latency(i))).sum::<u128>() / u128::from(n);
        assert_eq!(got(Percentile::Mean), Some(mean as u64));
        assert_eq!(summary.requests, n);
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let rows: [(&[u64], f64, u64); 5] = [
            (&[], 0.5, 0),
            (&[7], 0.99, 7),
            (&[1, 2, 3, 4], 0.5, 2),
            (&[4, 3, 2, 1], 1.0, 4),
            (&[10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 0.9, 90),
        ];
        for (values, q, want) in rows {
            assert_eq!(quantile(&mut values.to_vec(), q), want, "{values:?} {q}");
        }
    }

    #[test]
    fn errors_are_counted_by_status_or_kind() {
        let tables = RunTables {
            errors: vec![record::ErrorEntry {
                kind: record::ErrorKind::Timeout,
                text: "timeout".to_owned(),
            }],
            ..RunTables::default()
        };
        let mut acc = Accumulator::default();
        for (status, error) in [(200, 0), (503, 1), (503, 1), (0, 1), (302, 0)] {
            acc.add(
                &Record {
                    status,
                    error,
                    latency_ns: 1,
                    ..Record::default()
                },
                &tables,
            );
        }
        let summary = acc.finish(
            Window {
                start_ns: 0,
                end_ns: 1_000_000_000,
            },
            Some(5),
            &tables,
        );
        assert_eq!(
            summary.errors_by_kind,
            vec![("503".to_owned(), 2), ("timeout".to_owned(), 1)]
        );
        assert_eq!(summary.success_ratio, 0.4);
        assert_eq!((summary.asked_per_sec, summary.sent_per_sec), (5.0, 5.0));
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
        let figures = summarise(&[path], window, 2, &|_, _, _| None).unwrap();
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
