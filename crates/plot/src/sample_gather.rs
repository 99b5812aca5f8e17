//! [`SampleGather`]: the resource samples of the system under test (`loadlab monitor`,
//! `attack -monitor`), gathered as they stream by beside the records, in bounded memory.
//!
//! - Each series that has a chart to go to ([`place::place`](crate::place::place)) keeps a [`Trace`] of
//!   `(unix ns, value)` points, NaN where a gap names it (or its whole sampler), so its
//!   line breaks there. A trace longer than its budget ([`MAX_POINTS_PER_SERIES`], or
//!   `-threshold` when lower) keeps, per stretch of time, its lowest and highest value
//!   and a gap if it had one ([`Trace::compact`]), so no peak and no gap disappears.
//!   Budgets shrink as series appear (all traces together keep about
//!   [`POINTS_BUDGET`] points), and past [`MAX_TRACED_SERIES`] series are only
//!   counted: memory stays flat however long the run and however many series a
//!   Prometheus endpoint exposes.
//! - Gaps become [`GapSpan`]s per sampler (or series) and reason, consecutive ticks
//!   merged, so a chart can shade "no process matches nginx" from 12 s to 15 s.
//!
//! The resource rows and warnings are the summary's (`report::Measure`), not this.

use std::collections::HashMap;

use record::{SampleBatch, SampleTables};

use crate::place::{self, Place};

/// Points all traces keep together, about: 16 MiB of `(u64, f64)`.
pub const POINTS_BUDGET: usize = 1 << 20;
/// The fewest points a trace is cut to: a chart is about 1000 pixels wide.
pub const MIN_POINTS_PER_SERIES: usize = 128;
/// The most points a trace keeps (or `-threshold`, when lower). A chart's plot is
/// 1010 px wide and a compacted trace keeps each stretch's low and high, so 1,500
/// points lose nothing the eye can see, while a page of a dozen resource charts of
/// an hour-long run stays a couple of MB.
pub const MAX_POINTS_PER_SERIES: usize = 1500;
/// Series beyond this many are counted, not traced (their budget would be too small).
pub const MAX_TRACED_SERIES: usize = POINTS_BUDGET / MIN_POINTS_PER_SERIES;
/// Gap spans kept; more are counted.
const MAX_GAP_SPANS: usize = 4096;
/// Distinct gap reasons kept; more share the last one's slot.
const MAX_REASONS: usize = 64;
/// A sampler's interval until two readings tell it (`loadlab monitor`'s default).
pub const DEFAULT_STEP_NS: u64 = 1_000_000_000;
/// Readings closer than this are not a sampler's interval (the monitor's smallest is
/// 100 ms), but two inputs holding the same sampler.
const MIN_STEP_NS: u64 = 50_000_000;
/// The narrowest stretch a compacted trace keeps a low and a high of.
const MIN_BUCKET_NS: u64 = 1_000_000;

/// A series' points, in bounded memory; see the module documentation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trace {
    /// `(unix ns, value)`; NaN marks a gap. In time order unless `in_order` is false.
    pub points: Vec<(u64, f64)>,
    in_order: bool,
    /// The stretch compaction keeps a low and a high of; 0 while every point is kept.
    pub bucket_ns: u64,
    /// The highest value (NaN until a value is seen).
    pub peak: f64,
    /// Finite values added (gaps not counted), kept or not.
    pub values: u64,
}

impl Trace {
    /// An empty trace.
    pub fn new() -> Trace {
        Trace {
            points: Vec::new(),
            in_order: true,
            bucket_ns: 0,
            peak: f64::NAN,
            values: 0,
        }
    }

    /// Adds a value (NaN for a gap); compacts to `budget` points when twice over it.
    pub fn push(&mut self, at_unix_ns: u64, value: f64, budget: usize) {
        if self.points.last().is_some_and(|&(t, _)| t > at_unix_ns) {
            // Two inputs with the same sampler interleave; sorted when compacted.
            self.in_order = false;
        }
        self.points.push((at_unix_ns, value));
        if value.is_finite() {
            self.values += 1;
            // NaN until the first value.
            if self.peak.is_nan() || value > self.peak {
                self.peak = value;
            }
        }
        if self.points.len() > budget.saturating_mul(2) {
            self.compact(budget);
        }
    }

