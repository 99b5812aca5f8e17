//! Whether B differs from A beyond the noise.
//!
//! The samples are per-second windows of one run (a step's throughput, its p99 each
//! second) or one figure per repeat of a cell. The test is a seeded bootstrap of the
//! difference of means: it assumes no distribution (latency figures are skewed and
//! repeats are few, so a t-test's normality is a poor bet), it gives an interval a reader
//! can quote beside the improvement factor, and the seed makes a report repeatable.
//! Per-second windows are autocorrelated (a slow second follows a slow second), so they
//! are resampled in circular blocks ([`block_len_for`]); repeats are independent and use
//! blocks of one. A difference is beyond the noise when the interval excludes zero and
//! each side has at least [`MIN_SAMPLES`] samples.

use crate::AnalysisError;

/// Fewer samples than this on a side never count as beyond the noise.
pub const MIN_SAMPLES: usize = 3;

/// Which way is better for a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Throughput, success ratio.
    HigherIsBetter,
    /// Latency, errors, send lag.
    LowerIsBetter,
}

/// How the bootstrap runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompareConfig {
    /// Bootstrap resamples (2000).
    pub resamples: usize,
    /// Two-sided confidence of the interval (0.95).
    pub confidence: f64,
    /// Length of the resampled blocks: 1 for independent repeats, [`block_len_for`] for windows.
    pub block_len: usize,
    /// The generator's seed, so the same inputs give the same interval.
    pub seed: u64,
}

impl Default for CompareConfig {
    fn default() -> Self {
        CompareConfig {
            resamples: 2000,
            confidence: 0.95,
            block_len: 1,
            seed: 0x010A_D1AB,
        }
    }
}

/// A block length for `n` autocorrelated windows: the cube root, a usual rule for the
/// circular block bootstrap.
pub fn block_len_for(n: usize) -> usize {
    ((n as f64).cbrt().round() as usize).max(1)
}

/// B against A for one figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Difference {
    /// Mean of A.
    pub mean_a: f64,
    /// Mean of B.
    pub mean_b: f64,
    /// B's mean over A's (None when A's mean is 0).
    pub ratio: Option<f64>,
    /// How many times better B is than A (>1: better; None when a mean is 0).
    pub improvement: Option<f64>,
    /// Lower end of the confidence interval of `mean_b - mean_a`.
    pub diff_low: f64,
    /// Upper end of the confidence interval of `mean_b - mean_a`.
    pub diff_high: f64,
    /// The interval excludes zero and both sides have enough samples.
    pub beyond_noise: bool,
}

impl Difference {
    /// Whether B is worse than A by more than `threshold` (a share, 0.05 = 5%) of A's
    /// mean, beyond the noise: a regression to fail a CI job on.
    pub fn regressed(&self, direction: Direction, threshold: f64) -> bool {
        let worse_by = match direction {
            Direction::HigherIsBetter => self.mean_a - self.mean_b,
            Direction::LowerIsBetter => self.mean_b - self.mean_a,
        };
        self.beyond_noise && worse_by > threshold * self.mean_a.abs()
    }
}

/// Compares B with A.
pub fn compare_samples(
    a: &[f64],
    b: &[f64],
    direction: Direction,
    config: &CompareConfig,
) -> Result<Difference, AnalysisError> {
    let a: Vec<f64> = a.iter().copied().filter(|v| v.is_finite()).collect();
    let b: Vec<f64> = b.iter().copied().filter(|v| v.is_finite()).collect();
    if a.is_empty() {
        return Err(AnalysisError::NoSamples("A"));
    }
    if b.is_empty() {
        return Err(AnalysisError::NoSamples("B"));
    }
    let (mean_a, mean_b) = (mean(&a), mean(&b));
    let (diff_low, diff_high) = interval(&a, &b, config);
    let enough = a.len() >= MIN_SAMPLES && b.len() >= MIN_SAMPLES;
    let ratio = (mean_a != 0.0).then(|| mean_b / mean_a);
    // Both means must be non-zero: 0 errors against some is no factor (the old code
    // said 0x for lower-is-better figures).
    let improvement = match direction {
        Direction::HigherIsBetter => ratio.filter(|_| mean_b != 0.0),
        Direction::LowerIsBetter => (mean_a != 0.0 && mean_b != 0.0).then(|| mean_a / mean_b),
    };
    Ok(Difference {
        mean_a,
        mean_b,
        ratio,
        improvement,
        diff_low,
        diff_high,
        beyond_noise: enough && (diff_low > 0.0 || diff_high < 0.0),
    })
}

