//! A step's held connections and messages in its window ([`analysis::StreamWindow`]):
//! folded from the run's stats samples (`streams`, one an interval, whatever the
//! number of connections), with its stream steps' refused upgrades and cut connections
//! counted from their records as the window's other records are.
//!
//! The samples are of the whole step (its main load and background scenarios alike)
//! and of each interval (about a second) ending at the sample: an interval that
//! straddles the window's start counts by the share of it inside the window (its
//! connections and messages spread evenly over it); one that straddles the window's
//! end counts by its share too, but its connections opened count whole, as do those
//! of the first interval after it (no arrival comes after the window's end: those
//! are the last arrivals' connections). The peak held is the most open at once in
//! the window, exact from the connections' entries (every shard's together); a file
//! without entries gives the most open at a sample's time, a sharded step adding its
//! shards' peaks.

use analysis::{ConnectionsAsked, Percentile, StreamWindow};
use record::{
    Connection, ErrorKind, GeneratorStats, MessageLatency, Record, RecordStream, RunTables,
    SourceSummary,
};

use crate::summarise::Window;

/// The window's stream records (upgrades refused, connections cut) and every
/// connection's span from its entry.
#[derive(Clone, Debug, Default)]
pub struct StreamRecords {
    /// Records of `ws` and `sse` steps (upgrades, actions, events).
    pub records: u64,
    /// Upgrades (or event streams) answered with a refusing status.
    pub refused: u64,
    /// Ended by the server's close or a reset while in use.
    pub cut: u64,
    /// Each connection's (and streamed call's) open and close, unix ns, from the
    /// entries: the exact most held at once, where a sample a second may fall between
    /// short connections.
    spans: Vec<(u64, u64)>,
}

impl StreamRecords {
    /// Counts the stream steps' records of a batch already cut to the window.
    pub fn add(&mut self, batch: &[Record], tables: &RunTables) {
        for record in batch {
            let Some(target) = tables.targets.get(record.target as usize) else {
                continue;
            };
            if !matches!(target.method.as_str(), "WS" | "SSE") {
                continue;
            }
            self.records += 1;
            // Only an upgrade (or a stream's request) has an HTTP status other than
            // the 200 of a record that did what it asked (docs/STREAMING.md).
            if record.status >= 300 {
                self.refused += 1;
            }
            let kind = tables.error(record.error).map(|e| e.kind);
            if matches!(kind, Some(ErrorKind::Closed | ErrorKind::Reset)) {
                self.cut += 1;
            }
        }
    }
}

impl StreamRecords {
    /// Keeps the spans of the entries `stream` brought with its last batch; `entries`
    /// is scratch room, left empty (an entry's figures are not kept, only its span).
    pub fn take_connections(&mut self, stream: &mut RecordStream, entries: &mut Vec<Connection>) {
        stream.take_connections(entries);
        self.add_connections(entries);
        entries.clear();
    }

    /// Keeps the spans of connection entries (all of them: a span is cut to the
    /// window when it is read).
    fn add_connections(&mut self, entries: &[Connection]) {
        let opened = entries.iter().filter(|entry| entry.opened_unix_ns > 0);
        self.spans.extend(opened.map(|entry| {
            let closed_unix_ns = entry.closed_unix_ns.max(entry.opened_unix_ns);
            (entry.opened_unix_ns, closed_unix_ns)
        }));
    }

    /// The most connections open at once within `(start, end]` (unix ns) and those
    /// open at its end; `None` without entries (a file torn before they were written).
    fn held(&self, start_unix_ns: u64, end_unix_ns: u64) -> Option<(u64, u64)> {
        if self.spans.is_empty() {
            return None;
        }
        let mut edges = Vec::with_capacity(self.spans.len() * 2);
        for &(opened, closed) in &self.spans {
            if opened >= end_unix_ns || closed <= start_unix_ns {
                continue;
            }
            edges.push((opened.max(start_unix_ns), 1i64));
            if closed < end_unix_ns {
                edges.push((closed, -1));
            }
        }
        // Closes before opens at one instant: a connection replaced is not two.
        edges.sort_unstable();
        let (mut open, mut peak) = (0i64, 0i64);
        for (_, delta) in edges {
            open += delta;
            peak = peak.max(open);
        }
        Some((peak as u64, open as u64))
    }
}

