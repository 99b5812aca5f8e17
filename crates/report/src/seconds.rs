//! [`Seconds`]: a run cut into one-second windows in bounded memory, for the saturation
//! point of a ramp (`report`) and the per-second samples `compare` bootstraps.
//!
//! Offered requests and send lag count by *intended* send second (the open model's
//! intended times follow the schedule, so this is the offered rate even when the
//! generator lagged); completions, failures and latency count by completion second
//! (intended + latency), which is when the server delivered. Each second keeps a small
//! log-linear latency histogram (8 sub-buckets per power of two: within 12.5%), enough
//! to see latency turn or compare per-second percentiles; the whole-run percentiles stay
//! exact in [`crate::Metrics`]. Adding a record neither allocates nor formats: memory
//! grows once per new second, up to [`MAX_SECONDS`].

use analysis::{Finding, SaturationConfig, Window, find_saturation};
use record::{ErrorKind, LoadModel, Record, RunTables};

/// Seconds kept (a day); a run spanning more is not cut into windows.
pub const MAX_SECONDS: usize = 86_400;
const SECOND_NS: u64 = 1_000_000_000;
/// Sub-buckets per power of two.
const SUB_BUCKETS: u64 = 8;
/// The largest power of two with its own buckets (2^40 ns is about 18 minutes).
const MAX_EXPONENT: u64 = 40;
/// Latency buckets per second: the values 0..8 exactly, then 8 per power of two.
const BUCKETS: usize = (SUB_BUCKETS + (MAX_EXPONENT - 2) * SUB_BUCKETS) as usize;
const KINDS: usize = ErrorKind::ALL.len();

/// The counts of one second.
#[derive(Debug, Clone, Copy, Default)]
struct Bin {
    offered: u32,
    lag_sum_ns: u64,
    ok: u32,
    failed: u32,
    latency_sum_ns: u64,
    failed_by_kind: [u32; KINDS],
}

/// Per-second windows of a run.
#[derive(Debug, Clone, Default)]
pub struct Seconds {
    /// Unix second of `bins[0]`.
    base_sec: u64,
    /// The run's first intended send (closed-model requests too), which the windows'
    /// times count from: the diagnosis's other times count from it as well, so its
    /// knee and its crossings share one origin.
    start_unix_ns: Option<u64>,
    bins: Vec<Bin>,
    /// `BUCKETS` latency counts per bin, by completion second.
    latency_counts: Vec<u32>,
    /// The run spans more than [`MAX_SECONDS`]: no windows.
    too_long: bool,
    /// Only records of open-model attacks count (see [`Seconds::open_model_only`]).
    open_only: bool,
    failed_kind_totals: [u64; KINDS],
}

impl Seconds {
    /// Windows of the open-model attacks alone, for the saturation point: a run that
    /// ramps and then holds closed-model users (field report 003) has its ramp read
    /// without the users' requests.
    pub fn open_model_only() -> Seconds {
        Seconds {
            open_only: true,
            ..Seconds::default()
        }
    }

    /// Adds a batch; `tables` names the kinds of its errors.
    pub fn add_all(&mut self, records: &[Record], tables: &RunTables) {
        for record in records {
            self.add(record, tables);
        }
    }

    #[inline]
    pub(crate) fn add(&mut self, record: &Record, tables: &RunTables) {
        self.note_start(record);
        if self.open_only
            && tables
                .attacks
                .get(usize::from(record.attack))
                .is_none_or(|a| a.model != LoadModel::Open)
        {
            return;
        }
        if self.bins.is_empty() && !self.too_long {
            self.base_sec = record.intended_unix_ns / SECOND_NS;
        }
        let Some(sent) = self.bin_index(record.intended_unix_ns) else {
            return;
        };
        let Some(done) = self.bin_index(record.end_unix_ns()) else {
            return;
        };
        let bin = &mut self.bins[sent];
        bin.offered += 1;
        bin.lag_sum_ns = bin.lag_sum_ns.saturating_add(record.send_lag_ns);
        let bin = &mut self.bins[done];
        bin.latency_sum_ns = bin.latency_sum_ns.saturating_add(record.latency_ns);
        if record.is_success() {
            bin.ok += 1;
        } else {
            bin.failed += 1;
            let kind = tables.error(record.error).map_or(
                if record.status == 0 {
                    ErrorKind::Other
                } else {
                    ErrorKind::Status
                },
                |e| e.kind,
            );
            bin.failed_by_kind[kind as usize] += 1;
            self.failed_kind_totals[kind as usize] += 1;
        }
        self.latency_counts[done * BUCKETS + bucket(record.latency_ns)] += 1;
    }

