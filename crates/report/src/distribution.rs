//! [`Distribution`]: the values of one measure (latency, send lag) in bounded memory, with
//! exact count, sum, min and max, and percentiles that are exact for small sets and
//! exact to 3 significant digits beyond [`EXACT_LIMIT`] values, from a log-linear
//! histogram laid out like HdrHistogram's (2048 sub-buckets: relative error below
//! 1/1024). [`Quantiles`] answers percentile queries once the values are in.
//!
//! Percentiles use the nearest-rank rule in both regimes: the value at quantile `q` of
//! `n` values is the `ceil(q * n)`-th smallest (at least the first). In the histogram
//! regime that value is the top of its bucket, clamped to the exact min and max.

/// Values kept exactly before switching to the histogram: 2 MiB of `u64`s.
pub const EXACT_LIMIT: usize = 1 << 18;
/// The same for each group of a `-by` report, which may have many: 128 KiB.
pub const GROUP_EXACT_LIMIT: usize = 1 << 14;

/// Bits of resolution per power of two: 2^11 = 2048 sub-buckets, as HdrHistogram uses
/// for 3 significant digits.
const SUB_BUCKET_BITS: u32 = 11;
const HALF_SUB_BUCKETS: usize = 1 << (SUB_BUCKET_BITS - 1);
/// Buckets for every `u64`: values below 2048 exactly, then 1024 per power of two.
const HISTOGRAM_LEN: usize =
    (64 - SUB_BUCKET_BITS as usize + 1) * HALF_SUB_BUCKETS + HALF_SUB_BUCKETS;
/// Buckets are allocated a power of two (8 KiB) at a time, as values reach it.
const CHUNK_LEN: usize = HALF_SUB_BUCKETS;
const CHUNKS: usize = HISTOGRAM_LEN / CHUNK_LEN;

/// Collects values; see the module documentation.
#[derive(Debug, Clone)]
pub struct Distribution {
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
    exact_limit: usize,
    store: Store,
}

#[derive(Debug, Clone)]
enum Store {
    Exact(Vec<u64>),
    Histogram(LogHistogram),
}

impl Default for Distribution {
    fn default() -> Self {
        Distribution::new()
    }
}

impl Distribution {
    /// Keeps up to [`EXACT_LIMIT`] values exactly.
    pub fn new() -> Distribution {
        Distribution::with_exact_limit(EXACT_LIMIT)
    }

    /// Keeps up to `exact_limit` values exactly, then switches to the histogram.
    pub fn with_exact_limit(exact_limit: usize) -> Distribution {
        Distribution {
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            exact_limit,
            store: Store::Exact(Vec::new()),
        }
    }

    #[inline]
    /// Adds one value (nanoseconds, for latencies and lag).
    pub fn add(&mut self, value: u64) {
        self.count += 1;
        self.sum += u128::from(value);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        match &mut self.store {
            Store::Histogram(histogram) => histogram.add(value),
            Store::Exact(values) => {
                values.push(value);
                if values.len() > self.exact_limit {
                    self.spill();
                }
            }
        }
    }

    /// Moves the exact values into a histogram; from now on memory stays flat.
    fn spill(&mut self) {
        let mut histogram = LogHistogram::new();
        if let Store::Exact(values) = &self.store {
            for &value in values {
                histogram.add(value);
            }
        }
        self.store = Store::Histogram(histogram);
    }

    /// Values added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The exact sum of all values.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// The smallest value, 0 when empty.
    pub fn min(&self) -> u64 {
        if self.count == 0 { 0 } else { self.min }
    }

    /// The largest value added.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The mean as vegeta computes it: `float64(total) / float64(count)`, truncated.
    pub fn mean(&self) -> u64 {
        if self.count == 0 {
            return 0;
        }
        (self.sum as f64 / self.count as f64) as u64
    }

    /// True when percentiles are exact (no more values than the exact limit).
    pub fn is_exact(&self) -> bool {
        matches!(self.store, Store::Exact(_))
    }

