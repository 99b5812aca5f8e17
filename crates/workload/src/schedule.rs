//! [`Schedule`]: a rate (or a user count) over time, as Yandex.Tank writes it:
//! `const(R, D)`, `line(A, B, D)`, `step(A, B, INC, D)` concatenated, plus doubling steps
//! `step(8, 4096, x2, 50s)`, explicit step lists `8,16,24,32@50s` and
//! `sine(MEAN, AMPLITUDE, PERIOD, D)`; and a log's shape, its requests per second bucket
//! by bucket ([`Schedule::from_rates`]).
//!
//! Everything is a pure function of time: [`Schedule::intended_ns`] inverts the integral
//! of the rate exactly (closed form for `const` and `line`, a safeguarded Newton step for
//! `sine`), so the k-th request's send time never depends on what happened before it.
//! Finding a time's or a request's segment is a binary search, as a day of a log's
//! 1 s buckets is 86,400 segments.

use std::fmt;
use std::time::Duration;

use units::GoDuration;

/// A sequence of segments, never empty; only the last may be open-ended (a plain
/// `-rate`).
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    segments: Vec<Segment>,
    /// Start of each segment, in ns from time zero.
    starts_ns: Vec<u64>,
    /// The integral of the rate before each segment (requests).
    counts_before: Vec<f64>,
    /// What [`fmt::Display`] prints instead of the segments, when they are too many to
    /// read (a log's shape).
    label: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    shape: Shape,
    /// `None` only for a last, open-ended segment.
    duration_ns: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Const(f64),
    Line {
        from: f64,
        to: f64,
    },
    Sine {
        mean: f64,
        amplitude: f64,
        period_s: f64,
    },
}

impl Shape {
    /// The value `t_s` seconds into a segment of `span_s` seconds.
    fn value(self, t_s: f64, span_s: f64) -> f64 {
        match self {
            Shape::Const(rate) => rate,
            Shape::Line { from, to } => from + (to - from) * t_s / span_s,
            Shape::Sine {
                mean,
                amplitude,
                period_s,
            } => mean + amplitude * (std::f64::consts::TAU * t_s / period_s).sin(),
        }
    }

    /// The integral of the value over the first `t_s` seconds.
    fn integral(self, t_s: f64, span_s: f64) -> f64 {
        match self {
            Shape::Const(rate) => rate * t_s,
            Shape::Line { from, to } => from * t_s + (to - from) * t_s * t_s / (2.0 * span_s),
            Shape::Sine {
                mean,
                amplitude,
                period_s,
            } => {
                let omega = std::f64::consts::TAU / period_s;
                mean * t_s + amplitude / omega * (1.0 - (omega * t_s).cos())
            }
        }
    }

    /// The time (seconds into the segment) at which the integral reaches `count`.
    fn time_of(self, count: f64, span_s: f64) -> f64 {
        match self {
            Shape::Const(rate) => count / rate,
            Shape::Line { from, to } if (to - from).abs() < f64::EPSILON => count / from,
            // The root of (to-from)/(2·span)·t² + from·t - count written so that it stays
            // accurate when `from` is zero or much larger than the slope.
            Shape::Line { from, to } => {
                2.0 * count / (from + (from * from + 2.0 * (to - from) * count / span_s).sqrt())
            }
            Shape::Sine { .. } => self.solve_integral(count, span_s),
        }
    }

    /// Newton's method on the increasing integral, kept inside a shrinking bracket.
    fn solve_integral(self, count: f64, span_s: f64) -> f64 {
        let (mut low, mut high) = (0.0, span_s);
        let mut t = (count / self.integral(span_s, span_s) * span_s).clamp(low, high);
        for _ in 0..64 {
            let error = self.integral(t, span_s) - count;
            if error.abs() < 1e-9 {
                break;
            }
            if error > 0.0 {
                high = t;
            } else {
                low = t;
            }
            let slope = self.value(t, span_s);
            let next = t - error / slope;
            t = if slope > 0.0 && next > low && next < high {
                next
            } else {
                (low + high) / 2.0
            };
        }
        t
    }
}

impl Schedule {
    /// A constant rate with no end of its own (`-rate`, `-concurrency N`).
    pub fn constant(value: f64) -> Schedule {
        Schedule::from_segments(vec![Segment {
            shape: Shape::Const(value),
            duration_ns: None,
        }])
    }