    /// Sorts the points by time and, when there are more than `budget`, keeps per
    /// stretch of time (a power of two times 1 ms, on a grid from the epoch, so that
    /// compacting again merges whole stretches) the lowest value, the highest value
    /// and the first gap, in time order: at most 3 points a stretch, and about
    /// `budget / 3` stretches.
    pub fn compact(&mut self, budget: usize) {
        if !self.in_order {
            self.points.sort_by_key(|&(t, _)| t);
            self.in_order = true;
        }
        let (Some(&(first, _)), Some(&(last, _))) = (self.points.first(), self.points.last())
        else {
            return;
        };
        if self.points.len() <= budget {
            return;
        }
        let stretches = (budget / 3).max(1) as u64;
        let mut bucket_ns = self.bucket_ns.max(MIN_BUCKET_NS);
        while (last - first) / bucket_ns >= stretches {
            bucket_ns = bucket_ns.saturating_mul(2);
        }
        self.bucket_ns = bucket_ns;
        // In place: a stretch never writes more points than it read.
        let (mut read, mut write) = (0, 0);
        while read < self.points.len() {
            let stretch = self.points[read].0 / bucket_ns;
            let mut end = read;
            let (mut low, mut high, mut gap) = (None::<usize>, None::<usize>, None::<usize>);
            while end < self.points.len() && self.points[end].0 / bucket_ns == stretch {
                let value = self.points[end].1;
                if value.is_nan() {
                    gap.get_or_insert(end);
                } else {
                    if low.is_none_or(|i| value < self.points[i].1) {
                        low = Some(end);
                    }
                    if high.is_none_or(|i| value > self.points[i].1) {
                        high = Some(end);
                    }
                }
                end += 1;
            }
            let mut keep = [low, high, gap];
            keep.sort_unstable();
            let mut previous = None;
            for index in keep.into_iter().flatten() {
                if previous != Some(index) {
                    self.points[write] = self.points[index];
                    write += 1;
                    previous = Some(index);
                }
            }
            read = end;
        }
        self.points.truncate(write);
    }
}

/// One sampler's clock: when it last read and its interval, as seen.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct SamplerClock {
    last_unix_ns: Option<u64>,
    /// The shortest distance between two readings (0 until there are two).
    step_ns: u64,
}

impl SamplerClock {
    fn tick(&mut self, at_unix_ns: u64) {
        if self.last_unix_ns == Some(at_unix_ns) {
            return;
        }
        if let Some(last) = self.last_unix_ns {
            let distance = at_unix_ns.saturating_sub(last);
            if distance >= MIN_STEP_NS && (self.step_ns == 0 || distance < self.step_ns) {
                self.step_ns = distance;
            }
        }
        self.last_unix_ns = Some(self.last_unix_ns.map_or(at_unix_ns, |l| l.max(at_unix_ns)));
    }
}

/// Consecutive gaps of one sampler (or one series) for one reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GapSpan {
    pub sampler: u32,
    /// `None` when the whole sampler read nothing.
    pub series: Option<u32>,
    /// Index into [`SampleData::reasons`].
    pub reason: u32,
    pub first_unix_ns: u64,
    pub last_unix_ns: u64,
    /// Gap entries merged into the span.
    pub count: u64,
}

/// What a series' slot holds.
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    /// Not met yet.
    Unseen,
    /// No chart wants it (`host.memory_available_bytes` is total minus used), or
    /// past [`MAX_TRACED_SERIES`].
    Skipped,
    Traced(Box<(Place, Trace)>),
}

/// Gathers sample batches; see the module documentation.
#[derive(Clone)]
pub struct SampleGather {
    threshold: usize,
    slots: Vec<Slot>,
    traced: usize,
    untraced: u64,
    clocks: Vec<SamplerClock>,
    spans: Vec<GapSpan>,
    /// The latest span of each (sampler, series, reason), as an index into `spans`.
    open_spans: HashMap<(u32, Option<u32>, u32), usize>,
    dropped_spans: u64,
    reasons: Vec<String>,
    first_unix_ns: Option<u64>,
    last_unix_ns: Option<u64>,
    batches: u64,
}

/// A traced series, ready to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesData {
    /// Index into [`SampleTables::series`].
    pub id: u32,
    pub place: Place,
    pub trace: Trace,
}

