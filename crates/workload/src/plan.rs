//! [`Plan`]: a schedule (open model) or a user count over time (closed model), with
//! the run's bounds and the [`Shard`] of it this process sends.
//!
//! A plan counts requests in this process's own (local) indices `0, 1, 2, ...`;
//! [`Plan::global_index`] maps one to its index in the whole run (`I + k·N` for shard
//! `I/N`), which the record's `seq`, the target's turn and template rendering use, so
//! a shard sends exactly the requests one machine would have sent with those indices,
//! at the same intended times. Unsharded, the two are the same.

use crate::{Schedule, Shard};

/// Open model (requests leave on a clock) or closed model (users wait for answers).
#[derive(Debug, Clone, PartialEq)]
pub enum Pacing {
    /// Requests leave on the schedule's clock.
    Open(Schedule),
    /// `users` over time (a schedule of counts); each user sends its next request
    /// `think_ns` after the previous one completes.
    Closed {
        /// Users over time.
        users: Schedule,
        /// A user's pause between an answer and its next request, in ns.
        think_ns: u64,
    },
}

/// Pacing plus the run's bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Open or closed model.
    pub pacing: Pacing,
    /// Nothing is sent at or after this offset (`-duration`).
    pub duration_ns: Option<u64>,
    /// Nothing is sent with a run-wide index at or above this (`-max-requests`).
    pub max_requests: Option<u64>,
    /// The part of the run this process sends (`-shard`); [`Shard::WHOLE`] by default.
    pub shard: Shard,
}

impl Plan {
    /// Open model at a constant rate with no bounds.
    pub fn constant_rate(rate_per_sec: f64) -> Plan {
        Plan {
            pacing: Pacing::Open(Schedule::constant(rate_per_sec)),
            duration_ns: None,
            max_requests: None,
            shard: Shard::WHOLE,
        }
    }

    /// The same plan, sent by `shard` of its processes.
    pub fn sharded(self, shard: Shard) -> Plan {
        Plan { shard, ..self }
    }

    /// The whole run's plan (every shard's requests), for headers and fingerprints.
    pub fn whole(&self) -> Plan {
        self.clone().sharded(Shard::WHOLE)
    }

    /// The run-wide index of this process's `k`-th request: the record's `seq`, and
    /// what picks the target and renders templates (`u64::MAX` past the end of `u64`).
    pub fn global_index(&self, k: u64) -> u64 {
        self.shard.global(k).unwrap_or(u64::MAX)
    }