    /// The value at quantile `q` of the values so far, without sealing: what
    /// [`Quantiles::quantile`] would answer now, for a view that keeps adding. In the
    /// exact regime it selects in a copy (linear time), so ask a few per second, not
    /// per value.
    pub fn quantile_so_far(&self, q: f64) -> u64 {
        let value = match &self.store {
            Store::Exact(values) if values.is_empty() => return 0,
            Store::Exact(values) => {
                let mut copy = values.clone();
                let rank = nearest_rank(q, copy.len() as u64) as usize;
                *copy.select_nth_unstable(rank - 1).1
            }
            Store::Histogram(histogram) => histogram.quantile(q),
        };
        value.clamp(self.min(), self.max)
    }

    /// Adds every value of `other`, as if each had been added here: exact while both
    /// are and the sum fits the exact limit, within a bucket (3 significant digits)
    /// once either side is a histogram.
    pub fn merge(&mut self, other: &Distribution) {
        match &other.store {
            Store::Exact(values) => values.iter().for_each(|&value| self.add(value)),
            Store::Histogram(theirs) => {
                if self.is_exact() {
                    self.spill();
                }
                if let Store::Histogram(mine) = &mut self.store {
                    mine.merge(theirs);
                }
                self.count += other.count;
                self.sum += other.sum;
                self.min = self.min.min(other.min);
                self.max = self.max.max(other.max);
            }
        }
    }

    /// Seals the values for percentile queries.
    pub fn into_quantiles(self) -> Quantiles {
        let (min, max) = (self.min(), self.max);
        let store = match self.store {
            Store::Exact(mut values) => {
                values.sort_unstable();
                Sealed::Exact(values)
            }
            Store::Histogram(histogram) => Sealed::Histogram(histogram),
        };
        Quantiles { min, max, store }
    }
}

/// Counts per log-linear bucket over the whole `u64` range, allocated 8 KiB per power of
/// two that values reach (a latency distribution touches 15-25): flat in the run's length.
#[derive(Debug, Clone)]
struct LogHistogram {
    chunks: Vec<Option<Box<[u64; CHUNK_LEN]>>>,
    total: u64,
}

impl LogHistogram {
    fn new() -> LogHistogram {
        LogHistogram {
            chunks: vec![None; CHUNKS],
            total: 0,
        }
    }

    #[inline]
    fn add(&mut self, value: u64) {
        let bucket = bucket_of(value);
        let chunk = self.chunks[bucket / CHUNK_LEN].get_or_insert_with(|| Box::new([0; CHUNK_LEN]));
        chunk[bucket % CHUNK_LEN] += 1;
        self.total += 1;
    }

    fn merge(&mut self, other: &LogHistogram) {
        for (mine, theirs) in self.chunks.iter_mut().zip(&other.chunks) {
            if let Some(theirs) = theirs {
                let mine = mine.get_or_insert_with(|| Box::new([0; CHUNK_LEN]));
                for (count, add) in mine.iter_mut().zip(theirs.iter()) {
                    *count += add;
                }
            }
        }
        self.total += other.total;
    }

    /// The highest value of the bucket holding the `ceil(q * n)`-th smallest value.
    fn quantile(&self, q: f64) -> u64 {
        let rank = nearest_rank(q, self.total);
        let mut seen = 0;
        for (index, chunk) in self.chunks.iter().enumerate() {
            let Some(chunk) = chunk else { continue };
            for (offset, &count) in chunk.iter().enumerate() {
                seen += count;
                if seen >= rank {
                    return bucket_range(index * CHUNK_LEN + offset).1;
                }
            }
        }
        u64::MAX
    }

    #[cfg(test)]
    fn allocated_chunks(&self) -> usize {
        self.chunks.iter().filter(|chunk| chunk.is_some()).count()
    }
}

/// The bucket of `value`: values below 2048 have their own; above, each power of two
/// `[1024 << k, 2048 << k)` splits into 1024 buckets of width `1 << k`.
#[inline]
fn bucket_of(value: u64) -> usize {
    let bits = u64::BITS - value.leading_zeros();
    let shift = bits.saturating_sub(SUB_BUCKET_BITS);
    shift as usize * HALF_SUB_BUCKETS + (value >> shift) as usize
}