    /// Counts `record`'s intended send towards the run's first, without adding it (a
    /// held step's record, judged apart: `crate::held`).
    #[inline]
    pub(crate) fn note_start(&mut self, record: &Record) {
        let intended = record.intended_unix_ns;
        self.start_unix_ns = Some(self.start_unix_ns.map_or(intended, |s| s.min(intended)));
    }

    /// Adds `other`'s windows (and its start) to these, bin by bin: the windows of
    /// both sets of records.
    pub(crate) fn merge(&mut self, other: &Seconds) {
        if let Some(start) = other.start_unix_ns {
            self.start_unix_ns = Some(self.start_unix_ns.map_or(start, |s| s.min(start)));
        }
        if other.too_long {
            (self.too_long, self.bins, self.latency_counts) = (true, Vec::new(), Vec::new());
            return;
        }
        for (i, theirs) in other.bins.iter().enumerate() {
            let sec = other.base_sec + i as u64;
            if self.bins.is_empty() && !self.too_long {
                self.base_sec = sec;
            }
            let Some(at) = self.bin_index(sec * SECOND_NS) else {
                return;
            };
            let bin = &mut self.bins[at];
            bin.offered += theirs.offered;
            bin.lag_sum_ns = bin.lag_sum_ns.saturating_add(theirs.lag_sum_ns);
            bin.ok += theirs.ok;
            bin.failed += theirs.failed;
            bin.latency_sum_ns = bin.latency_sum_ns.saturating_add(theirs.latency_sum_ns);
            for (mine, their) in bin.failed_by_kind.iter_mut().zip(theirs.failed_by_kind) {
                *mine += their;
            }
            let counts = &other.latency_counts[i * BUCKETS..(i + 1) * BUCKETS];
            let mine = &mut self.latency_counts[at * BUCKETS..(at + 1) * BUCKETS];
            for (mine, their) in mine.iter_mut().zip(counts) {
                *mine += their;
            }
        }
        for (mine, their) in self
            .failed_kind_totals
            .iter_mut()
            .zip(other.failed_kind_totals)
        {
            *mine += their;
        }
    }

    /// Whether no record was added to a window (every one left out, or none came).
    pub(crate) fn is_empty(&self) -> bool {
        self.bins.is_empty() && !self.too_long
    }

    /// The first second whose failures passed 1% of its answers: when it began, from
    /// the run's first intended send, and the rate offered in it (the next second's
    /// when it is the run's first, a part of a second).
    pub fn failing_from(&self) -> Option<(u64, f64)> {
        let start = self.start_unix_ns?;
        let index = self.bins.iter().position(|bin| {
            let answers = u64::from(bin.ok) + u64::from(bin.failed);
            bin.failed > 0 && u64::from(bin.failed) * 100 > answers
        })?;
        let offered = match (index, self.bins.get(index + 1)) {
            (0, Some(next)) => next.offered,
            _ => self.bins[index].offered,
        };
        let at_ns = ((self.base_sec + index as u64) * SECOND_NS).saturating_sub(start);
        Some((at_ns, f64::from(offered)))
    }

