//! `-every D`: per-interval rows, not vegeta's cumulative reprints. [`Intervals`] bins
//! records by send time into intervals of `D` from the earliest record; each row has the
//! requests sent in its interval, their rate, success ratio and latency percentiles
//! (exact selection), and the throughput of successful responses *completed* in it.
//!
//! Records must come in send-time order. An interval closes as soon as a record sent
//! after its end arrives: every request sent in it has arrived by then, and so has
//! every request completed in it (a request completes after it is sent). So rows come
//! out live on a pipe, and only the open intervals are held in memory.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use record::{Record, RunTables, format_timestamp};
use units::GoDuration;

use crate::distribution::Distribution;
use crate::grouping::{GroupBy, GroupKey, Grouper};
use crate::json_write::{push_float, push_string};
use units::go_seconds;

/// Longest run of empty intervals printed as rows.
pub const MAX_EMPTY_ROWS: u64 = 1000;

/// Bins records into intervals; see the module documentation.
pub struct Intervals {
    every_ns: u64,
    grouper: Option<Grouper>,
    origin_unix_ns: Option<u64>,
    /// The first interval not yet closed.
    next_index: u64,
    bins: BTreeMap<u64, Vec<(GroupKey, BinStats)>>,
}

#[derive(Debug, Default)]
struct BinStats {
    requests: u64,
    successes: u64,
    /// Successful responses completed in the interval (whenever they were sent).
    completed_ok: u64,
    latency: Distribution,
}

/// One closed interval (of one group with `-by`).
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRow {
    /// When the interval starts, unix nanoseconds.
    pub start_unix_ns: u64,
    /// Start minus the earliest send time.
    pub offset_ns: u64,
    /// The interval's length (`-every`), nanoseconds.
    pub duration_ns: u64,
    /// The group (`-by`) the row is about, if any.
    pub group: Option<GroupKey>,
    /// Requests sent in the interval.
    pub requests: u64,
    /// Requests sent per second.
    pub rate_per_sec: f64,
    /// Successful requests per second.
    pub throughput_per_sec: f64,
    /// `None` when nothing was sent in the interval.
    pub success_ratio: Option<f64>,
    /// p50, p90, p99 and max latency of the requests sent in the interval.
    pub latency_ns: Option<[u64; 4]>,
    /// Closed model: users sending or thinking at the interval's end (filled in by
    /// the printer from the generator's samples); `None` for open-model runs.
    pub users: Option<u64>,
}

impl Intervals {
    /// Intervals of `every_ns` nanoseconds, one row per group when `by` is given.
    pub fn new(every_ns: u64, by: Option<GroupBy>) -> Intervals {
        Intervals {
            every_ns: every_ns.max(1),
            grouper: by.map(Grouper::new),
            origin_unix_ns: None,
            next_index: 0,
            bins: BTreeMap::new(),
        }
    }

    /// Keys and names the groups, with `-by`.
    pub fn grouper(&self) -> Option<&Grouper> {
        self.grouper.as_ref()
    }

    /// Adds records (in send-time order); rows of intervals they close go to `rows`.
    /// `tables` are the run's as of these records.
    pub fn add_all(&mut self, records: &[Record], tables: &RunTables, rows: &mut Vec<IntervalRow>) {
        if let Some(grouper) = &mut self.grouper {
            grouper.update(tables);
        }
        for record in records {
            self.add(record, rows);
        }
    }

    fn add(&mut self, record: &Record, rows: &mut Vec<IntervalRow>) {
        let sent = record.sent_unix_ns();
        let origin = *self.origin_unix_ns.get_or_insert(sent);
        let index = sent.saturating_sub(origin) / self.every_ns;
        self.close_before(index, rows);
        let key = self.grouper.as_ref().map_or(GroupKey(0), |g| g.key(record));
        let sent_in = self.stats(index.max(self.next_index), key);
        sent_in.requests += 1;
        sent_in.successes += u64::from(record.is_success());
        sent_in.latency.add(record.latency_ns);
        if record.is_success() {
            let done = record.end_unix_ns().saturating_sub(origin) / self.every_ns;
            self.stats(done.max(self.next_index), key).completed_ok += 1;
        }
    }

