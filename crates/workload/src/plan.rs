//! Pacing: when each request is due, as a pure function of its index.

use std::fmt;

/// The open model's request schedule: a sequence of segments, each holding a rate for
/// a duration (the last may be open-ended).
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq)]
struct Segment {
    rate_per_sec: f64,
    /// `None` only for the last segment: it holds forever (until the plan's bounds).
    duration_ns: Option<u64>,
}

impl Schedule {
    /// A constant rate with no end of its own.
    pub fn constant(rate_per_sec: f64) -> Schedule {
        Schedule {
            segments: vec![Segment {
                rate_per_sec,
                duration_ns: None,
            }],
        }
    }

    /// The schedule's own length, if it has one.
    pub fn duration_ns(&self) -> Option<u64> {
        self.segments.iter().map(|s| s.duration_ns).sum()
    }

    /// The intended send time of request `k` (0-based) in ns from the start, or `None`
    /// when the schedule ends first. Request k leaves when the integral of the rate
    /// reaches k, so request 0 leaves at time zero.
    pub fn intended_ns(&self, k: u64) -> Option<u64> {
        let mut start_ns = 0u64;
        let mut before = 0.0f64;
        for segment in &self.segments {
            let wanted = k as f64 - before;
            let count = segment
                .duration_ns
                .map(|d| segment.rate_per_sec * d as f64 / 1e9);
            let inside = match count {
                Some(count) => wanted < count,
                None => segment.rate_per_sec > 0.0,
            };
            if inside {
                let offset_ns = (wanted.max(0.0) * 1e9 / segment.rate_per_sec).round() as u64;
                return Some(start_ns + offset_ns);
            }
            before += count?;
            start_ns += segment.duration_ns?;
        }
        None
    }

    /// How many requests are due at or before `elapsed_ns`.
    pub fn due_by(&self, elapsed_ns: u64) -> u64 {
        let mut start_ns = 0u64;
        let mut due = 0.0f64;
        for segment in &self.segments {
            let span_ns = segment
                .duration_ns
                .map_or(elapsed_ns.saturating_sub(start_ns), |d| {
                    d.min(elapsed_ns.saturating_sub(start_ns))
                });
            due += segment.rate_per_sec * span_ns as f64 / 1e9;
            match segment.duration_ns {
                Some(d) if elapsed_ns >= start_ns + d => start_ns += d,
                _ => break,
            }
        }
        // Request k is due once the integral reaches k, so floor(integral) + 1 are due.
        due.floor() as u64 + 1
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, segment) in self.segments.iter().enumerate() {
            if index > 0 {
                f.write_str(" ")?;
            }
            match segment.duration_ns {
                Some(d) => write!(
                    f,
                    "const({}, {})",
                    segment.rate_per_sec,
                    units::GoDuration(std::time::Duration::from_nanos(d))
                )?,
                None => write!(f, "const({})", segment.rate_per_sec)?,
            }
        }
        Ok(())
    }
}

/// Open model (a schedule) or closed model (a fixed number of users).
#[derive(Debug, Clone, PartialEq)]
pub enum Pacing {
    Open(Schedule),
    /// Each user sends its next request when the previous one completes.
    Closed {
        users: u64,
    },
}

/// Pacing plus the run's bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub pacing: Pacing,
    /// Nothing is sent at or after this offset.
    pub duration_ns: Option<u64>,
    /// Nothing is sent with an index at or above this.
    pub max_requests: Option<u64>,
}

impl Plan {
    /// The intended send time of request `k` in the open model, within the bounds.
    /// `None` in the closed model (requests go when a user is free) or past the end.
    pub fn intended_ns(&self, k: u64) -> Option<u64> {
        let Pacing::Open(schedule) = &self.pacing else {
            return None;
        };
        if self.max_requests.is_some_and(|max| k >= max) {
            return None;
        }
        schedule
            .intended_ns(k)
            .filter(|&t| self.duration_ns.is_none_or(|d| t < d))
    }

    /// Whether request `k` may still be sent at `elapsed_ns` (both models).
    pub fn allows(&self, k: u64, elapsed_ns: u64) -> bool {
        self.max_requests.is_none_or(|max| k < max)
            && self.duration_ns.is_none_or(|d| elapsed_ns < d)
    }

    /// Requests the plan asked for by `elapsed_ns` (open model; `None` for closed).
    pub fn asked_by(&self, elapsed_ns: u64) -> Option<u64> {
        let Pacing::Open(schedule) = &self.pacing else {
            return None;
        };
        // intended_ns is monotonic in k, so bisect for the number of due requests.
        let (mut low, mut high) = (0u64, schedule.due_by(elapsed_ns));
        while low < high {
            let mid = low + (high - low).div_ceil(2);
            if self.intended_ns(mid - 1).is_some_and(|t| t <= elapsed_ns) {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        Some(low)
    }

    /// A short description for reports: `const(500)`, `users(10)`.
    pub fn describe(&self) -> String {
        match &self.pacing {
            Pacing::Open(schedule) => schedule.to_string(),
            Pacing::Closed { users } => format!("users({users})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn bounds_stop_the_plan() {
        let plan = |duration_ns, max_requests| Plan {
            pacing: Pacing::Open(Schedule::constant(10.0)),
            duration_ns,
            max_requests,
        };
        let rows: &[(Option<u64>, Option<u64>, u64, bool)] = &[
            (Some(1_000_000_000), None, 9, true),
            (Some(1_000_000_000), None, 10, false),
            (None, Some(5), 4, true),
            (None, Some(5), 5, false),
            (None, None, 1_000_000, true),
        ];
        for &(duration, max, k, sent) in rows {
            assert_eq!(
                plan(duration, max).intended_ns(k).is_some(),
                sent,
                "{duration:?} {max:?} k={k}"
            );
        }
        assert_eq!(
            plan(Some(1_000_000_000), None).asked_by(5_000_000_000),
            Some(10)
        );
        assert_eq!(
            plan(Some(1_000_000_000), None).asked_by(450_000_000),
            Some(5)
        );
        assert_eq!(plan(None, Some(3)).asked_by(5_000_000_000), Some(3));
        let closed = Plan {
            pacing: Pacing::Closed { users: 2 },
            duration_ns: Some(10),
            max_requests: Some(3),
        };
        assert_eq!(closed.intended_ns(0), None);
        assert!(closed.allows(2, 9) && !closed.allows(3, 0) && !closed.allows(0, 10));
    }
}