    /// The schedule of parsed segments, each with its duration.
    pub(crate) fn from_parsed(segments: Vec<(ParsedShape, u64)>) -> Schedule {
        let segments = segments
            .into_iter()
            .map(|(shape, duration_ns)| Segment {
                shape: shape.into(),
                duration_ns: Some(duration_ns),
            })
            .collect();
        Schedule::from_segments(segments)
    }

    /// A piecewise-constant schedule: `rates_per_sec[i]` over the i-th bucket of
    /// `bucket_ns`; the label is what `describe()`/Display say (e.g.
    /// `shape(access.log, 3600 x 1s)`), as the segment list is long. Buckets of rate 0
    /// are pauses: nothing is due in them.
    pub fn from_rates(
        rates_per_sec: &[f64],
        bucket_ns: u64,
        label: &str,
    ) -> Result<Schedule, String> {
        if rates_per_sec.is_empty() {
            return Err("no buckets: a shape needs at least one rate".to_owned());
        }
        if bucket_ns == 0 {
            return Err("buckets of 0ns: want a width of at least 1ns".to_owned());
        }
        if let Some((index, rate)) = rates_per_sec
            .iter()
            .enumerate()
            .find(|(_, rate)| !(rate.is_finite() && **rate >= 0.0))
        {
            return Err(format!(
                "bucket {index}: rate {rate} is not a number of requests per second >= 0"
            ));
        }
        if rates_per_sec.iter().all(|&rate| rate == 0.0) {
            return Err(format!(
                "all {} buckets have rate 0: nothing to send",
                rates_per_sec.len()
            ));
        }
        let segments = rates_per_sec
            .iter()
            .map(|&rate| Segment {
                shape: Shape::Const(rate),
                duration_ns: Some(bucket_ns),
            })
            .collect();
        Ok(Schedule {
            label: Some(label.to_owned()),
            ..Schedule::from_segments(segments)
        })
    }

    fn from_segments(segments: Vec<Segment>) -> Schedule {
        debug_assert!(
            segments
                .split_last()
                .is_some_and(|(_, init)| init.iter().all(|s| s.duration_ns.is_some())),
            "a schedule has segments, and only the last may be open-ended"
        );
        let (mut starts_ns, mut counts_before) = (
            Vec::with_capacity(segments.len()),
            Vec::with_capacity(segments.len()),
        );
        let (mut start_ns, mut before) = (0u64, 0.0f64);
        for segment in &segments {
            starts_ns.push(start_ns);
            counts_before.push(before);
            if let Some(duration_ns) = segment.duration_ns {
                let span_s = duration_ns as f64 / 1e9;
                start_ns = start_ns.saturating_add(duration_ns);
                before += segment.shape.integral(span_s, span_s);
            }
        }
        Schedule {
            segments,
            starts_ns,
            counts_before,
            label: None,
        }
    }

    /// The largest value the schedule takes (for sizing the closed model).
    pub fn max_value(&self) -> f64 {
        self.segments
            .iter()
            .map(|segment| match segment.shape {
                Shape::Const(value) => value,
                Shape::Line { from, to } => from.max(to),
                Shape::Sine {
                    mean, amplitude, ..
                } => mean + amplitude,
            })
            .fold(0.0, f64::max)
    }

    /// The schedule's own length, if it has one: where the last segment ends (only
    /// the last segment can be open-ended). Called per request, so it does not sum.
    pub fn duration_ns(&self) -> Option<u64> {
        let (last, start_ns) = self.segments.last().zip(self.starts_ns.last())?;
        last.duration_ns
            .map(|duration_ns| start_ns.saturating_add(duration_ns))
    }

    /// The value (rate per second, or users) at `t_ns`; 0 after the end.
    pub fn value_at(&self, t_ns: u64) -> f64 {
        let Some(index) = self.segment_at(t_ns) else {
            return 0.0;
        };
        let segment = self.segments[index];
        let span_s = segment
            .duration_ns
            .map_or(f64::INFINITY, |d| d as f64 / 1e9);
        segment
            .shape
            .value((t_ns - self.starts_ns[index]) as f64 / 1e9, span_s)
    }