/// Everything the resource charts are drawn from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SampleData {
    pub tables: SampleTables,
    /// Traced series, by id.
    pub series: Vec<SeriesData>,
    /// Per sampler, its interval as seen (0 when unknown).
    pub steps_ns: Vec<u64>,
    pub spans: Vec<GapSpan>,
    pub reasons: Vec<String>,
    pub dropped_spans: u64,
    /// Series past [`MAX_TRACED_SERIES`].
    pub untraced: u64,
    pub first_unix_ns: Option<u64>,
    pub last_unix_ns: Option<u64>,
    pub batches: u64,
}

impl SampleData {
    pub fn is_empty(&self) -> bool {
        self.batches == 0
    }

    /// The interval of `sampler`, or [`DEFAULT_STEP_NS`] when it read once.
    pub fn step_ns(&self, sampler: u32) -> u64 {
        match self.steps_ns.get(sampler as usize) {
            Some(&step) if step > 0 => step,
            _ => DEFAULT_STEP_NS,
        }
    }
}

impl SampleGather {
    /// Traces keep at most `threshold` points each (the page's `-threshold`).
    pub fn new(threshold: usize) -> SampleGather {
        SampleGather {
            threshold,
            slots: Vec::new(),
            traced: 0,
            untraced: 0,
            clocks: Vec::new(),
            spans: Vec::new(),
            open_spans: HashMap::new(),
            dropped_spans: 0,
            reasons: Vec::new(),
            first_unix_ns: None,
            last_unix_ns: None,
            batches: 0,
        }
    }

    /// The earliest sample (value or gap) so far.
    pub fn first_unix_ns(&self) -> Option<u64> {
        self.first_unix_ns
    }

    /// Adds batches whose ids index `tables` (the merged tables as read so far).
    pub fn add(&mut self, tables: &SampleTables, batches: &[SampleBatch]) {
        if batches.is_empty() {
            return;
        }
        for batch in batches {
            self.add_batch(tables, batch);
        }
    }

    /// Each trace's share of [`POINTS_BUDGET`], at most [`MAX_POINTS_PER_SERIES`]
    /// and the threshold.
    fn budget(&self) -> usize {
        (POINTS_BUDGET / self.traced.max(1))
            .min(MAX_POINTS_PER_SERIES)
            .min(self.threshold)
            .max(3)
    }

    fn add_batch(&mut self, tables: &SampleTables, batch: &SampleBatch) {
        let at = batch.at_unix_ns;
        self.batches += 1;
        self.first_unix_ns = Some(self.first_unix_ns.map_or(at, |f| f.min(at)));
        self.last_unix_ns = Some(self.last_unix_ns.map_or(at, |l| l.max(at)));
        // A batch is one sampler's reading, but a writer may put several in one: each
        // sampler named in it ticks (a repeated tick at the same time is ignored).
        let samplers = batch
            .values
            .iter()
            .filter_map(|v| {
                tables
                    .series
                    .get(v.series as usize)
                    .map(|info| info.sampler)
            })
            .chain(batch.gaps.iter().map(|gap| gap.sampler));
        let mut last_ticked = None;
        for sampler in samplers {
            // Ids past the tables (which readers never hand out) are skipped, not grown to.
            if last_ticked == Some(sampler) || sampler as usize >= tables.samplers.len() {
                continue;
            }
            last_ticked = Some(sampler);
            let index = sampler as usize;
            if self.clocks.len() <= index {
                self.clocks.resize(index + 1, SamplerClock::default());
            }
            self.clocks[index].tick(at);
        }
        for value in &batch.values {
            // A non-finite reading is a gap (loadlab writes none; others might).
            let reading = if value.value.is_finite() {
                value.value
            } else {
                f64::NAN
            };
            self.push(tables, value.series, at, reading);
        }
        for gap in &batch.gaps {
            for series in tables.gap_series(gap) {
                self.push(tables, series, at, f64::NAN);
            }
            if gap.sampler as usize >= tables.samplers.len() {
                continue;
            }
            let reason = self.reason_id(&gap.reason);
            self.add_gap(gap.sampler, gap.series, reason, at);
        }
    }

