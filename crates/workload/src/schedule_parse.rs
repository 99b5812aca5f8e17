//! The schedule grammar, split from [`crate::Schedule`] so the maths stays readable.
//!
//! ```text
//! schedule := item (' ' item)*
//! item     := const(R, D) | line(A, B, D) | step(A, B, INC, D) | step(A, B, xF, D)
//!           | sine(MEAN, AMPLITUDE, PERIOD, D) | N,N,...@D
//! ```
//! Numbers are plain (`1000`, `0.5`); durations need a unit (`30s`, `10m`, `1h30m`).

use crate::schedule::{ParsedShape, Schedule};

/// Steps expand to one segment each; this many is already a typo.
const MAX_STEPS: usize = 100_000;

impl Schedule {
    /// Parses Tank-style segments separated by spaces. Errors quote the input and point
    /// at the offending segment. The parser rejects empty schedules and more than
    /// 100,000 steps.
    pub fn parse(text: &str) -> Result<Schedule, String> {
        Ok(Schedule::from_parsed(parse_segments(text)?))
    }
}

fn parse_segments(text: &str) -> Result<Vec<(ParsedShape, u64)>, String> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(format!("invalid schedule {text:?}: empty"));
    }
    let mut segments = Vec::new();
    while !rest.is_empty() {
        let (item, after) =
            next_item(rest).map_err(|reason| format!("invalid schedule {text:?}: {reason}"))?;
        parse_item(item, &mut segments)
            .map_err(|reason| format!("invalid schedule {text:?}: {item:?}: {reason}"))?;
        if segments.len() > MAX_STEPS {
            return Err(format!(
                "invalid schedule {text:?}: more than {MAX_STEPS} steps"
            ));
        }
        rest = after.trim_start();
    }
    Ok(segments)
}

/// Splits off the first item: `name(...)` up to its closing parenthesis, or a step
/// list up to the end of its `@duration`.
fn next_item(text: &str) -> Result<(&str, &str), String> {
    if text.starts_with(|c: char| c.is_ascii_alphabetic()) {
        let close = text
            .find(')')
            .ok_or_else(|| format!("{text:?}: missing ')'"))?;
        return Ok(text.split_at(close + 1));
    }
    let at = text
        .find('@')
        .ok_or_else(|| format!("{text:?}: a step list needs '@DURATION', like 8,16,32@50s"))?;
    let end = text[at..]
        .find(char::is_whitespace)
        .map_or(text.len(), |i| at + i);
    Ok(text.split_at(end))
}

fn parse_item(item: &str, out: &mut Vec<(ParsedShape, u64)>) -> Result<(), String> {
    if let Some((values, duration)) = item.split_once('@') {
        let duration_ns = duration_arg(duration)?;
        for value in values.split(',') {
            out.push((ParsedShape::Const(number(value)?), duration_ns));
        }
        return Ok(());
    }
    let (name, args) = item.split_once('(').ok_or("expected NAME(ARGUMENTS)")?;
    let args: Vec<&str> = args
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .collect();
    let want = |count: usize, usage: &str| {
        if args.len() == count && args.iter().all(|a| !a.is_empty()) {
            Ok(())
        } else {
            Err(format!("expected {count} arguments: {usage}"))
        }
    };
    match name.trim() {
        "const" => {
            want(2, "const(RATE, DURATION)")?;
            out.push((ParsedShape::Const(number(args[0])?), duration_arg(args[1])?));
        }
        "line" => {
            want(3, "line(FROM, TO, DURATION)")?;
            out.push((
                ParsedShape::Line(number(args[0])?, number(args[1])?),
                duration_arg(args[2])?,
            ));
        }
        "step" => {
            want(
                4,
                "step(FROM, TO, STEP, DURATION) or step(FROM, TO, xFACTOR, DURATION)",
            )?;
            let duration_ns = duration_arg(args[3])?;
            for value in steps(number(args[0])?, number(args[1])?, args[2])? {
                out.push((ParsedShape::Const(value), duration_ns));
            }
        }
        "sine" => {
            want(4, "sine(MEAN, AMPLITUDE, PERIOD, DURATION)")?;
            let (mean, amplitude) = (number(args[0])?, number(args[1])?);
            if amplitude > mean {
                return Err(format!(
                    "amplitude {amplitude} is larger than the mean {mean}: the rate would go negative"
                ));
            }
            let period_s = duration_arg(args[2])? as f64 / 1e9;
            out.push((
                ParsedShape::Sine {
                    mean,
                    amplitude,
                    period_s,
                },
                duration_arg(args[3])?,
            ));
        }
        other => {
            return Err(format!(
                "unknown segment {other:?} (want const, line, step, sine, or N,N,...@DURATION)"
            ));
        }
    }
    Ok(())
}