    /// The integral of the rate from 0 to `t_ns`: how many requests are due by then.
    pub fn count_by(&self, t_ns: u64) -> f64 {
        match self.segment_at(t_ns) {
            Some(index) => {
                let segment = self.segments[index];
                let span_s = segment
                    .duration_ns
                    .map_or(f64::INFINITY, |d| d as f64 / 1e9);
                let t_s = (t_ns - self.starts_ns[index]) as f64 / 1e9;
                self.counts_before[index] + segment.shape.integral(t_s, span_s)
            }
            None => self.total_count().unwrap_or(0.0),
        }
    }

    /// The intended send time of request `k` (0-based) in ns from the start, or `None`
    /// when the schedule ends first: request k leaves when the integral reaches k.
    pub fn intended_ns(&self, k: u64) -> Option<u64> {
        let wanted = k as f64;
        // The last segment whose count before it is <= k: empty segments (pauses) before
        // it share its count, so the search passes over them. Only that segment can hold
        // k, as every earlier one ends at or before its count; none does past the end.
        let index = self
            .counts_before
            .partition_point(|&before| before <= wanted)
            .checked_sub(1)?;
        if !self.segment_holds(index, wanted) {
            return None;
        }
        let segment = self.segments[index];
        let span_s = segment
            .duration_ns
            .map_or(f64::INFINITY, |d| d as f64 / 1e9);
        let offset_s = segment
            .shape
            .time_of(wanted - self.counts_before[index], span_s);
        let offset_ns = (offset_s * 1e9).round() as u64;
        // Saturating, as `starts_ns` is: segments may add up past u64::MAX ns.
        Some(
            self.starts_ns[index].saturating_add(
                segment
                    .duration_ns
                    .map_or(offset_ns, |d| offset_ns.min(d.saturating_sub(1))),
            ),
        )
    }

    /// How many requests are due at or before `t_ns`.
    pub fn due_by(&self, t_ns: u64) -> u64 {
        // Saturating: a huge parsed rate (`const(1e308, 1s)`) must not overflow.
        let counted = self.count_by(t_ns).floor() as u64;
        // In a pause the count stands still; at a whole count, request `counted` waits
        // for the rate to come back.
        let waiting = self.value_at(t_ns) == 0.0
            && self.intended_ns(counted).is_none_or(|at_ns| at_ns > t_ns);
        let due = if waiting {
            counted
        } else {
            counted.saturating_add(1)
        };
        match self.total_count() {
            Some(total) => due.min(total.ceil() as u64),
            None => due,
        }
    }

    /// Whether request number `wanted` falls inside segment `index`.
    fn segment_holds(&self, index: usize, wanted: f64) -> bool {
        let segment = self.segments[index];
        let before = self.counts_before[index];
        match segment.duration_ns {
            None => segment.shape.value(0.0, f64::INFINITY) > 0.0 && wanted >= before,
            Some(d) => {
                let span_s = d as f64 / 1e9;
                wanted >= before && wanted < before + segment.shape.integral(span_s, span_s)
            }
        }
    }

    fn segment_at(&self, t_ns: u64) -> Option<usize> {
        let index = self
            .starts_ns
            .partition_point(|&start| start <= t_ns)
            .checked_sub(1)?;
        let segment = self.segments[index];
        match segment.duration_ns {
            Some(d) if t_ns >= self.starts_ns[index].saturating_add(d) => None,
            _ => Some(index),
        }
    }

    fn total_count(&self) -> Option<f64> {
        let last = self.segments.len().checked_sub(1)?;
        let segment = self.segments[last];
        let span_s = segment.duration_ns? as f64 / 1e9;
        Some(self.counts_before[last] + segment.shape.integral(span_s, span_s))
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(label) = &self.label {
            return f.write_str(label);
        }
        for (index, segment) in self.segments.iter().enumerate() {
            if index > 0 {
                f.write_str(" ")?;
            }
            let duration = segment
                .duration_ns
                .map(|d| GoDuration(Duration::from_nanos(d)));
            match (segment.shape, duration) {
                (Shape::Const(value), Some(d)) => write!(f, "const({value}, {d})")?,
                (Shape::Const(value), None) => write!(f, "const({value})")?,
                (Shape::Line { from, to }, Some(d)) => write!(f, "line({from}, {to}, {d})")?,
                (
                    Shape::Sine {
                        mean,
                        amplitude,
                        period_s,
                    },
                    Some(d),
                ) => {
                    write!(
                        f,
                        "sine({mean}, {amplitude}, {}, {d})",
                        GoDuration(Duration::from_secs_f64(period_s))
                    )?;
                }
                (_, None) => f.write_str("?")?,
            }
        }
        Ok(())
    }
}