    fn push(&mut self, tables: &SampleTables, series: u32, at_unix_ns: u64, value: f64) {
        let index = series as usize;
        if index >= tables.series.len() {
            return;
        }
        if self.slots.len() <= index {
            self.slots.resize(index + 1, Slot::Unseen);
        }
        if self.slots[index] == Slot::Unseen {
            self.slots[index] = self.first_sight(tables, series);
        }
        let budget = self.budget();
        if let Slot::Traced(traced) = &mut self.slots[index] {
            traced.1.push(at_unix_ns, value, budget);
        }
    }

    fn first_sight(&mut self, tables: &SampleTables, series: u32) -> Slot {
        let place = tables.series.get(series as usize).and_then(|info| {
            let sampler = tables.samplers.get(info.sampler as usize)?;
            place::place(sampler, info)
        });
        let Some(place) = place else {
            return Slot::Skipped;
        };
        if self.traced >= MAX_TRACED_SERIES {
            self.untraced += 1;
            return Slot::Skipped;
        }
        self.traced += 1;
        Slot::Traced(Box::new((place, Trace::new())))
    }

    fn reason_id(&mut self, reason: &str) -> u32 {
        if let Some(id) = self.reasons.iter().position(|r| r == reason) {
            return id as u32;
        }
        if self.reasons.len() < MAX_REASONS {
            self.reasons.push(reason.to_owned());
        } else if let Some(last) = self.reasons.last_mut() {
            "other reasons".clone_into(last);
        }
        (self.reasons.len() - 1) as u32
    }

    /// Extends the key's latest span when `at` follows it within one and a half of
    /// the sampler's intervals; starts a new span otherwise.
    fn add_gap(&mut self, sampler: u32, series: Option<u32>, reason: u32, at: u64) {
        let step_ns = match self.clocks.get(sampler as usize) {
            Some(clock) if clock.step_ns > 0 => clock.step_ns,
            _ => DEFAULT_STEP_NS,
        };
        let key = (sampler, series, reason);
        if let Some(span) = self
            .open_spans
            .get(&key)
            .and_then(|&i| self.spans.get_mut(i))
        {
            let follows = at >= span.first_unix_ns
                && at
                    <= span
                        .last_unix_ns
                        .saturating_add(step_ns.saturating_mul(3) / 2);
            if follows {
                span.last_unix_ns = span.last_unix_ns.max(at);
                span.count += 1;
                return;
            }
        }
        if self.spans.len() >= MAX_GAP_SPANS {
            self.dropped_spans += 1;
            return;
        }
        self.open_spans.insert(key, self.spans.len());
        self.spans.push(GapSpan {
            sampler,
            series,
            reason,
            first_unix_ns: at,
            last_unix_ns: at,
            count: 1,
        });
    }

    /// The gathered samples.
    pub fn finish(self, tables: SampleTables) -> SampleData {
        let budget = self.budget();
        let series = self
            .slots
            .into_iter()
            .enumerate()
            .filter_map(|(id, slot)| match slot {
                Slot::Traced(traced) => {
                    let (place, mut trace) = *traced;
                    trace.compact(budget);
                    Some(SeriesData {
                        id: id as u32,
                        place,
                        trace,
                    })
                }
                Slot::Unseen | Slot::Skipped => None,
            })
            .collect();
        SampleData {
            tables,
            series,
            steps_ns: self.clocks.iter().map(|c| c.step_ns).collect(),
            spans: self.spans,
            reasons: self.reasons,
            dropped_spans: self.dropped_spans,
            untraced: self.untraced,
            first_unix_ns: self.first_unix_ns,
            last_unix_ns: self.last_unix_ns,
            batches: self.batches,
        }
    }
}

#[cfg(test)]
mod tests {
    use record::{SampleGap, SampleValue, SamplerInfo, SeriesInfo, SeriesKind};

    use super::*;

    const S: u64 = 1_000_000_000;

    fn values(trace: &Trace) -> Vec<(u64, String)> {
        trace
            .points
            .iter()
            .map(|&(t, v)| {
                (
                    t / S,
                    if v.is_nan() {
                        "gap".to_owned()
                    } else {
                        v.to_string()
                    },
                )
            })
            .collect()
    }

