//! Scales, domains and ticks: linear value axes with 1-2-5 steps, log axes by decade,
//! the time axis in steps a person counts in (10 s, 1 min, 15 min, ...), and the
//! "nines" axis of the percentile curve. Byte axes ([`Steps::Binary`]) step by powers
//! of two of KiB, MiB, GiB instead, so their labels read `512 MiB`, `1 GiB`, not
//! `477 MiB`. `page.js` mirrors these rules for zoomed views.

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Equal steps for equal differences.
    Linear,
    /// Equal steps for equal ratios: a slow tail beside fast requests.
    Log,
}

impl Scale {
    /// The scale's name on the page (`linear`, `log`).
    pub fn name(self) -> &'static str {
        match self {
            Scale::Linear => "linear",
            Scale::Log => "log",
        }
    }
}

/// How a value axis steps: 1-2-5 times a power of ten, or (bytes) a power of two
/// times a power of 1024.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steps {
    Decimal,
    Binary,
}

/// Byte axes below this step like any other (0, 200 B, 400 B, ...).
const KIB: f64 = 1024.0;

/// The values an axis spans. For a log scale both ends are positive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Domain {
    pub min: f64,
    pub max: f64,
}

impl Domain {
    /// Where `value` falls, 0 at `min` and 1 at `max`; values a log scale cannot show
    /// (zero, negative) sit at the bottom.
    pub fn fraction(&self, scale: Scale, value: f64) -> f64 {
        match scale {
            Scale::Linear => (value - self.min) / (self.max - self.min),
            Scale::Log => {
                let value = value.max(self.min);
                (value.log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
            }
        }
    }
}

/// Time steps in seconds, from 1 ms to a week.
const TIME_STEPS_S: [f64; 29] = [
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0,
    120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 10800.0, 21600.0, 43200.0, 86400.0,
    172_800.0, 604_800.0,
];

/// Room above the highest value of a linear axis.
const HEADROOM: f64 = 1.05;
/// At most this many labelled ticks on an axis.
const MAX_TICKS: f64 = 10.0;

/// A value domain that holds `values` (non-finite ones are skipped): from zero to a
/// round number at or above the largest for a linear scale, whole decades (powers of
/// two for [`Steps::Binary`]) for log.
pub fn value_domain(values: impl Iterator<Item = f64>, scale: Scale, steps: Steps) -> Domain {
    let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
    for value in values.filter(|v| v.is_finite()) {
        if scale == Scale::Log && value <= 0.0 {
            continue;
        }
        (low, high) = (low.min(value), high.max(value));
    }
    match scale {
        Scale::Linear => {
            // 5% headroom, so the highest value does not run along the frame.
            let high = if high.is_finite() && high > 0.0 {
                high * HEADROOM
            } else {
                1.0
            };
            let min = if low.is_finite() && low < 0.0 {
                low
            } else {
                0.0
            };
            let step = step_for(high - min, 5.0, steps);
            Domain {
                min: (min / step).floor() * step,
                max: (high / step).ceil() * step,
            }
        }
        Scale::Log => {
            if !high.is_finite() {
                return Domain {
                    min: 1.0,
                    max: 10.0,
                };
            }
            if steps == Steps::Binary {
                // Headroom as on a linear axis: a limit of exactly 8 GiB would run
                // along the frame.
                let min = 2f64.powf(low.log2().floor());
                let max = 2f64.powf((high * HEADROOM).log2().ceil()).max(min * 2.0);
                return Domain { min, max };
            }
            let min = step_at_or_below(low);
            let mut max = step_at_or_above(high);
            if max <= min {
                max = step_at_or_above(min * 1.5);
            }
            Domain { min, max }
        }
    }
}

/// A linear `domain` of `values` that never go above `ceiling` (a share's 100%) ends
/// there: the headroom and the rounding must not draw room for what cannot be.
pub fn capped(domain: Domain, scale: Scale, values: &[f64], ceiling: f64) -> Domain {
    let within = values
        .iter()
        .filter(|v| v.is_finite())
        .all(|&v| v <= ceiling);
    if scale == Scale::Linear && within && domain.max > ceiling {
        Domain {
            max: ceiling,
            ..domain
        }
    } else {
        domain
    }
}

/// The largest of 1, 2, 5 times a power of ten at or below `value` (> 0).
fn step_at_or_below(value: f64) -> f64 {
    let decade = 10f64.powf(value.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|step| step * decade)
        .find(|&v| v <= value * (1.0 + 1e-9))
        .unwrap_or(decade)
}

/// The smallest of 1, 2, 5 times a power of ten at or above `value` (> 0).
fn step_at_or_above(value: f64) -> f64 {
    let decade = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|step| step * decade)
        .find(|&v| v >= value * (1.0 - 1e-9))
        .unwrap_or(decade * 10.0)
}