/// What the parser hands over: a shape and its duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ParsedShape {
    Const(f64),
    Line(f64, f64),
    Sine {
        mean: f64,
        amplitude: f64,
        period_s: f64,
    },
}

impl From<ParsedShape> for Shape {
    fn from(shape: ParsedShape) -> Shape {
        match shape {
            ParsedShape::Const(value) => Shape::Const(value),
            ParsedShape::Line(from, to) => Shape::Line { from, to },
            ParsedShape::Sine {
                mean,
                amplitude,
                period_s,
            } => Shape::Sine {
                mean,
                amplitude,
                period_s,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// Requests due in each whole second of `schedule`, from its intended times.
    fn per_second(schedule: &Schedule, seconds: u64) -> Vec<u64> {
        let mut counts = vec![0u64; seconds as usize];
        let mut k = 0;
        while let Some(t) = schedule.intended_ns(k) {
            if t >= seconds * S {
                break;
            }
            counts[(t / S) as usize] += 1;
            k += 1;
        }
        counts
    }

    #[test]
    fn constant_rate_is_exact() {
        let schedule = Schedule::constant(1000.0);
        let rows: &[(u64, u64)] = &[
            (0, 0),
            (1, 1_000_000),
            (999, 999_000_000),
            (3_600_000, 3_600_000_000_000),
        ];
        for &(k, want) in rows {
            assert_eq!(schedule.intended_ns(k), Some(want), "k={k}");
        }
        let due: Vec<u64> = [0, 999_999, 1_000_000, 1_500_000, 10_000_000]
            .iter()
            .map(|&t| schedule.due_by(t))
            .collect();
        assert_eq!(due, [1, 1, 2, 2, 11]);
        assert_eq!(Schedule::constant(3.0).intended_ns(1), Some(333_333_333));
    }

    #[test]
    fn a_ramp_tracks_its_integral_second_by_second() {
        let schedule = Schedule::parse("line(100, 10000, 10s)").unwrap();
        assert_tracks_integral(&schedule, &per_second(&schedule, 10), Some(0.005));
        assert_eq!(schedule.duration_ns(), Some(10 * S));
        assert_eq!(
            schedule.intended_ns(50_501),
            None,
            "the ramp holds 50500 requests"
        );
    }

    #[test]
    fn steps_lists_and_pauses_concatenate() {
        let rows: &[(&str, Vec<u64>)] = &[
            ("step(10, 30, 10, 1s)", vec![10, 20, 30]),
            ("step(30, 10, 10, 1s)", vec![30, 20, 10]),
            ("step(8, 64, x2, 1s)", vec![8, 16, 32, 64]),
            ("8,16,24@1s", vec![8, 16, 24]),
            ("const(5, 1s) const(0, 2s) const(7, 1s)", vec![5, 0, 0, 7]),
            ("line(0, 20, 2s) const(20, 1s)", vec![5, 15, 20]),
        ];
        for (text, want) in rows {
            let schedule = Schedule::parse(text).unwrap();
            assert_eq!(&per_second(&schedule, want.len() as u64), want, "{text}");
        }
    }

    #[test]
    fn sine_integrates_to_the_mean() {
        let schedule = Schedule::parse("sine(1000, 500, 4s, 8s)").unwrap();
        let counts = per_second(&schedule, 8);
        assert_eq!(counts.iter().sum::<u64>(), 8000);
        assert!(
            counts[0] > 1000 && counts[2] < 1000,
            "rises first, then falls: {counts:?}"
        );
        assert_tracks_integral(&schedule, &counts, None);
    }

    /// Each second's count is within one request of the schedule's integral over that
    /// second, and within `share` of it when given.
    fn assert_tracks_integral(schedule: &Schedule, counts: &[u64], share: Option<f64>) {
        for (second, &count) in counts.iter().enumerate() {
            let want =
                schedule.count_by((second as u64 + 1) * S) - schedule.count_by(second as u64 * S);
            let off = (count as f64 - want).abs();
            assert!(off <= 1.0, "second {second}: {count} vs {want}");
            assert!(
                share.is_none_or(|share| off / want < share),
                "within {share:?}"
            );
        }
    }

    #[test]
    fn duration_is_where_the_last_segment_ends() {
        let rows: &[(&str, u64)] = &[
            ("const(5, 1s)", S),
            ("const(5, 1s) const(0, 2s) const(7, 1s)", 4 * S),
            ("step(8, 64, x2, 1s)", 4 * S),
            ("line(1, 100, 1m) const(100, 5m)", 360 * S),
        ];
        for &(text, want) in rows {
            assert_eq!(
                Schedule::parse(text).unwrap().duration_ns(),
                Some(want),
                "{text}"
            );
        }
        assert_eq!(Schedule::constant(10.0).duration_ns(), None);
    }

    #[test]
    fn value_at_follows_the_shape() {
        let schedule = Schedule::parse("line(1, 100, 1m) const(100, 5m)").unwrap();
        let rows: &[(u64, f64)] = &[
            (0, 1.0),
            (30 * S, 50.5),
            (60 * S, 100.0),
            (200 * S, 100.0),
            (360 * S, 0.0),
        ];
        for &(t, want) in rows {
            assert!(
                (schedule.value_at(t) - want).abs() < 1e-9,
                "{t}: {}",
                schedule.value_at(t)
            );
        }
    }

    #[test]
    fn a_shape_pauses_in_its_zero_buckets() {
        let rates = [2.0, 0.0, 0.0, 4.0, 0.0];
        let schedule = Schedule::from_rates(&rates, S, "shape(test.log, 5 x 1s)").unwrap();
        let intended: &[(u64, Option<u64>)] = &[
            (0, Some(0)),
            (1, Some(S / 2)),
            // Requests 2 to 5 wait out the two empty seconds.
            (2, Some(3 * S)),
            (3, Some(3 * S + S / 4)),
            (5, Some(3 * S + 3 * S / 4)),
            (6, None),
            (u64::MAX, None),
        ];
        for &(k, want) in intended {
            assert_eq!(schedule.intended_ns(k), want, "intended_ns({k})");
        }
        let due: &[(u64, u64)] = &[
            (0, 1),
            (S / 2 - 1, 1),
            (S / 2, 2),
            (S, 2),
            (3 * S - 1, 2),
            (3 * S, 3),
            (4 * S - 1, 6),
            (4 * S, 6),
            (u64::MAX, 6),
        ];
        for &(t, want) in due {
            assert_eq!(schedule.due_by(t), want, "due_by({t})");
        }
        let values: Vec<f64> = [0, S, 2 * S, 3 * S, 4 * S, 5 * S]
            .iter()
            .map(|&t| schedule.value_at(t))
            .collect();
        assert_eq!(values, [2.0, 0.0, 0.0, 4.0, 0.0, 0.0]);
        assert_eq!(schedule.count_by(2 * S), 2.0);
        assert_eq!(schedule.duration_ns(), Some(5 * S));
        assert_eq!(schedule.to_string(), "shape(test.log, 5 x 1s)");
        assert_eq!(per_second(&schedule, 5), [2, 0, 0, 4, 0]);
    }

    #[test]
    fn each_request_of_a_shape_lands_in_its_bucket() {
        let rows: &[(&[f64], u64)] = &[
            (&[3.0, 0.0, 1.0, 0.5, 0.0, 0.0, 7.0], S),
            (&[0.0, 0.0, 10.0], S / 10),
            (&[2.5, 0.0, 1.5, 0.0], 60 * S),
        ];
        for &(rates, bucket_ns) in rows {
            let schedule = Schedule::from_rates(rates, bucket_ns, "shape").unwrap();
            let mut want = Vec::new();
            let mut before = 0.0;
            for (bucket, &rate) in rates.iter().enumerate() {
                let after = before + rate * bucket_ns as f64 / 1e9;
                // Request k is the bucket's when the count reaches k inside it.
                want.extend((before.ceil() as u64..after.ceil() as u64).map(|_| bucket as u64));
                before = after;
            }
            let got: Vec<u64> = (0..)
                .map_while(|k| schedule.intended_ns(k))
                .map(|t| t / bucket_ns)
                .collect();
            assert_eq!(got, want, "{rates:?}");
        }
    }

    /// The k-th request's time by walking the buckets one by one: what the binary
    /// search must agree with. `ks` ascending.
    fn intended_by_walking(rates: &[f64], bucket_ns: u64, ks: &[u64]) -> Vec<Option<u64>> {
        let span_s = bucket_ns as f64 / 1e9;
        let (mut bucket, mut before) = (0, 0.0);
        ks.iter()
            .map(|&k| {
                let wanted = k as f64;
                while bucket < rates.len() && before + rates[bucket] * span_s <= wanted {
                    before += rates[bucket] * span_s;
                    bucket += 1;
                }
                let rate = *rates.get(bucket)?;
                let offset_ns = ((wanted - before) / rate * 1e9).round() as u64;
                Some(bucket as u64 * bucket_ns + offset_ns.min(bucket_ns - 1))
            })
            .collect()
    }

    #[test]
    fn a_day_of_one_second_buckets_agrees_with_a_linear_walk() {
        // A day's shape: quiet hours of zeros, fractional rates, bursts.
        let rates: Vec<f64> = (0..86_400u64)
            .map(|i| match (i * 7919) % 13 {
                0..=2 => 0.0,
                r => r as f64 * 0.75,
            })
            .collect();
        let schedule = Schedule::from_rates(&rates, S, "shape(day.log, 86400 x 1s)").unwrap();
        let total = rates.iter().sum::<f64>() as u64;
        let mut ks: Vec<u64> = (0..total + 50).step_by(97).collect();
        ks.extend(total - 3..total + 3);
        ks.sort_unstable();
        let want = intended_by_walking(&rates, S, &ks);
        for (&k, want) in ks.iter().zip(want) {
            assert_eq!(schedule.intended_ns(k), want, "k={k}");
        }
        assert_eq!(schedule.intended_ns(total + 1), None);
        assert!(schedule.intended_ns(total - 1).is_some());
        assert_eq!(schedule.to_string(), "shape(day.log, 86400 x 1s)");
    }

    #[test]
    fn a_shape_needs_rates_to_send() {
        let rows: &[(&[f64], u64, &str)] = &[
            (&[], S, "no buckets: a shape needs at least one rate"),
            (&[0.0, 0.0], S, "all 2 buckets have rate 0: nothing to send"),
            (&[1.0], 0, "buckets of 0ns: want a width of at least 1ns"),
            (
                &[1.0, -2.0],
                S,
                "bucket 1: rate -2 is not a number of requests per second >= 0",
            ),
            (&[f64::NAN], S, "bucket 0: rate NaN is not a number"),
            (&[f64::INFINITY], S, "bucket 0: rate inf is not a number"),
        ];
        for &(rates, bucket_ns, want) in rows {
            let err = Schedule::from_rates(rates, bucket_ns, "shape").unwrap_err();
            assert!(err.starts_with(want), "{rates:?}: {err}");
        }
    }

    #[test]
    fn huge_schedules_saturate_instead_of_overflowing() {
        // (schedule, t_ns for due_by, its count, k for intended_ns, its time)
        let rows: &[(&str, u64, u64, u64, Option<u64>)] = &[
            ("const(1e308, 1ns)", 1, u64::MAX, 0, Some(0)),
            ("const(1e308, 1ns)", u64::MAX, u64::MAX, u64::MAX, Some(0)),
            (
                "const(1, 5000000h) const(1, 5000000h)",
                u64::MAX,
                36_000_000_000,
                30_000_000_000,
                Some(u64::MAX),
            ),
        ];
        for &(text, t_ns, want_due, k, want_ns) in rows {
            let schedule = Schedule::parse(text).unwrap();
            assert_eq!(schedule.due_by(t_ns), want_due, "{text} due_by({t_ns})");
            assert_eq!(schedule.intended_ns(k), want_ns, "{text} intended_ns({k})");
        }
    }
}
