//! Go-compatible durations: `time.ParseDuration` syntax and `Duration.String` output.

use std::fmt;
use std::time::Duration;

use crate::UnitsError;

const UNITS_NS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parses a Go duration such as `300ms`, `1.5h` or `2h45m`. A bare `0` is allowed;
/// any other number needs a unit. Negative durations are rejected: nothing we time
/// runs backwards.
pub fn parse_duration(input: &str) -> Result<Duration, UnitsError> {
    let fail = |reason| UnitsError::Duration {
        input: input.to_owned(),
        reason,
    };
    let text = input.trim();
    let text = text.strip_prefix('+').unwrap_or(text);
    if text.starts_with('-') {
        return Err(fail("must not be negative"));
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() {
        return Err(fail("empty"));
    }
    let mut total_ns: u128 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let (value_ns_per_unit, consumed) = parse_component(rest).map_err(fail)?;
        total_ns = total_ns
            .checked_add(value_ns_per_unit)
            .ok_or_else(|| fail("too large"))?;
        rest = &rest[consumed..];
    }
    let nanos = u64::try_from(total_ns).map_err(|_| fail("too large"))?;
    Ok(Duration::from_nanos(nanos))
}

/// Parses one `<number><unit>` component; returns its value in ns and the bytes consumed.
fn parse_component(text: &str) -> Result<(u128, usize), &'static str> {
    let number_len = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let number = &text[..number_len];
    if number.is_empty() || number == "." {
        return Err("expected a number");
    }
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if frac.contains('.') {
        return Err("expected a number");
    }
    let after = &text[number_len..];
    let unit_len = after
        .find(|c: char| c.is_ascii_digit() || c == '.')
        .unwrap_or(after.len());
    let unit = &after[..unit_len];
    if unit.is_empty() {
        return Err("missing unit (ns, us, ms, s, m, h)");
    }
    let &(_, unit_ns) = UNITS_NS
        .iter()
        .find(|(name, _)| *name == unit)
        .ok_or("unknown unit (want ns, us, ms, s, m, h)")?;
    let whole_value: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| "number too large")?
    };
    let mut value_ns = whole_value.checked_mul(unit_ns).ok_or("too large")?;
    // Fractions count digit by digit so `1.5h` is exact rather than a float guess.
    let mut scale = unit_ns;
    for digit in frac.bytes() {
        scale /= 10;
        value_ns += u128::from(digit - b'0') * scale;
    }
    Ok((value_ns, number_len + unit_len))
}

/// Nanoseconds as seconds the way Go's `Duration.Seconds` computes them (whole seconds
/// plus the fraction), so rates divided by it match vegeta's to the last digit.
pub fn go_seconds(ns: u64) -> f64 {
    (ns / 1_000_000_000) as f64 + (ns % 1_000_000_000) as f64 / 1e9
}

/// Displays a [`Duration`] exactly like Go's `Duration.String`: `0s`, `850ns`, `1.5µs`,
/// `929.818µs`, `1.117s`, `1m1s`, `2h0m0s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoDuration(pub Duration);

impl GoDuration {
    /// `ns` as vegeta's report prints a duration: rounded to the unit below the
    /// largest ([`round_for_report`]), `1.117304s` as `1.117s`.
    pub fn report_ns(ns: u64) -> GoDuration {
        GoDuration(round_for_report(Duration::from_nanos(ns)))
    }
}

impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0.as_nanos();
        if ns == 0 {
            return f.write_str("0s");
        }
        if ns < 1_000 {
            return write!(f, "{ns}ns");
        }
        if ns < 1_000_000 {
            return write_fraction(f, ns, 1_000, "µs");
        }
        if ns < 1_000_000_000 {
            return write_fraction(f, ns, 1_000_000, "ms");
        }
        let total_secs = ns / 1_000_000_000;
        let (hours, minutes) = (total_secs / 3600, (total_secs / 60) % 60);
        if hours > 0 {
            write!(f, "{hours}h{minutes}m")?;
        } else if minutes > 0 {
            write!(f, "{minutes}m")?;
        }
        write_fraction(f, ns % 60_000_000_000, 1_000_000_000, "s")
    }
}

