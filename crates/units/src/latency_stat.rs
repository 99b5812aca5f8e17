//! [`LatencyStat`]: a latency statistic by the name users write (`p99`, `p99.9`, `max`),
//! read by a stop rule, bounded by a plan's SLO and judged by `analysis`; and
//! [`nearest_rank`], the one quantile rule behind every percentile loadlab prints (the
//! engine's stop rules, the report, the live view, a plan's steps). It lives here
//! because each of those crates already reads its user's spelling with this crate.

use std::fmt;

/// A latency statistic: what a stop rule reads of a second, and what a plan's SLO bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LatencyStat {
    /// The median.
    P50,
    /// The 90th percentile.
    P90,
    /// The 95th percentile.
    P95,
    /// The 99th percentile.
    P99,
    /// The 99.9th percentile.
    P999,
    /// The slowest request.
    Max,
    /// The arithmetic mean.
    Mean,
}

impl LatencyStat {
    /// Every statistic with the names it is written as (the first is how it prints).
    const NAMES: [(LatencyStat, &'static [&'static str]); 7] = [
        (LatencyStat::P50, &["p50", "median"]),
        (LatencyStat::P90, &["p90"]),
        (LatencyStat::P95, &["p95"]),
        (LatencyStat::P99, &["p99"]),
        (LatencyStat::P999, &["p99.9", "p999"]),
        (LatencyStat::Max, &["max"]),
        (LatencyStat::Mean, &["mean"]),
    ];

    /// The statistic a name stands for (`p99`, `P99.9`, `p999`, `max`, ...), any case.
    pub fn from_name(name: &str) -> Option<LatencyStat> {
        let name = name.trim().to_ascii_lowercase();
        Self::NAMES
            .iter()
            .find(|(_, names)| names.contains(&name.as_str()))
            .map(|(stat, _)| *stat)
    }

    /// How it prints: `p50`, `p90`, `p95`, `p99`, `p99.9`, `max`, `mean`.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(stat, _)| *stat == self)
            .map_or("?", |(_, names)| names[0])
    }
}

/// The 1-based rank of quantile `q` among `n` values: `ceil(q * n)`, at least 1 (the
/// nearest-rank percentile, as vegeta and HdrHistogram read it).
pub fn nearest_rank(q: f64, n: u64) -> u64 {
    let rank = (q.clamp(0.0, 1.0) * n as f64).ceil() as u64;
    rank.clamp(1, n.max(1))
}

impl fmt::Display for LatencyStat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_rows() {
        let rows: &[(f64, u64, u64)] = &[
            (0.0, 10, 1),
            (0.1, 10, 1),
            (0.5, 10, 5),
            (0.51, 10, 6),
            (0.99, 100, 99),
            (0.999, 100, 100),
            (1.0, 10, 10),
            (1.5, 10, 10),
            (-1.0, 10, 1),
            (0.5, 1, 1),
            (0.5, 0, 1),
        ];
        for &(q, n, want) in rows {
            assert_eq!(nearest_rank(q, n), want, "q {q} n {n}");
        }
    }
}