/// A 1-2-5 step that cuts `span` into about `count` parts.
pub fn nice_step(span: f64, count: f64) -> f64 {
    if !(span.is_finite() && span > 0.0) {
        return 1.0;
    }
    let raw = span / count;
    let power = 10f64.powf(raw.log10().floor());
    let mantissa = raw / power;
    let nice = if mantissa <= 1.0 {
        1.0
    } else if mantissa <= 2.0 {
        2.0
    } else if mantissa <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}

/// A step of `steps` that cuts `span` into about `count` parts.
pub fn step_for(span: f64, count: f64, steps: Steps) -> f64 {
    match steps {
        Steps::Decimal => nice_step(span, count),
        Steps::Binary => binary_step(span, count),
    }
}

/// A power of two times a power of 1024 that cuts `span` into about `count` parts, at
/// least as coarse as asked: 300 MiB -> 512 MiB, 600 MiB -> 1 GiB, 3 GiB -> 4 GiB.
pub fn binary_step(span: f64, count: f64) -> f64 {
    if !(span.is_finite() && span > 0.0) {
        return 1.0;
    }
    if span < KIB {
        return nice_step(span, count);
    }
    2f64.powf((span / count).log2().ceil())
}

/// Ticks every step inside the domain.
pub fn linear_ticks(domain: Domain, steps: Steps) -> Vec<f64> {
    let step = step_for(domain.max - domain.min, 5.0, steps);
    multiples(domain, step)
}

/// One tick per decade, and 2x and 5x when the domain spans three decades or less;
/// for bytes, powers of two, every second or fourth one when there are many.
pub fn log_ticks(domain: Domain, steps: Steps) -> Vec<f64> {
    if steps == Steps::Binary {
        return binary_log_ticks(domain);
    }
    let (first, last) = (
        domain.min.log10().floor() as i32,
        domain.max.log10().ceil() as i32,
    );
    let minor = last - first <= 3;
    let mut ticks = Vec::new();
    for exponent in first..=last {
        let decade = 10f64.powi(exponent);
        let steps: &[f64] = if minor { &[1.0, 2.0, 5.0] } else { &[1.0] };
        for &step in steps {
            let tick = decade * step;
            if tick >= domain.min * (1.0 - 1e-9) && tick <= domain.max * (1.0 + 1e-9) {
                ticks.push(tick);
            }
        }
    }
    ticks
}

fn binary_log_ticks(domain: Domain) -> Vec<f64> {
    let (first, last) = (
        domain.min.log2().ceil() as i32,
        domain.max.log2().floor() as i32,
    );
    // Every power of two, else every 2nd, 5th, 10th or 20th, so at most 8 are
    // labelled; each stride divides 10, so 1 KiB, 1 MiB and 1 GiB keep their ticks.
    let stride = [1, 2, 5, 10, 20]
        .into_iter()
        .find(|stride| (last - first) / stride <= 7)
        .unwrap_or(20);
    (first..=last)
        .filter(|exponent| exponent.rem_euclid(stride) == 0)
        .map(|exponent| 2f64.powi(exponent))
        .collect()
}

/// Time ticks (seconds) in the first step of [`TIME_STEPS_S`] that gives at most
/// [`MAX_TICKS`] of them.
pub fn time_ticks(domain: Domain) -> Vec<f64> {
    let span = domain.max - domain.min;
    let step = TIME_STEPS_S
        .iter()
        .copied()
        .find(|step| span / step <= MAX_TICKS)
        .unwrap_or_else(|| nice_step(span, MAX_TICKS));
    multiples(domain, step)
}

/// Parts of the rate axis: a rate axis is wide (1100 px), and a step sweep's rates read
/// best on about eight ticks (0, 50, 100, ... or 0, 2k, 4k, ...).
const RATE_PARTS: f64 = 8.0;

/// The offered-rate axis: from 0 (where the y = x line starts) to a round number at
/// or above the highest rate; 0..1 when there is none.
pub fn rate_domain(rates: impl Iterator<Item = f64>) -> Domain {
    let high = rates
        .filter(|r| r.is_finite() && *r > 0.0)
        .fold(0.0, f64::max);
    if high == 0.0 {
        return Domain { min: 0.0, max: 1.0 };
    }
    let step = nice_step(high * HEADROOM, RATE_PARTS);
    Domain {
        min: 0.0,
        max: (high * HEADROOM / step).ceil() * step,
    }
}

