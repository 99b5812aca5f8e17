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
