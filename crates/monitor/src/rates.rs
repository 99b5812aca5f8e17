//! [`Rates`]: counters in, per-second rates out. A counter that goes down was reset
//! (the process restarted, the interface was re-created): that interval is a gap with
//! a reason, never a negative or made-up rate; the next interval rates from the new
//! value.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Instant;

/// The outcome of one counter reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Rate {
    /// The first reading: nothing to compare with yet.
    First,
    PerSec(f64),
    /// The counter went down, from `before` to `now`.
    Reset {
        before: f64,
        now: f64,
    },
}

impl Rate {
    /// The reason a reset is recorded with.
    pub(crate) fn reset_reason(before: f64, now: f64) -> String {
        format!("counter reset ({before} -> {now})")
    }

    /// The same outcome with `f` applied to a per-second value.
    pub(crate) fn map(self, f: impl FnOnce(f64) -> f64) -> Rate {
        match self {
            Rate::PerSec(rate) => Rate::PerSec(f(rate)),
            other => other,
        }
    }
}

/// The last reading of each counter, by key.
#[derive(Debug)]
pub(crate) struct Rates<K> {
    last: HashMap<K, (f64, Instant)>,
}

impl<K> Default for Rates<K> {
    fn default() -> Self {
        Rates {
            last: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash> Rates<K> {
    /// Records `value` at `at` and returns the rate since the previous reading.
    pub(crate) fn update(&mut self, key: K, value: f64, at: Instant) -> Rate {
        match self.last.insert(key, (value, at)) {
            None => Rate::First,
            Some((before, _)) if value < before => Rate::Reset { before, now: value },
            Some((before, then)) => {
                let seconds = at.saturating_duration_since(then).as_secs_f64();
                if seconds <= 0.0 {
                    Rate::First
                } else {
                    Rate::PerSec((value - before) / seconds)
                }
            }
        }
    }

    /// Forgets counters not updated since `cutoff` (series that disappeared), so
    /// memory follows what the source exposes now.
    pub(crate) fn forget_older_than(&mut self, cutoff: Instant) {
        self.last.retain(|_, (_, at)| *at >= cutoff);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.last.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn rates_resets_and_first_readings() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut rates = Rates::default();
        // (key, value, at ms, want)
        let rows: &[(&str, f64, u64, Rate)] = &[
            ("a", 100.0, 0, Rate::First),
            ("a", 150.0, 1000, Rate::PerSec(50.0)),
            ("a", 150.0, 1500, Rate::PerSec(0.0)),
            ("b", 7.0, 1500, Rate::First),
            (
                "a",
                10.0,
                2500,
                Rate::Reset {
                    before: 150.0,
                    now: 10.0,
                },
            ),
            ("a", 30.0, 3000, Rate::PerSec(40.0)),
            // The same instant twice: no interval to divide by.
            ("a", 40.0, 3000, Rate::First),
        ];
        for &(key, value, ms, want) in rows {
            assert_eq!(
                rates.update(key, value, at(ms)),
                want,
                "{key} {value} @{ms}"
            );
        }
        assert_eq!(Rate::reset_reason(150.0, 10.0), "counter reset (150 -> 10)");
        rates.forget_older_than(at(2000));
        assert_eq!(rates.len(), 1);
    }
}