/// The step's connections and messages in `window`; `None` when the step had no
/// stream step (no sample counted a connection and no stream record is in it).
pub fn stream_window(
    sources: &[SourceSummary],
    window: Window,
    records: &StreamRecords,
    asked: ConnectionsAsked,
) -> Option<StreamWindow> {
    let zero_unix_ns = sources.first()?.header.start_unix_ns;
    let mut fold = Fold::default();
    for source in sources {
        fold.add_source(&source.stats, zero_unix_ns, window);
    }
    if !fold.seen && records.records == 0 {
        return None;
    }
    let seconds = (window.end_ns.saturating_sub(window.start_ns)) as f64 / 1e9;
    let per_sec = |count: f64| if seconds > 0.0 { count / seconds } else { 0.0 };
    let latency_ns = message_latency_ns(&fold.latency);
    let unix = |offset_ns: u64| zero_unix_ns.saturating_add(offset_ns);
    let (peak_held, held_at_end) = (records.held(unix(window.start_ns), unix(window.end_ns)))
        .unwrap_or((fold.peak_held, fold.held_at_end));
    Some(StreamWindow {
        asked,
        peak_held,
        held_at_end,
        opened: fold.opened.round() as u64,
        refused: records.refused,
        cut: records.cut,
        messages_out_per_sec: per_sec(fold.messages_out),
        messages_in_per_sec: per_sec(fold.messages_in),
        latency_ns,
    })
}

/// p50 .. max of the window's message latencies (as `report` reads them: bucket
/// middles, within 3%); empty when none was timed.
fn message_latency_ns(latency: &MessageLatency) -> Vec<(Percentile, u64)> {
    let stats = [
        (Percentile::P50, 0.5),
        (Percentile::P90, 0.9),
        (Percentile::P95, 0.95),
        (Percentile::P99, 0.99),
        (Percentile::P999, 0.999),
        (Percentile::Max, 1.0),
    ];
    stats
        .into_iter()
        .filter_map(|(stat, q)| Some((stat, latency.quantile(q)?)))
        .collect()
}

/// The window's share of the samples, summed over the shards.
#[derive(Default)]
struct Fold {
    seen: bool,
    /// The current shard's first interval after the window has been counted.
    past_end: bool,
    peak_held: u64,
    held_at_end: u64,
    opened: f64,
    messages_out: f64,
    messages_in: f64,
    latency: MessageLatency,
}

impl Fold {
    /// One shard's samples, each the interval since the one before (the first since
    /// time zero).
    fn add_source(&mut self, stats: &[GeneratorStats], zero_unix_ns: u64, window: Window) {
        let (start_ns, end_ns) = (window.start_ns, window.end_ns);
        self.past_end = false;
        let mut previous_ns = 0;
        let (mut peak, mut at_end) = (0, 0);
        for sample in stats {
            let at_ns = sample.at_unix_ns.saturating_sub(zero_unix_ns);
            let from_ns = std::mem::replace(&mut previous_ns, at_ns);
            let Some(streams) = &sample.streams else {
                continue;
            };
            if from_ns >= end_ns {
                // The first interval after the window: its opens are the last
                // arrivals' connections (no arrival comes after the window's end).
                if !self.past_end {
                    self.opened += streams.opened as f64;
                    self.past_end = true;
                }
                continue;
            }
            let inside = overlap(from_ns, at_ns, start_ns, end_ns);
            if inside <= 0.0 {
                continue;
            }
            self.seen = true;
            let straddles_end = at_ns > end_ns;
            self.past_end |= straddles_end;
            let opened_share = if straddles_end {
                overlap(from_ns, at_ns, start_ns, u64::MAX)
            } else {
                inside
            };
            self.opened += streams.opened as f64 * opened_share;
            self.messages_out += streams.messages_out as f64 * inside;
            self.messages_in += streams.messages_in as f64 * inside;
            // A histogram cannot be split: an interval's latencies go to the window
            // holding most of it.
            if inside >= 0.5 {
                self.latency.merge(&streams.latency);
            }
            if !straddles_end {
                peak = peak.max(streams.open);
                at_end = streams.open;
            }
        }
        self.peak_held += peak;
        self.held_at_end += at_end;
    }
}