    fn stats(&mut self, index: u64, key: GroupKey) -> &mut BinStats {
        let bin = self.bins.entry(index).or_default();
        let slot = match bin.iter().position(|(k, _)| *k == key) {
            Some(slot) => slot,
            None => {
                bin.push((key, BinStats::default()));
                bin.len() - 1
            }
        };
        &mut bin[slot].1
    }

    /// Closes every interval before `index`, empty ones included.
    /// Closes every interval before `index`: empty ones too, unless more than
    /// [`MAX_EMPTY_ROWS`] in a row (inputs hours apart), which the time column shows.
    fn close_before(&mut self, index: u64, rows: &mut Vec<IntervalRow>) {
        while self.next_index < index {
            let closing = self.next_index;
            let next_busy = self.bins.range(closing..).next().map_or(index, |(&i, _)| i);
            if next_busy.min(index) - closing > MAX_EMPTY_ROWS {
                self.next_index = next_busy.min(index);
                continue;
            }
            let bin = self.bins.remove(&closing).unwrap_or_default();
            self.emit(closing, bin, rows);
            self.next_index += 1;
        }
    }

    /// Closes every interval that has anything in it: the input has ended.
    pub fn finish(&mut self, rows: &mut Vec<IntervalRow>) {
        if let Some((&last, _)) = self.bins.last_key_value() {
            self.close_before(last + 1, rows);
        }
    }

    fn emit(&self, index: u64, mut bin: Vec<(GroupKey, BinStats)>, rows: &mut Vec<IntervalRow>) {
        let offset_ns = index * self.every_ns;
        let start_unix_ns = self.origin_unix_ns.unwrap_or(0) + offset_ns;
        if bin.is_empty() {
            if self.grouper.is_some() {
                return;
            }
            bin.push((GroupKey(0), BinStats::default()));
        }
        bin.sort_by_key(|(key, _)| *key);
        let seconds = go_seconds(self.every_ns);
        for (key, stats) in bin {
            let requests = stats.requests;
            let max = stats.latency.max();
            let quantiles = stats.latency.into_quantiles();
            rows.push(IntervalRow {
                start_unix_ns,
                offset_ns,
                duration_ns: self.every_ns,
                group: self.grouper.as_ref().map(|_| key),
                requests,
                rate_per_sec: requests as f64 / seconds,
                throughput_per_sec: stats.completed_ok as f64 / seconds,
                success_ratio: (requests > 0).then(|| stats.successes as f64 / requests as f64),
                users: None,
                latency_ns: (requests > 0).then(|| {
                    [
                        quantiles.quantile(0.50),
                        quantiles.quantile(0.90),
                        quantiles.quantile(0.99),
                        max,
                    ]
                }),
            });
        }
    }
}

/// Column widths of the text rows; a wider cell pushes the rest right by two spaces.
const WIDTHS: [usize; 10] = [10, 10, 10, 12, 9, 11, 11, 11, 11, 7];