/// The bootstrap interval of `mean(b) - mean(a)`.
fn interval(a: &[f64], b: &[f64], config: &CompareConfig) -> (f64, f64) {
    let mut random = SplitMix64(config.seed);
    let mut diffs: Vec<f64> = (0..config.resamples.max(1))
        .map(|_| {
            resampled_mean(b, config.block_len, &mut random)
                - resampled_mean(a, config.block_len, &mut random)
        })
        .collect();
    diffs.sort_by(f64::total_cmp);
    let tail = (1.0 - config.confidence.clamp(0.0, 1.0)) / 2.0;
    let at = |q: f64| diffs[((q * (diffs.len() - 1) as f64).round() as usize).min(diffs.len() - 1)];
    (at(tail), at(1.0 - tail))
}

/// The mean of a circular block resample of `values` (the same length).
fn resampled_mean(values: &[f64], block_len: usize, random: &mut SplitMix64) -> f64 {
    let n = values.len();
    let block_len = block_len.clamp(1, n);
    let mut sum = 0.0;
    let mut taken = 0;
    while taken < n {
        let start = (random.next() % n as u64) as usize;
        for offset in 0..block_len.min(n - taken) {
            sum += values[(start + offset) % n];
        }
        taken += block_len.min(n - taken);
    }
    sum / n as f64
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// A small, seedable generator: the bootstrap needs repeatable indices, not cryptography.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values around `centre`, spread +-`spread`, from a seeded generator.
    fn noisy(n: usize, centre: f64, spread: f64, seed: u64) -> Vec<f64> {
        let mut random = SplitMix64(seed);
        (0..n)
            .map(|_| centre + spread * ((random.next() % 2001) as f64 / 1000.0 - 1.0))
            .collect()
    }

    /// The same windows in reverse order, each 1% higher.
    fn one_percent_more(values: Vec<f64>) -> Vec<f64> {
        values.into_iter().rev().map(|v| v * 1.01).collect()
    }

    #[test]
    fn differences() {
        let windows = CompareConfig {
            block_len: block_len_for(60),
            ..CompareConfig::default()
        };
        let rows = [
            // (name, a, b, direction, beyond noise, improvement)
            (
                "same server twice",
                noisy(60, 1000.0, 50.0, 1),
                noisy(60, 1000.0, 50.0, 2),
                Direction::HigherIsBetter,
                false,
                1.0,
            ),
            (
                "twice the throughput",
                noisy(60, 1000.0, 50.0, 3),
                noisy(60, 2000.0, 50.0, 4),
                Direction::HigherIsBetter,
                true,
                2.0,
            ),
            (
                "half the latency",
                noisy(60, 10.0, 1.0, 5),
                noisy(60, 5.0, 1.0, 6),
                Direction::LowerIsBetter,
                true,
                2.0,
            ),
            (
                "twice the latency",
                noisy(60, 5.0, 1.0, 7),
                noisy(60, 10.0, 1.0, 8),
                Direction::LowerIsBetter,
                true,
                0.5,
            ),
            (
                "1% apart in wide noise",
                noisy(60, 1000.0, 300.0, 9),
                one_percent_more(noisy(60, 1000.0, 300.0, 9)),
                Direction::HigherIsBetter,
                false,
                1.01,
            ),
        ];
        for (name, a, b, direction, beyond, improvement) in rows {
            let d = compare_samples(&a, &b, direction, &windows).expect("samples");
            assert_eq!(d.beyond_noise, beyond, "{name}: {d:?}");
            let got = d.improvement.expect("non-zero means");
            assert!(
                (got - improvement).abs() < 0.05 * improvement,
                "{name}: improvement {got}"
            );
            assert!(
                d.diff_low <= d.mean_b - d.mean_a && d.mean_b - d.mean_a <= d.diff_high,
                "{name}: {d:?}"
            );
        }
    }

    #[test]
    fn too_few_samples_are_never_beyond_the_noise() {
        let d = compare_samples(
            &[100.0, 101.0],
            &[200.0, 201.0],
            Direction::HigherIsBetter,
            &CompareConfig::default(),
        )
        .expect("samples");
        assert!(!d.beyond_noise);
        assert_eq!(d.ratio, Some(200.5 / 100.5));
    }

    #[test]
    fn repeats_of_three_can_tell_a_clear_difference() {
        let d = compare_samples(
            &[100.0, 103.0, 98.0],
            &[150.0, 149.0, 155.0],
            Direction::HigherIsBetter,
            &CompareConfig::default(),
        )
        .expect("samples");
        assert!(d.beyond_noise, "{d:?}");
    }

    #[test]
    fn the_same_seed_gives_the_same_interval() {
        let (a, b) = (noisy(30, 10.0, 3.0, 11), noisy(30, 11.0, 3.0, 12));
        let config = CompareConfig::default();
        let first = compare_samples(&a, &b, Direction::LowerIsBetter, &config).expect("samples");
        let again = compare_samples(&a, &b, Direction::LowerIsBetter, &config).expect("samples");
        assert_eq!(first, again);
        let other = compare_samples(
            &a,
            &b,
            Direction::LowerIsBetter,
            &CompareConfig { seed: 99, ..config },
        )
        .expect("samples");
        assert_ne!(first.diff_low, other.diff_low);
    }

    #[test]
    fn regressions_need_the_threshold_and_the_noise() {
        let config = CompareConfig::default();
        let slower = compare_samples(
            &[10.0, 10.1, 9.9, 10.0],
            &[12.0, 12.1, 11.9, 12.0],
            Direction::LowerIsBetter,
            &config,
        )
        .expect("samples");
        assert!(slower.regressed(Direction::LowerIsBetter, 0.05));
        assert!(!slower.regressed(Direction::LowerIsBetter, 0.25));
        let faster = compare_samples(
            &[12.0, 12.1, 11.9, 12.0],
            &[10.0, 10.1, 9.9, 10.0],
            Direction::LowerIsBetter,
            &config,
        )
        .expect("samples");
        assert!(!faster.regressed(Direction::LowerIsBetter, 0.05));
    }

    #[test]
    fn bad_samples() {
        let config = CompareConfig::default();
        let rows: [(&[f64], &[f64], Option<AnalysisError>); 4] = [
            (&[], &[1.0], Some(AnalysisError::NoSamples("A"))),
            (&[1.0], &[f64::NAN], Some(AnalysisError::NoSamples("B"))),
            (&[0.0, 0.0, 0.0], &[1.0, 1.0, 1.0], None),
            (&[f64::INFINITY, 1.0], &[1.0], None),
        ];
        for (a, b, want) in rows {
            let got = compare_samples(a, b, Direction::HigherIsBetter, &config);
            assert_eq!(got.as_ref().err(), want.as_ref(), "{a:?} {b:?}");
        }
        let zero = compare_samples(
            &[0.0, 0.0, 0.0],
            &[1.0, 1.0, 1.0],
            Direction::HigherIsBetter,
            &config,
        )
        .expect("ok");
        assert_eq!((zero.ratio, zero.improvement), (None, None));
    }

    #[test]
    fn a_zero_mean_on_either_side_has_no_improvement_factor() {
        let config = CompareConfig::default();
        let (zero, some) = ([0.0, 0.0, 0.0], [1.0, 2.0, 3.0]);
        for direction in [Direction::HigherIsBetter, Direction::LowerIsBetter] {
            for (a, b) in [(&zero, &some), (&some, &zero)] {
                let d = compare_samples(a, b, direction, &config).expect("samples");
                assert_eq!(d.improvement, None, "{direction:?} {a:?} {b:?}: {d:?}");
            }
        }
    }
}
