//! [`Split`]: a whole-run quantity's share in one worker.

/// How a whole-run quantity (requests, users, connections) is split over the
/// workers, seen from one of them (`index`): not to be confused with `shared::Shared`,
/// what all workers read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Split {
    pub index: usize,
    pub workers: usize,
}

impl Split {
    /// This worker among those taking part in an attack of `plan`: every worker, but
    /// for a closed-model attack no more than its most users. A worker without a
    /// user would own a stride of the attack's `max_requests` it never sends, and
    /// wait for the plan's end for it (beside an open attack that needs the workers).
    pub(crate) fn taking_part(plan: &workload::Plan, index: usize, workers: usize) -> Split {
        let workers = match plan.pacing {
            workload::Pacing::Closed { .. } => {
                let users = usize::try_from(plan.max_users()).unwrap_or(usize::MAX);
                workers.min(users.max(1))
            }
            workload::Pacing::Open(_) => workers,
        };
        Split { index, workers }
    }

    /// This worker's part of `total`: the remainder goes to the first workers.
    pub(crate) fn of(self, total: u64) -> usize {
        let workers = self.workers as u64;
        let part = total / workers + u64::from((self.index as u64) < total % workers);
        usize::try_from(part).unwrap_or(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_split_totals_without_losing_any() {
        let parts: Vec<usize> = (0..3)
            .map(|index| Split { index, workers: 3 }.of(10))
            .collect();
        assert_eq!(parts, [4, 3, 3]);
    }
}
