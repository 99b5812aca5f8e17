//! `hist[0,1ms,5ms]`: vegeta's latency histogram. [`Buckets`] parses the bounds,
//! [`BucketCounts`] counts exactly (every record, no estimate), [`write_hist`] prints
//! vegeta's table.

use std::fmt::Write as _;

use units::GoDuration;

use crate::ReportError;
use crate::tabwriter::align;

/// Histogram bounds in nanoseconds, increasing, starting at 0. A value `v` falls in
/// bucket `i` when `bounds[i] <= v < bounds[i + 1]` (the last bucket is open-ended).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buckets {
    bounds_ns: Vec<u64>,
}

impl Buckets {
    /// Bounds as given, with a 0 bucket in front when the first bound is above 0 (as
    /// vegeta v12 does), so every value has a bucket.
    pub fn new(mut bounds_ns: Vec<u64>) -> Buckets {
        if bounds_ns.first().is_none_or(|&first| first > 0) {
            bounds_ns.insert(0, 0);
        }
        Buckets { bounds_ns }
    }

    /// Parses vegeta's `[0,1ms,5ms]`: Go durations, comma-separated, in brackets.
    /// Unlike vegeta we reject bounds that do not increase.
    pub fn parse(spec: &str) -> Result<Buckets, ReportError> {
        let fail = |reason: String| ReportError::Buckets {
            input: spec.to_owned(),
            reason,
        };
        let inner = spec
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .ok_or_else(|| fail("want bounds in brackets, like [0,1ms,5ms]".to_owned()))?;
        let mut bounds_ns = Vec::new();
        for text in inner.split(',') {
            let bound = units::parse_duration(text.trim()).map_err(|err| fail(err.to_string()))?;
            let bound_ns = u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX);
            if let Some(&previous) = bounds_ns.last()
                && bound_ns <= previous
            {
                return Err(fail(format!(
                    "bounds must increase: {} after {}",
                    text.trim(),
                    GoDuration(std::time::Duration::from_nanos(previous))
                )));
            }
            bounds_ns.push(bound_ns);
        }
        Ok(Buckets::new(bounds_ns))
    }

    /// The bucket bounds, nanoseconds.
    pub fn bounds_ns(&self) -> &[u64] {
        &self.bounds_ns
    }
}

/// Exact counts per bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketCounts {
    buckets: Buckets,
    counts: Vec<u64>,
    total: u64,
}

impl BucketCounts {
    /// Empty counts over `buckets`.
    pub fn new(buckets: Buckets) -> BucketCounts {
        let counts = vec![0; buckets.bounds_ns.len()];
        BucketCounts {
            buckets,
            counts,
            total: 0,
        }
    }

    #[inline]
    /// Counts one latency, nanoseconds.
    pub fn add(&mut self, latency_ns: u64) {
        // bounds[0] is 0, so at least one bound is <= any value.
        let index = self
            .buckets
            .bounds_ns
            .partition_point(|&bound| bound <= latency_ns)
            .saturating_sub(1);
        self.counts[index] += 1;
        self.total += 1;
    }

    /// The bucket bounds, nanoseconds.
    pub fn bounds_ns(&self) -> &[u64] {
        &self.buckets.bounds_ns
    }

    /// Latencies counted per bucket.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Latencies counted.
    pub fn total(&self) -> u64 {
        self.total
    }
}

/// vegeta's `hist` table: bucket bounds as Go durations (unrounded, the last one
/// `+Inf`), count, percentage and a bar of up to 75 `#`.
pub fn write_hist(out: &mut String, counts: &BucketCounts) {
    let mut text = String::from("Bucket\t\t#\t%\tHistogram\n");
    let bounds = counts.bounds_ns();
    for (index, &count) in counts.counts().iter().enumerate() {
        let ratio = count as f64 / counts.total().max(1) as f64;
        let low = go_duration(bounds[index]);
        let high = bounds
            .get(index + 1)
            .map_or_else(|| "+Inf".to_owned(), |&b| go_duration(b));
        let bar = "#".repeat((ratio * 75.0) as usize);
        let _ = writeln!(
            text,
            "[{low},\t{high}]\t{count}\t{:.2}%\t{bar}",
            ratio * 100.0
        );
    }
    out.push_str(&align(&text, &[]));
}

fn go_duration(ns: u64) -> String {
    GoDuration(std::time::Duration::from_nanos(ns)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn parses_bucket_specs() {
        let rows: &[(&str, Result<&[u64], &str>)] = &[
            ("[0,1ms,5ms]", Ok(&[0, MS, 5 * MS])),
            ("[ 0 , 1ms , 5ms ]", Ok(&[0, MS, 5 * MS])),
            // A first bound above 0 gets a 0 bucket in front, as in vegeta v12.
            ("[1ms,5ms]", Ok(&[0, MS, 5 * MS])),
            ("[0]", Ok(&[0])),
            ("[1.5s]", Ok(&[0, 1_500 * MS])),
            ("0,1ms", Err("want bounds in brackets")),
            ("[0,1ms", Err("want bounds in brackets")),
            ("[]", Err("empty")),
            ("[0,,1ms]", Err("empty")),
            ("[0,1x]", Err("unknown unit")),
            ("[0,5ms,1ms]", Err("bounds must increase: 1ms after 5ms")),
            ("[0,1ms,1ms]", Err("bounds must increase")),
            ("[0,-1ms]", Err("negative")),
        ];
        for (spec, want) in rows {
            match (Buckets::parse(spec), want) {
                (Ok(got), Ok(want)) => assert_eq!(got.bounds_ns(), *want, "{spec}"),
                (Err(err), Err(want)) => {
                    let message = err.to_string();
                    assert!(message.contains(want), "{spec}: {message}");
                    assert!(
                        message.contains(&format!("{spec:?}")),
                        "names input: {message}"
                    );
                }
                (got, want) => panic!("{spec}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn counts_half_open_buckets() {
        let mut counts = BucketCounts::new(Buckets::new(vec![0, MS, 5 * MS]));
        for latency in [0, MS - 1, MS, 5 * MS - 1, 5 * MS, u64::MAX] {
            counts.add(latency);
        }
        assert_eq!(counts.counts(), &[2, 2, 2]);
        assert_eq!(counts.total(), 6);
    }

    #[test]
    fn prints_vegeta_table() {
        let mut counts = BucketCounts::new(Buckets::new(vec![0, MS, 5 * MS]));
        for latency in [10, 20, 30, MS + 500_000] {
            counts.add(latency);
        }
        let mut out = String::new();
        write_hist(&mut out, &counts);
        // 3 of 4 is 75% and 56 hashes (int(0.75*75)); 1 of 4 is 25% and 18.
        let want = format!(
            "Bucket         #  %       Histogram\n\
             [0s,    1ms]   3  75.00%  {}\n\
             [1ms,   5ms]   1  25.00%  {}\n\
             [5ms,   +Inf]  0  0.00%   \n",
            "#".repeat(56),
            "#".repeat(18)
        );
        assert_eq!(out, want);
    }
}
