//! vegeta's `-rate` syntax: `N` or `N/duration` (`100/1s`, `5/m`, `3/1.5s`).

use std::fmt;
use std::time::Duration;

use crate::{UnitsError, parse_duration};

/// A request rate: `count` requests every `per`. A zero count means "as fast as the
/// concurrency cap allows" (vegeta's `-rate=0`, the closed model).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Requests sent every `per`.
    pub count: f64,
    /// The period the count is spread over.
    pub per: Duration,
}

impl Rate {
    /// Parses `N`, `N/unit` or `N/duration`. `infinity` is accepted as a spelling of `0`
    /// (vegeta documents it but ignores it; we treat it as the closed model).
    pub fn parse(input: &str) -> Result<Rate, UnitsError> {
        let fail = |reason: &str| UnitsError::Rate {
            input: input.to_owned(),
            reason: reason.to_owned(),
        };
        let text = input.trim();
        if text.eq_ignore_ascii_case("infinity") || text.eq_ignore_ascii_case("inf") {
            return Ok(Rate {
                count: 0.0,
                per: Duration::from_secs(1),
            });
        }
        let (count_text, per_text) = text.split_once('/').unwrap_or((text, "1s"));
        let count: f64 = count_text
            .trim()
            .parse()
            .map_err(|_| fail("expected a number of requests, like 100 or 100/1s"))?;
        if !count.is_finite() || count < 0.0 {
            return Err(fail("must be a finite number >= 0"));
        }
        let per_text = per_text.trim();
        let per_text = if per_text.starts_with(|c: char| c.is_ascii_alphabetic() || c == 'µ') {
            format!("1{per_text}")
        } else {
            per_text.to_owned()
        };
        let per = parse_duration(&per_text).map_err(|err| fail(&err.to_string()))?;
        if per.is_zero() {
            return Err(fail("the period after '/' must be longer than zero"));
        }
        Ok(Rate { count, per })
    }

    /// Requests per second.
    pub fn per_sec(&self) -> f64 {
        self.count / self.per.as_secs_f64()
    }

    /// True for `0`: the closed model, paced by completions rather than a clock.
    pub fn is_unpaced(&self) -> bool {
        self.count == 0.0
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.count, crate::GoDuration(self.per))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vegeta_rates() {
        let rows: &[(&str, f64)] = &[
            ("50", 50.0),
            ("100/1s", 100.0),
            ("5/m", 5.0 / 60.0),
            ("3/1.5s", 2.0),
            ("1000/100ms", 10_000.0),
            ("0", 0.0),
            ("infinity", 0.0),
            ("0.5", 0.5),
            (" 10 / s ", 10.0),
        ];
        for &(input, want) in rows {
            let rate = Rate::parse(input).expect(input);
            assert!(
                (rate.per_sec() - want).abs() < 1e-9,
                "{input}: {}",
                rate.per_sec()
            );
        }
    }

    #[test]
    fn rejects_bad_rates() {
        let rows: &[(&str, &str)] = &[
            ("abc", "expected a number"),
            ("-5", ">= 0"),
            ("NaN", "finite"),
            ("10/0s", "longer than zero"),
            ("10/xyz", "unknown unit"),
            ("10/5", "missing unit"),
            ("", "expected a number"),
        ];
        for &(input, want) in rows {
            let err = Rate::parse(input).expect_err(input).to_string();
            assert!(err.contains(want), "{input:?}: {err}");
        }
    }
}