/// The lowest and highest value of a bucket.
fn bucket_range(bucket: usize) -> (u64, u64) {
    if bucket < 2 * HALF_SUB_BUCKETS {
        return (bucket as u64, bucket as u64);
    }
    let shift = (bucket / HALF_SUB_BUCKETS - 1) as u32;
    let low = ((bucket - shift as usize * HALF_SUB_BUCKETS) as u64) << shift;
    (low, low + ((1u64 << shift) - 1))
}

/// Percentile queries over a sealed [`Distribution`].
#[derive(Debug, Clone)]
pub struct Quantiles {
    min: u64,
    max: u64,
    store: Sealed,
}

#[derive(Debug, Clone)]
enum Sealed {
    Exact(Vec<u64>),
    Histogram(LogHistogram),
}

impl Quantiles {
    /// The value at quantile `q` (0..=1) by the nearest-rank rule; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        let value = match &self.store {
            Sealed::Exact(values) => match values.len() {
                0 => return 0,
                n => values[nearest_rank(q, n as u64) as usize - 1],
            },
            Sealed::Histogram(histogram) => histogram.quantile(q),
        };
        value.clamp(self.min, self.max)
    }
}

pub use units::nearest_rank;

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(values: impl IntoIterator<Item = u64>) -> Distribution {
        let mut distribution = Distribution::new();
        for value in values {
            distribution.add(value);
        }
        distribution
    }

    /// Merging gives the percentiles of adding every value to one distribution, in
    /// each regime: exact + exact, exact + histogram and histogram + histogram.
    #[test]
    fn merged_distributions_answer_as_one() {
        let with_limit = |limit: usize, values: std::ops::Range<u64>| {
            let mut d = Distribution::with_exact_limit(limit);
            values.for_each(|v| d.add(v * 1_000 + 7));
            d
        };
        let rows: &[(usize, std::ops::Range<u64>, std::ops::Range<u64>, bool)] = &[
            (100, 0..10, 10..30, true),
            (100, 0..50, 50..200, false),
            (100, 0..500, 500..900, false),
            (100, 0..0, 0..40, true),
            (100, 0..40, 0..0, true),
        ];
        for (limit, a, b, exact) in rows {
            let mut merged = with_limit(*limit, a.clone());
            merged.merge(&with_limit(*limit, b.clone()));
            let whole = with_limit(*limit, a.start.min(b.start)..a.end.max(b.end));
            assert_eq!(merged.is_exact(), *exact, "{a:?} + {b:?}");
            assert_eq!(
                (merged.count(), merged.sum(), merged.min(), merged.max()),
                (whole.count(), whole.sum(), whole.min(), whole.max()),
                "{a:?} + {b:?}"
            );
            let (merged, whole) = (merged.into_quantiles(), whole.into_quantiles());
            for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
                assert_eq!(merged.quantile(q), whole.quantile(q), "{a:?} + {b:?} q {q}");
            }
        }
    }

    #[test]
    fn small_sets_are_exact() {
        let distribution = filled([5, 1, 4, 2, 3, 10, 9, 8, 7, 6]);
        assert!(distribution.is_exact());
        assert_eq!(
            (
                distribution.count(),
                distribution.sum(),
                distribution.min(),
                distribution.max(),
                distribution.mean()
            ),
            (10, 55, 1, 10, 5)
        );
        let quantiles = distribution.into_quantiles();
        let rows: &[(f64, u64)] = &[(0.0, 1), (0.5, 5), (0.9, 9), (0.95, 10), (1.0, 10)];
        for &(q, want) in rows {
            assert_eq!(quantiles.quantile(q), want, "q {q}");
        }
    }

    #[test]
    fn quantiles_so_far_match_the_sealed_ones_in_both_regimes() {
        for (exact_limit, len) in [(1000, 10), (1000, 999), (64, 5000), (64, 0)] {
            let mut distribution = Distribution::with_exact_limit(exact_limit);
            for k in 0..len {
                distribution.add((k * 7919 % 10_007) * 1000);
            }
            let sealed = distribution.clone().into_quantiles();
            for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
                assert_eq!(
                    distribution.quantile_so_far(q),
                    sealed.quantile(q),
                    "limit {exact_limit} len {len} q {q}"
                );
            }
        }
    }

    #[test]
    fn empty_is_all_zero() {
        let distribution = Distribution::new();
        assert_eq!(
            (distribution.min(), distribution.max(), distribution.mean()),
            (0, 0, 0)
        );
        assert_eq!(distribution.into_quantiles().quantile(0.5), 0);
    }

    #[test]
    fn large_sets_stay_within_three_significant_digits() {
        // Values 1..=N µs in ns, scrambled so order cannot help.
        let n = EXACT_LIMIT as u64 * 2;
        let distribution = filled((0..n).map(|i| ((i * 7919) % n + 1) * 1_000));
        assert!(!distribution.is_exact(), "spilled into the histogram");
        assert_eq!(distribution.min(), 1_000);
        assert_eq!(distribution.max(), n * 1_000);
        assert_eq!(distribution.sum(), u128::from(n * (n + 1) / 2 * 1_000));
        let quantiles = distribution.into_quantiles();
        for q in [0.5, 0.9, 0.99, 0.999] {
            let exact = nearest_rank(q, n) * 1_000;
            let got = quantiles.quantile(q);
            let error = (got as f64 - exact as f64).abs() / exact as f64;
            assert!(error < 1e-3, "q {q}: got {got}, exact {exact}");
        }
        assert_eq!(quantiles.quantile(1.0), n * 1_000, "max is exact");
        assert_eq!(quantiles.quantile(0.0), 1_000, "min is exact");
    }

    #[test]
    fn memory_is_flat_beyond_the_limit() {
        let chunks = |distribution: &Distribution| match &distribution.store {
            Store::Histogram(histogram) => histogram.allocated_chunks(),
            Store::Exact(_) => panic!("must have spilled"),
        };
        // Latencies from 100 µs to 10 s.
        let latency = |i: u64| 100_000 + (i * 7919 % 100_000) * 100_000;
        let mut distribution = Distribution::with_exact_limit(1000);
        // Every latency of the range once, then a million more of the same.
        for i in 0..100_000 {
            distribution.add(latency(i));
        }
        let before = chunks(&distribution);
        assert!(before <= 18, "{before} chunks for 17 powers of two");
        for i in 0..1_000_000 {
            distribution.add(latency(i));
        }
        assert_eq!(chunks(&distribution), before, "more values, same memory");
        for value in [0, u64::MAX] {
            distribution.add(value);
        }
        assert!(chunks(&distribution) <= CHUNKS);
        let quantiles = distribution.into_quantiles();
        assert_eq!(
            (quantiles.quantile(0.0), quantiles.quantile(1.0)),
            (0, u64::MAX)
        );
    }

    #[test]
    fn the_exact_limit_is_where_the_histogram_starts() {
        let rows: &[(usize, u64, bool)] = &[(4, 4, true), (4, 5, false), (0, 1, false)];
        for &(limit, values, exact) in rows {
            let mut distribution = Distribution::with_exact_limit(limit);
            for value in 0..values {
                distribution.add(value);
            }
            assert_eq!(
                distribution.is_exact(),
                exact,
                "limit {limit}, {values} values"
            );
        }
    }

    #[test]
    fn buckets_cover_every_value_within_a_thousandth() {
        let rows: &[(u64, usize)] = &[
            (0, 0),
            (2047, 2047),
            (2048, 2048),
            (2049, 2048),
            (4095, 3071),
            (4096, 3072),
            (u64::MAX, HISTOGRAM_LEN - 1),
        ];
        for &(value, bucket) in rows {
            assert_eq!(bucket_of(value), bucket, "value {value}");
            let (low, high) = bucket_range(bucket);
            assert!(low <= value && value <= high, "{value} in [{low}, {high}]");
        }
        // Buckets tile the range: each starts right after the previous one ends.
        for bucket in 1..HISTOGRAM_LEN {
            let (low, high) = bucket_range(bucket);
            assert_eq!(low, bucket_range(bucket - 1).1 + 1, "bucket {bucket}");
            assert!(
                (high - low) as f64 <= low as f64 / 1024.0,
                "bucket {bucket} too wide"
            );
            assert_eq!(bucket_of(low), bucket);
            assert_eq!(bucket_of(high), bucket);
        }
    }
}