    /// The bin of `unix_ns`, growing the bins to reach it; `None` once the run is too long.
    #[inline]
    fn bin_index(&mut self, unix_ns: u64) -> Option<usize> {
        if self.too_long {
            return None;
        }
        let sec = unix_ns / SECOND_NS;
        if sec < self.base_sec {
            self.grow_front((self.base_sec - sec) as usize);
        }
        let index = usize::try_from(sec.saturating_sub(self.base_sec)).unwrap_or(usize::MAX);
        if index >= MAX_SECONDS || self.too_long {
            self.too_long = true;
            self.bins = Vec::new();
            self.latency_counts = Vec::new();
            return None;
        }
        if index >= self.bins.len() {
            self.bins.resize(index + 1, Bin::default());
            self.latency_counts.resize((index + 1) * BUCKETS, 0);
        }
        Some(index)
    }

    /// Records out of time order (merged inputs): room for earlier seconds.
    #[cold]
    fn grow_front(&mut self, seconds: usize) {
        if self.bins.len().saturating_add(seconds) > MAX_SECONDS {
            self.too_long = true;
            return;
        }
        self.bins
            .splice(0..0, std::iter::repeat_n(Bin::default(), seconds));
        self.latency_counts
            .splice(0..0, std::iter::repeat_n(0, seconds * BUCKETS));
        self.base_sec -= seconds as u64;
    }

    /// The run's first intended send, unix ns: what the windows' times count from.
    pub fn start_unix_ns(&self) -> Option<u64> {
        self.start_unix_ns
    }

    /// The windows [`find_saturation`] reads: p99 latency, from the run's first intended send.
    pub fn windows(&self) -> Vec<Window> {
        (0..self.bins.len())
            .map(|i| {
                let bin = &self.bins[i];
                Window {
                    start_ns: ((self.base_sec + i as u64) * SECOND_NS)
                        .saturating_sub(self.start_unix_ns.unwrap_or(0)),
                    offered_per_sec: f64::from(bin.offered),
                    ok_per_sec: f64::from(bin.ok),
                    failed_per_sec: f64::from(bin.failed),
                    latency_ns: self.quantile(i, 0.99),
                }
            })
            .collect()
    }

    /// The saturation point, when `open` says the load is an open-model one.
    pub fn saturation(&self, open: Result<(), analysis::NoRamp>) -> Finding {
        if let Err(reason) = open {
            return Finding::NotARamp { reason };
        }
        if self.too_long {
            return Finding::NotARamp {
                reason: analysis::NoRamp::TooLong {
                    max_seconds: MAX_SECONDS as u64,
                },
            };
        }
        find_saturation(&self.windows(), &SaturationConfig::default())
    }

    /// The loaded seconds without the first and last (partial) ones, when there are
    /// more than four: what `compare` samples.
    fn sampled(&self) -> std::ops::Range<usize> {
        let first = self.bins.iter().position(|b| b.offered > 0).unwrap_or(0);
        let last = self
            .bins
            .iter()
            .rposition(|b| b.offered > 0)
            .map_or(0, |i| i + 1);
        if last > first + 4 {
            first + 1..last - 1
        } else {
            first..last
        }
    }

    /// One value per sampled second, from `figure(bin index)`; seconds where it is `None` are skipped.
    fn per_second(&self, figure: impl Fn(usize) -> Option<f64>) -> Vec<f64> {
        self.sampled().filter_map(figure).collect()
    }

    /// Requests offered (by intended send second), per second.
    pub fn offered(&self) -> Vec<f64> {
        self.per_second(|i| Some(f64::from(self.bins[i].offered)))
    }

    /// Successful completions, per second.
    pub fn ok(&self) -> Vec<f64> {
        self.per_second(|i| Some(f64::from(self.bins[i].ok)))
    }

    /// Successes over completions, of seconds with completions.
    pub fn success_ratio(&self) -> Vec<f64> {
        self.per_second(|i| {
            let bin = &self.bins[i];
            let done = bin.ok + bin.failed;
            (done > 0).then(|| f64::from(bin.ok) / f64::from(done))
        })
    }

    /// Mean latency of the completions of each second, nanoseconds.
    pub fn latency_mean_ns(&self) -> Vec<f64> {
        self.per_second(|i| {
            let bin = &self.bins[i];
            let done = bin.ok + bin.failed;
            (done > 0).then(|| bin.latency_sum_ns as f64 / f64::from(done))
        })
    }

