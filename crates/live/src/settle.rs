//! [`SettlingSeconds`]: completions binned by the second they ended in (from the run's
//! time zero), each second settled once no worker can still report into it (workers
//! ship at least every 100 ms), as the engine's stop rules settle theirs. The one
//! per-second fold of the live observers: the live view ([`crate::LiveStats`]) keeps
//! the last settled second, a steered shard ([`crate::steer::SteerFeed`]) every one.
//! What goes in a second's bin is the observer's (a [`report::Distribution`] for the
//! view, the raw values a shard's buckets are cut from).

use std::collections::BTreeMap;

/// A second, in nanoseconds.
pub(crate) const SECOND_NS: u64 = 1_000_000_000;
/// A second of completions is settled this long after it ends.
pub(crate) const SETTLE_NS: u64 = 300_000_000;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct SettlingSeconds<B> {
    /// The latest moment seen (a completion's end or a stats sample), from time zero.
    now_ns: u64,
    /// Seconds before this one are settled.
    next_second: u64,
    bins: BTreeMap<u64, B>,
}

impl<B: Default> SettlingSeconds<B> {
    /// Nothing seen yet.
    pub(crate) fn new() -> SettlingSeconds<B> {
        SettlingSeconds {
            now_ns: 0,
            next_second: 0,
            bins: BTreeMap::new(),
        }
    }

    /// The latest moment seen, from time zero.
    pub(crate) fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Moves the clock on to `at_ns` (a stats sample) if it is later.
    pub(crate) fn advance(&mut self, at_ns: u64) {
        self.now_ns = self.now_ns.max(at_ns);
    }

    /// The bin of a completion that ended `end_ns` after time zero; `None` once its
    /// second has settled (it counts only toward the run's totals then).
    pub(crate) fn bin(&mut self, end_ns: u64) -> Option<&mut B> {
        self.advance(end_ns);
        let second = end_ns / SECOND_NS;
        (second >= self.next_second).then(|| self.bins.entry(second).or_default())
    }

    /// Settles the seconds that are over by `now_ns`, in order, each with its bin (an
    /// empty second with an empty bin: a reader must know it is over).
    pub(crate) fn settle(&mut self, now_ns: u64, mut each: impl FnMut(u64, B)) {
        while (self.next_second + 1)
            .saturating_mul(SECOND_NS)
            .saturating_add(SETTLE_NS)
            <= now_ns
        {
            let second = self.next_second;
            self.next_second += 1;
            each(second, self.bins.remove(&second).unwrap_or_default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_settle_in_order_empty_ones_too_and_late_completions_are_left_out() {
        let mut seconds: SettlingSeconds<u64> = SettlingSeconds::new();
        // (a completion's end, whether it found a bin)
        let completions = [
            (100_000_000, true),
            (900_000_000, true),
            (2_500_000_000, true),
        ];
        for (end_ns, binned) in completions {
            let bin = seconds.bin(end_ns);
            assert_eq!(bin.is_some(), binned, "{end_ns}");
            if let Some(bin) = bin {
                *bin += 1;
            }
        }
        assert_eq!(seconds.now_ns(), 2_500_000_000);
        let mut settled = Vec::new();
        // Second 1 ends at 2 s and settles 300 ms later; second 2 is not over.
        seconds.settle(2_300_000_000, |second, n| settled.push((second, n)));
        assert_eq!(settled, [(0, 2), (1, 0)]);
        // A completion in a settled second has no bin.
        assert!(seconds.bin(1_500_000_000).is_none());
        seconds.settle(2_299_999_999 + SECOND_NS, |second, n| {
            settled.push((second, n));
        });
        assert_eq!(settled, [(0, 2), (1, 0)], "second 2 settles only at 3.3 s");
        seconds.settle(3_300_000_000, |second, n| settled.push((second, n)));
        assert_eq!(settled, [(0, 2), (1, 0), (2, 1)]);
    }
}
