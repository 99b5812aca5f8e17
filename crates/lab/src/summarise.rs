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

use std::collections::BTreeMap;

use analysis::{Percentile, StepSummary};
use record::Record;
use report::Distribution;

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
}

/// Reads `path` (on [`record::RecordStream`]'s reader thread, in file order: the
/// window's figures do not depend on order) and sums up its window for each of its
/// `attacks`; `asked` gives the requests an attack's plan made due between two offsets
/// (open model), `None` for the closed model.
pub fn summarise(
    path: &str,
    window: Window,
    attacks: usize,
    asked: &dyn Fn(usize, u64, u64) -> Option<u64>,
) -> Result<Figures, LabError> {
    let fail = |e: record::RecordError| LabError::Folder(e.to_string());
    let mut stream =
        record::RecordStream::open(&[path.to_owned()], record::ReadOrder::Input, false)
            .map_err(fail)?;
    let mut batch: Vec<Record> = Vec::new();
    let mut accs: Vec<Accumulator> = (0..attacks.max(1))
        .map(|_| Accumulator::default())
        .collect();
    let mut all = 0;
    while stream.next_batch(&mut batch).map_err(fail)? {
        let start_unix_ns = stream
            .summaries()
            .first()
            .map_or(0, |s| s.header.start_unix_ns);
        for record in &batch {
            all += 1;
            let at_ns = record.intended_unix_ns.saturating_sub(start_unix_ns);
            if (window.start_ns..window.end_ns).contains(&at_ns)
                && let Some(acc) = accs.get_mut(usize::from(record.attack))
            {
                acc.add(record, stream.tables());
            }
        }
    }
    let mut summaries = accs
        .into_iter()
        .enumerate()
        .map(|(attack, acc)| acc.finish(window, asked(attack, window.start_ns, window.end_ns)));
    Ok(Figures {
        summary: summaries.next().unwrap_or_default(),
        scenarios: summaries.collect(),
        all_records: all,
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
}

impl Accumulator {
    fn add(&mut self, record: &Record, tables: &record::RunTables) {
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

    fn finish(self, window: Window, asked: Option<u64>) -> StepSummary {
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
        let tables = record::RunTables::default();
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
        let summary = acc.finish(window, None);
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
        let tables = record::RunTables {
            errors: vec![record::ErrorEntry {
                kind: record::ErrorKind::Timeout,
                text: "timeout".to_owned(),
            }],
            ..record::RunTables::default()
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
        );
        assert_eq!(
            summary.errors_by_kind,
            vec![("503".to_owned(), 2), ("timeout".to_owned(), 1)]
        );
        assert_eq!(summary.success_ratio, 0.4);
        assert_eq!((summary.asked_per_sec, summary.sent_per_sec), (5.0, 5.0));
    }
}