    #[test]
    fn traces_keep_lows_highs_and_gaps_when_compacted() {
        // (values one a second, NaN for a gap; budget; what stays as (s, value))
        type Row = (&'static [f64], usize, &'static [(u64, &'static str)]);
        let rows: &[Row] = &[
            // Under budget: everything, untouched.
            (&[1.0, 2.0, 3.0], 10, &[(0, "1"), (1, "2"), (2, "3")]),
            // Over: one stretch of 4 s (budget 6 -> 2 stretches over the 7 s span)
            // keeps its low, gap and high in time order.
            (
                &[5.0, 1.0, f64::NAN, 9.0, 4.0, 4.0, 3.0, 8.0],
                6,
                &[(1, "1"), (2, "gap"), (3, "9"), (6, "3"), (7, "8")],
            ),
            // A flat line keeps one point per stretch.
            (&[7.0; 8], 6, &[(0, "7"), (5, "7")]),
            // Only gaps: one per stretch.
            (&[f64::NAN; 8], 6, &[(0, "gap"), (5, "gap")]),
            // Empty.
            (&[], 3, &[]),
        ];
        for (input, budget, want) in rows {
            let mut trace = Trace::new();
            for (second, &value) in input.iter().enumerate() {
                trace.points.push((second as u64 * S, value));
            }
            trace.compact(*budget);
            let want: Vec<(u64, String)> = want.iter().map(|&(t, v)| (t, v.to_owned())).collect();
            assert_eq!(values(&trace), want, "{input:?}");
        }
    }

    #[test]
    fn traces_stay_bounded_sorted_and_keep_the_peak() {
        let mut trace = Trace::new();
        // Out of order on purpose (two inputs with the same sampler), 10k points.
        for second in (0..10_000u64).rev() {
            let value = if second == 4321 {
                1e6
            } else {
                (second % 10) as f64
            };
            trace.push(second * S, value, 300);
        }
        trace.compact(300);
        assert!(trace.points.len() <= 300, "{}", trace.points.len());
        assert!(trace.points.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(trace.points.iter().any(|&(_, v)| v == 1e6));
        assert_eq!((trace.peak, trace.values), (1e6, 10_000));
        assert!(trace.bucket_ns >= 64 * S);
    }

    fn tables() -> SampleTables {
        let sampler = |kind: &str, name: &str| SamplerInfo {
            kind: kind.into(),
            name: name.to_owned(),
        };
        let series = |sampler, name: &str, label: Option<(&str, &str)>, unit: &str| SeriesInfo {
            sampler,
            name: name.to_owned(),
            labels: label
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into_iter()
                .collect(),
            unit: unit.to_owned(),
            kind: SeriesKind::Gauge,
        };
        SampleTables {
            samplers: vec![sampler("host", "host"), sampler("process", "nginx")],
            series: vec![
                series(0, "host.cpu_percent", Some(("cpu", "all")), "percent"),
                series(0, "host.memory_available_bytes", None, "bytes"),
                series(
                    1,
                    "process.cpu_percent",
                    Some(("group", "nginx")),
                    "percent",
                ),
                series(1, "process.rss_bytes", Some(("group", "nginx")), "bytes"),
            ],
        }
    }

    fn batch(second: u64, values: &[(u32, f64)], gaps: &[(u32, Option<u32>, &str)]) -> SampleBatch {
        SampleBatch {
            at_unix_ns: second * S,
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
        }
    }

    #[test]
    fn gaps_break_series_and_merge_into_spans() {
        let tables = tables();
        let mut gather = SampleGather::new(4000);
        let gone = "no process matches nginx";
        for second in 0..10 {
            let mut values = vec![(0, 10.0), (1, 5.0)];
            let mut gaps = Vec::new();
            if (3..6).contains(&second) || second == 8 {
                gaps.push((1, None, gone));
            } else {
                values.extend([(2, 50.0 + second as f64), (3, 1e6)]);
            }
            if second == 9 {
                // A value that is not finite is a gap too.
                values[0].1 = f64::INFINITY;
            }
            // Host and process read in separate batches, as the monitor writes them.
            let (host, process): (Vec<_>, Vec<_>) = values.into_iter().partition(|(s, _)| *s < 2);
            gather.add(
                &tables,
                &[batch(second, &host, &[]), batch(second, &process, &gaps)],
            );
        }
        let data = gather.finish(tables);
        // memory_available has no chart: not traced.
        let ids: Vec<u32> = data.series.iter().map(|s| s.id).collect();
        assert_eq!(ids, [0, 2, 3]);
        let cpu = &data.series[1].trace;
        let gaps: Vec<u64> = cpu
            .points
            .iter()
            .filter(|p| p.1.is_nan())
            .map(|p| p.0 / S)
            .collect();
        assert_eq!(gaps, [3, 4, 5, 8]);
        assert_eq!(cpu.peak, 59.0);
        let host = &data.series[0].trace;
        assert!(host.points[9].1.is_nan());
        // Spans: 3-5 s merged, 8 s apart (two intervals after the last gap).
        let spans: Vec<(u64, u64, u64)> = data
            .spans
            .iter()
            .map(|s| (s.first_unix_ns / S, s.last_unix_ns / S, s.count))
            .collect();
        assert_eq!(spans, [(3, 5, 3), (8, 8, 1)]);
        assert_eq!(data.reasons, [gone]);
        assert_eq!(data.step_ns(1), S);
        assert_eq!(data.step_ns(7), DEFAULT_STEP_NS);
    }

    #[test]
    fn ids_past_the_tables_are_skipped() {
        let tables = tables();
        let mut gather = SampleGather::new(4000);
        let far = u32::MAX;
        gather.add(
            &tables,
            &[batch(
                1,
                &[(far, 1.0), (0, 2.0)],
                &[(far, None, "x"), (0, Some(far), "y")],
            )],
        );
        assert!(gather.slots.len() <= tables.series.len());
        assert!(gather.clocks.len() <= tables.samplers.len());
        let data = gather.finish(tables);
        assert_eq!(data.series.len(), 1);
        assert_eq!(data.spans.len(), 1);
    }

    #[test]
    fn every_sampler_in_a_batch_learns_its_interval() {
        // (batches as (tenths of a second, series with values); want steps per sampler)
        type Row = (&'static [(u64, &'static [u32])], [u64; 2]);
        let rows: &[Row] = &[
            // One batch per sampler, as the monitor writes them.
            (&[(0, &[0]), (0, &[2]), (5, &[0]), (5, &[2])], [5, 5]),
            // Both samplers in one batch.
            (&[(0, &[0, 2]), (2, &[0, 2]), (4, &[0, 2])], [2, 2]),
            // One reading only: the interval is unknown, the default stands in.
            (&[(0, &[0, 2])], [10, 10]),
            // The same instant twice (one sampler in two inputs) is not an interval.
            (&[(0, &[0]), (0, &[0]), (3, &[0])], [3, 10]),
        ];
        let tables = tables();
        for (batches, want) in rows {
            let mut gather = SampleGather::new(4000);
            for &(tenths, series) in *batches {
                let values: Vec<(u32, f64)> = series.iter().map(|&s| (s, 1.0)).collect();
                let mut one = batch(0, &values, &[]);
                one.at_unix_ns = tenths * S / 10;
                gather.add(&tables, &[one]);
            }
            let data = gather.finish(tables.clone());
            let got = [data.step_ns(0) * 10 / S, data.step_ns(1) * 10 / S];
            assert_eq!(got, *want, "{batches:?}");
        }
    }

    #[test]
    fn many_series_share_the_budget_and_the_rest_are_counted() {
        let sampler = SamplerInfo {
            kind: "prom".into(),
            name: "http://127.0.0.1:9090/metrics".to_owned(),
        };
        let count = MAX_TRACED_SERIES + 5;
        let tables = SampleTables {
            samplers: vec![sampler],
            series: (0..count)
                .map(|i| SeriesInfo {
                    sampler: 0,
                    name: format!("metric_{i}"),
                    unit: "count".to_owned(),
                    ..SeriesInfo::default()
                })
                .collect(),
        };
        let mut gather = SampleGather::new(4000);
        for second in 0..3 {
            let values: Vec<(u32, f64)> = (0..count as u32).map(|i| (i, f64::from(i))).collect();
            gather.add(&tables, &[batch(second, &values, &[])]);
        }
        assert_eq!(gather.budget(), MIN_POINTS_PER_SERIES);
        let data = gather.finish(tables);
        assert_eq!(data.series.len(), MAX_TRACED_SERIES);
        assert_eq!(data.untraced, 5);
        assert_eq!(data.first_unix_ns, Some(0));
    }
}
