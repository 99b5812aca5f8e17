//! The asked rate per interval. For an open-model attack with a constant rate (the
//! header's `rate_per_sec`), the schedule's own slots: request `k` is due at
//! `start + k / rate`, up to the number the end block says were asked (due but unsent
//! ones included). For any other open-model schedule, the rows count the records'
//! intended send times, which is exact because every request the schedule made due is
//! recorded with its intended time (only those never sent at the very end are missed).
//! Closed-model and imported attacks have no asked rate.

use record::LoadModel;

use crate::bins::Row;
use crate::gather::{RunData, constant_rate};

/// One input's constant-rate attack: `slots` requests due from `start_unix_ns` on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConstantSchedule {
    pub start_unix_ns: u64,
    pub rate_per_sec: f64,
    pub slots: u64,
}

impl ConstantSchedule {
    /// Slots due in `[from, to)` (unix ns).
    fn due_between(&self, from_unix_ns: u64, to_unix_ns: u64) -> u64 {
        let slot_at_or_after = |unix_ns: u64| -> u64 {
            let offset_s = unix_ns.saturating_sub(self.start_unix_ns) as f64 / 1e9;
            ((offset_s * self.rate_per_sec - 1e-9).ceil().max(0.0) as u64).min(self.slots)
        };
        slot_at_or_after(to_unix_ns) - slot_at_or_after(from_unix_ns)
    }
}

/// The constant-rate attacks of every input.
pub fn constant_schedules(data: &RunData) -> Vec<ConstantSchedule> {
    let mut schedules = Vec::new();
    for summary in &data.summaries {
        for (index, info) in summary.header.attacks.iter().enumerate() {
            let Some(rate_per_sec) = constant_rate(info.rate_per_sec) else {
                continue;
            };
            if info.model != LoadModel::Open {
                continue;
            }
            let start_unix_ns = summary.header.start_unix_ns;
            let asked = summary
                .end
                .as_ref()
                .and_then(|end| end.attacks.get(index))
                .map(|end| end.asked);
            let slots = asked.unwrap_or_else(|| {
                // No end block (a killed run): up to the last request seen.
                let last = data
                    .tables
                    .attacks
                    .iter()
                    .position(|a| a.name == info.name)
                    .and_then(|id| data.attacks.get(id))
                    .map_or(start_unix_ns, |a| a.last_intended_unix_ns);
                (last.saturating_sub(start_unix_ns) as f64 / 1e9 * rate_per_sec).floor() as u64 + 1
            });
            schedules.push(ConstantSchedule {
                start_unix_ns,
                rate_per_sec,
                slots,
            });
        }
    }
    schedules
}

/// Requests asked per row (NaN for breaks), or `None` when no attack has an asked rate.
pub fn asked_per_row(rows: &[Option<Row>], data: &RunData) -> Option<Vec<f64>> {
    let schedules = constant_schedules(data);
    let counted = data.attacks.iter().any(|a| a.counts_intended);
    if schedules.is_empty() && !counted {
        return None;
    }
    let every_ns = data.every_ns;
    let asked = rows
        .iter()
        .map(|row| {
            let Some(row) = row else {
                return f64::NAN;
            };
            let from = data.origin_unix_ns + row.index * every_ns;
            let constant: u64 = schedules
                .iter()
                .map(|s| s.due_between(from, from + every_ns))
                .sum();
            (constant + row.asked) as f64
        })
        .collect();
    Some(asked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_slots_per_interval() {
        let schedule = ConstantSchedule {
            start_unix_ns: 1_000,
            rate_per_sec: 3.0 / 1.5,
            slots: 5,
        };
        let second = 1_000_000_000;
        // Due at 0, 0.5, 1.0, 1.5, 2.0 s after the start.
        let rows: &[(u64, u64, u64)] = &[
            (0, second, 2),
            (second, 2 * second, 2),
            (2 * second, 3 * second, 1),
            (3 * second, 4 * second, 0),
            (0, 10 * second, 5),
        ];
        for &(from, to, want) in rows {
            assert_eq!(
                schedule.due_between(1_000 + from, 1_000 + to),
                want,
                "[{from}, {to})"
            );
        }
        assert_eq!(schedule.due_between(0, 1_000), 0, "before the start");
    }
}