/// Ticks of the rate axis: 1-2-5 steps, about eight of them.
pub fn rate_ticks(domain: Domain) -> Vec<f64> {
    multiples(domain, nice_step(domain.max - domain.min, RATE_PARTS))
}

/// Whole nines (0 = 0%, 1 = 90%, 2 = 99%, ...) inside the domain.
pub fn nines_ticks(domain: Domain) -> Vec<f64> {
    let step = if domain.max - domain.min > MAX_TICKS {
        2.0
    } else {
        1.0
    };
    multiples(domain, step)
}

/// The percentile a position on the nines axis stands for: 1 -> `90%`, 3 -> `99.9%`.
pub fn nines_label(nines: f64) -> String {
    let percent = 100.0 * (1.0 - 10f64.powf(-nines));
    let whole = nines.round();
    if (nines - whole).abs() < 1e-9 && whole >= 3.0 {
        return format!("99.{}%", "9".repeat(whole as usize - 2));
    }
    format!(
        "{}%",
        crate::format::significant(percent, (nines + 2.0) as i32)
    )
}

fn multiples(domain: Domain, step: f64) -> Vec<f64> {
    let first = (domain.min / step - 1e-9).ceil() as i64;
    let last = (domain.max / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_axis_ends_at_its_hundred_percent() {
        // (values, scale, the domain's top)
        let rows: [(&[f64], Scale, f64); 5] = [
            (&[100.0, 100.0, 62.0], Scale::Linear, 100.0),
            (&[12.5], Scale::Linear, 15.0),
            (&[100.3, 40.0], Scale::Linear, 150.0),
            (&[100.0, f64::NAN], Scale::Linear, 100.0),
            (&[1.0, 100.0], Scale::Log, 100.0),
        ];
        for (values, scale, want) in rows {
            let domain = value_domain(values.iter().copied(), scale, Steps::Decimal);
            let got = capped(domain, scale, values, 100.0);
            assert_eq!(got.max, want, "{values:?} {scale:?}");
        }
        let unbounded = value_domain([100.0].into_iter(), Scale::Linear, Steps::Decimal);
        assert_eq!(
            unbounded.max, 150.0,
            "without the cap, the headroom rounds up"
        );
    }

    fn domain(min: f64, max: f64) -> Domain {
        Domain { min, max }
    }

    #[test]
    fn byte_axes_step_by_powers_of_two() {
        const MIB: f64 = 1024.0 * 1024.0;
        const GIB: f64 = 1024.0 * MIB;
        // (values, linear domain max, linear ticks)
        let rows: &[(&[f64], f64, &[f64])] = &[
            (&[1.4 * GIB], 1.5 * GIB, &[0.0, 0.5 * GIB, GIB, 1.5 * GIB]),
            (
                &[50.0 * MIB],
                64.0 * MIB,
                &[0.0, 16.0 * MIB, 32.0 * MIB, 48.0 * MIB, 64.0 * MIB],
            ),
            (&[700.0], 800.0, &[0.0, 200.0, 400.0, 600.0, 800.0]),
            (&[3000.0], 4096.0, &[0.0, 1024.0, 2048.0, 3072.0, 4096.0]),
        ];
        for (values, max, ticks) in rows {
            let got = value_domain(values.iter().copied(), Scale::Linear, Steps::Binary);
            assert_eq!((got.min, got.max), (0.0, *max), "{values:?}");
            assert_eq!(linear_ticks(got, Steps::Binary), *ticks, "{values:?}");
        }
        let log = value_domain(
            [3.0 * MIB, 5.0 * GIB].into_iter(),
            Scale::Log,
            Steps::Binary,
        );
        assert_eq!((log.min, log.max), (2.0 * MIB, 8.0 * GIB));
        assert_eq!(
            log_ticks(log, Steps::Binary),
            [
                4.0 * MIB,
                16.0 * MIB,
                64.0 * MIB,
                256.0 * MIB,
                GIB,
                4.0 * GIB
            ]
        );
        assert_eq!(binary_step(0.0, 5.0), 1.0);
        assert_eq!(binary_step(3.0 * GIB, 5.0), GIB);
    }

    #[test]
    fn linear_domains_start_at_zero_and_end_round() {
        let rows: &[(&[f64], (f64, f64))] = &[
            (&[3.0, 47.0], (0.0, 50.0)),
            (&[4.0], (0.0, 5.0)),
            (&[0.0, 0.0], (0.0, 1.0)),
            (&[], (0.0, 1.0)),
            (&[1234.0], (0.0, 1500.0)),
            (&[f64::NAN, 9.0], (0.0, 10.0)),
            (&[-3.0, 7.0], (-5.0, 10.0)),
            (&[2000.0], (0.0, 2500.0)),
        ];
        for (values, (min, max)) in rows {
            let got = value_domain(values.iter().copied(), Scale::Linear, Steps::Decimal);
            assert_eq!((got.min, got.max), (*min, *max), "{values:?}");
        }
    }

    #[test]
    fn log_domains_end_on_1_2_5_steps() {
        let rows: &[(&[f64], (f64, f64))] = &[
            (&[100e3, 30e9], (1e5, 5e10)),
            (&[230e3, 4.1e6], (2e5, 5e6)),
            (&[0.0, 5.0], (5.0, 10.0)),
            (&[10.0], (10.0, 20.0)),
            (&[], (1.0, 10.0)),
        ];
        for (values, (min, max)) in rows {
            let got = value_domain(values.iter().copied(), Scale::Log, Steps::Decimal);
            assert!(
                (got.min / min - 1.0).abs() < 1e-9 && (got.max / max - 1.0).abs() < 1e-9,
                "{values:?}: {got:?}"
            );
        }
    }

    #[test]
    fn rate_axes_start_at_zero_with_about_eight_labelled_ticks() {
        /// (rates, domain max, ticks, labels)
        type Row<'a> = (&'a [f64], f64, &'a [f64], &'a [&'a str]);
        let rows: &[Row<'_>] = &[
            (
                &[50.0, 200.0],
                250.0,
                &[0.0, 50.0, 100.0, 150.0, 200.0, 250.0],
                &["0", "50", "100", "150", "200", "250"],
            ),
            (
                &[1000.0, 12_000.0],
                14_000.0,
                &[0.0, 2e3, 4e3, 6e3, 8e3, 10e3, 12e3, 14e3],
                &["0", "2k", "4k", "6k", "8k", "10k", "12k", "14k"],
            ),
            (
                &[3.0],
                3.5,
                &[0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5],
                &["0", "0.5", "1", "1.5", "2", "2.5", "3", "3.5"],
            ),
            (
                &[1500.0],
                1600.0,
                &[
                    0.0, 200.0, 400.0, 600.0, 800.0, 1000.0, 1200.0, 1400.0, 1600.0,
                ],
                &[
                    "0", "200", "400", "600", "800", "1k", "1.2k", "1.4k", "1.6k",
                ],
            ),
            // Nothing to place, or nothing a rate axis can show: 0..1.
            (
                &[],
                1.0,
                &[0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
                &["0", "0.2", "0.4", "0.6", "0.8", "1"],
            ),
            (
                &[f64::NAN, -5.0, 0.0],
                1.0,
                &[0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
                &["0", "0.2", "0.4", "0.6", "0.8", "1"],
            ),
        ];
        for (rates, max, ticks, labels) in rows {
            let got = rate_domain(rates.iter().copied());
            assert_eq!((got.min, got.max), (0.0, *max), "{rates:?}");
            let got_ticks = rate_ticks(got);
            assert_eq!(got_ticks.len(), ticks.len(), "{rates:?}: {got_ticks:?}");
            for (got, want) in got_ticks.iter().zip(ticks.iter()) {
                assert!((got - want).abs() < 1e-9, "{rates:?}: {got_ticks:?}");
            }
            let got_labels: Vec<String> =
                got_ticks.iter().map(|t| crate::format::count(*t)).collect();
            assert_eq!(got_labels, *labels, "{rates:?}");
        }
    }

    #[test]
    fn ticks() {
        assert_eq!(
            linear_ticks(domain(0.0, 50.0), Steps::Decimal),
            [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
        );
        assert_eq!(time_ticks(domain(0.0, 95.0)).len(), 10);
        assert_eq!(
            time_ticks(domain(0.0, 120.0)),
            [0.0, 15.0, 30.0, 45.0, 60.0, 75.0, 90.0, 105.0, 120.0]
        );
        assert_eq!(time_ticks(domain(0.0, 1.0)).len(), 11);
        assert_eq!(
            log_ticks(domain(1e5, 1e11), Steps::Decimal),
            [1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11]
        );
        assert_eq!(log_ticks(domain(1.0, 100.0), Steps::Decimal).len(), 7);
        assert_eq!(nines_ticks(domain(0.0, 3.5)), [0.0, 1.0, 2.0, 3.0]);
        let labels: Vec<String> = [0.0, 1.0, 2.0, 3.0, 5.0].map(nines_label).to_vec();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.999%"]);
        let position = domain(1.0, 100.0).fraction(Scale::Log, 10.0);
        assert!((position - 0.5).abs() < 1e-12);
        assert_eq!(domain(1.0, 100.0).fraction(Scale::Log, 0.0), 0.0);
    }
}
