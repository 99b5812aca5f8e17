//! [`Buckets`]: a sparse log-linear histogram small enough to send once a second per
//! shard and exact enough (< 0.8% relative error) for stop rules on merged figures.
//!
//! The report's `Distribution` keeps 1024 buckets per power of two (0.1%): sent
//! sparse, a busy second of it is tens of KB. Here each power of two splits into 128
//! buckets, so a second's latencies are a few hundred `[bucket, count]` pairs.

use serde::{Deserialize, Serialize};

/// Values below this have a bucket each.
const EXACT_BELOW: u64 = 256;
const SUB_BUCKET_BITS: u32 = 8;
const HALF: u64 = 128;

/// Counts per bucket, as sorted `[bucket, count]` pairs (JSON arrays of two numbers).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Buckets(Vec<(u32, u64)>);

impl Buckets {
    /// The histogram of `values`.
    pub fn of(values: &mut [u64]) -> Buckets {
        values.sort_unstable();
        let mut pairs: Vec<(u32, u64)> = Vec::new();
        for &value in values.iter() {
            let bucket = bucket_of(value);
            match pairs.last_mut() {
                Some((last, count)) if *last == bucket => *count += 1,
                _ => pairs.push((bucket, 1)),
            }
        }
        Buckets(pairs)
    }

    /// Values counted.
    pub fn count(&self) -> u64 {
        self.0.iter().map(|(_, count)| count).sum()
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &Buckets) {
        let (mine, theirs) = (&self.0, &other.0);
        let mut merged = Vec::with_capacity(mine.len() + theirs.len());
        let (mut i, mut j) = (0, 0);
        loop {
            match (mine.get(i), theirs.get(j)) {
                (Some(a), Some(b)) if a.0 == b.0 => {
                    merged.push((a.0, a.1 + b.1));
                    (i, j) = (i + 1, j + 1);
                }
                (Some(a), Some(b)) if a.0 < b.0 => {
                    merged.push(*a);
                    i += 1;
                }
                (Some(a), None) => {
                    merged.push(*a);
                    i += 1;
                }
                (_, Some(b)) => {
                    merged.push(*b);
                    j += 1;
                }
                (None, None) => break,
            }
        }
        self.0 = merged;
    }

    /// The highest value of the bucket holding the nearest-rank `q` quantile (0 when
    /// empty), as the report's percentiles read.
    pub fn quantile(&self, q: f64) -> u64 {
        let total = self.count();
        if total == 0 {
            return 0;
        }
        let rank = report::nearest_rank(q, total);
        let mut seen = 0;
        for &(bucket, count) in &self.0 {
            seen += count;
            if seen >= rank {
                return bucket_high(bucket);
            }
        }
        self.0.last().map_or(0, |&(bucket, _)| bucket_high(bucket))
    }

    /// Buckets in order, each once, each one that exists (a shard's answer is checked).
    pub fn is_well_formed(&self) -> bool {
        self.0.windows(2).all(|pair| pair[0].0 < pair[1].0)
            && self
                .0
                .iter()
                .all(|&(bucket, _)| bucket <= bucket_of(u64::MAX))
    }
}

fn bucket_of(value: u64) -> u32 {
    if value < EXACT_BELOW {
        return value as u32;
    }
    let shift = (u64::BITS - value.leading_zeros()) - SUB_BUCKET_BITS;
    (u64::from(shift) * HALF + (value >> shift)) as u32
}

fn bucket_high(bucket: u32) -> u64 {
    let bucket = u64::from(bucket);
    if bucket < EXACT_BELOW {
        return bucket;
    }
    let shift = bucket / HALF - 1;
    let low = (bucket - shift * HALF) << shift;
    low.saturating_add((1u64 << shift) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_tight() {
        let rows: [(u64, u64); 6] = [
            (0, 0),
            (255, 255),
            (256, 257),
            (1_000_000, 1_003_519),
            (2_000_000_000, 2_004_877_311),
            (u64::MAX, u64::MAX),
        ];
        for (value, high) in rows {
            assert_eq!(bucket_high(bucket_of(value)), high, "{value}");
            assert!(high >= value && (high - value) as f64 <= value as f64 / 127.0);
        }
        assert_eq!(
            bucket_of(511) + 1,
            bucket_of(512),
            "no gap at a power of two"
        );
    }

    #[test]
    fn merged_quantiles_are_those_of_all_values() {
        let mut a: Vec<u64> = (1..=500).map(|ms| ms * 1_000_000).collect();
        let mut b: Vec<u64> = (501..=1000).map(|ms| ms * 1_000_000).collect();
        let mut merged = Buckets::of(&mut a);
        merged.merge(&Buckets::of(&mut b));
        assert_eq!(merged.count(), 1000);
        assert!(merged.is_well_formed());
        let p99 = merged.quantile(0.99);
        assert!(
            (990_000_000..=990_000_000 + 990_000_000 / 127).contains(&p99),
            "{p99}"
        );
        let p50 = merged.quantile(0.50);
        assert!((500_000_000..=504_000_000).contains(&p50), "{p50}");
        assert_eq!(Buckets::default().quantile(0.5), 0);
    }

    #[test]
    fn a_malformed_answer_is_seen() {
        assert!(!Buckets(vec![(5, 1), (5, 2)]).is_well_formed());
        assert!(!Buckets(vec![(u32::MAX, 1)]).is_well_formed());
    }
}