/// Writes `value/unit` with the fraction's trailing zeros trimmed, as Go does.
fn write_fraction(
    f: &mut fmt::Formatter<'_>,
    value: u128,
    unit: u128,
    suffix: &str,
) -> fmt::Result {
    let whole = value / unit;
    let frac = value % unit;
    if frac == 0 {
        return write!(f, "{whole}{suffix}");
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    write!(f, "{whole}.{}{suffix}", digits.trim_end_matches('0'))
}

/// vegeta's report rounding: keep the largest unit and the one below it, so
/// `1.117304s` prints as `1.117s` and `61.2s` as `1m1s`.
pub fn round_for_report(d: Duration) -> Duration {
    const STEPS_NS: [u128; 6] = [
        3_600_000_000_000,
        60_000_000_000,
        1_000_000_000,
        1_000_000,
        1_000,
        1,
    ];
    let ns = d.as_nanos();
    for pair in STEPS_NS.windows(2) {
        if ns >= pair[0] {
            return Duration::from_nanos(saturate(round_half_away(ns, pair[1])));
        }
    }
    d
}

fn round_half_away(ns: u128, unit: u128) -> u128 {
    let rem = ns % unit;
    let down = ns - rem;
    if rem * 2 >= unit { down + unit } else { down }
}

fn saturate(ns: u128) -> u64 {
    u64::try_from(ns).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(n: u64) -> Duration {
        Duration::from_nanos(n)
    }

    #[test]
    fn parses_go_durations() {
        let rows: &[(&str, u64)] = &[
            ("0", 0),
            ("0s", 0),
            ("300ms", 300_000_000),
            ("1.5h", 5_400_000_000_000),
            ("2h45m", 9_900_000_000_000),
            ("1m30s", 90_000_000_000),
            ("10us", 10_000),
            ("10µs", 10_000),
            ("7ns", 7),
            (".5s", 500_000_000),
            ("1.000000001s", 1_000_000_001),
            ("+5s", 5_000_000_000),
        ];
        for &(input, want_ns) in rows {
            assert_eq!(parse_duration(input), Ok(ns(want_ns)), "input {input:?}");
        }
    }

    #[test]
    fn rejects_bad_durations() {
        let rows: &[(&str, &str)] = &[
            ("", "empty"),
            ("5", "missing unit"),
            ("-1s", "negative"),
            ("1x", "unknown unit"),
            ("ms", "expected a number"),
            ("1.2.3s", "expected a number"),
            ("99999999999999999999h", "too large"),
            ("1s5", "missing unit"),
        ];
        for &(input, want) in rows {
            let err = parse_duration(input).expect_err(input).to_string();
            assert!(err.contains(want), "input {input:?}: {err}");
            assert!(
                err.contains(&format!("{input:?}")),
                "error names the input: {err}"
            );
        }
    }

    #[test]
    fn formats_like_go() {
        let rows: &[(u64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (999, "999ns"),
            (1_500, "1.5µs"),
            (929_818, "929.818µs"),
            (1_000_000, "1ms"),
            (299_196_000, "299.196ms"),
            (1_117_000_000, "1.117s"),
            (59_990_000_000, "59.99s"),
            (60_000_000_000, "1m0s"),
            (61_000_000_000, "1m1s"),
            (90_500_000_000, "1m30.5s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_000_000_000, "1h2m3s"),
        ];
        for &(n, want) in rows {
            assert_eq!(GoDuration(ns(n)).to_string(), want, "{n} ns");
        }
    }

    #[test]
    fn go_seconds_matches_go() {
        assert_eq!(go_seconds(1_500_000_000), 1.5);
        assert_eq!(go_seconds(0), 0.0);
        assert_eq!(go_seconds(299_000_000), 0.299);
    }

    #[test]
    fn rounds_like_vegeta_reports() {
        let rows: &[(u64, &str)] = &[
            (1_117_304_000, "1.117s"),
            (929_818_123, "929.818ms"),
            (929_818, "929.818µs"),
            (61_200_000_000, "1m1s"),
            (59_998_400_000, "59.998s"),
            (30_000_000_000, "30s"),
            (812, "812ns"),
            (3_723_600_000_000, "1h2m0s"),
        ];
        for &(n, want) in rows {
            assert_eq!(
                GoDuration(round_for_report(ns(n))).to_string(),
                want,
                "{n} ns"
            );
        }
    }
}