    /// A latency quantile (`q` in 0..=1) of each second's completions, nanoseconds.
    pub fn latency_quantile_ns(&self, q: f64) -> Vec<f64> {
        self.per_second(|i| {
            let bin = &self.bins[i];
            (bin.ok + bin.failed > 0).then(|| self.quantile(i, q) as f64)
        })
    }

    /// Mean send lag of the requests intended in each second, nanoseconds.
    pub fn lag_mean_ns(&self) -> Vec<f64> {
        self.per_second(|i| {
            let bin = &self.bins[i];
            (bin.offered > 0).then(|| bin.lag_sum_ns as f64 / f64::from(bin.offered))
        })
    }

    /// Failures of `kind` completed in each second.
    pub fn failed_per_sec(&self, kind: ErrorKind) -> Vec<f64> {
        self.per_second(|i| Some(f64::from(self.bins[i].failed_by_kind[kind as usize])))
    }

    /// Failures of each kind over the run, kinds without failures left out.
    pub fn failed_by_kind(&self) -> Vec<(ErrorKind, u64)> {
        ErrorKind::ALL
            .into_iter()
            .map(|kind| (kind, self.failed_kind_totals[kind as usize]))
            .filter(|(_, count)| *count > 0)
            .collect()
    }

    /// The `q` quantile of bin `i`'s latencies: its bucket's upper bound; 0 when empty.
    fn quantile(&self, i: usize, q: f64) -> u64 {
        let counts = &self.latency_counts[i * BUCKETS..(i + 1) * BUCKETS];
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        if total == 0 {
            return 0;
        }
        let rank = units::nearest_rank(q, total);
        let mut seen = 0;
        for (index, &count) in counts.iter().enumerate() {
            seen += u64::from(count);
            if seen >= rank {
                return bucket_upper(index);
            }
        }
        bucket_upper(BUCKETS - 1)
    }
}

/// The bucket of a latency: exact below 8 ns, then 8 per power of two.
#[inline]
fn bucket(ns: u64) -> usize {
    if ns < SUB_BUCKETS {
        return ns as usize;
    }
    let exponent = u64::from(63 - ns.leading_zeros());
    if exponent > MAX_EXPONENT {
        return BUCKETS - 1;
    }
    let sub = (ns >> (exponent - 3)) & (SUB_BUCKETS - 1);
    (SUB_BUCKETS + (exponent - 3) * SUB_BUCKETS + sub) as usize
}