    /// When the plan ends: the earlier of `-duration` and the schedule's own length.
    pub fn end_ns(&self) -> Option<u64> {
        let schedule = match &self.pacing {
            Pacing::Open(schedule)
            | Pacing::Closed {
                users: schedule, ..
            } => schedule,
        };
        match (self.duration_ns, schedule.duration_ns()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The intended send time of this process's request `k` in the open model, within
    /// the bounds: the whole run's request [`Plan::global_index`]`(k)`'s. `None` in the
    /// closed model (requests go when a user is free) or past the end.
    pub fn intended_ns(&self, k: u64) -> Option<u64> {
        self.intended_global_ns(self.shard.global(k)?)
    }

    /// The intended send time of the whole run's request `global`.
    fn intended_global_ns(&self, global: u64) -> Option<u64> {
        let Pacing::Open(schedule) = &self.pacing else {
            return None;
        };
        if self.max_requests.is_some_and(|max| global >= max) {
            return None;
        }
        schedule
            .intended_ns(global)
            .filter(|&t| self.end_ns().is_none_or(|end| t < end))
    }

    /// Whether this process's request `k` may still be sent at `elapsed_ns` (both
    /// models).
    pub fn allows(&self, k: u64, elapsed_ns: u64) -> bool {
        self.shard
            .global(k)
            .is_some_and(|global| self.max_requests.is_none_or(|max| global < max))
            && self.end_ns().is_none_or(|end| elapsed_ns < end)
    }

    /// Closed model: how many of this process's users should be active at
    /// `elapsed_ns` (the whole run's users `u` with `u mod N == I`).
    pub fn users_at(&self, elapsed_ns: u64) -> u64 {
        match &self.pacing {
            Pacing::Closed { users, .. } if self.end_ns().is_none_or(|end| elapsed_ns < end) => {
                self.shard
                    .share_of(users.value_at(elapsed_ns).round() as u64)
            }
            _ => 0,
        }
    }

    /// The most users the plan ever asks of this process (closed model), for sizing.
    pub fn max_users(&self) -> u64 {
        match &self.pacing {
            Pacing::Closed { users, .. } => self.shard.share_of(users.max_value().round() as u64),
            Pacing::Open(_) => 0,
        }
    }

    /// Requests the plan asked of this process by `elapsed_ns` (open model; `None`
    /// for closed).
    pub fn asked_by(&self, elapsed_ns: u64) -> Option<u64> {
        let Pacing::Open(schedule) = &self.pacing else {
            return None;
        };
        // intended_ns is monotonic in k, so bisect for the number of due requests.
        let (mut low, mut high) = (0u64, schedule.due_by(elapsed_ns));
        while low < high {
            let mid = low + (high - low).div_ceil(2);
            if self
                .intended_global_ns(mid - 1)
                .is_some_and(|t| t <= elapsed_ns)
            {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        Some(self.shard.share_of(low))
    }

    /// The rate asked of this process at `elapsed_ns` (open model; a shard's is its
    /// share), for stop rules and reports.
    pub fn rate_at(&self, elapsed_ns: u64) -> Option<f64> {
        match &self.pacing {
            Pacing::Open(schedule) if self.end_ns().is_none_or(|end| elapsed_ns < end) => {
                Some(schedule.value_at(elapsed_ns) / self.shard.count() as f64)
            }
            Pacing::Open(_) => Some(0.0),
            Pacing::Closed { .. } => None,
        }
    }

    /// A short description for reports: `const(500)`, `users line(1, 100, 1m)`.
    pub fn describe(&self) -> String {
        match &self.pacing {
            Pacing::Open(schedule) => schedule.to_string(),
            Pacing::Closed { users, think_ns: 0 } => format!("users {users}"),
            Pacing::Closed { users, think_ns } => {
                format!(
                    "users {users}, think {}",
                    units::GoDuration(std::time::Duration::from_nanos(*think_ns))
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_stop_the_plan() {
        let plan = |duration_ns, max_requests| Plan {
            duration_ns,
            max_requests,
            ..Plan::constant_rate(10.0)
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
    }

    #[test]
    fn a_schedule_bounds_the_run_by_its_own_length() {
        let ramp = Plan {
            pacing: Pacing::Open(Schedule::parse("line(10, 10, 2s)").unwrap()),
            duration_ns: None,
            max_requests: None,
            shard: Shard::WHOLE,
        };
        assert_eq!(ramp.end_ns(), Some(2_000_000_000));
        assert_eq!(ramp.asked_by(60_000_000_000), Some(20));
        let shorter = Plan {
            duration_ns: Some(1_000_000_000),
            ..ramp
        };
        assert_eq!(shorter.asked_by(60_000_000_000), Some(10));
    }

    #[test]
    fn closed_model_follows_its_user_schedule() {
        let users = Schedule::parse("line(1, 100, 1m) const(100, 1m)").unwrap();
        let plan = Plan {
            pacing: Pacing::Closed { users, think_ns: 0 },
            duration_ns: None,
            max_requests: Some(3),
            shard: Shard::WHOLE,
        };
        let counts: Vec<u64> = [0, 30, 60, 90, 120]
            .iter()
            .map(|s| plan.users_at(s * 1_000_000_000))
            .collect();
        assert_eq!(counts, [1, 51, 100, 100, 0]);
        assert_eq!(plan.max_users(), 100);
        assert_eq!(plan.intended_ns(0), None);
        assert!(plan.allows(2, 0) && !plan.allows(3, 0) && !plan.allows(0, 120_000_000_000));
    }
}