/// The share of the interval `(from, to]` inside `(start, end]` (a zero-length
/// interval: 1 inside, 0 outside).
fn overlap(from_ns: u64, to_ns: u64, start_ns: u64, end_ns: u64) -> f64 {
    if to_ns <= from_ns {
        return if to_ns > start_ns && to_ns <= end_ns {
            1.0
        } else {
            0.0
        };
    }
    let inside = to_ns.min(end_ns).saturating_sub(from_ns.max(start_ns));
    inside as f64 / (to_ns - from_ns) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::StreamStats;

    const S: u64 = 1_000_000_000;

    /// A shard's samples, one a second from `first_s`: (open, opened, messages in).
    fn source(zero_unix_ns: u64, first_s: u64, rows: &[(u64, u64, u64)]) -> SourceSummary {
        let stats = (rows.iter().enumerate())
            .map(|(i, &(open, opened, messages_in))| {
                let mut latency = MessageLatency::default();
                (0..messages_in).for_each(|n| latency.add((1 + n % 10) * 1_000_000));
                GeneratorStats {
                    at_unix_ns: zero_unix_ns + (first_s + i as u64) * S,
                    streams: Some(StreamStats {
                        open,
                        opened,
                        messages_in,
                        latency,
                        ..StreamStats::default()
                    }),
                    ..GeneratorStats::default()
                }
            })
            .collect();
        SourceSummary {
            name: "records.llr".to_owned(),
            format: record::InputFormat::Binary,
            header: record::RunHeader {
                start_unix_ns: zero_unix_ns,
                ..record::RunHeader::default()
            },
            stats,
            end: None,
            torn: None,
            records: 0,
            samples: record::SampleSummary::default(),
            logged: 0,
        }
    }

    #[test]
    fn the_window_takes_its_share_of_each_interval() {
        let zero = 1_000 * S;
        // 10 connections opened a second, held; 100 messages in a second; samples at
        // 1..=5 s, the last one after the window's end (4 s).
        let rows = [
            (10, 10, 100),
            (20, 10, 100),
            (30, 10, 100),
            (40, 10, 100),
            (0, 5, 10),
        ];
        let sources = [source(zero, 1, &rows)];
        let window = Window {
            start_ns: S + S / 2,
            end_ns: 4 * S,
        };
        let asked = ConnectionsAsked::Arrivals(25);
        let held = stream_window(&sources, window, &StreamRecords::default(), asked).unwrap();
        // Half of (1, 2], then (2, 3] and (3, 4] whole, (4, 5] after the end: its
        // opens whole (the last arrivals'), its messages not at all.
        assert_eq!(held.opened, 5 + 10 + 10 + 5);
        assert_eq!(held.messages_in_per_sec, (50.0 + 100.0 + 100.0) / 2.5);
        assert_eq!((held.peak_held, held.held_at_end), (40, 40));
        let (_, p99) = held.latency_ns[3];
        assert!((9_700_000..=10_300_000).contains(&p99), "{p99}");
        assert_eq!(held.latency_ns.len(), 6);
    }

    #[test]
    fn the_entries_give_the_exact_most_held_between_two_samples() {
        let zero = 1_000 * S;
        let window = Window {
            start_ns: S,
            end_ns: 4 * S,
        };
        // Samples at 1..=4 s each saw 2 open.
        let sources = [source(
            zero,
            1,
            &[(2, 2, 0), (2, 0, 0), (2, 0, 0), (2, 0, 0)],
        )];
        let users = ConnectionsAsked::Users(8);
        let entry = |opened_s: f64, closed_s: f64| Connection {
            opened_unix_ns: zero + (opened_s * 1e9) as u64,
            closed_unix_ns: zero + (closed_s * 1e9) as u64,
            ..Connection::default()
        };
        // (entries, the most held in (1 s, 4 s], open at 4 s)
        let rows: [(&str, Vec<Connection>, (u64, u64)); 5] = [
            (
                "two held through",
                vec![entry(0.5, 5.0), entry(0.5, 5.0)],
                (2, 2),
            ),
            (
                "six more for 300 ms between two samples",
                (0..6)
                    .map(|_| entry(2.2, 2.5))
                    .chain([entry(0.5, 5.0), entry(0.5, 5.0)])
                    .collect(),
                (8, 2),
            ),
            (
                "one replaced by another at the same instant is one",
                vec![entry(0.5, 2.0), entry(2.0, 5.0)],
                (1, 1),
            ),
            (
                "before and after the window count for nothing",
                vec![entry(0.1, 0.9), entry(4.5, 5.0), entry(3.0, 3.5)],
                (1, 0),
            ),
            (
                "never opened (a refused upgrade's entry) is not held",
                vec![Connection::default(), entry(0.5, 5.0)],
                (1, 1),
            ),
        ];
        for (case, entries, want) in rows {
            let mut records = StreamRecords::default();
            records.add_connections(&entries);
            let held = stream_window(&sources, window, &records, users).unwrap();
            assert_eq!((held.peak_held, held.held_at_end), want, "{case}");
        }
        // No entries (a file torn before they were written): the samples' peak.
        let held = stream_window(&sources, window, &StreamRecords::default(), users).unwrap();
        assert_eq!((held.peak_held, held.held_at_end), (2, 2));
    }

    #[test]
    fn shards_add_their_peaks_and_a_step_without_streams_has_none() {
        let zero = 1_000 * S;
        let window = Window {
            start_ns: 0,
            end_ns: 3 * S,
        };
        let rows = [(5, 5, 0), (7, 2, 0), (6, 0, 0)];
        let sources = [source(zero, 1, &rows), source(zero, 1, &rows)];
        let users = ConnectionsAsked::Users(14);
        let held = stream_window(&sources, window, &StreamRecords::default(), users).unwrap();
        assert_eq!(
            (held.peak_held, held.held_at_end, held.opened),
            (14, 12, 14)
        );
        assert_eq!(held.held_ratio(), 1.0);
        assert!(held.latency_ns.is_empty(), "no message was timed");
        let mut plain = source(zero, 1, &rows);
        plain.stats.iter_mut().for_each(|s| s.streams = None);
        assert_eq!(
            stream_window(&[plain], window, &StreamRecords::default(), users),
            None
        );
    }

    #[test]
    fn refused_upgrades_and_cut_connections_are_counted_from_the_stream_records() {
        use record::{ErrorEntry, TargetInfo};
        let target = |method: &str| TargetInfo {
            method: method.to_owned(),
            ..TargetInfo::default()
        };
        let tables = RunTables {
            targets: vec![target("GET"), target("WS"), target("SSE")],
            errors: vec![
                ErrorEntry {
                    kind: ErrorKind::Status,
                    text: "503 Service Unavailable".to_owned(),
                },
                ErrorEntry {
                    kind: ErrorKind::Closed,
                    text: "the server closed the websocket".to_owned(),
                },
            ],
            ..RunTables::default()
        };
        let record = |target, status, error| Record {
            target,
            status,
            error,
            ..Record::default()
        };
        let batch = [
            record(0, 503, 1),
            record(1, 503, 1),
            record(1, 200, 0),
            record(1, 0, 2),
            record(2, 503, 1),
        ];
        let mut counts = StreamRecords::default();
        counts.add(&batch, &tables);
        let want = (4, 2, 1);
        assert_eq!((counts.records, counts.refused, counts.cut), want);
    }
}
