//! [`Headlines`]: the monitor's headline samples for the live view (`attack -monitor`):
//! per sampler, the latest CPU, memory, descriptors and connections, one line each.
//! Everything else the monitor samples is in the record file and on the plot.

use std::collections::BTreeMap;

use record::{SampleFrame, SampleTables};

/// The measures a view line shows, in order: (series name suffix, short label).
const HEADLINE: &[(&str, &str)] = &[
    ("cpu_percent", "cpu"),
    ("rss_bytes", "rss"),
    ("memory_used_bytes", "memory"),
    ("fds", "fds"),
    ("fds_open", "fds"),
    ("tcp_established", "established"),
    ("sockets", "sockets"),
    ("connections", "connections"),
    ("connections_active", "connections"),
];

/// The latest value of each headline series, by sampler.
#[derive(Debug, Default)]
pub(crate) struct Headlines {
    tables: SampleTables,
    /// Series id -> latest value.
    latest: BTreeMap<u32, f64>,
    /// The tables stopped continuing (a feed bug): show nothing rather than mislabel.
    broken: bool,
}

impl Headlines {
    /// Takes one frame: its new table entries and its values.
    pub(crate) fn add(&mut self, frame: &SampleFrame) {
        if self.broken || self.tables.extend_from(frame).is_err() {
            self.broken = true;
            return;
        }
        for value in &frame.batch.values {
            self.latest.insert(value.series, value.value);
        }
        // A gap means the value is gone (the process exited): do not show a stale one.
        for gap in &frame.batch.gaps {
            let tables = &self.tables;
            self.latest.retain(|&series, _| match gap.series {
                Some(missing) => series != missing,
                None => tables
                    .series
                    .get(series as usize)
                    .is_none_or(|info| info.sampler != gap.sampler),
            });
        }
    }

    /// One line per sampler with a headline value: `process ruby: cpu 43.2%  rss 120MiB`.
    pub(crate) fn lines(&self) -> Vec<String> {
        if self.broken {
            return Vec::new();
        }
        let mut by_sampler: BTreeMap<u32, BTreeMap<usize, (f64, &str)>> = BTreeMap::new();
        for (&series, &value) in &self.latest {
            let Some(info) = self.tables.series.get(series as usize) else {
                continue;
            };
            let Some(rank) = headline_rank(&info.name) else {
                continue;
            };
            // A per-CPU or per-interface row is detail; "all" or no label is the headline.
            if info.labels.values().any(|label| label != "all") && rank == 0 {
                continue;
            }
            let entry = by_sampler
                .entry(info.sampler)
                .or_default()
                .entry(rank)
                .or_insert((0.0, info.unit.as_str()));
            // Connections split by label (a database each) add up.
            entry.0 += value;
        }
        by_sampler
            .into_iter()
            .map(|(sampler, values)| self.line(sampler, &values))
            .collect()
    }

    fn line(&self, sampler: u32, values: &BTreeMap<usize, (f64, &str)>) -> String {
        let name = self.tables.samplers.get(sampler as usize).map_or_else(
            || format!("sampler {sampler}"),
            |info| format!("{} {}", info.kind, info.name),
        );
        let figures: Vec<String> = values
            .iter()
            .map(|(&rank, &(value, unit))| {
                format!("{} {}", HEADLINE[rank].1, value_text(value, unit))
            })
            .collect();
        format!("{}: {}", name.trim_end(), figures.join("  "))
    }
}

/// Where a series stands in [`HEADLINE`], by the last part of its name.
fn headline_rank(name: &str) -> Option<usize> {
    let last = name.rsplit('.').next().unwrap_or(name);
    HEADLINE.iter().position(|(suffix, _)| *suffix == last)
}

fn value_text(value: f64, unit: &str) -> String {
    match unit {
        "percent" | "%" => format!("{value:.1}%"),
        "bytes" => bytes_text(value),
        _ => format!("{value:.0}"),
    }
}

/// `812B`, `31.2KiB`, `120MiB`, `1.5GiB`.
fn bytes_text(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value >= 100.0 {
        format!("{value:.0}{}", UNITS[unit])
    } else {
        format!("{value:.1}{}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{SampleBatch, SampleGap, SamplerInfo, SeriesInfo};

    fn series(sampler: u32, name: &str, unit: &str, labels: &[(&str, &str)]) -> SeriesInfo {
        SeriesInfo {
            sampler,
            name: name.to_owned(),
            unit: unit.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..SeriesInfo::default()
        }
    }

    fn first_frame() -> SampleFrame {
        SampleFrame {
            first_sampler: 0,
            first_series: 0,
            samplers: vec![
                SamplerInfo {
                    kind: "host".into(),
                    name: String::new(),
                },
                SamplerInfo {
                    kind: "process".into(),
                    name: "ruby".to_owned(),
                },
                SamplerInfo {
                    kind: "postgres".into(),
                    name: "db".to_owned(),
                },
            ],
            series: vec![
                series(0, "host.cpu_percent", "percent", &[("cpu", "all")]),
                series(0, "host.cpu_percent", "percent", &[("cpu", "0")]),
                series(0, "host.net_rx_bytes_per_sec", "bytes/s", &[]),
                series(1, "process.rss_bytes", "bytes", &[]),
                series(1, "process.cpu_percent", "percent", &[]),
                series(1, "process.fds", "count", &[]),
                series(2, "postgres.connections", "count", &[("database", "a")]),
                series(2, "postgres.connections", "count", &[("database", "b")]),
            ],
            batch: SampleBatch::dense(1, &[43.25, 99.0, 1e6, 125_829_120.0, 12.0, 57.0, 3.0, 4.0]),
        }
    }

    #[test]
    fn one_line_per_sampler_with_its_headline_values() {
        let mut headlines = Headlines::default();
        headlines.add(&first_frame());
        assert_eq!(
            headlines.lines(),
            [
                "host: cpu 43.2%",
                "process ruby: cpu 12.0%  rss 120MiB  fds 57",
                "postgres db: connections 7",
            ]
        );
    }

    #[test]
    fn a_gap_removes_a_value_and_broken_tables_show_nothing() {
        let mut headlines = Headlines::default();
        headlines.add(&first_frame());
        let gap = SampleFrame {
            first_sampler: 3,
            first_series: 8,
            batch: SampleBatch {
                at_unix_ns: 2,
                gaps: vec![
                    SampleGap {
                        sampler: 1,
                        series: Some(3),
                        reason: "gone".to_owned(),
                    },
                    SampleGap {
                        sampler: 2,
                        series: None,
                        reason: "refused".to_owned(),
                    },
                ],
                ..SampleBatch::default()
            },
            ..SampleFrame::default()
        };
        headlines.add(&gap);
        assert_eq!(
            headlines.lines(),
            ["host: cpu 43.2%", "process ruby: cpu 12.0%  fds 57"]
        );
        // A frame that does not continue the tables (ids from another feed).
        headlines.add(&first_frame());
        assert!(headlines.lines().is_empty());
    }

    #[test]
    fn bytes_read_short() {
        let rows = [
            (812.0, "812B"),
            (31_948.8, "31.2KiB"),
            (125_829_120.0, "120MiB"),
            (1.5 * 1024.0 * 1024.0 * 1024.0, "1.5GiB"),
        ];
        for (bytes, want) in rows {
            assert_eq!(bytes_text(bytes), want);
        }
    }
}