/// The values of a `step`: additive (both directions) or multiplicative (`x2`).
fn steps(from: f64, to: f64, step: &str) -> Result<Vec<f64>, String> {
    let too_many = || format!("more than {MAX_STEPS} steps");
    if let Some(factor) = step.strip_prefix('x') {
        let factor = number(factor)?;
        if factor <= 1.0 || from <= 0.0 || from > to {
            return Err(
                "a factor step needs FACTOR > 1 and 0 < FROM <= TO, like step(8, 4096, x2, 50s)"
                    .to_owned(),
            );
        }
        let mut values = vec![from];
        while let Some(next) = values
            .last()
            .map(|v| v * factor)
            .filter(|v| *v <= to * (1.0 + 1e-9))
        {
            values.push(next);
            if values.len() > MAX_STEPS {
                return Err(too_many());
            }
        }
        return Ok(values);
    }
    let step = number(step)?;
    if step <= 0.0 {
        return Err("the step must be larger than zero".to_owned());
    }
    let count = ((to - from).abs() / step + 1e-9).floor() + 1.0;
    if count > MAX_STEPS as f64 {
        return Err(too_many());
    }
    let direction = if to >= from { 1.0 } else { -1.0 };
    Ok((0..count as usize)
        .map(|i| from + direction * step * i as f64)
        .collect())
}

fn number(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let value: f64 = text
        .parse()
        .map_err(|_| format!("expected a number, found {text:?}"))?;
    if !value.is_finite() {
        return Err(format!("{text:?} is not a finite number"));
    }
    if value < 0.0 {
        return Err(format!("{text:?} is negative"));
    }
    Ok(value)
}

fn duration_arg(text: &str) -> Result<u64, String> {
    let duration = units::parse_duration(text.trim()).map_err(|err| err.to_string())?;
    if duration.is_zero() {
        return Err(format!(
            "duration {:?} must be longer than zero",
            text.trim()
        ));
    }
    u64::try_from(duration.as_nanos()).map_err(|_| "duration too long".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tank_schedules() {
        let rows: &[(&str, usize, u64)] = &[
            ("const(100, 30s)", 1, 30_000_000_000),
            ("line(1, 50000, 10m) const(50000, 5m)", 2, 900_000_000_000),
            ("step(8, 4096, x2, 50s)", 10, 500_000_000_000),
            ("8,16,24,32,64@50s", 5, 250_000_000_000),
            ("step(25, 5, 5, 60s)", 5, 300_000_000_000),
            ("sine(1000, 200, 1m, 5m)", 1, 300_000_000_000),
            ("  const(1,1s)   line(1,2,1s)  ", 2, 2_000_000_000),
        ];
        for &(text, count, total_ns) in rows {
            let segments = parse_segments(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(segments.len(), count, "{text}");
            assert_eq!(
                segments.iter().map(|s| s.1).sum::<u64>(),
                total_ns,
                "{text}"
            );
        }
    }

    #[test]
    fn names_what_is_wrong() {
        let rows: &[(&str, &str)] = &[
            ("", "empty"),
            (
                "line(1,)",
                "\"line(1,)\": expected 3 arguments: line(FROM, TO, DURATION)",
            ),
            ("line(1, 2, 10m", "missing ')'"),
            ("const(-5, 10s)", "\"-5\" is negative"),
            ("const(100, 10)", "missing unit"),
            ("const(100, 0s)", "must be longer than zero"),
            ("ramp(1, 2, 3s)", "unknown segment \"ramp\""),
            ("const(abc, 1s)", "expected a number, found \"abc\""),
            ("step(1, 10, 0, 1s)", "step must be larger than zero"),
            ("step(0, 10, x2, 1s)", "factor step needs"),
            ("step(1, 10000000, 1, 1s)", "more than 100000 steps"),
            ("sine(10, 20, 1s, 5s)", "rate would go negative"),
            ("8,16,24", "needs '@DURATION'"),
            ("8,x,24@1s", "expected a number, found \"x\""),
            ("const(1, 1s) 5", "needs '@DURATION'"),
        ];
        for (text, want) in rows {
            let err = parse_segments(text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
            assert!(
                err.starts_with(&format!("invalid schedule {text:?}")),
                "{err}"
            );
        }
    }
}