/// The largest latency in bucket `index`.
fn bucket_upper(index: usize) -> u64 {
    let index = index as u64;
    if index < SUB_BUCKETS {
        return index;
    }
    let exponent = (index - SUB_BUCKETS) / SUB_BUCKETS + 3;
    let sub = (index - SUB_BUCKETS) % SUB_BUCKETS;
    ((SUB_BUCKETS + sub) << (exponent - 3)) + (1 << (exponent - 3)) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000_000_000;

    fn record(at_ms: u64, latency_ms: u64, status: u16) -> Record {
        Record {
            intended_unix_ns: T0 + at_ms * 1_000_000,
            latency_ns: latency_ms * 1_000_000,
            send_lag_ns: 1_000,
            status,
            ..Record::default()
        }
    }

    #[test]
    fn buckets_hold_their_values_within_an_eighth() {
        for ns in [
            0,
            1,
            7,
            8,
            9,
            15,
            16,
            100,
            999,
            1_000_000,
            123_456_789,
            1 << 40,
        ] {
            let index = bucket(ns);
            assert!(index < BUCKETS, "{ns}");
            let upper = bucket_upper(index);
            assert!(
                upper >= ns && upper as f64 <= ns as f64 * 1.125 + 1.0,
                "{ns}: {upper}"
            );
            assert!(index == 0 || bucket_upper(index - 1) < ns, "{ns}");
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn offered_by_intended_second_completions_by_completion_second() {
        let mut seconds = Seconds::default();
        let tables = RunTables::default();
        // Two sent in second 0, one completing in second 1; one failure in second 2.
        seconds.add_all(
            &[
                record(100, 10, 200),
                record(900, 300, 200),
                record(2_000, 5, 503),
            ],
            &tables,
        );
        let windows = seconds.windows();
        let offered: Vec<f64> = windows.iter().map(|w| w.offered_per_sec).collect();
        let ok: Vec<f64> = windows.iter().map(|w| w.ok_per_sec).collect();
        let failed: Vec<f64> = windows.iter().map(|w| w.failed_per_sec).collect();
        assert_eq!(offered, [2.0, 0.0, 1.0]);
        assert_eq!(ok, [1.0, 1.0, 0.0]);
        assert_eq!(failed, [0.0, 0.0, 1.0]);
        assert_eq!(windows[1].start_ns, 900_000_000);
        assert!(windows[1].latency_ns >= 300_000_000 && windows[1].latency_ns < 340_000_000);
        assert_eq!(seconds.failed_by_kind(), [(ErrorKind::Status, 1)]);
    }

    #[test]
    fn records_out_of_order_and_far_apart() {
        let mut seconds = Seconds::default();
        let tables = RunTables::default();
        seconds.add_all(&[record(5_000, 1, 200), record(1_000, 1, 200)], &tables);
        assert_eq!(seconds.windows().len(), 5);
        assert_eq!(seconds.windows()[0].start_ns, 0);
        // A record a year later: no windows rather than a year of memory.
        seconds.add_all(&[record(365 * 86_400_000, 1, 200)], &tables);
        assert!(matches!(
            seconds.saturation(Ok(())),
            Finding::NotARamp {
                reason: analysis::NoRamp::TooLong { max_seconds: 86400 }
            }
        ));
    }

    /// Two folds merged are one fold of both sets of records, whatever their order
    /// (the second's records begin earlier and end later than the first's).
    #[test]
    fn merged_seconds_are_one_fold_of_both() {
        let tables = RunTables::default();
        let records: Vec<Record> = (0..400u64)
            .map(|n| {
                record(
                    n * 37 % 9_000,
                    n % 13 * 7,
                    if n % 9 == 0 { 503 } else { 200 },
                )
            })
            .collect();
        let mut whole = Seconds::default();
        whole.add_all(&records, &tables);
        let (early, late): (Vec<Record>, Vec<Record>) = records
            .iter()
            .partition(|r| (r.intended_unix_ns - T0) % 3_000_000_000 < 1_500_000_000);
        let mut merged = Seconds::default();
        merged.add_all(&late, &tables);
        let mut other = Seconds::default();
        other.add_all(&early, &tables);
        merged.merge(&other);
        assert_eq!(merged.windows(), whole.windows());
        assert_eq!(merged.start_unix_ns(), whole.start_unix_ns());
        assert_eq!(merged.failed_by_kind(), whole.failed_by_kind());
        assert_eq!(merged.failing_from(), whole.failing_from());
        // Into nothing: the same again.
        let mut empty = Seconds::default();
        empty.merge(&whole);
        assert_eq!(empty.windows(), whole.windows());
    }

    #[test]
    fn closed_loads_are_not_ramps() {
        let finding = Seconds::default().saturation(Err(analysis::NoRamp::ClosedModel));
        assert_eq!(
            finding,
            Finding::NotARamp {
                reason: analysis::NoRamp::ClosedModel
            }
        );
    }

    #[test]
    fn open_model_only_leaves_closed_attacks_out() {
        use record::AttackInfo;
        let attack = |model| AttackInfo {
            model,
            ..AttackInfo::default()
        };
        let tables = RunTables {
            attacks: vec![attack(LoadModel::Open), attack(LoadModel::Closed)],
            ..RunTables::default()
        };
        let closed = Record {
            attack: 1,
            ..record(3_000, 1, 200)
        };
        let mut seconds = Seconds::open_model_only();
        seconds.add_all(&[record(0, 1, 200), closed], &tables);
        assert_eq!(seconds.windows().len(), 1);
        let mut all = Seconds::default();
        all.add_all(&[record(0, 1, 200), closed], &tables);
        assert_eq!(all.windows().len(), 4);
    }
}