/// The header line of the text rows; `users` adds the closed model's user column.
pub fn text_header(by: Option<GroupBy>, users: bool) -> String {
    let mut cells: Vec<String> = [
        "Time",
        "Requests",
        "Rate",
        "Throughput",
        "Success",
        "P50",
        "P90",
        "P99",
        "Max",
    ]
    .map(str::to_owned)
    .to_vec();
    if users {
        cells.push("Users".to_owned());
    }
    if let Some(by) = by {
        cells.push(capitalized(by.name()));
    }
    fixed_row(&cells)
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// One text row: offset of the interval start, then its figures.
pub fn text_row(row: &IntervalRow, grouper: Option<&Grouper>, tables: &RunTables) -> String {
    let mut cells = vec![
        GoDuration(Duration::from_nanos(row.offset_ns)).to_string(),
        row.requests.to_string(),
        format!("{:.2}", row.rate_per_sec),
        format!("{:.2}", row.throughput_per_sec),
        row.success_ratio
            .map_or_else(|| "-".to_owned(), |s| format!("{:.2}%", s * 100.0)),
    ];
    match row.latency_ns {
        Some(latencies) => cells.extend(latencies.map(|ns| GoDuration::report_ns(ns).to_string())),
        None => cells.extend(["-", "-", "-", "-"].map(str::to_owned)),
    }
    if let Some(users) = row.users {
        cells.push(users.to_string());
    }
    if let (Some(grouper), Some(key)) = (grouper, row.group) {
        cells.push(grouper.group_name(key, tables));
    }
    fixed_row(&cells)
}

fn fixed_row(cells: &[String]) -> String {
    let mut line = String::new();
    for (index, cell) in cells.iter().enumerate() {
        line.push_str(cell);
        if index + 1 < cells.len() {
            let width = WIDTHS.get(index).copied().unwrap_or(0);
            let used = cell.chars().count();
            line.extend(std::iter::repeat_n(' ', width.max(used + 2) - used));
        }
    }
    line.push('\n');
    line
}

/// One JSON line per row.
pub fn json_row(row: &IntervalRow, grouper: Option<&Grouper>, tables: &RunTables) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\"interval\":{{\"start\":\"{}\",\"offset\":{},\"duration\":{}}}",
        format_timestamp(row.start_unix_ns),
        row.offset_ns,
        row.duration_ns
    );
    if let (Some(grouper), Some(key)) = (grouper, row.group) {
        out.push_str(",\"group\":{\"by\":");
        push_string(&mut out, grouper.by().name());
        out.push_str(",\"name\":");
        push_string(&mut out, &grouper.group_name(key, tables));
        out.push('}');
    }
    if let Some(users) = row.users {
        let _ = write!(out, ",\"users\":{users}");
    }
    let _ = write!(out, ",\"requests\":{},\"rate\":", row.requests);
    push_float(&mut out, row.rate_per_sec);
    out.push_str(",\"throughput\":");
    push_float(&mut out, row.throughput_per_sec);
    out.push_str(",\"success\":");
    match row.success_ratio {
        Some(ratio) => push_float(&mut out, ratio),
        None => out.push_str("null"),
    }
    match row.latency_ns {
        Some([p50, p90, p99, max]) => {
            let _ = write!(
                out,
                ",\"latencies\":{{\"50th\":{p50},\"90th\":{p90},\"99th\":{p99},\"max\":{max}}}"
            );
        }
        None => out.push_str(",\"latencies\":null"),
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000_000_000;
    const MS: u64 = 1_000_000;

    fn record(sent_ms: u64, latency_ms: u64, status: u16) -> Record {
        Record {
            intended_unix_ns: T0 + sent_ms * MS,
            latency_ns: latency_ms * MS,
            status,
            ..Record::default()
        }
    }

    fn rows_of(records: &[Record], every_ns: u64, by: Option<GroupBy>) -> Vec<IntervalRow> {
        let mut intervals = Intervals::new(every_ns, by);
        let mut rows = Vec::new();
        intervals.add_all(records, &RunTables::default(), &mut rows);
        intervals.finish(&mut rows);
        rows
    }

    #[test]
    fn bins_by_send_time_and_counts_completions_where_they_land() {
        let records = [
            record(0, 10, 200),
            record(100, 950, 200), // completes at 1.05 s: interval 1
            record(900, 20, 500),
            record(1000, 1, 200),
            record(3500, 1, 200), // interval 2 is empty
        ];
        let rows = rows_of(&records, 1_000 * MS, None);
        let summary: Vec<(u64, u64, f64, Option<f64>)> = rows
            .iter()
            .map(|r| {
                (
                    r.offset_ns / MS,
                    r.requests,
                    r.throughput_per_sec,
                    r.success_ratio,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (0, 3, 1.0, Some(2.0 / 3.0)),
                (1000, 1, 2.0, Some(1.0)),
                (2000, 0, 0.0, None),
                (3000, 1, 1.0, Some(1.0)),
            ]
        );
        assert_eq!(
            rows[0].latency_ns,
            Some([20 * MS, 950 * MS, 950 * MS, 950 * MS])
        );
        assert_eq!(rows[2].latency_ns, None);
        assert_eq!(rows[0].rate_per_sec, 3.0);
        assert_eq!(rows[1].start_unix_ns, T0 + 1_000 * MS);
    }

    #[test]
    fn rows_come_out_as_soon_as_a_later_record_arrives() {
        let mut intervals = Intervals::new(1_000 * MS, None);
        let mut rows = Vec::new();
        let tables = RunTables::default();
        intervals.add_all(
            &[record(0, 1, 200), record(999, 1, 200)],
            &tables,
            &mut rows,
        );
        assert!(rows.is_empty(), "interval 0 is still open");
        intervals.add_all(&[record(1000, 1, 200)], &tables, &mut rows);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].requests, 2);
    }

    #[test]
    fn groups_get_their_own_rows_and_skip_empty_intervals() {
        let records = [
            Record {
                attack: 1,
                ..record(0, 1, 200)
            },
            record(10, 1, 200),
            record(2500, 1, 200),
        ];
        let rows = rows_of(&records, 1_000 * MS, Some(GroupBy::Attack));
        let got: Vec<(u64, u64, u64)> = rows
            .iter()
            .map(|r| (r.offset_ns / MS, r.group.map_or(99, |g| g.0), r.requests))
            .collect();
        assert_eq!(got, [(0, 0, 1), (0, 1, 1), (2000, 0, 1)]);
    }

    #[test]
    fn completions_after_the_last_send_get_rows() {
        let rows = rows_of(&[record(0, 2500, 200)], 1_000 * MS, None);
        let got: Vec<(u64, f64)> = rows
            .iter()
            .map(|r| (r.requests, r.throughput_per_sec))
            .collect();
        assert_eq!(got, [(1, 0.0), (0, 0.0), (0, 1.0)]);
    }

    #[test]
    fn long_gaps_are_skipped_not_printed() {
        let hour_ms = 3_600_000;
        let records = [
            record(0, 1, 200),
            record(hour_ms, 1, 200),
            record(hour_ms + 2_500, 1, 200),
        ];
        let rows = rows_of(&records, 1_000 * MS, None);
        let offsets: Vec<u64> = rows.iter().map(|r| r.offset_ns / (1_000 * MS)).collect();
        assert_eq!(offsets, [0, 3600, 3601, 3602]);
        // A success that completes absurdly late does not make a row per interval.
        let rows = rows_of(&[record(0, u64::MAX / MS, 200)], 1_000 * MS, None);
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[1].throughput_per_sec, 1.0);
    }

    #[test]
    fn text_rows_line_up() {
        let rows = rows_of(&[record(0, 1, 200), record(1500, 2, 0)], 1_000 * MS, None);
        let tables = RunTables::default();
        let header = text_header(None, false);
        let lines: Vec<String> = rows.iter().map(|r| text_row(r, None, &tables)).collect();
        assert_eq!(
            header,
            "Time      Requests  Rate      Throughput  Success  P50        P90        P99        Max\n"
        );
        assert_eq!(
            lines[0],
            "0s        1         1.00      1.00        100.00%  1ms        1ms        1ms        1ms\n"
        );
        assert_eq!(
            lines[1],
            "1s        1         1.00      0.00        0.00%    2ms        2ms        2ms        2ms\n"
        );
        let json = json_row(&rows[1], None, &tables);
        assert_eq!(
            json,
            "{\"interval\":{\"start\":\"2023-11-14T22:13:21Z\",\"offset\":1000000000,\
             \"duration\":1000000000},\"requests\":1,\"rate\":1,\"throughput\":0,\"success\":0,\
             \"latencies\":{\"50th\":2000000,\"90th\":2000000,\"99th\":2000000,\"max\":2000000}}\n"
        );
    }
}
